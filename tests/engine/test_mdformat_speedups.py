"""engine/mdformat_speedups.py: installed where mdformat looks, same output as mdformat's."""

from __future__ import annotations

import mdformat.renderer._context as mdformat_context
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mdformat.renderer._util import escape_underscore_emphasis as mdformat_escape_underscore_emphasis
from mdformat.renderer._util import re_char_reference as mdformat_re_char_reference

import engine.markdown  # noqa: F401  (installs the speed-ups)
from engine.mdformat_speedups import BACKSLASH_BEFORE_MATCH, character_references, escape_underscore_emphasis

# Underscores among what decides their fate: spaces of several kinds, punctuation, letters.
_TEXT = st.text(st.sampled_from(list("__ a\u00a0\t\n.!*\\é1\u3000\u2014")), max_size=30)


@pytest.mark.parametrize(
    ("name", "ours"),
    [("escape_underscore_emphasis", escape_underscore_emphasis), ("re_char_reference", character_references)],
)
def test_mdformat_text_renderer_calls_ours(name: str, ours: object) -> None:
    # If an mdformat upgrade renames a helper or stops looking it up by name in its
    # module, the speed-up is silently gone: fail here instead.
    assert name in mdformat_context.text.__code__.co_names
    assert getattr(mdformat_context, name) is ours


class TestEscapeUnderscoreEmphasis:
    @settings(max_examples=2000, derandomize=True, database=None)
    @given(_TEXT)
    def test_same_text_as_mdformat(self, text: str) -> None:
        assert escape_underscore_emphasis(text) == mdformat_escape_underscore_emphasis(text)

    def test_examples(self) -> None:
        assert escape_underscore_emphasis("snake_case _x_ a _ b _") == "snake_case \\_x\\_ a _ b \\_"


# Ampersands among what may follow them in a character reference, or not.
_REFERENCE_PARTS = ["&", "#", "x", "1", "F", ";", "amp", "nbsp", "Aacute", " ", "é"]
_REFERENCE_TEXT = st.lists(st.sampled_from(_REFERENCE_PARTS), max_size=12)


class TestCharacterReferences:
    @settings(max_examples=2000, derandomize=True, database=None)
    @given(_REFERENCE_TEXT)
    def test_same_text_as_mdformat(self, parts: list[str]) -> None:
        text = "".join(parts)
        expected = mdformat_re_char_reference().sub(BACKSLASH_BEFORE_MATCH, text)
        assert character_references().sub(BACKSLASH_BEFORE_MATCH, text) == expected

    def test_examples(self) -> None:
        assert character_references().sub(BACKSLASH_BEFORE_MATCH, "a &amp; &#1; &#x1F; & b") == (
            "a \\&amp; \\&#1; \\&#x1F; & b"
        )
        assert character_references().sub("<\\g<0>>", "&amp;") == "<&amp;>"

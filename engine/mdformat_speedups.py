"""Two mdformat 1.0 helpers replaced by faster ones giving the same text.

mdformat's text renderer (`mdformat.renderer._context.text`) runs on every text node that
holds a character it may escape, and two of its helpers cost far more than their work:

- `escape_underscore_emphasis` rebuilds the union of mdformat's Unicode whitespace and
  punctuation sets (8,600 characters) on each call: 0.8 ms a node, so 500 lines of `_`
  took 1.3 s to render and 2,000 list items like `- npc_12` 3.5 s. The version here builds
  the union once.
- `re_char_reference().sub(...)` puts a backslash before each character
  reference; with a template, `re` looks the compiled template up in a cache keyed by the
  pattern, whose hash covers the whole compiled pattern of the 2,200 HTML entity names:
  30 µs a node, a third of the time of a paragraph of short lines. The pattern given here
  does the same substitution with a function, which needs no template.

The renderer looks both helpers up by name in its module at each call, which is where
`install` puts these; mdformat is pinned exactly for it (pyproject.toml), and
tests/engine/test_mdformat_speedups.py fails if the renderer stops using those names or
the versions ever disagree.
"""

from __future__ import annotations

import re

import mdformat.renderer._context as mdformat_context
import mdformat.renderer._util as mdformat_util
from mdformat import codepoints

# What may not surround an `_` left unescaped: white space, punctuation, a text's edge.
_BAD_NEIGHBOURS: frozenset[str | None] = codepoints.UNICODE_WHITESPACE | codepoints.UNICODE_PUNCTUATION | {None}
_UNDERSCORE = re.compile("_")


def escape_underscore_emphasis(text: str) -> str:
    """`text` with a backslash before each `_` that could open or close emphasis: all but
    those between two white space characters or between two word characters."""
    if "_" not in text:
        return text

    def escaped(match: re.Match[str]) -> str:
        at = match.start()
        before = text[at - 1] if at else None
        after = text[at + 1] if at + 1 < len(text) else None
        between_spaces = before in codepoints.UNICODE_WHITESPACE and after in codepoints.UNICODE_WHITESPACE
        inside_a_word = before not in _BAD_NEIGHBOURS and after not in _BAD_NEIGHBOURS
        return "_" if between_spaces or inside_a_word else "\\_"

    return _UNDERSCORE.sub(escaped, text)


# The template mdformat's text renderer gives: a backslash, then the whole match.
BACKSLASH_BEFORE_MATCH = r"\\\g<0>"


def _backslash_before(match: re.Match[str]) -> str:
    return "\\" + match.group()


class CharacterReferences:
    """mdformat's character reference pattern, substituting without a template."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern

    def sub(self, template: str, text: str) -> str:
        if template != BACKSLASH_BEFORE_MATCH:
            return self.pattern.sub(template, text)
        return self.pattern.sub(_backslash_before, text) if "&" in text else text


_CHARACTER_REFERENCES = CharacterReferences(mdformat_util.re_char_reference())


def character_references() -> CharacterReferences:
    return _CHARACTER_REFERENCES


def install() -> None:
    mdformat_context.escape_underscore_emphasis = escape_underscore_emphasis  # type: ignore[attr-defined]
    mdformat_context.re_char_reference = character_references  # type: ignore[attr-defined,assignment]

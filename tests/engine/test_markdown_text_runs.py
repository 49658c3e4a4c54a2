"""engine/markdown_text_runs.py stops a run of text where mdformat-gfm's "text" rule
does (that rule is the oracle here), in linear time."""

from __future__ import annotations

import random

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

# The rule this one replaces, as the oracle (a private module: this test fails loudly if it moves).
from mdformat_gfm._text_inline_rule import text_rule as gfm_text_rule  # type: ignore[import-untyped]

from engine.markdown_text_runs import _text
from tests.engine.render_growth import cpu_ratio_of_8x_the_input

_PIECES = [*"a_ *~(@.+-x:/wht\n[]!`", "www.", "http", "mailto:", "xmpp:", "a@b", "  "]


def _outcome(rule: object, source: str, position: int) -> tuple[bool, int, str]:
    state = StateInline(source, MarkdownIt(), {}, [])
    state.pos = position
    matched = rule(state, False)  # type: ignore[operator]
    return matched, state.pos, state.pending


def test_same_stops_as_mdformat_gfms_rule_everywhere_in_random_sources() -> None:
    rng = random.Random(5)
    for _ in range(3_000):
        source = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 30)))
        for position in range(len(source)):
            assert _outcome(_text, source, position) == _outcome(gfm_text_rule, source, position), (source, position)


def test_a_long_run_of_address_characters_renders_in_linear_time() -> None:
    # Linear: about 8; in n squared it was 64.
    assert cpu_ratio_of_8x_the_input(lambda count: "_a" * count + "@b.c", 2_000) < 20


def test_many_short_address_runs_render_in_linear_time() -> None:
    # Each run reaching an `@` once scanned all the runs after it: `a@b a@b …` at 100 KB
    # took 1.4 s, a ratio of 33 here; linear: about 8.
    assert cpu_ratio_of_8x_the_input(lambda count: "a@b " * count, 3_000) < 20

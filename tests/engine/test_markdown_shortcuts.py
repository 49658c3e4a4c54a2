"""Parses normalization leaves out: the inline stage of a check parse that repeats the
first (engine/markdown_repeat.py), inline parses the GM core rule already made and code
spans an earlier parse found (engine/markdown_rules.py). Output must be what it is
without them."""

from __future__ import annotations

import dataclasses
import gc
import random
import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from engine import markdown, markdown_headings, markdown_regions, markdown_rules
from engine.markdown import PublicMarkdown, render_public
from engine.markdown_repeat import expecting, fingerprint, repeated
from engine.markdown_text import fold_lookalikes, folds_to_none_of
from tests.benchmarks.generate import Blocks
from tests.engine.test_gm_properties import SLOW_BEFORE, _corpus


def _second_parse_repeats(raw: str) -> bool:
    env: dict[str, Any] = {}
    tokens = markdown._PUBLIC_MD.parse(raw, env)
    rendered = markdown._render_parse(markdown._PUBLIC_MD, markdown._Parse(tokens, env))
    check_env = expecting(fingerprint(env))
    markdown._PUBLIC_MD.parse(rendered, check_env)
    return repeated(check_env)


def test_the_fingerprint_covers_every_token_field_but_line_numbers() -> None:
    # A field added to markdown-it's Token must be added to the fingerprint (or shown not
    # to matter): a shortcut taken on tokens that differ would skip the stability check.
    assert {field.name for field in dataclasses.fields(Token)} == {
        "type", "tag", "nesting", "attrs", "map", "level", "children",
        "content", "markup", "info", "meta", "block", "hidden",
    }  # fmt: skip


@pytest.mark.parametrize("raw", ["*a* `b` [c](d) " * 50, "```\nx\n" * 20, "# A\n\ntext\n\n- [ ] task\n"])
def test_the_parse_of_output_that_reads_the_same_stops_early(raw: str) -> None:
    assert _second_parse_repeats(raw)


@pytest.mark.parametrize("raw", ["[[[", "* item\n", "a  \nb\n"])
def test_the_parse_of_output_spelt_differently_runs_in_full(raw: str) -> None:
    assert not _second_parse_repeats(raw)


def test_different_references_are_a_different_parse() -> None:
    env: dict[str, Any] = {}
    markdown._PUBLIC_MD.parse("[a]\n\n[a]: /x\n", env)
    check_env = expecting(fingerprint(env))
    tokens = markdown._PUBLIC_MD.parse("[a]\n\n[a]: /y\n", check_env)
    assert not repeated(check_env)
    assert tokens


def _documents() -> list[str]:
    rng = random.Random(11)
    blocks = Blocks(rng)
    generated = [blocks.document(f"Title {n}", rng.choice([500, 2000, 5000])) for n in range(30)]
    return generated + [case.values[0] for case in _corpus()] + [raw[:5_000] for raw in SLOW_BEFORE.values()]


def test_same_output_as_without_the_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = _documents()
    with_shortcuts = [render_public(raw) for raw in documents]
    monkeypatch.setattr(markdown, "expecting", lambda _fingerprint: {})
    without_repeat: list[PublicMarkdown] = [render_public(raw) for raw in documents]
    # The core rule keeps the inline tokens and code spans it found where nobody reads them.
    monkeypatch.setattr(
        markdown_rules._Stripper, "parsed_inline", property(lambda _: {}, lambda *_: None), raising=False
    )
    monkeypatch.setattr(
        markdown_rules._Stripper,
        "code_spans",
        property(lambda _: markdown_rules._CodeSpanMemo([]), lambda *_: None),
        raising=False,
    )
    without_any: list[PublicMarkdown] = [render_public(raw) for raw in documents]
    assert with_shortcuts == without_repeat == without_any


def test_same_output_as_when_every_text_is_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = _documents()
    with_fast_paths = [render_public(raw) for raw in documents]
    for module in (markdown_rules, markdown_regions):
        monkeypatch.setattr(module, "opens_nothing", lambda _text: False)
    for module in (markdown_regions, markdown_headings):
        monkeypatch.setattr(module, "folds_to_none_of", lambda _text, _characters: False)
    monkeypatch.setattr(markdown_rules, "PARSED_TEXT_MAY_DIFFER", re.compile(""))  # every heading parsed
    assert [render_public(raw) for raw in documents] == with_fast_paths


# Name letters, the markers the name comparison drops or reads as spaces, and what else
# inline parsing reads in a heading, but none of the characters that make a parse needed.
_HEADING_ALPHABET = "GMDNOTESCRLYgmdnotescrly []*_~`:-#\t\n'\"()/.=+|{}^$%0"


@given(st.text(alphabet=_HEADING_ALPHABET, max_size=24))
@settings(max_examples=400, deadline=None)
def test_a_heading_needs_parsing_only_with_escapes_links_entities_or_html(content: str) -> None:
    """The parse `_is_gm_heading` skips would find no GM name the raw text lacks."""
    if markdown_headings.PARSED_TEXT_MAY_DIFFER.search(content):
        return
    children, _ = markdown_rules._parse_inline(markdown._PUBLIC_MD, content, {})
    parsed_names_gm = markdown_headings.is_gm_heading_text(markdown_headings.plain_text(children))
    assert markdown_headings.is_gm_heading_text(content) or not parsed_names_gm


@pytest.mark.parametrize("content", ["_GM_", "**GM** notes", "`DM`", "~~GM~~ only", "GM\nnotes", "__Secret__:"])
def test_headings_the_raw_comparison_names_without_a_parse(content: str) -> None:
    assert not markdown_headings.PARSED_TEXT_MAY_DIFFER.search(content)
    assert markdown_headings.is_gm_heading_text(content)


@pytest.mark.parametrize("content", ["\\[GM\\] plot", "[GM notes](/x)", "![GM](/i.png)", "G&#77;", "<b>G</b>M"])
def test_headings_that_name_gm_only_once_parsed_are_parsed(content: str) -> None:
    assert markdown_headings.PARSED_TEXT_MAY_DIFFER.search(content)
    assert not markdown_headings.is_gm_heading_text(content)
    assert render_public(f"## {content}\n\nCANARY\n\n# Pub\n").markdown == "# Pub\n"


def test_no_character_folds_to_a_marker_character_the_fast_test_misses() -> None:
    # Every code point, alone and between invisible characters: whatever reads as `:`,
    # `#` or `<` once folded must fail the fast test.
    for code_point in range(sys.maxunicode + 1):
        if 0xD800 <= code_point <= 0xDFFF:
            continue
        character = chr(code_point)
        for text in (character, f"\u200b{character}\u200d"):
            folded = fold_lookalikes(text)
            for marker in ":#<":
                if marker in folded:
                    assert not folds_to_none_of(text, marker), (hex(code_point), marker)


def test_the_check_parse_finds_code_spans_without_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    original = markdown_rules._parse_inline

    def counting_parse(md: Any, content: str, references: Any) -> Any:
        parsed.append(content)
        return original(md, content, references)

    monkeypatch.setattr(markdown_rules, "_parse_inline", counting_parse)
    # The `%` makes the paragraph one that could open a comment, so it is scanned.
    assert render_public("a `b` [c] 5%\n\n[c]: /d").markdown == "a `b` [c] 5%\n\n[c]: /d\n"
    assert parsed == ["a `b` [c] 5%"]


def test_a_paragraph_with_code_is_parsed_once_in_the_inline_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    inline_parses: list[str] = []
    original = markdown._PUBLIC_MD.inline.parse

    def counting_parse(src: str, *rest: Any) -> Any:
        inline_parses.append(src)
        return original(src, *rest)

    monkeypatch.setattr(markdown._PUBLIC_MD.inline, "parse", counting_parse)
    markdown._PUBLIC_MD.parse("a `b` c\n", {})
    assert inline_parses == ["a `b` c"]


_BRACKET_RUNS = [
    "[" * 3_000,
    "![" * 1_500,
    "[" * 2_999 + "]",
    "![" * 1_499 + "]",
    "][" * 1_000,
    "[a](b) [c [d] ![e ![f](g) [",
    "x [a]\n\n[a]: /u\n\n[b ![c",
    "`]` [a ![b",
    "| a | b |\n| - | - |\n| [x | ![y] |\n",
    "[[[[[[[[[[[[[[[[[[[[[[a]()",
]


def _without_bracket_rule() -> MarkdownIt:
    mdit = markdown._build_markdown_it(markdown._PublicOutputPlugin)
    mdit.inline.ruler.disable("unclosable_bracket")
    return mdit


@pytest.mark.parametrize("raw", _BRACKET_RUNS)
def test_a_bracket_with_no_close_after_it_parses_as_without_the_rule(raw: str) -> None:
    assert markdown._PUBLIC_MD.parse(raw, {}) == _without_bracket_rule().parse(raw, {})


def test_documents_parse_as_without_the_bracket_rule() -> None:
    without = _without_bracket_rule()
    for raw in _documents():
        assert markdown._PUBLIC_MD.parse(raw, {}) == without.parse(raw, {})


def test_rendering_from_a_shared_tree_gives_what_fresh_trees_give(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = [*_documents(), "- [ ] a task\n- [x] **done**\n\n# Heading\n\n![img](u) text\n"]
    shared = [render_public(raw) for raw in documents]
    monkeypatch.setattr(markdown, "_has_task_list_item", lambda _tokens: True)
    assert [render_public(raw) for raw in documents] == shared


def test_the_cycle_collector_is_paused_while_rendering_and_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    collector_on_while_rendering: list[bool] = []
    original = markdown._render_parse

    def observing(*arguments: Any) -> str:
        collector_on_while_rendering.append(gc.isenabled())
        return original(*arguments)

    monkeypatch.setattr(markdown, "_render_parse", observing)
    try:
        assert render_public("*a* `b` [c](d)").markdown == "*a* `b` [c](d)\n"
        assert collector_on_while_rendering and not any(collector_on_while_rendering)
        assert gc.isenabled()
        gc.disable()
        render_public("*a*")
        assert not gc.isenabled()
    finally:
        gc.enable()

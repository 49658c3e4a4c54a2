"""What engine/markdown_dropped.py relies on in markdown-it-py: if an upgrade changes it,
these fail before a part dropped by the parser can hide an opener again."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_block.table import escapedSplit

from engine.markdown import render_public


def test_rows_are_cut_into_cells_as_we_read_them() -> None:
    assert escapedSplit("| a \\| b | c |") == ["", " a | b ", " c ", ""]


def test_cells_beyond_the_header_are_dropped_by_markdown_it() -> None:
    tokens = MarkdownIt("commonmark").enable("table").parse("| a |\n|---|\n| b | dropped |\n")
    assert "dropped" not in [token.content for token in tokens if token.type == "inline"]


def test_content_past_the_nesting_limit_is_dropped_by_markdown_it() -> None:
    markdown_it = MarkdownIt("commonmark")
    assert markdown_it.options.maxNesting == 20
    tokens = markdown_it.parse(">" * 25 + " dropped\n")
    assert "dropped" not in [token.content for token in tokens if token.type == "inline"]


def test_dropped_openers_still_open() -> None:
    assert render_public("| a |\n|---|\n| b | <!-- |\n\nCANARY\n\n-->\n\nPub").markdown.endswith("Pub\n")
    assert "CANARY" not in render_public(">" * 25 + " %%\n\nCANARY\n\n%%\n\nPub").markdown

"""The import's estimate of rendering cost (engine/markdown_cost.py)."""

from __future__ import annotations

import random

import pytest

from engine.markdown_cost import (
    BASE_BUDGET_UNITS,
    LARGEST_UNCOUNTED_BYTES,
    RenderCost,
    over_budget,
    render_budget,
    render_cost,
)
from tests.benchmarks.generate import Blocks
from tests.benchmarks.render_floor import shapes


class TestCounts:
    @pytest.mark.parametrize(
        ("text", "lines"),
        [("a\nb\n", 2), ("a\r\nb", 2), ("a\rb\r\r", 2), ("a\n\n \t\n\nb", 2), ("", 0)],
    )
    def test_non_blank_lines_whatever_the_line_ends(self, text: str, lines: int) -> None:
        assert render_cost(text).lines == lines

    @pytest.mark.parametrize(
        ("text", "nested"),
        [
            ("- a\n", 0),
            ("- - a\n", 1),
            ("- - - - a\n", 3),
            ("1. - 2) a\r\n", 2),
            ("* + -\n", 2),
            ("a - b - c\n", 0),
            ("> - > - a\n", 1),
            ("1) > 1) >2. a\n", 2),
            ("- > a - b\n", 0),
        ],
    )
    def test_list_markers_nested_on_one_line(self, text: str, nested: int) -> None:
        assert render_cost(text).nested_markers == nested

    def test_markup_characters_and_bytes(self) -> None:
        cost = render_cost("é ![a](b) *c* `d` <e> | & ~ \\ _ $")
        assert (cost.markup_characters, cost.size) == (15, 34)

    def test_places_an_autolink_may_be(self) -> None:
        assert render_cost("mail a@b.c, see www.x.org or http://y.org @").autolinks == 3

    @pytest.mark.parametrize(
        ("text", "rescans"),
        [
            ("> ---\nx\n> ---\nx\n", 1 + 3),
            ("> ---\r\nx\r\n\r\n> ---\rx", 1 + 1),
            ("> > a\n> b\nc\n", 1 + 2),
            ("- > a\nb", 1),
            ("> a\n\nb\n", 0),
            ("a\n> b\n> c\n", 0),
            ("a > b\nc\n", 0),
        ],
    )
    def test_lines_read_again_after_quotes(self, text: str, rescans: int) -> None:
        # For each line less deep in quotes than the one before: the rest of its run.
        assert render_cost(text).quote_rescans == rescans

    def test_units_weigh_each_count(self) -> None:
        cost = RenderCost(size=1000, lines=10, nested_markers=2, markup_characters=5, autolinks=4, quote_rescans=7)
        assert cost.units == 150 * 10 + 80 * 2 + 30 * 5 + 60 * 4 + 3 * 1000 + 6 * 7


class TestBudget:
    def test_flat_up_to_100_kb_then_linear(self) -> None:
        assert render_budget(0) == render_budget(100_000) == BASE_BUDGET_UNITS
        assert render_budget(200_000) == 2 * BASE_BUDGET_UNITS

    @pytest.mark.parametrize("size", [1_000, 20_000, 100_000, 256 * 1024 - 200])
    def test_ordinary_documents_fit_with_room_to_spare(self, size: int) -> None:
        blocks = Blocks(random.Random(size))
        for number in range(5):
            cost = render_cost(blocks.document(f"Doc {number}", size))
            assert cost.units < 0.7 * cost.budget, cost

    @pytest.mark.parametrize("name", [name for name in shapes(100_000) if name != "ordinary Markdown"])
    def test_100_kb_of_each_dense_shape_is_refused(self, name: str) -> None:
        # Each takes 0.3-3 s to render; none is accepted whole (make bench-render).
        raw, _ = shapes(100_000)[name]
        cost = render_cost(raw)
        assert cost.units > cost.budget, cost


class TestOverBudget:
    @pytest.mark.parametrize(
        "unit", ["[\n", "*\n", "- - \n", "* * \n", "a\n", "[", "1. 1. 1. a\n", "&\r", "@\n", "www."]
    )
    def test_texts_too_short_to_count_are_within_budget(self, unit: str) -> None:
        # The densest shapes, as long as a text can be and still go uncounted.
        text = (unit * LARGEST_UNCOUNTED_BYTES)[:LARGEST_UNCOUNTED_BYTES]
        cost = render_cost(text)
        assert cost.units <= cost.budget, (unit, cost)

    def test_list_items_nested_through_quotes_are_refused(self) -> None:
        # 71 KB of `1) > ` five deep on each line once passed the estimate (nested markers
        # were only counted side by side) and took 1.24 s to render.
        assert over_budget(("1) > " * 5 + "a\n") * 2_624) is not None

    @pytest.mark.parametrize("unit", ["> ---\nx\n", "> # B\nx\n", "> > ```\n> x\n", "> <div>\nx\n"])
    def test_quotes_read_again_are_refused_however_short(self, unit: str) -> None:
        # markdown-it-py reads the rest of the run again after each of these quotes: 8 KB
        # of `> ---`, `x` took 1.8 s to render, under the size below which nothing else
        # is counted.
        assert over_budget(unit * (LARGEST_UNCOUNTED_BYTES // len(unit))) is not None
        assert over_budget(unit * 100) is None

    @pytest.mark.parametrize("unit", ['> <div>\n<b title="\n', "> > <div>\n> x\n"])
    def test_html_blocks_in_quotes_read_again_weigh_more(self, unit: str) -> None:
        # Each line read again is an HTML block's (every block rule tries it): 9.5 KB of
        # the first and 7 KB of the second took 1.45 and 1.25 s to render, and passed.
        assert over_budget(unit * 500) is not None

    def test_a_dense_text_over_budget_is_reported(self) -> None:
        assert over_budget("- a\n" * 2_000) is None
        cost = over_budget("- a\n" * 10_000)
        assert cost is not None and cost.units == 1_620_000

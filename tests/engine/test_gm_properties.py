"""GM secrecy on generated adversarial documents and on every failure found so far.

`make test` runs a bounded, derandomized number of examples; `make fuzz-gm` sets
GM_FUZZ_EXAMPLES and draws fresh random documents (tests/engine/gm_documents.py).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from engine.markdown import render_public
from engine.markdown_regions import remove_ranges
from tests.engine.gm_documents import GeneratedDocument, documents
from tests.engine.pandoc_reader import pandoc_texts
from tests.engine.render_growth import cpu_ratio_of_8x_the_input, ordinary_markdown_cpu_s, render_cpu_s, timed_render
from tests.services import require_binary

_FUZZ_EXAMPLES = int(os.environ.get("GM_FUZZ_EXAMPLES", "0"))
_CANARY = re.compile("canary", re.IGNORECASE)
# Generous CPU bound for a document of a few KB (they take a few ms): catches a
# pathological slowdown without depending on the load of the machine.
_SMALL_DOCUMENT_CPU_S = 1.0
CORPUS = Path(__file__).parent / "gm_corpus" / "cases.json"
LINE_ENDS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}
# Generated documents read by Pandoc in `make test`: batches of a few dozen, each one
# `pandoc` process per reader (about 2 s a batch, mostly our rendering).
_PANDOC_BATCH = 40
_PANDOC_BATCHES = 8


def assert_secret_and_stable(raw: str, public_words: list[str]) -> None:
    public = render_public(raw)
    assert not _CANARY.search(public.markdown), (raw, public.markdown)
    assert not _CANARY.search(public.text), (raw, public.text)
    for word in public_words:
        assert word in public.markdown, (raw, word, public.markdown)
    assert render_public(public.markdown).markdown == public.markdown


class TestGeneratedDocuments:
    @settings(
        max_examples=_FUZZ_EXAMPLES or 250,
        derandomize=not _FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(documents())
    def test_no_canary_every_public_word_idempotent_bounded(self, document: tuple[str, GeneratedDocument]) -> None:
        raw, doc = document
        note(f"raw = {raw!r}")  # in full: pytest cuts the long reprs of a failing assertion
        assert render_cpu_s(raw) < _SMALL_DOCUMENT_CPU_S
        assert_secret_and_stable(raw, doc.public_words)


def assert_no_canary_as_pandoc_reads(raws: dict[str, str]) -> None:
    """No canary in what a browser shows of Pandoc's readings of the public Markdown of
    each raw text (named by the key)."""
    pandoc = require_binary("pandoc")
    public = {name: render_public(raw).markdown for name, raw in raws.items()}
    distinct = sorted(set(public.values()))
    shown = dict(zip(distinct, pandoc_texts(pandoc, distinct), strict=True))
    leaks = [(name, raws[name], public[name]) for name in raws if _CANARY.search(shown[public[name]])]
    assert not leaks, leaks


class TestGeneratedDocumentsAsPandocReadsThem:
    @settings(
        max_examples=_FUZZ_EXAMPLES // _PANDOC_BATCH or _PANDOC_BATCHES,
        derandomize=not _FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(documents(), min_size=1, max_size=_PANDOC_BATCH))
    def test_no_canary(self, batch: list[tuple[str, GeneratedDocument]]) -> None:
        assert_no_canary_as_pandoc_reads({f"generated-{index}": raw for index, (raw, _) in enumerate(batch)})


def _corpus() -> list[Any]:
    cases = json.loads(CORPUS.read_text(encoding="utf-8"))
    return [
        pytest.param(case["raw"].replace("\n", line_end), case["public"], id=f"{case['id']}-{name}")
        for case in cases
        for name, line_end in LINE_ENDS.items()
    ]


class TestRegressionCorpus:
    @pytest.mark.parametrize(("raw", "public_words"), _corpus())
    def test_case(self, raw: str, public_words: list[str]) -> None:
        assert_secret_and_stable(raw, public_words)

    def test_no_canary_as_pandoc_reads_any_case(self) -> None:
        # One test for the whole corpus: Pandoc reads it in one batch.
        assert_no_canary_as_pandoc_reads({str(case.id): case.values[0] for case in _corpus()})

    def test_a_closer_split_over_lines_closes_on_any_line(self) -> None:
        # The block rules read a section in growing chunks of lines; a closer straddling
        # a chunk's last line once closed nothing (the rest of the document was removed).
        for lines_inside in range(1, 300):
            raw = '<section class="secret">\nCANARY\n' + "x\n" * lines_inside + "</section\n>\n\nPub"
            assert render_public(raw).markdown == "Pub\n", lines_inside

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param(f'<section style="{"a" * 5000}" class="secret">CANARY</section>\n\nPub', id="long-style"),
            pytest.param(f'<section title="a>{"b" * 5000}" class="secret">CANARY</section>\n\nPub', id="quoted-gt"),
            pytest.param(f'<section data-x="{"<section " * 600}" class="secret">CANARY</section>\n\nPub', id="nested"),
            pytest.param("<section\n" + "data-x=1\n" * 600 + 'class="secret">\nCANARY\n</section>\n\nPub', id="lines"),
            pytest.param('<section a="\n\n' + "x\n" * 40 + '" class="secret">\nCANARY\n</section>\n\nPub', id="blank"),
        ],
    )
    def test_a_tag_longer_than_a_first_reading_is_read_to_its_end(self, raw: str) -> None:
        # Tags are read 4 KB far first; a class further on once went unseen.
        assert render_public(raw).markdown == "Pub\n"

    @pytest.mark.parametrize("class_attribute", ['class="secret"', 'class="public"'])
    def test_a_long_tag_in_a_quote_is_taken_for_secret(self, class_attribute: str) -> None:
        # The source holds the quote's markers: the tag is not read past its first lines.
        raw = '> <section a="\n' + "> x\n" * 40 + f'> " {class_attribute}>\n> CANARY\n> </section>\n\nPub'
        assert render_public(raw).markdown == "Pub\n"

    def test_an_unended_section_tag_in_prose_keeps_what_follows(self) -> None:
        raw = "Use the <section element. " + "Lots of prose. " * 400 + "\n\nPub"
        assert render_public(raw).markdown.endswith("Lots of prose.\n\nPub\n")


_SIZE = 100_000
_SECTION = '<section class="secret">'
# Inputs that took time in n squared at some point (in our scanner, in mdformat's render
# tree or in a regular expression) or over a second in markdown-it's label scans, or would
# if read naively (many GM heading elements that are code or escaped), each cut to 100 KB.
# Long lists, task lists and address-like runs: tests/engine/test_markdown_lists.py and
# test_markdown_text_runs.py.
SLOW_BEFORE = {
    "section-tags-without-end": "<section " * (_SIZE // 9),
    "secret-section-tags-without-end": '<section class="secret" ' * (_SIZE // 24),
    "one-line-sections": (_SECTION + "x</section>\n") * (_SIZE // 36),
    "heading-of-colons": "## GM" + ":" * _SIZE + "x",
    "heading-of-spaced-colons": "## " + ": " * (_SIZE // 2) + "x",
    "heading-of-hashes": "## " + "#" * _SIZE + "x",
    "comments": "a <!-- b --> " * (_SIZE // 13),
    "unclosed-comments": "<!-- " * (_SIZE // 5),
    "backtick-runs": "` `` ``` " * (_SIZE // 9),
    "brackets": "[" * _SIZE,
    "brackets-closed-at-the-end": "[" * (_SIZE - 1) + "]",
    "images-never-closed": "![" * (_SIZE // 2),
    "images-closed-at-the-end": "![" * (_SIZE // 2 - 1) + "]",
    "links": "[a](b) " * (_SIZE // 7),
    "inline-nodes": "*a* `b` [c](d) " * (_SIZE // 15),
    "emphasis": "*a* " * (_SIZE // 4),
    "unclosed-containers": ":::gm\n" * (_SIZE // 6),
    "deep-quote": ">" * _SIZE,
    "html-headings-unclosed": "<h2>" * (_SIZE // 4),
    "html-gm-headings-in-code": "`<h2>GM</h2>` " * (_SIZE // 14),
    "escaped-html-gm-headings": "\\<h2>GM</h2> " * (_SIZE // 13),
    "tags-unclosed": "<a " * (_SIZE // 3),
    "heading-tags-with-unclosed-quotes": '<h2 a="x' * (_SIZE // 8),
    "quoted-greater-than-signs": 'w <span title="a>b">x</span>' * (_SIZE // 28),
    "heading-tags-left-open-at-paragraph-ends": "w <h2>\n\n" * (_SIZE // 8),
    "look-alike-underlines": "\uff27\uff2d\n\uff0d\n" * (_SIZE // 5),
    "section-tags-with-one-late-end": "<section " * (_SIZE // 9 - 1) + ">",
    "section-tags-with-unclosed-quotes": '<section a="' * (_SIZE // 12) + ">",
    "section-tags-in-a-long-tag": "<section '" + "<section " * (_SIZE // 9) + "' class=secret>",
    "section-tags-with-apostrophes": "<section '" * (_SIZE // 10),
    "raw-text-elements-unclosed": "<xmp>" * (_SIZE // 5),
    "processing-instructions-unclosed": "<?" * (_SIZE // 2),
    "link-destinations-unclosed": "[a](" * (_SIZE // 4),
    "heading-tags-in-attributes-under-a-gm-heading": "## GM\n\n" + '<div title="<h2>x</h2>">' * (_SIZE // 24),
    "glued-comments": "<" * (_SIZE // 20) + "<!-- x -->!-- y -->" * (_SIZE // 40),
    "fences": "```\nx\n" * (_SIZE // 6),
    "obsidian-comments-on-one-line": "%" * _SIZE,
}
# CPU of a 100 KB input over that of 100 KB of ordinary Markdown rendered just before and
# just after it, so that the check holds on a slower or loaded machine. Measured on the
# development machine, alone (ordinary Markdown 0.18 s): at most 12 (the `![` and `[` runs
# closed at the end, markdown-it's own label scans), the rest under 6. In a parallel test
# run on this 2-core virtual machine a render's CPU time can double while the other
# worker is busy (a shared host's caches and memory): 27 once. The time in n squared these
# inputs once took (3 - 11 s at 15 - 40 KB) would measure well over 100.
_LARGE_DOCUMENT_CPU_RATIO = 50


class TestBoundedTime:
    @pytest.mark.parametrize("raw", [pytest.param(raw[:_SIZE], id=name) for name, raw in SLOW_BEFORE.items()])
    def test_100_kb_of_adversarial_markdown(self, raw: str) -> None:
        before = ordinary_markdown_cpu_s(_SIZE)
        public, cpu = timed_render(raw)
        ordinary = max(before, ordinary_markdown_cpu_s(_SIZE))
        assert cpu < _LARGE_DOCUMENT_CPU_RATIO * ordinary, f"{cpu:.2f} s; ordinary Markdown {ordinary:.3f} s"
        assert not _CANARY.search(public.markdown)

    @pytest.mark.parametrize(
        ("opener", "block"),
        [
            ("> ::: gm\n", "\n[^1]: x\n\ny\n"),
            ("> ::: gm\n", "\n| a |\n| - |\n| b | c |\n"),
            ("> ::: gm\n\n", "y\n\n"),
            ('> <section class="secret">\n\n', "[^1]: x\n\ny\n\n"),
            ('> <section class="secret">\n>\n> ::: gm\n\n', "<div>y</div>\n\n"),
        ],
    )
    def test_regions_left_open_cost_no_later_block_their_number(self, opener: str, block: str) -> None:
        # Each later block (entering a footnote, a dropped cell's two readings) copied or
        # rebuilt every open region: 8x the input took 40-60x the time. Linear: about 8.
        ratio = cpu_ratio_of_8x_the_input(lambda count: opener * count + block * count, 100)
        assert ratio < 20, ratio

    def test_comments_asking_where_code_spans_end_read_them_once(self) -> None:
        # Each HTML comment holding `%%` read the whole source's code spans again: 8x the
        # comments took about 60x the time. Linear: about 8.
        comment = "<!--\nx `-->` y\n\n:::gm\n%%\nz\n%%\n::::\n-->\n\npub\n\n"
        ratio = cpu_ratio_of_8x_the_input(lambda count: comment * count, 100)
        assert ratio < 20, ratio

    def test_many_ranges_on_one_line_are_removed_in_linear_time(self) -> None:
        # Each range searched its whole line for its line breaks, both ways: 8x the ranges
        # (`%%%%…`) took 37x the time. Linear: about 8.
        def removal_cpu_s(count: int) -> float:
            text, ranges = "x" * (2 * count), [(2 * index, 2 * index + 1) for index in range(count)]
            started = time.process_time()
            remove_ranges(text, ranges)
            return time.process_time() - started

        removal_cpu_s(2_000)  # warm
        ratio = min(removal_cpu_s(160_000) for _ in range(2)) / min(removal_cpu_s(20_000) for _ in range(2))
        assert ratio < 20, ratio

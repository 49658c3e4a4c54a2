"""What rendering a summary or description will cost, estimated before rendering it.

Rendering (engine/markdown.py) is linear in the text, but its cost per byte varies 30-fold
with the shape: markdown-it and mdformat spend about 100 µs on each block or list item and
about 20 µs on each inline node, so 100 KB of one-character list items takes 2.5-3 s of
CPU where 100 KB of prose takes 0.2 s. The importer refuses a text whose estimate is over
`render_budget(size)`: at most about 1 s for a text under 100 KB, and no more per byte
above that, so every accepted text renders in bounded time.

The estimate is in render units, about a microsecond of CPU each on the development
machine, and errs high: each weight is above the worst cost per item seen over some forty
dense shapes, with a margin (`make bench-render` prints the estimate beside the render's
CPU, and what the largest accepted input of each shape costs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Units per non-blank line (a block or a list item and its paragraph: `1) a` lines are the
# slowest), per list marker nested on the same line as another (`- - a`, `1) > 1) > a`:
# each level costs a list and its item, quotes between them too), per character
# that may start inline markup (`![` runs, emphasis, table pipes), per place a GFM
# autolink may be (an `@` or `www.`: each found costs a link, URL parsing and
# normalization included, about 50 µs; `a@b.c` and a tab, 5 bytes apart, took 0.86 s for
# 100 KB) and per byte.
UNITS_PER_LINE = 150
UNITS_PER_NESTED_MARKER = 80
UNITS_PER_MARKUP_CHARACTER = 30
UNITS_PER_AUTOLINK = 60
UNITS_PER_BYTE = 3
# Units per line markdown-it reads again after a quote: a line less deep in quotes than
# the one before it, when the quote's last block is not a paragraph (`> ---`, `x`), ends
# the quote's inner parse but not its scan, so the parse goes on from there and the next
# quote line scans the rest of the run of non-blank lines again (time in n squared in
# markdown-it-py's own blockquote rule: 8 KB of `> ---`, `x` lines took 1.8 s, about
# 1.8 µs per line read again; an HTML block's line costs more, every block rule trying
# it: 9.5 KB of `> <div>`, `<b title="` took 1.45 s, about 5.4 µs per line, where 100 KB
# of ordinary Markdown took 0.2 s). Counted for a text of any size.
UNITS_PER_QUOTE_RESCANNED_LINE = 6
# The budget: a million units (about a second here) up to 100 KB, ten units a byte above.
BASE_BUDGET_UNITS = 1_000_000
BUDGET_UNITS_PER_BYTE = 10

_MARKUP_CHARACTERS = "[]*_`<>!|&\\~$"
_LIST_MARKER = r"(?:[-*+]|\d{1,9}[.)])"
# A line starting (after quote markers and indentation) with two list markers, quote
# markers allowed between them. Searched from line breaks, a literal start, so that the
# search skips ordinary text fast: the estimate is made for every record of every import.
_NESTED_LINE_AFTER_BREAK = re.compile(rf"[\n\r][ \t>]*{_LIST_MARKER}[ \t][ \t>]*{_LIST_MARKER}(?=[ \t\r\n]|\Z)")
_NESTED_FIRST_LINE = re.compile(rf"[ \t>]*{_LIST_MARKER}[ \t][ \t>]*{_LIST_MARKER}(?=[ \t\r\n]|\Z)")
# The next list marker of a line's container markers (quote markers skipped).
_NEXT_CONTAINER_LIST_MARKER = re.compile(rf"[ \t>]*{_LIST_MARKER}(?=[ \t]|\Z)")
_AUTOLINK_STARTS = ("@", "www.")
_LINE_BREAK = re.compile(r"[\n\r]")
# Markdown-it's lines (its own line ends), and a line's container markers.
_LINES = re.compile(r"\r\n|\r|\n")
_CONTAINER_MARKERS = re.compile(rf"(?:[ \t>]|{_LIST_MARKER}[ \t])*")
# A line whose container markers hold a quote marker: without one, no line is read again.
_QUOTE_LINE = re.compile(rf"(?:\A|[\n\r])(?:[ \t]|{_LIST_MARKER}[ \t])*>")


@dataclass(frozen=True, slots=True)
class RenderCost:
    size: int
    """Bytes of UTF-8."""
    lines: int
    """Lines holding anything but white space."""
    nested_markers: int
    markup_characters: int
    autolinks: int
    """Places a GFM autolink (an e-mail address, `www.`) may be."""
    quote_rescans: int = 0
    """Lines read again after lines less deep in quotes (at most; see `_quote_rescans`)."""

    @property
    def units(self) -> int:
        return (
            UNITS_PER_LINE * self.lines
            + UNITS_PER_NESTED_MARKER * self.nested_markers
            + UNITS_PER_MARKUP_CHARACTER * self.markup_characters
            + UNITS_PER_AUTOLINK * self.autolinks
            + UNITS_PER_BYTE * self.size
            + UNITS_PER_QUOTE_RESCANNED_LINE * self.quote_rescans
        )

    @property
    def budget(self) -> int:
        return render_budget(self.size)


# The most units a byte can weigh, quote rescans aside, is that of a line of one `@` (`@`,
# line break): a text this short is within the base budget whatever else it holds.
LARGEST_UNCOUNTED_BYTES = int(
    (BASE_BUDGET_UNITS - UNITS_PER_LINE)
    / ((UNITS_PER_LINE + max(UNITS_PER_MARKUP_CHARACTER, UNITS_PER_AUTOLINK)) / 2 + UNITS_PER_BYTE)
)


def over_budget(text: str) -> RenderCost | None:
    """The cost of `text` if it is over its budget, else None.

    A text too short to weigh more than the base budget by its other counts (under 9 KB:
    most summaries) is not counted at all unless a line starts with a quote marker (lines
    read again after quotes grow with the square of a run's length), which keeps an
    import's validation fast.
    """
    short = len(text.encode("utf-8", "surrogatepass")) <= LARGEST_UNCOUNTED_BYTES
    if short and _QUOTE_LINE.search(text) is None:
        return None
    cost = render_cost(text)
    return cost if cost.units > cost.budget else None


def render_cost(text: str) -> RenderCost:
    return RenderCost(
        size=len(text.encode("utf-8", "surrogatepass")),
        lines=sum(1 for line in _LINES.split(text) if not _is_blank(line)),
        nested_markers=_nested_list_markers(text),
        markup_characters=sum(text.count(character) for character in _MARKUP_CHARACTERS),
        autolinks=sum(text.count(start) for start in _AUTOLINK_STARTS),
        quote_rescans=_quote_rescans(text),
    )


def render_budget(size: int) -> int:
    return max(BASE_BUDGET_UNITS, BUDGET_UNITS_PER_BYTE * size)


def _nested_list_markers(text: str) -> int:
    """List markers that follow another one among the container markers starting a line
    (`- - a`, `- > - a`: one)."""
    starts = [match.start() + 1 for match in _NESTED_LINE_AFTER_BREAK.finditer(text)]
    if _NESTED_FIRST_LINE.match(text):
        starts.insert(0, 0)
    nested = 0
    for start in starts:
        line_break = _LINE_BREAK.search(text, start)
        nested += _container_list_markers(text, start, line_break.start() if line_break else len(text)) - 1
    return nested


def _container_list_markers(text: str, start: int, end: int) -> int:
    markers = 0
    while found := _NEXT_CONTAINER_LIST_MARKER.match(text, start, end):
        markers += 1
        start = found.end()
    return markers


def _quote_rescans(text: str) -> int:
    """Lines markdown-it may read again after quotes: for each non-blank line less deep in
    quote markers than the non-blank line before it, the lines from it to the end of its
    run of non-blank lines (a blank line ends a quote's scan). It errs high: a lazy line
    continuing a quote's paragraph (`> a`, `b`) is read once."""
    if _QUOTE_LINE.search(text) is None:
        return 0
    depths = [_quote_depth(line) for line in _LINES.split(text)]
    rescans = 0
    run_below = 0  # non-blank lines from this one to the end of its run
    for number in range(len(depths) - 1, 0, -1):
        if depths[number] < 0:
            run_below = 0
            continue
        run_below += 1
        if depths[number] < depths[number - 1]:
            rescans += run_below
    return rescans


def _quote_depth(line: str) -> int:
    """The quote markers among a line's container markers; -1 for a blank line."""
    if _is_blank(line):
        return -1
    markers = _CONTAINER_MARKERS.match(line)
    return markers.group().count(">") if markers else 0


def _is_blank(line: str) -> bool:
    """Whether a line is blank to markdown-it: spaces and tabs at most. A line of other
    white space (a no-break space, a form feed) is text, which costs what a line costs,
    and a line break is what markdown-it breaks lines at only (not a form feed, `\x85`
    or U+2028, which `str.splitlines` breaks at too)."""
    return not line.strip(" \t")

"""What only the whole source shows about a block's text: the inert places that run into it.

The core rule scans each block token's text on its own (engine/markdown_rules.py), but an
attribute value, a `<script>` or a bogus comment opened in one block may run on into the
next one when a line interrupts a paragraph or an HTML block ends at a blank line: in
`<a title="x` newline `</section>">`, the `</section>` starts a new HTML block, yet to a
reader of the HTML it is inside the title. So a closer, or a heading that would end a GM
section, counts only if it is markup both in its block's text and in the whole source.

markdown-it gives each block token the source lines it came from (`token.map`), and its
text holds those lines without container markers and indentation: each line of the text
is found at the end of its source line (a table cell's, anywhere in it).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from markdown_it.rules_block.html_block import HTML_SEQUENCES

from engine.markdown_inert import BacktickRuns, InertSpans, InertTest, inert_spans
from engine.markdown_text import THEMATIC_BREAK, without_container_prefix

# A position in a block's text -> the same position in the source, or None when unknown.
SourcePosition = Callable[[int], int | None]
# A fence opening line: a backtick fence's info string holds no backtick.
_FENCE = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")
# An ordered list marker other than 1, which cannot interrupt a paragraph.
_LIST_MARKER_NOT_ONE = re.compile(r" {0,3}(?!0*1[.)])\d{1,9}[.)](?:[ \t]|$)")
# The HTML blocks that may interrupt a paragraph (all but a line opening any other tag).
_INTERRUPTING_HTML_SEQUENCES = [sequence for sequence in HTML_SEQUENCES if sequence[2]]
# What ends the HTML blocks that end at a blank line (markdown-it's `^$`).
_UNTIL_BLANK_LINE = "^$"
# What a blank line holds to markdown-it: a line of a no-break space, a form feed or any
# other Unicode space is text, which an HTML block goes on over, and which ends a fence
# in a list item when less indented.
_BLANK = " \t"
# A line that may be a block of its own, after which a line opening any tag starts an
# HTML block: an ATX heading, a thematic break, a setext underline, a container's opening
# or closing line (`::: gm`, `:::`: a block to the container rule, markdown-it-container
# and Pandoc, GM or not), or one indented four columns (maybe indented code); and a
# paragraph's line starting with `[` or after one (maybe a link reference definition,
# which may run over several lines: `in_definition`), and a line holding a `|` in a quote
# or list item or after one (maybe a table's row: a table goes on over no lazy line, so a
# line out of its quote or item starts a block of its own: `in_row`); an empty list item.
_MAY_END_A_PARAGRAPH = re.compile(
    rf"#{{1,6}}(?:[ \t]|$)|{THEMATIC_BREAK}|=+[ \t]*$|(?:-+|[+*]|\d{{1,9}}[.)])[ \t]*$|:{{3}}"
)


class SourceInert:
    """The inert places of a whole source (engine.markdown_inert), asked about block texts."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.last_html_closer = source.rfind("-->")
        self.backtick_runs = BacktickRuns(source)
        self.lines = source.split("\n")
        self.line_starts: list[int] = []
        offset = 0
        for line in self.lines:
            self.line_starts.append(offset)
            offset += len(line) + 1
        kinds = _line_kinds(self.lines)
        self.raw_html_lines, self.code_lines = kinds.raw_html, kinds.code
        self.item_columns = kinds.item_columns
        self.places = inert_spans(source, self.in_raw_html, self.in_code, item_column_at=self._item_column_at)
        # A line opening a tag alone after one that may be a block of its own (`# H`,
        # `***`, `[a]: /u`, a setext underline) may start an HTML block where the lines
        # read as a paragraph's would go on with it (or go on with a lazy paragraph): the
        # places are read both ways.
        # An HTML block opened in a quote or list item ends, to markdown-it, at a line
        # outside them (a lazy line, or one whose text starts left of the block's), which
        # may then be Markdown text, its `"` no attribute's (`- <div>`, `<b title="`,
        # `<div title=">`): read both ways too.
        added = (
            self._places_read_as(kinds, kinds)
            + self._places_read_as(_line_kinds(self.lines, _MAY_END_A_PARAGRAPH), kinds)
            + self._places_read_as(_line_kinds(self.lines, html_ends_outside=True), kinds)
        )
        if added:
            self.places = InertSpans(self.places.found + added)
        self.inert = self.places.inert
        self._last_positions: tuple[tuple[int, int, str], SourcePosition] | None = None

    def _places_read_as(self, kinds: _LineKinds, read: _LineKinds) -> list[tuple[int, int]]:
        """The inert places that reading the source's lines as `kinds` adds to those of
        `self.places`, which are those of the reading `read` as the source stands."""
        raw_html_lines = kinds.raw_html
        in_raw_html = partial(_line_flag, raw_html_lines, self.line_starts)
        in_code = partial(_line_flag, kinds.code, self.line_starts)
        item_column_at = partial(_line_value, kinds.item_columns, self.line_starts)
        found: list[tuple[int, int]] = []
        if kinds is not read:
            if kinds.raw_html == read.raw_html and kinds.code == read.code and kinds.item_columns == read.item_columns:
                return found
            found = inert_spans("\n".join(self.lines), in_raw_html, in_code, item_column_at=item_column_at).found
        lines = self.lines
        if any(kinds.stripped_markers):
            # A tag or bogus comment in a quote runs on over the next line's markers, which
            # markdown-it strips: in `> <?x` newline `> </section>`, the `>` that ends it
            # is the end tag's. Its places are read without those markers too.
            lines = list(map(_without_quote_markers, lines, kinds.stripped_markers))
            found = found + inert_spans("\n".join(lines), in_raw_html, in_code, item_column_at=item_column_at).found
        # A tag, attribute value or bogus comment left open at the end of an HTML block
        # runs on over the Markdown text after it as markdown-it writes it: in `<div
        # title="x`, blank line, `a " b >`, `</section>`, the end tag is in the value.
        # Its places are read with what a browser does not see of that text too, and, as
        # a browser reads it, not in a comment (`<!--`, `<a title="x`, `-->`: text).
        as_rendered = _as_rendered(lines, raw_html_lines)
        if as_rendered != lines:
            rendered = inert_spans(
                "\n".join(as_rendered), in_raw_html, in_code, browser_comments=True, item_column_at=item_column_at
            )
            found = found + rendered.found
        return found

    def test_for(self, line_map: list[int] | None, text: str, own: InertTest) -> InertTest:
        """`own` (the text's own inert places), or else the source's, for a block's `text`
        read from source lines `line_map`."""
        if line_map is None:
            return own
        position = self._positions(line_map, text)

        def inert(at: int, opened_at: int) -> bool:
            if own(at, opened_at):
                return True
            source_at = position(at)
            if source_at is None:
                return False
            # An opener in a line of unknown place: as if before the text, the safe side.
            source_opened = position(opened_at) if opened_at >= 0 else None
            return self.inert(source_at, -1 if source_opened is None else source_opened)

        return inert

    def inside_earlier(self, line_map: list[int] | None, text: str, at: int) -> bool:
        """Whether position `at` of a block's `text` is, in the source, inside an inert
        place that starts before it (a heading tag in a title opened blocks earlier)."""
        if line_map is None:
            return False
        source_at = self._positions(line_map, text)(at)
        return source_at is not None and self._inside_earlier(source_at)

    def line_inside_earlier(self, line: int) -> bool:
        """Whether source line `line` begins inside an inert place opened before it."""
        return line < len(self.line_starts) and self._inside_earlier(self.line_starts[line])

    def in_raw_html(self, source_at: int) -> bool:
        """Whether a source position is in an HTML block (see `_LineKinds.raw_html`)."""
        return _line_flag(self.raw_html_lines, self.line_starts, source_at)

    def _item_column_at(self, source_at: int) -> int:
        return _line_value(self.item_columns, self.line_starts, source_at)

    def in_code(self, source_at: int) -> bool:
        """Whether a source position may be in a code block (see `_LineKinds.code`)."""
        return _line_flag(self.code_lines, self.line_starts, source_at)

    def _inside_earlier(self, source_at: int) -> bool:
        index = bisect_right(self.places.starts, source_at) - 1
        return index >= 0 and self.places.merged[index][0] < source_at < self.places.merged[index][1]

    def positions(self, line_map: list[int] | None, text: str) -> SourcePosition | None:
        """Where the offsets of a block's `text`, read from source lines `line_map`, are in
        the source (None for all when the lines are unknown)."""
        return None if line_map is None else self._positions(line_map, text)

    def _positions(self, line_map: list[int], text: str) -> SourcePosition:
        # Asked once per heading of a block: the last block's positions are kept.
        key = (line_map[0], line_map[1], text)
        if self._last_positions is not None and self._last_positions[0] == key:
            return self._last_positions[1]
        position = self._build_positions(line_map, text)
        self._last_positions = (key, position)
        return position

    def _build_positions(self, line_map: list[int], text: str) -> SourcePosition:
        first_line, end_line = line_map
        text_line_starts: list[int] = []
        bases: list[int | None] = []
        offset = 0
        for index, text_line in enumerate(text.split("\n")):
            text_line_starts.append(offset)
            offset += len(text_line) + 1
            bases.append(self._line_base(first_line + index, end_line, text_line))

        def position(at: int) -> int | None:
            index = bisect_right(text_line_starts, at) - 1
            base = bases[index]
            return None if base is None else base + at - text_line_starts[index]

        return position

    def _line_base(self, line: int, end_line: int, text_line: str) -> int | None:
        """Where `text_line` starts in source line `line`, or None if it is not there."""
        if line >= min(end_line, len(self.lines)):
            return None
        source_line = self.lines[line].rstrip()
        written = text_line.rstrip()
        if source_line.endswith(written):
            return self.line_starts[line] + len(source_line) - len(written)
        found = source_line.find(written)
        return None if found < 0 else self.line_starts[line] + found


@dataclass(frozen=True, slots=True)
class _LineKinds:
    """What markdown-it makes of each source line, as far as inert places go."""

    raw_html: list[bool]
    """In an HTML block, as markdown-it starts and ends them (after quote and list markers;
    fenced code is skipped): what a browser reads as HTML, tags and scripts running on past
    blank lines."""
    stripped_markers: list[int]
    """How many of the line's leading quote markers markdown-it strips: all of them, but on
    a line going on with an HTML block, only as many as the block's first line had (`<div`
    newline `>` ends a tag)."""
    code: list[bool]
    """May be code, written escaped: a fence's line, or an HTML block's whose first line is
    indented four columns (an indented code block, unless deep in a list item)."""
    item_columns: list[int]
    """Where the text of the quotes and list items surely holding the line starts, from
    the margin (see `_follow_items`, `_text_column`)."""


def _line_kinds(
    lines: list[str], paragraph_ends: re.Pattern[str] | None = None, html_ends_outside: bool = False
) -> _LineKinds:
    """`paragraph_ends`: what, at a line's text, makes the line end its paragraph (or one
    indented four columns: indented code), when a paragraph line is to be read as a block
    of its own too. `html_ends_outside`: whether an HTML block ending at a blank line ends
    before a line that may stand outside the quote or list item it was opened in (fewer
    quote markers, or text starting left of the block's first line's, once the block's
    quote markers are gone); the other kinds already end there (engine/markdown_inert.py)."""
    raw: list[bool] = []
    code: list[bool] = []
    html_indented = False
    stripped_markers: list[int] = []
    fence: _Fence | None = None
    html_end: re.Pattern[str] | None = None
    html_quotes = 0
    html_column = 0
    in_paragraph = False
    # In a run of paragraph lines starting with `[`: a link reference definition may run
    # over several of them (`[a]:`, `/u`, `"title"`), and a line opening a tag after it
    # starts an HTML block.
    in_definition = False
    # In a run of paragraph lines in a quote or list item from one holding a `|`: maybe a
    # table's rows (a body row needs no `|`), which no lazy line continues.
    in_row = False
    # The columns where the list items surely holding the line put their text, outermost
    # first: a line there is indented from that column, not the margin (`-  <section`,
    # blank line, `    <script>` is an HTML block in the item, not indented code).
    items: list[int] = []
    items_quotes = 0
    item_columns: list[int] = []
    for written in lines:
        quotes = _quotes_before(written, without_container_prefix(written))
        stripped_markers.append(quotes if html_end is None else min(quotes, html_quotes))
        line = written.expandtabs(4)
        after_prefix = without_container_prefix(line)
        if in_paragraph and _LIST_MARKER_NOT_ONE.match(line):
            after_prefix = line  # only a list starting at 1 interrupts a paragraph
        content = after_prefix.lstrip(" ")
        in_block = fence is not None or html_end is not None
        if quotes != items_quotes:
            items.clear()  # a quote starts or ends (a blank line ends one) with the items in it
            items_quotes = quotes
        item_indent = _follow_items(items, _after_quote_markers(line, quotes), in_paragraph, in_block)
        item_columns.append(_text_column(line, quotes, item_indent))
        code.append(fence is not None or (html_end is not None and html_indented))
        if fence is not None and not fence.ended_by(line, after_prefix):
            raw.append(False)
            if content.startswith(fence.marker) and not content.strip(fence.marker[0] + " \t"):
                fence = None
            continue
        fence = None
        if html_end is not None:
            # Blank once the block's own quote markers are gone: under `<div>`, `> ` (an
            # empty quote elsewhere) or `- ` is the block's text, as markdown-it reads it.
            unquoted = _without_quote_markers(written, stripped_markers[-1])
            blank = not unquoted.strip(_BLANK)
            if html_end.pattern == _UNTIL_BLANK_LINE and blank:
                html_end = None
                raw.append(False)
                continue
            unquoted = unquoted.expandtabs(4)
            if not (
                html_ends_outside
                and html_end.pattern == _UNTIL_BLANK_LINE
                and not blank
                and (quotes < html_quotes or len(unquoted) - len(unquoted.lstrip(" ")) < html_column)
            ):
                raw.append(True)
                if html_end.pattern != _UNTIL_BLANK_LINE and html_end.search(content):
                    html_end = None
                continue
            html_end = None
            in_paragraph = False
        opened = _FENCE.match(after_prefix)
        if opened:
            fence = _Fence(opened.group(1), _quotes_before(line, after_prefix), len(line) - len(content))
            code[-1] = True
            raw.append(False)
            in_paragraph = in_definition = in_row = False
            continue
        # A paragraph goes on over a line opening any other tag (`[r]:` newline `<u>`).
        openers = _INTERRUPTING_HTML_SEQUENCES if in_paragraph else HTML_SEQUENCES
        start = next((sequence for sequence in openers if sequence[0].search(content)), None)
        raw.append(start is not None)
        html_indented = len(after_prefix) - len(content) - item_indent >= 4
        code[-1] = start is not None and html_indented
        in_paragraph = start is None and bool(content.strip())
        text_line = start is None and bool(content.strip(_BLANK))
        in_definition = text_line and (in_definition or content.startswith("["))
        in_row = text_line and len(content) < len(line) and (in_row or "|" in content)
        if in_paragraph and paragraph_ends is not None:
            in_paragraph = not (html_indented or in_definition or in_row or paragraph_ends.match(content))
        if start is not None and (start[1].pattern == _UNTIL_BLANK_LINE or not start[1].search(content)):
            html_end = start[1]
            html_quotes = quotes
            html_column = len(line) - len(content)
    return _LineKinds(raw, stripped_markers, code, item_columns)


def _after_quote_markers(line: str, quotes: int) -> str | None:
    """`line` after its `quotes` quote markers, each with the space a quote's text starts
    after; None when a list marker comes between them (`> - > x`)."""
    if not quotes:
        return line
    markers = re.match(rf"(?: {{0,3}}> ?){{{quotes}}}", line)
    return None if markers is None else line[markers.end() :]


def _follow_items(items: list[int], line: str | None, in_paragraph: bool, in_block: bool) -> int:
    """Update `items` (see `_line_kinds`) for `line`, a line's text in the quotes around
    it, and return the column of the innermost one holding it there, 0 when none surely
    does. Only ever too few: a line less indented than an item's text ends it here (a lazy
    line may not, read as indented code from further left, as before), and a change of
    quote depth (by the caller), quote and list markers mixed, a marker in a fence or an
    HTML block, a thematic break or an item starting with indented code clear them."""
    if line is None:
        items.clear()
        return 0
    after_prefix = without_container_prefix(line)
    if in_paragraph and _LIST_MARKER_NOT_ONE.match(line):
        after_prefix = line  # only a list starting at 1 interrupts a paragraph
    content = after_prefix.lstrip(" ")
    if not content.strip(_BLANK):
        return items[-1] if items and len(line) == len(after_prefix) else 0
    if _quotes_before(line, after_prefix) or _THEMATIC_BREAK_LINE.match(line):
        items.clear()
        return 0
    if len(after_prefix) == len(line):
        indent = len(line) - len(content)
        while items and items[-1] > indent:
            items.pop()
        return items[-1] if items else 0
    # A line opening list items: they hold the lines indented to its text.
    marker_indent = len(line) - len(line.lstrip(" "))
    while items and items[-1] > marker_indent:
        items.pop()
    if in_block:
        items.clear()
    elif len(after_prefix) - len(content) >= 4:
        # Five columns or more after the marker: its text starts one column after it, and
        # the line is indented code there (`-     x`).
        items.append(len(line) - len(after_prefix))
    else:
        items.append(len(line) - len(content))
    return 0


_THEMATIC_BREAK_LINE = re.compile(rf" {{0,3}}{THEMATIC_BREAK}")


def _line_flag(flags: list[bool], line_starts: list[int], source_at: int) -> bool:
    """The flag of the line a source position is on."""
    return flags[bisect_right(line_starts, source_at) - 1]


def _line_value(values: list[int], line_starts: list[int], source_at: int) -> int:
    """The value of the line a source position is on."""
    return values[bisect_right(line_starts, source_at) - 1]


def _quotes_before(line: str, rest: str) -> int:
    """How many quote markers `line` shows before `rest`, what is left of it after them."""
    return line[: len(line) - len(rest)].count(">")


def _text_column(line: str, quotes: int, item_column: int) -> int:
    """Where the text of the list items surely holding `line` starts, `item_column` in
    its `quotes` quotes: after those quotes' markers, and the space after each (`>   x`
    is indented two columns); 0 when something else comes between them."""
    if not quotes:
        return item_column
    markers = re.match(rf"(?: {{0,3}}> ?){{{quotes}}}", line)
    return 0 if markers is None else markers.end() + item_column


def _without_quote_markers(line: str, count: int) -> str:
    """`line` with its first `count` quote markers turned into spaces (offsets kept)."""
    return line.replace(">", " ", count) if count else line


# What a browser never sees of a line that may be a link reference definition's
# (markdown-it writes nothing for one), and of any Markdown line (`"` is written `&quot;`).
_UNSEEN_IN_DEFINITION = str.maketrans("\"'>", "   ")
_UNSEEN_IN_MARKDOWN = str.maketrans('"', " ")


def _as_rendered(lines: list[str], raw_html_lines: list[bool]) -> list[str]:
    """The `lines` after the first HTML block's, offsets kept, with what a browser does not
    see of their Markdown text turned into spaces: every `"`, and the `"`, `'` and `>` of a
    run of lines starting with `[` (possibly link reference definitions)."""
    first_raw = next((index for index, raw in enumerate(raw_html_lines) if raw), len(lines))
    rendered = lines[: first_raw + 1]
    in_definition = False
    for line, raw in zip(lines[first_raw + 1 :], raw_html_lines[first_raw + 1 :], strict=True):
        content = without_container_prefix(line).strip()
        in_definition = not raw and (content.startswith("[") or (in_definition and bool(content)))
        unseen = _UNSEEN_IN_DEFINITION if in_definition else _UNSEEN_IN_MARKDOWN
        rendered.append(line if raw else line.translate(unseen))
    return rendered


@dataclass(frozen=True, slots=True)
class _Fence:
    marker: str
    quotes: int
    """Quote markers before it: a line with fewer ends the quote, and the fence in it."""
    column: int
    """Where its marker starts: in a list item, a line less indented ends the item."""

    def ended_by(self, line: str, after_prefix: str) -> bool:
        if _quotes_before(line, after_prefix) < self.quotes:
            return True
        indentation = len(line) - len(line.lstrip(" "))
        return self.quotes == 0 and bool(line.strip(_BLANK)) and indentation < self.column

"""Where a closing marker of a GM-only part might not be markup (contract section 6).

A removed part ends only at a closer that every reader takes for markup. A `</section>`,
`-->`, `%%` or `:::` that might be inside code, inside an attribute value, inside a
link's text, destination or title (an image description and a link reference
definition's destination and title included), behind a backslash
or inside a raw-text element (script, style, textarea, xmp, ...; pre too) or a bogus
comment (`<?...>`, `<!DOCTYPE ...>`, `</ ...>`) does not end anything: the
part goes on, which at worst removes more than the author meant, never less.

`inert_spans` finds those places in one left-to-right pass over a text, erring on the
side of "might not be markup": backtick runs are paired with the next run of the same
length in the same paragraph whatever the escapes, a bracket is matched with the next
closing one, a tag is skipped with its quoted attribute values. Openers never consult
this: they count wherever they might be markup.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

from markdown_it.rules_block.html_block import HTML_SEQUENCES

from engine.html_tag_ends import tag_ends

# How far a `<section` tag is read by regular expressions for its class before the index
# of engine/markdown_section_tags.py takes over, and the window a glued opener is read in.
MAX_TAG_LENGTH = 4096

# (closer's offset, offset of the opener of its region or -1 when it is before the text)
# -> whether the closer might not be markup. A closer in the same code span or link text
# as its opener is as much markup as the opener was.
InertTest = Callable[[int, int], bool]

# Elements whose content is text to a browser (and `<pre>`, erring toward "not markup").
_RAW_TEXT = ("script", "style", "pre", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript")
# What a browser reads as a bogus comment, up to the first `>`: a processing instruction,
# a declaration (`<!DOCTYPE`, `<![CDATA[`, `<!x`, but not a comment) and `</` not followed
# by a letter.
_BOGUS_COMMENT = r"<\?|<!(?!--)|</(?![A-Za-z])"
_EVENTS = re.compile(
    rf"`+|\\.|\n[ \t]*(?=\n)|\[|\][(:]?|<(?:{'|'.join(_RAW_TEXT)}|plaintext)(?=[\s>/])|<[A-Za-z]|{_BOGUS_COMMENT}|<!--",
    re.I,
)
_BLANK_LINE = re.compile(r"\n[ \t]*(?=\n)")
# An end tag's name ends at ASCII white space only: `</script` and a no-break space goes
# on being the script's text.
_RAW_TEXT_END = {name: re.compile(rf"</{name}[\t\n\f\r ]*>", re.I) for name in _RAW_TEXT}
_LITERAL_CLOSERS = {closer: re.compile(re.escape(closer)) for closer in (">", "]]>")}


def inert_spans(
    text: str,
    raw_html_at: Callable[[int], bool] | None = None,
    code_at: Callable[[int], bool] | None = None,
    *,
    browser_comments: bool = False,
    item_column_at: Callable[[int], int] | None = None,
) -> InertSpans:
    """The (start, end) ranges of `text` where a closer is not trusted.

    Tags, raw-text elements and bogus comments run as far as their end, blank lines
    included, when `raw_html_at` is None (raw HTML, an HTML block's text) or says their
    start is raw HTML (an HTML block of a whole document, which a browser reads on). One
    starting in Markdown text is one only if it ends within its paragraph, as CommonMark
    reads `a<b` or an unclosed quote there as text; a raw-text element opened there is
    raw inline HTML and runs on to an end tag written as is (a `<pre>`, to its
    paragraph's end at the latest). `code_at` says where a line may be a code block's,
    whose end tags markdown-it writes escaped; `item_column_at`, where the text of the
    list items surely holding a line starts (its indentation counts from there). With
    `browser_comments` (the text as a
    browser reads it), a comment opened in raw HTML, outside a raw-text element, holds no
    tag up to the first `-->` after it, wherever that is (the earliest a browser may end
    it).
    """
    blank_lines = [match.start() for match in _BLANK_LINE.finditer(text)]

    def in_markdown(start: int) -> bool:
        return raw_html_at is not None and not raw_html_at(start)

    def limit_for(start: int) -> int:
        if not in_markdown(start):
            return len(text)
        following = bisect_right(blank_lines, start)
        return blank_lines[following] if following < len(blank_lines) else len(text)

    def tag_end(body_start: int, limit: int) -> int | None:
        end = tag_ends(text).end_from(body_start)
        return end if end is not None and end <= limit else None

    # closer -> (searched from, the next closer found from there or None): many openers
    # before one closer (or none) find it once, whatever their limits, so the pass stays
    # linear.
    closings: dict[str, tuple[int, re.Match[str] | None]] = {}

    def closing(closer: str, position: int, limit: int) -> int | None:
        """End of the first `closer` (an end tag's name, `>` or `]]>`) in position..limit."""
        known = closings.get(closer)
        if known is None or not known[0] <= position or (known[1] and known[1].start() < position):
            pattern = _RAW_TEXT_END.get(closer) or _LITERAL_CLOSERS[closer]
            found = pattern.search(text, position)
            if closer in _RAW_TEXT_END:
                while found is not None and not end_tags.written_as_is(found.start()):
                    found = pattern.search(text, found.end())
            known = (position, found)
            closings[closer] = known
        found = known[1]
        return None if found is None or found.end() > limit else found.end()

    spans: list[tuple[int, int]] = []
    doubt = False  # whether a code span in the paragraph may not be where it is read
    last_run_end = 0  # where the last backtick run read ends
    instruction_close = -1  # where the next `?>` starts (len(text): none)
    code_spans = BacktickRuns(text, blank_lines)
    end_tags = _MarkdownEndTags(text, blank_lines, in_markdown, code_at, item_column_at)
    brackets: list[int] = []
    raw_text_end = 0  # where the last raw-text element read ends
    position = 0
    while True:
        match = _EVENTS.search(text, position)
        if match is None:
            break
        start, event = match.start(), match.group()
        position = match.end()
        if event[0] == "`":
            # markdown-it pairs a run with the next of its length in its block, whatever
            # lies between. Each run is taken to open a code span to the next run of its
            # length in the paragraph (every way its lines may be blocks: a heading, list
            # items, cells); one on a line, after no run but such pairs and runs never
            # closed, is surely one, and its text (tags too) is passed over whole.
            if code_spans.skipped(last_run_end, start):
                doubt = True  # a run in a tag, link destination, ... may open one
            last_run_end = position
            closer = code_spans.closer(start, len(event))
            if closer is not None:
                spans.append((start, closer + len(event)))
                if not doubt and in_markdown(start) and code_spans.on_one_line(start, closer):
                    position = last_run_end = closer + len(event)
                else:
                    doubt = True
        elif event == "<!--":
            if browser_comments and not in_markdown(start) and start >= raw_text_end:
                comment_end = text.find("-->", start + 2)
                position = len(text) if comment_end < 0 else comment_end + len("-->")
        elif event[0] == "\\":
            spans.append((start, position))
            if event[1] == "`":
                last_run_end = position
        elif event[0] == "\n":  # a blank line ends a paragraph, and its spans with it
            brackets.clear()
            doubt, last_run_end = False, position
        elif event == "[":
            brackets.append(start)
        elif event[0] == "]":
            if brackets:
                if event == "](":
                    end = _destination_end(text, position)
                elif event == "]:":
                    end = _definition_end(text, position)
                else:
                    end = position
                spans.append((brackets.pop(), end))
                position = max(position, end)
        elif event[1:].casefold() in _RAW_TEXT_END:
            name = event[1:].casefold()
            limit = limit_for(start)
            if in_markdown(start):
                if tag_end(position, limit) is None:
                    continue  # a start tag never ended: text
                if name != "pre":
                    # Raw inline HTML (a code span surely one is passed over whole): a
                    # browser reads on to the end tag, past paragraphs.
                    limit = len(text)
            closed_at = closing(name, position, limit)
            end = limit if closed_at is None else closed_at
            # Read on inside it: a tag there (a browser reads them in `<pre>`) holding a
            # closer is a place of its own, when an opener is in there too.
            spans.append((start, end))
            raw_text_end = max(raw_text_end, end)
        elif event[1:].casefold() == "plaintext":  # text to the end of the document
            end = limit_for(start)
            spans.append((start, end))
            position = end
        elif event[1] in "?!/":  # a browser's bogus comment, to the first `>`
            # CDATA is one in a browser, but runs to `]]>` in CommonMark: the longer wins.
            limit = limit_for(start)
            closed_at = closing("]]>" if text.startswith("<![CDATA[", start) else ">", position, limit)
            if closed_at is None and in_markdown(start):
                continue
            end = limit if closed_at is None else closed_at
            spans.append((start, end))
            position = end
            if event[1] == "?" and in_markdown(start):
                # markdown-it reads a processing instruction on to `?>`: a backtick run
                # before that opens nothing.
                if instruction_close < start + 2:
                    found = text.find("?>", start + 2)
                    instruction_close = len(text) if found < 0 else found
                if instruction_close < limit and code_spans.skipped(end, instruction_close):
                    doubt = True
        else:
            limit = limit_for(start)
            ended_at = tag_end(start + 2, limit)
            if ended_at is None and in_markdown(start):
                continue
            # A raw tag never ended is inert to `limit`, and the pass goes on from there.
            end = limit if ended_at is None else ended_at
            spans.append((start, end))
            position = end
    return InertSpans(spans)


class BacktickRuns:
    """Where markdown-it closes a backtick run: at the next run of its length in its
    paragraph, whatever lies between (escapes, tags, link destinations); the runs are
    found once, on the first question."""

    def __init__(self, text: str, blank_lines: list[int] | None = None) -> None:
        self._text = text
        self._blank_lines = blank_lines or []
        self._blank_lines_read = blank_lines is not None
        self._read = False
        self._all: list[int] = []  # where every run starts
        self._starts: dict[int, list[int]] = {}  # run length -> where such runs start
        self._breaks: list[int] = []  # where a line or a table cell may end
        self._escaped: list[int] = []  # where a run after an escaping backslash starts

    def _read_runs(self) -> None:
        if self._read:
            return
        self._read = True
        if not self._blank_lines_read:
            self._blank_lines = [match.start() for match in _BLANK_LINE.finditer(self._text)]
        for run in _BACKTICK_RUN.finditer(self._text):
            self._all.append(run.start())
            self._starts.setdefault(len(run.group()), []).append(run.start())
            if _after_escaping_backslash(self._text, run.start()):
                self._escaped.append(run.start())
        self._breaks = [found.start() for found in _LINE_OR_CELL_END.finditer(self._text)]

    def closer(self, opened_at: int, length: int) -> int | None:
        """Where the run closing the run of `length` at `opened_at` starts, or None."""
        self._read_runs()
        starts = self._starts.get(length, [])
        following = bisect_right(starts, opened_at)
        if following == len(starts):
            return None
        blank = bisect_right(self._blank_lines, opened_at)
        if blank < len(self._blank_lines) and self._blank_lines[blank] < starts[following]:
            return None
        return starts[following]

    def marks_outside_code(self, mark: str, start: int, end: int) -> int | None:
        """How many `mark` stand in start..end outside the code spans of runs opened there,
        None when one stands after a run that opens a span running on past `end`, or
        between a run that readers may pair otherwise (`_paired_alike`) and the text's
        last run (a reader may pair it with any later one: those after every run are in
        no span)."""
        count = 0
        position = start
        while True:
            run = _BACKTICK_RUN.search(self._text, position, end)
            count += self._text.count(mark, position, end if run is None else run.start())
            if run is None:
                return count
            closed_at = self.closer(run.start(), len(run.group()))
            if closed_at is not None and closed_at >= end:
                return None if self._text.find(mark, run.end(), end) >= 0 else count
            if not self._paired_alike(run.start(), closed_at):
                if self._text.find(mark, run.end(), min(self._all[-1], end)) >= 0:
                    return None
                return count + self._text.count(mark, run.end(), end)
            position = run.end() if closed_at is None else closed_at + len(run.group())

    def _paired_alike(self, opened_at: int, closed_at: int | None) -> bool:
        """Whether every reader pairs the run at `opened_at` as markdown-it pairs it in this
        text (with the run at `closed_at`, or none). Not when a backslash escapes one of
        its backticks or one of a run in the span: CommonMark honours that outside code
        spans (`\\`` opens none; `\\``` is a run of one), others inside them too (`` `a\\` ``
        goes on); nor when a line or a table cell ends in the span, which a quote's empty
        `>` line, a heading line, a list item's or a cell's end may end for the reader
        that knows those blocks."""
        if closed_at is None:
            return not any_in(self._escaped, opened_at, self._paragraph_end(opened_at))
        return self.on_one_line(opened_at, closed_at) and not any_in(self._escaped, opened_at, closed_at + 1)


    def _paragraph_end(self, position: int) -> int:
        """Where the blank line after `position` starts (the text's end if none)."""
        blank = bisect_right(self._blank_lines, position)
        return self._blank_lines[blank] if blank < len(self._blank_lines) else len(self._text)

    def skipped(self, after: int, before: int) -> bool:
        """Whether a backtick run starts in after..before (one the pass went over)."""
        self._read_runs()
        return any_in(self._all, after, before)

    def on_one_line(self, opened_at: int, closed_at: int) -> bool:
        """Whether no line or table cell ends between a code span's runs."""
        self._read_runs()
        next_break = bisect_right(self._breaks, opened_at)
        return next_break == len(self._breaks) or self._breaks[next_break] > closed_at


class _MarkdownEndTags:
    """Whether an end tag in Markdown text is written as is, ending a raw-text element to
    a browser. markdown-it writes it `&lt;/title&gt;` in a code span, an image's
    description, a link's title, after a backslash and in a code block, and nothing for a
    link reference definition; none of these is looked for exactly: one after a backtick,
    `![`, `](` or `]:` in its paragraph, a backslash, an indentation of four columns or
    in a line that may be code is not taken for one, and the element runs on, the side
    that hides more. One in raw HTML is written as is."""

    def __init__(
        self,
        text: str,
        blank_lines: list[int],
        in_markdown: Callable[[int], bool],
        code_at: Callable[[int], bool] | None,
        item_column_at: Callable[[int], int] | None,
    ) -> None:
        self._text = text
        self._blank_lines = blank_lines
        self._in_markdown = in_markdown
        self._code_at = code_at
        self._item_column_at = item_column_at
        # Found on the first question: most texts have no raw-text element.
        self._escaping: list[int] | None = None
        self._newlines: list[int] = []
        self._paragraph_breaks: list[int] = []

    def written_as_is(self, at: int) -> bool:
        if self._code_at is not None and self._code_at(at):
            return False
        if not self._in_markdown(at):
            return True
        text = self._text
        if self._escaping is None:
            self._escaping = [found.start() for found in _ESCAPING_MARKUP.finditer(text)]
            self._newlines = [found.start() for found in _NEWLINE.finditer(text)]
            self._paragraph_breaks = [found.start() for found in _PARAGRAPH_BREAK.finditer(text)]
        if text[at - 1 : at] == "\\":
            return False
        paragraph = bisect_right(self._paragraph_breaks, at) - 1
        paragraph_start = self._paragraph_breaks[paragraph] if paragraph >= 0 else 0
        escaping = bisect_right(self._escaping, at) - 1
        if escaping >= 0 and self._escaping[escaping] >= paragraph_start:
            return False
        line = bisect_right(self._newlines, at) - 1
        prefix = _LINE_PREFIX.match(text, self._newlines[line] + 1 if line >= 0 else 0, at)
        if prefix is None:
            return True
        if self._item_column_at is not None and not prefix.group().strip(" \t>"):
            # Indented from the text of the quotes and list items holding the line (`-  x`,
            # then `    <xmp>a</xmp>` is indented one column in the item; `>   <xmp>`, or
            # its markers read as spaces, two in the quote).
            return len(prefix.group().expandtabs(4)) - self._item_column_at(at) < 4
        return not ("\t" in prefix.group() or "    " in prefix.group())


_BACKTICK_RUN = re.compile(r"`+")


def any_in(sorted_positions: Sequence[int], start: int, end: int) -> bool:
    """Whether one of `sorted_positions` is in start..end."""
    following = bisect_left(sorted_positions, start)
    return following < len(sorted_positions) and sorted_positions[following] < end


def _after_escaping_backslash(text: str, position: int) -> bool:
    """Whether an odd number of backslashes stands right before `position` (the last one
    escapes the character there; each earlier pair is an escaped backslash)."""
    backslashes = 0
    while position - backslashes > 0 and text[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


# What markdown-it writes an end tag after escaped, or not at all (see _MarkdownEndTags).
_ESCAPING_MARKUP = re.compile(r"`|!\[|\][(:]")
_NEWLINE = re.compile(r"\n")
# A line that ends a paragraph: a blank one, or one of quote markers only (blank in its
# quote, or an empty quote interrupting the paragraph), each marker indented less than
# four columns (`>     >` goes on with a paragraph in the quote).
_PARAGRAPH_BREAK = re.compile(r"\n(?: {0,3}>)*[ \t]*(?=\n)")
# What may come before an indented code block's text on its line.
_LINE_PREFIX = re.compile(r"[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*")
_LINE_OR_CELL_END = re.compile(r"[\n|]")


# A GFM table's delimiter row (`|---|:-:|`), after any quote or list markers, and a blank
# line, which ends the table.
_DELIMITER_ROW = re.compile(
    r"^(?:[ \t]*(?:>|[-*+]|\d{1,9}[.)])(?=[ \t]))*[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?)?[ \t]*$",
    re.M,
)
_QUOTE_MARKERS = re.compile(r"^(?:[ \t]*>)*[ \t]*")
# What starts a block that ends a table (a list item, a heading, a quote, a fence, a
# thematic break), besides a blank line and an HTML block that may interrupt a paragraph.
_ENDS_A_TABLE = re.compile(r"$|(?:[-*+]|\d{1,9}[.)]|#{1,6})(?:[ \t]|$)|>|```|~~~|(?:\*[ \t]*){3,}$|(?:_[ \t]*){3,}$")
_INTERRUPTING_HTML_BLOCKS = [opening for opening, _, interrupts in HTML_SEQUENCES if interrupts]


def markdown_tables(text: str) -> InertSpans:
    """The GFM tables of raw Markdown lines, each from its header row to the next blank
    line or block that interrupts it (erring toward a table)."""
    spans: list[tuple[int, int]] = []
    for row in _DELIMITER_ROW.finditer(text):
        if spans and row.start() < spans[-1][1]:
            continue  # a row of the table just found: each line is read once
        header_start = text.rfind("\n", 0, max(row.start() - 1, 0)) + 1
        spans.append((header_start, _table_end(text, row.end())))
    return InertSpans(spans)


def _table_end(text: str, position: int) -> int:
    """Where the table whose row ends at `position` ends: at the start of the first line
    after it that is blank or starts a block that interrupts a table."""
    while position < len(text):
        line_start = position + 1
        newline = text.find("\n", line_start)
        line_end = len(text) if newline < 0 else newline
        content = _QUOTE_MARKERS.sub("", text[line_start:line_end], count=1)
        if _ENDS_A_TABLE.match(content) or any(opening.match(content) for opening in _INTERRUPTING_HTML_BLOCKS):
            return line_start
        position = line_end
    return len(text)


class InertSpans:
    """Inert places as found (they may nest: a tag in a link's text) and merged."""

    def __init__(self, found: list[tuple[int, int]]) -> None:
        self.found = sorted(found)
        self.merged, self.composite = _merged(self.found)
        self.starts = [start for start, _ in self.merged]
        self._found_starts = [start for start, _ in self.found]
        self._found_ends: _RangeMax | None = None

    def inert(self, at: int, opened_at: int) -> bool:
        """A closer is inert inside a place that does not hold its opener."""
        index = bisect_right(self.starts, at) - 1
        if index < 0 or not self.merged[index][0] <= at < self.merged[index][1]:
            return False
        if opened_at < self.merged[index][0]:
            return True
        if not self.composite[index]:
            return False
        # Opener and closer in one stretch of overlapping places (a secret section opened
        # in a link's text, its end tag in an attribute there): the closer is inert in a
        # place that starts after the opener.
        first = bisect_right(self._found_starts, opened_at)
        last = bisect_right(self._found_starts, at) - 1
        if first > last:
            return False
        if self._found_ends is None:
            self._found_ends = _RangeMax([end for _, end in self.found])
        return self._found_ends.max(first, last) > at


class _RangeMax:
    """Maxima of ranges of a list, each found in constant time (a sparse table)."""

    def __init__(self, values: list[int]) -> None:
        self.levels = [values]
        width = 1
        while 2 * width <= len(values):
            below = self.levels[-1]
            self.levels.append([max(below[i], below[i + width]) for i in range(len(values) - 2 * width + 1)])
            width *= 2

    def max(self, first: int, last: int) -> int:
        level = (last - first + 1).bit_length() - 1
        row = self.levels[level]
        return max(row[first], row[last - (1 << level) + 1])


def spans_test(spans: Sequence[tuple[int, int]]) -> InertTest:
    """A closer is inert inside one of the sorted `spans` that does not hold its opener."""
    starts = [start for start, _ in spans]

    def inert(at: int, opened_at: int) -> bool:
        index = bisect_right(starts, at) - 1
        return index >= 0 and opened_at < spans[index][0] <= at < spans[index][1]

    return inert


def never_inert(at: int, opened_at: int) -> bool:
    return False


def _destination_end(text: str, position: int) -> int:
    """End of a link destination and title opened by `](` just before `position`."""
    depth = 1
    index = position
    limit = len(text)  # long destinations (`data:` URIs) included; the pass resumes after it
    while index < limit:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        elif char == "\n" and text[index + 1 : index + 2] == "\n":
            return index
        index += 1
    return limit


# A destination not in `<...>` ends at a space or an ASCII control character only (a no-break
# space is part of it, as in markdown-it).
_DEFINITION_DESTINATION = re.compile(r"[ \t]*\n?[ \t]*(?:<[^<>\n]*>?|[^\x00-\x20\x7f<][^\x00-\x20\x7f]*)?")
_TITLE_START = re.compile(r"[ \t]*\n?[ \t]*([\"'(])")
_TITLE_CLOSE = {'"': '"', "'": "'", "(": ")"}


def _definition_end(text: str, position: int) -> int:
    """End of what may be a link reference definition's destination and title, after the
    `]:` of its label just before `position`.

    A title may run over several lines (never past a blank one) and hold anything; one
    never closed still counts to the end of its paragraph, as the reading that hides more.
    """
    destination = _DEFINITION_DESTINATION.match(text, position)
    end = destination.end() if destination else position
    title = _TITLE_START.match(text, end)
    if title is None:
        return end
    close = _TITLE_CLOSE[title.group(1)]
    index = title.end()
    limit = len(text)
    while index < limit:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == close:
            return index + 1
        if char == "\n" and _blank_line_at(text, index + 1):
            return index
        index += 1
    return limit


def _blank_line_at(text: str, start: int) -> bool:
    end = text.find("\n", start)
    return not text[start : len(text) if end == -1 else end].strip(" \t")


def _merged(spans: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[bool]]:
    """The sorted `spans` merged where they overlap, and whether each merged one is made
    of several."""
    # Spans that only touch stay apart: an opener's own tag followed at once by an
    # attribute or a `<script>` holding a closer must not share a span with it.
    merged: list[tuple[int, int]] = []
    composite: list[bool] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            composite[-1] = True
        else:
            merged.append((start, end))
            composite.append(False)
    return merged, composite

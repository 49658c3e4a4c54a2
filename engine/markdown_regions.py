"""Find GM-only regions in a piece of Markdown source text (contract section 6).

This module knows the *lexical* GM-only forms: HTML and Obsidian comments, Foundry secret
sections, `:::gm` container lines and the fences inside them. It works on plain strings
and knows nothing of markdown-it; `engine.markdown_rules` feeds it the text of each token
(or the raw lines of a block) in document order, carrying the open regions (`Frame`s)
from one piece to the next, so a region may start in one paragraph and end many blocks
later.

The rules, chosen so that an author's hidden note never shows up:

* A region opened inside another region nests in it, so the outer one cannot end while
  the inner one is open: a `:::` line or a `</section>` written inside a comment does
  not close anything, and an unclosed comment inside a container keeps it open to the
  end of the document. Comments are raw text: inside one, only its own closing
  sequence counts; but one that a reader stripping the other kind of comment first
  would end elsewhere (a `%%` left open in an HTML comment) runs to the end.
* A closer that might not be markup closes nothing (engine.markdown_inert: code,
  attribute values, link text, raw-text elements, escapes); in raw lines, a fence or an
  indented code block inside any region hides the closers in it.
* Containers count nested `:::name` lines and skip over Markdown fences; a container is
  only closed by a `:::` line with at least as many colons as its opening line.
* Secret sections count every nested `<section>` (secret or not) up to the matching
  `</section>`, which may run over a line break.
* Removing a region never glues the text around it into a new opener: a glued opener
  opens a region, as it would when the output is read again.
* Code is public: the caller passes the code spans of a text, and nothing inside them
  opens or closes a region (a code span inside a region is removed with it).
* In Markdown text `\\<!--` and `\\<section` are escaped, literal text that every renderer
  shows, so they open nothing; `%%` opens a comment even after a backslash.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from markdown_it.rules_block.html_block import HTML_SEQUENCES

from engine.markdown_inert import MAX_TAG_LENGTH, BacktickRuns, InertSpans, InertTest, markdown_tables, never_inert
from engine.markdown_section_tags import secret_section_tag_end
from engine.markdown_text import (
    THEMATIC_BREAK,
    container_marker_count,
    fold_lookalikes,
    folds_to_none_of,
    quote_marker_count,
    without_container_prefix,
    without_pandoc_prefix,
)

# A GM container opening line, after its indentation: `:::gm`, `::: DM`, `::::secret Title`,
# `:::gm:`, or a Pandoc div of that class (`::: {.gm}`, `::: {#plot .secret}`). Besides the
# contract's gm, gm-only, dm and secret, the hyphenated forms of the GM heading names
# (dm-only, gm-notes, secrets, ...) count too: an author using them means to hide.
_GM_CONTAINER_NAME = r"(?:gm(?:[-_](?:only|notes|secrets))?|dm(?:[-_](?:only|notes))?|secrets?)(?![\w-])"
GM_CONTAINER_OPENER = re.compile(
    rf"(:{{3,}})[ \t]*(?:{_GM_CONTAINER_NAME}|\{{[^}}\n]*?(?<![\w-])\.{_GM_CONTAINER_NAME})",
    re.IGNORECASE,
)
_ATTRIBUTE_BLOCK_OPENER = re.compile(r"(:{3,})[ \t]*\{([^}\n]*)")
_CLASS_ATTRIBUTE = re.compile(r"""(?<![\w-])class[ \t]*=[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s"'}]*))""", re.IGNORECASE)
_GM_CLASS = re.compile(_GM_CONTAINER_NAME, re.IGNORECASE)
_CONTAINER_CLOSER_PATTERN = re.compile(r"(:{3,})[ \t]*$")
_NESTED_CONTAINER_OPENER = re.compile(r"(:{3,})[ \t]*\S")
_FENCE_OPENER = re.compile(r"(`{3,})[^`]*$|(~{3,})")
# Where a comment or a section may start; `<section` must be followed by what can follow
# a tag name so that `<sections>` is not one.
_TOP_LEVEL_OPENERS = re.compile(r"<!--|%%|<section(?=[\s/>])", re.IGNORECASE)
# Elements that bound the scope of an end tag in a browser (td, th and caption are inside
# a table; SVG and MathML stand for their text integration points, erring toward hiding),
# and `<select>`, inside which it ignores end tags but its own: a `</section>` inside one
# opened after the section's innermost open tag, and still open, ends nothing.
_SCOPE_BOUNDARIES = frozenset({"table", "object", "applet", "marquee", "template", "svg", "math", "select"})
_FOREIGN_ELEMENTS = frozenset({"svg", "math"})
# Inside an `<svg>` or a `<math>`, the elements where a browser reads HTML again (its text
# integration points). An HTML element opened there holds the end tags of the elements
# around it until it ends (`<svg><foreignObject><div></foreignObject></svg>` ends neither),
# so there every element is kept track of, as the scope-bounding ones are.
_INTEGRATION_POINTS = frozenset({"foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext", "annotation-xml"})
# HTML elements that hold nothing: no end tag ends them.
_VOID_ELEMENTS = frozenset(
    {"area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen", "link"}
    | {"meta", "param", "source", "track", "wbr"}
)
# Comments, section tags, and any other tag (the scope-bounding ones among them), whose
# name holds no opener (`<b%%` is text, then a comment). A tag's name ends at ASCII white
# space only, in HTML as in CommonMark: `</section` and a no-break space is no end tag.
_SECTION_EVENTS = re.compile(
    r"<!--|%%|<section(?=[\s/>])|</section(?=[\t\n\f\r >])|</?[A-Za-z][^\t\n\f\r /><%]*(?=[\t\n\f\r />])",
    re.IGNORECASE,
)
# The rest of an end tag, which may run over a line break (`</section` newline `>`).
_END_TAG_REST = re.compile(r"[\t\n\f\r ]*>")
# A `>` starting a line: a quote's marker, which interrupts a paragraph (in a list item
# whose text is indented four columns or more, or a tab, one indented that far too; one
# indented deeper still continues the paragraph, and is taken for a marker all the same).
_QUOTE_MARKER_LINE = re.compile(r"\n[ \t]*>")
# The closing sequence of markdown-it's last two kinds of HTML block (`<div>`, any tag
# alone on its line): a blank line, which is no part of the block.
_HTML_BLOCK_ENDS_AT_BLANK_LINE = HTML_SEQUENCES[-1][1]
# An ATX heading or a thematic break line, after its indentation.
_ENDS_ITS_BLOCK = re.compile(rf"#{{1,6}}(?:[ \t]|$)|{THEMATIC_BREAK}")
# Openers that removing a part could create by gluing the text on both sides of it.
_GLUED_OPENERS = re.compile(r"<!--|%%|<section", re.IGNORECASE)
_LONGEST_GLUED_OPENER = len("<section")
_COMMENT_OPENERS = re.compile(r"<!--|%%")
# A list item's marker at the start of what is left of a line, its indentation included.
_LIST_ITEM_MARKER = re.compile(r"[ ]*(?:[-+*]|\d{1,9}[.)])(?=[ ]|$)")
# A run of spaces (after a list item's marker), maybe empty.
_SPACES = re.compile(r"[ ]*")


# Open tags, innermost first: (offset, how many scope-bounding elements were open when it
# opened, the tags around it).
_TagLink = tuple[int, int, "_TagLink | None"]


@dataclass(frozen=True, slots=True)
class _OpenElement:
    """An element bounding an end tag's scope (a `<table>`, ...), or one opened in the HTML
    of an `<svg>` or `<math>`, open inside a section; a linked list, innermost first, so
    that nesting thousands deep stays linear."""

    name: str
    # Offset of its start tag in the text being scanned (see `Frame.earlier_elements`).
    opened_at: int
    # Whether what opens inside it is HTML inside an `<svg>` or a `<math>` (it is one of
    # their integration points, or in one): every element there is kept track of.
    foreign_html: bool
    # Whether it or one around it is such an integration point: then a Markdown block
    # started since its start tag (a paragraph's `<p>`, a list's `<li>`) is an HTML
    # element opened in it, which holds its end tag in a browser.
    in_foreign_html: bool
    around: _OpenElement | None
    # How many are open, this one included.
    count: int


class FrameKind(Enum):
    HTML_COMMENT = "html_comment"
    OBSIDIAN_COMMENT = "obsidian_comment"
    SECTION = "section"
    CONTAINER = "container"
    FENCE = "fence"


@dataclass(frozen=True, slots=True)
class Frame:
    """One open region.

    `size` is the number of open `<section>` tags of a section, the colon count of a
    container's opening line, or the length of a fence's opening marker.
    """

    kind: FrameKind
    size: int = 0
    fence_char: str = ""
    # Offset of the opener in the text being scanned; -1 when opened in an earlier one.
    opened_at: int = -1
    # An Obsidian comment that held a `%%` which might not be markup: `%%` opens and
    # closes alike, so a reader that took that one for a closer and one that did not
    # disagree about every `%%` after it; the comment runs to the end of the document.
    unending: bool = False
    # The nested `<section>` tags of a section opened in the text being scanned and still
    # open, innermost first: an end tag is judged against the innermost one's place. (A
    # linked list: nesting thousands deep stays linear.)
    inner_tags: _TagLink | None = None
    # The elements bounding an end tag's scope (a `<table>`, ...) opened inside a section
    # and still open (and those opened in the HTML of an `<svg>` or `<math>`): its end
    # tags are ignored inside those opened after their tag.
    open_elements: _OpenElement | None = None
    # How many of `open_elements`, the outermost, were opened in an earlier text (their
    # offsets are not this text's).
    earlier_elements: int = 0
    # A container's quote and list markers on its opening line, as written in the text
    # scanned: a `:::` line nested deeper (`> :::` under a `:::gm` line) is inside a quote
    # or list item of the container, and closes it for no reader that knows nesting.
    markers: int = 0
    # A fence's list items, those surely holding its opening line by the raw lines'
    # indentation: a line indented out of the innermost ends the item, and the fence in it.
    items: int = 0
    # An HTML comment opened in an HTML block's text, which markdown-it writes raw: a
    # browser reads it on to the first `-->` written raw, past a `-->` in Markdown text
    # after the block (`- <!--`, then `x`, `--> CANARY`: markdown-it writes `--&gt;`).
    raw: bool = False
    # An Obsidian comment holding such an HTML comment whose `-->` in the HTML block
    # might not be markup (in a code span): markdown-it's block, and a browser's comment,
    # ended there; a reader taking it for no closer reads on to a `-->` in Markdown text
    # too, past the `%%`.
    code_closed: bool = False
    # Where a comment's opener is in the whole source (`ScanOptions.source`), -1 if
    # unknown: what it holds decides whether every reader ends it where this scan does.
    source_opened: int = -1
    # A comment or section opened in a code span Pandoc writes as raw HTML
    # (`ScanOptions.raw_code`): only Pandoc reads it, so a closer in such a span, HTML to
    # Pandoc, ends it, though code to every other reader.
    pandoc_raw: bool = False


def _marks_may_be_odd(text: str, code_spans: BacktickRuns, start: int, end: int) -> bool:
    """Whether some reader finds an odd number of `%%` in start..end: one that reads them
    as written, or one that knows code, to which a `%%` in a code span is none (`<!--
    `%%` %% --> CANARY`), nor is one in a span that runs past `end` or that readers may
    pair otherwise."""
    if text.count("%%", start, end) % 2 == 1:
        return True
    outside_code = code_spans.marks_outside_code("%%", start, end)
    return outside_code is None or outside_code % 2 == 1


@dataclass(frozen=True, slots=True)
class SourceView:
    """The whole source, as markdown-it normalized it, and where an offset of the text
    being scanned stands in it (None when unknown)."""

    text: str
    position: Callable[[int], int | None]
    # Where the source's last `-->` starts (-1 if none): found once, not at each comment.
    last_html_closer: int
    # The source's code spans, read once on the first question.
    backtick_runs: BacktickRuns


@dataclass(frozen=True, slots=True)
class ScanOptions:
    # Public code spans of the text, sorted (start, end) offsets; opaque to the scan.
    code: Sequence[tuple[int, int]] = ()
    # Raw lines: a fence opening line inside a region hides the lines up to its closing
    # fence. Inside a paragraph's text markdown-it has already found the fences.
    fences: bool = False
    # Inline Markdown: `\<!--` and `\<section` are escaped text that every renderer
    # shows literally, so they open nothing. In raw HTML a backslash escapes nothing.
    escapes: bool = False
    # Whether offset 0 is the start of a line (container lines must start one).
    line_start: bool = True
    # Stop as soon as the regions open at the start are all closed (block rules).
    stop_when_closed: bool = False
    # Where a closer might not be markup (engine.markdown_inert): it closes nothing there.
    inert: InertTest = never_inert
    # Where the parser drops the text (nested past its limit, a cell beyond the header):
    # the rendered token stream holds no end tag there, so a `</section>` or `</table>`
    # there ends nothing opened before it. Comment closers still close: a comment is read
    # in the source as written (an HTML block holds such a line; Obsidian reads text).
    unrendered: InertTest = never_inert
    # In a table cell's text, the number of regions open before its table: a browser
    # ignores a `</section>` in a cell whose section was opened outside the table (the
    # cell bounds the end tag's scope).
    opened_outside_cell: int = 0
    # Whether the text is a table cell's: an end tag there (`</table>`, `</object>`) ends
    # no element opened before it, outside the table (a cell bounds its scope too).
    in_cell: bool = False
    # Quotes and list items open around the text, beyond the markers its lines show: a
    # container's closer nested deeper than its opener closes nothing, whether the
    # parser stripped the markers (a quote's paragraph) or they are in the text.
    depth: int = 0
    # Offsets of the text's lazy continuation lines (a paragraph line that shows fewer
    # quote markers or less indentation than its block): the parser keeps them at the
    # block's depth, but as written they stand at none, so a closer there closes as one
    # outside the quotes and list items would.
    lazy_lines: frozenset[int] = frozenset()
    # Where the text is a footnote definition's (start, end offsets, in order), which
    # footnote-aware readers (Pandoc, Obsidian, markdown-it-footnote) write at the
    # document's end: a `-->` there, raw or not, ends no comment opened raw before it
    # (`- <!--`, blank line, `[^1]: <!-- y -->`, then `CANARY`: the comment runs over
    # `CANARY` to the footnotes).
    footnotes: tuple[tuple[int, int], ...] = ()
    # Whether the text is an HTML block's, which markdown-it writes as it stands: a comment
    # opened in it is `raw` (see `Frame`), and its `-->` in a later text that is not an
    # HTML block's ends it only where markdown-it writes it raw too.
    raw_html: bool = False
    # Where that raw HTML ends in the text (the rest of a secret section's closing line
    # re-read as a block of its own: to its first blank line); the text after is not.
    raw_html_end: int = sys.maxsize
    # How many of the regions open before the text, the outermost, were opened before the
    # GM footnote whose text it is (engine.markdown_footnotes): that text is out of the
    # document's flow, and no closer in it ends them. A count, not a mark on each frame,
    # so that entering a footnote costs nothing however many regions are open.
    held: int = 0
    # Whether the text is an HTML block's from its opening line, which says what ends it.
    html_block_text: bool = False
    # The source the text is read from: a comment opened in one block and ended in a
    # later one is judged on the source between (`Frame.source_opened`).
    source: SourceView | None = None
    # The code spans among `code` that Pandoc writes as raw HTML (`` `<!--`{=html} ``),
    # sorted: code to every other reader, but a comment or section opened in one is
    # Pandoc's, and its browser hides what follows up to its closer.
    raw_code: Sequence[tuple[int, int]] = ()


@dataclass(frozen=True, slots=True)
class ScanResult:
    removed: list[tuple[int, int]]
    stack: list[Frame]
    # How many of `stack`, the outermost, are still held (`ScanOptions.held`).
    held: int = 0
    # How many of the stack passed, the outermost, `stack` still holds as they were, and
    # the others of it, innermost first (see `restore`).
    unchanged: int = 0
    replaced: list[Frame] = field(default_factory=list)
    # Offset just after the closing sequence, when `stop_when_closed` stopped the scan.
    stopped_at: int | None = None


def scan(text: str, stack: list[Frame], options: ScanOptions, start: int = 0) -> ScanResult:
    """Find the GM-only ranges of `text[start:]`, given the regions open before it.

    The scan takes `stack` over and changes it in place into the result's stack (pass a
    copy to keep it): thousands of regions left open must not cost each later text a copy
    of them, nor a pass over them. Its frames opened in an earlier text are as a scan
    leaves them (`opened_at` -1, ...); any opened in `text` are the innermost."""
    if not stack and not options.stop_when_closed and opens_nothing(text):
        return ScanResult(removed=[], stack=stack)
    return _Scanner(text, stack, options).run(start)


def restore(result: ScanResult) -> list[Frame]:
    """The stack passed to the scan that gave `result`, as it was: the scan changed it in
    place into `result.stack`, which this changes back (in time linear in what the scan
    changed, not in the regions open)."""
    del result.stack[result.unchanged :]
    result.stack.extend(reversed(result.replaced))
    return result.stack


def opens_nothing(text: str) -> bool:
    """Whether `text` surely opens no region when none is open before it: it has none of
    the characters every opener starts with (`<!--`, `<section`, `%%`, a `:::` line),
    look-alikes of `:` included. Most paragraphs have none, and skip the scan."""
    return "<" not in text and "%" not in text and folds_to_none_of(text, ":")


def escaped(text: str, position: int) -> bool:
    """Whether the character at `position` follows an odd run of backslashes (a Markdown
    escape)."""
    backslashes = 0
    while position - backslashes > 0 and text[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def container_opener(line: str, *, look_alike_markers: bool = False) -> re.Match[str] | None:
    """The opening-line match of a GM container, for a line without its indentation,
    read as the author sees it (engine.markdown_text). With `look_alike_markers`, for a
    line of text (markdown-it took its real markers off), a list or quote marker that a
    look-alike space kept from being one (`-`, no-break space, `:::gm`) is a marker."""
    if folds_to_none_of(line, ":"):
        return None
    folded = fold_lookalikes(line).lstrip(" ")
    text = without_pandoc_prefix(folded) if look_alike_markers else folded
    return GM_CONTAINER_OPENER.match(text) or _gm_class_attribute_opener(text)


def _gm_class_attribute_opener(line: str) -> re.Match[str] | None:
    """The opening-line match of a Pandoc div naming a GM class in a `class` attribute
    (`::: {class="x secret"}`, read as classes `x` and `secret` there)."""
    block = _ATTRIBUTE_BLOCK_OPENER.match(line)
    if block is None:
        return None
    for attribute in _CLASS_ATTRIBUTE.finditer(block.group(2)):
        value = next(value for value in attribute.groups() if value is not None)
        if any(_GM_CLASS.fullmatch(word) for word in value.split()):
            return block
    return None


def _container_frame(opener: re.Match[str], line: str, depth: int, *, opened_at: int = -1) -> Frame:
    """The region a container opening `line` (indentation stripped) at `depth` opens."""
    markers = depth + container_marker_count(line)
    return Frame(FrameKind.CONTAINER, len(opener.group(1)), opened_at=opened_at, markers=markers)


def _closes(closer: re.Match[str], line: str, depth: int, container: Frame) -> bool:
    """Whether a closing `line` (indentation stripped) at `depth` ends `container`: as
    many colons, and no deeper in quotes and list items than its opening line."""
    return len(closer.group(1)) >= container.size and depth + container_marker_count(line) <= container.markers


def _container_closer(line: str) -> re.Match[str] | None:
    return _CONTAINER_CLOSER_PATTERN.match(fold_lookalikes(line).lstrip(" "))


def _nested_container_opener(line: str) -> re.Match[str] | None:
    """Any container's opening line (`::: note`) inside a GM container, read as the author
    sees it, as its closing line is: a nested one in fullwidth colons, or after a
    zero-width space, is closed by the closing line that reads as `:::`, not the GM
    container around it."""
    return _NESTED_CONTAINER_OPENER.match(fold_lookalikes(line).lstrip(" "))


def container_line(line: str) -> tuple[int, bool] | None:
    """A `:::` line of any container (`::: handout`, a Pandoc div, or its closing `:::`)
    in a paragraph's text, read as the author sees it: its colon count and whether it
    closes; None for any other line, and for a closing line indented as code (four
    columns or more: markdown-it-container and Pandoc read it as text)."""
    if folds_to_none_of(line, ":"):
        return None
    indent, stripped = _indentation(line)
    folded = fold_lookalikes(stripped).lstrip(" ")
    closer = _CONTAINER_CLOSER_PATTERN.match(folded)
    if closer is not None:
        return (len(closer.group(1)), True) if indent <= 3 else None
    opener = _NESTED_CONTAINER_OPENER.match(folded)
    return None if opener is None else (len(opener.group(1)), False)


def remove_ranges(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """`text` without the (sorted) ranges.

    A range that leaves nothing but whitespace on its lines takes those lines with it,
    so a removed comment line does not turn into a blank line that splits a paragraph.
    """
    if not ranges:
        return text
    kept: list[str] = []
    position = 0
    for start, end in ranges:
        if text[end - 1 : end] != "\n":
            line_start = _blank_back_to_line_start(text, start)
            line_end = _blank_on_to_line_end(text, end) if line_start is not None else None
            if line_start is not None and line_end is not None:
                start, end = line_start, min(line_end + 1, len(text))
        kept.append(text[position : max(start, position)])
        position = max(position, end)
    kept.append(text[position:])
    return "".join(kept)


# The two below walk white space only, not to the line's end: on one long line of many
# ranges (`%%%%…`) a search for its line break from each took time in n squared.


def _blank_back_to_line_start(text: str, position: int) -> int | None:
    """The start of the line holding `position` if only white space comes between."""
    while position > 0 and text[position - 1] != "\n" and text[position - 1].isspace():
        position -= 1
    return position if position == 0 or text[position - 1] == "\n" else None


def _blank_on_to_line_end(text: str, position: int) -> int | None:
    """The offset of the line break ending the line holding `position` (the text's length
    if none) if only white space comes between."""
    while position < len(text) and text[position] != "\n" and text[position].isspace():
        position += 1
    return position if position == len(text) or text[position] == "\n" else None


def is_fence_closer(line: str, markup: str) -> bool:
    """Whether a raw source line (quote and list markers allowed) closes a fence opened
    by `markup`."""
    marker = without_container_prefix(line).strip(" \t")
    return len(marker) >= len(markup) and marker == markup[0] * len(marker)


def _indentation(line: str) -> tuple[int, str]:
    stripped = line.lstrip(" \t")
    prefix = line[: len(line) - len(stripped)]
    return len(prefix.expandtabs(4)), stripped


class _Scanner:
    def __init__(self, text: str, stack: list[Frame], options: ScanOptions) -> None:
        self.text = text
        self.stack = stack
        self.options = options
        # How many of the stack, the outermost, the scan has left as they came (as a scan
        # leaves them): only those above need making so at its end. And the others as they
        # came, innermost first (`ScanResult.replaced`).
        self.untouched = len(stack)
        self.replaced: list[Frame] = []
        while self.untouched and stack[self.untouched - 1].opened_at >= 0:
            self._touch(self.untouched - 1)
        # How many of the stack, the outermost, are held (`ScanOptions.held`).
        self.held = min(options.held, len(stack))
        self.code_starts = [start for start, _ in options.code]
        self.raw_code_starts = [start for start, _ in options.raw_code]
        self.removed: list[tuple[int, int]] = []
        # For each range in `removed`, the index of the first of the run of adjacent ranges
        # it ends (removing them all glues the text on both sides of the run).
        self.removed_runs: list[int] = []
        self.region_start: int | None = None
        # Indented code in raw lines: after a blank line, a line indented 4+ is code.
        self.previous_blank = True
        self.in_indented_code = False
        self.markdown_tables: InertSpans | None = None  # read once a `</section>` needs them
        # Raw lines: the columns where the list items opened by the lines read so far put
        # their content, outermost first (see `_items_around`).
        self.list_items: list[int] = []
        # How many of them, outermost first, surely still hold the lines: every non-blank
        # line since each opened was indented into it. The others may have ended at a line
        # `list_items` keeps them over (one read as lazy that is not: a fence, a heading, a
        # line after one), or an empty item at a blank line (`-`, blank line, `  x`).
        self.sure_items = 0
        # For each of them, the widest column a reader may put its content at, the items
        # around it included (so the columns only grow): CommonMark's after up to four
        # spaces (`-   x`: 4), Pandoc's up to the tab stop. A line indented less may be out
        # of the item, and a fence there outside it, however `list_items` holds it.
        self.widest_items: list[int] = []
        # The last line end found and where its search started: every position between
        # shares it, so a long line of many events is searched once, not once per event.
        self.line_end_searched_from = 0
        self.line_end_found = 0
        # Where the last blank line seen starts: a Markdown block may start after it.
        self.last_blank_line = -1
        # Whether the line being scanned is in an HTML block (raw lines): a scan that
        # starts within a line starts after a secret section's tag, which starts one.
        self.html_block = True
        # The closing sequence of the HTML block the line after this one would be in: a
        # blank line for most kinds, `-->`, `?>`, `</script>`, ... for the others (then
        # the block ends with the line holding it); None when that line starts outside one.
        self.html_block_closing: re.Pattern[str] | None = _HTML_BLOCK_ENDS_AT_BLANK_LINE
        # Where that HTML block stands: the quote markers its opening line shows and the
        # column its text starts at. An HTML block has no lazy continuation: markdown-it
        # ends it at a line outside its quotes or list item (`> <?x`, a blank line, then
        # `z </section`), whatever its closing sequence. (0, 0): one in no container.
        self.html_block_at = (0, 0)
        # Whether a line of that block stood outside where it opened: markdown-it may have
        # ended it there, so the block is no longer surely one until it ends (hiding more).
        self.html_block_unsure = False
        # Where the search for the opener of an inline comment a `-->` may end starts.
        self.inline_comment_from = 0
        # Where the text's last `-->` starts (-1 if none), once asked.
        self.last_html_closer: int | None = None
        # The code spans of the scanned text, once asked.
        self.backtick_runs: BacktickRuns | None = None

    def run(self, start: int) -> ScanResult:
        text = self.text
        if self.stack:
            self.region_start = start
        position = start
        while position < len(text):
            code_end, _ = self._code_at(position)
            if code_end is not None:
                position = code_end
                continue
            if self._at_line_start(position):
                after_line = self._line(position)
                if after_line is not None:
                    position = after_line
                    if self._stopped():
                        return self._result(stopped_at=position)
                    continue
            position = self._inline(position)
            if self._stopped():
                return self._result(stopped_at=position)
        if self.stack and self.region_start is not None:
            self._remove(self.region_start, len(text))
        return self._result()

    def _result(self, stopped_at: int | None = None) -> ScanResult:
        # Offsets do not carry over to the next text.
        stack = self.stack
        for index in range(self.untouched, len(stack)):
            frame = stack[index]
            stack[index] = replace(frame, opened_at=-1, inner_tags=None, earlier_elements=_open_count(frame))
        return ScanResult(
            removed=self.removed,
            stack=stack,
            held=self.held,
            unchanged=self.untouched,
            replaced=self.replaced,
            stopped_at=stopped_at,
        )

    def _stopped(self) -> bool:
        return self.options.stop_when_closed and not self.stack

    # -- bookkeeping -------------------------------------------------------------------

    def _code_end(self, position: int) -> int | None:
        index = bisect_right(self.code_starts, position) - 1
        if index >= 0:
            start, end = self.options.code[index]
            if start <= position < end:
                return end
        return None

    def _code_at(self, position: int) -> tuple[int | None, bool]:
        """Where the code span holding `position` ends, None when there is none or it is
        one Pandoc writes as raw HTML; and whether it is such a one (HTML to Pandoc)."""
        span_end = self._code_end(position)
        raw = span_end is not None and self._in_raw_code(position)
        return (None if raw else span_end), raw

    def _in_raw_code(self, position: int) -> bool:
        """Whether `position` is in a code span Pandoc writes as raw HTML."""
        index = bisect_right(self.raw_code_starts, position) - 1
        return index >= 0 and position < self.options.raw_code[index][1]

    def _pandoc_closer(self, position: int) -> bool:
        """Whether a closer at `position`, in a code span, ends the innermost region: the
        span is raw HTML to Pandoc, the one reader of that region."""
        return self._in_raw_code(position) and self.stack[-1].pandoc_raw

    def _at_line_start(self, position: int) -> bool:
        if position == 0:
            return self.options.line_start
        return self.text[position - 1] == "\n"

    def _line_end(self, position: int) -> int:
        """Offset just past the end of the line holding `position` (its newline included)."""
        if not self.line_end_searched_from <= position < self.line_end_found:
            newline = self.text.find("\n", position)
            self.line_end_searched_from = position
            self.line_end_found = len(self.text) if newline < 0 else newline + 1
        return self.line_end_found

    def _push(self, frame: Frame, at: int) -> None:
        if not self.stack:
            self.region_start = at
        source_opened = -1
        if frame.kind in _COMMENTS and self.options.source is not None:
            source_opened = _or_unknown(self.options.source.position(at))
        self.stack.append(replace(frame, opened_at=at, source_opened=source_opened))

    def _touch(self, at: int) -> None:
        """Note that the frame at `at` of the stack (from the outermost) is about to change."""
        while self.untouched > at:
            self.untouched -= 1
            self.replaced.append(self.stack[self.untouched])

    def _set(self, index: int, frame: Frame) -> None:
        """Put `frame` in place of the frame at `index` (negative: from the innermost)."""
        self._touch(len(self.stack) + index)
        self.stack[index] = frame

    def _delete(self, index: int) -> None:
        """End the region at `index` (negative: from the innermost)."""
        self._touch(len(self.stack) + index)
        del self.stack[index]
        self.held = min(self.held, len(self.stack))

    def _is_held(self, index: int) -> bool:
        """Whether the frame at `index` (negative: from the innermost) is held."""
        return len(self.stack) + index < self.held

    def _pop(self, at: int) -> int:
        """Close the innermost region at `at`; return where the scan goes on."""
        self._delete(-1)
        if not self.stack and self.region_start is not None:
            start, self.region_start = self.region_start, None
            self._remove(start, at)
            return self._reopen_glued(start, at)
        return at

    def _reopen_glued(self, start: int, end: int) -> int:
        """Removing `start..end` must not glue the text around it into a new opener.

        `<<!-- x -->!-- y -->` would read `<!-- y -->` once the inner comment is gone: the
        glued opener opens a region here, as it would when the output is read again.
        """
        kept = self._kept_before_last_removed()
        before = "".join(self.text[piece_start:piece_end] for piece_start, piece_end in kept)
        if not before:
            return end
        # No longer than a tag is read at first: a glued tag running past it is secret unread.
        glued = before + self.text[end : end + MAX_TAG_LENGTH - len(before)]
        for match in _GLUED_OPENERS.finditer(glued, 0, len(before) + _LONGEST_GLUED_OPENER):
            # `<section` opens only with the character after it (a space, `/` or `>`): one
            # just before the removed part is glued to what follows it (`<section<!-- x -->
            # class="secret">`).
            extent = match.end() + (match.group().casefold() == "<section")
            if match.start() >= len(before) or extent <= len(before):
                continue  # wholly on one side: the scan sees it anyway
            opener_at = _offset_in(kept, match.start())
            if match.group() == "%%":
                frame, after = Frame(FrameKind.OBSIDIAN_COMMENT), match.end()
            elif match.group() == "<!--":
                frame, after = Frame(FrameKind.HTML_COMMENT), match.end()
            else:
                tag_end = secret_section_tag_end(glued, match.start(), complete=False)
                if tag_end is None:
                    continue
                frame, after = Frame(FrameKind.SECTION, 1), tag_end
            # One region from the glued opener on, covering the ranges removed since.
            while self.removed and self.removed[-1][0] > opener_at:
                self.removed_runs.pop()
                self.removed.pop()
            self._push(frame, opener_at)
            return end + after - len(before)
        return end

    def _remove(self, start: int, end: int) -> None:
        """Remove `start..end`, noting the run of removed ranges it ends."""
        adjacent = bool(self.removed) and self.removed[-1][1] == start
        self.removed_runs.append(self.removed_runs[-1] if adjacent else len(self.removed))
        self.removed.append((start, end))

    def _kept_before_last_removed(self) -> list[tuple[int, int]]:
        """The text kept just before the last removed range, as the output reads it: up to
        the longest glued opener's length, back to a line break (one before it changes
        nothing), across earlier removed ranges (`<sec<!-- a -->ti<!-- b -->on`, or two
        comments side by side, glue once both are gone). Pieces of the text, in order; a
        run of adjacent ranges is stepped over at once, so this stays linear."""
        kept: list[tuple[int, int]] = []
        wanted = _LONGEST_GLUED_OPENER
        first = self.removed_runs[-1]
        while wanted > 0:
            piece_end = self.removed[first][0]
            previous_end = self.removed[first - 1][1] if first > 0 else 0
            piece_start = max(previous_end, piece_end - wanted)
            piece_start = max(piece_start, self.text.rfind("\n", piece_start, piece_end) + 1)
            kept.insert(0, (piece_start, piece_end))
            if first == 0 or piece_start != previous_end:
                break
            wanted -= piece_end - piece_start
            first = self.removed_runs[first - 1]
        return kept

    def _inert_comment_closer(self, found: int, closer: str) -> bool:
        # Inside an HTML comment nothing is a tag: a "tag" or bogus comment that the
        # `-->` itself ends (`if hp<half -->`, `<?x -->`) holds it no more than text does.
        # An autolink it ends does (`<http://x/-->`): its `--` are the end of a link's
        # destination, which the author may have meant as one.
        if closer == "-->" and _ends_autolink(self.text, found):
            return True
        return self._inert(found) and (closer != "-->" or self._inert(found + len(closer)))

    def _in_later_footnote(self, position: int) -> bool:
        """Whether `position` is in a footnote definition's text (`ScanOptions.footnotes`)
        that starts after the innermost region opened: a footnote's own comment ends
        there (`[^1]: x`, `    <!-- y -->`)."""
        footnotes = self.options.footnotes
        index = bisect_right(footnotes, (position, sys.maxsize)) - 1
        return index >= 0 and self.stack[-1].opened_at < footnotes[index][0] and position < footnotes[index][1]

    def _raw_at(self, position: int) -> bool:
        """Whether markdown-it writes the text at `position` raw, as HTML."""
        return self.options.raw_html and position < self.options.raw_html_end

    def _written_raw(self, found: int, closer: str) -> bool:
        """Whether a comment's closer at `found` ends it for a browser: an HTML comment
        opened in an HTML block (`raw`) ends at no `-->` that markdown-it writes escaped,
        in a text that is not an HTML block's, unless an inline comment of that text
        (markdown-it writes it raw) ends there: `x <!-- y --> z` in a paragraph."""
        if closer != "-->" or not self.stack[-1].raw:
            return True
        if self._in_later_footnote(found):
            return False
        if self._raw_at(found):
            return True
        if not self.options.escapes:
            return False  # code, a definition, dropped text: never written raw
        # An inline comment holds no `-->`: its opener comes after the last one looked at.
        searched_from, self.inline_comment_from = self.inline_comment_from, found + 1
        opener = self.text.rfind("<!--", searched_from, found + 2)
        return opener >= 0 and self._is_inline_comment(opener, found + len(closer))

    def _inert(self, closer_at: int) -> bool:
        """Whether a closer of the innermost region might not be markup."""
        return self._is_held(-1) or self.options.inert(closer_at, self.stack[-1].opened_at)

    def _escaped(self, position: int) -> bool:
        return self.options.escapes and escaped(self.text, position)

    # -- whole lines -------------------------------------------------------------------

    def _depth_at(self, line_start: int) -> int:
        """Quotes and list items around the line at `line_start` beyond its own markers."""
        return 0 if line_start in self.options.lazy_lines else self.options.depth

    def _line(self, position: int) -> int | None:
        """Handle a line that opens, closes or nests a line-based region.

        Returns the offset after the line when the line was consumed, None when the line
        has to be scanned for inline syntax instead.
        """
        after = self._line_end(position)
        line = self.text[position:after].rstrip("\n")
        indent, stripped = _indentation(line)
        around = self._items_around(line)  # before `previous_blank` moves on to this line
        if self._ends_nested_fence(line, around):
            self._delete(-1)
        code_indent, code_text = _indentation(without_container_prefix(line))
        blank = not code_text.strip()
        ended_html_block = self._follow_html_block(position, line, code_text, code_indent)
        # A line of an HTML block is the block's, however indented: a comment's, a
        # `<script>`'s, ... goes on past blank lines to the line holding its closer
        # (`<!--`, blank line, `    -->` ends it for markdown-it and a browser).
        code_may_start = self.previous_blank or self.in_indented_code
        self.in_indented_code = not blank and code_indent >= 4 and code_may_start and not self.html_block
        # After a heading, a thematic break or an HTML block ending on its line (`-->`,
        # `?>`, `</script>`, ...) as after a blank line: no paragraph goes on there, so an
        # indented line starts code.
        self.previous_blank = blank or ended_html_block or (code_indent < 4 and bool(_ENDS_ITS_BLOCK.match(code_text)))
        if blank:
            self.last_blank_line = position
        top = self.stack[-1] if self.stack else None
        if top is not None and top.kind is FrameKind.SECTION:
            # HTML, not code, however indented: checked before the indented-code rule.
            below = self.stack[-2] if len(self.stack) > 1 else None
            if below is not None and below.kind is FrameKind.CONTAINER:
                # A section opened inside a GM container: the container's closer ends the
                # container under it, and the section goes on to its end tag.
                closer = _container_closer(without_container_prefix(stripped))
                surely_markup = not self._inert(position + len(line) - len(stripped))
                closes = closer is not None and _closes(closer, stripped, self._depth_at(position) + around, below)
                closes = closes and not self._is_held(-2)
                if closes and indent <= 3 and surely_markup:
                    self._delete(-2)
                    return after
            # Rule 1 is about lines: a GM container opened inside a secret section runs to
            # its own closer, even past the section's end tag.
            opener = container_opener(without_container_prefix(stripped), look_alike_markers=True)
            if opener:
                self.stack.append(_container_frame(opener, stripped, self.options.depth + around, opened_at=position))
                return None
        if top is not None and top.kind is not FrameKind.FENCE and self.in_indented_code:
            return after  # code: no closer here is markup
        if top is None:
            opener = container_opener(without_container_prefix(stripped), look_alike_markers=True)
            if opener:
                # The rest of the line is still scanned: a comment opened on it nests.
                self._push(_container_frame(opener, stripped, self.options.depth + around), position)
            return None
        if top.kind is FrameKind.FENCE:
            indent, stripped = _indentation(without_container_prefix(line))
            marker = stripped.rstrip(" \t")
            if indent <= 3 and len(marker) >= top.size and marker == top.fence_char * len(marker):
                self._pop(after)
            return after
        if top.kind is FrameKind.CONTAINER:
            # Quote and list markers as on the opening line (`> :::gm` ... `> :::`).
            closer = _container_closer(without_container_prefix(stripped))
            if closer:
                surely_markup = not self._inert(position + len(line) - len(stripped))
                closes = _closes(closer, stripped, self._depth_at(position) + around, top)
                if indent <= 3 and closes and surely_markup:
                    self._pop(after)
                return after
            if self._open_fence(line, position):
                return after
            nested = _nested_container_opener(without_container_prefix(stripped))
            if nested:
                self.stack.append(_container_frame(nested, stripped, self.options.depth + around, opened_at=position))
            return None
        # In raw lines a fence hides closers inside every region, comments included.
        if self._open_fence(line, position):
            return after
        return None

    def _follow_html_block(self, position: int, line: str, code_text: str, code_indent: int) -> bool:
        """Whether the raw line at `position` is in an HTML block (`html_block`), and what
        ends the block the next line would be in. An HTML block starts a block (after a
        blank line, a heading or a rule), or all but the last kind may interrupt a
        paragraph; it goes on to a blank line. A comment, a `<script>`, a `<?...?>`, ...
        ends with the line holding its closing sequence, blank lines or not (`<?x?>`, then
        a paragraph). `code_text` is the line's text after its markers and indentation.
        Returns whether the line ends such a block (surely in it): no paragraph is open
        after it."""
        blank = not code_text.strip()
        closing = self.html_block_closing
        where = _block_position(line, code_text)
        if blank and closing is not None and closing.pattern == _HTML_BLOCK_ENDS_AT_BLANK_LINE.pattern:
            closing = None
        elif closing is None and not blank and code_indent < 4 and code_text.startswith("<"):
            starts_block = self.previous_blank or position == 0
            kinds = (kind for kind in HTML_SEQUENCES if starts_block or kind[2])
            closing = next((ends for opening, ends, _ in kinds if opening.match(code_text)), None)
            self.html_block_at, self.html_block_unsure = where, False
        elif position == 0 and self.options.html_block_text:
            # An HTML block's own text: its first line says what ends it (a comment's goes
            # on past blank lines to its `-->`, however indented that line is).
            kinds = (kind for kind in HTML_SEQUENCES if kind[0].match(code_text))
            closing = next((ends for _, ends, _ in kinds), closing)
        elif closing is not None and _outside(where, self.html_block_at, blank):
            self.html_block_unsure = True
        self.html_block = closing is not None and not blank and not self.html_block_unsure
        ends_on_its_line = closing is not None and closing.pattern != _HTML_BLOCK_ENDS_AT_BLANK_LINE.pattern
        ended = ends_on_its_line and closing is not None and closing.search(code_text) is not None
        self.html_block_closing = None if closing is None or closing.search(code_text) else closing
        return ended and self.html_block

    def _items_around(self, line: str) -> int:
        """How many list items of the raw lines read so far hold `line` by its indentation
        alone: `- x`, then `  :::` is a line of the item, nested deeper than a `:::gm` at
        the margin before the list (Pandoc reads it in the item; markdown-it-container's
        scan for a closing line would not look at the list). A line indented less than an
        item's content is not in it; it ends the item unless it may continue a paragraph
        there lazily (it then stands as written, and the lines after it may still be in
        the item: `- x`, `lazy`, `  :::`). The items its own list markers open hold the
        lines after it."""
        if not self.options.fences:
            return 0
        expanded = line.expandtabs(4)
        content = expanded.lstrip(" ")
        if not content:
            return len(self.list_items)  # a blank line ends no item
        # The columns only grow from the outermost item in: a search, not a walk, so that
        # thousands of items left open cost each later line no more than a few steps.
        indent = len(expanded) - len(content)
        around = bisect_right(self.list_items, indent)
        marker = _LIST_ITEM_MARKER.match(expanded)
        if self.previous_blank or content.startswith(">") or marker is not None:
            del self.list_items[around:]  # no lazy line: the items it is not in end
            del self.widest_items[around:]
        # Sure only of the items the line is indented into at their widest column: `-   a`,
        # then `  ~~~` is a fence after the list to CommonMark and Pandoc, not in the item.
        self.sure_items = min(self.sure_items, bisect_right(self.widest_items, indent))
        all_sure = self.sure_items == len(self.list_items)
        position = 0
        while (marker := _LIST_ITEM_MARKER.match(expanded, position)) is not None:
            self.list_items.append(marker.end() + 1)
            widest = marker.end() + min(max(_spaces_at(expanded, marker.end()), 1), 4)
            self.widest_items.append(max(widest, self.widest_items[-1]) if self.widest_items else widest)
            position = marker.end()
        if all_sure:
            # An item opened empty ends at a blank line after it: not sure to hold any.
            self.sure_items = len(self.list_items) - (position > 0 and not expanded[position:].strip())
        return around

    def _open_fence(self, line: str, position: int) -> bool:
        indent, stripped = _indentation(without_container_prefix(line))
        if not self.options.fences or indent > 3:
            return False
        fence = _FENCE_OPENER.match(stripped)
        if not fence:
            return False
        marker = fence.group(1) or fence.group(2)
        # Only the items surely holding it: one the fence is taken out of when it is not
        # in it would end it early, and a closer after it would close a region.
        self.stack.append(
            Frame(
                FrameKind.FENCE,
                len(marker),
                marker[0],
                opened_at=position,
                markers=quote_marker_count(line),
                items=self.sure_items,
            )
        )
        return True

    def _ends_nested_fence(self, line: str, around: int) -> bool:
        """Whether `line` (in `around` list items by its indentation) ends a fence opened
        in a quote or a list item in the text being scanned: a line with fewer quote
        markers ends the quote, blank or not, and one indented less than the item's
        content ends the item (fenced code continues no paragraph lazily), and the fence
        with them (`:::gm`, `> ```` or `- ````, then `:::`)."""
        top = self.stack[-1] if self.stack else None
        if top is None or top.kind is not FrameKind.FENCE or top.opened_at < 0:
            return False
        out = quote_marker_count(line) < top.markers or (bool(line.strip(" \t")) and around < top.items)
        # Pandoc reads any other line there as lazily continuing the quote or item, and
        # the fence in it (`> ~~~`, then `  </section>`: code to Pandoc); it stops only at
        # a blank line or a div's closing line, so only those end the fence here.
        content = without_container_prefix(line)
        return out and (not content.strip(" \t") or _container_closer(content) is not None)

    # -- within a line -----------------------------------------------------------------

    def _inline(self, position: int) -> int:
        """Scan from `position` for inline openers and closers; return where to go on."""
        top = self.stack[-1] if self.stack else None
        if top is None:
            return self._inline_public(position)
        if top.kind is FrameKind.HTML_COMMENT:
            return self._find_closer(position, "-->")
        if top.kind is FrameKind.OBSIDIAN_COMMENT:
            return self._find_closer(position, "%%")
        if top.kind is FrameKind.SECTION:
            return self._inline_section(position)
        if top.kind is FrameKind.CONTAINER:
            return self._inline_container(position)
        return self._line_end(position)  # fence content: only its closing line matters

    def _inline_public(self, position: int) -> int:
        line_end = self._line_end(position)
        for match in _TOP_LEVEL_OPENERS.finditer(self.text, position, line_end):
            start = match.start()
            code_end, raw_code = self._code_at(start)
            if code_end is not None:
                return code_end
            if match.group() == "%%":
                if raw_code:
                    continue  # code to Obsidian, text to Pandoc
                self._push(Frame(FrameKind.OBSIDIAN_COMMENT), start)
                return match.end()
            if not raw_code and self._escaped(start):
                continue
            if match.group() == "<!--":
                return self._open_html_comment(start)
            tag_end = secret_section_tag_end(self.text, start)
            if tag_end is not None:
                self._push(Frame(FrameKind.SECTION, 1, pandoc_raw=raw_code), start)
                return tag_end
        return line_end

    def _open_html_comment(self, start: int) -> int:
        comment = Frame(FrameKind.HTML_COMMENT, raw=self._raw_at(start), pandoc_raw=self._in_raw_code(start))
        for empty in _EMPTY_COMMENTS:
            if self.text.startswith(empty, start):
                self._push(comment, start)
                return self._pop(start + len(empty))
        self._push(comment, start)
        return start + len("<!--")

    def _find_closer(self, position: int, closer: str) -> int:
        # Raw lines stop at each line end so that fence lines get seen.
        limit = self._line_end(position) if self.options.fences else len(self.text)
        while not self.stack[-1].unending:
            found = self.text.find(closer, position, limit)
            self._follow_raw_comment(position, limit if found < 0 else found)
            if found < 0:
                return limit
            span_end = self._code_end(found)
            pandoc_closer = span_end is not None and closer == "-->" and self._pandoc_closer(found)
            if pandoc_closer or (
                span_end is None and not self._inert_comment_closer(found, closer) and self._written_raw(found, closer)
            ):
                if self._paired_otherwise(found, closer):
                    self._set(-1, replace(self.stack[-1], unending=True))
                    break
                if closer == "%%" and (self.stack[-1].raw or self.stack[-1].code_closed):
                    # A browser's comment opened in it goes on past it, as an HTML comment.
                    self._set(-1, replace(self.stack[-1], kind=FrameKind.HTML_COMMENT, code_closed=False))
                    return found + len(closer)
                return self._pop(found + len(closer))
            if closer == "%%":
                self._set(-1, replace(self.stack[-1], unending=True))
            else:
                if self._raw_at(found) and self.stack[-1].raw:
                    # A reader that takes this one for no closer (in a code span) is not
                    # markdown-it, whose HTML block ends with its line (`<!--`, then
                    # x `-->` y): that reader's blocks after it are not markdown-it's.
                    self._set(-1, replace(self.stack[-1], raw=False))
                position = found + 1 if span_end is None else span_end
        return limit

    def _paired_otherwise(self, found: int, closer: str) -> bool:
        """Whether a reader that strips one kind of comment before the other (Obsidian
        exporters strip `%%` pairs from the source as written) ends the comment
        elsewhere: an HTML comment holding an odd number of `%%` (`x <!-- %% --> CANARY
        %%`: the `%%` in it opens one running over `CANARY`), an Obsidian one whose
        closing `%%` is in an HTML comment opened in it and ended later (`%% <!-- %% -->
        CANARY`: the HTML comment gone, the first `%%` runs on). That reader pairs every
        `%%` after it the other way round: the comment runs to the end of the document,
        as one holding a `%%` that might not be markup does."""
        frame = self.stack[-1]
        source = self.options.source
        closed = source.position(found) if source is not None and frame.source_opened >= 0 else None
        if source is not None and closed is not None:
            text, opened, last_closer = source.text, frame.source_opened, source.last_html_closer
            code_spans = source.backtick_runs
        elif frame.opened_at >= 0:
            text, opened, closed = self.text, frame.opened_at, found
            # Whether a `-->` follows in the source is unknown: any there may.
            later = source is not None and source.last_html_closer >= 0
            last_closer = sys.maxsize if later else self._last_html_closer()
            code_spans = self._backtick_runs()
        else:
            return False
        if closer == "-->":
            if _marks_may_be_odd(text, code_spans, opened, closed):
                return True
            # A reader that ends the comment at an earlier `-->` that this scan passed
            # over (in a code span, an autolink) reads the `%%` after that one as text:
            # an odd number opens a comment over what follows (`<!-- %% `-->` %% -->
            # CANARY`). A frame opened at a `%%` is an Obsidian comment to that reader.
            earlier = text.find("-->", opened + len("<!--"), closed) if text.startswith("<!--", opened) else -1
            return earlier >= 0 and _marks_may_be_odd(text, code_spans, earlier + len("-->"), closed)
        inner = text.rfind("<!--", opened + len(closer), closed)
        if inner < 0 or text.startswith(_EMPTY_COMMENTS, inner) or text.find("-->", inner, closed) >= 0:
            return False
        return last_closer >= closed

    def _backtick_runs(self) -> BacktickRuns:
        """The code spans of the scanned text, read once."""
        if self.backtick_runs is None:
            self.backtick_runs = BacktickRuns(self.text)
        return self.backtick_runs

    def _last_html_closer(self) -> int:
        """Where the text's last `-->` starts, -1 if none (searched once)."""
        if self.last_html_closer is None:
            self.last_html_closer = self.text.rfind("-->")
        return self.last_html_closer

    def _follow_raw_comment(self, start: int, end: int) -> None:
        """Inside a comment, what a browser reads in `start..end` where markdown-it writes it
        raw: a `<!--` there opens an HTML comment, whatever the open one is to another
        reader (`a <!--` in a paragraph is escaped text; `%% a` is text), which runs on to
        a `-->` written raw (`a <!--`, blank line, `<div>`, `x <!--`, blank line, then
        `y --> z`: `z` is in it). An HTML comment comes to end there only; an Obsidian
        one whose `%%` comes first goes on as it (`raw` marks it open to a browser)."""
        frame = self.stack[-1]
        if frame.code_closed and self._ends_code_closed_comment(start, end):
            frame = replace(frame, code_closed=False)
            self._set(-1, frame)
        if frame.raw and frame.kind is FrameKind.OBSIDIAN_COMMENT and not self.options.raw_html:
            # An inline comment complete in Markdown text is written raw: its `-->` ends
            # the browser's comment (`- <!--`, then `q <!-- b --> r`).
            if self.options.escapes and self._ends_inline_comment(start, end):
                self._set(-1, replace(frame, raw=False))
            return
        if not self.options.raw_html or (frame.raw and frame.kind is FrameKind.HTML_COMMENT):
            return
        raw, code_closed = frame.raw, frame.code_closed
        for match in _BROWSER_COMMENT_EVENTS.finditer(self.text, start, end):
            at = match.start()
            if not self._raw_at(at):
                continue
            inert = self._code_end(at) is not None or self.options.inert(at, -1)
            if match.group() == "<!--":
                if not inert:
                    raw, code_closed = True, False
            elif frame.kind is FrameKind.OBSIDIAN_COMMENT and (raw or not inert):
                # markdown-it writes an HTML block raw, a code span in it too: its `-->`
                # ends the browser's comment (`%%`, `<!--`, then x `-->` y).
                raw, code_closed = False, raw and inert
        if (raw, code_closed) != (frame.raw, frame.code_closed):
            self._set(-1, replace(frame, raw=raw, code_closed=code_closed))

    def _ends_code_closed_comment(self, start: int, end: int) -> bool:
        """Whether `start..end` holds a `-->` ending, for a reader that took one in an HTML
        block for no closer (in a code span), the comment opened there (see
        `Frame.code_closed`): one outside code, escaped or not, in any block."""
        found = self.text.find("-->", start, end)
        while found >= 0:
            if self._code_end(found) is None and not self._inert_comment_closer(found, "-->"):
                return True
            found = self.text.find("-->", found + 1, end)
        return False

    def _is_inline_comment(self, opener: int, end: int) -> bool:
        """Whether `opener..end` is an inline comment markdown-it writes raw: complete, as
        markdown-it finds one, and its `<!--` not in code, not escaped, not inert."""
        return (
            _INLINE_COMMENT.fullmatch(self.text, opener, end) is not None
            and self._code_end(opener) is None
            and not self._escaped(opener)
            and not self.options.inert(opener, -1)
        )

    def _ends_inline_comment(self, start: int, end: int) -> bool:
        """Whether Markdown text in `start..end` holds an inline comment markdown-it writes
        raw (not in code, not escaped): each `-->` is matched with the last `<!--` before
        it, so the text is read once."""
        searched_from = start
        found = self.text.find("-->", start, end)
        while found >= 0:
            opener = self.text.rfind("<!--", searched_from, found + 2)
            if opener >= 0 and self._is_inline_comment(opener, found + 3) and not self._in_later_footnote(found):
                return True
            searched_from = found + 1
            found = self.text.find("-->", found + 1, end)
        return False

    def _inline_section(self, position: int) -> int:
        # Raw lines stop at each line end so that fence lines get seen; elsewhere a
        # `</section\n>` split over two lines must still be found.
        limit = self._line_end(position) if self.options.fences else len(self.text)
        for match in _SECTION_EVENTS.finditer(self.text, position, limit):
            start = match.start()
            code_end, raw_code = self._code_at(start)
            if code_end is not None:
                return code_end
            event = match.group().casefold()
            if event == "<!--":
                return self._open_html_comment(start)
            if event == "%%":
                if raw_code:
                    continue  # code to Obsidian, text to Pandoc
                self._push(Frame(FrameKind.OBSIDIAN_COMMENT), start)
                return match.end()
            after = self._section_tag(match, -1)
            if after is not None:
                return after
        return limit

    def _section_tag(self, match: re.Match[str], index: int) -> int | None:
        """Apply a `<section` or `</section` to the section frame at `index` of the stack:
        the innermost, or the one a container opened inside it was opened in (the section
        then ends under the container, which goes on to its own closer). Returns where the
        scan goes on; None when the end tag is not surely one."""
        section = self.stack[index]
        if match.group().lstrip("</").casefold() != "section":
            self._scope_boundary(match, index)
            return match.end()
        if not match.group().startswith("</"):
            if section.open_elements is not None and section.open_elements.foreign_html:
                # In the HTML of an `<svg>` or `<math>`, a section is kept track of like any
                # element there: until it ends, it holds the end tags around it.
                section = _with_element(section, "section", match.start(), foreign_html=True)
            nested = (match.start(), _open_count(section), section.inner_tags)
            self._set(index, replace(section, size=section.size + 1, inner_tags=nested))
            return match.end()
        rest = self._end_tag_rest(match)
        if rest is None or self._not_an_end_tag(match.start(), index) or self._out_of_scope(match.start(), index):
            return None  # not an end tag, or not surely one, or one a browser ignores
        if section.size > 1:
            inner = section.inner_tags
            if section.open_elements is not None and section.open_elements.name == "section":
                section = _without_innermost(section)
            self._set(index, replace(section, size=section.size - 1, inner_tags=None if inner is None else inner[2]))
        elif index == -1:
            return self._pop(rest.end())
        else:
            self._delete(index)
        return rest.end()

    def _not_an_end_tag(self, at: int, index: int) -> bool:
        """Whether an end tag at `at` might not be markup, or is not rendered, for the
        section frame at `index` of the stack."""
        section = self.stack[index]
        if index == -1 and self._pandoc_closer(at):
            return self._is_held(index)  # raw HTML to Pandoc, the one reader of the section
        return self._is_held(index) or self._inert(at) or self.options.unrendered(at, _innermost_tag(section))

    def _end_tag_rest(self, match: re.Match[str]) -> re.Match[str] | None:
        """The rest of the end tag whose name `match` is, up to its `>`; None when there is
        none. In a paragraph's raw lines, a `>` starting a later line is a quote's marker
        that interrupts the paragraph (`</section`, then `> x`): CommonMark leaves the
        `</section` as text, and a browser never sees the end tag."""
        rest = _END_TAG_REST.match(self.text, match.end())
        if rest is None or not self.options.fences or self.html_block:
            return rest
        return None if _QUOTE_MARKER_LINE.search(self.text, match.end(), rest.end()) else rest

    def _out_of_scope(self, end_tag_at: int, index: int) -> bool:
        """Whether a browser ignores a `</section>` at `end_tag_at` for the section frame
        at `index` of the stack: a table, an object, ... opened after its innermost open
        tag is still open there, or the section was opened before the table the end tag
        is in a cell of."""
        if len(self.stack) + index < self.options.opened_outside_cell:
            return True
        section = self.stack[index]
        # Without its nested tags' counts (opened in an earlier text), any open one counts.
        open_at_innermost = section.inner_tags[1] if section.inner_tags is not None else 0
        if _open_count(section) > open_at_innermost:
            return True
        return self._in_later_markdown_table(end_tag_at, section)

    def _in_later_markdown_table(self, at: int, section: Frame) -> bool:
        """Whether `at` is in a cell of a GFM table (in raw lines) that starts after the
        section's innermost open tag: a cell bounds the scope of an end tag in it."""
        if not self.options.fences:
            return False
        if self.markdown_tables is None:
            self.markdown_tables = markdown_tables(self.text)
        return self.markdown_tables.inert(at, _innermost_tag(section))

    def _scope_boundary(self, match: re.Match[str], index: int) -> None:
        """Count a scope-bounding start or end tag (`<table>`, `</table>`) in the section
        frame at `index` (in the HTML of an `<svg>` or `<math>`, any tag): a start tag
        like an opener, wherever it might be markup (not escaped), an end tag like a
        closer, only where it surely is (not in a cell of a table the section holds:
        there it ends at most that table), and only when it ends the innermost one open:
        a browser ignores `</object>` inside a `<table>` (and `</table>` inside an
        `<object>`), which then still bounds the scope."""
        section = self.stack[index]
        innermost = section.open_elements
        name = match.group().lstrip("</").casefold()
        if match.group().startswith("</"):
            if innermost is None or innermost.name != name or self._end_tag_rest(match) is None:
                return
            opened_at = innermost.opened_at if innermost.count > section.earlier_elements else -1
            if opened_at < 0 and self.options.in_cell:
                return
            if innermost.in_foreign_html and (opened_at < 0 or opened_at < self.last_blank_line):
                return  # held by a Markdown block started in it since (see `_OpenElement`)
            # Judged against its own start tag: `</title>` ends the `<title>` of an `<svg>`,
            # which is raw text to engine.markdown_inert.
            if self.options.inert(match.start(), opened_at) or self.options.unrendered(match.start(), opened_at):
                return
            if self._in_later_markdown_table(match.start(), section):
                return
            self._set(index, _without_innermost(section))
            return
        if self._escaped(match.start()):
            return
        foreign_html = innermost is not None and innermost.foreign_html
        if innermost is not None and innermost.name in _FOREIGN_ELEMENTS and name in _INTEGRATION_POINTS:
            foreign_html = True
        elif name in _FOREIGN_ELEMENTS:
            foreign_html = False
        elif name not in _SCOPE_BOUNDARIES and (not foreign_html or name in _VOID_ELEMENTS):
            return
        self._set(index, _with_element(section, name, match.start(), foreign_html=foreign_html))

    def _inline_container(self, position: int) -> int:
        line_end = self._line_end(position)
        # A GM container opened inside a secret section: the section's tags still count.
        in_section = len(self.stack) > 1 and self.stack[-2].kind is FrameKind.SECTION
        for match in _SECTION_EVENTS.finditer(self.text, position, line_end):
            start = match.start()
            code_end, raw_code = self._code_at(start)
            if code_end is not None:
                return code_end
            if match.group() == "%%":
                if raw_code:
                    continue  # code to Obsidian, text to Pandoc
                self._push(Frame(FrameKind.OBSIDIAN_COMMENT), start)
                return match.end()
            if match.group() == "<!--":
                return self._open_html_comment(start)
            if in_section:
                after = self._section_tag(match, -2)
                if after is not None:
                    return after
            elif match.group().casefold() == "<section":
                # A secret section opened inside a GM container runs to its own end tag,
                # past the container's closer if that comes first (rule 4).
                tag_end = secret_section_tag_end(self.text, start)
                if tag_end is not None:
                    self.stack.append(Frame(FrameKind.SECTION, 1, opened_at=start, pandoc_raw=raw_code))
                    return tag_end
        return line_end


def _open_count(section: Frame) -> int:
    return 0 if section.open_elements is None else section.open_elements.count


def _with_element(section: Frame, name: str, at: int, *, foreign_html: bool) -> Frame:
    """`section` with element `name` opened at `at` inside what it holds open."""
    innermost = section.open_elements
    in_foreign_html = foreign_html or (innermost is not None and innermost.in_foreign_html)
    opened = _OpenElement(name, at, foreign_html, in_foreign_html, innermost, _open_count(section) + 1)
    return replace(section, open_elements=opened)


def _without_innermost(section: Frame) -> Frame:
    """`section` with its innermost open element ended."""
    assert section.open_elements is not None
    count = section.open_elements.count - 1
    earlier = min(section.earlier_elements, count)
    return replace(section, open_elements=section.open_elements.around, earlier_elements=earlier)


def _block_position(line: str, text: str) -> tuple[int, int]:
    """The quote markers `line` shows before its `text`, and the column `text` starts at."""
    prefix = line[: len(line) - len(text)]
    return prefix.count(">"), len(prefix.expandtabs(4))


def _outside(where: tuple[int, int], block_at: tuple[int, int], blank: bool) -> bool:
    """Whether a line at `where` may stand outside the quotes and list item of an HTML
    block opened at `block_at`: fewer quote markers (a lazy line, or a blank one ending
    the quote), or, not blank, its text left of the block's column (out of the item)."""
    return where[0] < block_at[0] or (not blank and where[1] < block_at[1])


def _offset_in(pieces: list[tuple[int, int]], position: int) -> int:
    """The offset in the text of `position` in the pieces of it joined."""
    for start, end in pieces:
        if position < end - start:
            return start + position
        position -= end - start
    raise ValueError(position)


def _spaces_at(line: str, position: int) -> int:
    """How many spaces `line` has from `position` on."""
    run = _SPACES.match(line, position)
    assert run is not None  # the pattern matches the empty string
    return run.end() - position


def _innermost_tag(section: Frame) -> int:
    """Offset of a section's innermost open tag in the text being scanned; -1 when it is
    in an earlier text."""
    if section.inner_tags is not None:
        return section.inner_tags[0]
    return -1 if section.size > 1 else section.opened_at


# An HTML comment in inline Markdown, as markdown-it finds one (markdown_it.common.html_re).
# What opens and ends an HTML comment in a browser's reading of raw HTML.
_BROWSER_COMMENT_EVENTS = re.compile(r"<!--|-->")
_COMMENTS = (FrameKind.HTML_COMMENT, FrameKind.OBSIDIAN_COMMENT)
# Complete (empty) comments in HTML and CommonMark.
_EMPTY_COMMENTS = ("<!-->", "<!--->")


def _or_unknown(position: int | None) -> int:
    return -1 if position is None else position


_INLINE_COMMENT = re.compile(r"<!---?>|<!--(?:[^-]|-[^-]|--[^>])*-->")


# A URI autolink up to its last character before `>` (CommonMark: a scheme of 2 to 32
# characters, a colon, then anything but controls, spaces, `<` and `>`).
_AUTOLINK_BODY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\x00-\x20<>]*")


def _ends_autolink(text: str, closer_at: int) -> bool:
    """Whether the `>` of a `-->` at `closer_at` is the end of a URI autolink."""
    # Back to the nearest character an autolink cannot hold: each `-->` looks back only
    # over its own run of such characters, so the scan stays linear.
    start = closer_at
    while start > 0 and text[start - 1] not in "<>" and text[start - 1] > " ":
        start -= 1
    return start > 0 and text[start - 1] == "<" and _AUTOLINK_BODY.fullmatch(text, start, closer_at + 2) is not None

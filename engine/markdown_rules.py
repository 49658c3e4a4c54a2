"""markdown-it rules that take GM-only content out of the token stream (contract section 6).

`gm_stripping_plugin` installs:

* two block rules, ahead of every built-in one, that consume a `:::gm` container or a
  Foundry `<section class="secret">` (blank lines included) without tokenizing what is
  inside, so a link reference definition written there is never registered;
* a core rule between "block" and "inline" that walks the block tokens in document order
  with `engine.markdown_regions.scan`, cuts comments, sections and containers that start
  or end inside a token, cuts sections under GM headings, drops emptied containers and
  rebuilds `env["references"]` from the surviving definitions, all before any inline
  token is parsed, so a public link can only resolve to a public definition;
* a recording wrapper around the backtick rule, used to learn where the code spans of a
  paragraph are (code is public: `%%` inside it opens nothing).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline, backtick
from markdown_it.token import Token

from engine.html_tags import Tag, element_tags, html_text
from engine.markdown_dropped import (
    DROPPED_TEXT,
    cells_one_a_line,
    dropped_blocks,
    dropped_from_level,
    dropped_parts_plugin,
    maybe_dropped_spans,
)
from engine.markdown_footnotes import (
    footnote_at,
    footnote_definition_lines,
    footnote_of,
    footnote_rule,
    footnote_text,
    gm_footnotes_in,
    is_lazy_footnote_line,
)
from engine.markdown_headings import (
    PARSED_TEXT_MAY_DIFFER,
    HtmlHeading,
    browser_heading_starts,
    first_text_line,
    gm_heading_line,
    is_gm_heading_text,
    judged_html_headings,
    names_gm_once_parsed,
    text_before_heading_tag,
)
from engine.markdown_inert import InertTest, any_in, inert_spans, spans_test
from engine.markdown_pandoc_headings import PandocParagraphs
from engine.markdown_regions import (
    Frame,
    FrameKind,
    ScanOptions,
    ScanResult,
    SourceView,
    container_line,
    container_opener,
    escaped,
    is_fence_closer,
    opens_nothing,
    remove_ranges,
    restore,
    scan,
)
from engine.markdown_section_tags import secret_section_tag_end
from engine.markdown_source import SourceInert
from engine.markdown_text import (
    DEFINITION_MARKER,
    FOOTNOTE_LABEL,
    QUOTE_PREFIX,
    after_quote_markers,
    setext_underline,
    without_container_prefix,
    without_pandoc_prefix,
)

# Token standing for a block the block rules consumed; `meta["stack"]` holds the regions
# still open at its end (a container left unclosed inside a list item goes on after it).
REMOVED_BLOCK = "gm_removed_block"
_CODE_SPANS_ENV_KEY = "gm_code_spans"
_SOURCE_INERT_ENV_KEY = "gm_source_inert"
_SECTION_REST_LINES_ENV_KEY = "gm_section_rest_lines"
# The lines last read as the raw HTML after a secret section's closing line, by the end
# of the block holding them (`_left_open_as_raw_html`).
_RAW_HTML_READ_ENV_KEY = "gm_raw_html_read"
# A line holding only spaces and tabs (markdown-it's blank line), within a text.
_BLANK_LINE = re.compile(r"(?:^|(?<=\n))[ \t]*(?:\n|$)")
# An escaped character: a pipe there separates no cells of a Pandoc pipe-table row.
_ESCAPED = re.compile(r"\\.")
# What may start a part of a row Pandoc reads whole, a pipe in it no separator: a code
# span, math, an HTML tag or comment; and the simplest such parts, each found in one pass
# (a row is one only with a pipe outside them and none of those starts left).
_ROW_CHUNK_STARTS = ("`", "$", "<")
_SIMPLE_ROW_CHUNK = re.compile(r"`[^`]*`|\$[^$]*\$|<[^<>]*>")
_PARSED_INLINE_ENV_KEY = "gm_parsed_inline"
_CODE_SPAN_MEMO_ENV_KEY = "gm_code_span_memo"
# What can make the text of parsed inline Markdown read as a GM name where its raw text does
# not: escapes, links and images, entities, inline HTML (the name comparison itself drops
# emphasis, strikethrough and code markers and reads underscores as spaces).
_CELLS = frozenset({"th_open", "td_open"})
_CONTAINERS_OPENING = frozenset({"blockquote_open", "list_item_open"})
_CONTAINERS_CLOSING = frozenset({"blockquote_close", "list_item_close"})
# Block rules that a GM container or secret section may interrupt, like a fence can.
_INTERRUPTS = ["paragraph", "reference", "blockquote", "list"]


def gm_stripping_plugin(md: MarkdownIt) -> None:
    # Definitions become tokens with their positions instead of only entries in
    # env["references"], so the core rule can tell which ones sit in removed parts.
    md.options["inline_definitions"] = True
    dropped_parts_plugin(md)
    first_rule = md.block.ruler.get_all_rules()[0]
    # A footnote holding a GM part ends a table's rows or a quote's lazy lines too, as
    # Pandoc's table ends at a line without a pipe (the rule only answers for those).
    md.block.ruler.before(first_rule, "gm_footnote", footnote_rule, {"alt": ["paragraph", "reference", "blockquote"]})
    md.block.ruler.before(first_rule, "gm_container", _container_rule, {"alt": _INTERRUPTS})
    md.block.ruler.before(first_rule, "gm_section", _section_rule, {"alt": _INTERRUPTS})
    md.inline.ruler.at("backticks", _recording_backtick)
    md.core.ruler.after("block", "gm_strip", _strip_rule)
    md.core.ruler.at("inline", _inline_rule)


# -- block rules ---------------------------------------------------------------------------


# A block rule reads this many lines first, then twice as many each time its regions are
# still open, so a closed region costs about its own length, not the rest of the document.
_FIRST_CHUNK_LINES = 32


@dataclass(frozen=True, slots=True)
class _BlockLines:
    """Lines `first_line..end_line` as the current block sees them, as one string.

    Each line keeps its indentation relative to the block (as spaces) and ends in "\\n";
    `offsets[i]` is where line `first_line + i` begins in `text`, after `pads[i]` spaces.
    """

    first_line: int
    text: str
    offsets: list[int]
    pads: list[int]

    @classmethod
    def read(cls, state: StateBlock, first_line: int, end_line: int) -> _BlockLines:
        parts: list[str] = []
        offsets: list[int] = []
        pads: list[int] = []
        position = 0
        for line in range(first_line, end_line):
            pad = max(state.sCount[line] - state.blkIndent, 0)
            content = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]
            part = " " * pad + content + "\n"
            parts.append(part)
            offsets.append(position)
            pads.append(pad)
            position += len(part)
        return cls(first_line, "".join(parts), offsets, pads)

    @property
    def end_line(self) -> int:
        return self.first_line + len(self.offsets)

    def index_of(self, position: int) -> int:
        return bisect_right(self.offsets, position) - 1

    def in_source(self, state: StateBlock, position: int) -> int:
        """Where `position` of `text` is in the source."""
        index = self.index_of(position)
        line = self.first_line + index
        column = max(position - self.offsets[index] - self.pads[index], 0)  # not in our padding
        return state.bMarks[line] + state.tShift[line] + column

    def source_view(self, state: StateBlock) -> SourceView:
        return source_view_of(source_inert_of(state), partial(self.in_source, state))

    def inert_test(self, state: StateBlock) -> InertTest:
        """Whether a closer at a position of `text` might not be markup, judged on the
        whole source (found once per document), so that a code span or a link running
        over the end of a chunk is seen whole."""
        source = source_inert_of(state)
        source_inert = source.inert
        in_source = partial(self.in_source, state)

        # Its own lines too: in a quote, the source holds `>` markers that end a tag there.
        # Their indentation counts from the text of the list items holding them, as in
        # the source (`- :::gm`, `  - a`, `      <xmp>` is no code in the inner item).
        own_inert = inert_spans(
            self.text, lambda at: source.in_raw_html(in_source(at)), item_column_at=self._item_column_in(state)
        ).inert

        def inert(at: int, opened_at: int) -> bool:
            if own_inert(at, opened_at):
                return True
            return source_inert(in_source(at), in_source(opened_at) if opened_at >= 0 else -1)

        return inert

    def _item_column_in(self, state: StateBlock) -> Callable[[int], int]:
        """Where the source's list items holding a line of `text` put their text, in
        `text`'s columns (0 when that is left of the block's margin)."""
        source = source_inert_of(state)

        def item_column_at(at: int) -> int:
            index = self.index_of(at)
            line = self.first_line + index
            # Where this text's margin is in the source line.
            margin = self.in_source(state, self.offsets[index] + self.pads[index]) - source.line_starts[line]
            return max(source.item_columns[line] - margin + self.pads[index], 0)

        return item_column_at

    def unrendered_test(self, state: StateBlock) -> InertTest:
        """Where the parser may drop these lines, read before it parses them (nested too
        deep, or continuing a paragraph there): an end tag there is not rendered."""
        return spans_test(maybe_dropped_spans(self.text, state.level, dropped_from_level(state.md)))


@dataclass(frozen=True, slots=True)
class _BlockScan:
    lines: _BlockLines  # the chunk where the scan ended
    stack: list[Frame]  # regions still open at the end of the block
    stopped_at: int | None  # offset in `lines.text` just past the closing sequence


def _scan_block(state: StateBlock, lines: _BlockLines, stack: list[Frame], start: int, end_line: int) -> _BlockScan:
    while True:
        footnotes = gm_footnotes_in(state, lines.first_line, lines.end_line, end_line)
        options = ScanOptions(
            fences=True,
            stop_when_closed=True,
            inert=_held_in_footnotes(lines, footnotes, lines.inert_test(state)),
            unrendered=lines.unrendered_test(state),
            source=lines.source_view(state),
        )
        result = scan(lines.text, list(stack), options, start=start)  # each chunk from `stack`
        if result.stopped_at is not None or lines.end_line >= end_line:
            return _BlockScan(lines, result.stack, result.stopped_at)
        # Scanned again from the block's first line, three times as many lines: a closer
        # that spans lines (`</section` newline `>`) may straddle the chunk's last line,
        # and a scan resumed at the next line would see only its `>`. The chunks grow
        # geometrically, so all the scans together cost a small multiple of the last one.
        lines = _BlockLines.read(state, lines.first_line, min(end_line, lines.first_line + 3 * len(lines.offsets)))


def _held_in_footnotes(lines: _BlockLines, footnotes: list[tuple[int, int]], inert: InertTest) -> InertTest:
    """`inert`, and a closer in a GM footnote's text (engine.markdown_footnotes) of a
    region opened before the footnote: the text is out of the document's flow to Pandoc
    and markdown-it-footnote (`<section class="secret">`, blank line, `[^1]: ::: gm`,
    then `    </section>` ends no section)."""
    if not footnotes:
        return inert
    spans = [
        (
            lines.offsets[start - lines.first_line],
            lines.offsets[end - lines.first_line] if end < lines.end_line else len(lines.text),
        )
        for start, end in footnotes
    ]
    starts = [start for start, _ in spans]

    def held(at: int, opened_at: int) -> bool:
        index = bisect_right(starts, at) - 1
        if index >= 0 and at < spans[index][1] and opened_at < spans[index][0]:
            return True
        return inert(at, opened_at)

    return held


def _first_lines(state: StateBlock, start_line: int, end_line: int) -> _BlockLines:
    return _BlockLines.read(state, start_line, min(end_line, start_line + _FIRST_CHUNK_LINES))


def _push_removed_block(state: StateBlock, start_line: int, stack: list[Frame]) -> None:
    token = state.push(REMOVED_BLOCK, "", 0)
    token.map = [start_line, state.line]
    token.meta = {"stack": stack}


def _container_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    if state.is_code_block(start_line):
        return False
    first = state.src[state.bMarks[start_line] + state.tShift[start_line] : state.eMarks[start_line]]
    if not container_opener(first):
        return False
    if silent:
        return True
    # The scan starts at the opening line itself, so a comment opened on it nests.
    result = _scan_block(state, _first_lines(state, start_line, end_line), [], 0, end_line)
    if result.stopped_at is None:
        # Unclosed here: it runs to the end of the document, beyond this block too.
        state.line = end_line
        _push_removed_block(state, start_line, result.stack)
    else:
        # A container always closes at the end of its closing line.
        state.line = result.lines.first_line + result.lines.index_of(result.stopped_at - 1) + 1
        _push_removed_block(state, start_line, [])
    return True


def _section_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    if state.is_code_block(start_line):
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    if state.src[start : start + len("<section")].casefold() != "<section":
        return False
    lines = _first_lines(state, start_line, end_line)
    tag_end = _first_lines_tag_end(state, lines, start, end_line)
    if tag_end is None:
        return False
    if silent:
        return True
    result = _scan_block(state, lines, [Frame(FrameKind.SECTION, 1, opened_at=lines.pads[0])], tag_end, end_line)
    if result.stopped_at is None:
        state.line = end_line
        _push_removed_block(state, start_line, result.stack)
        return True
    chunk, stopped_at = result.lines, result.stopped_at
    index = chunk.index_of(stopped_at - 1)
    close_line = chunk.first_line + index
    line_end = chunk.offsets[index + 1] - 1 if index + 1 < len(chunk.offsets) else len(chunk.text) - 1
    rest_is_blank = not chunk.text[stopped_at:line_end].strip()
    left_open = _left_open_as_raw_html(state, close_line, stopped_at - chunk.offsets[index], end_line)
    if left_open:
        # A comment (or a section) opened there as written runs on past the blank line,
        # wherever Markdown would have read its opener as code or text (`</section>`,
        # then x `<!--`): the lines go with the section, the region runs on.
        state.line = left_open[0]
        _push_removed_block(state, start_line, left_open[1])
        return True
    if rest_is_blank:
        state.line = close_line + 1
        _mark_raw_html_lines(state, close_line + 1, end_line)
        _push_removed_block(state, start_line, [])
        return True
    if close_line == start_line:
        # `<section class="secret">...</section> more` on one line: markdown-it makes it
        # an HTML block and the core rule cuts the section out of it.
        return False
    # Text after `</section>` on its line is public: let markdown-it read it as if the
    # line began there.
    rest = state.bMarks[close_line] + state.tShift[close_line] + stopped_at - chunk.offsets[index] - chunk.pads[index]
    remainder = state.src[rest : state.eMarks[close_line]]
    state.bMarks[close_line] = rest
    state.tShift[close_line] = len(remainder) - len(remainder.lstrip(" \t"))
    state.sCount[close_line] = state.blkIndent
    state.line = close_line
    _mark_raw_html_lines(state, close_line, end_line)
    _push_removed_block(state, start_line, [])
    return True


_HTML_REGIONS = (FrameKind.HTML_COMMENT, FrameKind.SECTION)


def _left_open_as_raw_html(
    state: StateBlock, close_line: int, column: int, end_line: int
) -> tuple[int, list[Frame]] | None:
    """The regions a secret section's closing line, from `column` on, and the lines after
    it up to the line ending its HTML block (a blank one, or one outside its quote or list
    item: `_ends_raw_html`) leave open read as the raw HTML they are in as written (see
    `_mark_raw_html_lines`), with that line; None when they leave no HTML comment or
    secret section open. A
    closing line in lines already read so, which left nothing open, is not read again:
    a run of sections without blank lines is read once."""
    # The raw HTML read last (the blocks in a quote end at the quote's end: `end_line`).
    read: dict[int, tuple[int, int]] = state.env.setdefault(_RAW_HTML_READ_ENV_KEY, {})
    first_line, blank_line = read.get(end_line, (end_line, end_line))
    if first_line <= close_line < blank_line:
        return None
    blank_line = _raw_html_end(state, close_line + 1, end_line)
    read[end_line] = (close_line, blank_line)
    lines = _BlockLines.read(state, close_line, blank_line)
    stack = scan(lines.text, [], ScanOptions(raw_html=True), start=column).stack
    # Obsidian comments and containers are no HTML: Markdown's reading of them stands.
    return (blank_line, stack) if any(frame.kind in _HTML_REGIONS for frame in stack) else None


def _mark_raw_html_lines(state: StateBlock, first_line: int, end_line: int) -> None:
    """Mark the lines from `first_line` up to the next blank one (or one outside the quote
    or list item: `_ends_raw_html`) as raw HTML (see
    `_Stripper._rest_of_closing_line`). To a reader of the document as written, the text
    after a secret section's `</section>` is in the HTML block holding that tag's line,
    which ends at a blank line only: the rest of the line, and the lines after it
    (`</section>`, then `x <!--`: the comment is written raw), however markdown-it reads
    them once the section is cut."""
    marked: set[int] = state.env.setdefault(_SECTION_REST_LINES_ENV_KEY, set())
    line = first_line
    # A line already marked was marked with every line after it up to the blank one.
    while line < end_line and line not in marked and not _ends_raw_html(state, line):
        marked.add(line)
        line += 1


def _raw_html_end(state: StateBlock, line: int, end_line: int) -> int:
    """The first line from `line` on (or `end_line`) that ends an HTML block holding the
    lines before it (see `_ends_raw_html`)."""
    while line < end_line and not _ends_raw_html(state, line):
        line += 1
    return line


def _ends_raw_html(state: StateBlock, line: int) -> bool:
    """Whether `line` ends an HTML block opened by a tag such as `<section>`, as markdown-it
    reads it: a blank line, or one outside the quote or list item the block is in (a lazy
    line, or one indented out of the item: `- </section>`, `  x <!--`, then `y --> z` is
    a paragraph after the list, its `-->` escaped)."""
    return state.isEmpty(line) or state.sCount[line] < state.blkIndent


def _first_lines_tag_end(state: StateBlock, lines: _BlockLines, start: int, end_line: int) -> int | None:
    """End of the secret section tag at the start of `lines` (`start` in the source), or
    None; `len(lines.text)` when it runs past them.

    A tag longer than the first lines (attributes over many lines, blank ones included,
    as an HTML editor may write them) is read in the whole source when the block is at the
    top level, where the source holds the same characters; in a quote or a list, where
    the source has container markers in it, it is taken for secret.
    """
    if lines.end_line >= end_line:
        return secret_section_tag_end(lines.text, lines.pads[0])
    tag_end = secret_section_tag_end(lines.text, lines.pads[0], complete=False)
    if tag_end != len(lines.text) or state.parentType != "root":
        return tag_end
    return tag_end if secret_section_tag_end(state.src, start) is not None else None


# -- code spans ----------------------------------------------------------------------------


@dataclass(slots=True)
class _CodeSpanRecorder:
    src: str
    spans: set[tuple[int, int]] = field(default_factory=set)


def _recording_backtick(state: StateInline, silent: bool) -> bool:
    start = state.pos
    token_count = len(state.tokens)
    if not backtick(state, silent):
        return False
    recorder = state.env.get(_CODE_SPANS_ENV_KEY)
    if (
        isinstance(recorder, _CodeSpanRecorder)
        and not silent
        # Image descriptions are parsed as a separate string; their offsets would not be
        # ours, so code spans there are not recorded (and their `%%` counts as an opener).
        and state.src is recorder.src
        and len(state.tokens) > token_count
        and state.tokens[-1].type == "code_inline"
    ):
        recorder.spans.add((start, state.pos))
    return True


@dataclass(slots=True)
class _CodeSpanMemo:
    """Code spans of inline contents parsed with these references (label, href, title)."""

    references: list[tuple[str, str, str]]
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _references_key(references: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(label, entry["href"], entry["title"]) for label, entry in sorted(references.items())]


def share_code_spans(finished_env: dict[str, Any], next_env: dict[str, Any]) -> None:
    """Let the next parse (by the same parser) reuse the code spans the finished one found:
    they depend only on the inline content and the references, so normalization's check
    parse need not parse its paragraphs with code twice."""
    if _CODE_SPAN_MEMO_ENV_KEY in finished_env:
        next_env[_CODE_SPAN_MEMO_ENV_KEY] = finished_env[_CODE_SPAN_MEMO_ENV_KEY]


def _parse_inline(md: MarkdownIt, content: str, references: Any) -> tuple[list[Token], list[tuple[int, int]]]:
    """Inline tokens of `content` and the offsets of its code spans."""
    recorder = _CodeSpanRecorder(content)
    tokens: list[Token] = []
    md.inline.parse(content, md, {"references": references, _CODE_SPANS_ENV_KEY: recorder}, tokens)
    return tokens, sorted(recorder.spans)


# -- the core rule -------------------------------------------------------------------------


def _strip_rule(state: StateCore) -> None:
    state.tokens[:] = _Stripper(state).run()


def _inline_rule(state: StateCore) -> None:
    """markdown-it's inline stage, taking the tokens of an unchanged content from the
    parse the core rule made to find its code spans instead of parsing it again."""
    parsed: dict[int, tuple[str, list[Token]]] = state.env.pop(_PARSED_INLINE_ENV_KEY, {})
    for token in state.tokens:
        if token.type != "inline":
            continue
        content, children = parsed.get(id(token), (None, []))
        if content == token.content and not token.children:
            token.children = children
            continue
        if token.children is None:
            token.children = []
        state.md.inline.parse(token.content, state.md, state.env, token.children)


# Elements a heading stays nested in (a browser's heading start tag ends only an open `<p>`
# or heading): a handout in a `<blockquote>` or a `<div>`, a list or a table, and a
# `<template>`, whose content shows nothing.
_NESTING_ELEMENTS = frozenset(
    {"blockquote", "div", "details", "aside", "article", "section", "figure", "header", "footer", "nav", "main"}
    | {"fieldset", "dialog", "center", "table", "ul", "ol", "dl", "template", "object"}
)


@dataclass(slots=True)
class _OpenElements:
    """The HTML elements of `_NESTING_ELEMENTS` opened under the GM heading being cut and
    still open, innermost last, each with the depth in quotes and list items it stands
    at (never less than the one before it: leaving a quote or list item closes those
    opened inside, as a browser does at its end tag)."""

    stack: list[tuple[str, int]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def follow(self, tags: list[Tag], depth: int) -> None:
        """Apply `tags` as a browser does: an end tag closes the innermost open element of
        its name and every one opened inside it, and none when none of its name is open."""
        for tag in tags:
            if not tag.closing:
                self.stack.append((tag.name, depth))
                self.counts[tag.name] += 1
            elif self.counts[tag.name]:
                while self._pop() != tag.name:
                    pass

    def close_deeper(self, depth: int) -> None:
        while self.stack and self.stack[-1][1] > depth:
            self._pop()

    def _pop(self) -> str:
        name, _ = self.stack.pop()
        self.counts[name] -= 1
        return name


def _nesting_tags(html: str) -> list[Tag]:
    """The tags of `_NESTING_ELEMENTS` in `html`, as a browser reads them (none in raw text
    or in another tag's attribute value), in order."""
    if "<" not in html:
        return []
    return [tag for tag in element_tags(html) if tag.end is not None and tag.name in _NESTING_ELEMENTS]


def _tags_between(tags: list[Tag], index: int, start: int, end: int) -> tuple[list[Tag], int]:
    """The tags of `tags[index:]` that start in `start..end`, and the index past them: a
    walk over a block's tags in one pass, however many headings it holds."""
    stop = index
    while stop < len(tags) and tags[stop].start < end:
        stop += 1
    return [tag for tag in tags[index:stop] if tag.start >= start], stop


@dataclass(slots=True)
class _OpenHeading:
    """A heading element whose start tag ends the text of `token`, at `start`: the text of
    the next block (`<h2>`, a blank line, `GM notes`) decides whether it names a GM
    section, and if it does, the section starts at that tag."""

    token: Token
    start: int
    level: int
    # Quote and list depth where its start tag is.
    depth: int
    # Blocks kept since that showed no text (a `<script>`, a thematic break): in the
    # section too, if it is one.
    since: list[Token] = field(default_factory=list)


class _Stripper:
    """One document-order pass over the block tokens."""

    def __init__(self, state: StateCore) -> None:
        self.state = state
        self.block_references = state.env.get("references", {})
        references_key = _references_key(self.block_references)
        memo = state.env.get(_CODE_SPAN_MEMO_ENV_KEY)
        if not isinstance(memo, _CodeSpanMemo) or memo.references != references_key:
            memo = state.env[_CODE_SPAN_MEMO_ENV_KEY] = _CodeSpanMemo(references_key)
        self.code_spans = memo
        self.source_lines = state.src.split("\n")
        self.source_inert = source_inert_of(state)
        self.stack: list[Frame] = []
        # How many of `stack`, the outermost, are held (engine.markdown_regions.ScanOptions).
        self.held = 0
        # How many of `stack` were open before the table being read (engine.markdown_regions:
        # a `</section>` in its cells ends none of them in a browser).
        self.opened_before_table = 0
        # Whether a cell of the table being read opened a container glued by removing a
        # part: its rows are then read as the author's lines, a `:::` row closing it.
        self.cells_read_as_lines = False
        # The row of the table being read where a GM heading starts to Pandoc, and its level.
        self.gm_row: tuple[int, int] | None = None
        # Level of the GM heading whose section is being cut, if any.
        self._cut_level: int | None = None
        # Where Pandoc reads a heading as paragraph text (`x`, `# Pub`); whether the heading
        # being read is such text, and whether Pandoc sees a GM heading of the cut (not
        # when its only GM heading is such text to Pandoc: no section there to go on).
        self.pandoc_paragraphs = PandocParagraphs()
        self.heading_in_pandoc_text = False
        self.cut_seen_by_pandoc = True
        # The block being read, and the GM footnote the cut started in (None: the document).
        self.token_map: list[int] | None = None
        self.cut_footnote: int | None = None
        # The GM footnote whose re-marked text is being read: its content is out of the
        # document's flow to Pandoc and markdown-it-footnote, so the regions open before
        # its blocks are held there (a closer in it closes only what it opened itself).
        self.footnote: int | None = None
        # Quotes and list items open around the block being read, and the fewest around
        # the GM headings of the cut: a heading nested deeper (a handout quoted under
        # `## GM`) ends nothing.
        self.depth = 0
        self.cut_depth = 0
        # Ordinary containers (`::: handout`, a Pandoc div) opened in the cut and still
        # open, innermost last: (colons of the opening line, depth it stands at). A heading
        # inside one is nested deeper than the GM heading, as in a quote, and ends nothing.
        self.divs_in_cut: list[tuple[int, int]] = []
        # And HTML elements (`<blockquote>`, `<div>`, `<template>`, ...) opened in the cut.
        self.elements_in_cut = _OpenElements()
        # The setext heading that ended a cut: its lines but the last were under it.
        self.setext_after_cut: Token | None = None
        self.open_heading: _OpenHeading | None = None
        # Ids of blocks kept before a heading element left open turned out to be GM.
        self.cut_after_open_heading: set[int] = set()
        # The lines markdown-it-footnote reads as footnote definitions', read when needed.
        self.footnote_lines: frozenset[int] | None = None
        # Inline tokens parsed here, by id of their inline token, with the content parsed.
        self.parsed_inline: dict[int, tuple[str, list[Token]]] = {}

    def run(self) -> list[Token]:
        tokens = self.state.tokens
        kept: list[Token] = []
        references: dict[str, dict[str, Any]] = {}
        for index, token in enumerate(tokens):
            self.token_map = token.map
            if token.map is not None:
                self._follow_footnote(footnote_at(self.state.env, token.map[0]))
            if not self._keep(token, tokens[index - 1] if index else None):
                continue
            if self.open_heading is not None and token is not self.open_heading.token and token.nesting == 0:
                self.open_heading.since.append(token)
            if token.type == "definition":
                # The first surviving definition of a label wins; mdformat writes the
                # used ones itself, so the token does not stay in the stream.
                meta = token.meta
                references.setdefault(meta["id"], {"title": meta["title"], "href": meta["url"], "map": token.map})
                continue
            kept.append(token)
        self._follow_footnote(None)
        self.state.env["references"] = references
        self.state.env.pop("duplicate_refs", None)
        # An HTML block may have lost all of its text after it was kept, and blocks after it
        # been cut: a heading element it left open turned out to start a GM section.
        kept = [
            token
            for token in kept
            if id(token) not in self.cut_after_open_heading and (token.type != "html_block" or token.content.strip())
        ]
        if references == self.block_references:
            # The inline parses made to find code spans used the references the inline
            # stage will use: where the content stayed the same, so would their tokens.
            self.state.env[_PARSED_INLINE_ENV_KEY] = self.parsed_inline
        return _prune(kept)

    @property
    def cut_level(self) -> int | None:
        return self._cut_level

    @cut_level.setter
    def cut_level(self, level: int | None) -> None:
        if level is not None:
            self.cut_depth = self.depth if self._cut_level is None else min(self.cut_depth, self.depth)
        if level is None or self._cut_level is None:
            self.divs_in_cut = []
            self.elements_in_cut = _OpenElements()
        if self._cut_level is None and level is not None:
            self.cut_footnote = footnote_of(self.state.env, self.token_map)
            self.cut_seen_by_pandoc = True
        self._cut_level = level

    def _gm_heading_row(self, table: Token) -> tuple[int, int] | None:
        """(line, level) of the body row where a GM heading starts as Pandoc reads the
        table, None when there is none. A row without a pipe (`| a |`, `| - |`, `GM`,
        `===`) is one more row to GFM, but Pandoc's pipe table rows need one: the table
        ends there, and that line and the ones after it are a paragraph's, a setext
        heading's text when an underline follows (a row, or the line after the table).
        Its lines read as a grid table's too, after the border line above them, whose
        cells run over lines (`+---+`, `| GM |`, `| --- |`, `| x |`: a paragraph, a header
        and a row to GFM, a cell holding a heading to Pandoc)."""
        if table.map is None:
            return None
        start, end = table.map
        above = max(start - 1, 0)
        source = "\n".join(self.source_lines[above:end])
        grid = gm_heading_line(source)
        if grid is not None:
            return max(above + source.count("\n", 0, grid[0]), start), grid[1]
        for row in range(start + 2, end):
            pipeless = _pipeless(self.source_lines[row])
            if pipeless is None:
                continue
            # A row that may be one reads as a heading only with an underline right after
            # it (each row read once, however many such rows).
            rows = self.source_lines[row : end + 1 if pipeless else row + 2]
            text = "\n".join(rows)
            heading = gm_heading_line(text)
            if heading is None:
                # Named once parsed, as Pandoc reads a heading's text (`G&#77;`, `---`).
                text = "\n".join(map(without_container_prefix, rows))
                heading = self._parsed_gm_text_over_underline(text, ("===", "---"))
            if heading is not None:
                line = row + text.count("\n", 0, heading[0])
                return (line, heading[1]) if line < end else None
            if pipeless:
                return None
        return None

    def _follow_pandoc_paragraphs(self, token: Token, previous: Token | None) -> bool:
        """Follow Pandoc's paragraphs over block `token`; whether it is a heading Pandoc
        reads as paragraph text. Where markdown-it and Pandoc read other blocks, they are
        told apart only in a cut, where a heading may end it."""
        paragraphs = self.pandoc_paragraphs
        starts_block = token.map is not None and not paragraphs.goes_on_at(token.map[0])
        in_text = paragraphs.heading_is_text(token, previous)
        if self.cut_level is None or token.map is None:
            return in_text
        if (token.type == "code_block" and self._after_pandoc_item(token)) or (
            token.type == "table_open" and self._pipeless_row_in(token.map)
        ):
            # A later paragraph of a Pandoc-only list item or definition (`a) x`, blank
            # line, `    y`: indented code to markdown-it), or a table's rows from one
            # without a pipe (Pandoc's pipe table ends there): a paragraph to Pandoc.
            paragraphs.paragraph_ends_at(token.map[1])
        elif token.type == "paragraph_open" and starts_block and self._is_pandoc_div(token.map):
            # `::: note`, `x`, `:::`: one paragraph to markdown-it, a div to Pandoc, whose
            # closing line ends it; a heading line right after starts a block there.
            paragraphs.paragraph_ends_at(-1)
        return in_text

    def _is_pandoc_div(self, paragraph_lines: list[int]) -> bool:
        """Whether a paragraph's lines are Pandoc divs whole: from an opening `:::` line to
        the closing line that ends it, with no text outside them."""
        start, end = paragraph_lines
        depth = 0
        for line in self.source_lines[start:end]:
            marker = container_line(without_container_prefix(line))
            if marker is None and not depth:
                return False
            if marker is not None:
                depth += -1 if marker[1] else 1
        return not depth

    def _pipeless_row_in(self, table_lines: list[int]) -> bool:
        """Whether the body of the table on `table_lines` holds a row that may have no
        pipe to Pandoc: its pipe table ends there, and the lines from it on are a
        paragraph's."""
        start, end = table_lines
        return any(_pipeless(line) is not None for line in self.source_lines[start + 2 : end])

    def _ends_cut_from_footnote(self, token: Token) -> bool:
        """Whether a heading may end the cut as far as footnotes go: one in a GM footnote's
        text ends only a cut started in the same footnote."""
        footnote = footnote_of(self.state.env, token.map)
        # Its underline a lazy line of a footnote (`[^1]: ## GM`, `    x`, `===`): paragraph
        # text to markdown-it-footnote, so no heading ends the section there.
        setext = token.markup in ("=", "-")
        if setext and token.map is not None and is_lazy_footnote_line(self.state.env, token.map[1] - 1):
            return False
        return footnote is None or footnote == self.cut_footnote

    def _follow_footnote(self, footnote: int | None) -> None:
        """Hold the open regions when the blocks of a GM footnote's text start (`[^1]:
        ::: gm`, then `    </section>` closes no section opened before the footnote), and
        let them go when they end; what the footnote opened and left open goes on."""
        if footnote == self.footnote:
            return
        self.held = len(self.stack) if footnote is not None else 0
        self.footnote = footnote

    @property
    def _hidden(self) -> bool:
        return bool(self.stack) or self.cut_level is not None

    @property
    def _nested_in_cut(self) -> bool:
        """Whether a container or an element opened under the GM heading being cut is open:
        a heading there is nested deeper than the GM heading and ends nothing."""
        return bool(self.divs_in_cut or self.elements_in_cut.stack)

    def _keep(self, token: Token, previous: Token | None) -> bool:
        hidden = self._hidden
        in_pandoc_text = self._follow_pandoc_paragraphs(token, previous)
        if token.type in _CONTAINERS_OPENING:
            self.depth += 1
        elif token.type in _CONTAINERS_CLOSING:
            self.depth -= 1
            # markdown-it-container and Pandoc end a div with the quote or list item it is in.
            # Their depths never fall from the outermost in (each opens at the depth then,
            # and those deeper end first), so the deeper ones are the innermost.
            while self.divs_in_cut and self.divs_in_cut[-1][1] > self.depth:
                self.divs_in_cut.pop()
            self.elements_in_cut.close_deeper(self.depth)
        if token.type == REMOVED_BLOCK:
            left_open: list[Frame] = token.meta["stack"]
            if self.stack and self.stack[-1].kind is FrameKind.HTML_COMMENT:
                # Inside a comment, `<!--` opens nothing: one the block left open (in the
                # raw HTML after a section's end tag) is text of the open one. But where
                # the open one may be no comment (`a <!--` in a paragraph, escaped), a
                # browser reads that one as a comment opened raw: the open one goes on to
                # a `-->` written raw (`a <!--`, blank line, the section, `x <!--`, blank
                # line, then `y --> z`: `z` is in the comment).
                if not self.stack[-1].raw and any(
                    frame.kind is FrameKind.HTML_COMMENT and frame.raw for frame in left_open
                ):
                    self.stack[-1] = replace(self.stack[-1], raw=True)
                left_open = [frame for frame in left_open if frame.kind is not FrameKind.HTML_COMMENT]
            self.stack.extend(map(self._at_depth, left_open))
            return False
        if token.type == "table_open":
            self.opened_before_table = len(self.stack)
            self.cells_read_as_lines = False
            self.gm_row = self._gm_heading_row(token)
        if (
            token.type == "tr_open"
            and self.gm_row is not None
            and token.map is not None
            and token.map[0] == self.gm_row[0]
        ):
            self._cut_from(self.gm_row[1])
        if token.type == DROPPED_TEXT:
            self._read_dropped(token.content, mid_row=bool(token.meta.get("mid_row")))
            return False
        if token.type == "heading_open":
            level = int(token.tag[1:])
            self.heading_in_pandoc_text = in_pandoc_text or self._after_footnote_line(token)
            # A heading ends the cut only if it is really there, not inside a comment or
            # in an attribute value or raw text opened before it, and every reader sees it:
            # Pandoc reads the GM section on over one it reads as paragraph text.
            ends_cut = self.cut_level is not None and not self.stack and level <= self.cut_level
            ends_cut = ends_cut and not (self.heading_in_pandoc_text and self.cut_seen_by_pandoc)
            # A heading in a footnote's text (`[^1]: # Pub`) is not in the document's flow.
            ends_cut = ends_cut and self._ends_cut_from_footnote(token)
            if ends_cut and token.markup in ("=", "-") and token.map is not None:
                # `::: box`, `Letter`, `===`: one heading to CommonMark, a heading in a div
                # to markdown-it-container and Pandoc. The lines above its last are in the cut.
                earlier = self.source_lines[token.map[0] : token.map[1] - 2]
                self._follow_divs("\n".join(map(without_container_prefix, earlier)))
            if ends_cut and self.depth <= self.cut_depth and not self._nested_in_cut and not self._in_earlier(token):
                self.cut_level = None
                if token.markup in ("=", "-"):
                    self.setext_after_cut = token
            return True
        if token.type == "inline":
            self._strip_inline(token, previous)
            return True
        if token.type == "html_block":
            result = self._scan(token.content, self._raw_options(token, token.content))
            token.content = remove_ranges(token.content, result.removed)
            self._continue_open_heading(token.content)
            self._cut_at_gm_heading_line(token)
            return bool(token.content.strip())
        if token.type in ("fence", "code_block") and self.open_heading is not None and not hidden:
            self._settle_open_heading(token.content)
            hidden = self._hidden
        raw_html_fence = token.type == "fence" and _RAW_HTML_INFO.fullmatch(token.info) is not None
        if raw_html_fence and not hidden and self._is_closed_fence(token):
            # Pandoc writes a raw HTML block (```` ```{=html} ````) as HTML: a comment
            # opened in it hides what follows from a browser, up to a `-->` as far away,
            # and a heading element in it starts a section as one in an HTML block does.
            result = self._scan(token.content, self._raw_options(token, token.content, raw_html=True))
            token.content = remove_ranges(token.content, result.removed)
            self._cut_at_html_headings(token)
            token.content = _fence_content(token.content)
        if token.type == "fence" and not hidden:
            token.info = _public_info(token.info)
        if token.type == "fence" and not hidden and not self._is_closed_fence(token):
            self._cut_unclosed_fence(token)
            return True
        if token.type == "code_block" and not hidden:
            return self._keep_indented_code(token)
        if token.type == "definition":
            assert token.map is not None
            source = footnote_text("\n".join(self.source_lines[token.map[0] : token.map[1]]))
            result = self._scan(source, self._raw_options(token, source))
            if not hidden and not result.removed:
                gm_level = self._definition_as_gm_heading(token)
                if gm_level is not None:
                    self._cut_from(gm_level)
                    return False
            return not (hidden or result.removed)
        if token.type in ("fence", "code_block") and hidden:
            if not self.stack:
                # Code under a GM heading: what it shows opens nothing, but a GM heading
                # indented by mistake (a tab before `## GM`) widens the section.
                heading = gm_heading_line(token.content.split("\n", 1)[0]) if token.type == "code_block" else None
                if heading is not None:
                    self._cut_from(heading[1])
                return False
            # Its lines as written: a closing fence there may end a fence opened in the
            # removed part (markdown-it saw the opening one inside an HTML block).
            assert token.map is not None
            source = "\n".join(self.source_lines[token.map[0] : token.map[1]])
            self._scan(source, self._raw_options(token, source))
            return False
        if token.nesting != 0:
            return True  # structure; containers left empty are pruned afterwards
        # Code blocks, fences, thematic breaks: opaque, kept or dropped whole.
        return not hidden

    def _scan(self, text: str, options: ScanOptions) -> ScanResult:
        """Scan `text` with the regions open before it, which it leaves open after it."""
        result = scan(text, self.stack, options)
        self.stack, self.held = result.stack, result.held
        return result

    def _raw_options(self, token: Token, text: str, *, raw_html: bool = False) -> ScanOptions:
        """How to scan a block's `text` as written, its closers judged in the whole source
        too; `raw_html` for a block written as HTML that is no HTML block (a raw one)."""
        raw_html = raw_html or token.type == "html_block"
        own = _inert_test(text, raw_html=raw_html)
        rest_of_closing_line = self._rest_of_closing_line(token)
        raw_html = raw_html or rest_of_closing_line
        return ScanOptions(
            fences=True,
            inert=self.source_inert.test_for(token.map, text, own),
            depth=self.depth,
            raw_html=raw_html,
            # The rest of a closing line is raw HTML up to its first blank line.
            raw_html_end=_first_blank_line(text) if rest_of_closing_line else len(text),
            footnotes=self._footnote_spans(token, text, raw_html),
            held=self.held,
            html_block_text=token.type == "html_block" and not rest_of_closing_line,
            source=self._source_view(token.map, text),
        )

    def _source_view(self, line_map: list[int] | None, text: str) -> SourceView | None:
        positions = self.source_inert.positions(line_map, text)
        source = self.source_inert
        return None if positions is None else source_view_of(source, positions)

    def _footnote_spans(self, token: Token, text: str, raw_html: bool) -> tuple[tuple[int, int], ...]:
        """Where `text`, a block's lines from its first (`token.map`), is a footnote
        definition's, when a `-->` there might end a comment opened raw: the lines
        markdown-it-footnote reads so (`[^1]: y`, `===`, then `q <!-- a --> z`: its lazy
        text), and, unless `text` is raw HTML as written (where a label is text), those
        from a line opening a definition on (`x`, then `[^1]: y <!-- a --> z`: the
        definition interrupts the paragraph, or ends a quote the line continues lazily to
        markdown-it, as Pandoc reads it)."""
        if token.map is None or not (raw_html or (self.stack and self.stack[-1].raw)):
            return ()
        footnote_lines = self._footnote_definition_lines()
        if not footnote_lines and "[^" not in text:
            return ()
        first, last = token.map
        spans: list[tuple[int, int]] = []
        start = 0
        for index, line in enumerate(text.split("\n")):
            end = start + len(line) + 1
            source = self.source_lines[first + index] if first + index < last else line
            if not raw_html and FOOTNOTE_LABEL.match(without_container_prefix(source).lstrip(" \t")):
                spans.append((start, len(text) + 1))  # the definition runs to the block's end
                break
            if first + index in footnote_lines:
                if spans and spans[-1][1] == start:
                    spans[-1] = (spans[-1][0], end)  # one span a run of lines: few to search
                else:
                    spans.append((start, end))
            start = end
        return tuple(spans)

    def _footnote_definition_lines(self) -> frozenset[int]:
        if self.footnote_lines is None:
            self.footnote_lines = footnote_definition_lines(self.state.src) if "[^" in self.state.src else frozenset()
        return self.footnote_lines

    def _after_footnote_line(self, token: Token) -> bool:
        """Whether a heading comes right after a line of a footnote's text (`[^1]: x`,
        `# Pub`): markdown-it reads no block there, so `PandocParagraphs` cannot tell,
        but Pandoc's footnote paragraph takes the heading's line lazily."""
        if token.map is None or token.map[0] == 0:
            return False
        above = token.map[0] - 1
        return above in self._footnote_definition_lines() and bool(self.source_lines[above].strip())

    def _rest_of_closing_line(self, token: Token) -> bool:
        """Whether a block starts with the text after a secret section's `</section>`, on
        its line or a line after it before a blank one: the section rule lets markdown-it
        read the rest of the line as if the line began there (`</section><!--` then reads
        as a comment's HTML block running past blank lines, `</section>y <!--` as a
        paragraph), and the lines after as blocks of their own (`</section>`, `x <!--`). As
        written, that text is in the HTML block holding the `</section>` line: written raw,
        up to the first blank line."""
        rest_lines: set[int] | None = self.state.env.get(_SECTION_REST_LINES_ENV_KEY)
        return rest_lines is not None and token.map is not None and token.map[0] in rest_lines

    def _in_earlier(self, token: Token) -> bool:
        """Whether a block starts inside an attribute value, raw text or the like opened
        before it: a heading there ends no GM section."""
        return token.map is not None and self.source_inert.line_inside_earlier(token.map[0])

    def _cut_at_html_headings(self, token: Token) -> None:
        """Take out of an HTML block the parts under GM headings written as HTML
        (`<h2>GM</h2>`): an HTML heading starts and ends a GM section as a Markdown heading
        does. One left open never ends a section: what follows its start tag may be the
        rest of the document; nor does one a browser reads as text (in an attribute value,
        in a `<script>`)."""
        html = token.content
        kept: list[str] = []
        position = 0
        browser_headings: frozenset[int] | None = None
        # The block's nesting tags (found once the cut needs them) and how many are passed.
        nesting: list[Tag] | None = None
        passed = 0
        for heading, verdict in judged_html_headings(html):
            if self.cut_level is None:
                kept.append(html[position : heading.start])
            else:
                nesting = _nesting_tags(html) if nesting is None else nesting
                in_cut, passed = _tags_between(nesting, passed, position, heading.start)
                self.elements_in_cut.follow(in_cut, self.depth)
            position = heading.start
            ends_cut = self.cut_level is not None and heading.closed and heading.level <= self.cut_level
            ends_cut = ends_cut and self._ends_cut_from_footnote(token)
            if ends_cut and self.depth <= self.cut_depth and not self._nested_in_cut:
                if browser_headings is None:
                    browser_headings = browser_heading_starts(html)
                if heading.start in browser_headings and not self.source_inert.inside_earlier(
                    token.map, html, heading.start
                ):
                    self.cut_level = None
            if self.cut_level is None:
                if verdict:
                    self.cut_level = heading.level
                elif verdict is None:
                    self.open_heading = _OpenHeading(token, sum(map(len, kept)), heading.level, self.depth)
            elif heading.level < self.cut_level and verdict:
                self.cut_level = heading.level
        if self.cut_level is None:
            kept.append(html[position:])
        else:
            nesting = _nesting_tags(html) if nesting is None else nesting
            self.elements_in_cut.follow(_tags_between(nesting, passed, position, len(html))[0], self.depth)
        token.content = "".join(kept)

    def _cut_from(self, level: int, *, seen_by_pandoc: bool = True) -> None:
        """A GM heading of `level`: its section starts, or widens the one being cut.
        `seen_by_pandoc` is False for a Markdown heading Pandoc reads as paragraph text."""
        starts = self.cut_level is None
        self.cut_level = level if self.cut_level is None else min(self.cut_level, level)
        self.cut_seen_by_pandoc = seen_by_pandoc or (not starts and self.cut_seen_by_pandoc)
        self.open_heading = None

    def _cut_at_gm_heading_line(self, token: Token) -> None:
        """Take GM sections out of an HTML block: under HTML headings, and from a line
        reading as a GM heading in Markdown (`## GM` inside a `<div>`: text to CommonMark,
        a heading to Pandoc and to the author)."""
        # `> <div>`, `> GM`, `---` (or `===`): the block ends before the lazy line to
        # markdown-it, Pandoc's quote takes it, an underline there.
        line = self._gm_line_of_raw_block(token, token.content, in_html=True)
        if line is not None and self.cut_level is not None:
            self._cut_from(line[1])
            line = None
        rest = ""
        if line is not None:
            token.content, rest = token.content[: line[0]], token.content[line[0] :]
        self._cut_at_html_headings(token)
        if line is not None:
            self._cut_from(line[1])
            self.elements_in_cut.follow(_nesting_tags(rest), self.depth)

    def _continue_open_heading(self, text: str) -> None:
        """Let the text of a block (Markdown or HTML) up to its first heading tag decide a
        heading element left open before it; such a tag ends that element."""
        if self.open_heading is None:
            return
        before, ended = text_before_heading_tag(text)
        self._settle_open_heading(before)
        if ended:
            self.open_heading = None

    def _settle_open_heading(self, text: str) -> None:
        """Decide a heading element left open before `text` on the first line of `text`
        (nothing yet when `text` is blank); one naming a GM section starts it at its tag."""
        opened, line = self.open_heading, first_text_line(text)
        if opened is None or line is None:
            return
        self.open_heading = None
        if self.cut_level is None and (is_gm_heading_text(html_text(line)) or self._is_gm_heading(line)):
            self.cut_level = opened.level
            self.cut_footnote = footnote_of(self.state.env, opened.token.map)
            self.cut_depth = opened.depth
            before = opened.token.content[: opened.start]
            if opened.token.type == "fence":
                opened.token.content = _fence_content(before)
            else:
                opened.token.content = before if opened.token.type == "html_block" else before.rstrip()
            self.cut_after_open_heading.update(map(id, opened.since))

    def _is_closed_fence(self, token: Token) -> bool:
        assert token.map is not None
        start, end = token.map
        return end - start >= 2 and is_fence_closer(self.source_lines[end - 1], token.markup)

    def _keep_indented_code(self, token: Token) -> bool:
        """An indented code block is code, unless its first line is a GM container opener
        or GM heading indented by mistake (a tab before `:::gm`; `GM` over an underline
        line of the block, Pandoc's heading in a definition or list item indented four
        columns): then the block is that GM part's start: a container closed in it takes
        the lines up to its closer with it, one left open goes on after it."""
        content = token.content
        first_line = content.split("\n", 1)[0]
        heading = gm_heading_line("\n".join(content.split("\n", 2)[:2]))
        heading = heading if heading is not None and heading[0] == 0 else None
        heading = heading or self._gm_setext_over_code(token, first_line)
        if heading is not None:
            self.cut_level = heading[1]
            return False
        if container_opener(first_line.strip(" \t")):
            result = self._scan(content, self._raw_options(token, content))
            token.content = remove_ranges(content, result.removed)
            return not result.stack and bool(token.content.strip())
        if self._after_pandoc_item(token):
            return self._keep_pandoc_item_paragraphs(token)
        return True

    def _after_pandoc_item(self, token: Token) -> bool:
        """Whether indented code comes right after a paragraph holding a list or definition
        marker only Pandoc reads (`a)`, `(@)`, `:`, `~`): the item's later paragraphs,
        indented four columns, are Markdown to Pandoc."""
        assert token.map is not None
        line = token.map[0] - 1
        while line >= 0 and not without_container_prefix(self.source_lines[line]).strip():
            line -= 1
        while line >= 0 and (text := without_container_prefix(self.source_lines[line])).strip():
            if without_pandoc_prefix(text) != text:
                return True
            line -= 1
        return False

    def _keep_pandoc_item_paragraphs(self, token: Token) -> bool:
        """Indented code read as a Pandoc item's later paragraphs, which may hold GM parts
        (`Term`, `:   x`, blank line, `    <!-- y -->`: Pandoc writes the comment raw, and
        a GM heading there starts a section): the code up to the first of them is kept."""
        result = self._scan(token.content, self._raw_options(token, token.content))
        content = remove_ranges(token.content, result.removed)
        # Over the underline after the block too (`    GM`, then `---` outside the item:
        # Pandoc's item takes it lazily).
        heading = None if result.stack else self._gm_line_of_raw_block(token, content)
        if heading is not None:
            self._cut_from(heading[1])
            content = content[: heading[0]].rstrip("\n") + "\n"
        token.content = content
        return bool(content.strip())

    def _gm_setext_over_code(self, token: Token, line: str) -> tuple[int, int] | None:
        """A GM heading in a one-line indented code block right over a setext underline:
        Pandoc tries a setext heading before indented code (`    GM`, `===` is a heading
        there; code, then a paragraph or a rule to CommonMark)."""
        assert token.map is not None
        first, end = token.map
        if end - first != 1 or end >= len(self.source_lines):
            return None
        underline = setext_underline(after_quote_markers(self.source_lines[end]).lstrip(" \t"))
        return None if underline is None else gm_heading_line(f"{line.strip()}\n{underline}")

    def _cut_unclosed_fence(self, token: Token) -> None:
        """A fence never closed runs to the end of its container as code, but its author
        may have forgotten to close it before a GM part: from the first GM-only form in
        it (opener, GM heading line or GM heading element) on, its content is removed."""
        content = token.content
        result = self._scan(content, self._raw_options(token, content))
        cut = min((start for start, _ in result.removed), default=len(content))
        headings = [(heading.start, heading.level) for heading, verdict in judged_html_headings(content) if verdict]
        # A fence in a quote (`> ~~~`, `> GM`, `---` or `===`) ends with it, before the
        # lazy line that underlines `GM` once the forgotten closing fence is put back.
        line = self._gm_line_of_raw_block(token, content, after_any_line=True)
        heading = min(headings + ([line] if line is not None else []), default=None)
        if heading is not None and heading[0] < cut:
            cut = heading[0]
            self.cut_level = heading[1]
        kept = content[:cut]
        token.content = kept if not kept or kept.endswith("\n") else kept.rstrip(" \t") + "\n"

    def _at_depth(self, frame: Frame) -> Frame:
        """A region left open by a removed block, read at the quotes and list items around
        the block: its block rule scanned it at depth 0, so a container opened in `> :::gm`
        is closed by a `> :::` in a later quote as by one in its own."""
        if frame.kind is not FrameKind.CONTAINER:
            return frame
        return replace(frame, markers=frame.markers + self.depth)

    def _read_dropped(self, text: str, *, mid_row: bool) -> None:
        """Text the parser dropped: never published, but its openers and GM headings
        (Markdown or HTML) count. Cells beyond a table's header (`mid_row`, one a line)
        are read both at a line's start and after the pipe they follow, and the reading
        leaving more regions open wins: `:::gm` there opens, `:::` there closes nothing.
        Table rows in text nested too deep are read as written and one cell a line."""
        stack, held, kept, scanned = self._dropped_reading(text)
        other = _other_dropped_reading(text, mid_row=mid_row)
        if other != text:
            # The other reading starts from the regions open before the text too: the first
            # one's changes are set aside (not the whole stack copied), and put back if it wins.
            first = stack[scanned.unchanged :]
            restore(scanned)
            other_stack, other_held, other_kept, other_scanned = self._dropped_reading(other)
            if len(other_stack) > scanned.unchanged + len(first):
                stack, held, kept = other_stack, other_held, other_kept
            else:
                stack = restore(other_scanned)
                del stack[scanned.unchanged :]
                stack.extend(first)
        self.stack, self.held = stack, held
        self._continue_open_heading(kept)
        for block in (kept, *dropped_blocks(kept)):
            for heading, verdict in judged_html_headings(block):
                if verdict:
                    self._cut_from(heading.level)
            line = gm_heading_line(block)
            if line is not None:
                self._cut_from(line[1])

    def _dropped_reading(self, text: str) -> tuple[list[Frame], int, str, ScanResult]:
        """The regions open after dropped `text`, how many of them are held, the text kept
        of it, and the scan of it (which changed `stack` in place). A line that
        removing a part glued into a GM container's opening line (a cell beyond the
        header `%% x %%:::gm`) opens the container there, as a paragraph's line does
        (`_open_glued_containers`)."""
        result = scan(text, self.stack, self._dropped_options(text))
        kept = remove_ranges(text, result.removed)
        glued = _scan_glued_container(kept, self._dropped_options) if kept != text else None
        if glued is None:
            return result.stack, result.held, kept, result
        # Text kept means no region was open at some point of it: none is held.
        return glued.stack + result.stack, 0, remove_ranges(kept, glued.removed), result

    def _dropped_options(self, text: str) -> ScanOptions:
        return ScanOptions(
            fences=True,
            inert=_inert_test(text, raw_html=False),
            unrendered=_opened_before,
            depth=self.depth,
            held=self.held,
        )

    def _strip_inline(self, token: Token, parent: Token | None) -> None:
        is_heading = parent is not None and parent.type == "heading_open"
        setext = is_heading and parent is not None and parent.markup in ("=", "-")
        line_start = setext or (parent is not None and parent.type == "paragraph_open")
        in_cell = parent is not None and parent.type in _CELLS
        if self.stack or not opens_nothing(token.content):
            as_line = line_start or (in_cell and self.cells_read_as_lines and bool(self.stack))
            kept = self._scan_inline(token, as_line, in_cell=in_cell)
            if (line_start or in_cell) and kept != token.content.strip():
                # Something was removed: its removal may have glued an opening line (a
                # table row's cell is a line of the author's too: `%% x %%:::gm`).
                kept = self._open_glued_containers(kept, in_cell=in_cell)
        else:
            kept = token.content.strip()
        if parent is not None and parent is self.setext_after_cut:
            # `## GM`, blank line, `secret`, `Recap`, `=====`: CommonMark makes one heading
            # of both lines; the author wrote `Recap` as the heading after the GM part.
            # A GM heading among the lines before starts a section of its own, which the
            # heading after it is in, unless it is of a higher level.
            earlier, _, kept = kept.rpartition("\n")
            levels = self._gm_heading_levels(earlier)
            if levels:
                self._cut_from(min(levels))
                if self.cut_level is not None and self.cut_level < int(parent.tag[1:]):
                    token.content = ""
                    return
                self.cut_level = None
        self._continue_open_heading(kept)
        if is_heading and parent is not None and self._is_gm_heading(kept):
            self._cut_from(int(parent.tag[1:]), seen_by_pandoc=not self.heading_in_pandoc_text)
        # A GM heading markdown-it reads as the text of a paragraph, a setext heading or a
        # cell starts its section where it stands: `##` and a no-break space, or the
        # fullwidth forms of `## GM`, on any line (a heading to the author); and so does an
        # HTML heading element among any inline text, a heading's too (a heading in a
        # browser, which ends the heading around it).
        line = gm_heading_line(kept) if line_start or in_cell else None
        if setext and line is None and parent is not None:
            # Its underline ends the text of a GM heading among the lines after a
            # container's opening or closing line (`::: note`, `GM`, `---`: one heading to
            # markdown-it, a div holding a GM heading to Pandoc and markdown-it-container).
            line = gm_heading_line(f"{kept}\n{parent.markup * 3}")
            after = self._gm_line_read_alone(kept, parent.markup * 3) if line is None else None
            line = (after, int(parent.tag[1:])) if after is not None else line
        in_paragraph = parent is not None and parent.type == "paragraph_open"
        underline = self._lazy_underline_after(token) if in_paragraph and line is None else None
        if underline is not None:
            # A `---` line outside the quote or list item ends the paragraph as a thematic
            # break to markdown-it (`> GM`, `---`), but Pandoc's quotes and list items take
            # it lazily and read it as the paragraph's underline: a setext heading there.
            line = gm_heading_line(f"{kept}\n{underline}")
            level = 1 if underline == "===" else 2
            if line is None and self._is_gm_heading(kept):
                # Named once parsed, as Pandoc reads a heading's text (`> \[GM\] x`, `> GM&#58;`).
                line = (0, level)
            after = self._gm_line_read_alone(kept, underline) if line is None else None
            line = (after, level) if after is not None else line
        if in_paragraph and line is None and ("=" in kept or "-" in kept):
            line = self._parsed_gm_text_over_underline(kept, ("===",))
        found = [line] if line is not None else []
        judged = self._html_heading_to_judge(kept, in_cell=in_cell)
        if judged is not None and judged[1]:
            found.append((judged[0].start, judged[0].level))
        if self.cut_level is not None:
            # Hidden, but a GM heading of a higher level in it widens the section.
            for _offset, level in found:
                self._cut_from(level)
            if parent is not None and parent.type == "paragraph_open":
                self._follow_nesting(kept)
            token.content = ""
            return
        if judged is not None and judged[1] is None:
            self.open_heading = _OpenHeading(token, judged[0].start, judged[0].level, self.depth)
        if found:
            offset, level = min(found)
            self._cut_from(level)
            if parent is not None and parent.type == "paragraph_open":
                self._follow_nesting(kept[offset:])
            kept = kept[:offset].rstrip()
        token.content = kept

    def _follow_nesting(self, text: str) -> None:
        """Follow the containers and HTML elements a paragraph's `text` in the cut opens
        and closes; a tag in a code span or after a backslash is text."""
        self._follow_divs(text)
        tags = [tag for tag in _nesting_tags(text) if not escaped(text, tag.start)]
        if tags and "`" in text:
            in_code = self._code_to_every_reader(text)
            tags = [tag for tag in tags if not in_code(tag.start, -1)]
        self.elements_in_cut.follow(tags, self.depth)

    def _follow_divs(self, text: str) -> None:
        """Open and close ordinary containers (`divs_in_cut`) at the `:::` lines of a
        paragraph's `text` in the cut. A closing line ends the innermost only with as
        many colons (markdown-it-container) and no deeper in quotes and list items than
        its opening line (`> :::` under `::: box` is inside it)."""
        for line in text.split("\n"):
            found = container_line(line)
            if found is None:
                continue
            colons, closes = found
            if not closes:
                self.divs_in_cut.append((colons, self.depth))
            elif self.divs_in_cut and colons >= self.divs_in_cut[-1][0] and self.depth <= self.divs_in_cut[-1][1]:
                self.divs_in_cut.pop()

    def _open_glued_containers(self, kept: str, *, in_cell: bool) -> str:
        """`kept` without a GM container whose opening line removing a part glued
        together (`%% x %%:::gm`, `:::g<!-- x -->m`): the line reads as one once the part
        is gone, and so it opens one here, as it would when the output is read again."""
        result = _scan_glued_container(kept, self._glued_inline_options)
        if result is None:
            return kept
        # What opened later in the token (and ran to its end) stays above the container.
        # Text kept means no region was open at some point of it: none is held.
        self.stack, self.held = result.stack + self.stack, 0
        self.cells_read_as_lines = self.cells_read_as_lines or (in_cell and bool(result.stack))
        return remove_ranges(kept, result.removed).strip()

    def _glued_inline_options(self, kept: str) -> ScanOptions:
        """How to scan an inline token's kept text for a glued container: with its code
        spans, at the block's depth as its other lines are (a closer in a later block of
        the same quote or list item closes it)."""
        _, code = _parse_inline(self.state.md, kept, self.block_references)
        return ScanOptions(
            code=code,
            raw_code=_raw_html_spans(kept, code),
            escapes=True,
            inert=_inert_test(kept, raw_html=False),
            depth=self.depth,
        )

    def _scan_inline(self, token: Token, line_start: bool, *, in_cell: bool) -> str:
        """The content of an inline token without its GM-only ranges."""
        code: list[tuple[int, int]] = []
        if "`" in token.content:
            known = self.code_spans.spans.get(token.content)
            if known is None:
                children, code = _parse_inline(self.state.md, token.content, self.block_references)
                self.code_spans.spans[token.content] = code
                self.parsed_inline[id(token)] = (token.content, children)
            else:
                code = known
            code = _code_no_reader_splits(token.content, code, in_cell=in_cell)
        rest_of_closing_line = self._rest_of_closing_line(token)
        result = self._scan(
            token.content,
            ScanOptions(
                code=code,
                raw_code=_raw_html_spans(token.content, code),
                escapes=True,
                raw_html=rest_of_closing_line,
                line_start=line_start,
                inert=self.source_inert.test_for(token.map, token.content, _inert_test(token.content, raw_html=False)),
                opened_outside_cell=self.opened_before_table if in_cell else 0,
                in_cell=in_cell,
                depth=self.depth,
                lazy_lines=self._lazy_lines(token) if self.depth and not in_cell else frozenset(),
                footnotes=self._footnote_spans(token, token.content, rest_of_closing_line),
                held=self.held,
                source=self._source_view(token.map, token.content),
            ),
        )
        return remove_ranges(token.content, result.removed).strip()

    def _gm_line_of_raw_block(
        self, token: Token, content: str, *, in_html: bool = False, after_any_line: bool = False
    ) -> tuple[int, int] | None:
        """(offset, level) of the first line of a raw block's `content` (an HTML block's, a
        fence's never closed) reading as a GM heading: raw (`gm_heading_line`, read as
        `in_html` and `after_any_line` say), over the lazy underline after the block, or
        named so once parsed; None when none does."""
        line = gm_heading_line(content, in_html=in_html, after_any_line=after_any_line)
        underline = self._lazy_underline_after(token) if line is None else None
        with_underline = content.removesuffix("\n") + "\n" + (underline or "")
        if underline is not None:
            line = gm_heading_line(with_underline, in_html=in_html, after_any_line=after_any_line)
        return self._parsed_gm_line_over_underline(with_underline) if line is None else line

    def _lazy_underline_after(self, token: Token) -> str | None:
        """`---` or `===` when the source line right after a block is a run of dashes or
        equals signs that may be a setext underline of its last lines, else None:
        markdown-it ended the block there, so that line stands outside the quote or list
        item the block is in (once its quote markers are removed, a line that is no list
        item's: `- ---` is one), where Pandoc takes it lazily."""
        if token.map is None or token.map[1] >= len(self.source_lines):
            return None
        line = after_quote_markers(self.source_lines[token.map[1]])
        if footnote_at(self.state.env, token.map[1]) is not None:
            # A GM footnote's continuation line, read at the footnote's margin (`[^1]: x`,
            # `    - GM`, `    ---`): re-marked four columns left, its source is not (nor
            # the margin of a list item or quote the footnote is in).
            line = line.lstrip(" \t")
        return setext_underline(line)

    def _parsed_gm_text_after_container_line(self, text: str) -> int | None:
        """The offset in a paragraph's `text` of its lines after its last container
        opening or closing line when they name GM once parsed (`::: note`, `G&#77;`, then
        an underline: a heading in a div to Pandoc), None otherwise."""
        offset, start = 0, None
        for line in text.split("\n"):
            offset += len(line) + 1
            if container_line(line) is not None:
                start = offset
        if start is None or start >= len(text) or not PARSED_TEXT_MAY_DIFFER.search(text, start):
            return None
        return start if self._is_gm_heading(text[start:]) else None

    def _parsed_gm_line_over_underline(self, text: str) -> tuple[int, int] | None:
        """(offset, level) of the first line of raw `text` (an HTML block's, a fence's
        never closed) that names GM only once parsed (`G&#77;`, `\\[GM\\] x`, `<b>GM</b>`)
        right over a `---` or `===` line, None when there is none: Pandoc reads the
        Markdown in a `<div>`, and a fence never closed is none to it, so the two lines
        are a heading there, whose text it reads parsed (raw names are `gm_heading_line`'s),
        in a quote or list item too (`> G&#77;`, `> ---`), as `gm_heading_line` reads them."""
        offset = 0
        above: tuple[int, str] | None = None
        for written in text.split("\n"):
            line = without_container_prefix(written)
            underline = setext_underline(line.lstrip(" \t"))
            if (
                underline is not None
                and above is not None
                and PARSED_TEXT_MAY_DIFFER.search(above[1])
                and self._is_gm_heading(above[1].strip(" \t"))
            ):
                return above[0], 1 if underline == "===" else 2
            above = (offset, line) if line.strip(" \t") else None
            offset += len(written) + 1
        return None

    def _parsed_gm_text_over_underline(self, text: str, underlines: tuple[str, ...]) -> tuple[int, int] | None:
        """(offset, level) of the lines of a paragraph's `text` over an underline in it of
        one of the kinds `underlines` that name GM once parsed, None when none do: over
        `===`, a lazy line of a quote or list item (`- G&#77;`, `===`), paragraph text to
        markdown-it; over either, a GFM table's rows without a pipe (`| a |`, `|---|`,
        `G&#77;`, `---`), which end a Pandoc pipe table. Both are the underline of a
        heading whose text Pandoc reads parsed (raw names are `gm_heading_line`'s); so is
        `---`, an indented one to markdown-it, after a definition's first line (`Term`,
        `:   G&#77;`, `    ---`): Pandoc reads the definition's text four columns left."""
        start = offset = 0
        in_definition = False
        for line in text.split("\n"):
            underline = setext_underline(line.lstrip(" \t"))
            in_definition = in_definition or DEFINITION_MARKER.match(line) is not None
            if underline in underlines or (underline == "---" and in_definition):
                level = 1 if underline == "===" else 2
                segment = text[start : offset - 1] if start < offset else ""
                if segment and self._is_gm_heading(segment):
                    return start, level
                after = self._parsed_gm_text_after_container_line(segment) if segment else None
                if after is not None:
                    return start + after, level
                start = offset + len(line) + 1
                in_definition = False
            offset += len(line) + 1
        return None

    def _gm_line_read_alone(self, text: str, underline: str) -> int | None:
        """The offset of a line of a heading's or paragraph's `text` over `underline` that
        Pandoc reads as a GM heading of its own (after a container's line, or after the
        rows of a block only Pandoc reads), None if there is none."""
        after = self._parsed_gm_text_after_container_line(text)
        return after if after is not None else self._gm_line_after_pandoc_rows(text, underline)

    def _gm_line_after_pandoc_rows(self, text: str, underline: str) -> int | None:
        """The offset of the last line of a paragraph's `text` over `underline` when that
        line alone names GM and the line above it may end a Pandoc block that needs no
        blank line after it, None otherwise: a pipe table's header or separator row
        (`| a | b |`, `|---+---|`, or a separator of fewer cells than the header: no GFM
        table), a grid table's border (`+---+`) or a line block's line (`| a`). Those
        blocks end at the first line that is none of their rows, and Pandoc reads that
        line as a block of its own, a setext heading over an underline (`GM`, `===`);
        to markdown-it all the lines are one paragraph, the heading `| a GM`."""
        above, newline, last = text.rpartition("\n")
        if not newline or _pipeless(last) is None or not _may_end_pandoc_rows(above.split("\n")):
            return None
        if gm_heading_line(f"{last}\n{underline}") is None and not self._is_gm_heading(last):
            return None
        return len(above) + 1

    def _definition_as_gm_heading(self, token: Token) -> int | None:
        """The level of the GM heading a link reference definition's first line is to
        Pandoc when a run of dashes or equals signs follows it (`[GM]: /u`, `---`, in the
        quote or list item or lazily after it; `[GM]:`, `---`, which markdown-it reads as
        a definition of `---`): Pandoc tries setext headings before definitions, and the
        heading's text `[GM]: /u` begins with `[GM]`. None otherwise."""
        assert token.map is not None
        after = token.map[0] + 1
        if after >= len(self.source_lines):
            return None
        # Indented past the margin too: the margin of the list item it is in may be wider.
        underline = setext_underline(after_quote_markers(self.source_lines[after]).lstrip(" \t"))
        if underline is None:
            return None
        # A footnote's text from its label on (`[^1]: [GM]: /u`, re-marked when it holds a GM
        # part); the line's indentation first, which may pass three columns (the margin of a
        # nested list item, or of a footnote's continuation line).
        first_line = footnote_text(self.source_lines[token.map[0]]).lstrip(" \t")
        text = without_container_prefix(first_line).strip(" \t")
        # Its label is no link there (the line defines nothing to Pandoc), so no reference
        # is known: `[G&#77;]: /u` reads `[GM]: /u`.
        if not names_gm_once_parsed(self.state.md, text, {}):
            return None
        return 1 if underline == "===" else 2

    def _lazy_lines(self, token: Token) -> frozenset[int]:
        """Offsets in a paragraph's content of its lazy continuation lines: those whose
        source line shows fewer quote markers than its first line, or starts left of
        where its first line's text does (CommonMark lets only a paragraph's continuation
        text stand outside the quotes and list items it is in)."""
        if token.map is None:
            return frozenset()
        lines = token.content.split("\n")
        source = self.source_lines[token.map[0] : token.map[0] + len(lines)]
        if len(source) != len(lines):
            return frozenset()
        first_quotes, first_column = _written_depth(source[0])
        lazy: set[int] = set()
        offset = len(lines[0]) + 1
        for line, written in zip(lines[1:], source[1:], strict=True):
            quotes, column = _written_depth(written)
            if quotes < first_quotes or (quotes == first_quotes and column < first_column):
                lazy.add(offset)
            offset += len(line) + 1
        return frozenset(lazy)

    def _gm_heading_levels(self, text: str) -> list[int]:
        """Levels of the GM headings written among the lines of a paragraph's `text`."""
        line = gm_heading_line(text)
        judged = self._html_heading_to_judge(text)
        levels = [line[1]] if line is not None else []
        return levels + ([judged[0].level] if judged is not None and judged[1] else [])

    def _html_heading_to_judge(self, text: str, *, in_cell: bool = False) -> tuple[HtmlHeading, bool | None] | None:
        """The first heading element in inline Markdown `text` that names a GM section
        (`<h2>GM notes</h2>`: True) or is left open with no text after it (None), with
        that verdict; None when there is none. One inside a code span (but Pandoc's raw
        HTML), or whose `<` is escaped, is text."""
        if "<" not in text:
            return None
        candidates = [(heading, verdict) for heading, verdict in judged_html_headings(text) if verdict is not False]
        if candidates and "`" in text:
            # Opened "before the text" (-1): a heading element is text anywhere in a code span.
            in_code = self._code_to_every_reader(text, in_cell=in_cell)
            candidates = [(heading, verdict) for heading, verdict in candidates if not in_code(heading.start, -1)]
        return next(((heading, verdict) for heading, verdict in candidates if not escaped(text, heading.start)), None)

    def _code_to_every_reader(self, text: str, *, in_cell: bool = False) -> InertTest:
        """Where inline Markdown `text` is code to every reader: in a code span, but for
        those Pandoc writes as raw HTML (`` `<h2>GM</h2>`{=html} ``: a heading there)."""
        code = _parse_inline(self.state.md, text, self.block_references)[1]
        code = _code_no_reader_splits(text, code, in_cell=in_cell)
        raw = set(_raw_html_spans(text, code))
        return spans_test([span for span in code if span not in raw])

    def _is_gm_heading(self, content: str) -> bool:
        # `## **GM notes**` and `## \[GM\] plot` count as much as `## GM notes`.
        return names_gm_once_parsed(self.state.md, content, self.block_references)


def _scan_glued_container(kept: str, options_for: Callable[[str], ScanOptions]) -> ScanResult | None:
    """The scan of `kept` (a block's text once parts are removed) from its first line that
    reads as a GM container's opening line, None when none does (markdown-it took any such
    line of its source for one already): the removal glued that line together, and it opens
    the container there, up to its closer, nesting what opens after it."""
    offset = 0
    for line in kept.split("\n"):
        if container_opener(line.lstrip(" \t"), look_alike_markers=True):
            return scan(kept, [], options_for(kept), offset)
        offset += len(line) + 1
    return None


# Pandoc's raw attribute naming HTML (`{=html}`, `{ =html5 }`): after a fence's opening
# marker, a raw HTML block; right after a code span (`` `<!--`{=html} ``), raw inline HTML.
# Pandoc allows no space between `=` and the format; one is read as raw all the same, the
# side that hides.
_RAW_HTML_ATTRIBUTE = re.compile(r"\{[ \t]*=[ \t]*html[45]?[ \t]*\}", re.IGNORECASE)
_RAW_HTML_INFO = re.compile(rf"[ \t]*{_RAW_HTML_ATTRIBUTE.pattern}[ \t]*", re.IGNORECASE)


def _fence_content(text: str) -> str:
    """A fence's `text` cut short (at a heading element of its raw HTML) as its lines: what
    is left of a line cut in the middle ends with it, as every line of a fence does."""
    return text if not text or text.endswith("\n") else text + "\n"


def _raw_html_spans(content: str, code: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code spans of `content` that Pandoc writes as raw HTML: those its raw attribute
    naming HTML follows."""
    return [span for span in code if _RAW_HTML_ATTRIBUTE.match(content, span[1])]


def _public_info(info: str) -> str:
    """A fence's info string without its GM parts (`js <!-- x -->`, `js %% x`): a browser
    shows no more of it than a class, but the Markdown served carries it all. A part
    opened there ends with it: the lines after are code."""
    if opens_nothing(info):
        return info
    removed = scan(info, [], ScanOptions(line_start=False)).removed
    return remove_ranges(info, removed).strip() if removed else info


def _opened_before(at: int, opened_at: int) -> bool:
    """In dropped text, whatever opened before it (in an earlier text)."""
    return opened_at < 0


# A GFM table's delimiter row (`|---|:-:|`, `--|--`).
_DELIMITER_ROW = re.compile(r"^[ \t]*(?:\|[ \t]*)?:?-+:?(?:[ \t]*\|[ \t]*:?-+:?)*(?:[ \t]*\|)?[ \t]*$", re.M)
# A pipe and the run of backslashes right before it (the run read from its start).
_PIPE_AFTER_BACKSLASHES = re.compile(r"(?<!\\)(\\*)\|")


def _code_no_reader_splits(text: str, code: list[tuple[int, int]], *, in_cell: bool) -> list[tuple[int, int]]:
    r"""The code spans of inline `text` that no reader splits into table cells. GFM
    readers split a row into cells before reading code spans, and differ on `\\|`:
    markdown-it reads an escaped pipe (a cell's text `\|`), Pandoc's commonmark and gfm
    readers an escaped backslash and a separator (`| `x \\| <!-- y --> z` |` is a code
    span to markdown-it, a comment in the second cell to them). So in a cell a pipe after
    an odd run of backslashes may end the cell; in a paragraph over a delimiter row (no
    table to markdown-it, whose header row counts fewer cells: `| a \\| b |`, `|---|---|`)
    any pipe after an even run may."""
    if not code or "|" not in text or not (in_cell or _DELIMITER_ROW.search(text)):
        return code
    odd = 1 if in_cell else 0
    splits = [match.end() - 1 for match in _PIPE_AFTER_BACKSLASHES.finditer(text) if len(match.group(1)) % 2 == odd]
    return [(start, end) for start, end in code if not any_in(splits, start, end)]


def _inert_test(text: str, *, raw_html: bool) -> InertTest:
    """Where a closer in a block's `text` might not be markup: raw HTML (an HTML block's
    text) or Markdown text, where a tag or a script is one only if it ends."""
    return inert_spans(text, None if raw_html else _in_markdown_text).inert


def _in_markdown_text(position: int) -> bool:
    return False


def _other_dropped_reading(text: str, *, mid_row: bool) -> str:
    """Dropped `text` as it may also be read: cells beyond a header (one a line) each after
    its pipe; table rows nested too deep one cell a line."""
    if mid_row:
        return "|" + text.replace("\n", "\n|")
    return cells_one_a_line(text) if "|" in text else text


def source_view_of(source: SourceInert, position: Callable[[int], int | None]) -> SourceView:
    """The whole source, with where a scanned text's offsets stand in it."""
    return SourceView(source.source, position, source.last_html_closer, source.backtick_runs)


def source_inert_of(state: StateBlock | StateCore) -> SourceInert:
    """The inert places of the whole source, found once per document."""
    source: SourceInert | None = state.env.get(_SOURCE_INERT_ENV_KEY)
    if source is None:
        source = state.env[_SOURCE_INERT_ENV_KEY] = SourceInert(state.src)
    return source


def _prune(tokens: list[Token]) -> list[Token]:
    """Drop the containers the removal left empty, keeping open/close tokens balanced.

    Table cells are never dropped alone (a row keeps its shape): a body row whose cells
    are all empty goes, and a table with neither body nor header text goes.
    """
    out: list[Token] = []
    opened: list[int] = []
    for token in tokens:
        if token.nesting == 1:
            opened.append(len(out))
            out.append(token)
        elif token.nesting == -1:
            start = opened.pop()
            parent = out[opened[-1]].type if opened else ""
            if _is_empty(out[start].type, parent, out[start + 1 :]):
                del out[start:]
            else:
                out.append(token)
        else:
            out.append(token)
    return out


def _is_empty(kind: str, parent: str, inner: list[Token]) -> bool:
    def no_text() -> bool:
        return all(not token.content.strip() for token in inner if token.type == "inline")

    if kind in ("th_open", "td_open", "thead_open"):
        return False
    if kind == "tr_open":
        return parent == "tbody_open" and no_text()
    if kind == "table_open":
        return not any(token.type == "tbody_open" for token in inner) and no_text()
    return all(token.type == "inline" and not token.content.strip() for token in inner)


_LIST_ITEM_PREFIX = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$))*[ \t]*")


def _written_depth(line: str) -> tuple[int, int]:
    """A source line's quote markers and the column where its text starts after them
    (and after any list markers), tabs expanded."""
    quotes = QUOTE_PREFIX.match(line)
    assert quotes is not None  # the pattern matches the empty string
    rest = line[quotes.end() :]
    items = _LIST_ITEM_PREFIX.match(rest)
    assert items is not None
    return quotes.group().count(">"), len(rest[: items.end()].expandtabs(4))


def _pipeless(line: str) -> bool | None:
    """Whether a table's body row (a source line) surely is no row of a Pandoc pipe table,
    None when it surely is one, False when it may be either: Pandoc's rows need a pipe
    that starts the row or one outside what it reads whole (`GM `|``, `===`: a code span's
    pipe separates no cells, the table ends there and `GM` is a heading)."""
    text = without_container_prefix(line).lstrip(" \t")
    if text.startswith("|"):
        return None
    unescaped = _ESCAPED.sub("", text)
    if "|" not in unescaped:
        return True
    outside = _SIMPLE_ROW_CHUNK.sub("", unescaped)
    if "|" in outside and not any(start in outside for start in _ROW_CHUNK_STARTS):
        return None
    return False


# A Pandoc pipe table's separator row, whose cells a `+` may join too (`|---+:-:|`).
_PANDOC_SEPARATOR_ROW = re.compile(r"[ \t]*(?:\|[ \t]*)?:?-+:?(?:[ \t]*[|+][ \t]*:?-+:?)*(?:[ \t]*\|)?[ \t]*")


def _may_end_pandoc_rows(lines: list[str]) -> bool:
    """Whether a paragraph's `lines` may end with the rows of a Pandoc block that the next
    line ends: a grid table's border (`+---+`), a line block (`| a`, every line starting
    with a pipe), or a pipe table's row under a separator row (`| a | b |`, `|---+---|`)."""
    last = lines[-1].lstrip(" \t")
    if last.startswith("+") or all(line.lstrip(" \t").startswith("|") for line in lines):
        return True
    return "|" in last and any("|" in line and _PANDOC_SEPARATOR_ROW.fullmatch(line) for line in lines)


def _first_blank_line(text: str) -> int:
    """Where `text`'s first blank line (spaces and tabs at most) starts; its length if none."""
    blank = _BLANK_LINE.search(text)
    return len(text) if blank is None else blank.start()

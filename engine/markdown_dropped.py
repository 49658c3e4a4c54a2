"""Text markdown-it parses and then drops, handed to the GM stripper instead of lost.

markdown-it leaves two kinds of source out of its token stream: the cells of a table row
beyond the header's count, and whatever is nested deeper than its `maxNesting` option.
An opener written there would never reach the stripper while its body, outside the
dropped part, would be published. These block rules make every such part a
`DROPPED_TEXT` token holding its raw text, in document order: the stripper reads it for
openers and GM headings and never publishes it (contract section 6: whatever cannot be
parsed reliably is removed, never published as content of a removed part).

Relies on markdown-it-py's GFM table rule and its `escapedSplit` (how it cuts a row into
cells); tests/engine/test_markdown_dropped.py fails if either changes behaviour.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim
from markdown_it.rules_block import StateBlock
from markdown_it.rules_block.table import escapedSplit, table
from markdown_it.token import Token

from engine.markdown_text import THEMATIC_BREAK, fold_lookalikes

DROPPED_TEXT = "gm_dropped_text"
# Container rules below this level cannot open a block whose content markdown-it drops:
# a list at level maxNesting - 2 opens its item at maxNesting - 1, whose content is
# still parsed. Deeper blocks are taken whole by `_too_deep_rule`.
_NESTING_MARGIN = 2
# Quote and list markers starting a line, any number of columns in: text cut out of deep
# nesting keeps the indentation of the items nested in it (`    - ## GM`).
_NESTED_MARKERS = re.compile(r"[ \t]*(?:(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))[ \t]*)+")
_LIST_MARKER = re.compile(r"[-+*]|\d")


def dropped_parts_plugin(md: MarkdownIt) -> None:
    first_rule = md.block.ruler.get_all_rules()[0]
    md.block.ruler.before(first_rule, "gm_too_deep", _too_deep_rule)
    md.block.ruler.at("table", _table_rule, {"alt": ["paragraph", "reference"]})


def _too_deep_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    if state.level < state.md.options.maxNesting - _NESTING_MARGIN:
        return False
    if silent:
        return True
    # The block runs as far as markdown-it's own loop would go: to the first line
    # indented less than the enclosing block (the end of a list item), blank lines aside,
    # unless that line continues the paragraph before it lazily: left out, it would be
    # parsed again outside the nesting and published (`> > … > GM`, `==`, `secret`).
    last = start_line
    for line in range(start_line, end_line):
        if state.isEmpty(line):
            continue
        if state.sCount[line] < state.blkIndent and not (line == last + 1 and _continues_lazily(state, line, end_line)):
            break
        last = line
    token = state.push(DROPPED_TEXT, "", 0)
    token.map = [start_line, last + 1]
    token.content = state.getLines(start_line, last + 1, state.blkIndent, False)
    state.line = last + 1
    return True


def dropped_from_level(md: MarkdownIt) -> int:
    """The nesting level from which markdown-it drops a block (`_too_deep_rule` takes it)."""
    return int(md.options.maxNesting) - _NESTING_MARGIN


# One quote or list marker of a line's prefix, with the indentation before it.
_PREFIX_MARKER = re.compile(r"[ \t]*(>|[-+*](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))")
# A thematic break from a list marker's place on: `* * * * * * * * * *` is no ten items.
_THEMATIC_BREAK = re.compile(rf"[ \t]*{THEMATIC_BREAK}")
# Open quotes and list items as a line leaves them: (the column their content starts at,
# the nesting level inside), outermost first.
_Nesting = list[tuple[int, int]]


def maybe_dropped_spans(text: str, level: int, limit: int) -> list[tuple[int, int]]:
    """Runs of raw `text` (lines of a block at nesting `level`) that markdown-it may drop
    as nested `limit` levels deep or more, read before any parse, as an upper bound: a
    line whose markers, with the items its indentation places it in, could nest it that
    deep (a quote one level, a list item two), and the lines after it up to a blank one,
    which may continue its paragraph lazily. Text without markers nests in nothing (an
    HTML block indented however deep). A closer there may not be markup."""
    spans: list[tuple[int, int]] = []
    position = 0
    run_start: int | None = None
    nesting: _Nesting = []
    in_paragraph = False
    for line in text.split("\n"):
        if not line.strip(" \t"):
            if run_start is not None:
                spans.append((run_start, position))
                run_start = None
            in_paragraph = False
        else:
            depth, nesting = _nested(line.expandtabs(4), nesting, lazy=in_paragraph, deepest=limit - level)
            if run_start is None and depth >= limit - level:
                run_start = position
            in_paragraph = True
        position += len(line) + 1
    if run_start is not None:
        spans.append((run_start, len(text)))
    return spans


def _nested(line: str, nesting: _Nesting, *, lazy: bool, deepest: int) -> tuple[int, _Nesting]:
    """The level of `line`'s text and the nesting it leaves: its indentation keeps the
    items whose content it reaches (all of them on a line that may continue a paragraph
    lazily), and its markers open more, read up to level `deepest` (so that a line of
    thousands of markers costs no more to the lines after it than one of `deepest`)."""
    indentation = len(line) - len(line.lstrip(" "))
    marker = _PREFIX_MARKER.match(line)
    if marker is None and lazy:
        return (nesting[-1][1] if nesting else 0), nesting
    kept = [entry for entry in nesting if entry[0] <= indentation]
    depth = kept[-1][1] if kept else 0
    while marker is not None and depth < deepest:
        if marker.group(1) != ">" and _THEMATIC_BREAK.match(line, marker.start()):
            break
        depth += 1 if marker.group(1) == ">" else 2
        kept.append((marker.end() + 1, depth))
        marker = _PREFIX_MARKER.match(line, marker.end())
    return depth, kept


def _continues_lazily(state: StateBlock, line: int, end_line: int) -> bool:
    """Whether `line`, right after a line of the dropped block, may be a lazy continuation
    of a paragraph there: a quote marked it so, or no block that ends a paragraph starts
    on it (markdown-it's paragraph rule; a block other than a paragraph before it only
    makes the dropped part longer, which publishes nothing)."""
    if state.sCount[line] < 0:
        return True
    parent_type = state.parentType
    state.parentType = "paragraph"
    try:
        return not any(rule(state, line, end_line, True) for rule in state.md.block.ruler.getRules("paragraph"))
    finally:
        state.parentType = parent_type


def dropped_blocks(text: str) -> list[str]:
    """The lines of dropped `text`, look-alikes folded, flush left without their quote and
    list markers, grouped by the block each starts: a list item, or a quote deeper or
    shallower than the line before. A GM heading there reads as one however deep it is
    nested (a setext one's text runs from its block's start, not from the items before).
    Then the cells of the table rows among them, one by one."""
    blocks: list[list[str]] = [[]]
    quotes = 0
    for line in fold_lookalikes(text).split("\n"):
        prefix = _NESTED_MARKERS.match(line)
        if prefix is None:
            # A lazy continuation line, or one indented inside its item.
            blocks[-1].append(line.lstrip(" \t"))
            continue
        if _LIST_MARKER.search(prefix.group()) or prefix.group().count(">") != quotes:
            blocks.append([])
        quotes = prefix.group().count(">")
        blocks[-1].append(line[prefix.end() :])
    lines = [line for block in blocks for line in block]
    return ["\n".join(block) for block in blocks] + _table_cells(lines)


def cells_one_a_line(text: str) -> str:
    """`text` with each line holding a pipe cut into its cells, one a line, trimmed: the
    rows of a table nested too deep, each cell read as a cell beyond a header is."""
    return "\n".join("\n".join(_table_cells([line])) if "|" in line else line for line in text.split("\n"))


def _table_cells(lines: list[str]) -> list[str]:
    """Every piece between pipes of `lines`, trimmed: the cells of a table nested too deep,
    each read as a cell's text is (`| c | ## GM |`). A pipe that markdown-it would not cut
    at (escaped, in code) only gives more pieces to read."""
    return [cell.strip(" \t") for line in lines if "|" in line for cell in line.split("|")]


def _table_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    first_token = len(state.tokens)
    if not table(state, start_line, end_line, silent):
        return False
    if not silent:
        state.tokens[first_token:] = _with_dropped_cells(state, state.tokens[first_token:])
    return True


def _with_dropped_cells(state: StateBlock, tokens: list[Token]) -> list[Token]:
    """The table's tokens, with a DROPPED_TEXT token closing each row that has cells
    beyond the header's count, holding those cells as written."""
    columns = sum(1 for token in tokens if token.type == "th_open")
    out: list[Token] = []
    in_body = False
    for token in tokens:
        in_body = in_body or token.type == "tbody_open"
        if in_body and token.type == "tr_close" and out and out[-1].type == "td_close":
            row_open = next(t for t in reversed(out) if t.type == "tr_open")
            assert row_open.map is not None
            extra = _cells_beyond(state, row_open.map[0], columns)
            if extra:
                dropped = Token(DROPPED_TEXT, "", 0)
                dropped.map = list(row_open.map)
                dropped.content = extra
                dropped.meta = {"mid_row": True}
                out.append(dropped)
        out.append(token)
    return out


def _cells_beyond(state: StateBlock, line: int, columns: int) -> str:
    """The text of the cells of row `line` past the first `columns`, split as markdown-it
    does, one cell a line: each is read as a cell's text is, `:::gm` in any of them too."""
    text = mdTrim(state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]])
    cells = escapedSplit(text)
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    return "\n".join(cells[columns:])

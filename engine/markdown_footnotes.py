"""Footnotes holding a GM part, read as Pandoc and Obsidian read them (contract section 6).

markdown-it here knows no footnotes: `[^1]: GM`, `    ===` is a link reference definition
and indented code to it, but a GM heading in the footnote to Pandoc and Obsidian. So a
footnote holding a GM part is re-marked to be read at its margin, and the other GM rules
take it from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from functools import partial
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

from engine.markdown_headings import gm_heading_line, last_text_lines, names_gm_once_parsed
from engine.markdown_regions import container_opener
from engine.markdown_text import (
    CONTAINER_PREFIX,
    FOOTNOTE_LABEL,
    after_quote_markers,
    setext_underline,
    without_container_prefix,
)

# A footnote definition's label after the quote markers before it.
_QUOTED_FOOTNOTE_LABEL = re.compile(rf"^([ \t>]*){FOOTNOTE_LABEL.pattern}")


def footnote_text(source: str) -> str:
    """A definition's source without a footnote label: `[^1]: :::gm` is a link reference
    definition to CommonMark, but a footnote to Pandoc and Obsidian, whose text is read as
    blocks (a GM container's opening line there opens it)."""
    return _QUOTED_FOOTNOTE_LABEL.sub(r"\1", source, count=1)


# Labels of footnotes defined in a footnote's text, and the quote markers before them.
_NESTED_LABELS = re.compile(rf"^(?:[ \t>]*{FOOTNOTE_LABEL.pattern})*[ \t>]*")

# Labels of footnotes defined on a footnote's continuation line, after its indentation and quote markers.
_INNER_LABELS = re.compile(rf"^[ \t>]*(?:{FOOTNOTE_LABEL.pattern})+")

# A footnote definition's label after quote or list markers (`> [^1]: ::: gm`).
# (The prefix taken whole, atomic: no shorter one leaves a label after it, and trying each
# split of its spaces between markers took time exponential in their number.)
_PREFIXED_LABEL = re.compile(rf"(?>{CONTAINER_PREFIX.pattern}){FOOTNOTE_LABEL.pattern}")

# A line's leading space and quote markers.
_INDENT_AND_MARKERS = re.compile(r"^[ \t>]*")

# What opens a comment or a section that may be secret.
_HIDING_PART = re.compile(r"%%|<!--|<section", re.IGNORECASE)

# The env key of the set of lines re-marked as a GM footnote's text.
FOOTNOTE_LINES_ENV_KEY = "gm_footnote_lines"
# And of its lazy lines (indented less than its text, so not re-marked).
FOOTNOTE_LAZY_LINES_ENV_KEY = "gm_footnote_lazy_lines"
# And of the footnotes read by region rules: (line, margin, marks) -> (end, holds a GM part).
_FOOTNOTES_ENV_KEY = "gm_footnotes_read"


# markdown-it-footnote's reading of a document's blocks: which lines its definitions hold.
_FOOTNOTE_READER = MarkdownIt("commonmark").enable("table").use(footnote_plugin)
# Compiled now, as the renderer's chains are: another thread could read them half-built.
_FOOTNOTE_READER.block.ruler.getRules("")


def footnote_definition_lines(src: str) -> frozenset[int]:
    """The lines of `src` (normalized by markdown-it) that markdown-it-footnote reads as a
    footnote definition's, lazy lines included, which it writes at the document's end:
    `[^1]: y`, `===`, `q` is one footnote to it (a heading and a paragraph here), and so
    is a label holding a no-break space or a tab (`[^a b]:`)."""
    tokens: list[Token] = []
    _FOOTNOTE_READER.block.parse(src, _FOOTNOTE_READER, {}, tokens)
    lines: set[int] = set()
    for token in tokens:
        if token.type == "footnote_reference_open" and token.map is not None:
            lines.update(range(*token.map))
    return frozenset(lines)


def footnote_of(env: MutableMapping[str, Any], line_map: list[int] | None) -> int | None:
    """The first line of the GM footnote a block's lines were re-marked for, if any: a
    heading there is in the footnote, not in the document's flow, and ends no GM section
    but one started in that footnote."""
    if line_map is None:
        return None
    return next((first for line in range(*line_map) if (first := footnote_at(env, line)) is not None), None)


def footnote_at(env: MutableMapping[str, Any], line: int) -> int | None:
    """The first line of the GM footnote whose re-marked text a block starting at `line`
    is in, if any."""
    lines = env.get(FOOTNOTE_LINES_ENV_KEY)
    return lines.get(line) if isinstance(lines, dict) else None


def is_lazy_footnote_line(env: MutableMapping[str, Any], line: int) -> bool:
    """Whether `line` is a lazy line of a GM footnote: indented less than its text, it is
    paragraph text to markdown-it-footnote, never a setext underline (`[^1]: ## GM`,
    `    x`, `===`), though it reads as one once the footnote's text is re-marked."""
    lines = env.get(FOOTNOTE_LAZY_LINES_ENV_KEY)
    return isinstance(lines, dict) and line in lines


def gm_footnotes_in(state: StateBlock, first_line: int, last_line: int, end_line: int) -> list[tuple[int, int]]:
    """The GM footnotes (first line, line after their last) starting at the block's margin
    on the lines after `first_line` up to `last_line`: a region's block rule reads them
    before they are re-marked, and a closer in one ends no region opened before it. Each
    footnote is read once a parse (its lines are cached in the env)."""
    found: list[tuple[int, int]] = []
    line = first_line + 1
    if line >= last_line or "[^" not in state.src[state.bMarks[line] : state.eMarks[last_line - 1]]:
        return found
    known = state.env.setdefault(_FOOTNOTES_ENV_KEY, {})
    while line < last_line:
        text = _line_text(state, line)
        if "[^" not in text:
            line += 1
            continue
        key = (line, state.blkIndent, state.bMarks[line], state.sCount[line])
        footnote = known.get(key)
        if footnote is None and not state.is_code_block(line) and (label := FOOTNOTE_LABEL.match(text)):
            lines = _footnote_lines(state, line, end_line)
            first = _NESTED_LABELS.sub("", text[label.end() :], count=1)
            body = [first, *_continuation_body(state, lines[1:])]
            footnote = known[key] = (lines[-1] + 1, _holds_gm_part(body, _names_gm(state)))
        elif footnote is None and not state.is_code_block(line) and _PREFIXED_LABEL.match(text):
            footnote = known[key] = _nested_footnote(state, line, end_line)
        if footnote is None:
            line += 1
            continue
        if footnote[1]:
            found.append((line, footnote[0]))
        line = footnote[0]
    return found


def _nested_footnote(state: StateBlock, start_line: int, end_line: int) -> tuple[int, bool]:
    """The end of a footnote defined after quote or list markers (`> [^1]: ::: gm`), and
    whether it holds a GM part, taken wide: it runs on over its first run of lines and
    then over lines in a quote or indented past the margin, up to another footnote's
    label, and its lines are read without their markers and indentation."""
    body = [_NESTED_LABELS.sub("", without_container_prefix(_line_text(state, start_line)), count=1)]
    line, in_run = start_line + 1, True
    while line < end_line:
        text = _line_text(state, line)
        if state.isEmpty(line):
            in_run = False
        elif FOOTNOTE_LABEL.match(text) or _PREFIXED_LABEL.match(text):
            break  # another footnote's (so each line is read for one footnote only)
        elif not in_run and state.sCount[line] <= state.blkIndent and not text.startswith(">"):
            break
        body.append(without_container_prefix(text).lstrip(" \t"))
        line += 1
    return line, _holds_gm_part(body, _names_gm(state))


def footnote_rule(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """A footnote definition holding a GM part, read as Pandoc reads it: its text from
    the label on, and its continuation lines without their four columns of indent, are
    blocks at the footnote's margin (`[^1]: GM`, `    ===` is a heading there, and
    `[^1]: ::: {.gm}` a div). markdown-it, which knows no footnotes, reads a link
    reference definition, a paragraph or indented code; so the lines are re-marked to read
    as Pandoc does and the other rules take them from there. Ordinary footnotes are
    left as they are. Never matches: it only moves the line marks; asked whether it would
    end a paragraph, it answers whether the footnote holds a GM part."""
    if state.is_code_block(start_line):
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    label = FOOTNOTE_LABEL.match(state.src, start, state.eMarks[start_line])
    if label is None:
        return False
    lines = _footnote_lines(state, start_line, end_line)
    text_start = label.end()
    while (nested := FOOTNOTE_LABEL.match(state.src, text_start, state.eMarks[start_line])) is not None:
        text_start = nested.end()
    # A footnote's text may be another's definition (`[^1]: [^2]: ::: gm`), quoted or not:
    # Pandoc reads blocks there. Its GM part is looked for after the labels and markers;
    # so it is on a continuation line defining another footnote (`    [^2]: ::: gm`).
    body = [_NESTED_LABELS.sub("", state.src[text_start : state.eMarks[start_line]], count=1)]
    body += _continuation_body(state, lines[1:])
    remark = _holds_gm_part(body + _lazy_underline_after(state, lines[-1]), _names_gm(state))
    if silent:
        # As a paragraph's terminator: a definition interrupts a paragraph to
        # markdown-it-footnote (`x`, `[^1]: ::: gm`), so one re-marked starts a block of
        # its own, re-marked when it is read.
        return remark
    if remark:
        state.bMarks[start_line] = text_start
        state.tShift[start_line] = 0
        state.sCount[start_line] = state.blkIndent
        # Each re-marked line, with the first line of its footnote.
        remarked = state.env.setdefault(FOOTNOTE_LINES_ENV_KEY, {})
        lazy = state.env.setdefault(FOOTNOTE_LAZY_LINES_ENV_KEY, {})
        remarked[start_line] = start_line
        for line in lines[1:]:
            if state.isEmpty(line):
                continue
            if state.sCount[line] - state.blkIndent >= 4:
                state.sCount[line] -= 4
                remarked[line] = start_line
            else:
                lazy[line] = start_line
    return False


def _lazy_underline_after(state: StateBlock, last_line: int) -> list[str]:
    """The line after a footnote's last one, when that line is not blank and is a run of
    dashes or equals signs outside the quote or list item the footnote is in (`> [^1]:
    GM`, `---`): a thematic break after the quote to markdown-it, but Pandoc's quote or
    list item takes it lazily, and so does the footnote, as the underline of its last
    paragraph; else nothing."""
    line = last_line + 1
    if state.isEmpty(last_line) or line >= len(state.eMarks) - 1:
        return []
    # The whole source line: the marks of one inside a quote start after its markers.
    underline = setext_underline(after_quote_markers(state.src[state.eMarks[line - 1] + 1 : state.eMarks[line]]))
    return [underline] if underline else []


def _footnote_lines(state: StateBlock, start_line: int, end_line: int) -> list[int]:
    """The lines of the footnote starting at `start_line`, as Pandoc reads them: its
    first line's run of non-blank lines (lazy ones too) up to another footnote's label,
    then, with the blank lines before them, runs whose first line is indented four columns."""
    lines, line, in_run = [start_line], start_line + 1, True
    # A line left of the block's margin has left its list item: Pandoc's footnote ends
    # with the item (and the scan stays within it, so footnotes in items cost their lines).
    while line < end_line and (state.isEmpty(line) or state.sCount[line] >= state.blkIndent):
        indent = state.sCount[line] - state.blkIndent
        if state.isEmpty(line):
            lines.append(line)
            in_run = False
        elif indent < 4 and (not in_run or FOOTNOTE_LABEL.match(_line_text(state, line))):
            # A run not indented four after a blank line, or another footnote's label, ends
            # it; a label indented four is in its text (Pandoc's nested definition).
            break
        else:
            lines.append(line)
            in_run = True
        line += 1
    return lines


def _continuation_body(state: StateBlock, lines: list[int]) -> list[str]:
    """A footnote's continuation lines, read at its margin, as the GM-part test sees them.

    From a line defining another footnote on (`    [^2]: GM`), the lines are the inner
    footnote's, which Pandoc reads a further four columns left at each depth: they are
    taken without their labels and leading space or quote markers, so an inner GM part
    (`        ===` under `    [^2]: GM`) is found at any depth, and an ordinary footnote
    defining another stays as it is."""
    body: list[str] = []
    inner = False
    for line in lines:
        text = _dedented(state, line)
        labels = _INNER_LABELS.match(text)
        inner = inner or labels is not None
        if labels is not None:
            # The inner footnote starts a block of its own (no setext text runs into it).
            body.append("")
        if inner:
            text = _INDENT_AND_MARKERS.sub("", text[labels.end() :] if labels else text, count=1)
        body.append(text)
    return body


def _line_text(state: StateBlock, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]


def _dedented(state: StateBlock, line: int) -> str:
    indent = state.sCount[line] - state.blkIndent
    return " " * (indent - 4 if indent >= 4 else indent) + _line_text(state, line)


def _names_gm(state: StateBlock) -> Callable[[str], bool]:
    """Whether a heading's text names GM as Pandoc reads it, parsed (`G&#77;`)."""
    return partial(names_gm_once_parsed, state.md, references=state.env.get("references", {}))


def _holds_gm_part(body: list[str], names_gm: Callable[[str], bool]) -> bool:
    """Whether a footnote's lines, read at its margin, open a GM container or hold a GM
    heading (ATX, setext, or one that reads so only once look-alikes are folded); a
    setext one's text is its paragraph's lines or the last of them alone, which
    `names_gm` judges as Pandoc reads a heading's text, parsed (`\\[GM\\] x`, `---`)."""
    if any(container_opener(line.lstrip(" \t")) for line in body):
        return True
    # A comment or secret section in a continuation line: code to markdown-it after a
    # definition (`[^1]: x`, `    %% GM %%`), hidden in the footnote to Obsidian and Pandoc.
    if any(_HIDING_PART.search(line) for line in body[1:]):
        return True
    # A setext underline makes a GM heading of the line just above it alone too: in the
    # footnote's text, read as blocks, another block may end the paragraph before it
    # (`x`, `# Pub`, `GM`, `===`: a GM heading to markdown-it-footnote). Taken too often,
    # it costs only the label: the lines re-marked, markdown-it reads them as they are.
    if gm_heading_line("\n".join(body), after_any_line=True) is not None:
        return True
    run: list[str] = []
    for line in body:
        underline = setext_underline(line)
        texts = (" ".join(part.strip() for part in run), " ".join(last_text_lines(run))) if run and underline else ()
        if any(map(names_gm, texts)):
            return True
        # A blank line holds spaces and tabs at most (CommonMark, Pandoc).
        if underline or not line.strip(" \t"):
            run = []
        else:
            run.append(line)
    return False

"""Which headings start a GM-only section (contract section 6, rule 2).

Markdown headings are recognized by markdown-it; these functions judge their text, and
find headings markdown-it does not see as such: HTML heading elements, and heading lines
in text it drops or reads as code or as a paragraph (look-alike characters).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from engine.html_tags import Tag, element_tags, html_text, is_line_break, tags
from engine.markdown_regions import container_line, container_opener
from engine.markdown_text import (
    DEFINITION_MARKER,
    FOOTNOTE_LABEL,
    fold_lookalikes,
    folds_to_none_of,
    without_container_prefix,
    without_pandoc_prefix,
)

# Emphasis, strikethrough, highlight (Obsidian's `==`) and code-span markers (underscores
# already read as spaces).
_INLINE_MARKERS = re.compile(r"[*`~=]")
# What separates the words of a name: spaces, underscores, hyphens and dashes of every kind.
_NAME_SEPARATORS = re.compile(r"[\s_\-\u2010-\u2015\u2212]+")
GM_HEADING_NAMES = frozenset(
    {"gm", "gm only", "gm notes", "gm secrets", "dm", "dm only", "dm notes", "secret", "secrets"}
)


# What may make a heading's text read otherwise once parsed (escapes, links, entities, tags).
PARSED_TEXT_MAY_DIFFER = re.compile(r"[\\\[\]!&<]")


def names_gm_once_parsed(md: MarkdownIt, content: str, references: Any) -> bool:
    """Whether a heading's raw `content` names a GM section, as is or once parsed inline
    by `md` with link `references` (`**GM notes**`, `\\[GM\\] plot`, `G&#77;`)."""
    if is_gm_heading_text(content):
        return True
    if not PARSED_TEXT_MAY_DIFFER.search(content):
        return False
    tokens: list[Token] = []
    md.inline.parse(_pandoc_heading_text(content), md, {"references": references}, tokens)
    return is_gm_heading_text(plain_text(tokens))


def _pandoc_heading_text(content: str) -> str:
    """A heading's raw `content` as `_gm_setext_lines` reads a raw name: from its last
    line opening a definition on (a block of its own to Pandoc: `Term`, `:   G&#77;`,
    `    ===` is a GM heading in the definition), each line without the quote, list and
    definition markers Pandoc may read before it (`a) G&#77;`, `---`)."""
    lines = content.split("\n")
    first = max((index for index, line in enumerate(lines) if DEFINITION_MARKER.match(line)), default=0)
    return "\n".join(map(without_pandoc_prefix, lines[first:]))


def plain_text(tokens: list[Token]) -> str:
    """The text inline `tokens` show, a line break read as a space."""
    parts: list[str] = []
    for token in tokens:
        if token.type in ("text", "text_special", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak") or (token.type == "html_inline" and is_line_break(token.content)):
            parts.append(" ")
        if token.children:
            parts.append(plain_text(token.children))
    return "".join(parts)


def is_gm_heading_text(text: str) -> bool:
    """Whether a heading's text names a GM-only section.

    Compared trimmed, case-insensitively, without trailing colons, with runs of spaces,
    hyphens and underscores read as one space (so `GM-only` and `GM only` are the same
    name, and likewise `DM-only`), and without emphasis and code markers: a heading line
    read as raw text (a look-alike, an HTML heading) may spell the name `**GM notes**`.
    Trailing attribute blocks (`## GM {#plot .unnumbered}`, Pandoc's) or a footnote
    reference (`[^1]`) are no part of it, and an Obsidian wikilink (`[[GM]]`) names its
    text. A closing sequence of hashes that reads as one only once folded (`## GM`, then
    fullwidth hashes: markdown-it keeps them in the text), one before an attribute
    block, or one with no space before it (`## GM##`, `## GM{#plot}`: Pandoc ends the
    text there), is no part of it either, nor is a hard break's backslash ending it.
    """
    # A backslash ending the text is a hard line break to Pandoc (`## GM\\` names `GM`
    # there; CommonMark shows the backslash).
    unmarked = _without_closing_hashes(_INLINE_MARKERS.sub("", fold_lookalikes(text).rstrip().rstrip("\\")))
    # Pandoc reads an attribute block after a closing sequence (`## GM ## {#plot}`), which
    # markdown-it keeps in the text: the hashes before it are no part of the name either.
    without_attributes = _without_closing_hashes(_without_attribute_blocks(" ".join(unmarked.split())))
    trimmed = _without_footnote_references(without_attributes)
    normalized = _strip_trailing_colons(_wikilink_text(trimmed).casefold())
    if normalized.startswith("[gm]"):
        return True
    return _NAME_SEPARATORS.sub(" ", normalized).strip() in GM_HEADING_NAMES


def _without_footnote_references(text: str) -> str:
    # `## GM notes[^1]`: the reference is no part of the name. Offsets, not slices, so
    # that a heading of thousands of references costs their length once.
    end = len(text)
    while text.endswith("]", 0, end):
        start = text.rfind("[^", 0, end)
        if start == -1 or text.find("]", start, end - 1) != -1:
            break
        end = start
        while end and text[end - 1].isspace():
            end -= 1
    return text[:end]


def _wikilink_text(text: str) -> str:
    # `## [[GM]]`, `## [[Plot|GM notes]]`: Obsidian shows the page name or its alias.
    if not (text.startswith("[[") and text.endswith("]]")) or "]]" in text[2:-2]:
        return text
    return text[2:-2].rsplit("|", 1)[-1]


def _without_attribute_blocks(text: str) -> str:
    # String operations, not `(\s*\{[^{}]*\})+\s*$`: that backtracks over every space of a
    # long run at each of its positions.
    # Pandoc tries the block before each inline of the text, not only after a space:
    # `## GM{#plot}` and `## GM##{#plot}` name `GM`. Its CommonMark reader (commonmark_x)
    # takes several, side by side or spaced (`## GM {.x}{.y}`, `## GM {.x} {.y}`): each one
    # gives its attributes to the heading or to the text before it, and shows nothing.
    kept = end = len(text)
    while text.endswith("}", 0, end):
        start = text.rfind("{", 0, end)
        if start == -1 or text.find("}", start, end - 1) != -1:
            break
        kept = start
        end = start - 1 if text.endswith(" ", 0, start) else start
    return text[:kept]


def _strip_trailing_colons(text: str) -> str:
    # An index walk, not a regular expression: `[\s:]+$` backtracks on every colon of a
    # long run that is not at the end.
    end = len(text)
    while end and (text[end - 1] == ":" or text[end - 1].isspace()):
        end -= 1
    return text[:end]


# Indented any amount: markdown-it reads a line indented four spaces or more inside a
# paragraph as its text, but a no-break space folded into the indent was never typed as one.
_ATX_HEADING_LINE = re.compile(r"[ \t]*(#{1,6})(?:[ \t]+(.*))?$")


_HEADING_TAG_START = re.compile(r"</?(h[1-6])(?=[\s/>])", re.IGNORECASE)
_HEADING_TAG_NAME = re.compile(r"h[1-6]")


@dataclass(frozen=True, slots=True)
class HtmlHeading:
    start: int
    level: int
    inner_html: str
    # False for the last heading of a piece of HTML when no heading tag follows its start
    # tag: a browser reads the rest as the heading's text, and beyond it if more follows.
    closed: bool = True


def html_headings(html: str, *, as_browser: bool = False) -> list[HtmlHeading]:
    """The heading elements (`<h2>...</h2>`) of a piece of HTML, in order, as a browser
    reads them: a heading ends at the next heading tag, start or end, of any level
    (`<h2>Intro<h2>GM</h2>` is two headings, `<h2>GM</h3>` one). One not ended in `html`
    comes last, not `closed`, with the rest of `html` as its inner HTML. Every heading tag
    counts, even one in an attribute value; `as_browser`, only the ones a browser reads as
    tags (`browser_heading_starts`). One pass over the tags (engine.html_tags): linear."""
    headings: list[HtmlHeading] = []
    opened: Tag | None = None
    opened_end = 0
    found = _browser_heading_tags(html) if as_browser else tags(html, _HEADING_TAG_START)
    for tag in found:
        if opened is not None:
            headings.append(HtmlHeading(opened.start, _level(opened), html[opened_end : tag.start]))
        opened = None if tag.closing or tag.end is None else tag
        opened_end = tag.end or len(html)
    if opened is not None:
        headings.append(HtmlHeading(opened.start, _level(opened), html[opened_end:], closed=False))
    return headings


def _level(tag: Tag) -> int:
    return int(tag.name[1])


def browser_heading_starts(html: str) -> frozenset[int]:
    """Where the heading tags of `html` that a browser reads as tags start: not those in
    another tag's attribute value (`<div title="<h2>x</h2>">`) or in a raw-text element
    (`<script>`, `<textarea>` ...). `html_headings` reads every heading tag as one, which
    is the reading that hides more for a heading that starts a GM section; one that ends
    a section must be one of these."""
    return frozenset(tag.start for tag in _browser_heading_tags(html))


def _browser_heading_tags(html: str) -> Iterator[Tag]:
    return (tag for tag in element_tags(html) if _HEADING_TAG_NAME.fullmatch(tag.name) and _name_ends(html, tag))


def _name_ends(html: str, tag: Tag) -> bool:
    """Whether a browser reads a tag's name as it was found: up to ASCII white space."""
    after_name = tag.start + len("</" if tag.closing else "<") + len(tag.name)
    return html[after_name : after_name + 1] in _NAME_ENDS


# What ends a tag's name to a browser: ASCII white space, `/`, `>` (or the text's end).
# `<h2` and a no-break space starts an element named `h2\xa0`, no heading.
_NAME_ENDS = frozenset(("", "\t", "\n", "\f", "\r", " ", "/", ">"))


def judged_html_headings(html: str) -> list[tuple[HtmlHeading, bool | None]]:
    """The heading elements of `html` with every heading tag counted, each with whether it
    names a GM section (`names_gm_section`); True too where a browser's reading of the tags
    finds one that does at the same start: `<h2><a title="</h2>">GM</a></h2>` is a GM
    heading to a browser, `<div title="<h2>GM</h2>">` to the other reading."""
    headings = html_headings(html)
    if not headings:
        return []
    browser_gm = {heading.start for heading in html_headings(html, as_browser=True) if names_gm_section(heading)}
    return [(heading, True if heading.start in browser_gm else names_gm_section(heading)) for heading in headings]


def first_text_line(text: str) -> str | None:
    """The first line of `text` that shows something, trimmed; None when none does. A line
    of invisible characters, emphasis or highlight markers, or a hard-break backslash
    shows nothing."""
    return next((line.strip() for line in text.splitlines() if _shows_something(line)), None)


def _shows_something(line: str) -> bool:
    return bool(_INLINE_MARKERS.sub("", fold_lookalikes(line)).strip(" \t\\"))


def names_gm_section(heading: HtmlHeading) -> bool | None:
    """Whether a heading element names a GM-only section: a closed one by its text, one
    left open by the first line of its text (the rest of the document may follow in it,
    and its author meant that line as the heading). None for one left open with no text
    yet: the text that comes next decides."""
    text = html_text(heading.inner_html)
    if heading.closed:
        return is_gm_heading_text(text)
    line = first_text_line(text)
    return None if line is None else is_gm_heading_text(line)


def text_before_heading_tag(html: str) -> tuple[str, bool]:
    """The text of `html` up to its first heading tag, start or end (the end of a heading
    element left open before it), and whether there is such a tag."""
    tag = next(tags(html, _HEADING_TAG_START), None)
    return html_text(html if tag is None else html[: tag.start]), tag is not None


def gm_heading_line(text: str, *, after_any_line: bool = False, in_html: bool = False) -> tuple[int, int] | None:
    """(offset, level) of the first GM heading in raw `text` that reads as one only once
    look-alikes are folded and quote and list markers removed, None when there is none: an
    ATX line (`##`, a no-break space, `GM`), also as a footnote's first line (`[^1]: ## GM`:
    a heading in the footnote to Pandoc and Obsidian), or setext lines (`GM` over fullwidth
    equals signs, or over `---` after a no-break space), whose text runs from the last
    blank line or underline before its underline, as in a setext heading. With
    `after_any_line`, the line just above an underline may also be that text alone: in a
    fence never closed, any line may follow the closing fence its author forgot (`code`,
    `GM`, `===`). With `in_html` (the text of an HTML block), a line ending in a tag ends
    that text too: Pandoc reads the Markdown after such a line as blocks of their own
    (`<div>`, `GM`, `===`, `</div>` is a heading there). A container's opening or
    closing line always ends it."""
    atx = None if folds_to_none_of(text, "#") else _gm_atx_line(text)
    setext = _gm_setext_lines(text, after_any_line, in_html) if _MAY_HOLD_UNDERLINE.search(text) else None
    grid = _gm_grid_row(text) if "|" in text else None
    found = [heading for heading in (atx, setext, grid) if heading is not None]
    return min(found) if found else None


def _gm_grid_row(text: str) -> tuple[int, int] | None:
    """(offset, level) of the first line of a Pandoc grid table row in `text` whose cell
    holds a GM heading or a GM container's opening line, read as Pandoc reads a cell:
    its lines across the row (every `|` line from a `+---+` border to the next) are
    blocks (`| a | GM |`, `|   | --- |` is a heading in the second cell; a paragraph's
    text or a GFM table to CommonMark). The container counts as a level-1 heading:
    Pandoc ends it with the cell, this reading with the next level-1 heading, which
    over-removes the table's rest and what follows it up to that heading."""
    offset = 0
    in_grid = False
    # Per column: its cells' lines so far in the row, and where each of those lines starts.
    columns: list[list[str]] = []
    starts: list[int] = []
    for line in [*text.split("\n"), ""]:
        row = without_pandoc_prefix(fold_lookalikes(line)).strip(" \t")
        if in_grid and row.startswith("|"):
            starts.append(offset)
            cells = row.strip("|").split("|")
            # A line of fewer cells leaves the rest of its columns blank there.
            for index, cell in enumerate(cells + [""] * (len(columns) - len(cells))):
                if index == len(columns):
                    columns.append([""] * (len(starts) - 1))
                columns[index].append(cell)
        else:
            found = _gm_grid_columns(columns, starts)
            if found:
                return min(found)
            columns, starts = [], []
            in_grid = _GRID_BORDER.fullmatch(row) is not None
        offset += len(line) + 1
    return None


# A grid table's border line, which starts a row (`+---+:==+`).
_GRID_BORDER = re.compile(r"\+[-=:+]+")


def _gm_grid_columns(columns: list[list[str]], starts: list[int]) -> list[tuple[int, int]]:
    """(offset, level) of each GM heading or container opening line in a grid table
    row's `columns` of cell lines, the offset being that of the row's line where it
    starts (`starts`). A cell of one line holds neither: `_grid_cells` reads its
    heading, and a container there is never closed."""
    found: list[tuple[int, int]] = []
    for cells in columns:
        if len(cells) < 2:
            continue
        cell_text = "\n".join(cells)
        heading = gm_heading_line(cell_text)
        if heading is not None:
            found.append((starts[cell_text.count("\n", 0, heading[0])], heading[1]))
        opener = next(
            (i for i, cell in enumerate(cells) if container_opener(cell.lstrip(" \t"), look_alike_markers=True)), None
        )
        if opener is not None:
            found.append((starts[opener], 1))
    return found


def _gm_atx_line(text: str) -> tuple[int, int] | None:
    offset = 0
    for line in text.split("\n"):
        for cell in _grid_cells(without_pandoc_prefix(fold_lookalikes(line))):
            match = _ATX_HEADING_LINE.match(_without_footnote_label(cell))
            if match and is_gm_heading_text(_without_closing_hashes(match.group(2) or "")):
                return offset, len(match.group(1))
        offset += len(line) + 1
    return None


def _grid_cells(line: str) -> list[str]:
    """The cells a line starting with `|` may hold in a Pandoc grid table, whose cells
    hold blocks (`| ## GM |` is a heading there; a paragraph's text to CommonMark), and
    the line itself."""
    if not line.lstrip(" \t").startswith("|"):
        return [line]
    return [line, *(without_pandoc_prefix(cell) for cell in line.strip(" \t").strip("|").split("|"))]


def _without_footnote_label(line: str) -> str:
    """A footnote definition's text, which Pandoc and Obsidian read as a block of its own
    (markdown-it here: a paragraph's text, the label not being a destination)."""
    label = FOOTNOTE_LABEL.match(line)
    return without_pandoc_prefix(line[label.end() :]) if label else line


# A line up to the end of its last HTML tag.
_UP_TO_LAST_TAG = re.compile(r".*</?[A-Za-z][^<>]*>")


# A line that may fold to a setext underline: no ASCII but `=`, `-`, container markers and
# what folds to a space (a tab, a vertical tab, a form feed, the separators \x1c-\x1f);
# any other character may be a look-alike. Prose lines fail it at once.
_MAY_HOLD_UNDERLINE = re.compile(r"^[ \t\x0b\x0c\x1c-\x1f>*+.)0-9=\-\x80-\U0010ffff]+$", re.M)
_SETEXT_UNDERLINE = re.compile(r"[ \t]*(=+|-+)[ \t]*$")


def _gm_setext_lines(text: str, after_any_line: bool, in_html: bool) -> tuple[int, int] | None:
    # The lines since the last blank line or underline, and where the first and the last
    # of them start.
    run_start, run = 0, list[str]()
    offset = last_start = 0
    for line in text.split("\n"):
        folded = without_container_prefix(fold_lookalikes(line)) if _MAY_HOLD_UNDERLINE.match(line) else None
        underline = _SETEXT_UNDERLINE.match(folded) if folded is not None else None
        if underline and run:
            level = 1 if underline.group(1)[0] == "=" else 2
            if is_gm_heading_text(" ".join(map(_heading_text_of_line, run))):
                return run_start, level
            if after_any_line and is_gm_heading_text(" ".join(map(_heading_text_of_line, last_text_lines(run)))):
                return last_start, level
        tag = _UP_TO_LAST_TAG.match(line) if in_html else None
        # In HTML, a line ending in a tag ends the text as a blank line does; so does a
        # container's opening or closing line (`::: note`, `:::`), a block of its own to
        # Pandoc and markdown-it-container (`::: note`, `GM`, `===` is a heading there).
        if (
            underline
            or not line.strip(" \t")
            or (tag is not None and not line[tag.end() :].strip(" \t"))
            or container_line(without_container_prefix(line)) is not None
        ):
            run_start, run = offset + len(line) + 1, []
        elif tag is not None:
            # Pandoc reads the text after a block tag as blocks of their own (`<div>`,
            # `<p>a</p> GM`, `===` is a heading): the text starts after the line's last tag.
            run_start = last_start = offset + tag.end()
            run = [line[tag.end() :]]
        elif DEFINITION_MARKER.match(line):
            # A definition's first line starts a block of its own to Pandoc (`Term`,
            # `:   GM`, `    ---` is a GM heading in the definition).
            run_start = last_start = offset
            run = [line]
        else:
            if line.strip() or not run:
                last_start = offset  # where `last_text_lines(run)` starts
            run.append(line)
        offset += len(line) + 1
    return None


def last_text_lines(run: list[str]) -> list[str]:
    """The last line of a paragraph's `run` of lines that holds more than white space,
    with the lines after it: a line of no-break spaces (or other Unicode white space, not
    only spaces and tabs) is no blank line to CommonMark and Pandoc, so it goes on the
    paragraph of the line above it (`GM`, no-break space, `===` is a heading `GM`)."""
    last = len(run) - 1
    while last > 0 and not run[last].strip():
        last -= 1
    return run[last:]


def _heading_text_of_line(line: str) -> str:
    return without_pandoc_prefix(fold_lookalikes(line))


def _without_closing_hashes(text: str) -> str:
    # Pandoc ends the text at a closing sequence whether or not a space is before it
    # (`## GM##` names `GM`; CommonMark keeps `GM##`): the name never includes one.
    return text.rstrip(" \t").rstrip("#")

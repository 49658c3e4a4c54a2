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
from bisect import bisect_right
from collections.abc import Callable, Sequence

from engine.html_tag_ends import tag_ends

# Longest `<section` tag read attribute by attribute for its class (engine/markdown_regions.py):
# enough for long style attributes, and many tags without a `>` still cost linear time.
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
    rf"`+|\\.|\n[ \t]*(?=\n)|\[|\][(:]?|<(?:{'|'.join(_RAW_TEXT)}|plaintext)(?=[\s>/])|<[A-Za-z]|{_BOGUS_COMMENT}",
    re.I,
)
_BLANK_LINE = re.compile(r"\n[ \t]*(?=\n)")
_RAW_TEXT_END = {name: re.compile(rf"</{name}\s*>", re.I) for name in _RAW_TEXT}


def inert_spans(text: str, raw_html_at: Callable[[int], bool] | None = None) -> list[tuple[int, int]]:
    """Sorted, disjoint (start, end) ranges of `text` where a closer is not trusted.

    Tags, raw-text elements and bogus comments run as far as their end, blank lines
    included, when `raw_html_at` is None (raw HTML, an HTML block's text) or says their
    start is raw HTML (an HTML block of a whole document, which a browser reads on). One
    starting in Markdown text is one only if it ends within its paragraph, as CommonMark
    reads `a<b` or an unclosed quote there as text: a raw-text element then runs to its
    end tag or its paragraph's end.
    """
    blank_lines = [match.start() for match in _BLANK_LINE.finditer(text)] if raw_html_at else []

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

    spans: list[tuple[int, int]] = []
    open_ticks: dict[int, int] = {}  # backtick run length -> where the run starts
    brackets: list[int] = []
    position = 0
    while True:
        match = _EVENTS.search(text, position)
        if match is None:
            break
        start, event = match.start(), match.group()
        position = match.end()
        if event[0] == "`":
            opened = open_ticks.pop(len(event), None)
            if opened is None:
                open_ticks[len(event)] = start
            else:
                spans.append((opened, position))
                open_ticks.clear()
        elif event[0] == "\\":
            spans.append((start, position))
        elif event[0] == "\n":  # a blank line ends a paragraph, and its spans with it
            open_ticks.clear()
            brackets.clear()
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
            limit = limit_for(start)
            if in_markdown(start) and tag_end(position, limit) is None:
                continue  # a start tag never ended: text
            closing = _RAW_TEXT_END[event[1:].casefold()].search(text, position, limit)
            end = limit if closing is None else closing.end()
            spans.append((start, end))
            position = end
        elif event[1:].casefold() == "plaintext":  # text to the end of the document
            end = limit_for(start)
            spans.append((start, end))
            position = end
        elif event[1] in "?!/":  # a browser's bogus comment, to the first `>`
            # CDATA is one in a browser, but runs to `]]>` in CommonMark: the longer wins.
            limit = limit_for(start)
            closer = "]]>" if text.startswith("<![CDATA[", start) else ">"
            closing_at = text.find(closer, position, limit)
            if closing_at == -1 and in_markdown(start):
                continue
            end = limit if closing_at == -1 else closing_at + len(closer)
            spans.append((start, end))
            position = end
        else:
            limit = limit_for(start)
            ended_at = tag_end(start + 2, limit)
            if ended_at is None and in_markdown(start):
                continue
            # A raw tag never ended is inert to `limit`, and the pass goes on from there.
            end = limit if ended_at is None else ended_at
            spans.append((start, end))
            position = end
    return _merged(spans)


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


_DEFINITION_DESTINATION = re.compile(r"[ \t]*\n?[ \t]*(?:<[^<>\n]*>?|[^\s<]\S*)?")
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


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    # Spans that only touch stay apart: an opener's own tag followed at once by an
    # attribute or a `<script>` holding a closer must not share a span with it.
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged

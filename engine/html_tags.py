"""HTML tags found as a browser finds them, in one linear pass.

A tag ends at the first `>` that is not inside a quoted attribute value
(`<h2 title="a>b">` is one tag), and one whose end never comes takes the rest of the
text with it (a browser shows none of it). Regular expressions of the form `<[^>]*>` cut
such tags short and read the rest of their attributes as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

# After `=` (and spaces), a quote starts a value that runs to the same quote; a quote
# anywhere else in a tag is part of a name and ends nothing.
_TAG_STOP = re.compile(r""">|=[ \t\n\f\r]*(["'])""")
_ANY_TAG_START = re.compile(r"</?([A-Za-z][^\s/>]*)")
# A tag, or a bogus comment (`<?php ... >`, `<!DOCTYPE ...>`, `<![CDATA[...>`: to a browser,
# everything up to the first `>`), which comes out as a tag named `!`.
_TAG_OR_BOGUS_COMMENT = re.compile(r"</?([A-Za-z][^\s/>]*)|<[?!]")
BOGUS_COMMENT = "!"
_LINE_BREAK = "br"
# Elements whose content a browser reads as text up to their end tag (raw text, escapable
# raw text, and the legacy ones), `<plaintext>` to the end of the document.
_RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"}
)
# Those whose text a browser does not show.
_HIDDEN_RAW_TEXT = frozenset({"script", "style", "title", "iframe", "noembed", "noframes", "noscript"})


@dataclass(frozen=True, slots=True)
class Tag:
    start: int
    # Just after the tag's `>`; None for a tag that never ends.
    end: int | None
    name: str
    closing: bool


def tags(text: str, start: re.Pattern[str] = _ANY_TAG_START, position: int = 0) -> Iterator[Tag]:
    """The tags of `text` from `position` on whose opening (`<name` or `</name`) `start`
    matches, in order, its group 1 being the name; the last one yielded is the one that
    never ends, if any."""
    while (opening := start.search(text, position)) is not None:
        if opening.group(1) is None:
            closing_at = text.find(">", opening.end())
            end = None if closing_at == -1 else closing_at + 1
            yield Tag(opening.start(), end, BOGUS_COMMENT, False)
        else:
            end = _tag_end(text, opening.end())
            yield Tag(opening.start(), end, opening.group(1).lower(), text[opening.start() + 1] == "/")
        if end is None:
            return
        position = end


def element_tags(text: str) -> Iterator[Tag]:
    """The tags of `text` as a browser builds elements from them, bogus comments among
    them: those inside a raw-text element (`<script>`, `<textarea>`, `<xmp>` ...) are its
    text, not tags."""
    position: int | None = 0
    while position is not None:
        resume, position = position, None
        for tag in tags(text, _TAG_OR_BOGUS_COMMENT, resume):
            yield tag
            if tag.end is not None and not tag.closing and tag.name in _RAW_TEXT_ELEMENTS:
                position = _raw_text_end(text, tag.name, tag.end)
                break


def _raw_text_end(text: str, name: str, position: int) -> int | None:
    """Where the end tag of raw-text element `name` opened before `position` starts; None
    when the element runs to the end (`<plaintext>` always does)."""
    if name == "plaintext":
        return None
    end_tag = re.compile(rf"</{name}(?=[\s/>])", re.IGNORECASE).search(text, position)
    return None if end_tag is None else end_tag.start()


def _tag_end(text: str, position: int) -> int | None:
    while (stop := _TAG_STOP.search(text, position)) is not None:
        quote = stop.group(1)
        if quote is None:
            return stop.end()
        closing = text.find(quote, stop.end())
        if closing == -1:
            return None
        position = closing + 1
    return None


def html_text(fragment: str) -> str:
    """The text of a piece of HTML, as a reader sees it: tags and bogus comments dropped (a
    line break read as a space), entities read, nothing from a tag that never ends nor
    from a `<script>`, `<style>` or `<title>`."""
    parts: list[str] = []
    position = 0
    shown = True
    for tag in element_tags(fragment):
        if shown:
            parts.append(fragment[position : tag.start])
        if tag.end is None:
            return html.unescape("".join(parts))
        if tag.name == _LINE_BREAK:
            parts.append(" ")
        shown = tag.closing or tag.name not in _HIDDEN_RAW_TEXT
        position = tag.end
    parts.append(fragment[position:])
    return html.unescape("".join(parts))


def is_line_break(tag_html: str) -> bool:
    """Whether a piece of inline HTML is a line break tag (`<br>`, `<br/>`, `<BR >`, and
    `</br>`, which a browser reads as `<br>`)."""
    found = next(tags(tag_html), None)
    return found is not None and found.start == 0 and found.name == _LINE_BREAK

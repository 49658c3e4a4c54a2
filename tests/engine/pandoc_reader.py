"""Pandoc as a second reader of our public Markdown: the text a browser shows of the HTML
Pandoc makes of it.

Pandoc's plain writer is no model of a browser: it drops every raw HTML block with the
text inside it (`<div>x</div>` read as CommonMark), which a browser shows. So Pandoc
writes HTML and `visible_text` reads it as a browser does. It shares no code with the
stripper (engine/html_tags.py): a reader that errs the same way would hide the same leak.

One `pandoc` process reads a whole batch (tests/engine/pandoc_batch.lua): starting one per
document costs 20 ms, more than reading most of them.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

# Pandoc's own Markdown, and CommonMark with the extensions GitHub and Obsidian writers use.
READERS = ("markdown", "commonmark_x")
_BATCH_FILTER = Path(__file__).with_name("pandoc_batch.lua")
# A comment as a browser reads it: `<!-->` and `<!--->` are empty, `--!>` ends one too, and
# one never ended runs to the end of the document.
_COMMENT = re.compile(r"<!--(?:>|->|.*?--!?>|.*\Z)", re.DOTALL)
# Elements a browser reads as text up to their end tag, and those of them it does not show.
_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"})
_HIDDEN = frozenset({"script", "style", "title", "iframe", "noembed", "noframes", "noscript"})
# Attributes whose value a reader sees: a tooltip, an image's text when it is not shown.
_SHOWN_ATTRIBUTES = frozenset({"title", "alt"})


def pandoc_html(pandoc: str, documents: Sequence[str], reader: str) -> list[str]:
    """The HTML Pandoc writes of each document read as `reader`, in one process."""
    batch = bytearray()
    for document in documents:
        encoded = document.encode()
        batch += f"{reader} {len(encoded)}\n".encode() + encoded
    completed = subprocess.run(
        [pandoc, "--lua-filter", str(_BATCH_FILTER), "-o", "/dev/null", "/dev/null"],
        input=bytes(batch),
        capture_output=True,
        check=True,
        timeout=120,
    )
    output, position, pages = completed.stdout, 0, []
    while position < len(output):
        newline = output.index(b"\n", position)
        end = newline + 1 + int(output[position:newline])
        pages.append(output[newline + 1 : end].decode())
        position = end
    assert len(pages) == len(documents), completed.stderr.decode()
    return pages


def visible_text(page: str) -> str:
    """What a browser shows of an HTML page: its text, tooltips and image descriptions;
    nothing of comments, scripts, styles and titles."""
    reader = _VisibleText()
    reader.feed(page)
    reader.close()
    return "".join(reader.parts)


def pandoc_texts(pandoc: str, documents: Sequence[str]) -> list[str]:
    """For each document, the text a browser shows of it as each of READERS reads it."""
    pages_by_reader = [pandoc_html(pandoc, documents, reader) for reader in READERS]
    return ["\n".join(visible_text(page) for page in pages) for pages in zip(*pages_by_reader, strict=True)]


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.parts.extend(f" {value} " for name, value in attrs if name in _SHOWN_ATTRIBUTES and value)
        self._hidden = tag in _HIDDEN
        if tag in _RAW_TEXT:  # html.parser knows only `<script>` and `<style>`
            self.set_cdata_mode(tag)

    def handle_endtag(self, tag: str) -> None:
        self._hidden = False

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)

    def parse_comment(self, i: int, report: bool = True) -> int:
        # html.parser (before Python 3.13.4) reads none of the browser's comment forms but
        # `<!-- ... -->`, and shows a comment never ended as text: read as a browser does.
        # The whole page is fed at once, so an unended comment is one to the end.
        comment = _COMMENT.match(self.rawdata, i)
        assert comment is not None
        return comment.end()

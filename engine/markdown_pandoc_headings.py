"""Where Pandoc reads a Markdown heading as more of a paragraph's text.

Pandoc's Markdown reader (`blank_before_header`) sees a `#` line as a heading only where a
block starts: right after a paragraph's line it is text of that paragraph (`x`, `# Pub`
is one paragraph), lazily too, after a quote's, a list item's, a definition's or a
footnote's paragraph (`> x`, `# Pub`). Its paragraph also runs on over lines CommonMark
reads as blocks interrupting it (a `~~~` fence, a thematic break, an HTML comment, a quote,
a list, a table), but not over a backtick fence. CommonMark readers (markdown-it, Obsidian,
Pandoc's `commonmark_x`) see a heading at all those places; a GM section must not end
where one reader still reads it on.
"""

from __future__ import annotations

from markdown_it.token import Token

# Blocks whose first line is the start of a list item's or a quote's text: a block starting
# on the same line decides whether that line goes on with a paragraph.
_CONTAINERS = frozenset({"blockquote_open", "bullet_list_open", "ordered_list_open", "list_item_open"})
# Tokens of a table's inner structure, read with the table.
_TABLE_PARTS = frozenset({"thead_open", "tbody_open", "tr_open"})


class PandocParagraphs:
    """Follows markdown-it's block tokens in document order, telling which headings
    Pandoc reads as the text of a paragraph going on from the line above."""

    def __init__(self) -> None:
        # The line a paragraph Pandoc is reading would go on at, -1 when none.
        self._goes_on_at = -1

    def goes_on_at(self, line: int) -> bool:
        """Whether a paragraph Pandoc is reading goes on at `line` (unless it is blank)."""
        return line == self._goes_on_at

    def paragraph_ends_at(self, end: int) -> None:
        """Pandoc reads a paragraph up to line `end` where markdown-it reads another block
        (-1: the block read last ends where Pandoc starts a new one)."""
        self._goes_on_at = end

    def heading_is_text(self, token: Token, previous: Token | None) -> bool:
        """Read block `token` (any token; those without a line map change nothing) and
        tell whether it is a heading that Pandoc reads as paragraph text."""
        if token.map is None or token.type in _TABLE_PARTS or token.type == "inline":
            return False
        start, end = token.map
        goes_on = self.goes_on_at(start)
        if token.type in _CONTAINERS:
            if token.type == "list_item_open" and previous is not None and previous.type == "list_item_close":
                # A list's next item (`- a`, `- # Pub`): its text starts a block to Pandoc.
                self._goes_on_at = -1
            return False
        if token.type == "paragraph_open":
            self._goes_on_at = end
            return False
        if token.type == "fence" and token.markup.startswith("`"):
            # A backtick fence interrupts Pandoc's paragraph; a block starts after it.
            self._goes_on_at = -1
            return False
        self._goes_on_at = end if goes_on else -1
        return goes_on and token.type == "heading_open"

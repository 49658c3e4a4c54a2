"""Where Pandoc reads a Markdown heading as more of a paragraph's text.

Pandoc's Markdown reader (`blank_before_header`) sees a `#` line as a heading only where a
block starts: right after a paragraph's line it is text of that paragraph (`x`, `# Pub`
is one paragraph), lazily too, after a quote's, a list item's, a definition's or a
footnote's paragraph (`> x`, `# Pub`). Its paragraph also runs on over lines CommonMark
reads as blocks interrupting it (a `~~~` fence, a thematic break, an HTML comment, a quote,
a list, a table), but not over a backtick fence. CommonMark readers (markdown-it, Obsidian,
Pandoc's `commonmark_x`) see a heading at all those places; a GM section must not end
where one reader still reads it on. Nor does Pandoc see a heading whose `#` line, or
setext underline, is indented past the text around it (` # Pub`; `Pub`, then `  ===`;
`>  # Pub`), where CommonMark allows three columns.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock, heading, lheading
from markdown_it.token import Token

# `heading_open.meta` key: columns its `#` line or underline is indented past the text of
# the quotes and list items it is in (markdown-it's `sCount - blkIndent` on that line).
_INDENT = "gm_marker_indent"
# markdown-it's chains of rules that may end a paragraph, a definition, a quote or a list.
_CHAINS = ("paragraph", "reference", "blockquote", "list")
_BlockRule = Callable[[StateBlock, int, int, bool], bool]

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
        tell whether it is a heading that Pandoc reads as paragraph text (its tokens read
        by a parser with `heading_indent_plugin`)."""
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
        is_text = goes_on or (token.type == "heading_open" and token.meta.get(_INDENT, 0) != 0)
        self._goes_on_at = end if is_text else -1
        return is_text and token.type == "heading_open"


def heading_indent_plugin(md: MarkdownIt) -> None:
    """Record on each Markdown heading how far its `#` line or underline is indented."""
    for name, rule in (("heading", heading), ("lheading", lheading)):
        chains = [chain for chain in _CHAINS if rule in md.block.ruler.getRules(chain)]
        md.block.ruler.at(name, partial(_recording_indent, rule), {"alt": chains})


def _recording_indent(rule: _BlockRule, state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    first_token = len(state.tokens)
    if not rule(state, start_line, end_line, silent):
        return False
    if not silent:
        # Read while the quotes' markers are off the lines: the rule ended past the
        # heading's last line, its `#` line or its underline.
        marker_line = state.line - 1
        state.tokens[first_token].meta[_INDENT] = state.sCount[marker_line] - state.blkIndent
    return True

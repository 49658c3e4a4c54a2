"""An inline rule that settles, in constant time, a `[` or `!` that cannot open a link.

markdown-it's link and image rules scan for the end of a label from every `[` (from a
`!` too, for an image), and every scan walks up to the nesting limit's worth of nested
attempts: a paragraph of 50,000 `![` took over a second to parse. A label needs a `]`
after it, so where the rest of the inline content has none, `[` and `!` are plain text,
exactly what markdown-it would decide after its scans. Nothing else changes: the rule
runs just before "link" and takes one character, as markdown-it does when no rule
matches (no rule ahead of "link" takes `[` or `!`).
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from engine.markdown_inline_memo import per_inline_source

# env key of the position of an inline source's last `]` (engine.markdown_inline_memo).
_LAST_CLOSE_ENV_KEY = "gm_last_label_close"


def unclosable_bracket_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.before("link", "unclosable_bracket", _unclosable_bracket)


def _unclosable_bracket(state: StateInline, silent: bool) -> bool:
    character = state.src[state.pos]
    if character not in "[!" or state.pos < _last_close(state):
        return False
    if not silent:
        state.pending += character
    state.pos += 1
    return True


def _last_close(state: StateInline) -> int:
    # A narrower posMax (a link label being parsed) only makes "no `]` after" truer.
    return per_inline_source(state, _LAST_CLOSE_ENV_KEY, lambda source: source.rfind("]"))

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

# env entry: (the inline state it was computed for, position of its source's last `]`).
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
    # One search per inline state: a state's source never changes (a link rule narrows
    # posMax while it parses a label, which only makes "no `]` after" truer).
    known = state.env.get(_LAST_CLOSE_ENV_KEY)
    if known is not None and known[0] is state:
        last: int = known[1]
        return last
    last = state.src.rfind("]")
    state.env[_LAST_CLOSE_ENV_KEY] = (state, last)
    return last

"""One mdformat 1.0 helper replaced by a faster one giving the same text.

mdformat's text renderer (`mdformat.renderer._context.text`) calls
`escape_underscore_emphasis` on every text node that holds an `_`, and that helper
rebuilds the union of mdformat's Unicode whitespace and punctuation sets (8,600
characters) on each call: 0.8 ms a node, so 500 lines of `_` took 1.3 s to render and
2,000 list items like `- npc_12` 3.5 s. The version here builds the union once. The
renderer looks the helper up by name in its module at each call, which is where
`install` puts this one; mdformat is pinned exactly for it (pyproject.toml), and
tests/engine/test_mdformat_speedups.py fails if the renderer stops using that name or
the two versions ever disagree.
"""

from __future__ import annotations

import re

import mdformat.renderer._context as mdformat_context
from mdformat import codepoints

# What may not surround an `_` left unescaped: white space, punctuation, a text's edge.
_BAD_NEIGHBOURS: frozenset[str | None] = codepoints.UNICODE_WHITESPACE | codepoints.UNICODE_PUNCTUATION | {None}
_UNDERSCORE = re.compile("_")


def escape_underscore_emphasis(text: str) -> str:
    """`text` with a backslash before each `_` that could open or close emphasis: all but
    those between two white space characters or between two word characters."""
    if "_" not in text:
        return text

    def escaped(match: re.Match[str]) -> str:
        at = match.start()
        before = text[at - 1] if at else None
        after = text[at + 1] if at + 1 < len(text) else None
        between_spaces = before in codepoints.UNICODE_WHITESPACE and after in codepoints.UNICODE_WHITESPACE
        inside_a_word = before not in _BAD_NEIGHBOURS and after not in _BAD_NEIGHBOURS
        return "_" if between_spaces or inside_a_word else "\\_"

    return _UNDERSCORE.sub(escaped, text)


def install() -> None:
    mdformat_context.escape_underscore_emphasis = escape_underscore_emphasis  # type: ignore[attr-defined]

"""Facts about an inline source computed once per markdown-it inline state.

An inline rule runs at many positions of one source; what it needs to know about the
whole source (where its last `]` is, which address runs reach an `@`) is found once and
kept in the parse's env beside the state it belongs to. A state's source never changes
(a link rule narrows posMax while it parses a label, never the source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from markdown_it.rules_inline import StateInline

_Fact = TypeVar("_Fact")


def per_inline_source(state: StateInline, key: str, compute: Callable[[str], _Fact]) -> _Fact:
    """`compute(state.src)`, computed on the first call for this state and `key`."""
    known = state.env.get(key)
    if known is not None and known[0] is state:
        fact: _Fact = known[1]
        return fact
    fact = compute(state.src)
    state.env[key] = (state, fact)
    return fact

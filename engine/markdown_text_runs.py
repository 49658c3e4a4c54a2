"""The "text" inline rule: mdformat-gfm's, with its stops found in linear time.

mdformat-gfm's rule ends a run of plain text before a markdown-it terminator character or
where a GFM autolink may start (after a space, `*`, `_`, `~` or `(`: `www.`, `http`,
`mailto:`, `xmpp:`, or an e-mail address). It finds that stop with one regular
expression whose e-mail branch reads the whole run of address characters at every
candidate: `_a_a_a…` took time in n squared (100 KB: 6 s). Here the same stop is found
with the e-mail runs that reach an `@` listed once per inline source, so each call costs
what it skips. Same stops, so the same tokens (tested against the original).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from engine.markdown_inline_memo import per_inline_source

_TERMINATOR = re.compile(r"[\n!#$%&*+\-:<=>@\[\\\]^_`{}~]")
_AUTOLINK_AT_START = re.compile(r"www\.|http|mailto:|xmpp:|[a-zA-Z0-9._+-]+@")
# A terminator, or an autolink keyword after a boundary character: whichever comes first.
_STOP = re.compile(_TERMINATOR.pattern + r"|(?<=[ \t\n\v\f\r*_~(])(?:www\.|http|mailto:|xmpp:)")
_ADDRESS_RUN = re.compile(r"[a-zA-Z0-9._+-]+")
_BOUNDARY = re.compile(r"[ \t\n\v\f\r*_~(]")
# env key of an inline source's address runs that reach an `@` (engine.markdown_inline_memo).
_ADDRESS_RUNS_ENV_KEY = "gfm_address_runs"


def linear_text_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.at("text", _text)


def _text(state: StateInline, silent: bool) -> bool:
    start = state.pos
    source = state.src
    if not start and (_TERMINATOR.match(source) or _AUTOLINK_AT_START.match(source)):
        return False
    stop = _next_stop(state, max(start, 1))
    end = state.posMax if stop is None else stop
    if end == start:
        return False
    if not silent:
        state.pending += source[start:end]
    state.pos = end
    return True


def _next_stop(state: StateInline, position: int) -> int | None:
    """The first position from `position` on holding a terminator or the start of a
    possible autolink after a boundary character (None if there is none)."""
    source = state.src
    found = _STOP.search(source, position)
    stop = found.start() if found else None
    runs = _address_runs(state)
    # From the last run starting at or before `position` (it may contain it). Indexed,
    # not sliced: a copy of the runs after it cost time in n squared over `a@b a@b …`.
    first = max(bisect_right(runs, (position, len(source))) - 1, 0)
    for index in range(first, len(runs)):
        run_start, run_end = runs[index]
        if stop is not None and run_start >= stop:
            break
        if run_end <= position:
            continue
        # An address may start anywhere in the run after a boundary character.
        boundary = _BOUNDARY.search(source, max(run_start, position) - 1, run_end - 1)
        if boundary and (stop is None or boundary.start() + 1 < stop):
            stop = boundary.start() + 1
            break
    return stop


def _address_runs(state: StateInline) -> list[tuple[int, int]]:
    return per_inline_source(state, _ADDRESS_RUNS_ENV_KEY, _runs_reaching_an_at)


def _runs_reaching_an_at(source: str) -> list[tuple[int, int]]:
    if "@" not in source:
        return []
    return [(run.start(), run.end()) for run in _ADDRESS_RUN.finditer(source) if source.startswith("@", run.end())]

"""Telling, before its inline parse, that a parse repeats an earlier one token for token.

Normalization checks that its output renders to itself, which takes a second parse, and
on a long paragraph the inline parse is most of a parse's time. That inline parse is a
function of an inline token's content, the link references (the only part of env that
inline rules read) and the parser's options; the core rules after it work on the tokens
alone, and rendering reads tokens and references but not line numbers. So when the block
tokens of the second parse, line numbers aside, and its references equal those of the
first, the second parse would end with the first's tokens and render the same bytes: the
first parse's tree stands for it and its inline parse is not needed.

A core rule placed between the block stage (GM stripping included) and the inline parse
records this fingerprint in env, compares it with an expected one when the caller gives
one, and on a match empties the token stream so that nothing is left to parse.
"""

from __future__ import annotations

import copy
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

_FINGERPRINT_ENV_KEY = "gm_block_fingerprint"
_EXPECTED_ENV_KEY = "gm_expected_fingerprint"
_REPEATED_ENV_KEY = "gm_repeated"

Fingerprint = tuple[list[tuple[Any, ...]], list[tuple[str, str, str]]]


def repeat_detecting_plugin(md: MarkdownIt) -> None:
    """Add the fingerprint rule to `md` right before its inline parse (use it last)."""
    md.core.ruler.before("inline", "gm_repeat", _fingerprint_rule)


def expecting(fingerprint: Fingerprint) -> dict[str, Any]:
    """A fresh env for a parse that stops before its inline stage if it has `fingerprint`."""
    return {_EXPECTED_ENV_KEY: fingerprint}


def fingerprint(env: dict[str, Any]) -> Fingerprint:
    """The fingerprint a parse with this env recorded."""
    recorded: Fingerprint = env[_FINGERPRINT_ENV_KEY]
    return recorded


def repeated(env: dict[str, Any]) -> bool:
    """Whether the parse with this env had the expected fingerprint (and stopped early)."""
    return bool(env.get(_REPEATED_ENV_KEY))


def _fingerprint_rule(state: StateCore) -> None:
    references = state.env.get("references", {})
    recorded: Fingerprint = (
        [_token_fingerprint(token) for token in state.tokens],
        [(label, entry["href"], entry["title"]) for label, entry in sorted(references.items())],
    )
    state.env[_FINGERPRINT_ENV_KEY] = recorded
    if state.env.get(_EXPECTED_ENV_KEY) == recorded:
        state.env[_REPEATED_ENV_KEY] = True
        state.tokens.clear()


def _token_fingerprint(token: Token) -> tuple[Any, ...]:
    # Every field but `map` (line numbers differ between the source and its rendering).
    # Copies of the dicts: the core rules after the inline parse change them in place
    # (task lists set attributes), and the fingerprint is of the tokens as they are now.
    return (
        token.type,
        token.tag,
        token.nesting,
        dict(token.attrs),
        token.markup,
        token.info,
        copy.deepcopy(token.meta) if token.meta else None,
        token.block,
        token.hidden,
        token.content,
        token.level,
        [_token_fingerprint(child) for child in token.children] if token.children else None,
    )

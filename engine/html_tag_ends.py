"""Where a tag ends when read from any position of a text, found for all of them at once.

A tag's end is its first `>` outside quoted attribute values; as in a browser, a quote
opens a value only after `=` (in `<p>The orc's hp<half`, the apostrophe is text). Reading
that from each `<` of a text in turn costs time in n squared when the tags do not end
(`<a x="` over and over); this index reads the text once, from its end: past a `>`, a tag
ends there; past a value's quote, it ends where a tag read from after the closing quote
does; past any other quote, where it would from the next character.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right

_TAG_SPECIALS = re.compile(r"[>\"']")


class TagEnds:
    def __init__(self, text: str) -> None:
        self.specials = [match.start() for match in _TAG_SPECIALS.finditer(text)]
        """Offsets of `>`, `"` and `'`: all that decides where a tag ends."""
        self.ends: list[int | None] = [None] * len(self.specials)
        """End of a tag read from just before `specials[i]` on; None when it never ends."""
        for index in range(len(self.specials) - 1, -1, -1):
            at = self.specials[index]
            if text[at] == ">":
                self.ends[index] = at + 1
                continue
            if not _opens_a_value(text, at):
                self.ends[index] = self.ends[index + 1] if index + 1 < len(self.specials) else None
                continue
            closing = text.find(text[at], at + 1)
            after_value = bisect_right(self.specials, closing)
            if closing != -1 and after_value < len(self.specials):
                self.ends[index] = self.ends[after_value]

    def end_from(self, position: int) -> int | None:
        """Offset just past the `>` ending a tag whose attributes are read from
        `position` on, or None when it never ends."""
        following = bisect_left(self.specials, position)
        return self.ends[following] if following < len(self.specials) else None


def _opens_a_value(text: str, quote_at: int) -> bool:
    before = quote_at - 1
    while before >= 0 and text[before] in " \t\n\r\f":
        before -= 1
    return before >= 0 and text[before] == "="


@functools.lru_cache(maxsize=8)
def tag_ends(text: str) -> TagEnds:
    # Asked about every `<` of one text in turn: built once per text.
    return TagEnds(text)

"""Whether a `<section ...>` tag opens a Foundry secret section (contract section 6).

The class attribute is read from three parses of the tag: one that skips quoted attribute
values (which may hold `>`), one that ends at the first `>` as a browser does when a
quote is never closed, and one that, as a browser, takes a quote for a value's only after
`=`, so a stray quote cannot hide the class from us. A tag is secret
when either reading holds a class whose value names "secret" (`class="&#115;ecret"`
included: a browser reads entities).

Most tags end within `MAX_TAG_LENGTH` characters and are read there. A longer one (a style
attribute holding a `data:` image, a tag that a stray quote stretches over the rest of the
document) is read to its end all the same, through an index of the text built once, so
that many `<section`s inside one long tag still cost linear time.
"""

from __future__ import annotations

import functools
import html
import re
from bisect import bisect_left
from dataclasses import dataclass

from engine.html_tag_ends import TagEnds, tag_ends
from engine.markdown_inert import MAX_TAG_LENGTH
from engine.markdown_text import fold_lookalikes

# The whole opening tag, with quoted attribute values (which may hold `>`) ...
_SECTION_TAG = re.compile(r"<section(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE)
# ... and, when a quote is never closed, up to the first `>` as a browser would ...
_SECTION_TAG_UNQUOTED = re.compile(r"<section[^>]*>", re.IGNORECASE)
# ... and as a browser reads values: quoted only after `=` (`<section title=Bob's ...>`).
# Atomic, so that a tag never ended costs one pass, not one per way to read its quotes.
_SECTION_TAG_BROWSER = re.compile(r"<section(?>=\s*\"[^\"]*\"|=\s*'[^']*'|[^>])*+>", re.IGNORECASE)
_CLASS_ATTRIBUTE = re.compile(r"""\bclass\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.IGNORECASE)
# Every place a class attribute starts, overlapping ones included: inside a long tag, a
# class may start within another attribute's quoted value as one reading sees it.
_CLASS_ATTRIBUTE_STARTS = re.compile(rf"(?={_CLASS_ATTRIBUTE.pattern})", re.IGNORECASE)


def secret_section_tag_end(text: str, position: int, *, complete: bool = True) -> int | None:
    """End offset of a Foundry secret `<section ...>` tag starting at `position`, or None.

    `complete` is False when `text` is a window cut out of a longer text: a tag that runs
    past its end is then taken for a secret section ending there, as what follows the
    window is out of sight.
    """
    limit = min(len(text), position + MAX_TAG_LENGTH)
    # No `>` this far: no reading of the tag ends within it, and the parses need not run.
    terminated = text.find(">", position, limit) != -1
    quote_aware = _SECTION_TAG.match(text, position, limit) if terminated else None
    if quote_aware is None and limit < len(text):
        return _long_tags(text).secret_tag_end(position, complete=complete)
    if quote_aware is None and not complete:
        return len(text)
    readings = (_SECTION_TAG_UNQUOTED, _SECTION_TAG_BROWSER) if terminated else ()
    matches = [quote_aware, *(reading.match(text, position, limit) for reading in readings)]
    ends = [match.end() for match in matches if match and _has_secret_class(match.group())]
    return max(ends) if ends else None


def _has_secret_class(tag: str) -> bool:
    return any(_names_secret(match) for match in _CLASS_ATTRIBUTE.finditer(tag))


def _names_secret(match: re.Match[str]) -> bool:
    # Read as a browser reads it: `class="&#115;ecret"` is the class secret; and compared
    # as it looks, as every GM marker is (a Cyrillic dze for the `s` of `secret`).
    value = html.unescape("".join(value for value in match.groups() if value))
    return "secret" in fold_lookalikes(value).casefold()


@functools.lru_cache(maxsize=4)
def _long_tags(text: str) -> _LongTagIndex:
    # The scan asks about every `<section` of one text in turn: the index is built once.
    return _LongTagIndex.build(text)


@dataclass(frozen=True, slots=True)
class _LongTagIndex:
    """Where each tag of a text ends when read with its quoted values, and where secret
    classes start."""

    length: int
    tag_ends: TagEnds
    secret_class_starts: list[int]

    @classmethod
    def build(cls, text: str) -> _LongTagIndex:
        secret_classes = _CLASS_ATTRIBUTE_STARTS.finditer(text)
        secret_class_starts = [match.start() for match in secret_classes if _names_secret(match)]
        return cls(len(text), tag_ends(text), secret_class_starts)

    def secret_tag_end(self, position: int, *, complete: bool) -> int | None:
        """End of the tag at `position` if it holds a secret class, else None.

        A tag that never ends runs to the end of the text: a browser reading it sees no
        content after it, and a secret class anywhere in it is taken at its word. In a
        text that is not `complete`, such a tag is secret unread.
        """
        end = self.tag_ends.end_from(position)
        if end is None and not complete:
            return self.length
        tag_end = self.length if end is None else end
        first_secret = bisect_left(self.secret_class_starts, position)
        if first_secret < len(self.secret_class_starts) and self.secret_class_starts[first_secret] < tag_end:
            return tag_end
        return None

"""How GM-only markers are compared: as the author sees them, not as the bytes spell them.

A heading name or a `:::gm` line may carry characters that look like nothing or like
ASCII (a byte-order mark pasted at the start, a zero-width space, fullwidth letters from
an IME, a no-break space or form feed instead of a space). Markers are recognized after
folding these away, so what the author sees as `GM` hides what it should.
"""

from __future__ import annotations

import re
import unicodedata

# Characters that render as nothing: zero-width space/joiners, direction marks (Arabic's
# too), embeddings and isolates, word joiner and invisible operators, byte-order mark,
# soft hyphen, Mongolian vowel separator and variation selectors, combining grapheme
# joiner, variation selectors, tag characters, Hangul fillers, Khmer inherent vowels,
# musical formatting characters, the blank Braille pattern.
_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\u00ad\u061c\u180b-\u180f\u034f"
    "\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef\u115f\u1160\u3164\uffa0"
    "\u17b4\u17b5\U0001d173-\U0001d17a\u2800]"
)
_UNICODE_SPACE = re.compile(r"[^\S\n]")


def _letters(*code_points: int) -> str:
    return "".join(map(chr, code_points))


# Letters drawn like Latin ones that NFKC leaves apart: Cyrillic, Greek, Latin small
# capitals (`## GM` written with a Cyrillic em, small capitals from a "fancy text" site),
# Lisu, Cherokee, Coptic, Armenian. Letters only: the cheap test of `folds_to_none_of` is asked
# about `#` and `:`.
_LOOKALIKE_SCRIPTS = (
    ("АВСЕНІЈКМОРЅТХҮԀԌԚԜасеіјорѕхуԁһԛԝмтпк", "ABCEHIJKMOPSTXYDGQWaceijopsxydhqwmtnk"),  # Cyrillic
    ("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοναιεκ", "ABEZHIKMNOPTYXovaiek"),  # Greek
    ("ᴀʙᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢɡ", "ABCDEGHIJKLMNOPRSTUVWYZg"),  # Latin small capitals, script g
    (_letters(0xA4D0, 0xA4D1, 0xA4D3, 0xA4D4, 0xA4D6, 0xA4D7, 0xA4D9, 0xA4DA), "BPDTGKJC"),  # Lisu
    (_letters(0xA4DC, 0xA4DF, 0xA4E0, 0xA4E1, 0xA4E2, 0xA4E3, 0xA4E6, 0xA4E7), "ZMNLSRVH"),
    (_letters(0xA4EA, 0xA4EB, 0xA4EC, 0xA4EE, 0xA4F0, 0xA4F2, 0xA4F3), "WXYAEIO"),
    (_letters(0x13A0, 0x13A2, 0x13AA, 0x13AB, 0x13AC, 0x13B3, 0x13B7, 0x13BB, 0x13C0), "DTAJEWMHG"),  # Cherokee
    (_letters(0x13C3, 0x13D2, 0x13D9, 0x13DA, 0x13DE, 0x13DF, 0x13E2, 0x13E6, 0x13F4), "ZRVSLCPKB"),
    (_letters(0x2C80, 0x2C81, 0x2C88, 0x2C8E, 0x2C92, 0x2C94, 0x2C98, 0x2C9A, 0x2C9E), "AaEHIKMNO"),  # Coptic
    (_letters(0x2C9F, 0x2CA2, 0x2CA3, 0x2CA4, 0x2CA5, 0x2CA6, 0x2CAC, 0x03FA), "oPpCcTXM"),  # and Greek San
    (_letters(0x054F, 0x0555, 0x054D, 0x0578, 0x0585, 0x057D, 0x0570), "SOUnouh"),  # Armenian
)
_LOOKALIKE_LETTERS = str.maketrans(
    "".join(letters for letters, _ in _LOOKALIKE_SCRIPTS), "".join(latin for _, latin in _LOOKALIKE_SCRIPTS)
)


def fold_lookalikes(text: str) -> str:
    """`text` with invisible characters dropped, compatibility forms folded (NFKC:
    fullwidth letters are ASCII ones), look-alike letters of other scripts made Latin and
    every space-like character but a newline made a space."""
    folded = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return _UNICODE_SPACE.sub(" ", folded if folded.isascii() else folded.translate(_LOOKALIKE_LETTERS))


def folds_to_none_of(text: str, characters: str) -> bool:
    """Whether `fold_lookalikes(text)` surely holds none of the ASCII `characters`.

    A cheap test before the folding, which costs most of the time of a document made of
    thousands of tiny blocks. Exact for ASCII text. For other text it reads the
    compatibility decomposition (NFKD) instead: NFKC decomposes each character alone
    (composing again only joins letters and marks), and dropping invisible characters
    adds none, so every ASCII character of the folded text is in the decomposition.
    """
    decomposed = text if text.isascii() else unicodedata.normalize("NFKD", text)
    return not any(character in decomposed for character in characters)


# A footnote definition's label (`[^1]: `; Pandoc's holds no blank) and the blanks after it.
FOOTNOTE_LABEL = re.compile(r"\[\^[^\]\s]+\]:[ \t]*")
# A definition's first line, Pandoc's (`:   text` or `~   text`): a block of its own there.
DEFINITION_MARKER = re.compile(r"[ \t]{0,3}[:~][ \t]")
# The quote markers a raw line starts with, whatever the indentation before each.
QUOTE_PREFIX = re.compile(r"(?:[ \t]*>)*")
# A thematic break, from its first character to the line's end.
THEMATIC_BREAK = r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$"


def after_quote_markers(line: str) -> str:
    """A raw `line` without the quote markers that start it."""
    prefix = QUOTE_PREFIX.match(line)
    assert prefix is not None  # the pattern matches the empty string
    return line[prefix.end() :]


# A line that may be a setext underline, as Pandoc and CommonMark read it (up to three
# spaces before it).
_SETEXT_UNDERLINE = re.compile(r" {0,3}(-+|=+)[ \t]*")


def setext_underline(text: str) -> str | None:
    """`===` or `---` when `text` may be a setext underline of that kind, else None."""
    underline = _SETEXT_UNDERLINE.fullmatch(text)
    return underline.group(1)[0] * 3 if underline else None


def quote_marker_count(line: str) -> int:
    """How many quote markers start a raw `line`."""
    prefix = QUOTE_PREFIX.match(line)
    assert prefix is not None  # the pattern matches the empty string
    return prefix.group().count(">")


# Lines of a quote or list item: a fence there hides closers as much as at the left margin.
_CONTAINER_MARKER = re.compile(r">|[-+*]|\d{1,9}[.)]")
CONTAINER_PREFIX = re.compile(r"(?:[ \t]{0,3}(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t]))[ \t]?)+")


def without_container_prefix(line: str) -> str:
    """`line` without the quote and list markers that start it."""
    prefix = CONTAINER_PREFIX.match(line)
    return line[prefix.end() :] if prefix else line


# The same with Pandoc's markers too, which CommonMark reads as text: its other list
# markers (`a)`, `(iv)`, `B.`, `#.`, the example list's `(@)` or `(@plot)`) and a
# definition's `:` or `~`. An item or definition opened so holds blocks to Pandoc
# (`a) ## GM` is a GM heading in a list item there).
_PANDOC_PREFIX = re.compile(
    r"(?:[ \t]{0,3}(?:>|(?:[-+*:~]|\(?(?:\d{1,9}|[A-Za-z]|[ivxlcdmIVXLCDM]+|#|@[\w-]*)[.)])(?=[ \t]))[ \t]?)+"
)


def without_pandoc_prefix(line: str) -> str:
    """`line` without the quote, list and definition markers that start it, CommonMark's
    and Pandoc's: where a marker starts GM-only content, the reader seeing the most
    markers decides."""
    prefix = _PANDOC_PREFIX.match(line)
    return line[prefix.end() :] if prefix else line


def container_marker_count(line: str) -> int:
    """How many quote and list markers start `line`: how deep in quotes and list items of
    the text being read it stands."""
    prefix = CONTAINER_PREFIX.match(line)
    return len(_CONTAINER_MARKER.findall(prefix.group())) if prefix else 0

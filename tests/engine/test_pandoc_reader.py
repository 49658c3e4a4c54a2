"""Pandoc as a second reader (tests/engine/pandoc_reader.py): what a browser shows."""

from __future__ import annotations

import pytest

from tests.engine.pandoc_reader import pandoc_texts, visible_text
from tests.services import require_binary


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("a<!-- x -->b", "ab"),
        ("a<!-- x --!>b", "ab"),
        ("a<!-->b", "ab"),
        ("a<!--->b", "ab"),
        # A comment never ended hides the rest of the page.
        ("<p>a<!-- x</p>\n<p>b</p>", "a"),
        ('<span title="<!--">b</span>', " <!-- b"),
        ("<script>x</script><style>y</style><title>z</title>a", "a"),
        ("<textarea><!--</textarea>a", "<!--a"),
        ('<img alt="a"> &amp;', " a  &"),
    ],
)
def test_visible_text_is_what_a_browser_shows(page: str, text: str) -> None:
    assert visible_text(page) == text


def test_documents_of_a_batch_stay_apart() -> None:
    # Byte counts frame them: an unclosed comment, fence or code span ends at its document's
    # end. Each text is Pandoc Markdown's reading, then CommonMark's.
    documents = ["a\n\n<!-- x", "```\nb", "`c", "", "d\u00e9 CAN&#65;RY"]
    texts = pandoc_texts(require_binary("pandoc"), documents)
    assert texts == ["a\n<!\u2013 x\na\n", "``` b\nb", "`c\n`c", "\n", "d\u00e9 CANARY\nd\u00e9 CANARY"]

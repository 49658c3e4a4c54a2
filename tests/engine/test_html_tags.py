"""HTML tags as a browser finds them (engine/html_tags.py)."""

from __future__ import annotations

import pytest

from engine.html_tags import element_tags, html_text, is_line_break, tags


def _found(text: str) -> list[tuple[str, bool, str]]:
    return [(tag.name, tag.closing, text[tag.start : tag.end]) for tag in tags(text)]


def test_a_quoted_greater_than_sign_does_not_end_a_tag() -> None:
    text = """<h2 title="a>b" data-x='c>d'>GM</h2>"""
    assert _found(text) == [("h2", False, """<h2 title="a>b" data-x='c>d'>"""), ("h2", True, "</h2>")]


def test_a_quote_outside_a_value_is_part_of_a_name() -> None:
    # `"x` is an attribute name: its `>` ends the tag (a browser reads it so).
    assert _found('<a "x>y">z</a>') == [("a", False, '<a "x>'), ("a", True, "</a>")]


def test_a_tag_that_never_ends_is_the_last_one_and_takes_the_rest() -> None:
    found = list(tags('<b>x</b> <span title="never>closed'))
    assert [(tag.name, tag.end is None) for tag in found] == [("b", False), ("b", False), ("span", True)]


@pytest.mark.parametrize("text", ["a < b", "<3", "x <> y", "<=>"])
def test_a_less_than_sign_before_no_name_is_text(text: str) -> None:
    assert list(tags(text)) == []


@pytest.mark.parametrize(
    ("fragment", "text"),
    [
        ("G<b>M</b>", "GM"),
        ('<span title="x>y">GM</span>', "GM"),
        ("GM<br>notes", "GM notes"),
        ("GM<BR />notes", "GM notes"),
        ("G&#77; &amp; co", "GM & co"),
        ('GM <i title="never ends>notes', "GM "),
    ],
)
def test_the_text_of_html_is_what_a_reader_sees(fragment: str, text: str) -> None:
    assert html_text(fragment) == text


@pytest.mark.parametrize(
    ("tag", "breaks"),
    # A browser reads `</br>` as `<br>`.
    [("<br>", True), ("<br/>", True), ("<BR >", True), ("</br>", True), ("<b>", False), ("<brx>", False)],
)
def test_line_break_tags(tag: str, breaks: bool) -> None:
    assert is_line_break(tag) is breaks


def test_tags_in_raw_text_elements_are_text() -> None:
    text = '<script>var s = "<h1>x</h1>";</script><h2>Real</h2><textarea><h3></textarea><xmp><h4></XMP>'
    names = [(tag.name, tag.closing) for tag in element_tags(text)]
    assert names == [
        ("script", False), ("script", True), ("h2", False), ("h2", True),
        ("textarea", False), ("textarea", True), ("xmp", False), ("xmp", True),
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["<plaintext><h2>x</h2>", "<script><h2>x</h2>"])
def test_a_raw_text_element_never_ended_takes_the_rest(text: str) -> None:
    assert [tag.name for tag in element_tags(text)] == [text[1:].split(">")[0]]


@pytest.mark.parametrize("comment", ["<?php echo '<h2>'; ?>", "<!DOCTYPE html>", "<![CDATA[<h2>x]]>"])
def test_a_bogus_comment_runs_to_the_first_greater_than_sign(comment: str) -> None:
    text = f"a{comment}b"
    found = list(element_tags(text))
    assert found[0].name == "!" and found[0].start == 1
    assert html_text(text) == "a" + text[found[0].end or len(text) :]


@pytest.mark.parametrize(
    ("fragment", "text"),
    [("<script>x</script>GM", "GM"), ("<style>p{}</style>GM", "GM"), ("a<textarea>t</textarea>b", "atb")],
)
def test_the_text_of_scripts_and_styles_is_not_shown(fragment: str, text: str) -> None:
    assert html_text(fragment) == text

"""Hypothesis strategy: adversarial Markdown mixing public blocks and every GM-only form.

A generated document knows its public words (`pubwordN`, each must survive) and holds
the word CANARY in every removed part (none may survive). Removed parts (contract
section 6: containers, GM headings, HTML and Obsidian comments, Foundry secret sections)
hold closers that are not markup (in code, attributes, links, raw-text elements, behind a
backslash), are nested in quotes, lists, HTML and each other, sit in table cells the
parser drops or deeper than its nesting limit, and the whole text may use CRLF or CR line
ends, a byte-order mark, odd indentation and look-alike characters in markers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st


@dataclass
class GeneratedDocument:
    public_words: list[str] = field(default_factory=list)
    canaries: int = 0
    # Public links to definitions written in removed parts: they must not resolve.
    links: list[str] = field(default_factory=list)

    def word(self) -> str:
        word = f"pubword{len(self.public_words)}"
        self.public_words.append(word)
        return word

    def canary(self) -> str:
        self.canaries += 1
        return f"CANARY{self.canaries}"


CONTAINER_OPENERS = [":::gm", ":::GM", "::: gm-only", ":::dm", "::::secret", ":::Secret Title", ":::gm:"]
# Pandoc divs of a GM class.
CONTAINER_OPENERS += ["::: {.gm}", "::: {#plot .secret}"]
# Look-alikes: a no-break space after the colons, fullwidth letters.
CONTAINER_OPENERS += [":::\u00a0gm", ":::\uff47\uff4d", "\u200e:::gm"]
GM_HEADINGS = ["GM", "GM only", "gm-only:", "GM notes", "**GM Secrets**", "DM", "DM notes", "Secret", "[GM] plot"]
# With a Pandoc attribute block.
GM_HEADINGS += ["GM notes {#plot .unnumbered}"]
# Look-alikes: a zero-width space inside, fullwidth letters, a direction mark, a no-break hyphen.
GM_HEADINGS += ["G\u200bM", "\uff27\uff2d", "GM\u200e", "GM\u2011only"]
SECTION_TAGS = ['<section class="secret">', "<section id='s1' class='secret'>", '<SECTION CLASS=secret data-x="a>b">']
# Tags whose class comes after more than the first 4 KB or 32 lines read of them.
SECTION_TAGS += [f'<section style="{"x" * 5000}" class="secret">', "<section\n" + "data-a=1\n" * 40 + "class=secret>"]
FORMS = ["container", "html", "obsidian", "section", "gm_heading"]
CLOSERS = {"container": ":::", "html": "-->", "obsidian": "%%", "section": "</section>"}


def _inert_closer(draw: st.DrawFn, doc: GeneratedDocument, closer: str) -> str:
    """A closer that is not markup, followed by a canary: it must close nothing."""
    places = list(_INERT_PLACES)
    if closer == "-->":
        # markdown-it ends an HTML comment block at the `-->` line, so the fence's closing
        # line opens a new fence that runs to the end: everything after is removed
        # (README: an over-removal, by choice). A bogus comment that the `-->` ends is
        # comment text, which holds no closer.
        places = [place for place in places if not place.endswith("fence") and place not in _ENDED_BY_ITS_CLOSER]
    place = draw(st.sampled_from(places))
    if place == "escaped" and not closer.startswith("<"):
        place = "code"  # only a `<` is escaped away
    return _INERT_PLACES[place].format(closer=closer, canary=doc.canary(), canary2=doc.canary())


_ENDED_BY_ITS_CLOSER = {"instruction", "declaration", "end_tag_bogus_comment"}
# Where a closer is not markup, each followed by a canary the closer must not publish.
_INERT_PLACES = {
    "code": "x `{closer}` {canary}",
    "double_code": "x `` a`{closer} `` {canary}",
    "fence": "```\n{closer}\n```\n{canary}",
    "indented": "{canary}\n\n    {closer}\n\n{canary2}",
    "quoted_fence": "> ```\n> {closer}\n> ```\n\n{canary}",
    "escaped": "a \\{closer} {canary}",
    "attribute": '<a title="{closer}">t</a> {canary}',
    "alt": "![{closer}](x.png) {canary}",
    "title": '[l](x "{closer}") {canary}',
    "definition_title": '[d]: /u "a\n{closer}\nb"\n{canary}',
    "long_attribute": '<img src="data:image/png;base64,' + "A" * 600 + '{closer}"> {canary}',
    "xmp": "<xmp>{closer}</xmp> {canary}",
    "instruction": "<?x {closer} ?> {canary}",
    "declaration": "<!DOCTYPE {closer} > {canary}",
    # Opened in one block, running on into the next (a line interrupting a paragraph, a
    # blank line ending an HTML block).
    "title_over_lines": '<a title="x\n{closer}\n">t</a> {canary}',
    "script_past_a_blank_line": "<div>\n<script>\n\n{closer}\n\n</script>\n</div>\n\n{canary}",
    "end_tag_bogus_comment": "</ {closer} > {canary}",
    "script": "<script>\n{closer}\n</script>\n{canary}",
}


def _body(draw: st.DrawFn, doc: GeneratedDocument, *, form: str, depth: int, enclosing: frozenset[str]) -> str:
    items: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "inert", "nested", "list", "definition", "image", "tooltip"]))
        if kind == "inert" and form in CLOSERS and form != "obsidian":
            # (An Obsidian comment holding a `%%` that might not be markup runs to the end
            # of the document, public words after it included: tests/engine/gm_corpus.)
            items.append(_inert_closer(draw, doc, CLOSERS[form]))
        elif kind == "nested" and depth < 2:
            # A comment of a kind already open would end it, in any reader.
            inner = draw(st.sampled_from([f for f in FORMS if f not in enclosing and f != "gm_heading"]))
            items.append(_removed(draw, doc, form=inner, depth=depth + 1, enclosing=enclosing))
        elif kind == "tooltip":
            # A heading tag in an attribute value (Foundry's tooltips) is text: it ends nothing.
            items.append(f'<div data-tooltip="<h1>{doc.canary()}</h1>">{doc.canary()}</div>')
        elif kind == "list":
            items.append(f"- {doc.canary()}\n  - {doc.canary()}")
        elif kind == "definition":
            label = f"ref{len(doc.links)}"
            doc.links.append(f"[{doc.word()}][{label}]")
            items.append(f"[{label}]: https://{doc.canary()}.example/")
        elif kind == "image":
            items.append(f"![{doc.canary()}](https://img.example/{doc.canary()}.png)")
        else:
            items.append(f"{doc.canary()} {doc.canary()}")
    return "\n\n".join(items)


def _removed(
    draw: st.DrawFn, doc: GeneratedDocument, *, form: str, depth: int = 0, enclosing: frozenset[str] = frozenset()
) -> str:
    body = _body(draw, doc, form=form, depth=depth, enclosing=enclosing | {form})
    if form == "container":
        # A tab typed before the opener makes it an indented code line; the closer may
        # carry a no-break space.
        indent = draw(st.sampled_from(["", "", "\t"])) if depth == 0 else ""
        closer = draw(st.sampled_from(["::::", "::::", "::::\u00a0"]))
        return f"{indent}{draw(st.sampled_from(CONTAINER_OPENERS))}\n{body}\n{closer}"
    if form == "html":
        return f"<!--\n{body}\n-->"
    if form == "obsidian":
        return f"%%\n{body}\n%%"
    if form == "section":
        return f"{draw(st.sampled_from(SECTION_TAGS))}\n\n{body}\n\n</section\n>"
    return f"{_gm_heading_line(draw, doc)}\n\n{body}\n\n{'#' * draw(st.integers(1, 2))} {doc.word()}"


# Setext underlines of level 2 that markdown-it reads as paragraph text: after a no-break
# space, before one, and fullwidth.
_LOOK_ALIKE_DASHES = ("\u00a0---", "---\u00a0", "\uff0d\uff0d\uff0d")


def _gm_heading_line(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    """A level-2 GM heading as an author may write it: in Markdown, as `##` and a no-break
    space (a paragraph to markdown-it), as an HTML heading element (closed, split over
    blank lines, or never closed), as setext lines whose dashes read as an underline only
    once look-alikes are folded, or the no-break or closed HTML form after public words
    in the same paragraph."""
    name = draw(st.sampled_from(GM_HEADINGS))
    # Made only once drawn: the ones after text add a public word to the document.
    styles: dict[str, Callable[[], str]] = {
        "atx": lambda: f"## {name}",
        "no_break_space": lambda: f"##\u00a0{name}",
        "html": lambda: f"<h2>{name}</h2>",
        "html_after_text": lambda: f"{doc.word()} <h2>{name}</h2>",
        "html_split": lambda: f"<h2>\n\n{name}\n\n</h2>",
        "html_never_closed": lambda: f"<h2>{name}",
        "html_with_hidden_tags": lambda: f'<h2><script>x</script><a title="</h2>">{name}</a></h2>',
        "setext_look_alike": lambda: f"{name}\n{draw(st.sampled_from(_LOOK_ALIKE_DASHES))}",
        "no_break_after_text": lambda: f"{doc.word()}\n##\u00a0{name}",
    }
    return styles[draw(st.sampled_from(["atx", *styles]))]()


def _inline_removed(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    canary = doc.canary()
    return draw(
        st.sampled_from(
            [
                f"<!-- {canary} -->",
                f"%% {canary} %%",
                f'<section class="secret">{canary}</section>',
                f"<<!-- {canary} -->!-- {doc.canary()} -->",
                f"%<!-- {canary} -->% {doc.canary()} %%",
                f"<!-- {canary}\n\n{doc.canary()} -->",
                f"%% {canary}\n\n{doc.canary()} %%",
            ]
        )
    )


def _interrupting(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    """A removed block interrupting a paragraph, without blank lines around it."""
    before, canary = doc.word(), doc.canary()
    removed = draw(
        st.sampled_from(
            [
                f"{draw(st.sampled_from(CONTAINER_OPENERS))}\n{canary}\n::::",
                f"{draw(st.sampled_from(SECTION_TAGS))}\n{canary}\n</section>",
                f"<!--\n{canary}\n-->",
            ]
        )
    )
    return f"{before}\n{removed}\n{doc.word()}"


def _public(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    kind = draw(st.sampled_from(["paragraph", "inline", "interrupting", "list", "table", "code", "heading", "html"]))
    if kind == "paragraph":
        return " ".join(doc.word() for _ in range(draw(st.integers(1, 3))))
    if kind == "inline":
        return f"{doc.word()} {_inline_removed(draw, doc)} {doc.word()}"
    if kind == "interrupting":
        return _interrupting(draw, doc)
    if kind == "list":
        return f"- {doc.word()}\n- {doc.word()} {_inline_removed(draw, doc)}"
    if kind == "table":
        extra = draw(st.sampled_from(["", f" {_inline_removed(draw, doc)} |", " <!-- x |"]))
        row = f"| {doc.word()} | {_inline_removed(draw, doc)} |{extra}"
        closing = f"\n| {doc.canary()} --> |" if extra == " <!-- x |" else ""
        return f"| {doc.word()} | {doc.word()} |\n|---|---|\n{row}{closing}"
    if kind == "code":
        return f"```\n{doc.word()} </section> --> :::\n```"
    if kind == "heading":
        return f"{'#' * draw(st.integers(1, 3))} {doc.word()}"
    return f"<div>\n\n{doc.word()} {_inline_removed(draw, doc)}\n\n</div>"


def _dropped_opener(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    """An opener where markdown-it drops it (beyond the nesting limit or the header's
    cell count); the body and the closer follow at the top level."""
    form = draw(st.sampled_from(["html", "obsidian", "section", "container"]))
    opener = {"html": "<!--", "obsidian": "%%", "section": SECTION_TAGS[0], "container": ":::gm"}[form]
    where = draw(st.sampled_from(["deep_quote", "deep_list", "extra_cell"]))
    if where == "deep_quote":
        opening = ">" * draw(st.integers(19, 30)) + f" {opener}"
    elif where == "deep_list":
        depth = draw(st.integers(10, 16))
        opening = "\n".join("  " * level + "- x" for level in range(depth)) + f"\n{'  ' * depth}- {opener}"
    else:
        if form == "container":
            opener = "<!--"
            form = "html"
        opening = f"| a |\n|---|\n| b | {opener} |"
    return f"{opening}\n\n{doc.canary()}\n\n{CLOSERS[form]}"


def _wrapped(draw: st.DrawFn, block: str, *, indent_up_to: int = 3) -> str:
    """`block` indented (less than a code block's 4), then maybe in a quote, list or div."""
    lines = block.split("\n")
    indent = " " * draw(st.integers(0, indent_up_to))
    lines = [indent + line if line else line for line in lines]
    wrapper = draw(st.sampled_from(["none", "none", "quote", "list", "html"]))
    if wrapper == "quote":
        return "\n".join(f"> {line}".rstrip() for line in lines)
    if wrapper == "list":
        # The item's other lines are lined up under its text. Anywhere else they could leave
        # the item, and a closer meant as code inside it would read as a real closer.
        continuation = " " * _item_text_column(lines[0])
        return "\n".join([f"- {lines[0]}", *(f"{continuation}{line}" if line else "" for line in lines[1:])])
    if wrapper == "html":
        return "<div>\n\n" + "\n".join(lines) + "\n\n</div>"
    return "\n".join(lines)


def _item_text_column(first_line: str) -> int:
    """Column where the text of the list item `- {first_line}` starts (CommonMark: the
    marker's spacing is 1 to 4 columns, a tab reaching the next multiple of 4; wider
    spacing leaves the text at column 2, an indented code block inside the item)."""
    column = 1
    for character in " " + first_line:
        if character == " ":
            column += 1
        elif character == "\t":
            column += 4 - column % 4
        else:
            break
    return column if column - 1 <= 4 else 2


def _unclosed_tail(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    form = draw(st.sampled_from(["container", "html", "obsidian", "section", "gm_heading", "fence"]))
    canary = doc.canary()
    return {
        "container": f":::gm\n{canary}",
        "html": f"<!--\n{canary}",
        "obsidian": f"%%\n{canary}",
        "section": f'<section class="secret">\n\n{canary}',
        "gm_heading": f"# GM\n\n{canary}",
        "fence": f"```\ncode\n:::gm\n{canary}",
    }[form]


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, GeneratedDocument]:
    """(raw Markdown, what it holds)."""
    doc = GeneratedDocument()
    blocks: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["public", "public", "removed", "dropped"]))
        if kind == "public":
            blocks.append(_wrapped(draw, _wrapped(draw, _public(draw, doc)), indent_up_to=0))
        elif kind == "removed":
            removed = _removed(draw, doc, form=draw(st.sampled_from(FORMS)))
            removed = _wrapped(draw, _wrapped(draw, removed), indent_up_to=0)
            if removed.lstrip(" ").startswith("\t") and blocks:
                # A tab-indented opener (spaces before the tab or not) is top-level code only
                # where no list item before it takes it in (an item takes lines indented past
                # its text's column, blank line or not): a comment line at column 0 ends any
                # such list first.
                blocks.append("<!-- -->")
            blocks.append(removed)
        else:
            blocks.append(_dropped_opener(draw, doc))
    if draw(st.booleans()):
        blocks.append(_unclosed_tail(draw, doc))
    # Links to the secret definitions come first, so that no unclosed part can swallow them.
    text = "\n\n".join(["\n".join(doc.links), *blocks] if doc.links else blocks)
    if draw(st.booleans()):
        text = "\ufeff" + text
    line_end = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    return text.replace("\n", line_end), doc

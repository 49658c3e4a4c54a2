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
# Armenian look-alikes: capital tiwn for S, vo and oh for n and o.
GM_HEADINGS += ["\u054fecrets", "DM \u0578\u0585tes"]
SECTION_TAGS = ['<section class="secret">', "<section id='s1' class='secret'>", '<SECTION CLASS=secret data-x="a>b">']
# Tags whose class comes after more than the first 4 KB or 32 lines read of them.
# Cyrillic dze and ie in the class.
SECTION_TAGS += ['<section class="\u0455ecr\u0435t">']
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
        # comment text, which holds no closer. Nor is an indented `-->` code: the comment's
        # HTML block, opened by its `<!--` line, runs past blank lines to the first line
        # holding `-->`, however indented (only a comment opened inside another HTML block,
        # `<div>` then `<!--`, ends with that block at a blank line: tests/engine/gm_corpus).
        places = [place for place in places if not place.endswith("fence") and place not in _ENDED_BY_ITS_CLOSER]
        places.remove("indented")
    places += _CLOSER_ONLY_PLACES.get(closer, {})
    place = draw(st.sampled_from(places))
    if place == "escaped" and not closer.startswith("<"):
        place = "code"  # only a `<` is escaped away
    template = _INERT_PLACES.get(place) or _CLOSER_ONLY_PLACES[closer][place]
    cells = " x |" * draw(st.integers(0, 2))
    return template.format(closer=closer, canary=doc.canary(), canary2=doc.canary(), cells=cells)


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


def _deep_list(depth: int, last: str) -> str:
    """`last` in a list item nested `depth` deep; its further lines lined up under its text."""
    first, *rest = last.split("\n")
    lines = ["  " * level + "- x" for level in range(depth)] + [f"{'  ' * depth}- {first}"]
    return "\n".join(lines + [f"{'  ' * (depth + 1)}{line}" for line in rest])


# Places inert for one closer only (another closer there would be markup).
_CLOSER_ONLY_PLACES: dict[str, dict[str, str]] = {
    # A URI autolink that the `-->` ends.
    "-->": {"autolink": "x <http://a/{closer}> {canary}", "autolink_mailto": "x <mailto:d{closer} {canary}"},
    # A `</section>` outside its scope, which a browser ignores: in an element opened
    # inside the section that bounds the scope, or in a table cell of a table opened
    # after the section.
    "</section>": {
        "in_table": "<table><tr><td>{closer} {canary}</td></tr></table> {canary2}",
        "in_object": "<object>{closer} {canary}</object> {canary2}",
        # After an end tag of another such element, which a browser ignores there.
        "in_table_after_other_end_tag": "<table></object>{closer} {canary}</table> {canary2}",
        "in_object_after_other_end_tag": "<object></table>{closer} {canary}</object> {canary2}",
        # After the end tags of an svg or a math, which HTML opened in its integration
        # point holds.
        "in_svg_html": "<svg><desc><div></desc></svg>{closer} {canary}</div></desc></svg> {canary2}",
        "in_math_html": "<math><mi><p></mi></math>{closer} {canary}</p></mi></math> {canary2}",
        # After end tags whose name a no-break space or an ideographic space follows: they
        # end nothing (a name ends at ASCII white space), the script goes on.
        "after_unicode_space_end_tags": "</section\u00a0> <script></script\u3000>{closer} {canary}</script> {canary2}",
        "in_template": "<template>{closer} {canary}</template> {canary2}",
        "in_select": "<select>{closer} {canary}</select> {canary2}",
        "in_svg": "<svg><desc>{closer} {canary}</desc></svg> {canary2}",
        "in_math": "<math><mi>{closer} {canary}</mi></math> {canary2}",
        "in_table_over_blocks": "x <table>\n{closer} {canary}</table> {canary2}",
        "gfm_cell": "| a |\n|---|\n| {closer} {canary} |\n\n{canary2}",
        # Split from its `>` by a quote's marker line, which interrupts the paragraph.
        "split_by_a_quote": "x </section\n> {canary}\n\n{canary2}",
        # On a line the parser drops (nested too deep, or continuing a paragraph there).
        "dropped_quote": "> " * 20 + "{closer} {canary}\n\n{canary2}",
        "dropped_lazy_line": "> " * 20 + "x\n{closer} {canary}\n\n{canary2}",
        "dropped_list": _deep_list(9, "{closer} {canary}") + "\n\n{canary2}",
    },
    # A `:::` in a table cell beyond the header's count, or nested deeper (in a quote or
    # a list item, by its marker or its indentation) than its container's opener.
    ":::": {
        "extra_cell": "| a |\n|---|\n| b |{cells} {closer} |\n\n{canary}",
        "deeper_quote": "> {closer}\n\n{canary}",
        "deeper_item": "- {closer}\n\n{canary}",
        "indented_into_item": "- {canary}\n  {closer}\n  {canary2}",
        "indented_into_item_after_a_lazy_line": "1. {canary}\nlazy\n   {closer}\n\n   {canary2}",
    },
}


# Containers nested in a GM container: fullwidth colons, a zero-width space before, a
# no-break space after the colons.
_INNER_CONTAINER_OPENERS = ("::: note", "\uff1a\uff1a\uff1anote", "\u200b:::note", ":::\u00a0note")
# A handout under a GM heading: a heading (`{heading}`) in an ordinary container (a
# markdown-it-container, a Pandoc div) or in an HTML element, which ends nothing.
_HANDOUTS = (
    "::: handout\n{heading}\n{text}\n:::",
    ":::{{.box}}\n{heading}\n:::",
    "::: note Letter\n{heading}\n{text}\n:::",
    "<blockquote>\n\n{heading}\n\n{text}\n\n</blockquote>",
    "<div>\n\n{heading}\n\n</div>",
    "<template>\n\n{heading}\n\n</template>",
    '<aside class="handout"><h1>{text}</h1></aside>',
)


def _body(draw: st.DrawFn, doc: GeneratedDocument, *, form: str, depth: int, enclosing: frozenset[str]) -> str:
    items: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["text", "inert", "nested", "list", "definition", "image", "tooltip", "div", "inner_container"]
        kind = draw(st.sampled_from(kinds))
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
        elif kind == "div" and form == "gm_heading":
            # A handout in a container or an HTML element under the GM heading: its heading
            # (ATX or setext, of a higher level) ends nothing; the GM text after it stays hidden.
            heading = draw(st.sampled_from([f"# {doc.canary()}", f"{doc.canary()}\n==="]))
            handout = draw(st.sampled_from(_HANDOUTS)).format(heading=heading, text=doc.canary())
            items.append(f"{handout}\n\n{doc.canary()}")
        elif kind == "inner_container" and form == "container":
            # A container nested in the GM one, its opening line a look-alike: its closing
            # line (read as `:::` too) ends it, not the GM container.
            opener = draw(st.sampled_from(_INNER_CONTAINER_OPENERS))
            closer = draw(st.sampled_from([":::", "\uff1a\uff1a\uff1a"]))
            items.append(f"{opener}\n{doc.canary()}\n{closer}\n\n{doc.canary()}")
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


# Setext underlines after a form feed or a vertical tab (read as a space).
_SPACE_LIKE_UNDERLINES = ("\f---", "\v---", "\f --", "\v\f---")  # level 2, as the others
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
        # A form feed or a vertical tab before the underline reads as a space.
        "setext_after_form_feed": lambda: f"{name}\n{draw(st.sampled_from(_SPACE_LIKE_UNDERLINES))}",
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
        # A GM part in the info string (single-line ones only: a backtick fence's info
        # string holds no line break) is removed; the code stays.
        info = draw(st.sampled_from(["", f"js <!-- {doc.canary()} -->", f"js %% {doc.canary()}"]))
        return f"```{info}\n{doc.word()} </section> --> :::\n```"
    if kind == "heading":
        return f"{'#' * draw(st.integers(1, 3))} {doc.word()}"
    return f"<div>\n\n{doc.word()} {_inline_removed(draw, doc)}\n\n</div>"


def _dropped_opener(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    """An opener where markdown-it drops it (beyond the nesting limit, in a table nested
    past it, or in a cell beyond the header's count), a GM heading there too, or a GM
    setext heading continuing lazily a paragraph nested past it; the body and the closer
    (for a GM heading, a public heading) follow at the top level."""
    form = draw(st.sampled_from(["html", "obsidian", "section", "container", "gm_heading"]))
    name = draw(st.sampled_from(GM_HEADINGS))
    opener = {
        "html": "<!--",
        "obsidian": "%%",
        "section": SECTION_TAGS[0],
        "container": ":::gm",
        "gm_heading": draw(st.sampled_from([f"## {name}", f"<h2>{name}"])),
    }[form]
    where = draw(st.sampled_from(list(_DROPPED_PLACES)))
    opening = _DROPPED_PLACES[where](draw, opener, name)
    closers = [] if form == "gm_heading" else [CLOSERS[form]]
    if form == "gm_heading" or where in _SETEXT_PLACES:
        closers.append(f"# {doc.word()}")  # a GM heading's part ends at a heading as high
    return "\n\n".join([opening, doc.canary(), *closers])


def _deep_table(draw: st.DrawFn, cell: str) -> str:
    """A table nested 18+ deep in quotes or list items, `cell` in its row after the
    header's count (or within it, for a GM heading)."""
    prefix = draw(st.sampled_from(["> " * draw(st.integers(18, 24)), "- " * draw(st.integers(18, 24))]))
    extra = " x |" * draw(st.integers(0, 2))
    rows = ["| a | b |", "|---|---|", f"| c |{extra} {cell} |"]
    if prefix.startswith("-"):
        indent = " " * len(prefix)
        return "\n".join([prefix + rows[0], *(indent + row for row in rows[1:])])
    return "\n".join(prefix + row for row in rows)


# Where markdown-it drops an opener: (draw, opener, a GM name) -> the lines holding it
# (`CANARY0`: text under a GM heading there, on the lines right after it).
_DROPPED_PLACES: dict[str, Callable[[st.DrawFn, str, str], str]] = {
    "deep_quote": lambda draw, opener, name: ">" * draw(st.integers(19, 30)) + f" {opener}",
    "deep_list": lambda draw, opener, name: _deep_list(draw(st.integers(10, 16)), opener),
    "extra_cell": lambda draw, opener, name: f"| a |\n|---|\n| b |{' x |' * draw(st.integers(0, 2))} {opener} |",
    "deep_table": lambda draw, opener, name: _deep_table(draw, opener),
    # A GM heading indented 4+ columns in text nested too deep (an item in an item).
    "deep_list_setext": lambda draw, opener, name: _deep_list(
        draw(st.integers(10, 14)), f"{name}\n{draw(st.sampled_from(['--', '==', '---']))}\nCANARY0\n{opener}"
    ),
    # Lines continuing lazily a paragraph nested too deep: a GM setext heading there.
    "lazy_setext": lambda draw, opener, name: (
        draw(st.sampled_from([">" * draw(st.integers(19, 26)), "- " * draw(st.integers(19, 26))]))
        + f" {name}\n{draw(st.sampled_from(['==', '--']))}\nCANARY0\n{opener}"
    ),
}
_SETEXT_PLACES = {"deep_list_setext", "lazy_setext"}


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


_UNCLOSED_TAILS = [
    "container",
    "html",
    "obsidian",
    "section",
    "gm_heading",
    "fence",
    "fence_heading_element",
    "fence_setext",
    "quoted_fence_heading_element",
]


def _unclosed_tail(draw: st.DrawFn, doc: GeneratedDocument) -> str:
    form = draw(st.sampled_from(list(_UNCLOSED_TAILS)))
    name = draw(st.sampled_from(GM_HEADINGS))
    underline = draw(st.sampled_from(["===", "---", "\f==="]))
    canary = doc.canary()
    return {
        "container": f":::gm\n{canary}",
        "html": f"<!--\n{canary}",
        "obsidian": f"%%\n{canary}",
        "section": f'<section class="secret">\n\n{canary}',
        "gm_heading": f"# GM\n\n{canary}",
        "fence": f"```\ncode\n:::gm\n{canary}",
        # A GM heading element or a setext GM heading in a fence never closed.
        "fence_heading_element": f"```\ncode\n<h2>{name}</h2>\n{canary}",
        "fence_setext": f"~~~\ncode\n{name}\n{underline}\n{canary}",
        "quoted_fence_heading_element": f'> ~~~\n> code\n> <h3 class="x">{name}</h3>\n> {canary}\n\n{doc.canary()}',
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

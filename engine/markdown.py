"""Public Markdown of summaries and descriptions: GM-only parts removed, then normalized.

Contract section 6. The work happens on markdown-it-py's token stream (the rules live in
`engine.markdown_rules`) and the result is written back by mdformat's renderer with the
GFM extension, so the output is mdformat-style CommonMark with GitHub tables. Pure
functions: no I/O, no web framework.
"""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, ParamSpec, TypeVar

import mdformat.plugins
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdformat.renderer import DEFAULT_RENDERERS, MDRenderer, RenderContext, RenderTreeNode
from mdformat.renderer.typing import Postprocess, Render

from engine.markdown_brackets import unclosable_bracket_plugin
from engine.markdown_lists import list_item
from engine.markdown_regions import container_opener
from engine.markdown_repeat import expecting, fingerprint, repeat_detecting_plugin, repeated
from engine.markdown_rules import gm_stripping_plugin, share_code_spans
from engine.markdown_tasks import task_list_plugin
from engine.markdown_text_runs import linear_text_plugin
from engine.markdown_tree import IndexedRenderTreeNode
from engine.mdformat_speedups import install as install_mdformat_speedups

# Stored with every rendering (engine/renderings.py): a higher version than a row's means
# its stored output may hold text this renderer removes, so it is rendered again.
RENDERER_VERSION = "15"

# mdformat output is not always a fixed point of mdformat at once (raw HTML left behind
# by a removed comment may read as Markdown the second time); a few more passes settle it.
_MAX_NORMALIZATION_PASSES = 4
_DOUBLE_PERCENT = re.compile("%(?=%)")


@dataclass(frozen=True, slots=True)
class PublicMarkdown:
    markdown: str
    """GM-stripped, normalized Markdown; "" when there is no public content."""
    text: str
    """`markdown` without heading markers, bold markers and images; "" when empty."""


_EMPTY = PublicMarkdown("", "")

_Parameters = ParamSpec("_Parameters")
_Result = TypeVar("_Result")


def _without_cycle_collection(function: Callable[_Parameters, _Result]) -> Callable[_Parameters, _Result]:
    """Run `function` with Python's cyclic garbage collector paused.

    A large render allocates hundreds of thousands of tokens and tree nodes that all live
    until it returns; the collector, triggered by those allocations, traversed them again
    and again for nothing (a third of the CPU of a 100 KB paragraph of emphasis). The
    cycles a render leaves behind are collected once the collector runs again. The switch
    is process-wide: a render that finds it already off (another thread's render) leaves
    it alone, which costs that render only the speed-up.
    """

    @functools.wraps(function)
    def paused(*args: _Parameters.args, **kwargs: _Parameters.kwargs) -> _Result:
        with _collector_paused():
            return function(*args, **kwargs)

    return paused


@contextmanager
def _collector_paused() -> Iterator[None]:
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@_without_cycle_collection
def render_public(raw: str | None) -> PublicMarkdown:
    """The public Markdown and text of a stored summary or description."""
    markdown, checked = _normalized(raw)
    if not markdown:
        return _EMPTY
    # The parse that showed the Markdown normalized serves the text too: the parse is the
    # same for both forms, only the output plugins differ.
    text = _render_parse(_TEXT_MD, checked) if checked else markdown_to_text(markdown)
    return PublicMarkdown(markdown, text)


@_without_cycle_collection
def strip_gm_content(raw: str) -> str:
    """Remove every GM-only part of `raw` and normalize what remains ("" if nothing)."""
    return _normalized(raw)[0]


@_without_cycle_collection
def markdown_to_text(markdown: str) -> str:
    """`markdown` without heading markers, bold markers and images (alt text included).

    It goes through the same GM stripping as `strip_gm_content` (a no-op on its output),
    so even a caller passing stored Markdown directly gets no GM-only text back.
    """
    env: dict[str, Any] = {}
    return _render_parse(_TEXT_MD, _Parse(_TEXT_MD.parse(markdown, env), env))


# -- mdformat renderer plugins -------------------------------------------------------------


def _escape_text(text: str, node: RenderTreeNode, context: RenderContext) -> str:
    # Runs after mdformat-gfm's own text escaping (plugins run in the order they are
    # listed in options["parser_extension"], ours last).
    # Text can hold a literal "%%" (written `%\%` or `&#37;&#37;`); spell it so that the
    # output does not open an Obsidian comment when it is read again.
    if "%" in text:
        text = _DOUBLE_PERCENT.sub("%\\\\", text)
    return _escape_tilde_runs(text) if "~" in text else text


def _escape_tilde_runs(text: str) -> str:
    """Escape every bare `~` next to another bare `~`.

    mdformat-gfm escapes `~~` as `\\~~`, which leaves `~~` in a run of three (`\\~~~`),
    and the output then flips between two forms on every normalization.
    """
    units: list[str] = []
    position = 0
    while position < len(text):
        width = 2 if text[position] == "\\" and position + 1 < len(text) else 1
        units.append(text[position : position + width])
        position += width
    return "".join(
        "\\~"
        if unit == "~" and ((index > 0 and units[index - 1] == "~") or units[index + 1 : index + 2] == ["~"])
        else unit
        for index, unit in enumerate(units)
    )


def _escape_container_lines(text: str, node: RenderTreeNode, context: RenderContext) -> str:
    # Same for a paragraph line that reads `:::gm` (written `\:::gm` in the source).
    lines = text.split("\n")
    return "\n".join("\\" + line if container_opener(line) else line for line in lines)


# Characters on which mdformat's text renderer acts (escapes, space runs, a `!` before a
# link); a text node without any of them is written as it is.
_TEXT_NEEDING_WORK = re.compile(r"[\t\n\\*_\[\]<`&!]|  ")
_DEFAULT_TEXT = DEFAULT_RENDERERS["text"]


def _text(node: RenderTreeNode, context: RenderContext) -> str:
    # mdformat's text renderer costs a few regular expressions per node, one of them
    # (character references) hashing a very large pattern on every call: on a paragraph
    # of thousands of short nodes that is most of the rendering time. Same bytes.
    if context.do_wrap or _TEXT_NEEDING_WORK.search(node.content):
        return _DEFAULT_TEXT(node, context)
    return node.content


class _PublicOutputPlugin:
    """mdformat parser extension: keep the output free of GM-only syntax."""

    RENDERERS: ClassVar[Mapping[str, Render]] = MappingProxyType({"text": _text, "list_item": list_item})
    POSTPROCESSORS: ClassVar[Mapping[str, Postprocess]] = MappingProxyType(
        {"text": _escape_text, "paragraph": _escape_container_lines}
    )


def _render_children(node: RenderTreeNode, context: RenderContext) -> str:
    return "".join(child.render(context) for child in node.children)


def _heading_text(node: RenderTreeNode, context: RenderContext) -> str:
    # A setext heading may span lines; as text it is one line, like mdformat's ATX form.
    return _render_children(node, context).replace("\n", " ")


def _no_image(node: RenderTreeNode, context: RenderContext) -> str:
    return ""


def _trim_inline_text(text: str, node: RenderTreeNode, context: RenderContext) -> str:
    # A removed image can leave a paragraph starting with a space, which mdformat would
    # otherwise keep as `&#32;`.
    return text.strip(" \t")


class _TextOutputPlugin:
    """mdformat parser extension: the `*_text` form (contract section 6)."""

    RENDERERS: ClassVar[Mapping[str, Render]] = MappingProxyType(
        {"heading": _heading_text, "strong": _render_children, "image": _no_image}
    )
    POSTPROCESSORS: ClassVar[Mapping[str, Postprocess]] = MappingProxyType({"inline": _trim_inline_text})


class _GfmOutput:
    """mdformat-gfm's renderers and postprocessors but its list item renderer, which
    `engine.markdown_lists.list_item` replaces (two plugins rendering one syntax would
    log a conflict on every render)."""

    def __init__(self, gfm: Any) -> None:
        renderers = {name: render for name, render in gfm.RENDERERS.items() if name != "list_item"}
        self.RENDERERS = MappingProxyType(renderers)
        self.POSTPROCESSORS = gfm.POSTPROCESSORS


# -- parsers, built once -------------------------------------------------------------------

install_mdformat_speedups()


def _build_markdown_it(*output_plugins: object) -> MarkdownIt:
    """A MarkdownIt set up as `mdformat._util.build_mdit` does, plus the GM rules."""
    # MDRenderer meets markdown-it's renderer protocol at run time, not in its annotations.
    mdit = MarkdownIt(renderer_cls=MDRenderer)  # type: ignore[arg-type]
    mdit.options["mdformat"] = {}  # mdformat's defaults: no wrapping, "1." numbering
    mdit.options["store_labels"] = True  # links keep their reference labels
    mdit.options["codeformatters"] = {}
    mdit.options["parser_extension"] = []
    gfm = mdformat.plugins.PARSER_EXTENSIONS["gfm"]
    mdit.options["parser_extension"].append(_GfmOutput(gfm))
    gfm.update_mdit(mdit)  # adds the "tables" extension too
    mdit.use(task_list_plugin)
    mdit.use(linear_text_plugin)
    mdit.use(gm_stripping_plugin)
    mdit.use(unclosable_bracket_plugin)
    mdit.use(repeat_detecting_plugin)
    mdit.options["parser_extension"].extend(output_plugins)
    # markdown-it compiles its rule chains lazily, filling a dict another thread could read
    # half-built (a core chain without the GM rule would strip nothing): compile them now.
    for ruler in (mdit.core.ruler, mdit.block.ruler, mdit.inline.ruler, mdit.inline.ruler2):
        ruler.getRules("")
    return mdit


_PUBLIC_MD = _build_markdown_it(_PublicOutputPlugin)
_TEXT_MD = _build_markdown_it(_PublicOutputPlugin, _TextOutputPlugin)


@dataclass(slots=True)
class _Parse:
    tokens: list[Token]
    env: dict[str, Any]
    tree: IndexedRenderTreeNode | None = None
    """The render tree of `tokens` once built; rendering the text form after the Markdown
    reuses it (building a tree costs about as much as rendering it)."""


def _normalized(raw: str | None) -> tuple[str, _Parse | None]:
    """The public Markdown of `raw`, with a parse that renders it unchanged (None when
    the passes ran out first)."""
    if not raw:
        return "", None
    # A byte-order mark is an encoding artifact, not text: one pasted in front of an opener
    # must not stop it being one (markdown-it reads it as text).
    env: dict[str, Any] = {}
    parse = _Parse(_PUBLIC_MD.parse(raw.removeprefix("\ufeff"), env), env)
    markdown = _render_parse(_PUBLIC_MD, parse)
    for _ in range(_MAX_NORMALIZATION_PASSES):
        if not markdown:
            return "", None
        # Parsing the output again stops before its inline stage when that parse would
        # repeat the last one (engine.markdown_repeat); the last parse then stands for it.
        check_env = expecting(fingerprint(parse.env))
        share_code_spans(parse.env, check_env)
        check_tokens = _PUBLIC_MD.parse(markdown, check_env)
        if repeated(check_env):
            return markdown, parse
        parse = _Parse(check_tokens, check_env)
        again = _render_parse(_PUBLIC_MD, parse)
        if again == markdown:
            return markdown, parse
        markdown = again
    return markdown, None


def _render_parse(mdit: MarkdownIt, parse: _Parse) -> str:
    # mdformat-gfm renders a task list item by taking its checkbox out of the tree, so a
    # tree that has one is built anew for every rendering.
    if parse.tree is None or _has_task_list_item(parse.tokens):
        parse.tree = IndexedRenderTreeNode(parse.tokens)
    renderer = mdit.renderer
    assert isinstance(renderer, MDRenderer)
    rendered = renderer.render_tree(parse.tree, mdit.options, parse.env)
    # Whitespace-only output means no public content.
    return rendered if rendered.strip() else ""


def _has_task_list_item(tokens: list[Token]) -> bool:
    return any(
        token.type == "list_item_open" and "task-list-item" in str(token.attrs.get("class", "")) for token in tokens
    )

"""Lists and task lists in linear time (engine/markdown_lists.py, engine/markdown_tasks.py):
the same tokens as mdit-py-plugins' task list rule, the same output as mdformat and
mdformat-gfm's renderers, and long lists in time linear in their length."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import mdformat.plugins
import pytest
from markdown_it import MarkdownIt
from mdformat.renderer import MDRenderer
from mdformat.renderer.typing import Postprocess, Render
from mdit_py_plugins.tasklists import tasklists_plugin

from engine import markdown
from engine.markdown import render_public
from engine.markdown_tasks import task_list_plugin
from engine.markdown_tree import IndexedRenderTreeNode
from tests.engine.render_growth import cpu_ratio_of_8x_the_input
from tests.engine.test_markdown_shortcuts import _documents

LISTS = [
    "- a\n- b\n- c\n",
    "- a\n\n- b\n- c\n",
    "1. a\n1. b\n\n   para\n3. c\n",
    "- a\n  - b\n    - c\n\n      d\n- e\n",
    "- [ ] a\n- [x] b\n- [X] c\n",
    "- [ ] a\n\n- [x] b\n\n  more\n",
    "1. [x] done\n2. [ ] open\n   - [ ] nested\n",
    "> - [ ] in a quote\n> - b\n",
    "- [ ] \n- [x]  spaced\n- []\n- [y] no\n",
    "-\n- \n  - x\n",
    "- a\n\n      code\n- b\n",
    "* a\n* b\n\n+ c\n+ d\n",
    "- [ ] **bold** and ![img](u)\n- # heading\n",
    "text\n\n- [x] a\n\ntext\n\n1) [ ] b\n",
]


def test_task_items_get_the_tokens_the_library_rule_gives() -> None:
    library = MarkdownIt("commonmark").use(tasklists_plugin)
    ours = MarkdownIt("commonmark").use(tasklists_plugin).use(task_list_plugin)
    for raw in [*LISTS, *_documents()]:
        assert ours.parse(raw) == library.parse(raw)


@pytest.mark.parametrize(("raw", "expected"), [
    ("- [ ]\ttab\n", "- [ ] tab\n"),
    ("- [x]\n  next line\n", "- [x] next line\n"),
    ("- [X]\tb\n", "- [x] b\n"),
])  # fmt: skip
def test_a_box_followed_by_a_tab_or_a_line_end_is_a_task(raw: str, expected: str) -> None:
    # The library rule left these checkboxes empty and mdformat-gfm's renderer raised.
    assert render_public(raw).markdown == expected


class _StockOutputPlugin:
    # The output plugin of engine.markdown without its list item renderer, beside
    # mdformat-gfm as it comes.
    RENDERERS: ClassVar[Mapping[str, Render]] = MappingProxyType({"text": markdown._text})
    POSTPROCESSORS: ClassVar[Mapping[str, Postprocess]] = markdown._PublicOutputPlugin.POSTPROCESSORS


def _stock_render(raw: str) -> str:
    env: dict[str, Any] = {}
    tokens = markdown._PUBLIC_MD.parse(raw, env)
    options = {**markdown._PUBLIC_MD.options}
    options["parser_extension"] = [
        mdformat.plugins.PARSER_EXTENSIONS["gfm"] if isinstance(plugin, markdown._GfmOutput) else plugin
        for plugin in options["parser_extension"]
        if plugin is not markdown._PublicOutputPlugin
    ] + [_StockOutputPlugin]
    return MDRenderer().render_tree(IndexedRenderTreeNode(tokens), options, env)


def _our_render(raw: str) -> str:
    env: dict[str, Any] = {}
    tokens = markdown._PUBLIC_MD.parse(raw, env)
    renderer = markdown._PUBLIC_MD.renderer
    assert isinstance(renderer, MDRenderer)
    return renderer.render_tree(IndexedRenderTreeNode(tokens), markdown._PUBLIC_MD.options, env)


def test_lists_render_as_mdformat_and_mdformat_gfm_render_them() -> None:
    for raw in [*LISTS, *_documents()]:
        assert _our_render(raw) == _stock_render(raw)


@pytest.mark.parametrize("item", ["- a\n", "1. a\n", "- [ ] a\n", "- [x] a\n\n"])
def test_a_list_renders_in_time_linear_in_its_length(item: str) -> None:
    # Linear: about 8; in n squared it was 64.
    assert cpu_ratio_of_8x_the_input(lambda count: item * count, 1_000) < 20

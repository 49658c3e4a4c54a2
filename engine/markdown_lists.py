"""The list item renderer: mdformat's and mdformat-gfm's together, in linear time.

mdformat's `list_item` asks whether the whole list is tight for every item (a
25,000-item list took over nine minutes); mdformat-gfm's wraps it to write task list
items as `[ ]`/`[x]`. This does what the two do, same bytes, with the answer found once
per list (`IndexedRenderTreeNode.is_tight_list`). The parsers here never wrap lines, so
mdformat-gfm's wrapping adjustments have nothing to do.
"""

from __future__ import annotations

import re

from mdformat.renderer import RenderContext, RenderTreeNode

from engine.markdown_tree import IndexedRenderTreeNode

_LEADING_SPACE_REFERENCES = re.compile(r"^(&#32;)+")


def list_item(node: RenderTreeNode, context: RenderContext) -> str:
    checkmark = _take_checkbox(node) if "task-list-item" in str(node.attrs.get("class", "")) else None
    parent = node.parent
    assert isinstance(parent, IndexedRenderTreeNode)
    separator = "\n" if parent.is_tight_list() else "\n\n"
    text = separator.join(rendered for child in node.children if (rendered := child.render(context)))
    if not text.strip():
        text = ""
    if checkmark is None:
        return text
    return f"[{checkmark}] {_LEADING_SPACE_REFERENCES.sub('', text).lstrip()}"


def _take_checkbox(node: RenderTreeNode) -> str:
    """Take a task item's checkbox (HTML markdown-it's task list rule put first in its
    first paragraph) out of the tree, as mdformat-gfm does; "x" if it was checked."""
    inline = node.children[0].children[0]
    checkbox = inline.children[0]
    inline.children.remove(checkbox)
    return "x" if 'checked="checked"' in checkbox.content else " "

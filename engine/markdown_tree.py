"""mdformat's render tree with constant-time sibling lookups.

markdown-it-py's `SyntaxTreeNode.next_sibling` and `previous_sibling` look the node up
in its parent's children list (`list.index`), and mdformat asks for a sibling while
rendering every text node: a paragraph of n inline nodes took time in n squared (a 100 KB
paragraph of emphasis, 19 s). Same tree, same output, positions found once per parent.
"""

from __future__ import annotations

from mdformat.renderer import RenderTreeNode


class IndexedRenderTreeNode(RenderTreeNode):
    @property
    def next_sibling(self) -> IndexedRenderTreeNode | None:
        siblings = self.siblings
        index = self._position() + 1
        return siblings[index] if index < len(siblings) else None

    @property
    def previous_sibling(self) -> IndexedRenderTreeNode | None:
        index = self._position() - 1
        return self.siblings[index] if index >= 0 else None

    def _position(self) -> int:
        parent = self.parent
        if parent is None:
            return 0
        positions: dict[int, int] | None = parent.__dict__.get("_child_positions")
        if positions is None:
            positions = {id(child): index for index, child in enumerate(parent.children)}
            parent.__dict__["_child_positions"] = positions
        return positions[id(self)]

    def is_tight_list(self) -> bool:
        """Whether this bullet or ordered list is tight: no paragraph of its items is shown
        as a paragraph (mdformat's `is_tight_list`). Found once per list: mdformat asks
        again for every item, which made a long list take time in n squared."""
        known: bool | None = self.__dict__.get("_is_tight_list")
        if known is None:
            known = all(
                grandchild.hidden
                for child in self.children
                for grandchild in child.children
                if grandchild.type == "paragraph"
            )
            self.__dict__["_is_tight_list"] = known
        return known

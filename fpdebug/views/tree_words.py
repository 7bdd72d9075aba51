"""A decision-tree leaf's path in words (docs/context-model.md §5.2), shared by the views and the TUI.

A module of its own, light enough for the debugger's cold start (the pass diff is imported lazily).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["TREE_PATH_SEPARATOR", "tree_path_text", "tree_path_words"]

TREE_PATH_SEPARATOR = " › "
"""Between the branch labels of a leaf's path (as the engine writes them in a rule's description)."""


def tree_path_text(path: Sequence[str] | None) -> str:
    """``billing › refund``, or ``(path not recorded)``."""
    return TREE_PATH_SEPARATOR.join(path or []) or "(path not recorded)"


def tree_path_words(path: Sequence[str] | None, label: str | None) -> str:
    """``decision tree support: billing › refund``: the tree and the path a ``tree`` reason took."""
    return f"decision tree {label or '?'}: {tree_path_text(path)}"

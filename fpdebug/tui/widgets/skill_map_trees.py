"""The skill map view's decision trees (docs/context-model.md §5.2): each tree drawn as an indented outline.

A tree has no cursor, so the view marks what the selected pass made of it instead: a leaf that rode
(its pass reason is ``via: tree``) is marked active with the path it took, and a leaf skipped because
a predicate on its path raised is marked with the error. Labels, conditions and errors are trace text
and reach the screen as plain parts (inert, never parsed as markup).
"""

from __future__ import annotations

from collections.abc import Sequence

from fpdebug.trace.schema import PassEvent, SkillMapDecl, TreeBranchDecl
from fpdebug.tui.text import Palette, clip
from fpdebug.tui.widgets.document import DocBuilder, Part
from fpdebug.views.tree_words import tree_path_text

__all__ = ["branch_condition", "trees_section"]

DEPTH_LIMIT = 24
"""Levels drawn before a deeper branch is summarised (a hostile trace can nest without end)."""


def branch_condition(branch: TreeBranchDecl, palette: Palette) -> list[Part]:
    """What a branch tests, in words (as an entry's condition is worded)."""
    if branch.kind == "keywords":
        return ["keywords ", (", ".join(branch.keywords or []) or "(none)", palette.key)]
    if branch.kind == "regex":
        return ["regex /", (branch.pattern or "", palette.key), "/"]
    if branch.kind == "when":
        return ["when ", ("a predicate", palette.key)]
    return [("always holds", palette.dim)]


def trees_section(doc: DocBuilder, skill_map: SkillMapDecl, pass_: PassEvent | None, at: str | None) -> None:
    """The ``Decision trees`` section: every tree, its branches, and what the pass ``at`` made of its leaves.

    Args:
        doc: The document being built.
        skill_map: The run's declared map (nothing is added when it declares no tree).
        pass_: The selected iteration's pass record, when it is readable.
        at: The selected iteration's label.
    """
    if not skill_map.trees:
        return
    palette = doc.palette
    why = "  no cursor: a leaf is active while every branch on its path holds"
    doc.heading("Decision trees", (why, palette.dim))
    for tree in skill_map.trees:
        doc.line("tree ", (tree.label, palette.key), indent=2)
        _branches(doc, tree.branches, pass_, at, "", 0)


def _branches(
    doc: DocBuilder,
    branches: Sequence[TreeBranchDecl],
    pass_: PassEvent | None,
    at: str | None,
    prefix: str,
    depth: int,
) -> None:
    palette = doc.palette
    if depth >= DEPTH_LIMIT:
        doc.line(
            prefix, (f"… {len(branches)} branches deeper than {DEPTH_LIMIT} levels", palette.dim), indent=4
        )
        return
    for index, branch in enumerate(branches):
        last = index == len(branches) - 1
        parts: list[Part] = [
            prefix,
            "└─ " if last else "├─ ",
            (clip(branch.label, 40), palette.heading),
            "  ",
        ]
        parts += branch_condition(branch, palette)
        if branch.leaf is not None:
            parts += ["  → ", (branch.leaf, palette.accent if _rode(pass_, branch.leaf) else "")]
            parts += _leaf_state(pass_, branch.leaf, at, palette)
        doc.line(*parts, indent=4, hang=len(prefix) + 3)
        if branch.branches:
            _branches(doc, branch.branches, pass_, at, prefix + ("   " if last else "│  "), depth + 1)


def _rode(pass_: PassEvent | None, leaf: str) -> bool:
    return pass_ is not None and leaf in pass_.active_ids


def _leaf_state(pass_: PassEvent | None, leaf: str, at: str | None, palette: Palette) -> list[Part]:
    """``● active at T1·I2 (billing › refund)`` or ``✕ predicate threw …`` for the selected pass."""
    if pass_ is None:
        return []
    when = f" at {at}" if at else ""
    for reason in pass_.reasons:
        if reason.id == leaf and reason.via == "tree":
            return [("   ● active", palette.accent), when, " (", (tree_path_text(reason.path), ""), ")"]
    if leaf in pass_.active_ids:
        return [("   ● active", palette.accent), when]
    for skipped in pass_.skipped:
        if skipped.id == leaf:
            error = f": {skipped.error}" if skipped.error else ""
            return [("   ✕ ", palette.bad), f"{skipped.reason}{when}", (error, palette.warn)]
    return []

"""Decision trees of a skill map (docs/context-model.md §5.2): branches with predicates, leaves that are skills.

A tree has no cursor. Each leaf compiles to a ``rule`` that is active on a pass exactly when every
predicate on its path holds (a conjunction, judged root first, in the same pass as every other
trigger). Siblings are not exclusive: two leaves whose paths both hold are both active, which is
what a conjunction says. A raising predicate skips the leaves under it as ``predicate-threw``.

Declare one with :meth:`~fpdebug.engine.skillmap.builder.SkillMapBuilder.tree` and :func:`branch`::

    .tree("support",
          branch("billing", keywords=["invoice", "refund"], then=[
              branch("refund", keywords=["refund"], then="refund"),
              branch("copy", regex=r"\\bcopy\\b", then="invoice_copy"),
          ]),
          branch("shipping", keywords=["parcel"], then="shipping"))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fpdebug.engine.injections import InjectionContext
from fpdebug.engine.skillmap.edges import Entry
from fpdebug.engine.types import require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import TreeBranchDecl, TreeDecl

PATH_SEPARATOR = " › "
"""How a leaf's path is written in its trigger description and in the views."""


@dataclass(frozen=True, slots=True)
class Branch:
    """One branch: a label, a condition (as an entry declares one, or none), then a leaf or branches."""

    label: str
    """The branch's label: one step of the paths through it."""
    condition: Entry
    """The condition, judged with :meth:`Entry.match` (no condition always holds)."""
    leaf: str | None
    """The skill this branch ends in, or ``None`` when it has branches."""
    branches: tuple[Branch, ...]
    """The branches under it (empty when it ends in a leaf)."""

    def declaration(self) -> TreeBranchDecl:
        """The trace's :class:`~fpdebug.trace.schema.TreeBranchDecl`."""
        cond = self.condition.declaration()
        return TreeBranchDecl(
            label=self.label,
            kind=cond.kind,
            keywords=cond.keywords,
            pattern=cond.pattern,
            leaf=self.leaf,
            branches=[b.declaration() for b in self.branches],
        )


def branch(
    label: str,
    *,
    then: str | Sequence[Branch],
    when: Callable[[InjectionContext], object] | None = None,
    keywords: Sequence[str] | None = None,
    regex: str | re.Pattern[str] | None = None,
) -> Branch:
    """Declare a branch of a decision tree.

    Args:
        label: The branch's label, recorded in the path of every leaf under it.
        then: A leaf skill id, or a non-empty list of branches under this one.
        when: A predicate over the pass context.
        keywords: Words matched case-insensitively as whole words in the user message.
        regex: A pattern searched in the user message (must not match the empty string).

    Give at most one of ``when``, ``keywords``, ``regex``; with none the branch always holds.

    Raises:
        DefinitionError: A bad label, two conditions, a bad matcher, an empty ``then``, sibling
            branches sharing a label.
    """
    if not isinstance(label, str) or not label.strip():
        raise DefinitionError(f"a tree branch needs a non-empty label, got {label!r}")
    where = f"tree branch {label!r}"
    condition = _condition(where, when, keywords, regex)
    if isinstance(then, str):
        require_id(then, f"{where}: leaf skill id")
        return Branch(label, condition, then, ())
    if not isinstance(then, Sequence):
        raise DefinitionError(f"{where}: then must be a skill id or a list of branch(...)")
    below = tuple(b for b in then if isinstance(b, Branch))
    if len(below) != len(then):
        raise DefinitionError(f"{where}: then must be a skill id or a list of branch(...)")
    if not below:
        raise DefinitionError(f"{where}: empty branch (then=[] leads to no leaf)")
    _check_siblings(where, below)
    return Branch(label, condition, None, below)


def _condition(
    where: str,
    when: Callable[[InjectionContext], object] | None,
    keywords: Sequence[str] | None,
    regex: str | re.Pattern[str] | None,
) -> Entry:
    """The branch's condition as an :class:`Entry` (the same matchers and checks as an entry's)."""
    if len([x for x in (when, keywords, regex) if x is not None]) > 1:
        raise DefinitionError(f"{where}: give at most one of when, keywords, regex")
    if when is not None and not callable(when):
        raise DefinitionError(f"{where}: when must be callable")
    pattern: re.Pattern[str] | None = None
    if regex is not None:
        try:
            pattern = regex if isinstance(regex, re.Pattern) else re.compile(regex)
        except (re.error, TypeError) as exc:
            raise DefinitionError(f"{where}: bad regex {regex!r}: {exc}") from exc
        if pattern.search("") is not None:
            raise DefinitionError(f"{where}: regex {pattern.pattern!r} matches the empty string")
    words: tuple[str, ...] | None = None
    if keywords is not None:
        if isinstance(keywords, str):
            raise DefinitionError(f"{where}: keywords must be a list of words, not one string")
        words = tuple(keywords)
        if not words or any(not isinstance(w, str) or not w.strip() for w in words):
            raise DefinitionError(f"{where}: keywords must be a non-empty list of non-empty words")
    return Entry("tree", when, words, pattern)


def _check_siblings(where: str, branches: Sequence[Branch]) -> None:
    labels = [b.label for b in branches]
    for label in labels:
        if labels.count(label) > 1:
            raise DefinitionError(f"{where}: two branches are labelled {label!r}; a path must be unambiguous")


@dataclass(frozen=True, slots=True)
class TreeLeaf:
    """A leaf and the branches from the root to it."""

    skill_id: str
    """The leaf skill."""
    tree: str
    """The tree's label."""
    path: tuple[Branch, ...]
    """The branches taken, root first."""

    @property
    def labels(self) -> tuple[str, ...]:
        """The path's branch labels, root first."""
        return tuple(b.label for b in self.path)

    def holds(self, ctx: InjectionContext) -> bool:
        """The conjunction of the path's predicates, root first; a raising predicate propagates.

        It stops at the first branch that fails, as a tree walk would: a predicate below a failed
        branch is never asked (so it cannot raise for a context it was not written for).
        """
        return all(b.condition.match(ctx)[0] for b in self.path)

    def describe(self) -> str:
        """``tree <label>: a › b``, the compiled rule's description."""
        return f"tree {self.tree}: {PATH_SEPARATOR.join(self.labels)}"


@dataclass(frozen=True, slots=True)
class DecisionTree:
    """A declared decision tree: a label and the root's branches."""

    label: str
    """The tree's label."""
    branches: tuple[Branch, ...]
    """The root's branches, in declaration order."""

    def leaves(self) -> Iterator[TreeLeaf]:
        """Every leaf with its path, depth first in declaration order."""

        def walk(branches: Sequence[Branch], above: tuple[Branch, ...]) -> Iterator[TreeLeaf]:
            for b in branches:
                path = (*above, b)
                if b.leaf is not None:
                    yield TreeLeaf(b.leaf, self.label, path)
                else:
                    yield from walk(b.branches, path)

        return walk(self.branches, ())

    def declaration(self) -> TreeDecl:
        """The trace's :class:`~fpdebug.trace.schema.TreeDecl`."""
        return TreeDecl(label=self.label, branches=[b.declaration() for b in self.branches])


def decision_tree(label: str, branches: Sequence[Branch]) -> DecisionTree:
    """Check and make a :class:`DecisionTree` (what :meth:`SkillMapBuilder.tree` declares).

    Raises:
        DefinitionError: A bad label, no branches, something other than ``branch(...)``, sibling
            branches sharing a label.
    """
    require_id(label, "decision tree label")
    where = f"decision tree {label!r}"
    if not branches:
        raise DefinitionError(f"{where}: a tree needs at least one branch")
    if any(not isinstance(b, Branch) for b in branches):
        raise DefinitionError(f"{where}: its branches must be branch(...) declarations")
    _check_siblings(where, branches)
    return DecisionTree(label, tuple(branches))


def check_trees(
    trees: Sequence[DecisionTree], nodes: set[str], entry_ids: set[str], route_ends: set[str]
) -> dict[str, TreeLeaf]:
    """Check the trees against the map and index their leaves by skill id.

    Raises:
        DefinitionError: Two trees with one label, a leaf that is not a node of the map, a leaf
            reached twice (in one tree or two), a leaf that is also an entry or a route's end (a
            leaf has no cursor, so it cannot be entered or routed from or to).
    """
    labels = [t.label for t in trees]
    leaves: dict[str, TreeLeaf] = {}
    for tree in trees:
        if labels.count(tree.label) > 1:
            raise DefinitionError(f"two decision trees are labelled {tree.label!r}")
        for leaf in tree.leaves():
            where = f"decision tree {tree.label!r}: leaf {leaf.skill_id!r}"
            if leaf.skill_id not in nodes:
                raise DefinitionError(f"{where} is not a node of the map (declare it with .skill())")
            seen = leaves.get(leaf.skill_id)
            if seen is not None:
                raise DefinitionError(
                    f"{where} is reached twice ({seen.describe()} and {leaf.describe()}); a leaf has one path"
                )
            if leaf.skill_id in entry_ids:
                raise DefinitionError(f"{where} is also an entry of the map; a tree leaf has no cursor")
            if leaf.skill_id in route_ends:
                raise DefinitionError(f"{where} is also the end of a route; a tree leaf has no cursor")
            leaves[leaf.skill_id] = leaf
    return leaves

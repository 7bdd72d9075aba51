"""The :class:`SkillMapBuilder`: nodes, entries, routes and open skills, checked and built into a :class:`~fpdebug.engine.skillmap.graph.SkillMap`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fpdebug.engine.injections import Injection, InjectionContext, LlmActivated
from fpdebug.engine.skillmap.edges import Entry, Route, declare_entry
from fpdebug.engine.skillmap.graph import SkillMap
from fpdebug.engine.skillmap.guards import Guard, guards_of
from fpdebug.engine.skillmap.tree import Branch, DecisionTree, check_trees, decision_tree
from fpdebug.engine.types import TOOL_STATUSES, ToolResult, ToolStatus, require_id
from fpdebug.errors import DefinitionError


@dataclass
class SkillMapBuilder:
    """Declares a skill map step by step; :meth:`build` checks it and compiles the triggers.

    Local mistakes (both ``when`` and a status on one edge, an empty status set, a guard that can
    never pass) are refused where they are declared; references to unknown nodes at :meth:`build`.
    """

    _nodes: list[Injection] = field(default_factory=list)
    _entries: list[Entry] = field(default_factory=list)
    _routes: list[Route] = field(default_factory=list)
    _open: list[Injection] = field(default_factory=list)
    _trees: list[DecisionTree] = field(default_factory=list)
    _entry_mode: Literal["relevance", "read"] | None = None

    def skill(self, injection: Injection) -> SkillMapBuilder:
        """Add a node (normally a ``define_skill`` injection); its trigger is compiled at build."""
        if not isinstance(injection, Injection):
            raise DefinitionError(f"a skill map node must be an Injection, got {injection!r}")
        self._nodes.append(injection)
        return self

    def entry(
        self,
        skill_id: str,
        *,
        when: Callable[[InjectionContext], object] | None = None,
        keywords: Sequence[str] | None = None,
        regex: str | re.Pattern[str] | None = None,
        label: str | None = None,
    ) -> SkillMapBuilder:
        """Add an entry: unconditional, or exactly one of ``when``, ``keywords``, ``regex``.

        Args:
            skill_id: The node it enters.
            when: A predicate over the pass context.
            keywords: Words matched case-insensitively as whole words in the user message.
            regex: A pattern searched in the user message (must not match the empty string).
            label: A description for the declaration.
        """
        self._entries.append(declare_entry(skill_id, when=when, keywords=keywords, regex=regex, label=label))
        return self

    def route(
        self,
        from_skill: str,
        to_skill: str,
        *,
        on_tool_return: str | re.Pattern[str] | None = None,
        on_tool_status: Iterable[ToolStatus] | None = None,
        when: Callable[[ToolResult], object] | None = None,
        guard: Mapping[str, Mapping[str, object]] | Sequence[Guard] | None = None,
        label: str | None = None,
    ) -> SkillMapBuilder:
        """Add an edge; with no condition at all it is a model-only edge.

        Args:
            from_skill: The source node.
            to_skill: The target node.
            on_tool_return: A tool name (equality) or compiled regex (searched).
            on_tool_status: A non-empty set of the seven statuses.
            when: A predicate over the tool RESULT; not allowed together with ``on_tool_status``.
            guard: ``{"field.path": {"gt": 3, "lt": 9}}`` or a list of :class:`Guard`, ANDed.
            label: A description for the declaration.
        """
        require_id(from_skill, "route source")
        require_id(to_skill, "route target")
        where = f"route {from_skill}→{to_skill}"
        statuses: tuple[ToolStatus, ...] | None = None
        if on_tool_status is not None:
            if isinstance(on_tool_status, str):
                on_tool_status = [on_tool_status]  # type: ignore[list-item]
            statuses = tuple(dict.fromkeys(on_tool_status))
            if not statuses:
                raise DefinitionError(f"{where}: on_tool_status is an empty set")
            unknown = [s for s in statuses if s not in TOOL_STATUSES]
            if unknown:
                raise DefinitionError(f"{where}: unknown status(es) {', '.join(map(repr, unknown))}")
            if when is not None:
                raise DefinitionError(f"{where}: declares both when and on_tool_status on one edge")
        if on_tool_return is not None and not isinstance(on_tool_return, str | re.Pattern):
            raise DefinitionError(f"{where}: on_tool_return must be a tool name or a compiled regex")
        if isinstance(on_tool_return, str):
            require_id(on_tool_return, f"{where}: on_tool_return")
        if when is not None and not callable(when):
            raise DefinitionError(f"{where}: when must be callable")
        self._routes.append(
            Route(from_skill, to_skill, on_tool_return, statuses, when, guards_of(guard, where), label)
        )
        return self

    def entry_by_relevance(self) -> SkillMapBuilder:
        """Make the entries exclusive, entered by relevance (the reference's ``entryByRelevance``).

        Each entry compiles to the rule "the cursor is on it" (docs/context-model.md §5.2), so only
        the entered one is active. The turn-start cascade's entry scores pick it (``by: intent``,
        :meth:`Agent.turn_start`); when nothing scores high enough, the first entry in declaration
        order is entered (``by: entry``). The entries must be unconditional.
        """
        return self._exclusive("relevance")

    def entry_by_read(self) -> SkillMapBuilder:
        """Make the entries exclusive, entered by the model reading one (``entryByRead``).

        No entry is entered at a cold start: the cursor stays empty until the model's ``read_skill``
        of an entry moves it (``by: model-pick``). A turn-start verdict still starts the cursor. The
        entries must be unconditional.
        """
        return self._exclusive("read")

    def _exclusive(self, mode: Literal["relevance", "read"]) -> SkillMapBuilder:
        if self._entry_mode is not None and self._entry_mode != mode:
            raise DefinitionError(f"the map's entries are already by {self._entry_mode}, not by {mode}")
        self._entry_mode = mode
        return self

    def open_skill(self, injection: Injection) -> SkillMapBuilder:
        """Add a skill reachable by ``read_skill`` from anywhere, which never moves the cursor."""
        if not isinstance(injection, Injection) or not isinstance(injection.trigger, LlmActivated):
            raise DefinitionError(
                f"an open skill must be an llm-activated injection (define_skill), got {injection!r}"
            )
        self._open.append(injection)
        return self

    def tree(self, label: str, *branches: Branch) -> SkillMapBuilder:
        """Add a decision tree (docs/context-model.md §5.2): each leaf is active while every predicate on its path holds.

        Args:
            label: The tree's label (recorded with each leaf's ``tree`` reason).
            branches: The root's branches, made with :func:`~fpdebug.engine.skillmap.tree.branch`;
                their leaves must be nodes declared with :meth:`skill`.
        """
        self._trees.append(decision_tree(label, branches))
        return self

    def build(self) -> SkillMap:
        """Check the references and compile the map.

        Raises:
            DefinitionError: no nodes, duplicate ids, a node also declared open, an entry or route
                naming an unknown node, a tree leaf that is unknown, reached twice, an entry or a
                route's end.
        """
        if not self._nodes:
            raise DefinitionError("a skill map needs at least one node")
        ids = [node.id for node in self._nodes] + [skill.id for skill in self._open]
        for sid in ids:
            if ids.count(sid) > 1:
                raise DefinitionError(f"duplicate id {sid!r} in the skill map")
        nodes = set(ids[: len(self._nodes)])
        for entry in self._entries:
            if entry.skill_id not in nodes:
                raise DefinitionError(f"entry names unknown node {entry.skill_id!r}")
        for route in self._routes:
            for end in (route.from_skill, route.to_skill):
                if end not in nodes:
                    raise DefinitionError(
                        f"route {route.from_skill}→{route.to_skill} names unknown node {end!r}"
                    )
        if self._entry_mode is not None:
            if not self._entries:
                raise DefinitionError(f"entries by {self._entry_mode} need at least one entry")
            for entry in self._entries:
                if entry.conditional:
                    raise DefinitionError(
                        f"entry {entry.skill_id!r} has a condition, but entries by {self._entry_mode} are "
                        "exclusive and unconditional (the cascade or the model picks one)"
                    )
        leaves = check_trees(
            self._trees,
            nodes,
            {entry.skill_id for entry in self._entries},
            {end for route in self._routes for end in (route.from_skill, route.to_skill)},
        )
        return SkillMap(
            self._nodes,
            self._entries,
            self._routes,
            self._open,
            self._entry_mode,
            trees=self._trees,
            leaves=leaves,
        )

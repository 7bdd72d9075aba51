"""The map's edges: :class:`Entry` (a way in at cold start) and :class:`Route` (a move from a node)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from fpdebug.engine.injections import InjectionContext, tool_name_matches
from fpdebug.engine.skillmap.guards import Guard
from fpdebug.engine.skillmap.moves import bounded_witness
from fpdebug.engine.types import ToolResult, ToolStatus, require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import EdgeDecl, EntryDecl, Witness


@dataclass(frozen=True, slots=True)
class Entry:
    """A way into the map at cold start: unconditional, a ``when(ctx)`` predicate, keywords or a regex."""

    skill_id: str
    """The node it enters."""
    when: Callable[[InjectionContext], object] | None = None
    """A predicate over the pass context."""
    keywords: tuple[str, ...] | None = None
    """Words searched (case-insensitive, whole word) in the user message."""
    pattern: re.Pattern[str] | None = None
    """A regex searched in the user message."""
    label: str | None = None
    """A human description recorded in the declaration."""

    @property
    def kind(self) -> Literal["unconditional", "when", "keywords", "regex"]:
        """How the entry decides."""
        if self.when is not None:
            return "when"
        if self.keywords is not None:
            return "keywords"
        if self.pattern is not None:
            return "regex"
        return "unconditional"

    @property
    def conditional(self) -> bool:
        """Whether it has a condition at all."""
        return self.kind != "unconditional"

    def match(self, ctx: InjectionContext) -> tuple[bool, Witness | None]:
        """Judge the entry on a context; a ``when`` predicate may raise (the caller decides).

        Returns:
            ``(matched, witness)``; the witness only for keyword and regex matches.
        """
        if self.when is not None:
            return bool(self.when(ctx)), None
        if self.keywords is not None:
            for keyword in self.keywords:
                found = re.search(rf"(?<!\w){re.escape(keyword)}(?!\w)", ctx.user_message, re.IGNORECASE)
                if found:
                    return True, Witness(text=bounded_witness(found.group(0)), keyword=keyword)
            return False, None
        if self.pattern is not None:
            found = self.pattern.search(ctx.user_message)
            if found:
                return True, Witness(text=bounded_witness(found.group(0)))
            return False, None
        return True, None

    def declaration(self) -> EntryDecl:
        """The trace's :class:`~fpdebug.trace.schema.EntryDecl`."""
        return EntryDecl(
            skill_id=self.skill_id,
            kind=self.kind,
            keywords=list(self.keywords) if self.keywords is not None else None,
            pattern=self.pattern.pattern if self.pattern is not None else None,
            description=self.label,
        )


def declare_entry(
    skill_id: str,
    *,
    when: Callable[[InjectionContext], object] | None = None,
    keywords: Sequence[str] | None = None,
    regex: str | re.Pattern[str] | None = None,
    label: str | None = None,
    what: str = "entry",
) -> Entry:
    """Check and build an :class:`Entry` (a map's entry, or a turn-start rule): unconditional, or
    exactly one of ``when``, ``keywords``, ``regex``.

    Raises:
        DefinitionError: More than one condition, a bad or empty-matching regex, keywords that are
            not a non-empty list of non-empty words, a ``when`` that is not callable.
    """
    require_id(skill_id, f"{what} skill id")
    given = [x for x in (when, keywords, regex) if x is not None]
    if len(given) > 1:
        raise DefinitionError(f"{what} {skill_id!r}: give at most one of when, keywords, regex")
    pattern: re.Pattern[str] | None = None
    if regex is not None:
        try:
            pattern = regex if isinstance(regex, re.Pattern) else re.compile(regex)
        except re.error as exc:
            raise DefinitionError(f"{what} {skill_id!r}: bad regex {regex!r}: {exc}") from exc
        if pattern.search("") is not None:
            raise DefinitionError(f"{what} {skill_id!r}: regex {pattern.pattern!r} matches the empty string")
    words: tuple[str, ...] | None = None
    if keywords is not None:
        if isinstance(keywords, str):
            raise DefinitionError(f"{what} {skill_id!r}: keywords must be a list of words, not one string")
        words = tuple(keywords)
        if not words or any(not isinstance(w, str) or not w.strip() for w in words):
            raise DefinitionError(
                f"{what} {skill_id!r}: keywords must be a non-empty list of non-empty words"
            )
    if when is not None and not callable(when):
        raise DefinitionError(f"{what} {skill_id!r}: when must be callable")
    return Entry(skill_id, when, words, pattern, label)


@dataclass(frozen=True, slots=True)
class Route:
    """A declared edge. Without any condition it is a model-only edge (``read_skill`` reachable only)."""

    from_skill: str
    """The source; the edge fires only while the cursor is here."""
    to_skill: str
    """The target."""
    on_tool_return: str | re.Pattern[str] | None = None
    """The tool (name or regex, searched) whose result fires it."""
    on_tool_status: tuple[ToolStatus, ...] | None = None
    """Statuses that fire it (the result must declare one)."""
    when: Callable[[ToolResult], object] | None = None
    """A predicate over the RESULT (not the context)."""
    guards: tuple[Guard, ...] = ()
    """Conditions over the result's JSON fields, ANDed."""
    label: str | None = None
    """A human description recorded in the declaration."""

    @property
    def deterministic(self) -> bool:
        """Whether data can fire it (any of tool name, status, ``when``, guard)."""
        return (
            self.on_tool_return is not None
            or self.on_tool_status is not None
            or self.when is not None
            or bool(self.guards)
        )

    def judge(self, result: ToolResult) -> Literal["no", "closed", "fired"]:
        """Match one result (docs/context-model.md §5.3): preconditions, ``when``, then the guard.

        Returns:
            ``fired``; ``closed`` when everything but the guard passed; else ``no``. A raising
            ``when`` is ``no`` for this (edge, result) pair.
        """
        if not self.deterministic:
            return "no"
        if self.on_tool_status is not None and (
            result.status is None or result.status not in self.on_tool_status
        ):
            return "no"
        if self.on_tool_return is not None and not tool_name_matches(self.on_tool_return, result.tool_name):
            return "no"
        if self.when is not None:
            try:
                if not self.when(result):
                    return "no"
            except Exception:  # a raising predicate is no match for this one pair
                return "no"
        if self.guards and not all(g.passes(result.result) for g in self.guards):
            return "closed"
        return "fired"

    def describe_guard(self) -> str | None:
        """The guard's conditions joined by ``and``, or ``None`` without a guard."""
        return " and ".join(g.describe() for g in self.guards) if self.guards else None

    def declaration(self) -> EdgeDecl:
        """The trace's :class:`~fpdebug.trace.schema.EdgeDecl`."""
        spec = self.on_tool_return
        return EdgeDecl(
            from_skill=self.from_skill,
            to_skill=self.to_skill,
            on_tool_return=spec.pattern if isinstance(spec, re.Pattern) else spec,
            tool_is_pattern=isinstance(spec, re.Pattern),
            on_tool_status=list(self.on_tool_status) if self.on_tool_status is not None else None,
            when=(self.label or _name_of(self.when)) if self.when is not None else None,
            guards=[g.declaration() for g in self.guards],
            deterministic=self.deterministic,
        )


def _name_of(fn: Callable[..., object] | None) -> str:
    name = getattr(fn, "__name__", "")
    return name if name and name != "<lambda>" else "when(result)"

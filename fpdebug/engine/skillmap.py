"""The skill map: a builder for entries, routes and open skills; the cursor resolver; the read_skill gate.

Build a map with :class:`SkillMapBuilder`::

    skill_map = (
        SkillMapBuilder()
        .skill(triage).skill(billing).skill(refund)
        .entry("triage")                                        # unconditional
        .entry("billing", keywords=["invoice", "bill"])         # a data matcher (records a witness)
        .route("triage", "billing", on_tool_return="lookup_invoice")
        .route("billing", "refund", on_tool_return="lookup_invoice",
               guard={"amount": {"gt": 0}, "state": {"in": ["paid"]}})
        .route("billing", "triage", on_tool_status={"denied"})
        .route("refund", "billing")                             # no condition: a model-only edge
        .open_skill(helper)
        .build()
    )

:meth:`SkillMap.injections` holds the nodes with their compiled triggers (docs/context-model.md §5.2), then the
open skills. :meth:`SkillMap.explain_next_skill` is the resolver with the precedence of
docs/context-model.md §5.3; :meth:`SkillMap.next_skill` is its memoized form that compiled triggers read, so a pass
makes exactly one resolver call (invariant 1).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias, get_args

from fpdebug.engine.injections import (
    Always,
    Injection,
    InjectionContext,
    LlmActivated,
    Rule,
    tool_name_matches,
    tool_results_of,
)
from fpdebug.engine.types import TOOL_STATUSES, ToolResult, ToolStatus, require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    ConflictParty,
    EdgeDecl,
    EntryDecl,
    GuardDecl,
    RouteConflict,
    SkillGate,
    SkillMapDecl,
    Witness,
)

__all__ = [
    "MOVE_CAUSES",
    "WITNESS_LIMIT",
    "CursorMove",
    "Entry",
    "Guard",
    "GuardOp",
    "PickCarriers",
    "Route",
    "RouteConflictReport",
    "SkillMap",
    "SkillMapBuilder",
    "SkillPick",
    "apply_skill_pick",
    "bounded_witness",
    "gate_skill_pick",
]

MOVE_CAUSES: tuple[str, ...] = (
    "entry",
    "route",
    "model-pick",
    "tool-proposal",
    "intent",
    "continuity",
    "decider",
    "stay",
    "none",
)
"""The ``by`` vocabulary of a cursor move (docs/context-model.md §5.1)."""

WITNESS_LIMIT = 80
"""A witness's maximum length, the closing "…" included."""

GuardOp: TypeAlias = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in"]
"""A guard comparison."""

_GUARD_OPS = frozenset(get_args(GuardOp))
_BOUND_OPS = frozenset({"gt", "gte", "lt", "lte"})
_MISSING = object()


def bounded_witness(text: str) -> str:
    """Collapse whitespace and bound to :data:`WITNESS_LIMIT` characters ("…" counts toward it)."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= WITNESS_LIMIT:
        return collapsed
    return collapsed[: WITNESS_LIMIT - 1] + "…"


# ----------------------------------------------------------------------------------------------
# Guards over a tool result's JSON fields


def _same(a: object, b: object) -> bool:
    # JSON equality: true is not 1.
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


def _orderable(a: object, b: object) -> bool:
    def number(x: object) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    return (number(a) and number(b)) or (isinstance(a, str) and isinstance(b, str))


def _field_of(result: object, path: str) -> object:
    data = result
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except Exception:
            return _MISSING
    for part in path.split("."):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


@dataclass(frozen=True, slots=True)
class Guard:
    """One condition over a result's JSON field; an edge's guards are ANDed."""

    field: str
    """A dotted path into the result (a JSON string result is parsed first)."""
    op: GuardOp
    """The comparison."""
    value: object = None
    """The value compared against (a list for ``in`` / ``not_in``)."""

    def __post_init__(self) -> None:
        require_id(self.field, "guard field")
        if self.op not in _GUARD_OPS:
            raise DefinitionError(
                f"guard on {self.field!r}: {self.op!r} is not one of {', '.join(sorted(_GUARD_OPS))}"
            )
        if self.op in ("in", "not_in"):
            if not isinstance(self.value, list | tuple | set | frozenset):
                raise DefinitionError(
                    f"guard {self.field} {self.op}: needs a list of values, got {self.value!r}"
                )
            object.__setattr__(self, "value", tuple(self.value))
            if self.op == "in" and not self.value:
                raise DefinitionError(f"guard {self.field} in []: can never pass")
        if self.op in _BOUND_OPS and (
            not _orderable(self.value, self.value)
            or (isinstance(self.value, float) and not math.isfinite(self.value))
        ):
            raise DefinitionError(
                f"guard {self.field} {self.op}: needs a finite number or a string, got {self.value!r}"
            )

    def holds_for(self, value: object) -> bool:
        """Whether a field value passes this condition."""
        if value is _MISSING:
            return False
        match self.op:
            case "eq":
                return _same(value, self.value)
            case "ne":
                return not _same(value, self.value)
            case "in":
                return any(_same(value, x) for x in self.value)  # type: ignore[attr-defined]
            case "not_in":
                return not any(_same(value, x) for x in self.value)  # type: ignore[attr-defined]
        if not _orderable(value, self.value):
            return False
        a, b = value, self.value
        match self.op:
            case "gt":
                return a > b  # type: ignore[operator]
            case "gte":
                return a >= b  # type: ignore[operator]
            case "lt":
                return a < b  # type: ignore[operator]
        return a <= b  # type: ignore[operator]

    def passes(self, result: object) -> bool:
        """Whether the result's field passes this condition (a missing field never does)."""
        return self.holds_for(_field_of(result, self.field))

    def describe(self) -> str:
        """``field op value``."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value  # type: ignore[arg-type]
        return f"{self.field} {self.op} {json.dumps(value, default=str)}"

    def declaration(self) -> GuardDecl:
        """The trace's :class:`~fpdebug.trace.schema.GuardDecl`."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value  # type: ignore[arg-type]
        return GuardDecl(field=self.field, op=self.op, value=value)


def _guards(
    guard: Mapping[str, Mapping[str, object]] | Sequence[Guard] | None, where: str
) -> tuple[Guard, ...]:
    if guard is None:
        return ()
    if isinstance(guard, Mapping):
        out: list[Guard] = []
        for field_path, conditions in guard.items():
            if not isinstance(conditions, Mapping) or not conditions:
                raise DefinitionError(f"{where}: guard {field_path!r} needs {{op: value}} conditions")
            out.extend(Guard(field_path, op, value) for op, value in conditions.items())  # type: ignore[arg-type]
        guards = tuple(out)
    else:
        guards = tuple(guard)
        if not all(isinstance(g, Guard) for g in guards):
            raise DefinitionError(f"{where}: guard must be a mapping or a list of Guard")
    if not guards:
        raise DefinitionError(f"{where}: an empty guard")
    by_field: dict[str, list[Guard]] = {}
    for g in guards:
        by_field.setdefault(g.field, []).append(g)
    for field_path, conditions in by_field.items():
        if not _satisfiable(conditions):
            raise DefinitionError(
                f"{where}: the guard on {field_path!r} can never pass ("
                + " and ".join(c.describe() for c in conditions)
                + ")"
            )
    return guards


def _satisfiable(conditions: list[Guard]) -> bool:
    """Whether some JSON value passes every condition on one field."""
    candidates: list[object] | None = None
    for g in conditions:
        if g.op == "eq":
            pool: Iterable[object] = (g.value,)
        elif g.op == "in":
            pool = g.value  # type: ignore[assignment]
        else:
            continue
        candidates = (
            list(pool) if candidates is None else [c for c in candidates if any(_same(c, x) for x in pool)]
        )
    if candidates is not None:
        return any(all(g.holds_for(c) for g in conditions) for c in candidates)
    bounds = [g for g in conditions if g.op in _BOUND_OPS]
    if not bounds:
        return True  # only ne / not_in: finitely many values excluded from infinitely many
    if not all(_orderable(bounds[0].value, g.value) for g in bounds):
        return False
    lows = [g for g in bounds if g.op in ("gt", "gte")]
    highs = [g for g in bounds if g.op in ("lt", "lte")]
    if not lows or not highs:
        return True
    low = max(lows, key=lambda g: (g.value, g.op == "gt"))
    high = min(highs, key=lambda g: (g.value, g.op == "lte"))
    if low.value < high.value:  # type: ignore[operator]
        return True
    if low.value == high.value and low.op == "gte" and high.op == "lte":
        return all(g.holds_for(low.value) for g in conditions)
    return False


# ----------------------------------------------------------------------------------------------
# Entries and routes


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


# ----------------------------------------------------------------------------------------------
# The cursor move


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorMove:
    """What one pass decided about the cursor, and why (docs/context-model.md §5.1)."""

    by: str
    """The clause that decided, from :data:`MOVE_CAUSES`."""
    to_skill: str | None = None
    """The cursor after the pass (``None``: no cursor)."""
    from_skill: str | None = None
    """The cursor before the pass, when there was one."""
    conflict: RouteConflict | None = None
    """``route`` moves only: results whose edges named other targets."""
    witness: Witness | None = None
    """``entry`` moves decided by a data matcher: the bounded matched text."""
    guard: str | None = None
    """``route`` moves: the winning edge's guard, when it had one."""
    guards_closed: tuple[str, ...] | None = None
    """``route`` moves: guarded edges from the cursor whose guard stopped them (``from→to: guard``)."""


@dataclass(frozen=True, slots=True)
class RouteConflictReport:
    """A ``route_conflict`` fact: edges (or proposals) in one batch named different targets."""

    from_skill_id: str | None
    """The cursor the edges or proposals left from."""
    conflict: RouteConflict
    """The winner (first in call order) and the losers."""
    source: Literal["tool-proposal"] | None = None
    """``tool-proposal`` when the conflict was between proposals."""

    def fields(self) -> dict[str, object]:
        """The fields of a ``route_conflict`` event (:class:`~fpdebug.trace.schema.RouteConflictEvent`)."""
        return {
            "from_skill_id": self.from_skill_id,
            "winner": self.conflict.winner,
            "losers": list(self.conflict.losers),
            "source": self.source,
        }


# ----------------------------------------------------------------------------------------------
# The read_skill gate (docs/context-model.md §5.5)


@dataclass(frozen=True, slots=True)
class SkillPick:
    """The gate's verdict on one ``read_skill(id)`` call."""

    skill_id: str
    """The requested id."""
    outcome: Literal["hop", "open", "re-engagement", "rejected"]
    """A hop, an open skill, a parked map member's re-engagement, or rejected."""
    is_hop: bool
    """The id is a hop from the cursor: acceptance writes ``pending_skill_pick`` (moves the cursor)."""
    allowed: tuple[str, ...]
    """What the gate admits from the cursor (hops then open skills); named in a refusal."""
    current_skill_id: str | None = None
    """The cursor when the model asked."""
    posture: str | None = None
    """The gate's posture, when one was set."""

    @property
    def accepted(self) -> bool:
        """Anything but ``rejected``."""
        return self.outcome != "rejected"

    def record(self) -> SkillGate:
        """The trace's :class:`~fpdebug.trace.schema.SkillGate`."""
        return SkillGate(skill_id=self.skill_id, outcome=self.outcome)

    def refusal(self) -> str:
        """The text the model reads instead of the skill when the pick is rejected."""
        where = f"from '{self.current_skill_id}'" if self.current_skill_id is not None else "at the start"
        allowed = ", ".join(self.allowed) if self.allowed else "(none)"
        return f"read_skill refused: '{self.skill_id}' is not reachable {where}. Allowed: {allowed}."


def gate_skill_pick(
    requested_id: str,
    *,
    hops: Collection[str],
    open_skill_ids: Collection[str] = (),
    parked_member_ids: Collection[str] = (),
    current_skill_id: str | None = None,
    posture: Literal["rails", "guard"] | None = None,
    menu: Collection[str] | None = None,
) -> SkillPick:
    """Judge one ``read_skill(id)`` (docs/context-model.md §5.5).

    Args:
        requested_id: The id the model asked for.
        hops: ``allowed_skill_ids(cursor)`` of the graph.
        open_skill_ids: Skills reachable from anywhere that never move the cursor.
        parked_member_ids: Members of parked maps (``parked_member_ids(plan, engagement)``).
        current_skill_id: The cursor this iteration's Evaluate advanced.
        posture: ``rails`` refuses every hop; ``guard`` refuses a hop that is not on ``menu``.
        menu: The outstanding menu for the ``guard`` posture.

    Returns:
        The :class:`SkillPick`. A parked member is admitted even when it is the cursor or not a
        hop, skipping the posture check; it writes ``pending_skill_pick`` only when it is a hop.
    """
    allowed = tuple(dict.fromkeys([*hops, *open_skill_ids]))
    is_hop = requested_id in hops

    def verdict(outcome: Literal["hop", "open", "re-engagement", "rejected"]) -> SkillPick:
        return SkillPick(
            requested_id, outcome, is_hop and outcome != "rejected", allowed, current_skill_id, posture
        )

    if requested_id in parked_member_ids:
        return verdict("re-engagement")
    if is_hop:
        if posture == "rails" or (posture == "guard" and (menu is None or requested_id not in menu)):
            return verdict("rejected")
        return verdict("hop")
    if requested_id in open_skill_ids:
        return verdict("open")
    return verdict("rejected")


@dataclass(frozen=True, slots=True)
class PickCarriers:
    """The three carriers an accepted pick writes, threaded through one tool batch."""

    activated_injection_ids: tuple[str, ...] = ()
    """Turn-cumulative activations (no duplicates)."""
    pending_skill_pick: str | None = None
    """The last accepted hop of the batch (graph agents)."""
    accepted_skill_picks: tuple[str, ...] | None = None
    """Every accepted pick of the batch, no duplicates (``None`` unless maps are mounted)."""

    @classmethod
    def start_of_batch(
        cls, activated: Sequence[str], *, pending_skill_pick: str | None = None, graph: bool, maps: bool
    ) -> PickCarriers:
        """The carriers at the top of an iteration that dispatches tools.

        Args:
            activated: The turn's activations so far.
            pending_skill_pick: The previous value (kept only for agents without a graph).
            graph: A skill map is mounted (``pending_skill_pick`` resets to ``None``).
            maps: The kernel is mounted (``accepted_skill_picks`` resets to ``()``).
        """
        return cls(tuple(activated), None if graph else pending_skill_pick, () if maps else None)


def apply_skill_pick(carriers: PickCarriers, pick: SkillPick) -> PickCarriers:
    """Write an accepted pick into the carriers (a rejected one changes nothing).

    Args:
        carriers: The carriers so far in this batch.
        pick: The gate's verdict.

    Returns:
        New carriers: the id appended to the activations; ``pending_skill_pick`` set for a hop;
        the id appended to ``accepted_skill_picks`` when maps are mounted.
    """
    if not pick.accepted:
        return carriers
    activated = carriers.activated_injection_ids
    if pick.skill_id not in activated:
        activated = (*activated, pick.skill_id)
    accepted = carriers.accepted_skill_picks
    if accepted is not None and pick.skill_id not in accepted:
        accepted = (*accepted, pick.skill_id)
    return PickCarriers(activated, pick.skill_id if pick.is_hop else carriers.pending_skill_pick, accepted)


# ----------------------------------------------------------------------------------------------
# The map


class SkillMap:
    """A built skill map: nodes with compiled triggers, entries, routes, open skills, the resolver.

    Immutable once built (the only state is the resolver's call counter and its one-slot memo).
    """

    __slots__ = ("_calls", "_entries", "_entry_ids", "_injections", "_memo", "_node_ids", "_open", "_routes")

    def __init__(
        self,
        nodes: Sequence[Injection],
        entries: Sequence[Entry],
        routes: Sequence[Route],
        open_skills: Sequence[Injection],
    ) -> None:
        self._node_ids = tuple(node.id for node in nodes)
        self._entries = tuple(entries)
        self._entry_ids = tuple(dict.fromkeys(entry.skill_id for entry in entries))
        self._routes = tuple(routes)
        self._open = tuple(open_skills)
        self._calls = 0
        self._memo: tuple[InjectionContext, CursorMove] | None = None
        self._injections = tuple(self._compile(node) for node in nodes) + self._open

    # -- declaration -----------------------------------------------------------------------

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Every node id, in declaration order."""
        return self._node_ids

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Entries in declaration order."""
        return self._entries

    @property
    def routes(self) -> tuple[Route, ...]:
        """Routes in declaration order."""
        return self._routes

    @property
    def open_skill_ids(self) -> tuple[str, ...]:
        """Open skills, in declaration order."""
        return tuple(skill.id for skill in self._open)

    @property
    def injections(self) -> tuple[Injection, ...]:
        """The nodes with compiled triggers (declaration order), then the open skills."""
        return self._injections

    @property
    def resolver_calls(self) -> int:
        """How many times :meth:`explain_next_skill` ran (instrumentation for invariant 1)."""
        return self._calls

    def declaration(self) -> SkillMapDecl:
        """The trace's :class:`~fpdebug.trace.schema.SkillMapDecl`."""
        return SkillMapDecl(
            nodes=list(self._node_ids),
            entries=[entry.declaration() for entry in self._entries],
            edges=[route.declaration() for route in self._routes],
            open_skills=list(self.open_skill_ids),
        )

    # -- compiled triggers (docs/context-model.md §5.2) -----------------------------------------------------

    def _compile(self, node: Injection) -> Injection:
        own = [entry for entry in self._entries if entry.skill_id == node.id]
        if any(not entry.conditional for entry in own):
            return replace(node, trigger=Always())
        if own:
            return replace(
                node, trigger=Rule(self._entry_rule(node.id, own), description="entry", graph_node=True)
            )
        if any(route.to_skill == node.id and route.deterministic for route in self._routes):
            return replace(
                node, trigger=Rule(self._cursor_rule(node.id), description="cursor", graph_node=True)
            )
        return node  # model-edge-only nodes keep their llm-activated trigger

    def _entry_rule(self, node_id: str, entries: Sequence[Entry]) -> Callable[[InjectionContext], bool]:
        def on_entry(ctx: InjectionContext) -> bool:
            # The entry's own condition runs first so that a raising predicate is reported.
            matched = any(entry.match(ctx)[0] for entry in entries)
            cursor = self.next_skill(ctx)
            if cursor == node_id:
                return True
            if cursor is not None:
                return False
            return matched

        return on_entry

    def _cursor_rule(self, node_id: str) -> Callable[[InjectionContext], bool]:
        def on_cursor(ctx: InjectionContext) -> bool:
            return self.next_skill(ctx) == node_id

        return on_cursor

    # -- the resolver (docs/context-model.md §5.3) ----------------------------------------------------------

    def next_skill(self, ctx: InjectionContext) -> str | None:
        """The cursor after this pass: the pass's resolved move, else one memoized resolver call."""
        return self.move_for(ctx).to_skill

    def move_for(self, ctx: InjectionContext) -> CursorMove:
        """The move of the pass ``ctx`` belongs to, resolving at most once per context object."""
        if ctx.cursor_move is not None:
            return ctx.cursor_move
        memo = self._memo
        if memo is not None and memo[0] is ctx:
            return memo[1]
        move = self.explain_next_skill(ctx)
        self._memo = (ctx, move)
        return move

    def explain_next_skill(self, ctx: InjectionContext) -> CursorMove:
        """Resolve the cursor for one pass, with the precedence of docs/context-model.md §5.3. Never raises.

        Args:
            ctx: The pass context (``current_skill_id`` is the cursor before the pass).

        Returns:
            The :class:`CursorMove`.
        """
        self._calls += 1
        cur = ctx.current_skill_id
        turn_route = ctx.turn_route
        if ctx.iteration == 1 and turn_route is not None and turn_route.to_skill is not None:
            return CursorMove(
                by=turn_route.by,
                to_skill=turn_route.to_skill,
                from_skill=turn_route.from_skill,
                witness=turn_route.witness,
            )
        proposal = ctx.pending_tool_transition.target_skill_id if ctx.pending_tool_transition else None
        pick = ctx.pending_skill_pick
        if cur is None:
            return self._cold_start(ctx, proposal, pick)
        move = self._declared_edges(ctx, cur)
        if move is not None:
            return move
        if proposal is not None and proposal != cur:
            return CursorMove(by="tool-proposal", to_skill=proposal, from_skill=cur)
        if pick is not None and pick != cur:
            return CursorMove(by="model-pick", to_skill=pick, from_skill=cur)
        return CursorMove(by="stay", to_skill=cur, from_skill=cur)

    def _cold_start(self, ctx: InjectionContext, proposal: str | None, pick: str | None) -> CursorMove:
        if ctx.turn_route is None:
            for entry in self._entries:
                try:
                    matched, witness = entry.match(ctx)
                except Exception:  # a raising predicate is no match here
                    continue
                if matched:
                    return CursorMove(by="entry", to_skill=entry.skill_id, witness=witness)
        if proposal is not None and proposal in self._entry_ids:
            return CursorMove(by="tool-proposal", to_skill=proposal)
        if pick is not None and pick in self._entry_ids:
            return CursorMove(by="model-pick", to_skill=pick)
        for entry_id in self._entry_ids:
            if entry_id in ctx.activated_injection_ids:
                return CursorMove(by="model-pick", to_skill=entry_id)
        return CursorMove(by="none")

    def _declared_edges(self, ctx: InjectionContext, cur: str) -> CursorMove | None:
        edges = [route for route in self._routes if route.from_skill == cur and route.deterministic]
        if not edges:
            return None
        winner: tuple[ToolResult, Route] | None = None
        losers: list[tuple[ToolResult, Route]] = []
        fired: set[int] = set()
        closed: set[int] = set()
        for result in tool_results_of(ctx):  # results in CALL order
            hit: Route | None = None
            for index, edge in enumerate(edges):  # edges in DECLARATION order
                verdict = edge.judge(result)
                if verdict == "closed":
                    closed.add(index)
                elif verdict == "fired":
                    fired.add(index)
                    hit = edge
                    break
            if hit is None:
                continue
            if winner is None:
                winner = (result, hit)
            elif hit.to_skill != winner[1].to_skill:
                losers.append((result, hit))
        if winner is None:
            return None

        def party(pair: tuple[ToolResult, Route]) -> ConflictParty:
            return ConflictParty(
                tool_call_id=pair[0].tool_call_id, tool_name=pair[0].tool_name, target=pair[1].to_skill
            )

        shut = tuple(
            f"{edge.from_skill}→{edge.to_skill}: {edge.describe_guard()}"
            for index, edge in enumerate(edges)
            if index in closed and index not in fired
        )
        return CursorMove(
            by="route",
            to_skill=winner[1].to_skill,
            from_skill=cur,
            conflict=RouteConflict(winner=party(winner), losers=[party(p) for p in losers])
            if losers
            else None,
            guard=winner[1].describe_guard(),
            guards_closed=shut or None,
        )

    # -- reachability (docs/context-model.md §5.4) ----------------------------------------------------------

    def reachable_skills(self, cur: str | None) -> tuple[str, ...]:
        """Graph hops: every entry without a cursor; else successors then entries, minus ``cur``."""
        if cur is None:
            return self._entry_ids
        successors = [route.to_skill for route in self._routes if route.from_skill == cur]
        return tuple(sid for sid in dict.fromkeys([*successors, *self._entry_ids]) if sid != cur)

    def allowed_skill_ids(self, cur: str | None) -> tuple[str, ...]:
        """The hops a pick or a proposal may name (open skills are NOT eligible)."""
        return self.reachable_skills(cur)

    def admissible_skill_ids(self, cur: str | None) -> tuple[str, ...]:
        """What the read_skill gate admits from ``cur``: the hops, then the open skills."""
        return tuple(dict.fromkeys([*self.reachable_skills(cur), *self.open_skill_ids]))

    def superseded_entries(self, ctx: InjectionContext) -> tuple[str, ...]:
        """Conditional entries, other than the resolved cursor, whose own condition matched.

        ``()`` when the resolver has no cursor; a raising ``when`` is left out (it is reported as
        ``predicate-threw`` instead).
        """
        cursor = self.next_skill(ctx)
        if cursor is None:
            return ()
        out: list[str] = []
        for entry in self._entries:
            if not entry.conditional or entry.skill_id == cursor or entry.skill_id in out:
                continue
            try:
                matched, _ = entry.match(ctx)
            except Exception:  # reported as predicate-threw by the evaluator
                continue
            if matched:
                out.append(entry.skill_id)
        return tuple(out)

    # -- the gate ------------------------------------------------------------------------------

    def gate(
        self,
        requested_id: str,
        *,
        current_skill_id: str | None,
        parked_member_ids: Collection[str] = (),
        posture: Literal["rails", "guard"] | None = None,
        menu: Collection[str] | None = None,
    ) -> SkillPick:
        """:func:`gate_skill_pick` with this map's hops and open skills."""
        return gate_skill_pick(
            requested_id,
            hops=self.allowed_skill_ids(current_skill_id),
            open_skill_ids=self.open_skill_ids,
            parked_member_ids=parked_member_ids,
            current_skill_id=current_skill_id,
            posture=posture,
            menu=menu,
        )


# ----------------------------------------------------------------------------------------------
# The builder


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
        require_id(skill_id, "entry skill id")
        given = [x for x in (when, keywords, regex) if x is not None]
        if len(given) > 1:
            raise DefinitionError(f"entry {skill_id!r}: give at most one of when, keywords, regex")
        pattern: re.Pattern[str] | None = None
        if regex is not None:
            try:
                pattern = regex if isinstance(regex, re.Pattern) else re.compile(regex)
            except re.error as exc:
                raise DefinitionError(f"entry {skill_id!r}: bad regex {regex!r}: {exc}") from exc
            if pattern.search("") is not None:
                raise DefinitionError(
                    f"entry {skill_id!r}: regex {pattern.pattern!r} matches the empty string"
                )
        words: tuple[str, ...] | None = None
        if keywords is not None:
            if isinstance(keywords, str):
                raise DefinitionError(f"entry {skill_id!r}: keywords must be a list of words, not one string")
            words = tuple(keywords)
            if not words or any(not isinstance(w, str) or not w.strip() for w in words):
                raise DefinitionError(
                    f"entry {skill_id!r}: keywords must be a non-empty list of non-empty words"
                )
        if when is not None and not callable(when):
            raise DefinitionError(f"entry {skill_id!r}: when must be callable")
        self._entries.append(Entry(skill_id, when, words, pattern, label))
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
            Route(from_skill, to_skill, on_tool_return, statuses, when, _guards(guard, where), label)
        )
        return self

    def open_skill(self, injection: Injection) -> SkillMapBuilder:
        """Add a skill reachable by ``read_skill`` from anywhere, which never moves the cursor."""
        if not isinstance(injection, Injection) or not isinstance(injection.trigger, LlmActivated):
            raise DefinitionError(
                f"an open skill must be an llm-activated injection (define_skill), got {injection!r}"
            )
        self._open.append(injection)
        return self

    def build(self) -> SkillMap:
        """Check the references and compile the map.

        Raises:
            DefinitionError: no nodes, duplicate ids, a node also declared open, an entry or route
                naming an unknown node.
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
        return SkillMap(self._nodes, self._entries, self._routes, self._open)

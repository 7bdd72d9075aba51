"""The projections a :class:`~fpdebug.trace.model.RunModel` holds: runs, turns, iterations, leases, maps.

Each keeps only *addresses and small facts* (line numbers, ids, counters, short strings); whole
records stay in the file. :class:`~fpdebug.trace.model.RunModel` builds them from the records of a
trace, in line order, and is their only writer.

Shape::

    RunModel
    ├── header, counts (by kind), invalid_lines, opaque_lines
    └── runs: [Run]                       one per run_id, in order of first appearance
        ├── run_start / run_end lines, provider, model, status, error, tokens, counts
        ├── turns: [Turn]                 turn_start / turn_end lines, user turn totals
        │   └── iterations: [Iteration]   every record of that (turn, iteration), by line
        │       ├── entries (line + kind of each record): pass_line, llm_lines, tool_result_lines, …
        │       ├── cursor move (from, to, by), lease_served ids, route, tokens
        │       └── engagement_changes    (map_id, change) pairs
        ├── leases: [LeaseLifetime]       one per granted lease: grant, passes served, prune
        └── maps: {map_id: MapTimeline}   the map's standing after every pass, and its changes
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypeAlias

from fpdebug.trace.schema import EVENT_KINDS, LeaseRecord

__all__ = [
    "KINDS",
    "KIND_CODES",
    "EngagementNote",
    "Iteration",
    "LeaseLifetime",
    "LeaseState",
    "MapChange",
    "MapPoint",
    "MapTimeline",
    "Run",
    "RunStatus",
    "Turn",
]

KINDS: tuple[str, ...] = tuple(sorted(EVENT_KINDS))
"""Every event kind, in a fixed order: ``KINDS[code]`` is the kind of code ``code``."""

KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
"""The one-byte code of each kind, as packed in :attr:`Iteration.entries`."""

RunStatus: TypeAlias = Literal["running", "completed", "failed", "interrupted", "paused"]
"""A run's status: ``running`` until its ``run_end`` line arrives."""

LeaseState: TypeAlias = Literal["alive", "spent", "tenure-ended"]
"""A lease is alive until pruned; then it is spent or its tenure ended."""

MapChange: TypeAlias = Literal["founded", "engaged", "reengaged", "upgraded", "tenant-changed", "parked"]
"""How a map's standing changed on a pass (``engaged`` is a change carrying no flag)."""


class EngagementNote(NamedTuple):
    """One map's change on a pass."""

    map_id: str
    """The map."""
    change: str
    """The change (:data:`MapChange`)."""


@dataclass(slots=True, eq=False)
class Iteration:
    """One iteration of a turn: an Evaluate pass, the LLM call, the tool batch, and what they caused."""

    run_id: str
    """The run."""
    turn: int
    """The turn number."""
    number: int
    """The iteration number (1-based within the turn)."""
    entries: array[int] = field(default_factory=lambda: array("q"))
    """Every record of this iteration in file order, packed as ``line << 8 | kind code`` (one
    8-byte slot per record; use :attr:`lines`, :meth:`lines_of` and friends to read it)."""
    cursor_from: str | None = None
    """The cursor before the pass."""
    cursor_to: str | None = None
    """The cursor after the pass."""
    cursor_by: str | None = None
    """The clause that moved (or kept) the cursor."""
    lease_served: tuple[str, ...] = ()
    """Instruction ids a lease served on this pass (the pass's ``lease_active_ids``)."""
    route: str | None = None
    """The route decided after the LLM call (``tool-calls`` / ``final``)."""
    input_tokens: int = 0
    """Prompt tokens of this iteration's LLM call(s)."""
    output_tokens: int = 0
    """Completion tokens of this iteration's LLM call(s)."""
    engagement_changes: tuple[EngagementNote, ...] = ()
    """Each map's change on this pass."""

    def add(self, line: int, kind: str) -> None:
        """Record that ``line`` (of ``kind``) belongs to this iteration."""
        self.entries.append(line << 8 | KIND_CODES[kind])

    @property
    def lines(self) -> list[int]:
        """Every record of this iteration, by line, in file order."""
        return [entry >> 8 for entry in self.entries]

    @property
    def kinds(self) -> list[str]:
        """The kind of each line of :attr:`lines`."""
        return [KINDS[entry & 0xFF] for entry in self.entries]

    def lines_of(self, kind: str) -> list[int]:
        """The lines of this iteration's records of one kind, in file order."""
        code = KIND_CODES[kind]
        return [entry >> 8 for entry in self.entries if entry & 0xFF == code]

    def first_of(self, kind: str) -> int | None:
        """The first line of ``kind`` in this iteration, if any."""
        code = KIND_CODES[kind]
        for entry in self.entries:
            if entry & 0xFF == code:
                return entry >> 8
        return None

    def has(self, kind: str) -> bool:
        """Whether this iteration has a record of ``kind``."""
        return self.first_of(kind) is not None

    @property
    def pass_line(self) -> int | None:
        """The ``pass`` record."""
        return self.first_of("pass")

    @property
    def cursor_line(self) -> int | None:
        """The ``cursor_move`` record."""
        return self.first_of("cursor_move")

    @property
    def engagement_line(self) -> int | None:
        """The ``engagement`` record."""
        return self.first_of("engagement")

    @property
    def llm_lines(self) -> list[int]:
        """The ``llm_call`` records (normally one)."""
        return self.lines_of("llm_call")

    @property
    def tool_result_lines(self) -> list[int]:
        """The ``tool_result`` records, in call order."""
        return self.lines_of("tool_result")

    @property
    def lease_grant_lines(self) -> list[int]:
        """The ``lease_grant`` records."""
        return self.lines_of("lease_grant")

    @property
    def lease_prune_lines(self) -> list[int]:
        """The ``lease_prune`` records (evaluate sweep and tool-calls prune)."""
        return self.lines_of("lease_prune")

    @property
    def finding_lines(self) -> list[int]:
        """The ``finding`` records."""
        return self.lines_of("finding")

    @property
    def skill_rejected_lines(self) -> list[int]:
        """The ``skill_rejected`` records."""
        return self.lines_of("skill_rejected")

    @property
    def route_conflict_lines(self) -> list[int]:
        """The ``route_conflict`` records."""
        return self.lines_of("route_conflict")

    @property
    def reroute_superseded_lines(self) -> list[int]:
        """The ``reroute_superseded`` records."""
        return self.lines_of("reroute_superseded")

    @property
    def first_line(self) -> int:
        """The first record of the iteration."""
        return self.entries[0] >> 8

    @property
    def last_line(self) -> int:
        """The last record of the iteration."""
        return self.entries[-1] >> 8

    def __len__(self) -> int:
        """How many records the iteration has."""
        return len(self.entries)


@dataclass(slots=True, eq=False)
class Turn:
    """One user turn: its iterations and its turn-level records."""

    run_id: str
    """The run."""
    number: int
    """The turn number (0 collects records that came before any turn started)."""
    start_line: int | None = None
    """The ``turn_start`` record."""
    end_line: int | None = None
    """The ``turn_end`` record; ``None`` while the turn is running."""
    iterations: list[Iteration] = field(default_factory=list)
    """Iterations in order of first appearance."""
    lines: array[int] = field(default_factory=lambda: array("q"))
    """Turn-level records: ``turn_start``, ``turn_end`` and events that carry no iteration."""
    iteration_count: int | None = None
    """The iteration of the final pass (from ``turn_end``)."""
    stopped_early: str | None = None
    """Why a limit cut the turn short (from ``turn_end``), if one did."""
    refusal: str | None = None
    """Set when the turn's final reply was a refusal (from ``turn_end``)."""
    input_tokens: int = 0
    """Prompt tokens of the turn's LLM calls, cache reads and writes included."""
    output_tokens: int = 0
    """Completion tokens of the turn's LLM calls."""
    highest: int = 0
    """The highest iteration number seen (a larger one is new without a search)."""

    @property
    def ended(self) -> bool:
        """Whether the ``turn_end`` record has arrived."""
        return self.end_line is not None

    def iteration(self, number: int) -> Iteration | None:
        """The iteration with this number, if present."""
        iterations = self.iterations
        # Iterations are numbered densely from 1 and arrive in order: try the direct slot first.
        if 0 < number <= len(iterations) and iterations[number - 1].number == number:
            return iterations[number - 1]
        if number > self.highest:
            return None
        for iteration in reversed(iterations):
            if iteration.number == number:
                return iteration
        return None


@dataclass(slots=True, eq=False)
class LeaseLifetime:
    """One instruction lease from grant to prune (docs/context-model.md §4.3)."""

    run_id: str
    """The run."""
    instruction_id: str
    """The injection the lease serves."""
    delivery_lease: str
    """``next-call`` or ``until-skill-exit``."""
    tenant: str | None
    """The skill that held the tenure at grant (``None``: granted without a tenant)."""
    tool_name: str
    """The granting tool."""
    tool_call_id: str | None
    """The granting call."""
    granted_iteration: int
    """The iteration whose tool batch granted it."""
    grant_line: int | None
    """The ``lease_grant`` record (``None`` when only its prune is in the trace)."""
    turn: int | None = None
    """The turn of the grant."""
    served: list[tuple[int, int]] = field(default_factory=list)
    """The passes it served, as ``(turn, iteration)``."""
    served_lines: list[int] = field(default_factory=list)
    """The ``pass`` records of those passes."""
    pruned_iteration: int | None = None
    """The iteration whose sweep or grant pruned it."""
    pruned_turn: int | None = None
    """The turn of the prune."""
    prune_line: int | None = None
    """The ``lease_prune`` record."""
    prune_site: str | None = None
    """``evaluate`` (a pass's tenure sweep) or ``tool-calls`` (the prune beside a grant)."""
    prune_reason: str | None = None
    """``spent`` or ``tenure-ended``."""
    prune_tenant: str | None = None
    """The tenant the prune compared against."""

    @property
    def alive(self) -> bool:
        """Not pruned (yet)."""
        return self.prune_line is None

    @property
    def state(self) -> LeaseState:
        """``alive``, ``spent`` or ``tenure-ended``."""
        if self.prune_reason == "spent":
            return "spent"
        if self.prune_reason == "tenure-ended":
            return "tenure-ended"
        return "alive"

    def matches(self, lease: LeaseRecord) -> bool:
        """Whether a recorded lease (in a prune) is this one."""
        return (
            lease.instruction_id == self.instruction_id
            and lease.delivery_lease == self.delivery_lease
            and lease.skill_id == self.tenant
            and lease.tool_name == self.tool_name
            and lease.tool_call_id == self.tool_call_id
            and lease.iteration == self.granted_iteration
        )


@dataclass(slots=True, eq=False)
class MapPoint:
    """One map's standing after one pass (from the pass's ``engagement`` record)."""

    line: int
    """The ``engagement`` record."""
    turn: int | None
    """The turn."""
    iteration: int | None
    """The pass."""
    standing: str
    """``engaged`` or ``parked``."""
    by: str
    """Why it is served now (the eligibility strength)."""
    idle: int
    """Consecutive idle passes."""
    at: str | None
    """The member the cursor is on."""
    change: str | None = None
    """The change on this pass (:data:`MapChange`), ``None`` when the standing held."""


@dataclass(slots=True, eq=False)
class MapTimeline:
    """A mounted map's engagement, pass by pass."""

    map_id: str
    """The map."""
    points: list[MapPoint] = field(default_factory=list)
    """Its standing after every pass that recorded it."""
    parks: int = 0
    """How many times it parked."""
    reengagements: int = 0
    """How many times a parked map came back."""

    @property
    def changes(self) -> list[MapPoint]:
        """The passes on which the standing changed."""
        return [point for point in self.points if point.change is not None]

    @property
    def standing(self) -> str | None:
        """The standing after the latest pass."""
        return self.points[-1].standing if self.points else None


@dataclass(slots=True, eq=False)
class Run:
    """One agent run: its declared configuration (by line), its turns, leases and maps."""

    run_id: str
    """The run id."""
    start_line: int | None = None
    """The ``run_start`` record (its full configuration is there)."""
    end_line: int | None = None
    """The ``run_end`` record."""
    agent_name: str | None = None
    """The agent's name."""
    provider: str | None = None
    """The provider (``scripted``, ``replay``, ``anthropic``…)."""
    model: str | None = None
    """The model name."""
    max_iterations: int | None = None
    """The per-turn iteration limit."""
    status: RunStatus = "running"
    """``running`` until ``run_end``; then its status."""
    error: str | None = None
    """``Type: message`` of a failed run."""
    turns: list[Turn] = field(default_factory=list)
    """Turns in order of first appearance."""
    leases: list[LeaseLifetime] = field(default_factory=list)
    """Every lease, in grant order."""
    maps: dict[str, MapTimeline] = field(default_factory=dict)
    """Engagement timeline per map id."""
    counts: dict[str, int] = field(default_factory=dict)
    """Records of this run by kind."""
    input_tokens: int = 0
    """Prompt tokens of all LLM calls."""
    output_tokens: int = 0
    """Completion tokens of all LLM calls."""
    first_line: int = 0
    """The run's first record."""
    last_line: int = 0
    """The run's latest record."""
    number: int = 0
    """The run's 1-based position in the trace (order of first appearance)."""
    _turns: dict[int, Turn] = field(default_factory=dict, repr=False)
    # Leases that may still serve a pass or be pruned, by instruction id (keeps feeding O(live)).
    _open_leases: dict[str, list[LeaseLifetime]] = field(default_factory=dict, repr=False)

    def turn(self, number: int) -> Turn | None:
        """The turn with this number, if present."""
        return self._turns.get(number)

    def iteration(self, turn: int, number: int) -> Iteration | None:
        """The iteration ``number`` of turn ``turn``, if present."""
        found = self._turns.get(turn)
        return found.iteration(number) if found is not None else None

    def iterations(self) -> Iterator[Iteration]:
        """Every iteration, turn by turn."""
        for turn in self.turns:
            yield from turn.iterations

    @property
    def iteration_count(self) -> int:
        """How many iterations the run has (over all turns)."""
        return sum(len(turn.iterations) for turn in self.turns)

    @property
    def ended(self) -> bool:
        """Whether the ``run_end`` record has arrived."""
        return self.end_line is not None

    @property
    def parks(self) -> int:
        """Park changes over all maps."""
        return sum(timeline.parks for timeline in self.maps.values())

    @property
    def reengagements(self) -> int:
        """Re-engagements over all maps."""
        return sum(timeline.reengagements for timeline in self.maps.values())

    def leases_of(self, instruction_id: str) -> list[LeaseLifetime]:
        """The leases of one instruction, in grant order."""
        return [lease for lease in self.leases if lease.instruction_id == instruction_id]

    def leases_serving(self, turn: int, iteration: int) -> list[LeaseLifetime]:
        """The leases that served the pass of ``(turn, iteration)``, in grant order."""
        where = (turn, iteration)
        return [lease for lease in self.leases if where in lease.served]

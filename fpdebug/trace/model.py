"""RunModel: the projections every view and the backtracker read (runs, turns, iterations, leases, maps).

The model is built incrementally from the records of a trace, in line order (from a reader, from
each line's *facts*: its envelope and the few fields projected here, see :mod:`fpdebug.trace.facts`),
and keeps only *addresses and small facts*: line numbers, ids, counters, short strings. Whole
records stay in the file; a view asks :meth:`RunModel.record` (which goes to the reader and its
cache) for the record on a line when it needs to show it. An iteration costs the model a few
hundred bytes (one 8-byte slot per record plus its small facts) however large its prompts and
results are. The projections themselves are in :mod:`fpdebug.trace.runs`.

Which records belong where:

- ``run_start`` / ``run_end`` belong to the run; ``turn_start`` / ``turn_end`` to their turn.
- Every other event belongs to the iteration ``(turn, iteration)`` it carries. One that carries no
  ``iteration`` is a turn-level record (listed in :attr:`Turn.lines`); one that carries no ``turn``
  goes to the run's latest turn (or a turn 0 when none has started).
- Invalid and opaque records (see :mod:`fpdebug.trace.records`) are never fatal: they are counted
  and their lines listed in :attr:`RunModel.invalid_lines` / :attr:`RunModel.opaque_lines`.

Lease lifetimes (docs/context-model.md §4.3): a lease is *granted* by its ``lease_grant`` line; it *served* a
pass when that pass's ``lease_active_ids`` names its instruction, it was granted on an earlier
line, and it was live on that pass (``next-call``: the pass right after the grant in the same
turn; ``until-skill-exit``: not pruned before that pass, and not pruned on that very pass for
``tenure-ended``, since that prune means the tenant had changed); it is *pruned* by the
``lease_prune`` entry that names it (matched on all its fields; an unmatched prune yields a
lifetime whose ``grant_line`` is ``None``). These rules hold whatever the order of a pass's
events in the file.

Threads: :meth:`RunModel.update` holds :attr:`RunModel.lock` while it feeds each batch of
records. Containers only grow, so a reader on another thread sees a consistent prefix; take the
lock to read several facts that must agree with each other.
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from pydantic import ValidationError
from pydantic_core import SchemaValidator

from fpdebug.trace.facts import (
    FACTS_ADAPTER,
    AskAnswerFacts,
    CompactFacts,
    CursorMoveFacts,
    EngagementFacts,
    Facts,
    FindingFacts,
    LeaseGrantFacts,
    LeasePruneFacts,
    LlmCallFacts,
    MemoryWriteFacts,
    OutputRetryFacts,
    PassFacts,
    RecallFacts,
    RerouteSupersededFacts,
    RouteConflictFacts,
    RunEndFacts,
    RunStartFacts,
    SkillRejectedFacts,
    StepsUnfinishedFacts,
    ToolResultFacts,
    TurnEndFacts,
    TurnStartFacts,
    WrapUpFacts,
)
from fpdebug.trace.records import InvalidRecord, OpaqueRecord, Record, classify_line
from fpdebug.trace.runs import (
    KIND_CODES,
    KINDS,
    EngagementNote,
    Iteration,
    LeaseLifetime,
    LeaseState,
    MapChange,
    MapPoint,
    MapTimeline,
    Run,
    RunStatus,
    Turn,
)
from fpdebug.trace.schema import (
    AskAnswerEvent,
    CompactEvent,
    CursorMoveEvent,
    EngagementEvent,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LeaseRecord,
    LlmCallEvent,
    MemoryWriteEvent,
    OutputRetryEvent,
    PassEvent,
    RecallEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StepsUnfinishedEvent,
    ToolResultEvent,
    TraceEvent,
    TraceHeader,
    TurnEndEvent,
    TurnStartEvent,
    WrapUpEvent,
)

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
    "RecordSource",
    "Run",
    "RunModel",
    "RunStatus",
    "Turn",
]


_TURN_LEVEL = frozenset({"turn_start", "turn_end"})

_InTurnEvent: TypeAlias = (
    TurnStartEvent
    | TurnStartFacts
    | TurnEndEvent
    | TurnEndFacts
    | PassEvent
    | PassFacts
    | CursorMoveEvent
    | CursorMoveFacts
    | LeaseGrantEvent
    | LeaseGrantFacts
    | LeasePruneEvent
    | LeasePruneFacts
    | EngagementEvent
    | EngagementFacts
    | LlmCallEvent
    | LlmCallFacts
    | ToolResultEvent
    | ToolResultFacts
    | FindingEvent
    | FindingFacts
    | SkillRejectedEvent
    | SkillRejectedFacts
    | RouteConflictEvent
    | RouteConflictFacts
    | RerouteSupersededEvent
    | RerouteSupersededFacts
    | StepsUnfinishedEvent
    | StepsUnfinishedFacts
    | WrapUpEvent
    | WrapUpFacts
    | CompactEvent
    | CompactFacts
    | AskAnswerEvent
    | AskAnswerFacts
    | OutputRetryEvent
    | OutputRetryFacts
    | RecallEvent
    | RecallFacts
    | MemoryWriteEvent
    | MemoryWriteFacts
)
"""Every event but ``run_start`` and ``run_end``: what belongs to a turn (full events and facts)."""


def _i(text: str | None) -> str | None:
    # Ids and names repeat on every pass: intern them so the model holds one copy of each.
    return sys.intern(text) if text is not None else None


@runtime_checkable
class RecordSource(Protocol):
    """Where a model reads records from: a :class:`~fpdebug.trace.reader.TraceReader`, or any
    sequence whose item ``i`` is the record on line ``i`` (e.g. ``[header, *events]`` in memory)."""

    def __len__(self) -> int: ...

    def __getitem__(self, line: int) -> Record: ...


class RunModel:
    """Projections over a trace, built incrementally; the one thing views and the backtracker read.

    From a :class:`~fpdebug.trace.reader.TraceReader`, :meth:`update` reads each line's *facts*
    (its envelope and the few fields the model projects, see :mod:`fpdebug.trace.facts`) rather
    than validating the whole record: about twice as fast on large traces. A line whose unread
    fields break the schema then counts as an event of its kind; reading it (:meth:`record`)
    gives the :class:`~fpdebug.trace.records.InvalidRecord`. Pass ``validate=True`` to validate
    every line in full instead, so that :attr:`invalid_lines` lists those lines too.

    Args:
        source: Where records come from (a :class:`~fpdebug.trace.reader.TraceReader`, or a
            list ``[header, *events]``). ``None`` for a model fed by hand with :meth:`feed`.
        validate: Validate every line in full while building (only matters for a reader source).
    """

    def __init__(self, source: RecordSource | None = None, *, validate: bool = False) -> None:
        self.source = source
        """The record source (``reader`` is the same object when it is a reader)."""
        self.validate = validate
        """Whether :meth:`update` validates every line in full (else it reads facts)."""
        self.header: TraceHeader | None = None
        """The trace header, once line 0 is fed."""
        self.runs: list[Run] = []
        """Runs in order of first appearance."""
        self.all_iterations: list[Iteration] = []
        """Every iteration of every run in order of its first line (append-only: a view that lists
        iterations extends its rows from where it stopped, instead of walking every turn again)."""
        self.counts: dict[str, int] = {}
        """Event records by kind (opaque and invalid lines are not in here)."""
        self.invalid_lines: list[int] = []
        """Lines that are not valid records."""
        self.opaque_lines: list[int] = []
        """Lines of unknown kinds (kept as opaque records)."""
        self.lease_log: list[Run] = []
        """The run of each lease as it is added (append-only): which runs have new leases, without
        walking every run (a load in slices did, which grew with the square of the runs)."""
        self.lines_fed = 0
        """The next line :meth:`update` will feed (lines ``[0, lines_fed)`` are in the model)."""
        self.lock = threading.RLock()
        """Held while records are fed; take it to read several facts consistently."""
        self._runs: dict[str, Run] = {}
        self._updating = threading.Lock()
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    @classmethod
    def build(cls, source: RecordSource, *, validate: bool = False) -> RunModel:
        """Build a model from every record currently in ``source`` (see the class for ``validate``).

        The cyclic collector is off while it builds (and back as it was after): the build makes
        long-lived objects and no cycles, and the collector's walks over the growing model were 17 %
        of it (issue 22).
        """
        enabled = gc.isenabled()
        gc.disable()
        try:
            model = cls(source, validate=validate)
            model.update()
        finally:
            if enabled:
                gc.enable()
        return model

    @property
    def reader(self) -> RecordSource | None:
        """The record source (kept under this name for views that think of it as the reader)."""
        return self.source

    def record(self, line: int) -> Record:
        """The full record on ``line``, fetched from the source (the reader's cache) on demand.

        Raises:
            LookupError: The model has no source.
        """
        if self.source is None:
            raise LookupError("this RunModel was fed by hand and has no record source")
        return self.source[line]

    def run(self, run_id: str) -> Run | None:
        """The run with this id, if present."""
        return self._runs.get(run_id)

    def iteration_at(self, line: int) -> Iteration | None:
        """The iteration the record on ``line`` belongs to (``None`` for run- and turn-level records).

        Reads the record's envelope from the source (a cached record, no new model).
        """
        record = self.record(line)
        number = getattr(record, "iteration", None)
        run = self._runs.get(getattr(record, "run_id", None) or "")
        if run is None or number is None or getattr(record, "kind", None) in _TURN_LEVEL:
            return None
        turn = getattr(record, "turn", None)
        if turn is None:  # fed to the turn that was current then: look in each
            candidates = run.turns
        else:
            found = run._turns.get(turn)
            candidates = [found] if found is not None else []
        for candidate in candidates:
            iteration = candidate.iteration(number)
            if iteration is not None and iteration.first_line <= line <= iteration.last_line:
                return iteration
        return None

    @property
    def events(self) -> int:
        """How many valid events were fed."""
        return sum(self.counts.values())

    def iterations(self) -> Iterator[Iteration]:
        """Every iteration of every run."""
        for run in self.runs:
            yield from run.iterations()

    # ------------------------------------------------------------------------------------------
    # Feeding

    def update(self, *, limit: int | None = None) -> int:
        """Feed the records the source gained since the last call (all of them the first time).

        Call after ``reader.refresh()`` when following a growing trace.

        Args:
            limit: Feed at most this many lines (to build a large model in slices).

        Returns:
            How many lines were fed.
        """
        source = self.source
        if source is None:
            return 0
        with self._updating:  # one updater at a time; readers only need self.lock
            start = self.lines_fed
            end = len(source) if limit is None else min(len(source), start + limit)
            if end <= start:
                return 0
            iter_raw = getattr(source, "iter_raw", None)
            if callable(iter_raw) and not self.validate:
                classify = getattr(source, "classify", None)
                if callable(classify):
                    # The facts skip a request, so a schema_version 2 llm_call is not rebuilt for
                    # them (docs/trace-contract.md §8.7); a line whose facts fail is read in full.
                    iter_raw = functools.partial(iter_raw, stored=True)
                self._update_facts(source, iter_raw, start, end, classify)
                return self.lines_fed - start
            iter_records = getattr(source, "iter_records", None)
            if callable(iter_records):
                pairs = iter_records(start, stop=end)
            else:
                pairs = ((i, source[i]) for i in range(start, end))
            batch = 0
            self.lock.acquire()
            try:
                for line, record in pairs:
                    self.feed(line, record)
                    batch += 1
                    if batch == 1000:  # let readers on other threads in now and then
                        batch = 0
                        self.lock.release()
                        self.lock.acquire()
            finally:
                self.lock.release()
        return self.lines_fed - start

    def _update_facts(
        self,
        source: RecordSource,
        iter_raw: Callable[..., Iterator[tuple[int, int, bytes]]],
        start: int,
        end: int,
        classify: Callable[[int, int, bytes], Record] | None = None,
    ) -> None:
        """Feed lines ``[start, end)`` from their facts; a line whose facts do not parse is classified
        in full (so it becomes an invalid or opaque record exactly as :meth:`feed` would see it), by
        ``classify`` when the source has one (a reader's: it rebuilds a stored version 2 line)."""
        classify = classify or classify_line
        parse = _facts_parser()
        feed_event = self._feed_event
        lock = self.lock
        lock.acquire()
        try:
            if start == 0:
                self.feed(0, source[0])
            batch = 0
            for line, offset, raw in iter_raw(max(start, 1), stop=end):
                try:
                    facts = parse(raw)
                except ValidationError:
                    self.feed(line, classify(line, offset, raw))
                else:
                    self.lines_fed = line + 1
                    feed_event(line, facts)
                batch += 1
                if batch == 1000:  # let readers on other threads in now and then
                    batch = 0
                    lock.release()
                    lock.acquire()
        finally:
            lock.release()

    def feed(self, line: int, record: Record) -> None:
        """Add one record; lines must be fed in increasing order.

        Raises:
            ValueError: ``line`` is not after the last line fed.
        """
        with self.lock:
            if line < self.lines_fed:
                raise ValueError(f"line {line} was already fed (next is {self.lines_fed})")
            self.lines_fed = line + 1
            if isinstance(record, TraceHeader):
                self.header = record
            elif isinstance(record, InvalidRecord):
                self.invalid_lines.append(line)
            elif isinstance(record, OpaqueRecord):
                self.opaque_lines.append(line)
            else:
                self._feed_event(line, record)

    def _feed_event(self, line: int, record: TraceEvent | Facts) -> None:
        # A full event and its facts have the same field names (tests/trace/test_facts.py), so each
        # kind's handler takes both classes of its kind and reads them the same way. Dispatching on
        # ``kind`` (one dict lookup) replaced a ``match`` over the classes, which tried up to 48
        # ``isinstance`` checks per event: a third of the model's own time (issue 22).
        kind = record.kind
        counts = self.counts
        counts[kind] = counts.get(kind, 0) + 1
        run = self._runs.get(record.run_id)
        if run is None:
            run = self._run_for(record.run_id, line)
        run.counts[kind] = run.counts.get(kind, 0) + 1
        run.last_line = line
        if kind == "run_start":
            start: RunStartEvent | RunStartFacts = record  # type: ignore[assignment]  # by its kind
            run.start_line = line
            run.agent_name, run.provider = _i(start.agent_name), _i(start.provider)
            run.model, run.max_iterations = _i(start.model), start.max_iterations
        elif kind == "run_end":
            end: RunEndEvent | RunEndFacts = record  # type: ignore[assignment]  # by its kind
            run.end_line = line
            run.status = end.status
            error = end.error
            if error is not None:
                run.error = f"{error.type}: {error.message}"
        else:
            self._feed_in_turn(run, line, record, kind)  # type: ignore[arg-type]  # not a run_start/run_end

    def _feed_in_turn(self, run: Run, line: int, event: _InTurnEvent, kind: str) -> None:
        """An event of a turn: listed in its iteration (or its turn), then read by kind."""
        number = event.turn
        turns = run.turns
        if turns and (number is None or turns[-1].number == number):  # the common case: the current one
            turn = turns[-1]
        else:
            turn = self._turn_for(run, number)
        iteration: Iteration | None = None
        number = event.iteration
        if number is None or kind in _TURN_LEVEL:
            turn.lines.append(line)
        else:
            iterations = turn.iterations
            if iterations and iterations[-1].number == number:  # the common case: the current one
                iteration = iterations[-1]
            else:
                iteration = self._iteration_for(run, turn, number)
            iteration.entries.append(line << 8 | KIND_CODES[kind])
        handler = _IN_TURN.get(kind)
        if handler is not None:  # the other kinds are listed above; the model keeps no other fact of them
            handler(self, run, turn, iteration, number, line, event)

    @staticmethod
    def _feed_llm_call(
        run: Run, turn: Turn, iteration: Iteration | None, event: LlmCallEvent | LlmCallFacts
    ) -> None:
        route = event.route
        if iteration is not None and route is not None:
            iteration.route = route
        response = event.response
        if response is not None:
            usage = response.usage
            # One definition of input tokens, cache included, for old traces too (Usage.total_input_tokens).
            input_tokens = usage.total_input_tokens(event.provider)
            if iteration is not None:
                iteration.input_tokens += input_tokens
                iteration.output_tokens += usage.output_tokens
            turn.input_tokens += input_tokens
            turn.output_tokens += usage.output_tokens
            run.input_tokens += input_tokens
            run.output_tokens += usage.output_tokens

    def _feed_grant(self, run: Run, turn: Turn, line: int, lease: LeaseRecord) -> None:
        self._add_lease(
            run,
            LeaseLifetime(
                run_id=run.run_id,
                instruction_id=_i(lease.instruction_id) or "",
                delivery_lease=lease.delivery_lease,
                tenant=_i(lease.skill_id),
                tool_name=_i(lease.tool_name) or "",
                tool_call_id=lease.tool_call_id,
                granted_iteration=lease.iteration,
                grant_line=line,
                turn=turn.number,
            ),
        )

    def _feed_pass(
        self, run: Run, turn: Turn, iteration: Iteration, line: int, event: PassEvent | PassFacts
    ) -> None:
        served = self._shared(tuple(_i(id_) or "" for id_ in event.lease_active_ids or ()))
        iteration.lease_served = served
        where = (turn.number, iteration.number)
        for instruction_id in dict.fromkeys(served):
            candidates = run._open_leases.get(instruction_id)
            if not candidates:
                continue
            keep: list[LeaseLifetime] = []
            for lease in candidates:
                if not _may_serve_later(lease, where):
                    continue  # dead for good: stop considering it
                keep.append(lease)
                if lease.grant_line is not None and lease.grant_line < line and _live_on(lease, where):
                    lease.served.append(where)
                    lease.served_lines.append(line)
            run._open_leases[instruction_id] = keep

    def _feed_prune(
        self, run: Run, turn: Turn, iteration: int | None, line: int, event: LeasePruneEvent | LeasePruneFacts
    ) -> None:
        for pruned in event.pruned:
            candidates = run._open_leases.get(pruned.instruction_id, [])
            lease = next((lease for lease in candidates if lease.alive and lease.matches(pruned)), None)
            if lease is None:  # rare: a lease no longer considered open (or never granted here)
                lease = next((lease for lease in run.leases if lease.alive and lease.matches(pruned)), None)
            if lease is None:
                lease = LeaseLifetime(
                    run_id=run.run_id,
                    instruction_id=_i(pruned.instruction_id) or "",
                    delivery_lease=pruned.delivery_lease,
                    tenant=_i(pruned.skill_id),
                    tool_name=_i(pruned.tool_name) or "",
                    tool_call_id=pruned.tool_call_id,
                    granted_iteration=pruned.iteration,
                    grant_line=None,
                )
                self._add_lease(run, lease)
            lease.pruned_turn, lease.pruned_iteration = turn.number, iteration
            lease.prune_line, lease.prune_site = line, event.site
            lease.prune_reason, lease.prune_tenant = pruned.reason, _i(event.tenant)
            # The pass of this iteration may have been fed first and credited the lease; a
            # tenure-ended prune on that pass means the tenant had changed, so it did not serve.
            where = (turn.number, iteration)
            if pruned.reason == "tenure-ended" and lease.served and lease.served[-1] == where:
                lease.served.pop()
                lease.served_lines.pop()

    def _feed_engagement(
        self,
        run: Run,
        turn: Turn,
        iteration: Iteration | None,
        number: int | None,
        line: int,
        event: EngagementEvent | EngagementFacts,
    ) -> None:
        records = {record.map_id: record for record in event.records}
        changes: dict[str, str] = {}
        for change in event.changes:
            if change.kind == "parked":
                name = "parked"
            elif change.reengaged:
                name = "reengaged"
            elif change.upgraded:
                name = "upgraded"
            elif change.tenant_changed:
                name = "tenant-changed"
            elif (record := records.get(change.map_id)) is not None and record.founded_at == change.iteration:
                name = "founded"
            else:
                name = "engaged"
            changes[change.map_id] = name
        for record in event.records:
            self._timeline(run, record.map_id).points.append(
                MapPoint(
                    line,
                    turn.number,
                    number,
                    record.standing,
                    record.by,
                    record.idle,
                    _i(record.at),
                    changes.get(record.map_id),
                )
            )
        for change in event.changes:
            timeline = self._timeline(run, change.map_id)
            name = changes[change.map_id]
            if change.map_id not in records:  # a change without a record: keep it visible anyway
                standing = "parked" if name == "parked" else "engaged"
                timeline.points.append(
                    MapPoint(line, turn.number, number, standing, change.by, 0, change.at, name)
                )
            if name == "parked":
                timeline.parks += 1
            elif name == "reengaged":
                timeline.reengagements += 1
        if changes and iteration is not None:
            iteration.engagement_changes += tuple(EngagementNote(_i(m) or "", c) for m, c in changes.items())

    # ------------------------------------------------------------------------------------------
    # Lookup-or-create

    def _run_for(self, run_id: str, line: int) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = Run(
                run_id=_i(run_id) or "", first_line=line, last_line=line, number=len(self.runs) + 1
            )
            self.runs.append(run)
        return run

    def _add_lease(self, run: Run, lease: LeaseLifetime) -> None:
        run.leases.append(lease)
        run._open_leases.setdefault(lease.instruction_id, []).append(lease)
        self.lease_log.append(run)

    def _turn_for(self, run: Run, number: int | None) -> Turn:
        if number is None:
            if run.turns:
                return run.turns[-1]
            number = 0
        turn = run._turns.get(number)
        if turn is None:
            turn = run._turns[number] = Turn(run_id=run.run_id, number=number)
            run.turns.append(turn)
        return turn

    def _iteration_for(self, run: Run, turn: Turn, number: int) -> Iteration:
        iterations = turn.iterations
        if iterations and iterations[-1].number == number:  # the common case: the current one
            return iterations[-1]
        iteration = turn.iteration(number)
        if iteration is None:
            iteration = Iteration(run_id=run.run_id, turn=turn.number, number=number)
            iterations.append(iteration)
            self.all_iterations.append(iteration)  # lines arrive in order: so do first lines
            turn.highest = max(turn.highest, number)
        return iteration

    def _shared(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        # The same id lists recur pass after pass: keep one tuple of each.
        return self._tuples.setdefault(ids, ids)

    @staticmethod
    def _timeline(run: Run, map_id: str) -> MapTimeline:
        timeline = run.maps.get(map_id)
        if timeline is None:
            timeline = run.maps[map_id] = MapTimeline(map_id=_i(map_id) or "")
        return timeline

    def __repr__(self) -> str:
        return f"<RunModel runs={len(self.runs)} lines={self.lines_fed} events={self.events}>"


def _facts_parser() -> Callable[[bytes], Facts]:
    """:data:`FACTS_ADAPTER`'s built validator's ``validate_json``: what the adapter's calls, without its
    Python wrapper (1-2 us of the 12 a line's facts cost; issue 22). Built here if it is not yet."""
    validator = FACTS_ADAPTER.validator
    if not isinstance(validator, SchemaValidator):
        try:
            FACTS_ADAPTER.validate_json(b"{}")  # no kind: refused, once the validator is built
        except ValidationError:
            pass
        validator = FACTS_ADAPTER.validator
    if isinstance(validator, SchemaValidator):
        return cast("Callable[[bytes], Facts]", validator.validate_json)
    return FACTS_ADAPTER.validate_json


def _live_on(lease: LeaseLifetime, where: tuple[int, int]) -> bool:
    """Whether a lease granted before a pass was live on it (docs/context-model.md §4.3 ``active_lease_ids``)."""
    if lease.delivery_lease == "next-call" and (lease.turn, lease.granted_iteration + 1) != where:
        return False
    if lease.prune_line is not None:
        pruned_at = (lease.pruned_turn or 0, lease.pruned_iteration or 0)
        # Pruned on an earlier pass: gone. Pruned on this pass: a spent next-call lease was served
        # by the same sweep that removed it; a tenure-ended one was not (the tenant had changed).
        if pruned_at < where or (pruned_at == where and lease.prune_reason == "tenure-ended"):
            return False
    return True


def _may_serve_later(lease: LeaseLifetime, where: tuple[int, int]) -> bool:
    """False once a lease can neither serve this pass nor any later one."""
    if lease.prune_line is not None and (lease.pruned_turn or 0, lease.pruned_iteration or 0) < where:
        return False
    if lease.delivery_lease == "next-call" and lease.turn is not None:
        return (lease.turn, lease.granted_iteration + 1) >= where
    return True


# What each kind of in-turn event adds beyond its place (``_feed_in_turn``). Each takes the model,
# the run, the turn, the iteration (``None`` for a turn-level record), the iteration number, the
# line and the event (its full record or its facts).
_Handler: TypeAlias = Callable[[RunModel, Run, Turn, "Iteration | None", "int | None", int, Any], None]


def _on_pass(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    if it is not None:
        model._feed_pass(run, turn, it, line, e)


def _on_llm_call(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    model._feed_llm_call(run, turn, it, e)


def _on_cursor_move(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    if it is not None:
        it.cursor_from, it.cursor_to, it.cursor_by = _i(e.from_skill), _i(e.to_skill), _i(e.by)


def _on_engagement(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    model._feed_engagement(run, turn, it, n, line, e)


def _on_grant(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    model._feed_grant(run, turn, line, e.lease)


def _on_prune(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    model._feed_prune(run, turn, n, line, e)


def _on_turn_start(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    turn.start_line = line


def _on_turn_end(
    model: RunModel, run: Run, turn: Turn, it: Iteration | None, n: int | None, line: int, e: Any
) -> None:
    turn.end_line = line
    turn.iteration_count = e.iteration_count
    stopped = e.stopped_early
    if stopped is not None:
        turn.stopped_early = stopped.reason
    turn.refusal = e.refusal


_IN_TURN: dict[str, _Handler] = {
    "pass": _on_pass,
    "llm_call": _on_llm_call,
    "cursor_move": _on_cursor_move,
    "engagement": _on_engagement,
    "lease_grant": _on_grant,
    "lease_prune": _on_prune,
    "turn_start": _on_turn_start,
    "turn_end": _on_turn_end,
}
"""The in-turn kinds the model reads beyond their place; every other kind is only listed."""

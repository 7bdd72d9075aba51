"""StepGate: an event sink that lets a person pause, step and break a run between two of its events.

The gate wraps the run's real sink (the trace file). ``emit`` writes the event FIRST and only then
decides whether to stop, so whatever made the run pause is already in the file the debugger
follows. While paused, ``emit`` blocks the run's thread on a condition variable; the UI thread
releases it with :meth:`StepGate.resume` (continue), :meth:`StepGate.step` (run until the next
``pass`` is written) or :meth:`StepGate.stop` (end the run). Stopping a paused run raises
:class:`~fpdebug.errors.RunInterrupted` (``stored``: the event is written) from the ``emit`` it is
paused in, so the run does nothing more (no model call, no tool); a running gate raises it from the
next ``emit`` too, after writing that event: every event records something that already happened
(a model call that was billed, a tool that ran), so dropping it would lose it. The agent loop then
writes ``run_end {interrupted}``: the trace stays dense and complete, and its tokens are those of
the calls it records. ``run_start`` and ``run_end`` always go through: the gate never pauses or stops
on them, so the trace opens and closes properly.

Breakpoints (:class:`Breakpoint`) are checked against every event as it is written: an event kind
(``lease_prune``…), a map parking (an ``engagement`` whose changes include ``parked``), the cursor
moving into a skill, or the model asking for a tool (the ``llm_call`` whose reply calls it: the run
stops before the tool runs). No Textual here: the gate is driven from any thread.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from fpdebug.engine.sink import EventSink
from fpdebug.errors import ConfigError, FpdebugError, RunInterrupted
from fpdebug.trace.schema import (
    EVENT_KINDS,
    CursorMoveEvent,
    EngagementEvent,
    LeasePruneEvent,
    LlmCallEvent,
    PassEvent,
    RunEndEvent,
    ToolResultEvent,
    TraceEvent,
)

__all__ = [
    "Breakpoint",
    "BreakpointKind",
    "GateState",
    "GateStatus",
    "PausePoint",
    "PauseReason",
    "StepGate",
]

BreakpointKind = Literal["kind", "park", "cursor", "tool"]
"""What a breakpoint watches: an event kind, a map parking, the cursor entering a skill, a tool call."""

PauseReason = Literal["step", "pause", "breakpoint"]
"""Why the gate stopped: a step reached its ``pass``, the user asked, or a breakpoint hit."""

GateState = Literal["running", "paused", "stopping", "ended"]
"""Where the run stands."""

_ALWAYS_THROUGH = frozenset({"run_start", "run_end"})


@dataclass(frozen=True)
class Breakpoint:
    """A condition on one event that pauses the run once the event is written.

    Build one with :meth:`on_kind`, :meth:`park`, :meth:`cursor_into` or :meth:`tool`.
    """

    kind: BreakpointKind
    """What it watches."""
    value: str = ""
    """The event kind, the skill or the tool (empty for ``park``)."""

    @classmethod
    def on_kind(cls, kind: str) -> Breakpoint:
        """Pause on every event of ``kind`` (``lease_prune``, ``skill_rejected``…)."""
        return cls("kind", kind)

    @classmethod
    def park(cls) -> Breakpoint:
        """Pause when a map parks: an ``engagement`` event with a ``parked`` change."""
        return cls("park")

    @classmethod
    def cursor_into(cls, skill: str) -> Breakpoint:
        """Pause when the cursor moves into ``skill`` from anywhere else (an entry counts)."""
        return cls("cursor", skill)

    @classmethod
    def tool(cls, name: str) -> Breakpoint:
        """Pause when the model asks for tool ``name`` (its ``llm_call``; the tool has not run yet)."""
        return cls("tool", name)

    @property
    def label(self) -> str:
        """How the UI names it: ``lease_prune``, ``park``, ``cursor into billing``, ``tool issue_refund``."""
        if self.kind == "kind":
            return self.value
        if self.kind == "park":
            return "park"
        if self.kind == "cursor":
            return f"cursor into {self.value}"
        return f"tool {self.value}"

    @classmethod
    def parse(cls, spec: str) -> Breakpoint:
        """A breakpoint from its command-line form.

        ``lease_prune`` or any other event kind (also ``kind:K``), ``park``, ``cursor:SKILL``,
        ``tool:NAME``.

        Raises:
            ConfigError: The form is not one of those, or the kind is not an event kind.
        """
        head, colon, value = spec.strip().partition(":")
        head, value = head.strip(), value.strip()
        if not colon and head == "park":
            return cls.park()
        if colon and head in ("cursor", "tool") and value:
            return cls.cursor_into(value) if head == "cursor" else cls.tool(value)
        kind = value if colon and head == "kind" else head if not colon else ""
        if kind in EVENT_KINDS and kind not in _ALWAYS_THROUGH:
            return cls.on_kind(kind)
        breakable = [name for name in EVENT_KINDS if name not in _ALWAYS_THROUGH]
        near = difflib.get_close_matches(
            kind or head, [*breakable, "park", "cursor", "tool"], n=1, cutoff=0.6
        )
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(
            f"unknown breakpoint {spec!r}{hint}: use an event kind (lease_prune, pass, engagement…), park, "
            "cursor:SKILL or tool:NAME"
        )

    def matches(self, event: TraceEvent) -> bool:
        """Whether ``event`` hits this breakpoint."""
        if self.kind == "kind":
            return event.kind == self.value
        if self.kind == "park":
            return isinstance(event, EngagementEvent) and any(c.kind == "parked" for c in event.changes)
        if self.kind == "cursor":
            return (
                isinstance(event, CursorMoveEvent)
                and event.to_skill == self.value
                and event.from_skill != self.value
            )
        return (
            isinstance(event, LlmCallEvent)
            and event.response is not None
            and any(call.name == self.value for call in event.response.tool_calls)
        )


@dataclass(frozen=True)
class PausePoint:
    """The event the gate stopped after (it is already in the trace)."""

    seq: int
    """Its ``seq`` (its line in a healthy trace)."""
    kind: str
    """Its kind."""
    run_id: str
    """Its run."""
    turn: int | None
    """Its turn."""
    iteration: int | None
    """Its iteration."""
    reason: PauseReason
    """Why the gate stopped there."""
    hits: tuple[str, ...] = ()
    """The labels of the breakpoints it hit."""
    detail: str = ""
    """A few words on the event (``billing → refund``, ``asks for issue_refund``…), untrusted."""

    @property
    def where(self) -> str:
        """``T1·I3`` (``T1`` or ``run`` when the event has no iteration)."""
        if self.turn is None:
            return "run"
        return f"T{self.turn}·I{self.iteration}" if self.iteration is not None else f"T{self.turn}"


@dataclass(frozen=True)
class GateStatus:
    """A snapshot of the gate, safe to read from any thread."""

    state: GateState = "running"
    """Running, paused, stopping (the run is being ended) or ended."""
    paused_at: PausePoint | None = None
    """Where it is paused (``None`` unless paused)."""
    last_seq: int = 0
    """The ``seq`` of the last event written."""
    events: int = 0
    """Events written so far."""
    target: Literal["run", "pass", "event"] = "run"
    """Where a running gate will stop next: a breakpoint only, the next ``pass``, the next event."""
    breakpoints: tuple[Breakpoint, ...] = ()
    """The breakpoints set."""
    outcome: str | None = None
    """How the run ended (``completed``, ``failed``, ``interrupted``), once ``run_end`` is written."""
    error: str | None = None
    """Why it failed, when it did."""


@dataclass
class _Control:
    target: Literal["run", "pass", "event"] = "run"
    paused: PausePoint | None = None
    stopping: bool = False
    breakpoints: list[Breakpoint] = field(default_factory=list)


class StepGate:
    """Wraps a run's sink; pauses the run between events on request, on a step, on a breakpoint.

    Args:
        start: ``paused`` stops at the run's first ``pass`` (the screen then shows iteration 1);
            ``running`` runs until a breakpoint or the end.
        breakpoints: Breakpoints set from the start.
        on_change: Called (from whichever thread changed it) with the new status whenever the gate
            pauses, resumes, starts stopping or sees the run end. Keep it short and thread-safe
            (e.g. ``app.post_message``).

    Use :meth:`attach` as ``run_target(..., wrap_sink=gate.attach)``.
    """

    def __init__(
        self,
        *,
        start: Literal["paused", "running"] = "paused",
        breakpoints: Iterable[Breakpoint] = (),
        on_change: Callable[[GateStatus], None] | None = None,
    ) -> None:
        self.on_change = on_change
        """Told of every change of state."""
        self._sink: EventSink | None = None
        self._cond = threading.Condition()
        self._control = _Control(target="pass" if start == "paused" else "run")
        self._control.breakpoints = list(dict.fromkeys(breakpoints))
        self._status = GateStatus(target=self._control.target, breakpoints=tuple(self._control.breakpoints))

    # ------------------------------------------------------------------------------------------
    # The sink side (the run's thread)

    def attach(self, sink: EventSink) -> StepGate:
        """Wrap ``sink`` (the ``wrap_sink`` hook of :func:`~fpdebug.demo.registry.run_target`)."""
        self._sink = sink
        return self

    @property
    def next_seq(self) -> int:
        """The wrapped sink's next ``seq`` (the recorder numbers the run's events from it)."""
        return int(getattr(self._sink, "next_seq", 1))

    def emit(self, event: TraceEvent) -> None:
        """Write ``event``, then pause the run here if a step, a pause or a breakpoint says so.

        Raises:
            RunInterrupted: The gate was stopped, before this event or while paused on it. Always
                ``stored``: the event is written first (it records something that already
                happened). ``run_start`` and ``run_end`` never raise, so the trace opens and closes
                properly.
            FpdebugError: No sink is attached.
        """
        sink = self._sink
        if sink is None:
            raise FpdebugError("StepGate.emit before attach(): the gate wraps no sink")
        sink.emit(event)  # write first: the event that pauses (or stops) the run is on disk before it does
        with self._cond:
            control = self._control
            status = replace(self._status, last_seq=event.seq, events=self._status.events + 1)
            if control.stopping and event.kind not in _ALWAYS_THROUGH:
                self._status = status
                raise RunInterrupted("the debugger stopped the run", stored=True)
            if isinstance(event, RunEndEvent):
                self._status = replace(
                    status,
                    state="ended",
                    paused_at=None,
                    outcome=event.status,
                    error=f"{event.error.type}: {event.error.message}" if event.error is not None else None,
                )
                changed: GateStatus = self._status
            elif event.kind in _ALWAYS_THROUGH:  # run_start: never a place to pause (nor stop)
                self._status = status
                return
            else:
                hits = tuple(bp.label for bp in control.breakpoints if bp.matches(event))
                reason: PauseReason | None = None
                if hits:
                    reason = "breakpoint"
                elif control.target == "event":
                    reason = "pause"
                elif control.target == "pass" and event.kind == "pass":
                    reason = "step"
                if reason is None:
                    self._status = status
                    return
                control.paused = PausePoint(
                    seq=event.seq,
                    kind=event.kind,
                    run_id=event.run_id,
                    turn=event.turn,
                    iteration=event.iteration,
                    reason=reason,
                    hits=hits,
                    detail=_detail(event),
                )
                control.target = "run"
                changed = replace(status, state="paused", paused_at=control.paused, target="run")
                self._status = changed
        self._tell(changed)
        if changed.state != "paused":
            return
        with self._cond:
            while self._control.paused is not None and not self._control.stopping:
                self._cond.wait()
            stopped = self._control.stopping
        if stopped:
            # End the run here, not at its next event: in between it would call the model (a billed
            # request) or run a tool that the trace never records.
            raise RunInterrupted("the debugger stopped the run", stored=True)

    def close(self) -> None:
        """Close the wrapped sink (``run_target`` closes the wrapper after the run)."""
        if self._sink is not None:
            self._sink.close()

    # ------------------------------------------------------------------------------------------
    # The control side (any thread)

    @property
    def status(self) -> GateStatus:
        """The current snapshot."""
        return self._status

    def resume(self) -> bool:
        """Continue: run until a breakpoint or the end. Returns whether anything changed."""
        return self._release("run")

    def step(self) -> bool:
        """Run until the next ``pass`` event is written (or a breakpoint hits), then pause."""
        return self._release("pass")

    def pause(self) -> bool:
        """Pause at the next event the run writes (a running gate only)."""
        with self._cond:
            if self._status.state != "running" or self._control.target == "event":
                return False
            self._control.target = "event"
            self._status = changed = replace(self._status, target="event")
        self._tell(changed)
        return True

    def toggle(self) -> bool:
        """Pause a running gate, continue a paused one."""
        if self._status.state == "paused":
            return self.resume()
        return self.pause()

    def stop(self) -> None:
        """End the run: a paused ``emit`` raises ``RunInterrupted`` at once, else the next ``emit`` does
        once it has written its event (``run_start`` excepted: the run stops at the event after it)."""
        with self._cond:
            if self._status.state == "ended" or self._control.stopping:
                return
            self._control.stopping = True
            self._control.paused = None
            self._status = changed = replace(self._status, state="stopping", paused_at=None)
            self._cond.notify_all()
        self._tell(changed)

    def _release(self, target: Literal["run", "pass"]) -> bool:
        with self._cond:
            state = self._status.state
            if state in ("ended", "stopping") or (state == "running" and self._control.target == target):
                return False
            self._control.target = target
            self._control.paused = None
            self._status = changed = replace(self._status, state="running", paused_at=None, target=target)
            self._cond.notify_all()
        self._tell(changed)
        return True

    # ------------------------------------------------------------------------------------------
    # Breakpoints (any thread)

    @property
    def breakpoints(self) -> tuple[Breakpoint, ...]:
        """The breakpoints set, in the order they were set."""
        return self._status.breakpoints

    def add_breakpoint(self, breakpoint: Breakpoint) -> bool:
        """Set a breakpoint; returns ``False`` if it was already set."""
        with self._cond:
            if breakpoint in self._control.breakpoints:
                return False
            self._control.breakpoints.append(breakpoint)
            self._status = changed = replace(self._status, breakpoints=tuple(self._control.breakpoints))
        self._tell(changed)
        return True

    def remove_breakpoint(self, breakpoint: Breakpoint) -> bool:
        """Clear one breakpoint; returns ``False`` if it was not set."""
        with self._cond:
            if breakpoint not in self._control.breakpoints:
                return False
            self._control.breakpoints.remove(breakpoint)
            self._status = changed = replace(self._status, breakpoints=tuple(self._control.breakpoints))
        self._tell(changed)
        return True

    def clear_breakpoints(self) -> int:
        """Clear every breakpoint; returns how many there were."""
        with self._cond:
            count = len(self._control.breakpoints)
            self._control.breakpoints.clear()
            self._status = changed = replace(self._status, breakpoints=())
        if count:
            self._tell(changed)
        return count

    def _tell(self, status: GateStatus) -> None:
        if self.on_change is not None:
            self.on_change(status)


def _detail(event: TraceEvent) -> str:
    """A few words on an event for the status line (ids are untrusted: the UI makes them inert)."""
    if isinstance(event, CursorMoveEvent):
        return f"{event.from_skill or '·'} → {event.to_skill or '(none)'} by {event.by}"
    if isinstance(event, EngagementEvent):
        changes = [f"{change.map_id} {change.kind}" for change in event.changes]
        return ", ".join(changes)
    if isinstance(event, LeasePruneEvent):
        pruned = ", ".join(f"{lease.instruction_id} ({lease.reason})" for lease in event.pruned)
        return f"at {event.site}: {pruned}"
    if isinstance(event, LlmCallEvent):
        if event.error is not None:
            return f"failed: {event.error.type}"
        calls = [call.name for call in event.response.tool_calls] if event.response is not None else []
        return f"asks for {', '.join(calls)}" if calls else "final answer"
    if isinstance(event, ToolResultEvent):
        return f"{event.tool_name} → {event.status or 'returned'}"
    if isinstance(event, PassEvent):
        return f"{len(event.active_ids)} active of {event.evaluated_total}"
    return ""

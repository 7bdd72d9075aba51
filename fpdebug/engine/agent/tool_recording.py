"""Running and recording one tool call of a batch: :class:`ToolRecording`, a part of the turn loop.

The read_skill gate, ``skip_step``, an ordinary call (run by
:func:`~fpdebug.engine.agent.tool_call.run_tool_call`) with its effects judged, and the one writer
of ``tool_result`` records. It is a mixin of :class:`~fpdebug.engine.agent.loop.TurnLoop`, kept
apart so that the loop itself stays readable (docs/context-model.md §4, §5.5, §5.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from fpdebug.engine.agent.tool_batch import skill_text
from fpdebug.engine.agent.tool_call import ToolCallOutcome, coverage_of, run_tool_call
from fpdebug.engine.effects import (
    CallJudgment,
    EffectScope,
    EffectState,
    Envelope,
    judge_effects,
    warn_near_miss,
)
from fpdebug.engine.injections import StepPointer
from fpdebug.engine.sink import EventRecord
from fpdebug.engine.skillmap import SkillPick, gate_skill_pick
from fpdebug.engine.steps import skip_step_result, step_on_return
from fpdebug.engine.types import Activation, Tool, ToolResult
from fpdebug.trace.schema import (
    EffectJudgment,
    ErrorInfo,
    LeaseGrantEvent,
    LeasePruneEvent,
    MalformedEffect,
    SkillGate,
    SkillRejectedEvent,
    StepChange,
    ToolCallRecord,
    ToolResultEvent,
    ToolResultStatus,
)

if TYPE_CHECKING:
    from fpdebug.engine.agent.compile import Compiled
    from fpdebug.engine.agent.spec import AgentSpec
    from fpdebug.engine.sink import Recorder


def elapsed_ms(start: datetime, end: datetime) -> float:
    """Milliseconds from ``start`` to ``end``, to the microsecond."""
    return round((end - start).total_seconds() * 1000.0, 3)


class ToolRecording:
    """The turn loop's tool-call half: gate, run, judge and record one call (mixed into ``TurnLoop``)."""

    recorder: Recorder
    spec: AgentSpec
    compiled: Compiled
    cursor: str | None
    menu: tuple[str, ...] | None
    step_pointer: tuple[StepPointer, ...] | None
    provenance: dict[str, Activation]
    turn: int
    iteration: int

    def _emit(self, event_type: type[EventRecord], /, **fields: object) -> None:
        """Write one event of this turn and iteration (the loop's one writer of its events)."""
        self.recorder.emit(event_type, turn=self.turn, iteration=self.iteration, **fields)

    def _read_skill(
        self, call: ToolCallRecord, parked: frozenset[str]
    ) -> tuple[SkillPick | None, str, ToolResultStatus | None]:
        """The read_skill gate (docs/context-model.md §5.5): judge the pick, record it, return the
        verdict (``None`` for unreadable arguments), the text and the status."""
        start = self.recorder.now()
        requested = call.args.get("id")
        if call.raw_args is not None or not isinstance(requested, str) or not requested.strip():
            message = f'read_skill needs {{"id": "<skill id>"}}, got {call.raw_args or call.args!r}'
            error = ErrorInfo(type="InvalidToolArguments", message=message)
            self._record_tool_result(call, message, start, status="invalid", error=error)
            return None, message, "invalid"
        graph = self.compiled.setup.skill_map  # without one, every read_skill skill is admitted as open
        pick = gate_skill_pick(
            requested,
            hops=graph.allowed_skill_ids(self.cursor) if graph is not None else (),
            open_skill_ids=self.compiled.open_skill_ids,
            parked_member_ids=parked,
            current_skill_id=self.cursor,
            posture=self.spec.read_skill_posture if graph is not None else None,
            menu=self.menu,
        )
        text = skill_text(self.compiled, pick)
        self._record_tool_result(call, text, start, skill_gate=pick.record())
        if not pick.accepted:
            self._emit(
                SkillRejectedEvent,
                requested_id=requested,
                current_skill_id=pick.current_skill_id,
                allowed=list(pick.allowed),
                tool_call_id=call.id,
                posture=pick.posture,
            )
        return pick, text, None

    def _skip_step(self, call: ToolCallRecord) -> str:
        """The framework's ``skip_step``: skip (or hold) the current step; record it; return the text."""
        start = self.recorder.now()
        if call.raw_args is not None:
            message = f'skip_step needs {{"reason": "<why>"}}, got {call.raw_args!r}'
            error = ErrorInfo(type="InvalidToolArguments", message=message)
            self._record_tool_result(call, message, start, status="invalid", error=error)
            return message
        reason = call.args.get("reason")
        text, boundary = skip_step_result(self.step_pointer, self.compiled.step_plans, reason)
        step: StepChange | None = None
        if boundary is not None:
            self.step_pointer = boundary.next
            step = boundary.record()
        self._record_tool_result(call, text, start, step=step)
        return text

    def _run_tool(
        self,
        call: ToolCallRecord,
        scope: EffectScope,
        state: EffectState,
        batch: list[ToolResult],
        *,
        refused: ErrorInfo | None = None,
    ) -> tuple[EffectState, str, str | None]:
        """Run one call, record its ``tool_result``; return the effect state, the text read, the coverage.

        ``refused`` is a tool middleware's failure: the tool does not run, the call is a ``failure``.
        """
        start = self.recorder.now()
        found = None if call.name in self.spec.ignored_tools else self.compiled.tools_by_name.get(call.name)
        outcome = run_tool_call(call, found, refused=refused, default_timeout=self.spec.tool_timeout)
        if outcome.error is not None:
            text = f"Error: {call.name} failed: {outcome.error.type}: {outcome.error.message}"
            self._record_tool_result(call, text, start, status=outcome.status, error=outcome.error)
            batch.append(ToolResult(call.name, text, call.id, outcome.status))
            return state, text, None
        if outcome.envelope is None:
            text, coverage = self._record_plain_result(call, found, outcome, start)
            batch.append(ToolResult(call.name, outcome.value, call.id))
            return state, text, coverage
        envelope = outcome.envelope
        judged, text, coverage = self._record_envelope_result(
            call, found, outcome, envelope, scope, state, start
        )
        batch.append(ToolResult(call.name, envelope.content, call.id, envelope.status))
        return judged.state, text, coverage

    def _record_plain_result(
        self, call: ToolCallRecord, found: Tool | None, outcome: ToolCallOutcome, start: datetime
    ) -> tuple[str, str | None]:
        """Record a call that returned a plain value: the step advance, the coverage it declares."""
        warn_near_miss(outcome.value, tool_name=call.name)
        suffix, step = self._step_on_return(call.name)
        text = outcome.text + suffix
        coverage = coverage_of(found, call.args, outcome.value)
        self._record_tool_result(call, text, start, coverage=coverage, step=step)
        return text, coverage

    def _record_envelope_result(
        self,
        call: ToolCallRecord,
        found: Tool | None,
        outcome: ToolCallOutcome,
        envelope: Envelope,
        scope: EffectScope,
        state: EffectState,
        start: datetime,
    ) -> tuple[CallJudgment, str, str | None]:
        """Judge an envelope's effects (docs/context-model.md §4) and record the call, its lease grants
        and prunes; return the judgement, the text read and the coverage."""
        judged = judge_effects(envelope, tool_name=call.name, tool_call_id=call.id, scope=scope, state=state)
        for sid, activation in judged.activations:
            self.provenance.setdefault(sid, activation)
        # A declared status does not stop the advance: only a call that failed to run clean does
        # (reference toolCalls.ts: `executed && !error && !denied && !skillRejected && !ceilingRefused`).
        suffix, step = self._step_on_return(call.name)
        text = outcome.text + suffix + judged.suffix
        coverage = coverage_of(found, call.args, envelope.content)
        self._record_tool_result(
            call,
            text,
            start,
            status=envelope.status,
            effects=list(judged.judgments),
            malformed=list(envelope.malformed),
            coverage=coverage,
            step=step,
        )
        for lease in judged.grants:
            self._emit(LeaseGrantEvent, lease=lease.record())
        for prune in judged.prunes:
            self._emit(LeasePruneEvent, **prune.fields())
        return judged, text, coverage

    # -- recording a call ------------------------------------------------------------------------

    def _record_tool_result(
        self,
        call: ToolCallRecord,
        text: str,
        start: datetime,
        *,
        status: ToolResultStatus | None = None,
        error: ErrorInfo | None = None,
        skill_gate: SkillGate | None = None,
        effects: Sequence[EffectJudgment] = (),
        malformed: Sequence[MalformedEffect] = (),
        coverage: str | None = None,
        step: StepChange | None = None,
    ) -> None:
        """Record one call's ``tool_result``: the text the model reads, how long the call took since
        ``start``, and the kind's other fields (an absent one writes no key)."""
        self._emit(
            ToolResultEvent,
            tool_call_id=call.id,
            tool_name=call.name,
            args=dict(call.args),
            result=text,
            status=status,
            error=error,
            skill_gate=skill_gate,
            effects=list(effects),
            malformed=list(malformed),
            coverage=coverage,
            step=step,
            duration_ms=elapsed_ms(start, self.recorder.now()),
        )

    def _step_on_return(self, tool_name: str) -> tuple[str, StepChange | None]:
        """Advance the step pointer for a call that ran clean: the suffix the model reads after the
        result and the ``tool_result.step`` record (empty and ``None`` when nothing moved,
        docs/context-model.md §5.6)."""
        moved = step_on_return(self.step_pointer, self.compiled.step_plans, tool_name)
        if moved is None:
            return "", None  # no procedure in progress, or not the current step's tool: no key written
        boundary, suffix = moved
        self.step_pointer = boundary.next
        return suffix, boundary.record()

"""An agentfootprint Recording's events, turned into fpdebug trace events (docs/trace-contract.md §8.2).

The recording's typed stream is read in emission order and grouped by iteration (the
``context.evaluated`` that opens each one; a ``map.*`` event just before it belongs to it). Each
iteration becomes, in fpdebug's order: ``cursor_move``, ``lease_prune`` (site evaluate),
``engagement``, ``pass``, ``llm_call``, then each ``tool_result`` with its ``lease_grant`` records,
then the grant-time ``lease_prune``. Leases come from the snapshot's commit log
(:mod:`fpdebug.ingest.agentfootprint_leases`), never from the event stream, which holds none.

What the recording does not hold stays absent:

- a pass's reasons name only what the recording says (a lease from the commit log, the skill-map
  routing, steering's always-on flavor, the park card); other active ids get no reason row;
- an ``engagement`` record is written only on the passes where ``map.engaged`` / ``map.parked``
  fired, with the changes and no per-pass standing (the recording holds no map records);
- no honesty findings (agentfootprint has none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fpdebug.engine.evaluate import PARK_CARD_ID
from fpdebug.ingest.agentfootprint_calls import (
    judgment,
    prompt_segments,
    reply,
    request_messages,
    request_tools,
    requested_calls,
)
from fpdebug.ingest.agentfootprint_config import read_run_start
from fpdebug.ingest.agentfootprint_leases import LeaseLedger, LeasePruneFact, read_lease_ledger
from fpdebug.ingest.agentfootprint_passes import (
    cursor_fields,
    engagement_changes,
    member_tools,
    pass_facts,
    skipped,
    slot_delta,
    slots,
    withheld_tools,
)
from fpdebug.ingest.agentfootprint_source import RecordingSource, event_ts, event_type, integer, obj, text
from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    EngagementEvent,
    ErrorInfo,
    InjectionDecl,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    PassEvent,
    RouteChoice,
    RunEndEvent,
    SlotRouting,
    StoppedEarly,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = ["Conversion", "convert_recording"]

_STATUSES = frozenset({"success", "failure", "denied", "invalid", "partial", "pending", "absent"})


@dataclass
class Conversion:
    """The converted events and what the conversion could not carry over."""

    events: list[TraceEvent] = field(default_factory=list)
    """Every event, seq dense from 1."""
    warnings: list[str] = field(default_factory=list)
    """Things read but not representable, or inconsistent in the source."""
    runs: int = 0
    """Runs written (one per recording)."""


@dataclass
class _Iteration:
    """The source events of one iteration, opened by its ``context.evaluated``."""

    number: int
    evaluated: dict[str, Any]
    ts: datetime
    map_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    injected: list[dict[str, Any]] = field(default_factory=list)
    llm_start: dict[str, Any] | None = None
    llm_end: dict[str, Any] | None = None
    llm_ts: datetime | None = None
    route: str | None = None
    tool_starts: list[dict[str, Any]] = field(default_factory=list)
    tool_ends: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_ts: dict[str, datetime] = field(default_factory=dict)
    effects: list[dict[str, Any]] = field(default_factory=list)
    history: list[Any] | None = None

    def take(self, kind: str, payload: dict[str, Any], ts: datetime) -> None:
        """Keep one event of this iteration (the others are not needed)."""
        if kind == "context.injected":
            self.injected.append(payload)
        elif kind == "stream.llm_start":
            self.llm_start, self.llm_ts = payload, ts
        elif kind == "stream.llm_end":
            self.llm_end = payload
        elif kind == "agent.route_decided":
            self.route = payload.get("chosen") if isinstance(payload.get("chosen"), str) else None
        elif kind == "stream.tool_start":
            self.tool_starts.append(payload)
            self.tool_ts[text(payload.get("toolCallId"))] = ts
        elif kind == "stream.tool_end":
            self.tool_ends[text(payload.get("toolCallId"))] = payload
        elif kind == "tools.effect":
            self.effects.append(payload)
        elif kind == "agent.iteration_end" and isinstance(payload.get("history"), list):
            self.history = payload["history"]

    @property
    def park_card(self) -> str | None:
        """The park card the call's system prompt carried, if a map was parked."""
        for item in self.injected:
            if item.get("slot") == "system-prompt" and item.get("sourceId") == PARK_CARD_ID:
                return text(item.get("rawContent"))
        return None


def convert_recording(recording: dict[str, Any], envelope: dict[str, Any] | None) -> Conversion:
    """Convert one Recording (``{snapshot, events, structure}``) and its envelope, when there is one."""
    return _Converter(recording, envelope).run()


_ROUTES: dict[str, RouteChoice] = {
    "tool-calls": "tool-calls",
    "final": "final",
    "output-retry": "output-retry",
    "step-nudge": "step-nudge",
    "evidence-recheck": "evidence-recheck",
    "wrap-up": "wrap-up",
}
"""The reference's six routes (``agent.route_decided.chosen``), all of which fpdebug builds."""

_STOP_REASONS = ("max-iterations", "cost-budget")
"""The reference's ``stoppedEarly.reason`` values."""


class _Converter:
    def __init__(self, recording: dict[str, Any], envelope: dict[str, Any] | None) -> None:
        self.source = RecordingSource(recording, envelope or {})
        self.leases: LeaseLedger = read_lease_ledger(self.source.snapshot)
        self.out = Conversion(warnings=list(self.leases.warnings))
        self.run_id = self._run_id()
        self.first_ts = self._first_ts()
        self.turn = 0
        self.turns_ended = 0
        self.call_index = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.catalog: dict[str, InjectionDecl] = {}
        self.previous_slots: SlotRouting | None = None
        self.previous_batch: list[str] = []
        self.last_history: list[Any] = []
        # The kernel is mounted when any map event fired; then every pass records its served ids.
        self.kernel_mounted = any(event_type(e).startswith("map.") for e in self.source.events)
        self.member_tools = member_tools(self.source.events)

    def run(self) -> Conversion:
        start, self.catalog = read_run_start(self.source, self.run_id, self.first_ts, self.out.warnings)
        self._emit(start)
        iteration: _Iteration | None = None
        pending_maps: list[tuple[str, dict[str, Any]]] = []
        for event in self.source.events:
            kind, payload = event_type(event), obj(event.get("payload"))
            ts = event_ts(event) or self.first_ts
            if kind in ("map.engaged", "map.parked"):
                pending_maps.append((kind, payload))  # emitted just before its pass's context.evaluated
            elif kind == "context.evaluated":
                self._flush(iteration)
                number = payload.get("iteration")
                if not isinstance(number, int):
                    number = iteration.number + 1 if iteration is not None else 1
                iteration = _Iteration(number=number, evaluated=payload, ts=ts, map_events=pending_maps)
                pending_maps = []
            elif kind in ("agent.turn_start", "agent.turn_end"):
                self._flush(iteration)
                iteration = None
                self._turn_start(payload, ts) if kind == "agent.turn_start" else self._turn_end(payload, ts)
            elif iteration is not None:
                iteration.take(kind, payload, ts)
        self._flush(iteration)
        self._run_end()
        self.out.runs = 1
        return self.out

    # ------------------------------------------------------------------------------------------
    # One iteration

    def _flush(self, iteration: _Iteration | None) -> None:
        if iteration is None:
            return
        self.turn = self.turn or 1  # the turn_start was dropped (a capped recording): turn 1 still
        envelope: dict[str, Any] = {"run_id": self.run_id, "turn": self.turn, "iteration": iteration.number}
        move = iteration.evaluated.get("cursorMove")
        if isinstance(move, dict) and isinstance(move.get("by"), str):
            self._emit(CursorMoveEvent(seq=1, ts=iteration.ts, **envelope, **cursor_fields(move)))
        sweep = self.leases.sweep_of(iteration.number)
        if sweep is not None:
            self._emit(_prune("evaluate", sweep, iteration.ts, envelope))
        skipped_rows = skipped(iteration.evaluated.get("skippedDetails"), self.out.warnings)
        parked = [row.id for row in skipped_rows if row.reason == "parked"]
        if iteration.map_events:
            self._emit(
                EngagementEvent(
                    seq=1,
                    ts=iteration.ts,
                    **envelope,
                    pass_facts=pass_facts(move, self.previous_batch),
                    changes=engagement_changes(iteration.map_events, iteration.number, self.out.warnings),
                    parked_injection_ids=parked,
                    parked_tool_names=withheld_tools(self.member_tools, parked, iteration.llm_start),
                    park_card=iteration.park_card,
                )
            )
        self._emit(self._pass(iteration, envelope, skipped_rows, parked))
        if iteration.llm_start is not None or iteration.llm_end is not None:
            self._emit(self._llm_call(iteration, envelope))
        for start in iteration.tool_starts:
            self._tool_result(iteration, start, envelope)
        prune = self.leases.grant_prune_of(iteration.number)
        if prune is not None:
            self._emit(_prune("tool-calls", prune, iteration.ts, envelope))
        self.previous_batch = [text(start.get("toolName")) for start in iteration.tool_starts]
        if iteration.history is not None:
            self.last_history = iteration.history

    def _pass(
        self, iteration: _Iteration, envelope: dict[str, Any], skipped_rows: list[Any], parked: list[str]
    ) -> PassEvent:
        payload = iteration.evaluated
        active = [id_ for id_ in payload.get("activeIds") or () if isinstance(id_, str)]
        by_lease = self.leases.served_on(iteration.number, active)
        reasons = self._reasons(payload, active, by_lease or [], iteration.number)
        park_card = iteration.park_card
        if park_card is not None:
            reasons.append(ActiveReason(id=PARK_CARD_ID, via="park-card"))
        served = active + ([PARK_CARD_ID] if park_card is not None else []) if self.kernel_mounted else None
        counts, total = obj(payload.get("triggerKindCounts")), payload.get("evaluatedTotal")
        by_slot = slots(iteration.injected)
        event = PassEvent(
            seq=1,
            ts=iteration.ts,
            **envelope,
            active_ids=active,
            reasons=reasons,
            skipped=skipped_rows,
            evaluated_total=total if isinstance(total, int) else len(active) + len(skipped_rows),
            trigger_kind_counts={kind: n for kind, n in counts.items() if isinstance(n, int)},
            lease_active_ids=by_lease,
            parked_ids=parked or None,
            served_ids=served,
            by_slot=by_slot,
            delta=slot_delta(by_slot, self.previous_slots),
        )
        self.previous_slots = by_slot
        return event

    def _reasons(
        self, payload: dict[str, Any], active: list[str], leased: list[str], number: int
    ) -> list[ActiveReason]:
        """Why each active id rode, where the recording says so; the rest get no row (not recorded).

        The commit log decides a lease: an id a lease served rides by its lease, not as the rule
        agentfootprint counts it under (docs/context-model.md §4.3)."""
        rows = [item for item in payload.get("routing") or () if isinstance(item, dict)]
        routed = {item.get("injectionId") for item in rows}
        trees = {item.get("injectionId"): item for item in rows if item.get("via") == "tree"}
        reasons: list[ActiveReason] = []
        for id_ in active:
            lease = self.leases.serving_lease(number, id_) if id_ in leased else None
            if lease is not None:
                reasons.append(
                    ActiveReason(
                        id=id_,
                        via="lease",
                        tool_name=lease.tool_name,
                        tool_call_id=lease.tool_call_id,
                        at_iteration=lease.iteration,
                        delivery_lease=lease.delivery_lease,
                        tenant=lease.skill_id,
                    )
                )
            elif id_ in trees:
                reasons.append(_tree_reason(id_, trees[id_]))  # a decision tree's leaf: no cursor
            elif id_ in routed:
                reasons.append(ActiveReason(id=id_, via="cursor"))  # the skill-map routing admitted it
            elif (decl := self.catalog.get(id_)) is not None and decl.trigger.kind == "always":
                reasons.append(ActiveReason(id=id_, via="always"))
        return reasons

    def _llm_call(self, iteration: _Iteration, envelope: dict[str, Any]) -> LlmCallEvent:
        start, end = iteration.llm_start or {}, iteration.llm_end
        self.call_index += 1
        where = f"call {self.call_index}"
        history = iteration.history if iteration.history is not None else self.last_history
        request = LlmRequest(
            system_prompt=prompt_segments(
                iteration.injected, start.get("systemPromptText"), where, self.out.warnings
            ),
            messages=request_messages(iteration.injected, history),
            tools=request_tools(self.source, iteration.injected, start),
        )
        if end is None:
            self.out.warnings.append(f"{where}: the recording has no llm_end; no reply is shown")
        route = _ROUTES.get(iteration.route) if iteration.route is not None else None
        if iteration.route is not None and route is None:
            self.out.warnings.append(
                f"{where}: route {iteration.route!r} is not one of the reference's routes"
            )
        duration = obj(end).get("durationMs")
        return LlmCallEvent(
            seq=1,
            ts=iteration.llm_ts or iteration.ts,
            **envelope,
            call_index=self.call_index,
            provider=text(start.get("provider")) or "unknown",
            model=text(start.get("model")) or "unknown",
            request=request,
            response=reply(end, requested_calls(iteration.history, iteration.tool_starts))
            if end is not None
            else None,
            latency_ms=float(duration) if isinstance(duration, int | float) else 0.0,
            route=route,
        )

    def _tool_result(self, iteration: _Iteration, start: dict[str, Any], envelope: dict[str, Any]) -> None:
        call_id = text(start.get("toolCallId"))
        end = iteration.tool_ends.get(call_id)
        if end is None:
            self.out.warnings.append(
                f"tool call {call_id}: the recording has no tool_end; no result is shown"
            )
            return
        ts = iteration.tool_ts.get(call_id) or iteration.ts
        failed = end.get("error") is True  # a thrown tool: the model read the message as the result
        result = end.get("result")
        result_text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        status, args, duration = end.get("status"), start.get("args"), end.get("durationMs")
        effects = [effect for effect in iteration.effects if effect.get("toolCallId") == call_id]
        self._emit(
            ToolResultEvent(
                seq=1,
                ts=ts,
                **envelope,
                tool_call_id=call_id,
                tool_name=text(start.get("toolName")),
                args=args if isinstance(args, dict) else {},
                result=result_text,
                status="failure" if failed else (status if status in _STATUSES else None),
                effects=[j for j in map(judgment, effects) if j is not None],
                error=ErrorInfo(type="ToolError", message=result_text) if failed else None,
                duration_ms=float(duration) if isinstance(duration, int | float) else 0.0,
            )
        )
        for effect in effects:
            if effect.get("kind") != "require-instruction" or effect.get("outcome") != "accepted":
                continue
            lease = self.leases.grant_for(text(effect.get("instructionId")), call_id)
            if lease is None:
                self.out.warnings.append(
                    f"the lease of {effect.get('instructionId')!r} granted by {call_id} is not in the "
                    "snapshot's commit log; no lease_grant is written"
                )
                continue
            self._emit(LeaseGrantEvent(seq=1, ts=ts, **envelope, lease=lease))

    # ------------------------------------------------------------------------------------------
    # Turns and the run's end

    def _turn_start(self, payload: dict[str, Any], ts: datetime) -> None:
        self.turn += 1
        prompt = text(payload.get("userPrompt"))
        self._emit(TurnStartEvent(seq=1, ts=ts, run_id=self.run_id, turn=self.turn, user_message=prompt))

    def _turn_end(self, payload: dict[str, Any], ts: datetime) -> None:
        self.turn = self.turn or 1
        input_tokens = integer(payload.get("totalInputTokens"))
        output_tokens = integer(payload.get("totalOutputTokens"))
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.turns_ended += 1
        count = payload.get("iterationCount")
        self._emit(
            TurnEndEvent(
                seq=1,
                ts=ts,
                run_id=self.run_id,
                turn=self.turn,
                final_content=text(payload.get("finalContent")),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                iteration_count=count if isinstance(count, int) else 0,
                stopped_early=self._stopped_early(payload.get("stoppedEarly")),
            )
        )

    def _stopped_early(self, value: object) -> StoppedEarly | None:
        """``turn_end.stoppedEarly`` (``{reason, iteration, pendingToolCalls, answerWasEmpty,
        wrappedUp?}``), or ``None`` with a warning when it is there but not one."""
        if value is None:
            return None
        stop = obj(value)
        reason, iteration = stop.get("reason"), stop.get("iteration")
        if reason not in _STOP_REASONS or isinstance(iteration, bool) or not isinstance(iteration, int):
            self.out.warnings.append(
                f"turn {self.turn}: stoppedEarly {value!r:.120} is not one fpdebug reads; not recorded"
            )
            return None
        wrapped = stop.get("wrappedUp")
        return StoppedEarly(
            reason=reason,
            iteration=iteration,
            pending_tool_calls=integer(stop.get("pendingToolCalls")),
            answer_was_empty=stop.get("answerWasEmpty") is True,
            wrapped_up=True if wrapped is True else None,
        )

    def _run_end(self) -> None:
        # The envelope says whether the run completed; a bare Recording does not, and its run is
        # taken as completed only when every turn it started ended.
        run = self.source.envelope.get("run")
        if isinstance(run, dict):
            if run.get("complete") is not True:
                self.out.warnings.append(
                    "run.complete is not true: the run's end is not recorded; no run_end"
                )
                return
        elif self.turns_ended == 0 or self.turns_ended < self.turn:
            self.out.warnings.append("a bare recording whose last turn did not end: no run_end")
            return
        last = next(
            (ts for ts in map(event_ts, reversed(self.source.events)) if ts is not None), self.first_ts
        )
        self._emit(
            RunEndEvent(
                seq=1,
                ts=last,
                run_id=self.run_id,
                status="completed",
                turns=self.turns_ended,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
            )
        )

    # ------------------------------------------------------------------------------------------

    def _emit(self, event: TraceEvent) -> None:
        self.out.events.append(event.model_copy(update={"seq": len(self.out.events) + 1}))

    def _run_id(self) -> str:
        run = self.source.envelope.get("run")
        if isinstance(run, dict) and isinstance(run.get("runId"), str):
            return str(run["runId"])
        for event in self.source.events:
            run_id = obj(event.get("meta")).get("runId")
            if isinstance(run_id, str):
                return run_id
        engine_run = self.source.snapshot.get("runId")  # footprintjs's own id: another namespace, last
        return engine_run if isinstance(engine_run, str) else "agentfootprint-run"

    def _first_ts(self) -> datetime:
        first = next((ts for ts in map(event_ts, self.source.events) if ts is not None), None)
        if first is not None:
            return first
        started = obj(self.source.envelope.get("run")).get("startedAt")
        if isinstance(started, str):
            try:
                return datetime.fromisoformat(started.replace("Z", "+00:00"))
            except ValueError:
                pass
        return datetime(1970, 1, 1, tzinfo=UTC)


def _prune(site: str, fact: LeasePruneFact, ts: datetime, envelope: dict[str, Any]) -> LeasePruneEvent:
    return LeasePruneEvent(
        seq=1,
        ts=ts,
        **envelope,
        site=site,  # type: ignore[arg-type]  # "evaluate" or "tool-calls"
        tenant=fact.tenant,
        pruned=list(fact.pruned),
        survivors=list(fact.survivors),
    )


def _tree_reason(id_: str, row: dict[str, Any]) -> ActiveReason:
    """A ``routing`` row with ``via: tree`` (docs/context-model.md §5.2), its path and label kept as recorded."""
    path = row.get("path")
    label = row.get("label")
    steps = [str(step) for step in path] if isinstance(path, list) else None
    return ActiveReason(id=id_, via="tree", path=steps, label=str(label) if label is not None else None)

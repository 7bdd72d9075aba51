"""An agentfootprint Recording's events, turned into fpdebug trace events (docs/trace-contract.md §8.2).

The recording's typed stream is read in emission order and grouped by iteration (the
``context.evaluated`` that opens each one). Each iteration becomes, in fpdebug's order:
``cursor_move``, ``lease_prune`` (site evaluate), ``engagement``, ``pass``, ``llm_call``, then each
``tool_result`` with its ``lease_grant`` records and the grant-time ``lease_prune``. Leases come from
the snapshot's commit log (:mod:`fpdebug.ingest.agentfootprint_leases`), never from the event stream,
which holds none.

What the recording does not hold stays absent: no trigger definitions (a fact's or instruction's
trigger kind is written as ``rule`` with a description saying it was not recorded), no per-pass map
records (an ``engagement`` record is written only on the passes where ``map.engaged`` /
``map.parked`` fired, with the change and no invented standing), no honesty findings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fpdebug.engine.engagement import strength_of_move
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
from fpdebug.ingest.agentfootprint_leases import LeaseLedger, read_lease_ledger
from fpdebug.ingest.agentfootprint_source import (
    ENGINEERED,
    RecordingSource,
    event_ts,
    event_type,
    integer,
    obj,
    text,
)
from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    EngagementChange,
    EngagementEvent,
    EngagementPassFacts,
    ErrorInfo,
    InjectionDecl,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    PassDelta,
    PassEvent,
    RunEndEvent,
    Skipped,
    SlotDelta,
    SlotEntry,
    SlotRouting,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
    Witness,
)

__all__ = ["Conversion", "convert_recording"]

_SKIP_REASONS = {"predicate-threw", "unknown-trigger-kind", "unknown-fact", "parked"}
_STATUSES = {"success", "failure", "denied", "invalid", "partial", "pending", "absent"}
_ROLES = {"system", "user", "assistant", "tool"}
_STRENGTHS = {"explicit", "structural", "semantic", "lexical", "assumed"}


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
    evaluated: dict[str, Any] | None = None
    map_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    injected: list[dict[str, Any]] = field(default_factory=list)
    llm_start: dict[str, Any] | None = None
    llm_end: dict[str, Any] | None = None
    route: str | None = None
    tool_starts: list[dict[str, Any]] = field(default_factory=list)
    tool_ends: dict[str, dict[str, Any]] = field(default_factory=dict)
    effects: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] | None = None
    ts: datetime | None = None
    llm_ts: datetime | None = None
    tool_ts: dict[str, datetime] = field(default_factory=dict)


def convert_recording(recording: dict[str, Any], envelope: dict[str, Any] | None) -> Conversion:
    """Convert one Recording (``{snapshot, events, structure}``) and its envelope, when there is one."""
    return _Converter(recording, envelope).run()


class _Converter:
    def __init__(self, recording: dict[str, Any], envelope: dict[str, Any] | None) -> None:
        self.source = RecordingSource(recording, envelope or {})
        self.envelope = self.source.envelope
        self.leases: LeaseLedger = read_lease_ledger(self.source.snapshot)
        self.out = Conversion()
        self.out.warnings.extend(self.leases.warnings)
        self.run_id = self._run_id()
        self.turn = 0
        self.call_index = 0
        self.previous_slots: SlotRouting | None = None
        self.previous_batch: list[str] = []
        self.kernel_mounted = any(event_type(e).startswith("map.") for e in self.source.events)
        self.catalog: dict[str, InjectionDecl] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.turns_ended = 0
        self.last_history: list[Any] = []

    # ------------------------------------------------------------------------------------------

    def run(self) -> Conversion:
        first_ts = self._first_ts()
        start, self.catalog = read_run_start(self.source, self.run_id, first_ts, self.out.warnings)
        self._emit(start)
        iteration: _Iteration | None = None
        pending_maps: list[tuple[str, dict[str, Any]]] = []
        for event in self.source.events:
            kind = event_type(event)
            payload = obj(event.get("payload"))
            ts = event_ts(event) or first_ts
            if kind == "agent.turn_start":
                self._flush(iteration)
                iteration = None
                self.turn += 1
                self._emit(
                    TurnStartEvent(
                        seq=1,
                        ts=ts,
                        run_id=self.run_id,
                        turn=self.turn,
                        user_message=text(payload.get("userPrompt")),
                    )
                )
            elif kind in ("map.engaged", "map.parked"):
                pending_maps.append((kind, payload))
            elif kind == "context.evaluated":
                self._flush(iteration)
                number = payload.get("iteration")
                iteration = _Iteration(
                    number=number if isinstance(number, int) else self._next_number(iteration)
                )
                iteration.evaluated, iteration.ts = payload, ts
                iteration.map_events, pending_maps = pending_maps, []
            elif iteration is None:
                if kind == "agent.turn_end":
                    self._turn_end(payload, ts)
                continue
            elif kind == "context.injected":
                iteration.injected.append(payload)
            elif kind == "stream.llm_start":
                iteration.llm_start, iteration.llm_ts = payload, ts
            elif kind == "stream.llm_end":
                iteration.llm_end = payload
            elif kind == "agent.route_decided":
                iteration.route = payload.get("chosen") if isinstance(payload.get("chosen"), str) else None
            elif kind == "stream.tool_start":
                iteration.tool_starts.append(payload)
                iteration.tool_ts[str(payload.get("toolCallId"))] = ts
            elif kind == "stream.tool_end":
                iteration.tool_ends[str(payload.get("toolCallId"))] = payload
            elif kind == "tools.effect":
                iteration.effects.append(payload)
            elif kind == "agent.iteration_end":
                history = payload.get("history")
                iteration.history = history if isinstance(history, list) else None
            elif kind == "agent.turn_end":
                self._flush(iteration)
                iteration = None
                self._turn_end(payload, ts)
        self._flush(iteration)
        self._run_end()
        self.out.runs = 1
        return self.out

    # ------------------------------------------------------------------------------------------
    # One iteration

    def _flush(self, iteration: _Iteration | None) -> None:
        if iteration is None:
            return
        number, ts = iteration.number, iteration.ts or self._first_ts()
        payload = iteration.evaluated or {}
        turn = self.turn or 1
        if self.turn == 0:
            self.turn = 1
        move = payload.get("cursorMove")
        if isinstance(move, dict) and isinstance(move.get("by"), str):
            self._emit(self._cursor_move(move, number, ts, turn))
        sweep = self.leases.sweep_of(number)
        if sweep is not None:
            self._emit(
                LeasePruneEvent(
                    seq=1,
                    ts=ts,
                    run_id=self.run_id,
                    turn=turn,
                    iteration=number,
                    site="evaluate",
                    tenant=sweep.tenant,
                    pruned=list(sweep.pruned),
                    survivors=list(sweep.survivors),
                )
            )
        slots = self._slots(iteration.injected)
        park_card = next(
            (
                text(item.get("rawContent"))
                for item in iteration.injected
                if item.get("slot") == "system-prompt" and item.get("sourceId") == PARK_CARD_ID
            ),
            None,
        )
        active = [id_ for id_ in payload.get("activeIds") or () if isinstance(id_, str)]
        skipped = self._skipped(payload.get("skippedDetails"))
        parked = [s.id for s in skipped if s.reason == "parked"]
        if iteration.map_events:
            self._emit(self._engagement(iteration, move, parked, park_card, ts, turn))
        self._emit(self._pass(iteration, active, skipped, parked, park_card, slots, ts, turn))
        if iteration.llm_start is not None or iteration.llm_end is not None:
            self._emit(self._llm_call(iteration, iteration.llm_ts or ts, turn))
        self._tool_results(iteration, turn)
        self.previous_batch = [text(start.get("toolName")) for start in iteration.tool_starts]
        if iteration.history is not None:
            self.last_history = iteration.history

    def _cursor_move(self, move: dict[str, Any], number: int, ts: datetime, turn: int) -> CursorMoveEvent:
        by = text(move.get("by"))
        witness = move.get("witness")
        guards_closed = move.get("guardsClosed")
        return CursorMoveEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            turn=turn,
            iteration=number,
            from_skill=move.get("from") if isinstance(move.get("from"), str) else None,
            to_skill=move.get("to") if isinstance(move.get("to"), str) else None,
            by=by,
            strength=strength_of_move(by),
            witness=(
                Witness(
                    text=" ".join(text(witness.get("text")).split())[:80],
                    keyword=witness.get("keyword") if isinstance(witness.get("keyword"), str) else None,
                )
                if isinstance(witness, dict)
                else None
            ),
            reachable=[r for r in move.get("reachable") or () if isinstance(r, str)],
            guard=_guard_text(move.get("guard")),
            guards_closed=[_guard_text(g) or "" for g in guards_closed]
            if isinstance(guards_closed, list)
            else None,
        )

    def _skipped(self, details: object) -> list[Skipped]:
        skipped: list[Skipped] = []
        for item in details if isinstance(details, list) else ():
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                continue
            reason = item.get("reason")
            if reason not in _SKIP_REASONS:
                self.out.warnings.append(
                    f"skip reason {reason!r} of {item['id']!r} is not one fpdebug knows; left out"
                )
                continue
            error = item.get("error")
            skipped.append(
                Skipped(id=item["id"], reason=reason, error=error if isinstance(error, str) else None)
            )
        return skipped

    def _slots(self, injected: list[dict[str, Any]]) -> SlotRouting:
        rows: dict[str, list[SlotEntry]] = {"system-prompt": [], "messages": [], "tools": []}
        for item in injected:
            slot, source, id_ = item.get("slot"), item.get("source"), item.get("sourceId")
            if slot not in rows or source not in ENGINEERED or not isinstance(id_, str):
                continue
            if any(entry.id == id_ for entry in rows[slot]):
                continue  # a skill with two tools lands once in the tools slot
            reason = item.get("reason")
            rows[slot].append(
                SlotEntry(id=id_, source=str(source), reason=reason if isinstance(reason, str) else "")
            )
        return SlotRouting(
            system_prompt=rows["system-prompt"], messages=rows["messages"], tools=rows["tools"]
        )

    def _pass(
        self,
        iteration: _Iteration,
        active: list[str],
        skipped: list[Skipped],
        parked: list[str],
        park_card: str | None,
        slots: SlotRouting,
        ts: datetime,
        turn: int,
    ) -> PassEvent:
        payload = iteration.evaluated or {}
        number = iteration.number
        served_by_lease = self.leases.served_on(number, active)
        reasons = self._reasons(payload, active, served_by_lease or [], number)
        if park_card is not None:
            reasons.append(ActiveReason(id=PARK_CARD_ID, via="park-card"))
        served: list[str] | None = None
        if self.kernel_mounted:
            served = active + ([PARK_CARD_ID] if park_card is not None else [])
        counts = payload.get("triggerKindCounts")
        total = payload.get("evaluatedTotal")
        event = PassEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            turn=turn,
            iteration=number,
            active_ids=active,
            reasons=reasons,
            skipped=skipped,
            evaluated_total=total if isinstance(total, int) else len(active) + len(skipped),
            trigger_kind_counts={k: v for k, v in counts.items() if isinstance(v, int)}
            if isinstance(counts, dict)
            else {},
            lease_active_ids=served_by_lease,
            parked_ids=parked or None,
            served_ids=served,
            by_slot=slots,
            delta=_delta(slots, self.previous_slots),
        )
        self.previous_slots = slots
        return event

    def _reasons(
        self, payload: dict[str, Any], active: list[str], leased: list[str], number: int
    ) -> list[ActiveReason]:
        """Why each active id rode, where the recording says so; the rest get no row (not recorded)."""
        routed = {
            item.get("injectionId")
            for item in payload.get("routing") or ()
            if isinstance(item, dict) and isinstance(item.get("injectionId"), str)
        }
        reasons: list[ActiveReason] = []
        for id_ in active:
            if id_ in leased:
                lease = self.leases.serving_lease(number, id_)
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
                    continue
            if id_ in routed:
                reasons.append(ActiveReason(id=id_, via="cursor"))  # the skill-map routing admitted it
            elif (decl := self.catalog.get(id_)) is not None and decl.trigger.kind == "always":
                reasons.append(ActiveReason(id=id_, via="always"))
        return reasons

    def _engagement(
        self,
        iteration: _Iteration,
        move: object,
        parked: list[str],
        park_card: str | None,
        ts: datetime,
        turn: int,
    ) -> EngagementEvent:
        changes: list[EngagementChange] = []
        for kind, payload in iteration.map_events:
            by = payload.get("by")
            if by not in _STRENGTHS:
                self.out.warnings.append(
                    f"{kind} at iteration {iteration.number}: strength {by!r} unknown; left out"
                )
                continue
            witness, idle = payload.get("witness"), payload.get("idleCalls")
            at_iteration = payload.get("iteration")
            changes.append(
                EngagementChange(
                    kind="parked" if kind == "map.parked" else "engaged",
                    map_id=text(payload.get("mapId")) or "skill-map",
                    iteration=at_iteration if isinstance(at_iteration, int) else iteration.number,
                    by=by,
                    witness=witness if isinstance(witness, str) else None,
                    reengaged=True if payload.get("reengaged") is True else None,
                    upgraded=True if payload.get("upgraded") is True else None,
                    tenant_changed=True if payload.get("tenantChanged") is True else None,
                    idle_calls=idle if isinstance(idle, int) else None,
                )
            )
        facts = EngagementPassFacts()
        if isinstance(move, dict):
            witness = move.get("witness")
            facts = EngagementPassFacts(
                current_node=move.get("to") if isinstance(move.get("to"), str) else None,
                move_by=move.get("by") if isinstance(move.get("by"), str) else None,
                witness=text(witness.get("text")) if isinstance(witness, dict) else None,
                tool_names=list(self.previous_batch),
            )
        return EngagementEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            turn=turn,
            iteration=iteration.number,
            pass_facts=facts,
            changes=changes,
            parked_injection_ids=parked,
            parked_tool_names=self._withheld_tools(iteration, parked),
            park_card=park_card,
        )

    def _withheld_tools(self, iteration: _Iteration, parked: list[str]) -> list[str]:
        """The parked members' tools (their ``routing[].tools`` on the passes they rode) that this
        pass's call did not offer."""
        owned: dict[str, list[str]] = {}
        for event in self.source.events:
            payload = event.get("payload")
            if event_type(event) != "context.evaluated" or not isinstance(payload, dict):
                continue
            for item in payload.get("routing") or ():
                if isinstance(item, dict) and isinstance(item.get("injectionId"), str):
                    tools = [t for t in item.get("tools") or () if isinstance(t, str)]
                    owned.setdefault(item["injectionId"], [])
                    owned[item["injectionId"]] += [t for t in tools if t not in owned[item["injectionId"]]]
        offered = {
            text(tool.get("name"))
            for tool in obj(iteration.llm_start).get("tools") or ()
            if isinstance(tool, dict)
        }
        withheld: list[str] = []
        for id_ in parked:
            withheld += [t for t in owned.get(id_, []) if t not in offered and t not in withheld]
        return withheld

    def _llm_call(self, iteration: _Iteration, ts: datetime, turn: int) -> LlmCallEvent:
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
        route = iteration.route if iteration.route in ("tool-calls", "final") else None
        if iteration.route is not None and route is None:
            self.out.warnings.append(f"{where}: route {iteration.route!r} is not one fpdebug builds")
        duration = obj(end).get("durationMs")
        return LlmCallEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            turn=turn,
            iteration=iteration.number,
            call_index=self.call_index,
            provider=text(start.get("provider")) or "unknown",
            model=text(start.get("model")) or "unknown",
            request=request,
            response=reply(end, requested_calls(iteration.history, iteration.tool_starts))
            if end is not None
            else None,
            latency_ms=float(duration) if isinstance(duration, int | float) else 0.0,
            route=route,  # type: ignore[arg-type]
        )

    def _tool_results(self, iteration: _Iteration, turn: int) -> None:
        for start in iteration.tool_starts:
            call_id = text(start.get("toolCallId"))
            end = iteration.tool_ends.get(call_id)
            ts = iteration.tool_ts.get(call_id) or iteration.ts or self._first_ts()
            if end is None:
                self.out.warnings.append(
                    f"tool call {call_id}: the recording has no tool_end; no result is shown"
                )
                continue
            failed = end.get("error") is True
            result = end.get("result")
            result_text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            status = end.get("status")
            effects = [e for e in iteration.effects if e.get("toolCallId") == call_id]
            args = start.get("args")
            duration = end.get("durationMs")
            self._emit(
                ToolResultEvent(
                    seq=1,
                    ts=ts,
                    run_id=self.run_id,
                    turn=turn,
                    iteration=iteration.number,
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
                self._emit(
                    LeaseGrantEvent(
                        seq=1, ts=ts, run_id=self.run_id, turn=turn, iteration=iteration.number, lease=lease
                    )
                )
        prune = self.leases.grant_prune_of(iteration.number)
        if prune is not None:
            self._emit(
                LeasePruneEvent(
                    seq=1,
                    ts=iteration.ts or self._first_ts(),
                    run_id=self.run_id,
                    turn=turn,
                    iteration=iteration.number,
                    site="tool-calls",
                    tenant=prune.tenant,
                    pruned=list(prune.pruned),
                    survivors=list(prune.survivors),
                )
            )

    # ------------------------------------------------------------------------------------------
    # Turn and run ends

    def _turn_end(self, payload: dict[str, Any], ts: datetime) -> None:
        turn = self.turn or 1
        input_tokens, output_tokens = (
            integer(payload.get("totalInputTokens")),
            integer(payload.get("totalOutputTokens")),
        )
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.turns_ended += 1
        count = payload.get("iterationCount")
        self._emit(
            TurnEndEvent(
                seq=1,
                ts=ts,
                run_id=self.run_id,
                turn=turn,
                final_content=text(payload.get("finalContent")),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                iteration_count=count if isinstance(count, int) else 0,
            )
        )

    def _run_end(self) -> None:
        run = self.envelope.get("run") if isinstance(self.envelope.get("run"), dict) else None
        if run is not None:
            if run.get("complete") is not True:
                self.out.warnings.append(
                    "run.complete is not true: the run's end is not recorded; no run_end"
                )
                return
        elif self.turns_ended == 0 or self.turns_ended < self.turn:
            self.out.warnings.append("a bare recording whose last turn did not end: no run_end")
            return
        ts = self._last_ts()
        self._emit(
            RunEndEvent(
                seq=1,
                ts=ts,
                run_id=self.run_id,
                status="completed",
                turns=self.turns_ended,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
            )
        )

    # ------------------------------------------------------------------------------------------
    # Helpers

    def _emit(self, event: TraceEvent) -> None:
        self.out.events.append(event.model_copy(update={"seq": len(self.out.events) + 1}))

    def _run_id(self) -> str:
        run = self.envelope.get("run")
        if isinstance(run, dict) and isinstance(run.get("runId"), str):
            return str(run["runId"])
        for event in self.source.events:
            meta = event.get("meta")
            if isinstance(meta, dict) and isinstance(meta.get("runId"), str):
                return str(meta["runId"])
        engine_run = self.source.snapshot.get("runId")
        return engine_run if isinstance(engine_run, str) else "agentfootprint-run"

    def _first_ts(self) -> datetime:
        for event in self.source.events:
            ts = event_ts(event)
            if ts is not None:
                return ts
        run = self.envelope.get("run")
        started = run.get("startedAt") if isinstance(run, dict) else None
        if isinstance(started, str):
            try:
                return datetime.fromisoformat(started.replace("Z", "+00:00"))
            except ValueError:
                pass
        return datetime(1970, 1, 1, tzinfo=UTC)

    def _last_ts(self) -> datetime:
        for event in reversed(self.source.events):
            ts = event_ts(event)
            if ts is not None:
                return ts
        return self._first_ts()

    def _next_number(self, previous: _Iteration | None) -> int:
        return previous.number + 1 if previous is not None else 1


def _guard_text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _delta(now: SlotRouting, before: SlotRouting | None) -> PassDelta:
    def one(current: list[SlotEntry], previous: list[SlotEntry]) -> SlotDelta:
        ids, old = [e.id for e in current], [e.id for e in previous]
        return SlotDelta(
            added=[i for i in ids if i not in old],
            removed=[i for i in old if i not in ids],
            kept=[i for i in ids if i in old],
        )

    base = before or SlotRouting()
    return PassDelta(
        system_prompt=one(now.system_prompt, base.system_prompt),
        messages=one(now.messages, base.messages),
        tools=one(now.tools, base.tools),
    )

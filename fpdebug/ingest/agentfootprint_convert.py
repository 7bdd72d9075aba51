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
from typing import Any, get_args

from fpdebug.engine.engagement import strength_of_move
from fpdebug.engine.evaluate import PARK_CARD_ID
from fpdebug.ingest.agentfootprint_leases import LeaseLedger, read_lease_ledger
from fpdebug.trace.schema import (
    ActiveReason,
    ContextSource,
    CursorMoveEvent,
    EdgeDecl,
    EffectJudgment,
    EngagementChange,
    EngagementEvent,
    EngagementPassFacts,
    EntryDecl,
    ErrorInfo,
    InjectionDecl,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassDelta,
    PassEvent,
    PromptSegment,
    RunEndEvent,
    RunStartEvent,
    SkillMapDecl,
    Skipped,
    SlotDelta,
    SlotEntry,
    SlotRouting,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TraceEvent,
    TriggerDecl,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    Witness,
)

__all__ = ["Conversion", "convert_recording"]

_PREFIX = "agentfootprint."
_ENGINEERED = {"rag", "skill", "memory", "instructions", "steering", "fact", "custom"}
_FLAVORS = set(get_args(ContextSource))
_SKIP_REASONS = {"predicate-threw", "unknown-trigger-kind", "unknown-fact", "parked"}
_STATUSES = {"success", "failure", "denied", "invalid", "partial", "pending", "absent"}
_ROLES = {"system", "user", "assistant", "tool"}
_STRENGTHS = {"explicit", "structural", "semantic", "lexical", "assumed"}
_NOT_RECORDED_TRIGGER = "not recorded: agentfootprint keeps no trigger definitions"


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
        self.recording = recording
        self.envelope = envelope or {}
        snapshot = recording.get("snapshot")
        self.snapshot: dict[str, Any] = snapshot if isinstance(snapshot, dict) else {}
        shared = self.snapshot.get("sharedState")
        self.shared: dict[str, Any] = shared if isinstance(shared, dict) else {}
        self.leases: LeaseLedger = read_lease_ledger(self.snapshot)
        self.out = Conversion()
        self.out.warnings.extend(self.leases.warnings)
        raw = recording.get("events")
        self.source_events: list[dict[str, Any]] = (
            [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
        )
        self.run_id = self._run_id()
        self.turn = 0
        self.call_index = 0
        self.previous_slots: SlotRouting | None = None
        self.previous_batch: list[str] = []
        self.kernel_mounted = any(_type(e).startswith("map.") for e in self.source_events)
        self.catalog: dict[str, InjectionDecl] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.turns_ended = 0
        self.last_history: list[Any] = []

    # ------------------------------------------------------------------------------------------

    def run(self) -> Conversion:
        first_ts = self._first_ts()
        self._emit(self._run_start(first_ts))
        iteration: _Iteration | None = None
        pending_maps: list[tuple[str, dict[str, Any]]] = []
        for event in self.source_events:
            kind = _type(event)
            payload = _obj(event.get("payload"))
            ts = _ts(event) or first_ts
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
                        user_message=_text(payload.get("userPrompt")),
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
    # run_start

    def _run_start(self, ts: datetime) -> RunStartEvent:
        configured = next((e for e in self.source_events if _type(e) == "agent.run_configured"), None)
        manifest = configured.get("payload") if configured is not None else None
        if not isinstance(manifest, dict):
            configuration = self.envelope.get("configuration")
            manifest = configuration.get("manifest") if isinstance(configuration, dict) else None
        manifest = manifest if isinstance(manifest, dict) else {}
        llm = _obj(manifest.get("llm"))
        graph_event = next((e for e in self.source_events if _type(e) == "skill.graph_declared"), None)
        graph = graph_event.get("payload") if graph_event is not None else None
        options: dict[str, Any] = {
            key: value for key, value in manifest.items() if key not in ("agentId", "llm")
        }
        options["source"] = "agentfootprint"
        stages = _stage_names(self.recording.get("structure"))
        if stages:
            options["stages"] = stages
        max_iterations = self.shared.get("maxIterations")
        if not isinstance(max_iterations, int):
            max_iterations = 0
            self.out.warnings.append("the recording does not hold maxIterations; run_start says 0")
        self._build_catalog(graph)
        return RunStartEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            agent_name=_text(manifest.get("agentId")) or "agent",
            provider=_text(llm.get("provider")) or "unknown",
            model=_text(llm.get("model")) or "unknown",
            max_iterations=max_iterations,
            system_prompt=self._base_prompt(),
            injections=list(self.catalog.values()),
            tools=self._agent_tools(),
            skill_map=self._skill_map(graph),
        )

    def _base_prompt(self) -> str:
        for event in self.source_events:
            payload = event.get("payload")
            if (
                _type(event) == "context.injected"
                and isinstance(payload, dict)
                and payload.get("source") == "base"
            ):
                return _text(payload.get("rawContent"))
        return ""

    def _agent_tools(self) -> list[ToolSchema]:
        first = next((e.get("payload") for e in self.source_events if _type(e) == "stream.llm_start"), None)
        tools = first.get("tools") if isinstance(first, dict) else None
        if not isinstance(tools, list):
            return []
        return [self._tool_schema(tool, None) for tool in tools if isinstance(tool, dict)]

    def _tool_schema(self, tool: dict[str, Any], injection_id: str | None) -> ToolSchema:
        name = _text(tool.get("name"))
        return ToolSchema(
            name=name,
            description=_text(tool.get("description")),
            parameters=self._parameters(name),
            injection_id=injection_id,
        )

    def _parameters(self, name: str) -> dict[str, Any]:
        # The snapshot keeps each tool's input schema (the scope's dynamicToolSchemas).
        for schema in self.shared.get("dynamicToolSchemas") or ():
            if (
                isinstance(schema, dict)
                and schema.get("name") == name
                and isinstance(schema.get("inputSchema"), dict)
            ):
                return dict(schema["inputSchema"])
        return {}

    def _skill_map(self, graph: object) -> SkillMapDecl | None:
        if not isinstance(graph, dict):
            return None
        nodes = [_text(node.get("id")) for node in graph.get("nodes") or () if isinstance(node, dict)]
        entries: list[EntryDecl] = []
        edges: list[EdgeDecl] = []
        keyword_entry = self._entry_keyword()
        for edge in graph.get("edges") or ():
            if not isinstance(edge, dict):
                continue
            kind, target, origin = edge.get("kind"), _text(edge.get("to")), edge.get("from")
            label = edge.get("label") if isinstance(edge.get("label"), str) else None
            if kind == "entry" or origin is None:
                if keyword_entry is not None and keyword_entry[0] == target:
                    entries.append(EntryDecl(skill_id=target, kind="keywords", keywords=[keyword_entry[1]]))
                else:
                    description = label or "entry condition not recorded by agentfootprint"
                    entries.append(EntryDecl(skill_id=target, kind="when", description=description))
                continue
            edges.append(
                EdgeDecl(
                    from_skill=_text(origin),
                    to_skill=target,
                    when=label or (f"{kind} (condition not recorded)" if kind != "model" else None),
                    deterministic=kind != "model",
                )
            )
        return SkillMapDecl(nodes=nodes, entries=entries, edges=edges)

    def _entry_keyword(self) -> tuple[str, str] | None:
        for event in self.source_events:
            payload = event.get("payload")
            if _type(event) != "context.evaluated" or not isinstance(payload, dict):
                continue
            move = payload.get("cursorMove")
            if isinstance(move, dict) and move.get("by") == "entry" and isinstance(move.get("witness"), dict):
                keyword = move["witness"].get("keyword")
                if isinstance(keyword, str) and isinstance(move.get("to"), str):
                    return move["to"], keyword
        return None

    def _build_catalog(self, graph: object) -> None:
        """Every injection the recording shows, with what it says of each (the catalog is not recorded)."""
        skills: dict[str, str | None] = {}
        if isinstance(graph, dict):
            for node in graph.get("nodes") or ():
                if isinstance(node, dict) and isinstance(node.get("id"), str):
                    skills[node["id"]] = (
                        node.get("description") if isinstance(node.get("description"), str) else None
                    )
        seen: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for event in self.source_events:
            payload = event.get("payload")
            if not isinstance(payload, dict):
                continue
            kind = _type(event)
            if kind == "context.evaluated":
                for item in payload.get("skillCatalog") or ():
                    if isinstance(item, dict) and isinstance(item.get("id"), str):
                        skills.setdefault(item["id"], item.get("description"))
                for id_ in payload.get("activeIds") or ():
                    if isinstance(id_, str) and id_ not in order:
                        order.append(id_)
                for skipped in payload.get("skippedDetails") or ():
                    if (
                        isinstance(skipped, dict)
                        and isinstance(skipped.get("id"), str)
                        and skipped["id"] not in order
                    ):
                        order.append(skipped["id"])
            elif kind == "context.injected":
                source, id_ = payload.get("source"), payload.get("sourceId")
                if source in _ENGINEERED and isinstance(id_, str) and id_ != PARK_CARD_ID:
                    info = seen.setdefault(id_, {"flavor": source, "slots": [], "prompt": None, "tools": []})
                    slot = payload.get("slot")
                    if slot in ("system-prompt", "messages", "tools") and slot not in info["slots"]:
                        info["slots"].append(slot)
                    if slot == "system-prompt" and info["prompt"] is None:
                        info["prompt"] = payload.get("rawContent")
                    if slot == "tools":
                        name = _text(payload.get("rawContent")).split(":", 1)[0].strip()
                        if name and name not in info["tools"]:
                            info["tools"].append(name)
                    if info.get("description") is None and source != "skill":
                        reason = payload.get("reason")
                        if isinstance(reason, str) and reason != f"{source} '{id_}' active":
                            info["description"] = reason
                    if id_ not in order:
                        order.append(id_)
        for id_ in skills:
            if id_ not in order:
                order.append(id_)
        slot_order = ("system-prompt", "messages", "tools")
        for id_ in order:
            info = seen.get(id_, {})
            flavor = info.get("flavor") or ("skill" if id_ in skills else "custom")
            if flavor == "skill":
                trigger = TriggerDecl(
                    kind="llm-activated", via_tool_name="read_skill", graph_node=id_ in skills
                )
                description = skills.get(id_)
            elif flavor == "steering":
                trigger = TriggerDecl(kind="always")  # a steering injection is always on, by definition
                description = info.get("description")
            else:
                trigger = TriggerDecl(kind="rule", description=_NOT_RECORDED_TRIGGER)
                description = info.get("description")
            slots = [slot for slot in slot_order if slot in info.get("slots", [])] or ["system-prompt"]
            self.catalog[id_] = InjectionDecl(
                id=id_,
                flavor=flavor if flavor in _FLAVORS else "custom",  # type: ignore[arg-type]
                description=description,
                trigger=trigger,
                slots=slots,  # type: ignore[arg-type]
                system_prompt=info.get("prompt") if isinstance(info.get("prompt"), str) else None,
                tool_names=info.get("tools", []),
            )

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
                _text(item.get("rawContent"))
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
        self.previous_batch = [_text(start.get("toolName")) for start in iteration.tool_starts]
        if iteration.history is not None:
            self.last_history = iteration.history

    def _cursor_move(self, move: dict[str, Any], number: int, ts: datetime, turn: int) -> CursorMoveEvent:
        by = _text(move.get("by"))
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
                    text=" ".join(_text(witness.get("text")).split())[:80],
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
            if slot not in rows or source not in _ENGINEERED or not isinstance(id_, str):
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
                    map_id=_text(payload.get("mapId")) or "skill-map",
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
                witness=_text(witness.get("text")) if isinstance(witness, dict) else None,
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
        for event in self.source_events:
            payload = event.get("payload")
            if _type(event) != "context.evaluated" or not isinstance(payload, dict):
                continue
            for item in payload.get("routing") or ():
                if isinstance(item, dict) and isinstance(item.get("injectionId"), str):
                    tools = [t for t in item.get("tools") or () if isinstance(t, str)]
                    owned.setdefault(item["injectionId"], [])
                    owned[item["injectionId"]] += [t for t in tools if t not in owned[item["injectionId"]]]
        offered = {
            _text(tool.get("name"))
            for tool in _obj(iteration.llm_start).get("tools") or ()
            if isinstance(tool, dict)
        }
        withheld: list[str] = []
        for id_ in parked:
            withheld += [t for t in owned.get(id_, []) if t not in offered and t not in withheld]
        return withheld

    def _llm_call(self, iteration: _Iteration, ts: datetime, turn: int) -> LlmCallEvent:
        start = iteration.llm_start or {}
        end = iteration.llm_end
        self.call_index += 1
        segments = [
            PromptSegment(
                source=_text(item.get("source")) or "base",
                injection_id=item.get("sourceId") if isinstance(item.get("sourceId"), str) else None,
                text=_text(item.get("rawContent")),
            )
            for item in iteration.injected
            if item.get("slot") == "system-prompt"
        ]
        recorded = start.get("systemPromptText")
        if isinstance(recorded, str) and "\n\n".join(s.text for s in segments) != recorded:
            self.out.warnings.append(
                f"call {self.call_index}: the system prompt's segments do not join to the recorded "
                "systemPromptText; the recorded text is kept as one segment"
            )
            segments = [PromptSegment(source="base", text=recorded)]
        request = LlmRequest(
            system_prompt=segments,
            messages=self._messages(iteration),
            tools=self._request_tools(iteration, start),
        )
        response: LlmResponse | None = None
        if end is not None:
            usage = _obj(end.get("usage"))
            response = LlmResponse(
                content=_text(end.get("content")),
                tool_calls=self._requested_calls(iteration),
                stop_reason=end.get("stopReason") if isinstance(end.get("stopReason"), str) else None,
                usage=Usage(
                    input_tokens=_int(usage.get("input")),
                    output_tokens=_int(usage.get("output")),
                    cache_read_tokens=usage.get("cacheRead")
                    if isinstance(usage.get("cacheRead"), int)
                    else None,
                    cache_write_tokens=usage.get("cacheWrite")
                    if isinstance(usage.get("cacheWrite"), int)
                    else None,
                ),
            )
        else:
            self.out.warnings.append(
                f"call {self.call_index}: the recording has no llm_end; no reply is shown"
            )
        route = iteration.route if iteration.route in ("tool-calls", "final") else None
        if iteration.route is not None and route is None:
            self.out.warnings.append(
                f"call {self.call_index}: route {iteration.route!r} is not one fpdebug builds"
            )
        duration = end.get("durationMs") if end is not None else None
        return LlmCallEvent(
            seq=1,
            ts=ts,
            run_id=self.run_id,
            turn=turn,
            iteration=iteration.number,
            call_index=self.call_index,
            provider=_text(start.get("provider")) or "unknown",
            model=_text(start.get("model")) or "unknown",
            request=request,
            response=response,
            latency_ms=float(duration) if isinstance(duration, int | float) else 0.0,
            route=route,  # type: ignore[arg-type]
        )

    def _messages(self, iteration: _Iteration) -> list[Message]:
        # The messages slot's injected pieces are the exact messages sent; the assistant turns' tool
        # calls are not on them but in the conversation history, by position.
        history = self._history_before(iteration)
        messages: list[Message] = []
        for item in iteration.injected:
            if item.get("slot") != "messages":
                continue
            role = item.get("asRole")
            source = item.get("source")
            if role not in _ROLES:
                role = {"user": "user", "assistant": "assistant", "tool-result": "tool"}.get(
                    str(source), "user"
                )
            position = item.get("position")
            recorded = history[position] if isinstance(position, int) and 0 <= position < len(history) else {}
            source_id = item.get("sourceId") if isinstance(item.get("sourceId"), str) else None
            calls = (
                recorded.get("toolCalls")
                if role == "assistant" and recorded.get("role") == "assistant"
                else None
            )
            messages.append(
                Message(
                    role=role,  # type: ignore[arg-type]  # checked against _ROLES above
                    content=_text(item.get("rawContent")),
                    tool_calls=[c for c in map(_tool_call, calls) if c is not None]
                    if isinstance(calls, list)
                    else None,
                    tool_call_id=source_id if source == "tool-result" else None,
                    tool_name=_text(recorded.get("toolName")) or None if role == "tool" else None,
                    injection_id=source_id if source in _ENGINEERED else None,
                )
            )
        return messages

    def _history_before(self, iteration: _Iteration) -> list[dict[str, Any]]:
        # This iteration's history holds every earlier message at the same position; the final
        # iteration records none, so the previous one's serves.
        history = iteration.history if iteration.history is not None else self.last_history
        return [m if isinstance(m, dict) else {} for m in history]

    def _request_tools(self, iteration: _Iteration, start: dict[str, Any]) -> list[ToolSchema]:
        owners: dict[str, str] = {}
        for item in iteration.injected:
            if (
                item.get("slot") == "tools"
                and item.get("source") in _ENGINEERED
                and isinstance(item.get("sourceId"), str)
            ):
                name = _text(item.get("rawContent")).split(":", 1)[0].strip()
                owners.setdefault(name, item["sourceId"])
        tools = start.get("tools")
        if not isinstance(tools, list):
            return []
        return [
            self._tool_schema(tool, owners.get(_text(tool.get("name"))))
            for tool in tools
            if isinstance(tool, dict)
        ]

    def _requested_calls(self, iteration: _Iteration) -> list[ToolCallRecord]:
        # The calls the model asked for: the last assistant message of this iteration's history holds
        # them as sent; without a history, the tool starts (same ids, names, arguments).
        for message in reversed(iteration.history or ()):
            if isinstance(message, dict) and message.get("role") == "assistant":
                calls = message.get("toolCalls")
                if isinstance(calls, list):
                    return [c for c in map(_tool_call, calls) if c is not None]
                break
        found = [
            _tool_call({"id": s.get("toolCallId"), "name": s.get("toolName"), "args": s.get("args")})
            for s in iteration.tool_starts
        ]
        return [c for c in found if c is not None]

    def _tool_results(self, iteration: _Iteration, turn: int) -> None:
        for start in iteration.tool_starts:
            call_id = _text(start.get("toolCallId"))
            end = iteration.tool_ends.get(call_id)
            ts = iteration.tool_ts.get(call_id) or iteration.ts or self._first_ts()
            if end is None:
                self.out.warnings.append(
                    f"tool call {call_id}: the recording has no tool_end; no result is shown"
                )
                continue
            failed = end.get("error") is True
            result = end.get("result")
            text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
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
                    tool_name=_text(start.get("toolName")),
                    args=args if isinstance(args, dict) else {},
                    result=text,
                    status="failure" if failed else (status if status in _STATUSES else None),
                    effects=[j for j in map(_judgment, effects) if j is not None],
                    error=ErrorInfo(type="ToolError", message=text) if failed else None,
                    duration_ms=float(duration) if isinstance(duration, int | float) else 0.0,
                )
            )
            for effect in effects:
                if effect.get("kind") != "require-instruction" or effect.get("outcome") != "accepted":
                    continue
                lease = self.leases.grant_for(_text(effect.get("instructionId")), call_id)
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
            _int(payload.get("totalInputTokens")),
            _int(payload.get("totalOutputTokens")),
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
                final_content=_text(payload.get("finalContent")),
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
        for event in self.source_events:
            meta = event.get("meta")
            if isinstance(meta, dict) and isinstance(meta.get("runId"), str):
                return str(meta["runId"])
        engine_run = self.snapshot.get("runId")
        return engine_run if isinstance(engine_run, str) else "agentfootprint-run"

    def _first_ts(self) -> datetime:
        for event in self.source_events:
            ts = _ts(event)
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
        for event in reversed(self.source_events):
            ts = _ts(event)
            if ts is not None:
                return ts
        return self._first_ts()

    def _next_number(self, previous: _Iteration | None) -> int:
        return previous.number + 1 if previous is not None else 1


def _type(event: dict[str, Any]) -> str:
    kind = event.get("type")
    return kind[len(_PREFIX) :] if isinstance(kind, str) and kind.startswith(_PREFIX) else str(kind)


def _ts(event: dict[str, Any]) -> datetime | None:
    meta = event.get("meta")
    wall = meta.get("wallClockMs") if isinstance(meta, dict) else None
    if isinstance(wall, int | float) and not isinstance(wall, bool):
        try:
            return datetime.fromtimestamp(wall / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _guard_text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _tool_call(call: object) -> ToolCallRecord | None:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    args = call.get("args")
    raw: str | None = None
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        raw, args = (None, parsed) if isinstance(parsed, dict) else (args, {})
    return ToolCallRecord(
        id=_text(call.get("id")), name=call["name"], args=args if isinstance(args, dict) else {}, raw_args=raw
    )


def _judgment(effect: dict[str, Any]) -> EffectJudgment | None:
    kind, outcome = effect.get("kind"), effect.get("outcome")
    if kind not in ("propose-transition", "require-instruction") or outcome not in (
        "accepted",
        "refused",
        "superseded",
    ):
        return None

    def text(key: str) -> str | None:
        value = effect.get(key)
        return value if isinstance(value, str) else None

    superseded = effect.get("supersededBy")
    return EffectJudgment(
        kind=kind,
        outcome=outcome,
        target_skill_id=text("targetSkillId"),
        reason=text("reason"),
        instruction_id=text("instructionId"),
        delivery_lease=text("deliveryLease"),
        refusal_reason=text("refusalReason"),
        superseded_by="earlier-proposal" if superseded == "earlier-proposal" else None,
    )


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


def _stage_names(structure: object, limit: int = 200) -> list[str]:
    """The flowchart's stage names in chain order (subflows and forks included), as declared."""
    names: list[str] = []
    stack: list[object] = [structure]
    seen: set[int] = set()
    while stack and len(names) < limit:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        name = node.get("name")
        if isinstance(name, str):
            names.append(name)
        following: list[object] = []
        sub = node.get("subflowStructure")
        if sub is not None:
            following.append(sub)
        children = node.get("children")
        if isinstance(children, list):
            following.extend(children)
        if node.get("next") is not None:
            following.append(node["next"])
        stack.extend(reversed(following))
    return names

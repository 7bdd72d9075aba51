"""Hand-built trace events for the trace tests: one of every kind, with nested sub-records filled in."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from fpdebug.trace.schema import (
    SCHEMA_VERSION,
    ActiveReason,
    AnswerAssessmentRow,
    ArgumentRow,
    AskAnswerEvent,
    AskRow,
    AssumedValue,
    BasisRow,
    CompactEvent,
    ConflictParty,
    CursorMoveEvent,
    EdgeDecl,
    EffectJudgment,
    EngagementChange,
    EngagementEvent,
    EngagementPassFacts,
    EntryDecl,
    ErrorInfo,
    EvidenceItem,
    FindingEvent,
    GuardDecl,
    HonestyArms,
    InjectionDecl,
    LeaseGrantEvent,
    LeasePruneEvent,
    LeaseRecord,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    MalformedEffect,
    MapEngagementRecord,
    MapEvidence,
    MapsPlanDecl,
    MemoryWriteEvent,
    Message,
    MountedMapDecl,
    OutputRetryEvent,
    PassDelta,
    PassEvent,
    PromptSegment,
    PrunedLease,
    RecalledChunk,
    RecallEvent,
    RerouteSupersededEvent,
    ResultRow,
    RouteConflict,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillGate,
    SkillMapDecl,
    SkillRejectedEvent,
    Skipped,
    SlotDelta,
    SlotEntry,
    SlotRouting,
    StatedValue,
    StepsUnfinishedEvent,
    StoppedEarly,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TraceEvent,
    TriggerDecl,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    Witness,
    WrapUpEvent,
)
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0


def every_kind(t0: datetime, *, run_id: str = "run-1", first_seq: int = 1) -> list[TraceEvent]:
    """One valid event of every kind, seq dense from ``first_seq``, nested sub-records populated."""
    seq = iter(range(first_seq, first_seq + 100))
    ts = iter(t0 + timedelta(milliseconds=k) for k in range(100))

    def env(*, turn: int | None = 1, iteration: int | None = 1) -> dict[str, object]:
        return {"seq": next(seq), "ts": next(ts), "run_id": run_id, "turn": turn, "iteration": iteration}

    lease = LeaseRecord(
        instruction_id="wire-format",
        delivery_lease="next-call",
        skill_id="billing",
        tool_name="fetch",
        tool_call_id="call-1",
        iteration=1,
    )
    return [
        RunStartEvent(
            **env(turn=None, iteration=None),
            agent_name="support",
            provider="scripted",
            model="m-1",
            max_iterations=6,
            system_prompt="You are helpful.",
            injections=[
                InjectionDecl(
                    id="tone",
                    flavor="steering",
                    trigger=TriggerDecl(kind="always"),
                    slots=["system-prompt"],
                    system_prompt="Be brief.",
                ),
                InjectionDecl(
                    id="wire-format",
                    flavor="instructions",
                    description="wire rules",
                    trigger=TriggerDecl(kind="on-tool-return", tool_name="fetch"),
                    slots=["system-prompt", "messages"],
                    messages=[Message(role="user", content="use ISO dates")],
                ),
                InjectionDecl(
                    id="billing",
                    flavor="skill",
                    trigger=TriggerDecl(kind="llm-activated", via_tool_name="read_skill", graph_node=True),
                    slots=["system-prompt", "tools"],
                    tool_names=["refund"],
                    surface_mode="auto",
                    system_prompt="Handle {{action}}",
                    templated=True,
                ),
            ],
            tools=[ToolSchema(name="fetch", description="get a page", parameters={"type": "object"})],
            skill_map=SkillMapDecl(
                nodes=["triage", "billing"],
                entries=[EntryDecl(skill_id="triage", kind="keywords", keywords=["help"])],
                edges=[
                    EdgeDecl(
                        from_skill="triage",
                        to_skill="billing",
                        on_tool_return="fetch",
                        on_tool_status=["success"],
                        guards=[GuardDecl(field="amount", op="gt", value=10)],
                    )
                ],
                open_skills=["faq"],
            ),
            maps=MapsPlanDecl(
                maps=[
                    MountedMapDecl(id="skill-map", member_ids=["triage", "billing"], tool_names=["refund"])
                ],
                renewal_grace=3,
            ),
            honesty=HonestyArms(inputs=True, answer=True),
            options={"temperature": 0.2, "scenario": "demo"},
        ),
        TurnStartEvent(**env(iteration=None), user_message="help me with a refund ünïcödé \u202e"),
        PassEvent(
            **env(),
            active_ids=["tone", "triage"],
            reasons=[ActiveReason(id="tone", via="always"), ActiveReason(id="triage", via="cursor")],
            skipped=[Skipped(id="billing", reason="parked", error="parked by the kernel")],
            evaluated_total=3,
            trigger_kind_counts={"always": 1, "llm-activated": 1},
            lease_active_ids=[],
            parked_ids=["billing"],
            served_ids=["tone", "triage"],
            superseded_ids=["x"],
            by_slot=SlotRouting(
                system_prompt=[SlotEntry(id="tone", source="steering", reason="steering 'tone' active")]
            ),
            delta=PassDelta(system_prompt=SlotDelta(added=["tone"], kept=["triage"])),
        ),
        CursorMoveEvent(
            **env(),
            from_skill=None,
            to_skill="triage",
            by="entry",
            strength="lexical",
            witness=Witness(text="help me", keyword="help"),
            reachable=["billing"],
            conflict=RouteConflict(
                winner=ConflictParty(tool_call_id="c1", tool_name="fetch", target="billing"),
                losers=[ConflictParty(tool_name="scan", target="triage")],
            ),
            guard="amount > 10",
            guards_closed=["triage->faq"],
        ),
        LeaseGrantEvent(**env(), lease=lease),
        LeasePruneEvent(
            **env(iteration=2),
            site="evaluate",
            tenant="billing",
            pruned=[PrunedLease(**lease.model_dump(), reason="spent")],
            survivors=[],
        ),
        EngagementEvent(
            **env(),
            pass_facts=EngagementPassFacts(
                current_node="triage",
                move_by="entry",
                witness="help",
                tool_names=["fetch"],
                accepted_skill_picks=["billing"],
                served_last_pass=["tone"],
            ),
            evidence=[
                MapEvidence(
                    map_id="skill-map",
                    strongest="lexical",
                    items=[EvidenceItem(kind="cursor-moved", by="entry", strength="lexical")],
                )
            ],
            changes=[
                EngagementChange(
                    kind="engaged", map_id="skill-map", iteration=1, by="lexical", witness="help"
                )
            ],
            records=[
                MapEngagementRecord(
                    map_id="skill-map",
                    standing="engaged",
                    by="lexical",
                    since=1,
                    founded_by="lexical",
                    founded_at=1,
                    founded_on="triage",
                    at="triage",
                    at_by="lexical",
                    at_since=1,
                    idle=0,
                    witness="help",
                )
            ],
            parked_injection_ids=[],
            parked_tool_names=[],
            park_card=None,
        ),
        LlmCallEvent(
            **env(),
            call_index=1,
            provider="scripted",
            model="m-1",
            request=LlmRequest(
                system_prompt=[
                    PromptSegment(source="base", text="You are helpful."),
                    PromptSegment(source="steering", injection_id="tone", text="Be brief."),
                ],
                messages=[
                    Message(role="user", content="help"),
                    Message(role="assistant", content="", tool_calls=[ToolCallRecord(id="c0", name="fetch")]),
                    Message(role="tool", content="page", tool_call_id="c0", tool_name="fetch"),
                ],
                tools=[ToolSchema(name="fetch", injection_id=None)],
                temperature=0.0,
                max_tokens=512,
                seed=7,
            ),
            response=LlmResponse(
                content="calling",
                stop_reason="tool_use",
                tool_calls=[ToolCallRecord(id="call-1", name="fetch", args={"url": "x"}, raw_args=None)],
                usage=Usage(input_tokens=120, output_tokens=30, cache_read_tokens=5),
            ),
            latency_ms=12.5,
            route="tool-calls",
        ),
        ToolResultEvent(
            **env(),
            tool_call_id="call-1",
            tool_name="fetch",
            args={"url": "x", "n": [1, 2]},
            result="a page\nwith\ttabs",
            status="success",
            effects=[
                EffectJudgment(
                    kind="require-instruction",
                    outcome="accepted",
                    instruction_id="wire-format",
                    delivery_lease="next-call",
                )
            ],
            malformed=[MalformedEffect(kind="propose-transition", refusal_reason="carries no reason")],
            skill_gate=SkillGate(skill_id="billing", outcome="hop"),
            error=ErrorInfo(type="TimeoutError", message="slow", status=None),
            duration_ms=3.0,
        ),
        FindingEvent(
            **env(),
            layer="answer",
            rows=[
                ArgumentRow(tool_call_id="call-1", tool_name="fetch", path="$.url", value="x", source="user"),
                BasisRow(tool_call_id="call-1", tool_name="fetch", from_entries=["user"]),
                AskRow(
                    tool_call_id="call-1", tool_name="fetch", path="$.url", question="Which url?", guessed="x"
                ),
                ResultRow(
                    batch_iteration=1,
                    tool_call_id="call-1",
                    tool_name="fetch",
                    status="success",
                    values=["42"],
                ),
                AnswerAssessmentRow(
                    reads=["findings"],
                    values=[
                        StatedValue(text="42", kind="number", supported=True, supported_by=["tool:call-1"])
                    ],
                    assumed=[
                        AssumedValue(tool_call_id="call-1", path="$.url", original="x", rewritten_to="y")
                    ],
                    stopped_early=StoppedEarly(
                        reason="max-iterations", iteration=6, pending_tool_calls=1, answer_was_empty=False
                    ),
                    standing_line="supported",
                ),
            ],
        ),
        SkillRejectedEvent(
            **env(),
            requested_id="faq",
            current_skill_id="triage",
            allowed=["billing"],
            tool_call_id="call-2",
            posture="strict",
        ),
        RouteConflictEvent(
            **env(),
            from_skill_id="triage",
            winner=ConflictParty(tool_call_id="c1", tool_name="fetch", target="billing"),
            losers=[ConflictParty(tool_call_id="c2", tool_name="scan", target="faq")],
            source="tool-proposal",
        ),
        RerouteSupersededEvent(
            **env(), volunteered_id="faq", won_id="billing", from_skill_id="triage", source="tool-proposal"
        ),
        StepsUnfinishedEvent(
            **env(),
            skill_id="refund",
            step=2,
            total=3,
            tool="issue_refund",
            skipped=[1],
            nudge="The 'refund' procedure is not finished.",
        ),
        WrapUpEvent(**env(), pending_tool_calls=2, answer_was_empty=True, instruction="Answer now."),
        CompactEvent(
            **env(), dropped=2, kept=5, dropped_at=[1, 2], limit="max_messages=5", size_before=7, size_after=5
        ),
        AskAnswerEvent(
            **env(), tool_call_id="c1", tool_name="get_balance", path="$.account_id", answer="ACC-7"
        ),
        OutputRetryEvent(
            **env(),
            error="priority: Input should be a valid integer",
            attempt=1,
            max_retries=2,
            reask="Your answer does not match the required output format.",
        ),
        RecallEvent(
            **env(),
            recall_id="customer-memory",
            flavor="memory",
            query="Refund ORD-7",
            top_k=3,
            threshold=0.1,
            chunks=[RecalledChunk(entry_id="mem-1", text="Dana is a VIP.", score=0.4, rank=1)],
            below_threshold=1,
            excluded=["mem-2"],
        ),
        MemoryWriteEvent(**env(), recall_id="customer-memory", entry_id="turn-1", text="User asked: hi"),
        TurnEndEvent(
            **env(iteration=None),
            final_content="Refunded.",
            input_tokens=120,
            output_tokens=30,
            iteration_count=1,
            stopped_early=StoppedEarly(
                reason="cost-budget", iteration=1, pending_tool_calls=0, answer_was_empty=True
            ),
        ),
        RunEndEvent(
            **env(turn=None, iteration=None),
            status="failed",
            error=ErrorInfo(type="ProviderError", message="HTTP 500", status=500),
            turns=1,
            input_tokens=120,
            output_tokens=30,
        ),
    ]


class Script:
    """Builds a dense event list: ``add(Kind, iteration=…, **fields)`` fills the envelope."""

    def __init__(self, run_id: str = "r1") -> None:
        self.events: list[TraceEvent] = []
        self.run_id = run_id
        self.turn: int | None = None

    def add(self, cls: type[Any], *, iteration: int | None = None, **fields: Any) -> int:
        seq = len(self.events) + 1
        fields.setdefault("turn", self.turn)
        self.events.append(
            cls(
                seq=seq,
                ts=T0 + timedelta(milliseconds=seq),
                run_id=self.run_id,
                iteration=iteration,
                **fields,
            )
        )
        return seq  # == the line number in a one-run file

    def write(self, path: Path, *, schema_version: int = SCHEMA_VERSION) -> Path:
        with TraceWriter.create(path, durability="none", schema_version=schema_version) as writer:
            writer.append_many(self.events)
        return path


L1 = LeaseRecord(
    instruction_id="wire-format",
    delivery_lease="next-call",
    skill_id="triage",
    tool_name="fetch",
    tool_call_id="c1",
    iteration=1,
)
L2 = LeaseRecord(
    instruction_id="style",
    delivery_lease="until-skill-exit",
    skill_id="triage",
    tool_name="fetch",
    tool_call_id="c1",
    iteration=1,
)
L3 = LeaseRecord(
    instruction_id="style",
    delivery_lease="until-skill-exit",
    skill_id="billing",
    tool_name="refund",
    tool_call_id="c3",
    iteration=3,
)


def llm(script: Script, iteration: int, *, route: str, tokens: int) -> int:
    return script.add(
        LlmCallEvent,
        iteration=iteration,
        call_index=iteration,
        provider="scripted",
        model="m",
        request=LlmRequest(
            system_prompt=[PromptSegment(source="base", text="sys")],
            messages=[Message(role="user", content="q")],
        ),
        response=LlmResponse(content="a", usage=Usage(input_tokens=tokens, output_tokens=tokens // 10)),
        route=route,
    )


def engagement(
    script: Script,
    iteration: int,
    *,
    standing: str,
    by: str,
    idle: int,
    change: EngagementChange | None = None,
    at: str = "triage",
) -> int:
    return script.add(
        EngagementEvent,
        iteration=iteration,
        pass_facts=EngagementPassFacts(current_node=at),
        changes=[change] if change else [],
        records=[
            MapEngagementRecord(
                map_id="skill-map",
                standing=standing,
                by=by,
                since=1,
                founded_by="lexical",
                founded_at=1,
                at=at,
                idle=idle,
            )
        ],
    )


def support_run() -> tuple[Script, dict[str, int]]:
    """Four iterations: leases granted, served, spent and tenure-ended; a park and a re-engagement;
    a route conflict, a rejected skill and a superseded reroute."""
    s, at = Script(), {}
    at["run_start"] = s.add(RunStartEvent, turn=None, provider="scripted", model="m-1", max_iterations=6)
    s.turn = 1
    at["turn_start"] = s.add(TurnStartEvent, user_message="refund please")
    # iteration 1: entry onto triage, founding; the fetch batch grants two leases
    at["pass1"] = s.add(PassEvent, iteration=1, active_ids=["triage"], evaluated_total=3)
    s.add(CursorMoveEvent, iteration=1, from_skill=None, to_skill="triage", by="entry", strength="lexical")
    engagement(
        s,
        1,
        standing="engaged",
        by="lexical",
        idle=0,
        change=EngagementChange(kind="engaged", map_id="skill-map", iteration=1, by="lexical"),
    )
    llm(s, 1, route="tool-calls", tokens=100)
    s.add(ToolResultEvent, iteration=1, tool_call_id="c1", tool_name="fetch", result="page")
    at["grant1"] = s.add(LeaseGrantEvent, iteration=1, lease=L1)
    at["grant2"] = s.add(LeaseGrantEvent, iteration=1, lease=L2)
    # iteration 2: both served; the next-call lease is spent by the same sweep; two edges conflict
    at["pass2"] = s.add(
        PassEvent,
        iteration=2,
        active_ids=["triage", "wire-format", "style"],
        evaluated_total=3,
        lease_active_ids=["wire-format", "style"],
    )
    at["prune_spent"] = s.add(
        LeasePruneEvent,
        iteration=2,
        site="evaluate",
        tenant="triage",
        pruned=[PrunedLease(**L1.model_dump(), reason="spent")],
        survivors=[L2],
    )
    s.add(CursorMoveEvent, iteration=2, from_skill="triage", to_skill="triage", by="stay", strength="assumed")
    engagement(s, 2, standing="engaged", by="lexical", idle=1)
    llm(s, 2, route="tool-calls", tokens=120)
    s.add(ToolResultEvent, iteration=2, tool_call_id="c2a", tool_name="scan", result="x")
    s.add(ToolResultEvent, iteration=2, tool_call_id="c2b", tool_name="lookup", result="y")
    at["conflict"] = s.add(
        RouteConflictEvent,
        iteration=2,
        from_skill_id="triage",
        winner=ConflictParty(tool_call_id="c2a", tool_name="scan", target="billing"),
        losers=[ConflictParty(tool_call_id="c2b", tool_name="lookup", target="faq")],
    )
    # iteration 3: the route moves to billing; the sweep (written BEFORE the pass here) ends the
    # triage lease's tenure; the map parks; a read_skill is rejected; refund grants a new lease
    at["prune_tenure"] = s.add(
        LeasePruneEvent,
        iteration=3,
        site="evaluate",
        tenant="billing",
        pruned=[PrunedLease(**L2.model_dump(), reason="tenure-ended")],
    )
    at["pass3"] = s.add(
        PassEvent,
        iteration=3,
        active_ids=["billing"],
        evaluated_total=3,
        lease_active_ids=[],
        parked_ids=["billing"],
    )
    s.add(
        CursorMoveEvent,
        iteration=3,
        from_skill="triage",
        to_skill="billing",
        by="route",
        strength="structural",
    )
    at["park"] = engagement(
        s,
        3,
        standing="parked",
        by="lexical",
        idle=3,
        at="billing",
        change=EngagementChange(kind="parked", map_id="skill-map", iteration=3, by="lexical", idle_calls=3),
    )
    llm(s, 3, route="tool-calls", tokens=130)
    s.add(ToolResultEvent, iteration=3, tool_call_id="c3", tool_name="refund", result="ok")
    at["rejected"] = s.add(
        SkillRejectedEvent, iteration=3, requested_id="faq", current_skill_id="billing", allowed=["triage"]
    )
    at["grant3"] = s.add(LeaseGrantEvent, iteration=3, lease=L3)
    # iteration 4: re-engaged by an explicit pick; the billing lease serves; final answer
    at["pass4"] = s.add(
        PassEvent, iteration=4, active_ids=["billing", "style"], evaluated_total=3, lease_active_ids=["style"]
    )
    s.add(
        CursorMoveEvent, iteration=4, from_skill="billing", to_skill="billing", by="stay", strength="assumed"
    )
    at["reengage"] = engagement(
        s,
        4,
        standing="engaged",
        by="explicit",
        idle=0,
        at="billing",
        change=EngagementChange(
            kind="engaged", map_id="skill-map", iteration=4, by="explicit", reengaged=True
        ),
    )
    s.add(RerouteSupersededEvent, iteration=4, volunteered_id="faq", won_id="billing")
    at["final_llm"] = llm(s, 4, route="final", tokens=140)
    at["finding"] = s.add(
        FindingEvent,
        layer="results",
        rows=[ResultRow(batch_iteration=3, tool_call_id="c3", tool_name="refund")],
    )
    at["turn_end"] = s.add(TurnEndEvent, iteration=None, final_content="Refunded.", iteration_count=4)
    s.turn = None
    at["run_end"] = s.add(RunEndEvent, status="completed", turns=1)
    return s, at

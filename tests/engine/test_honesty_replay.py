"""Recomputing a run's findings from its saved events (fpdebug.engine.honesty.replay)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fpdebug.engine.honesty import Finding
from fpdebug.engine.honesty.replay import has_tool_surface, recompute_findings, recorded_findings
from fpdebug.errors import TraceFormatError
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AssumedValue,
    FindingEvent,
    HonestyArms,
    InjectionDecl,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    PassEvent,
    ResultRow,
    RunEndEvent,
    RunStartEvent,
    StatedValue,
    StoppedEarly,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TraceEvent,
    TriggerDecl,
    TurnEndEvent,
    TurnStartEvent,
)
from tests.conftest import T0

TOOLS = [ToolSchema(name="lookup_order"), ToolSchema(name="refund")]
ORDER = json.dumps({"order": {"id": "ORD-1234", "total": 1250.0}})


class Run:
    """A hand-built event sequence with a dense seq."""

    def __init__(
        self, *, honesty: HonestyArms | None, tools: list[ToolSchema] = TOOLS, run_id: str = "r1"
    ) -> None:
        self.run_id = run_id
        self.tools = tools
        self.events: list[TraceEvent] = []
        self.calls = 0
        self.add(
            RunStartEvent, provider="scripted", model="m", max_iterations=6, tools=tools, honesty=honesty
        )

    def add(self, cls: type[Any], **fields: Any) -> Any:
        event = cls(seq=len(self.events) + 1, ts=T0, run_id=self.run_id, **fields)
        self.events.append(event)
        return event

    def turn(self, turn: int, message: str) -> None:
        self.add(TurnStartEvent, turn=turn, user_message=message)

    def llm(
        self,
        turn: int,
        iteration: int,
        *,
        content: str = "",
        calls: list[ToolCallRecord] | None = None,
        tools: list[ToolSchema] | None = None,
        route: str | None = None,
    ) -> None:
        self.calls += 1
        self.add(
            LlmCallEvent,
            turn=turn,
            iteration=iteration,
            call_index=self.calls,
            provider="scripted",
            model="m",
            request=LlmRequest(tools=self.tools if tools is None else tools),
            response=LlmResponse(content=content, tool_calls=calls or []),
            route=route or ("tool-calls" if calls else "final"),
        )

    def tool(
        self,
        turn: int,
        iteration: int,
        call_id: str,
        name: str,
        result: str,
        *,
        args: dict[str, Any] | None = None,
        coverage: str | None = None,
    ) -> None:
        self.add(
            ToolResultEvent,
            turn=turn,
            iteration=iteration,
            tool_call_id=call_id,
            tool_name=name,
            args=args or {},
            result=result,
            coverage=coverage,
        )

    def end_turn(
        self, turn: int, iteration: int, content: str, *, stopped: StoppedEarly | None = None
    ) -> None:
        self.add(
            TurnEndEvent,
            turn=turn,
            iteration=iteration,
            final_content=content,
            iteration_count=iteration,
            stopped_early=stopped,
        )

    def finding(self, finding: Finding) -> None:
        self.add(
            FindingEvent,
            turn=finding.turn,
            iteration=finding.iteration,
            layer=finding.layer,
            rows=list(finding.rows),
        )


ARMED = HonestyArms(
    inputs=True,
    results=True,
    answer=True,
    standing_line="always",
    display_names={"lookup_order": "Order lookup"},
)


def refund_run() -> Run:
    """A refund: the order id comes from the user, the amount from a tool result, a credit from nowhere."""
    run = Run(honesty=ARMED)
    run.turn(1, "Please refund ORD-1234")
    run.llm(1, 1, calls=[ToolCallRecord(id="call_1", name="lookup_order", args={"order_id": "ORD-1234"})])
    run.tool(1, 1, "call_1", "lookup_order", ORDER, args={"order_id": "ORD-1234"}, coverage="one order")
    run.llm(
        1,
        2,
        calls=[ToolCallRecord(id="call_2", name="refund", args={"order_id": "ORD-1234", "amount": 1250})],
    )
    run.tool(1, 2, "call_2", "refund", "Refunded.", args={"order_id": "ORD-1234", "amount": 1250})
    run.llm(1, 3, content="Refunded $1,250.00 for ORD-1234, plus a $50 credit.")
    run.end_turn(1, 3, "Refunded $1,250.00 for ORD-1234, plus a $50 credit.")
    run.add(RunEndEvent, status="completed", turns=1)
    return run


def arg(call_id: str, tool: str, path: str, value: Any, **source: Any) -> ArgumentRow:
    return ArgumentRow(tool_call_id=call_id, tool_name=tool, path=path, value=value, **source)


EXPECTED_REFUND = [
    Finding(
        "inputs",
        1,
        1,
        (arg("call_1", "lookup_order", "$.order_id", "ORD-1234", source="user", source_text="ORD-1234"),),
    ),
    Finding(
        "results",
        1,
        2,
        (
            ResultRow(
                batch_iteration=1,
                tool_call_id="call_1",
                tool_name="lookup_order",
                coverage="one order",
                values=["ORD-1234", "1250.0"],
            ),
        ),
    ),
    Finding(
        "inputs",
        1,
        2,
        (
            arg(
                "call_2",
                "refund",
                "$.order_id",
                "ORD-1234",
                source="tool-result",
                source_tool_call_id="call_1",
                source_tool_name="lookup_order",
                source_iteration=1,
                source_path="$.order.id",
            ),
            arg(
                "call_2",
                "refund",
                "$.amount",
                1250,
                source="tool-result",
                source_tool_call_id="call_1",
                source_tool_name="lookup_order",
                source_iteration=1,
                source_path="$.order.total",
            ),
        ),
    ),
    Finding("results", 1, 3, (ResultRow(batch_iteration=2, tool_call_id="call_2", tool_name="refund"),)),
    Finding(
        "answer",
        1,
        3,
        (
            AnswerAssessmentRow(
                reads=[
                    "history",
                    "turnNumber",
                    "pausedToolCallId",
                    "findingsLedger",
                    "stoppedEarly",
                    "coverageDeclared",
                    "argumentAsk",
                ],
                values=[
                    StatedValue(
                        text="$1,250.00",
                        kind="amount",
                        supported=True,
                        supported_by=["tool:call_1"],
                        start=9,
                        end=18,
                    ),
                    StatedValue(
                        text="ORD-1234",
                        kind="id",
                        supported=True,
                        supported_by=["tool:call_1", "user"],
                        start=23,
                        end=31,
                    ),
                    StatedValue(text="$50", kind="amount", supported=False, start=40, end=43),
                ],
                standing_line=(
                    "2 of 3 values in this answer are backed by tool results (Order lookup); "
                    "1 ($50) appears in no source. Order lookup declared its coverage: one order."
                ),
            ),
        ),
    ),
]


def test_recompute_a_refund_run_by_hand() -> None:
    assert recompute_findings(refund_run().events) == EXPECTED_REFUND


def filed_where_the_loop_files(plain: list[TraceEvent], findings: list[Finding]) -> Run:
    """Rebuild a trace with each finding where the loop writes it: results before the first event of
    their loop head's iteration, inputs right after their LLM call, the answer before ``turn_end``."""
    run = Run(honesty=plain[0].honesty)  # type: ignore[union-attr]
    pending = list(findings)
    seen: set[tuple[int, int]] = set()

    def file(layer: str, turn: int | None, iteration: int | None) -> None:
        for finding in [f for f in pending if (f.layer, f.turn, f.iteration) == (layer, turn, iteration)]:
            run.finding(finding)
            pending.remove(finding)

    for event in plain[1:]:
        head = (event.turn, event.iteration)
        if event.turn is not None and event.iteration is not None and head not in seen:
            seen.add((event.turn, event.iteration))
            file("results", event.turn, event.iteration)
        if isinstance(event, TurnEndEvent):
            file("answer", event.turn, event.iteration_count)
        run.add(type(event), **event.model_dump(exclude={"seq", "ts", "run_id", "kind"}))
        if isinstance(event, LlmCallEvent):
            file("inputs", event.turn, event.iteration)
    assert pending == []
    return run


def test_recomputing_a_trace_that_filed_its_findings_gives_the_findings_it_filed() -> None:
    # The equality law on a hand-built trace: the saved findings and the recomputed ones agree.
    run = filed_where_the_loop_files(refund_run().events, EXPECTED_REFUND)
    assert [e.kind for e in run.events if e.kind in ("finding", "llm_call", "turn_end")] == [
        "llm_call",
        "finding",
        "finding",
        "llm_call",
        "finding",
        "finding",
        "llm_call",
        "finding",
        "turn_end",
    ]
    assert recorded_findings(run.events) == EXPECTED_REFUND
    assert recompute_findings(run.events) == recorded_findings(run.events)


def test_a_batch_is_judged_once_even_after_a_re_ask() -> None:
    run = Run(honesty=HonestyArms(results=True))
    run.turn(1, "hi")
    run.llm(1, 1, calls=[ToolCallRecord(id="c1", name="lookup_order")])
    run.tool(1, 1, "c1", "lookup_order", "ORD-1")
    run.llm(1, 2, content="not json")  # an output re-ask: no tool ran, the iteration advanced again
    run.llm(1, 3, content="done")
    run.end_turn(1, 3, "done")
    # Turn 2: the stamp does not cross turns, so turn 1's batch is never judged again.
    run.turn(2, "again")
    run.add(PassEvent, turn=2, iteration=1, active_ids=[], evaluated_total=0)
    run.llm(2, 1, calls=[ToolCallRecord(id="c1", name="lookup_order")])  # a provider reusing an id
    run.tool(2, 1, "c1", "lookup_order", "ORD-2")
    run.add(PassEvent, turn=2, iteration=2, active_ids=[], evaluated_total=0)
    run.llm(2, 2, content="done")
    run.end_turn(2, 2, "done")
    assert recompute_findings(run.events) == [
        Finding(
            "results",
            1,
            2,
            (ResultRow(batch_iteration=1, tool_call_id="c1", tool_name="lookup_order", values=["ORD-1"]),),
        ),
        Finding(
            "results",
            2,
            2,
            (ResultRow(batch_iteration=1, tool_call_id="c1", tool_name="lookup_order", values=["ORD-2"]),),
        ),
    ]


def test_a_batch_whose_next_loop_head_never_ran_is_not_judged() -> None:
    run = Run(honesty=HonestyArms(results=True))
    run.turn(1, "hi")
    run.llm(1, 1, calls=[ToolCallRecord(id="c1", name="lookup_order")])
    run.tool(1, 1, "c1", "lookup_order", "ORD-1")
    run.add(RunEndEvent, status="failed", turns=1)
    assert recompute_findings(run.events) == []


def test_middleware_rewrites_and_hidden_tools_are_recomputed_from_the_ran_args() -> None:
    arms = HonestyArms(inputs=True, answer=True, tool_middleware=True, hidden_argument_tools=["set_pin"])
    run = Run(honesty=arms, tools=[*TOOLS, ToolSchema(name="set_pin")])
    run.turn(1, "Refund ORD-1234")
    run.llm(
        1,
        1,
        calls=[ToolCallRecord(id="c1", name="refund", args={"order_id": "ORD-1234", "amount": 1250})],
        tools=TOOLS,
    )
    run.tool(1, 1, "c1", "refund", "ok", args={"order_id": "ORD-1234", "amount": 1000})
    run.llm(1, 2, calls=[ToolCallRecord(id="c2", name="set_pin", args={"pin": "4321"})])
    run.tool(1, 2, "c2", "set_pin", "ok", args={"pin": "4321"})
    run.llm(1, 3, content="Done.")
    run.end_turn(1, 3, "Done.")
    inputs_1, inputs_2, answer = recompute_findings(run.events)
    assert inputs_1.rows == (
        arg("c1", "refund", "$.order_id", "ORD-1234", source="user", source_text="ORD-1234"),
        arg("c1", "refund", "$.amount", 1250, source="nowhere", rewritten=True, rewritten_to=1000),
    )
    assert inputs_2.rows == (arg("c2", "set_pin", "$.pin", None, source="nowhere", hidden=True),)
    (assessment,) = answer.rows
    assert isinstance(assessment, AnswerAssessmentRow)
    assert assessment.assumed == [
        AssumedValue(tool_call_id="c1", path="$.amount", original=1250, rewritten_to=1000)
    ]
    assert "middlewareDecisions" in assessment.reads and "coverageDeclared" in assessment.reads


def test_the_answer_assessment_says_the_final_reply_was_cut_short() -> None:
    # A final reply that still asks for tools was cut by max_iterations, as the loop's final branch says.
    stopped = StoppedEarly(reason="max-iterations", iteration=1, pending_tool_calls=1, answer_was_empty=True)
    run = Run(honesty=HonestyArms(answer=True), tools=[])
    run.turn(1, "hi")
    run.llm(1, 1, calls=[ToolCallRecord(id="c1", name="x")], route="final")
    run.end_turn(1, 1, "", stopped=stopped)
    (answer,) = recompute_findings(run.events)
    always = ["history", "turnNumber", "pausedToolCallId", "findingsLedger", "stoppedEarly"]
    assert answer.rows == (AnswerAssessmentRow(reads=always, stopped_early=stopped),)


@pytest.mark.parametrize(
    "honesty", [None, HonestyArms(), HonestyArms(argument_sources=True, tool_middleware=True)]
)
def test_a_run_that_arms_no_layer_has_no_findings(honesty: HonestyArms | None) -> None:
    run = refund_run()
    run.events[0] = run.events[0].model_copy(update={"honesty": honesty})
    assert recompute_findings(run.events) == []


def test_events_of_more_than_one_run_are_refused() -> None:
    with pytest.raises(TraceFormatError, match="one run_start"):
        recompute_findings([*refund_run().events, *Run(honesty=ARMED, run_id="r2").events])
    with pytest.raises(TraceFormatError, match="one run_start"):
        recompute_findings(refund_run().events[1:])
    mixed = [*refund_run().events, TurnStartEvent(seq=99, ts=T0, run_id="other", turn=2, user_message="x")]
    with pytest.raises(TraceFormatError, match="other"):
        recompute_findings(mixed)


def test_tool_surface_counts_skill_tools_and_read_skill() -> None:
    plain = Run(honesty=None, tools=[]).events[0]
    assert not has_tool_surface(plain)
    assert has_tool_surface(plain.model_copy(update={"tools": TOOLS}))
    skill = InjectionDecl(
        id="s", flavor="skill", trigger=TriggerDecl(kind="llm-activated"), slots=["system-prompt"]
    )
    assert has_tool_surface(plain.model_copy(update={"injections": [skill]}))
    fact = InjectionDecl(
        id="f", flavor="fact", trigger=TriggerDecl(kind="always"), slots=["tools"], tool_names=["calc"]
    )
    assert has_tool_surface(plain.model_copy(update={"injections": [fact]}))

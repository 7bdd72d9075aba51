"""The honesty demos, asserted on the traces they write; the equality law on every demo scenario.

``unsupported-amount`` states a $75.00 fee no tool returned; ``traced-argument`` passes values of the
first call's result to the second call. Every scenario, armed with all layers when it does not arm
them itself, files findings during the run that equal those recomputed from its saved trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fpdebug.cli import main
from fpdebug.demo import (
    SCENARIOS,
    load_scenario,
    revised_amount,
    sample_path,
    traced_argument,
    unsupported_amount,
)
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    BasisRow,
    FindingEvent,
    LlmCallEvent,
    TraceEvent,
    TurnEndEvent,
)
from tests.conftest import T0
from tests.demo.helpers import SAMPLES, events_of, run_events


def findings(events: list[TraceEvent], layer: str) -> list[FindingEvent]:
    return [e for e in events if isinstance(e, FindingEvent) and e.layer == layer]


def only_row(event: FindingEvent) -> Any:
    (row,) = event.rows
    return row


# ----------------------------------------------------------------------------------------------
# (g) revised-amount: the enforcing evidence gate


def test_the_enforcing_gate_sends_the_made_up_fee_back_and_the_revision_drops_it(tmp_path: Path) -> None:
    events = run_events("revised-amount", tmp_path)
    expected = revised_amount.EXPECTED
    (start,) = [e for e in events if e.kind == "run_start"]
    assert start.honesty is not None  # type: ignore[attr-defined]
    assert (start.honesty.evidence_gate, start.honesty.tools_off_after_revision) == (True, True)  # type: ignore[attr-defined]
    calls = [e for e in events if isinstance(e, LlmCallEvent)]
    assert [(c.iteration, c.route) for c in calls] == [
        (1, "tool-calls"),
        (2, "evidence-recheck"),
        (3, "final"),
    ]
    draft, revision = calls[1], calls[2]
    assert draft.response is not None and draft.response.content == expected["draft"]
    # The revision turn: the tools are off, and the gate's ask (a system message) follows the draft.
    assert draft.request.tools and revision.request.tools == []
    *_, kept, ask = revision.request.messages
    assert (kept.role, kept.content) == ("assistant", expected["draft"])
    assert ask.role == "system" and "$75.00" in ask.content
    # The draft is assessed (its fee unsupported); the final answer states only backed values.
    # Each answer visit files answer validation's report first, then the assessment.
    draft_visit, final_visit = findings(events, "answer")
    assert [(r.row, r.withheld) for r in (draft_visit.rows[0], final_visit.rows[0])] == [
        ("validation", False),
        ("validation", False),
    ]
    draft_row, final_row = draft_visit.rows[1], final_visit.rows[1]
    assert isinstance(draft_row, AnswerAssessmentRow) and isinstance(final_row, AnswerAssessmentRow)
    assert [v.text for v in draft_row.values if not v.supported] == expected["unsupported_in_draft"]
    assert all(v.supported for v in final_row.values) and final_row.values
    assert "unsupportedValues" in final_row.reads and "answerValidation" in final_row.reads
    assert "argumentAsk" in final_row.reads and "pausedToolCallId" in final_row.reads
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.final_content == expected["answer"] and end.iteration_count == expected["revision_iteration"]
    # The batch of iteration 1 is judged once: the revision turn's loop head leaves it in place.
    assert [f.iteration for f in findings(events, "results")] == [2]
    assert recompute_findings(events) == recorded_findings(events)


# ----------------------------------------------------------------------------------------------
# (e) unsupported-amount


def test_the_unsupported_amount_is_marked_unsupported_on_the_trace(tmp_path: Path) -> None:
    events = run_events("unsupported-amount", tmp_path)
    expected = unsupported_amount.EXPECTED
    (answer,) = findings(events, "answer")
    row = only_row(answer)
    assert isinstance(row, AnswerAssessmentRow)
    assert [v.text for v in row.values if v.supported] == expected["supported"]
    assert [v.text for v in row.values if not v.supported] == expected["unsupported"]
    unsupported = next(v for v in row.values if not v.supported)
    assert (unsupported.kind, unsupported.supported_by) == ("amount", [])
    final = next(e for e in events if e.kind == "turn_end").final_content  # type: ignore[attr-defined]
    assert final == expected["answer"] and final[unsupported.start : unsupported.end] == "$75.00"
    amount = next(v for v in row.values if v.text == "$1,250.00")
    assert amount.supported_by == ["tool:call_1"]
    assert row.standing_line is not None and expected["display_name"] in row.standing_line
    assert "1 ($75.00) appears in no source" in row.standing_line
    # The invoice id the model asked for came from the user's message; the lookup was judged once.
    (asked,) = findings(events, "inputs")
    assert (only_row(asked).path, only_row(asked).source) == ("$.invoice_id", "user")
    (judged,) = findings(events, "results")
    assert only_row(judged).values == ["INV-204", "1250.0", "2026-02-01"]


def test_without_the_reminder_the_model_states_no_fee_and_nothing_is_unsupported() -> None:
    culprit = str(unsupported_amount.EXPECTED["culprit"])
    agent = unsupported_amount.build_agent().without(injection_ids=[culprit])
    provider = unsupported_amount.scripted_provider()
    result = agent.run(list(unsupported_amount.USER_MESSAGES), provider=provider)
    assert result.content == unsupported_amount.ANSWER_WITHOUT_REMINDER
    assert result.events is not None
    (answer,) = findings(list(result.events), "answer")
    assert all(v.supported for v in only_row(answer).values)


# ----------------------------------------------------------------------------------------------
# (f) traced-argument


def test_the_second_calls_arguments_are_traced_to_the_first_calls_result(tmp_path: Path) -> None:
    events = run_events("traced-argument", tmp_path)
    expected: Any = traced_argument.EXPECTED
    first, second = findings(events, "inputs")
    asked: list[Any] = list(first.rows)
    assert [(r.path, r.source) for r in asked] == [("$.customer_id", "user")]
    basis, *arguments = second.rows
    assert isinstance(basis, BasisRow)
    assert (len(basis.from_entries), basis.dropped_from) == (
        expected["basis"]["kept"],
        expected["basis"]["dropped"],
    )
    assert all(isinstance(row, ArgumentRow) for row in arguments)
    rows: list[Any] = arguments
    traced = {
        r.path: {"source_tool_call_id": r.source_tool_call_id, "source_path": r.source_path} for r in rows
    }
    assert traced == expected["traced"]
    assert {r.source_iteration for r in rows} == {expected["source_iteration"]}
    assert {r.path: r.refused_reference for r in rows if r.refused_reference} == expected["refused"]
    # The cited call really is the first call, and it ran at the iteration the rows name.
    results: list[Any] = [e for e in events if e.kind == "tool_result"]
    listed, refunded = results
    assert (listed.tool_name, listed.tool_call_id, listed.iteration) == ("list_orders", "call_1", 1)
    assert listed.coverage == expected["coverage"]
    assert refunded.tool_name == "refund_order" and refunded.status is None
    assert refunded.args == {"order_id": "ORD-5521", "amount": 89.9}  # "_from" stripped before it ran
    (answer,) = findings(events, "answer")
    assert all(v.supported for v in only_row(answer).values)


# ----------------------------------------------------------------------------------------------
# The equality law on every demo


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_assessing_during_the_run_equals_assessing_the_saved_trace(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(name)
    agent = scenario.build_agent()
    if agent.spec.honesty is None:
        agent = agent.findings(argument_sources=True, standing_line=True)
    path = tmp_path / f"{name}.jsonl"
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run(
            list(scenario.user_messages),
            provider=scenario.scripted_provider(),
            sink=sink,
            clock=clock,
            run_id="t",
            answer=scenario.answer_ask,
        )
    assert result.status == "completed"
    events = events_of(path)
    written = recorded_findings(events)
    assert {f.layer for f in written} == {"inputs", "results", "answer"}
    assert recompute_findings(events) == written


@pytest.mark.parametrize("name", ["unsupported-amount", "traced-argument", "revised-amount", "argument-ask"])
def test_the_committed_honesty_samples_satisfy_the_equality_law(name: str) -> None:
    events = events_of(sample_path(SAMPLES, name))
    assert recorded_findings(events) and recompute_findings(events) == recorded_findings(events)


# ----------------------------------------------------------------------------------------------
# fpdebug summary counts unsupported values


def test_summary_counts_the_unsupported_values(capsys: pytest.CaptureFixture[str]) -> None:
    unsupported = str(sample_path(SAMPLES, "unsupported-amount"))
    assert main(["summary", unsupported]) == 0
    assert "  honesty: 1 unsupported value in 1 assessed answer\n" in capsys.readouterr().out
    assert main(["summary", "--json", unsupported]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert (run["answers_assessed"], run["unsupported_values"]) == (1, 1)
    assert main(["summary", "--json", str(sample_path(SAMPLES, "traced-argument"))]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert (run["answers_assessed"], run["unsupported_values"]) == (1, 0)
    assert main(["summary", str(sample_path(SAMPLES, "support"))]) == 0
    assert "honesty:" not in capsys.readouterr().out  # no answer layer, no line

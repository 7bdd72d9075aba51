"""Route's non-tool ways back (docs/context-model.md §5.6, §7.1, §7.2): the step nudge and the wrap-up,
and the three rules only such a way back exercises in a real run."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.demo.step_nudge import EARLY_ANSWER, EXPECTED
from fpdebug.engine.agent import Agent
from fpdebug.engine.agent.branches import choose_route
from fpdebug.engine.injections import Step, define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import (
    CursorMoveEvent,
    FindingEvent,
    LlmCallEvent,
    LlmResponse,
    PassEvent,
    ResultRow,
    StepsUnfinishedEvent,
    ToolCallRecord,
    TraceEvent,
    TurnEndEvent,
)
from tests.demo.helpers import run_events

R = ScriptedReply


def of(events: list[TraceEvent], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]


def result_batches(events: list[TraceEvent]) -> list[tuple[int | None, int]]:
    """(loop head iteration, batch judged) of every results-layer row."""
    return [
        (f.iteration, row.batch_iteration)
        for f in of(events, FindingEvent)
        if f.layer == "results"
        for row in f.rows
        if isinstance(row, ResultRow)
    ]


# ----------------------------------------------------------------------------------------------
# Route


def test_route_chooses_in_the_reference_order() -> None:
    call = LlmResponse(tool_calls=[ToolCallRecord(id="c", name="t", args={})])
    answer = LlmResponse(content="done")
    nudge = object()
    assert choose_route(call, iteration=1, max_iterations=2, nudge=None, wrap_up=True) == "tool-calls"
    assert choose_route(call, iteration=2, max_iterations=2, nudge=None, wrap_up=True) == "wrap-up"
    assert choose_route(call, iteration=2, max_iterations=2, nudge=None, wrap_up=False) == "final"
    assert choose_route(call, iteration=3, max_iterations=2, nudge=None, wrap_up=True) == "final"
    assert choose_route(answer, iteration=1, max_iterations=2, nudge=nudge, wrap_up=False) == "step-nudge"  # type: ignore[arg-type]
    # No budget left for the re-ask: the answer is final.
    assert choose_route(answer, iteration=2, max_iterations=2, nudge=nudge, wrap_up=False) == "final"  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# The step-nudge demo: the three rules in a real run


def test_the_demo_nudges_once_and_re_asks(tmp_path: Path) -> None:
    events = run_events("step-nudge", tmp_path)
    calls = of(events, LlmCallEvent)
    assert [c.route for c in calls] == EXPECTED["routes"]
    (nudge,) = of(events, StepsUnfinishedEvent)
    assert (nudge.iteration, nudge.skill_id, nudge.step, nudge.total, nudge.tool) == (
        2,
        "refund",
        1,
        2,
        "lookup_order",
    )
    # The re-ask reads the early answer, then the loop's message (marked as the loop's, not the user's).
    sent = calls[2].request.messages
    assert [(m.role, m.content, m.from_loop) for m in sent[-2:]] == [
        ("assistant", EARLY_ANSWER, None),
        ("user", nudge.nudge, True),
    ]
    assert [c.iteration for c in calls] == [1, 2, 3, 4, 5]
    (end,) = of(events, TurnEndEvent)
    assert end.final_content == EXPECTED["answer"] and end.iteration_count == 5


def test_a_proposal_is_honoured_once_even_when_the_next_iteration_is_a_re_ask(tmp_path: Path) -> None:
    events = run_events("step-nudge", tmp_path)
    moves = of(events, CursorMoveEvent)
    assert [m.to_skill for m in moves] == EXPECTED["cursor"]
    assert [m.by for m in moves] == EXPECTED["cursor_by"]  # iteration 3 (the re-ask) stays


def test_a_stale_batch_stays_in_place_across_the_re_ask(tmp_path: Path) -> None:
    events = run_events("step-nudge", tmp_path)
    active = {p.iteration: p.active_ids for p in of(events, PassEvent)}
    # escalate's batch (iteration 1) is still in place on the re-ask's pass: its on-tool-return fires.
    assert "after-escalation" in active[2] and "after-escalation" in active[3]
    assert "after-escalation" not in active[4]  # replaced by the first batch the re-ask dispatched


def test_the_results_layer_judges_each_batch_once_across_the_re_ask(tmp_path: Path) -> None:
    events = run_events("step-nudge", tmp_path)
    judged = result_batches(events)
    assert judged == [(2, 1), (4, 3), (5, 4)]  # nothing at the re-ask's loop head (iteration 3)


# ----------------------------------------------------------------------------------------------
# The nudge's limits


def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


def charge(order_id: str) -> str:
    """Charge it back."""
    return "charged back"


def note(text: str) -> str:
    """Write a note (not a step)."""
    return "noted"


def stepped() -> object:
    return define_skill(
        "refund",
        body="Refund.",
        tools=[tool(lookup), tool(charge), tool(note)],
        steps=[Step("lookup", "look it up"), Step("charge", "charge it back")],
    )


def run(agent: Agent, *replies: object) -> list[TraceEvent]:
    sink = MemorySink()
    result = agent.run("Refund A", provider=ScriptedProvider(list(replies)), sink=sink)  # type: ignore[arg-type]
    assert result.status == "completed", result.error
    return list(sink.events)


def test_a_second_unfinished_answer_is_final() -> None:
    events = run(Agent("a").skills(stepped()), R.tool_call("read_skill", {"id": "refund"}), "early", "again")
    assert [c.route for c in of(events, LlmCallEvent)] == ["tool-calls", "step-nudge", "final"]
    assert len(of(events, StepsUnfinishedEvent)) == 1
    assert of(events, TurnEndEvent)[0].final_content == "again"


def test_no_nudge_without_budget_or_when_turned_off() -> None:
    at_limit = run(
        Agent("a").skills(stepped()).max_iterations(2), R.tool_call("read_skill", {"id": "refund"}), "early"
    )
    off = run(
        Agent("a").skills(stepped()).step_nudge(False), R.tool_call("read_skill", {"id": "refund"}), "early"
    )
    for events in (at_limit, off):
        assert [c.route for c in of(events, LlmCallEvent)] == ["tool-calls", "final"]
        assert of(events, StepsUnfinishedEvent) == []


def test_a_finished_procedure_is_not_nudged() -> None:
    events = run(
        Agent("a").skills(stepped()),
        R.tool_call("read_skill", {"id": "refund"}),
        R.tool_call("lookup", {"order_id": "A"}),
        R.tool_call("charge", {"order_id": "A"}),
        "done",
    )
    assert of(events, StepsUnfinishedEvent) == []


# ----------------------------------------------------------------------------------------------
# The laws over any sequence of batches and answers


REPLY = st.sampled_from(["note", "lookup", "charge", "answer"])


@settings(max_examples=60, deadline=None)
@given(st.lists(REPLY, min_size=1, max_size=7), st.integers(min_value=2, max_value=9))
def test_each_batch_is_judged_once_and_the_nudge_comes_once(script: list[str], limit: int) -> None:
    replies: list[object] = [R.tool_call("read_skill", {"id": "refund"})]
    for step in script:
        replies.append(
            "answer"
            if step == "answer"
            else R.tool_call(step, {"order_id": "A"} if step != "note" else {"text": "n"})
        )
    replies += ["final answer"] * 3  # enough for a nudge after the script runs out of tools
    sink = MemorySink()
    agent = Agent("p").skills(stepped()).max_iterations(limit).results_layer()
    result = agent.run("Refund A", provider=ScriptedProvider(replies), sink=sink)  # type: ignore[arg-type]
    events = list(sink.events)
    calls = of(events, LlmCallEvent)
    assert result.status == "completed"
    # Every loop branch advances the iteration by one; final does not.
    assert [c.iteration for c in calls] == list(range(1, len(calls) + 1))
    assert len(of(events, StepsUnfinishedEvent)) <= 1
    dispatched = [c.iteration for c in calls if c.route == "tool-calls"]
    judged = result_batches(events)
    # Judged once: each dispatched batch exactly once, at the loop head right after it, never again.
    assert sorted({b for _, b in judged}) == dispatched
    assert all(head == batch + 1 for head, batch in judged)
    # A re-ask's pass sees the batch in place: the one dispatched last before it.
    for nudge in of(events, StepsUnfinishedEvent):
        assert nudge.iteration is not None and nudge.iteration + 1 not in {head for head, _ in judged}


# ----------------------------------------------------------------------------------------------
# Wrap-up


def test_the_wrap_up_demo_asks_once_more_with_tools_off(tmp_path: Path) -> None:
    from fpdebug.demo import wrap_up
    from fpdebug.trace.schema import ToolResultEvent, WrapUpEvent

    events = run_events("wrap-up", tmp_path)
    calls = of(events, LlmCallEvent)
    assert [c.route for c in calls] == wrap_up.EXPECTED["routes"]
    assert [c.iteration for c in calls] == [1, 2, 3, 4]  # the wrap-up call runs at max_iterations + 1
    assert [len(c.request.tools) for c in calls] == [1, 1, 1, 0]
    (wrap,) = of(events, WrapUpEvent)
    assert (wrap.iteration, wrap.pending_tool_calls) == (3, 1)
    assert [(m.role, m.content, m.from_loop) for m in calls[3].request.messages[-1:]] == [
        ("user", wrap.instruction, True)
    ]
    assert [r.iteration for r in of(events, ToolResultEvent)] == [1, 2]  # the pending call never ran
    (end,) = of(events, TurnEndEvent)
    assert end.stopped_early is not None
    assert end.stopped_early.model_dump(exclude_none=True) == wrap_up.EXPECTED["stopped_early"]
    assert end.final_content == wrap_up.ANSWER and end.iteration_count == 4


def test_without_wrap_up_the_cut_reply_is_the_answer() -> None:
    agent = Agent("w").tools(tool(lookup)).max_iterations(1)
    events = run(agent, R.tool_call("lookup", {"order_id": "A"}))
    assert [c.route for c in of(events, LlmCallEvent)] == ["final"]
    (end,) = of(events, TurnEndEvent)
    assert end.stopped_early is not None and end.stopped_early.wrapped_up is None


def test_a_wrap_up_reply_that_still_asks_for_tools_is_final() -> None:
    agent = Agent("w").tools(tool(lookup)).max_iterations(1).wrap_up()
    events = run(agent, R.tool_call("lookup", {"order_id": "A"}), R.tool_call("lookup", {"order_id": "B"}))
    assert [c.route for c in of(events, LlmCallEvent)] == ["wrap-up", "final"]
    (end,) = of(events, TurnEndEvent)
    assert end.stopped_early is not None
    assert (end.stopped_early.iteration, end.stopped_early.wrapped_up) == (1, True)

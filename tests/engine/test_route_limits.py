"""Route's limits and its output re-ask (docs/context-model.md §7.2): the cost budget, which stops tool
dispatch once the run's spend reaches it, and the output schema, whose ``output-retry`` re-asks a
final reply that does not validate. Both through the scripted provider, plus Route's choice alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from fpdebug.demo import cost_budget, output_retry
from fpdebug.engine.agent import Agent
from fpdebug.engine.agent.branches import choose_route, cut_short
from fpdebug.engine.agent.limits import CostBudget, ModelPrice, SpendMeter
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError, OutputValidationError, UnpricedCallError
from fpdebug.trace.schema import (
    FindingEvent,
    LlmCallEvent,
    LlmResponse,
    OutputRetryEvent,
    ResultRow,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    Usage,
    WrapUpEvent,
)
from tests.conftest import T0
from tests.demo.helpers import run_events
from tests.engine.test_honesty_loop import assert_equality_law, record, scripted

R = ScriptedReply
CALL = LlmResponse(tool_calls=[ToolCallRecord(id="c", name="t", args={})])
ANSWER = LlmResponse(content="done")
PRICE = ModelPrice(input_per_mtok=1_000_000.0, output_per_mtok=0.0)  # $1 per input token: easy sums


def of(events: list[TraceEvent], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]


def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


def costing(tokens: int, reply: ScriptedReply) -> ScriptedReply:
    """``reply`` with ``tokens`` input tokens ($1 each at :data:`PRICE`)."""
    return ScriptedReply(
        content=reply.content,
        tool_calls=reply.tool_calls,
        usage=Usage(input_tokens=tokens, output_tokens=0, input_includes_cache=True),
    )


def run(
    agent: Agent, *replies: object, messages: str | list[str] = "Refund A"
) -> tuple[object, list[TraceEvent]]:
    sink = MemorySink()
    result = agent.run(messages, provider=ScriptedProvider(list(replies)), sink=sink)  # type: ignore[arg-type]
    return result, list(sink.events)


# ----------------------------------------------------------------------------------------------
# Route's choice: the budget and the iteration limit


def test_the_budget_stops_tools_at_any_iteration() -> None:
    assert (
        choose_route(CALL, iteration=1, max_iterations=5, nudge=None, wrap_up=False, over_budget=True)
        == "final"
    )
    assert (
        choose_route(CALL, iteration=1, max_iterations=5, nudge=None, wrap_up=True, over_budget=True)
        == "wrap-up"
    )
    assert (
        choose_route(CALL, iteration=1, max_iterations=5, nudge=None, wrap_up=False, over_budget=False)
        == "tool-calls"
    )
    # No step nudge past the budget: a re-ask is one more call to pay for.
    nudge = object()
    assert (
        choose_route(ANSWER, iteration=1, max_iterations=5, nudge=nudge, wrap_up=False, over_budget=True)  # type: ignore[arg-type]
        == "final"
    )


def test_the_budget_takes_precedence_over_the_limit_in_the_stop_reason() -> None:
    over = SpendMeter(CostBudget(1.0, PRICE), T0)
    over.charge("scripted", "m", LlmResponse(usage=Usage(input_tokens=2)))
    under = SpendMeter(CostBudget(10.0, PRICE), T0)
    under.charge("scripted", "m", LlmResponse(usage=Usage(input_tokens=2)))
    # At the iteration limit with the spend past the budget: the budget is what cut the turn.
    stopped = cut_short(CALL, 3, over)
    assert (stopped.reason, stopped.budget_usd, stopped.spent_usd) == ("cost-budget", 1.0, 2.0)
    at_limit = cut_short(CALL, 3, under)
    assert (at_limit.reason, at_limit.budget_usd, at_limit.spent_usd) == ("max-iterations", None, None)
    assert cut_short(CALL, 3, None).reason == "max-iterations"


def test_the_meter_prices_by_the_table_or_the_declared_price_and_never_says_zero() -> None:
    table = SpendMeter(CostBudget(100.0), T0)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, input_includes_cache=True)
    reply = LlmResponse(usage=usage, model="claude-3-5-sonnet-20241022")
    assert table.charge("anthropic", "claude-3-5-sonnet-20241022", reply) is None
    assert float(table.spent) == pytest.approx(18.0)  # $3 in + $15 out per million
    unknown = SpendMeter(CostBudget(1.0), T0)
    error = unknown.charge("openai", "no-such-model", LlmResponse(usage=usage))
    assert error is not None and error.type == "UnpricedCallError" and "no-such-model" in error.message
    assert unknown.spent == 0 and not unknown.over
    ignored = SpendMeter(CostBudget(1.0, unpriced="ignore"), T0)
    assert ignored.charge("scripted", "s", LlmResponse(usage=usage)) is None
    assert (ignored.unpriced_calls, ignored.spent) == (1, 0)


def test_the_builder_refuses_a_bad_budget_or_schema() -> None:
    for bad in (0, -1, True, "5"):
        with pytest.raises(DefinitionError, match="cost_budget"):
            Agent("a").cost_budget(bad)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="unpriced"):
        Agent("a").cost_budget(1, unpriced="zero")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="ModelPrice"):
        ModelPrice(-1, 0)
    with pytest.raises(DefinitionError, match="max_retries"):
        Agent("a").output_schema(output_retry.Triage, max_retries=-1)
    with pytest.raises(DefinitionError, match="output_schema"):
        Agent("a").output_schema(object())
    assert Agent("a").cost_budget(1).cost_budget(None).spec.cost_budget is None


# ----------------------------------------------------------------------------------------------
# The cost budget in a run


def test_the_cost_budget_demo_stops_the_tools_and_wraps_up(tmp_path: Path) -> None:
    events = run_events("cost-budget", tmp_path)
    calls = of(events, LlmCallEvent)
    assert [c.route for c in calls] == cost_budget.EXPECTED["routes"]
    assert [len(c.request.tools) for c in calls] == [1, 1, 1, 0]  # the wrap-up call offers none
    assert [r.iteration for r in of(events, ToolResultEvent)] == [1, 2]  # the third report never ran
    (wrap,) = of(events, WrapUpEvent)
    assert (wrap.iteration, wrap.reason, wrap.budget_usd, wrap.spent_usd) == (3, "cost-budget", 0.004, 0.0045)
    assert "cost budget" in wrap.instruction
    (end,) = of(events, TurnEndEvent)
    assert end.stopped_early is not None
    assert end.stopped_early.model_dump(exclude_none=True) == cost_budget.EXPECTED["stopped_early"]
    (start,) = of(events, RunStartEvent)
    assert start.options["cost_budget"] == {
        "usd": 0.004,
        "unpriced": "fail",
        "price": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
    }


def test_without_wrap_up_the_reply_past_the_budget_is_the_answer() -> None:
    agent = Agent("b").tools(tool(lookup)).cost_budget(5, price=PRICE)
    result, events = run(
        agent,
        costing(3, R.tool_call("lookup", {"order_id": "A"})),
        costing(3, R.tool_call("lookup", {"order_id": "B"}, content="Looking B up.")),
    )
    assert [c.route for c in of(events, LlmCallEvent)] == ["tool-calls", "final"]
    (end,) = of(events, TurnEndEvent)
    assert end.final_content == "Looking B up." and end.iteration_count == 2
    assert end.stopped_early is not None
    assert end.stopped_early.model_dump(exclude_none=True) == {
        "reason": "cost-budget",
        "iteration": 2,
        "pending_tool_calls": 1,
        "answer_was_empty": False,
        "budget_usd": 5.0,
        "spent_usd": 6.0,
    }
    assert result.turns[0].stopped_early == end.stopped_early  # type: ignore[attr-defined]


def test_the_spend_is_the_runs_and_carries_across_turns() -> None:
    agent = Agent("b").tools(tool(lookup)).cost_budget(5, price=PRICE)
    _, events = run(
        agent,
        costing(4, R.tool_call("lookup", {"order_id": "A"})),
        costing(0, R.text("A is fine.")),
        costing(2, R.tool_call("lookup", {"order_id": "B"})),
        messages=["Check A", "Check B"],
    )
    assert [(c.turn, c.route) for c in of(events, LlmCallEvent)] == [
        (1, "tool-calls"),
        (1, "final"),
        (2, "final"),
    ]
    ends = of(events, TurnEndEvent)
    assert ends[0].stopped_early is None
    assert ends[1].stopped_early is not None and ends[1].stopped_early.spent_usd == 6.0


def test_an_unpriced_call_fails_the_run_unless_the_budget_ignores_it() -> None:
    agent = Agent("b").tools(tool(lookup)).cost_budget(5)
    result, events = run(agent, R.tool_call("lookup", {"order_id": "A"}), "done")
    assert result.status == "failed"  # type: ignore[attr-defined]
    assert isinstance(result.exception, UnpricedCallError)  # type: ignore[attr-defined]
    (call,) = of(events, LlmCallEvent)  # the reply is recorded, with no route: none was decided
    assert call.response is not None and call.route is None
    (end,) = of(events, RunEndEvent)
    assert end.status == "failed" and end.error is not None and "no price: scripted" in end.error.message
    ignored, events = run(
        agent.cost_budget(5, unpriced="ignore"), R.tool_call("lookup", {"order_id": "A"}), "done"
    )
    assert ignored.status == "completed"  # type: ignore[attr-defined]
    assert [c.route for c in of(events, LlmCallEvent)] == ["tool-calls", "final"]


def test_the_equality_law_holds_on_a_budget_cut_answer(tmp_path: Path) -> None:
    agent = Agent("b").tools(tool(lookup)).findings().cost_budget(5, price=PRICE)
    recorded = record(
        agent,
        "Check A",
        scripted(
            costing(3, R.tool_call("lookup", {"order_id": "A"})),
            costing(3, R.tool_call("lookup", {"order_id": "B"}, content="order A")),
        ),
        tmp_path,
    )
    (end,) = of(recorded.events, TurnEndEvent)
    assert end.stopped_early is not None and end.stopped_early.reason == "cost-budget"
    written = assert_equality_law(recorded)
    answer_rows = [row for f in written if f.layer == "answer" for row in f.rows]
    assert any(getattr(row, "stopped_early", None) == end.stopped_early for row in answer_rows)


# ----------------------------------------------------------------------------------------------
# The output schema


def test_the_output_retry_demo_re_asks_then_validates(tmp_path: Path) -> None:
    events = run_events("output-retry", tmp_path)
    calls = of(events, LlmCallEvent)
    assert [c.route for c in calls] == output_retry.EXPECTED["routes"]
    assert [c.iteration for c in calls] == [
        1,
        2,
        3,
    ]  # the re-ask advances the iteration like every loop branch
    assert [r.iteration for r in of(events, ToolResultEvent)] == [1]  # the re-ask ran no tool
    (retry,) = of(events, OutputRetryEvent)
    assert (retry.iteration, retry.attempt, retry.max_retries) == (2, 1, 2)
    assert retry.error.startswith("priority: Input should be a valid integer")
    assert retry.error in retry.reask and '"priority"' in retry.reask  # the error and the schema
    # The refused reply and the re-ask are what the model reads next; the re-ask is the loop's own.
    tail = [(m.role, m.content, m.from_loop) for m in calls[2].request.messages[-2:]]
    assert tail == [("assistant", output_retry.FIRST, None), ("user", retry.reask, True)]
    (end,) = of(events, TurnEndEvent)
    assert end.final_content == output_retry.ANSWER and end.stopped_early is None


def test_the_validated_answer_is_the_results_output() -> None:
    result, _ = run(
        output_retry.build_agent(),
        R.tool_call("get_ticket", {"ticket_id": "T"}),
        '```json\n{"category": "bug", "priority": 2}\n```',
    )
    assert result.output == output_retry.Triage(category="bug", priority=2)  # type: ignore[attr-defined]
    assert result.turns[0].output == result.output  # type: ignore[attr-defined]
    plain, _ = run(Agent("p"), "hello")
    assert plain.output is None  # type: ignore[attr-defined]


def test_past_its_retries_a_reply_that_still_fails_ends_the_run_failed() -> None:
    class Reply(BaseModel):
        answer: int

    agent = Agent("o").output_schema(Reply, max_retries=1)
    result, events = run(agent, "forty-two", '{"answer": "x"}', '{"answer": 42}')
    assert result.status == "failed"  # type: ignore[attr-defined]
    assert isinstance(result.exception, OutputValidationError)  # type: ignore[attr-defined]
    assert [c.route for c in of(events, LlmCallEvent)] == ["output-retry", None]
    assert len(of(events, OutputRetryEvent)) == 1
    (end,) = of(events, RunEndEvent)
    assert end.error is not None and end.error.type == "OutputValidationError"
    assert "after 1 re-ask(s): answer: Input should be a valid integer" in end.error.message
    assert of(events, TurnEndEvent) == []  # the turn has no answer
    none, events = run(Agent("o").output_schema(Reply, max_retries=0), "nope")
    assert none.status == "failed" and of(events, OutputRetryEvent) == []  # type: ignore[attr-defined]


def test_the_equality_law_holds_across_an_output_retry(tmp_path: Path) -> None:
    class Refund(BaseModel):
        order: str

    agent = Agent("o").tools(tool(lookup)).findings().output_schema(Refund)
    recorded = record(
        agent,
        "Refund A",
        scripted(R.tool_call("lookup", {"order_id": "A"}), "order A", '{"order": "order A"}'),
        tmp_path,
    )
    assert [c.route for c in of(recorded.events, LlmCallEvent)] == ["tool-calls", "output-retry", "final"]
    written = assert_equality_law(recorded)
    assessed = [f.iteration for f in written if f.layer == "answer"]
    assert assessed == [3]  # the refused reply is never assessed: only the answer that validated


# ----------------------------------------------------------------------------------------------
# The laws across output re-asks: judged once, every loop branch advances by one


class Ok(BaseModel):
    ok: bool


REPLY = st.sampled_from(["lookup", "bad", "good"])


@settings(max_examples=60, deadline=None)
@given(st.lists(REPLY, min_size=1, max_size=7), st.integers(min_value=0, max_value=3))
def test_each_batch_is_judged_once_across_output_re_asks(script: list[str], retries: int) -> None:
    replies: list[object] = []
    for step in script:
        if step == "lookup":
            replies.append(R.tool_call("lookup", {"order_id": "A"}))
        else:
            replies.append('{"ok": true}' if step == "good" else "not json")
    replies += ['{"ok": true}'] * 5
    sink = MemorySink()
    agent = Agent("p").tools(tool(lookup)).results_layer().output_schema(Ok, max_retries=retries)
    result = agent.run("Check A", provider=ScriptedProvider(replies), sink=sink)  # type: ignore[arg-type]
    events = list(sink.events)
    calls = of(events, LlmCallEvent)
    assert [c.iteration for c in calls] == list(range(1, len(calls) + 1))
    retried = of(events, OutputRetryEvent)
    assert len(retried) <= retries and [r.attempt for r in retried] == list(range(1, len(retried) + 1))
    assert result.status == ("completed" if calls[-1].route == "final" else "failed")
    dispatched = [c.iteration for c in calls if c.route == "tool-calls"]
    judged = [
        (f.iteration, row.batch_iteration)
        for f in of(events, FindingEvent)
        if f.layer == "results"
        for row in f.rows
        if isinstance(row, ResultRow)
    ]
    # Judged once: each dispatched batch at the loop head right after it, never again after a re-ask.
    assert sorted({b for _, b in judged}) == dispatched
    assert all(head == batch + 1 for head, batch in judged)


def test_the_table_priced_spend_is_replayed_as_the_loop_priced_it(tmp_path: Path) -> None:
    # A provider the price table knows ($3 / $15 per million at claude-3-5-sonnet): 20,000 input
    # tokens a call is $0.06, so a $0.10 budget lets the first batch run and cuts the second call.
    provider = ScriptedProvider(
        [
            costing(20_000, R.tool_call("lookup", {"order_id": "A"})),
            costing(20_000, R.tool_call("lookup", {"order_id": "B"})),
        ],
        name="anthropic",
        model="claude-3-5-sonnet-20241022",
    )
    agent = Agent("t").tools(tool(lookup)).findings().cost_budget(0.10)
    recorded = record(agent, "Check A", provider, tmp_path)
    (end,) = of(recorded.events, TurnEndEvent)
    assert end.stopped_early is not None
    assert (end.stopped_early.reason, end.stopped_early.spent_usd) == ("cost-budget", pytest.approx(0.12))
    assert_equality_law(recorded)

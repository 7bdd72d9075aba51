"""Before-tool middleware (``Agent.tool_middleware``), asserted on the trace each run wrote, read back.

The tool runs with the rewritten arguments and ``tool_result.args`` says so while the ``llm_call`` keeps
the model's request; a middleware that raises or returns nonsense makes the call a ``failure`` and the
loop goes on; with the honesty layers armed the inputs rows carry ``rewritten_to`` and the answer's
Assumed block lists the rewrite, and the findings written during the run equal those recomputed from
the saved trace (also over random runs with random chains).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.engine.agent import Agent
from fpdebug.engine.honesty.hooks import HonestyLayers
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tool_middleware import ToolCallContext
from fpdebug.engine.tools import tool
from fpdebug.engine.types import ToolCall
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import AnswerAssessmentRow, ArgumentRow, AssumedValue, BasisRow
from tests.conftest import T0
from tests.engine.test_honesty_loop import Recorded, assert_equality_law, record, scripted
from tests.engine.test_honesty_loop_units import CALLS, TURN, lookup, note

RAN: list[dict[str, object]] = []


def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order.

    Args:
        order_id: The order id.
    """
    return {"order": {"id": order_id, "total": 250.0}}


def refund(order_id: str, amount: float, reason: str = "") -> dict[str, object]:
    """Refund an order.

    Args:
        order_id: The order id.
        amount: How much.
        reason: Why.
    """
    RAN.append({"order_id": order_id, "amount": amount, "reason": reason})
    return {"refunded": amount, "order_id": order_id}


def cap_refund(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    """The app's rule: no refund above 100 without a manager."""
    if call.name == "refund" and float(call.args["amount"]) > 100:  # type: ignore[arg-type]
        return {**call.args, "amount": 100.0}
    return None


SCRIPT = (
    ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-7"}),
    ScriptedReply.tool_call("refund", {"order_id": "ORD-7", "amount": 250.0}),
    ScriptedReply.text("Refunded $100.00 on ORD-7."),
)


def shop(*middleware: Any) -> Agent:
    agent = Agent("shop").system_prompt("You run a shop.").tools(lookup_order, refund)
    return agent.tool_middleware(*middleware)


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    RAN.clear()


def refund_result(run: Recorded) -> Any:
    (result,) = [e for e in run.of("tool_result") if e.tool_name == "refund"]
    return result


def refund_request(run: Recorded) -> dict[str, object]:
    replies = [e.response for e in run.of("llm_call") if e.response is not None]
    (call,) = [c for reply in replies for c in reply.tool_calls if c.name == "refund"]
    return call.args


def amount_row(run: Recorded) -> ArgumentRow:
    (finding,) = [f for f in run.findings("inputs") if f.iteration == 2]
    rows = {row.path: row for row in finding.rows if isinstance(row, ArgumentRow)}
    assert set(rows) == {"$.order_id", "$.amount"}
    assert rows["$.order_id"].rewritten is None and rows["$.order_id"].rewritten_to is None
    return rows["$.amount"]


def assessment(run: Recorded) -> AnswerAssessmentRow:
    (finding,) = run.findings("answer")
    (row,) = finding.rows
    assert isinstance(row, AnswerAssessmentRow)
    return row


# ----------------------------------------------------------------------------------------------
# The call runs with the rewrite; the trace keeps both sides


def test_the_tool_runs_with_the_rewrite_and_the_llm_call_keeps_the_request(tmp_path: Path) -> None:
    run = record(shop(cap_refund), "Refund ORD-7", scripted(*SCRIPT), tmp_path)
    assert RAN == [{"order_id": "ORD-7", "amount": 100.0, "reason": ""}]
    assert refund_request(run) == {"order_id": "ORD-7", "amount": 250.0}
    assert refund_result(run).args == {"order_id": "ORD-7", "amount": 100.0}
    assert refund_result(run).status is None and refund_result(run).error is None
    # No layer armed: the chain changes what ran, and nothing else is recorded.
    assert run.start().honesty is None and run.of("finding") == []
    # The model reads the result of what ran.
    (last,) = [e for e in run.of("llm_call") if e.iteration == 3]
    assert json.loads(last.request.messages[-1].content) == {"refunded": 100.0, "order_id": "ORD-7"}


def test_a_middleware_that_changes_nothing_leaves_the_trace_byte_for_byte(tmp_path: Path) -> None:
    plain = record(shop(), "Refund ORD-7", scripted(*SCRIPT), tmp_path, name="plain")
    seen: list[str] = []

    def watch(call: ToolCall, context: ToolCallContext) -> None:
        seen.append(call.name)

    watched = record(shop(watch), "Refund ORD-7", scripted(*SCRIPT), tmp_path, name="watched")
    assert seen == ["lookup_order", "refund"]
    assert watched.path.read_bytes() == plain.path.read_bytes()


def test_the_chain_runs_in_order_and_each_sees_what_the_previous_left(tmp_path: Path) -> None:
    seen: list[tuple[object, object, str, int, int, str]] = []

    def audit(call: ToolCall, context: ToolCallContext) -> ToolCall | None:
        if call.name != "refund":
            return None
        seen.append(
            (
                call.args["amount"],
                context.requested["amount"],
                context.tool.name,
                context.turn,
                context.iteration,
                context.run_id,
            )
        )
        return ToolCall(call.id, call.name, {**call.args, "reason": "capped by policy"})

    run = record(shop(cap_refund, audit), "Refund ORD-7", scripted(*SCRIPT), tmp_path)
    assert seen == [(100.0, 250.0, "refund", 1, 2, "r1")]
    assert refund_result(run).args == {"order_id": "ORD-7", "amount": 100.0, "reason": "capped by policy"}
    assert RAN == [{"order_id": "ORD-7", "amount": 100.0, "reason": "capped by policy"}]


def test_the_chain_skips_read_skill_unknown_tools_and_calls_route_will_not_run(tmp_path: Path) -> None:
    seen: list[str] = []

    def watch(call: ToolCall, context: ToolCallContext) -> None:
        seen.append(call.name)

    script = scripted(
        ScriptedReply.batch(ScriptedCall("read_skill", {"id": "faq"}), ScriptedCall("nope", {"x": 1})),
        ScriptedReply.tool_call("refund", {"order_id": "ORD-7", "amount": 250.0}),
    )
    agent = shop(watch).skills(define_skill("faq", body="Answer FAQs.", description="FAQ")).max_iterations(2)
    run = record(agent, "Refund ORD-7", script, tmp_path)
    # read_skill is the engine's own, `nope` names no tool, and the refund came at the limit: no tool ran.
    assert seen == []
    assert [e.tool_name for e in run.of("tool_result")] == ["read_skill", "nope"] and RAN == []
    (turn_end,) = run.of("turn_end")
    assert turn_end.stopped_early is not None and turn_end.stopped_early.pending_tool_calls == 1


# ----------------------------------------------------------------------------------------------
# A middleware that fails fails the call, not the run


def boom(call: ToolCall, context: ToolCallContext) -> None:
    if call.name == "refund":
        raise ValueError("policy service down")


@pytest.mark.parametrize(
    ("middleware", "message"),
    [
        (boom, "only_refunds raised ValueError: policy service down"),
        (lambda call, context: 42, "returned int; expected a ToolCall, a mapping of arguments or None"),
        (
            lambda call, context: ToolCall(call.id, "lookup_order", {"order_id": "ORD-7"}),
            "cannot change the call's id or tool",
        ),
        (lambda call, context: {**call.args, "amount": {1, 2}}, "not JSON data"),
        (lambda call, context: {**call.args, 1: 2}, "not JSON data"),
    ],
)
def test_a_failing_middleware_makes_the_call_a_failure_and_the_loop_goes_on(
    middleware: Any, message: str, tmp_path: Path
) -> None:
    def only_refunds(call: ToolCall, context: ToolCallContext) -> Any:
        return middleware(call, context) if call.name == "refund" else None

    run = record(shop(only_refunds).findings(), "Refund ORD-7", scripted(*SCRIPT), tmp_path)
    assert RAN == []  # the tool never ran
    result = refund_result(run)
    assert result.status == "failure" and result.error.type == "ToolMiddlewareError"
    assert message in result.error.message
    assert result.args == {"order_id": "ORD-7", "amount": 250.0}  # nothing was rewritten
    assert result.result.startswith("Error: refund failed: ToolMiddlewareError: ")
    assert run.result.status == "completed" and len(run.of("llm_call")) == 3
    row = amount_row(run)
    assert (row.value, row.rewritten, row.rewritten_to) == (250.0, None, None)
    assert assessment(run).assumed == []
    assert_equality_law(run)


def test_a_middleware_that_is_not_callable_is_a_definition_error() -> None:
    base = shop()
    with pytest.raises(DefinitionError, match="tool_middleware\\(\\) takes functions"):
        base.tool_middleware("cap")  # type: ignore[arg-type]
    assert base.tool_middleware(cap_refund).spec.tool_middleware == (cap_refund,)
    assert base.spec.tool_middleware == ()  # copy-on-write


# ----------------------------------------------------------------------------------------------
# The honesty layers see the rewrite: argument rows, the Assumed block, the equality law


def test_the_rewrite_reaches_the_argument_row_and_the_assumed_block(tmp_path: Path) -> None:
    run = record(shop(cap_refund).findings(), "Refund ORD-7", scripted(*SCRIPT), tmp_path)
    honesty = run.start().honesty
    assert honesty is not None and honesty.tool_middleware is True
    row = amount_row(run)
    # Where the model got 250 from, and that the call ran with 100 instead.
    assert (row.tool_call_id, row.value, row.source, row.source_tool_call_id, row.source_path) == (
        "call_2",
        250.0,
        "tool-result",
        "call_1",
        "$.order.total",
    )
    assert (row.rewritten, row.rewritten_to) == (True, 100.0)
    answer = assessment(run)
    assert answer.reads[-3:] == ["coverageDeclared", "argumentAsk", "middlewareDecisions"]
    assert answer.assumed == [
        AssumedValue(tool_call_id="call_2", path="$.amount", original=250.0, rewritten_to=100.0)
    ]
    stated = {value.text: value for value in answer.values}
    # The answer states what ran: the refund's own result holds it.
    assert stated["$100.00"].supported and "tool:call_2" in stated["$100.00"].supported_by
    assert_equality_law(run)


def test_without_the_middleware_the_same_answer_is_unsupported_and_nothing_is_assumed(tmp_path: Path) -> None:
    run = record(shop().findings(), "Refund ORD-7", scripted(*SCRIPT), tmp_path)
    honesty = run.start().honesty
    assert honesty is not None and honesty.tool_middleware is False
    row = amount_row(run)
    assert (row.value, row.rewritten, row.rewritten_to) == (250.0, None, None)
    answer = assessment(run)
    assert "middlewareDecisions" not in answer.reads and answer.assumed == []
    assert not {value.text: value for value in answer.values}["$100.00"].supported
    assert_equality_law(run)


def drop_reason(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    if call.name != "refund":
        return None
    return {key: value for key, value in call.args.items() if key != "reason"}


def test_a_removed_argument_and_hidden_arguments_in_the_assumed_block(tmp_path: Path) -> None:
    script = (
        SCRIPT[0],
        ScriptedReply.tool_call("refund", {"order_id": "ORD-7", "amount": 250.0, "reason": "angry customer"}),
        SCRIPT[2],
    )
    run = record(shop(drop_reason, cap_refund).findings(), "Refund ORD-7", scripted(*script), tmp_path)
    assert refund_result(run).args == {"order_id": "ORD-7", "amount": 100.0}
    assert assessment(run).assumed == [
        AssumedValue(tool_call_id="call_2", path="$.amount", original=250.0, rewritten_to=100.0),
        AssumedValue(tool_call_id="call_2", path="$.reason", original="angry customer", removed=True),
    ]
    assert_equality_law(run)

    hiding = (
        Agent("shop")
        .tools(lookup_order, tool(refund, hides_arguments=True))
        .tool_middleware(drop_reason, cap_refund)
        .findings()
    )
    run = record(hiding, "Refund ORD-7", scripted(*script), tmp_path, name="hidden")
    (finding,) = [f for f in run.findings("inputs") if f.iteration == 2]
    rows = {r.path: r for r in finding.rows if isinstance(r, ArgumentRow)}
    assert all(r.hidden and r.value is None and r.rewritten_to is None for r in rows.values())
    assert (rows["$.amount"].rewritten, rows["$.reason"].rewritten, rows["$.order_id"].rewritten) == (
        True,
        True,
        None,
    )
    assert assessment(run).assumed == [
        AssumedValue(tool_call_id="call_2", path="$.amount", hidden=True),
        AssumedValue(tool_call_id="call_2", path="$.reason", removed=True, hidden=True),
    ]
    assert_equality_law(run)


def test_the_middleware_sees_the_call_without_its_from_citation(tmp_path: Path) -> None:
    seen: list[dict[str, object]] = []

    def watch(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
        if call.name == "refund":
            seen.append(dict(call.args))
            seen.append(dict(context.requested))
        return cap_refund(call, context)

    script = (
        SCRIPT[0],
        ScriptedReply.tool_call("refund", {"order_id": "ORD-7", "amount": 250.0, "_from": "tool:call_1"}),
        SCRIPT[2],
    )
    run = record(shop(watch).findings(argument_sources=True), "Refund ORD-7", scripted(*script), tmp_path)
    assert seen == [{"order_id": "ORD-7", "amount": 250.0}] * 2
    assert refund_request(run)["_from"] == "tool:call_1"  # the llm_call keeps what the model wrote
    assert refund_result(run).args == {"order_id": "ORD-7", "amount": 100.0}
    (finding,) = [f for f in run.findings("inputs") if f.iteration == 2]
    basis = [r for r in finding.rows if isinstance(r, BasisRow)]
    assert [(b.tool_call_id, b.dropped_from) for b in basis] == [("call_2", 0)]
    assert (amount_row(run).rewritten_to, amount_row(run).source) == (100.0, "tool-result")
    assert_equality_law(run)


# ----------------------------------------------------------------------------------------------
# The equality law over random runs with random chains


def cap_note(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    amount = call.args.get("amount")
    if call.name == "note" and isinstance(amount, float) and amount > 100:
        return {**call.args, "amount": 100.0}
    return None


def drop_amount(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    return {k: v for k, v in call.args.items() if k != "amount"} if call.name == "note" else None


def add_amount(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    return {**call.args, "amount": 3.0} if call.name == "note" and "amount" not in call.args else None


def upper_key(call: ToolCall, context: ToolCallContext) -> Mapping[str, object] | None:
    return {"key": str(call.args["key"]).upper()} if call.name == "lookup" else None


def refuse_hello(call: ToolCall, context: ToolCallContext) -> None:
    if "hello" in call.args.values():
        raise RuntimeError("no greetings")


MIDDLEWARE = st.lists(
    st.sampled_from([cap_note, drop_amount, add_amount, upper_key, refuse_hello]), max_size=3
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(TURN, min_size=1, max_size=2),
    chain=MIDDLEWARE,
    hide=st.booleans(),
    sources=st.booleans(),
    limit=st.integers(min_value=1, max_value=4),
    extra=CALLS,
)
def test_findings_with_any_chain_equal_those_recomputed_from_the_saved_trace(
    turns: list[tuple[list[list[ScriptedCall]], str]],
    chain: list[Any],
    hide: bool,
    sources: bool,
    limit: int,
    extra: list[ScriptedCall],
) -> None:
    agent = (
        Agent("prop")
        .tools(tool(lookup, display_name="Lookup"), tool(note, hides_arguments=hide))
        .max_iterations(limit)
        .tool_middleware(*chain)
        .honesty(
            HonestyLayers().arm(inputs=True, results=True, answer=True, argument_sources=sources or None)
        )
    )
    script: list[ScriptedReply] = []
    for batches, answer in turns:
        script += [ScriptedReply.batch(*batch) for batch in [extra, *batches][: limit - 1]]
        script.append(ScriptedReply.text(answer))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.jsonl"
        clock = FixedClock(T0)
        with TraceFileSink.create(path, clock=clock, durability="none") as sink:
            messages = [f"turn {i}: ORD-1" for i in range(len(turns))]
            result = agent.run(
                messages, provider=ScriptedProvider(script), sink=sink, clock=clock, run_id="p"
            )
        with TraceReader(path) as reader:
            events = [reader[i] for i in range(1, len(reader))]
    assert result.status == "completed"
    written = recorded_findings(events)  # type: ignore[arg-type]
    assert written == recompute_findings(events)  # type: ignore[arg-type]
    honesty = events[0].honesty  # type: ignore[union-attr]
    assert honesty is not None and honesty.tool_middleware is bool(chain)
    rewritten = [row for f in written for row in f.rows if isinstance(row, ArgumentRow) and row.rewritten]
    if not chain:
        assert rewritten == []

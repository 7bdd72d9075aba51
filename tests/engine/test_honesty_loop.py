"""The honesty layers wired into runs (docs/honesty.md §12), asserted on the trace each run wrote, read back.

Arming on the builder and what ``run_start`` records; the inputs layer after each LLM call (rows,
the ``_from`` basis stripped before the call runs, refused citations, hidden arguments, one write
per visit after the ``llm_call``); the results layer at the loop head (each batch once, coverage);
the answer layer on the final branch; an unarmed agent's trace unchanged byte for byte; and the
equality law: the findings written during a run are those recomputed from its saved trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fpdebug.engine.agent import Agent, RunResult
from fpdebug.engine.effects import envelope
from fpdebug.engine.honesty import Finding
from fpdebug.engine.honesty.hooks import HonestyLayers
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.base import Provider
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    BasisRow,
    ExternalGround,
    FindingEvent,
    HonestyArms,
    ResultRow,
    RunStartEvent,
    TraceEvent,
)
from tests.conftest import T0

ORDER = {"order": {"id": "ORD-1234", "total": 1250.0, "items": [{"sku": "SKU-77", "qty": 2}]}}


def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order.

    Args:
        order_id: The order id.
    """
    return {**ORDER, "asked": order_id}


def refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: The order id.
        amount: How much.
    """
    return f"refunded {amount} on {order_id}"


def set_pin(pin: str) -> str:
    """Set the card PIN.

    Args:
        pin: The new PIN.
    """
    return "pin set"


@dataclass
class Recorded:
    """A run recorded into a trace file and read back."""

    path: Path
    result: RunResult
    events: list[TraceEvent]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]

    def findings(self, layer: str) -> list[FindingEvent]:
        return [e for e in self.of("finding") if e.layer == layer]

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def start(self) -> RunStartEvent:
        (start,) = self.of("run_start")
        return start  # type: ignore[no-any-return]


def record(
    agent: Agent, messages: str | Sequence[str], provider: Provider, tmp_path: Path, *, name: str = "run"
) -> Recorded:
    path = tmp_path / f"{name}.jsonl"
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run(messages, provider=provider, sink=sink, clock=clock, run_id="r1")
    with TraceReader(path) as reader:
        assert reader.problems() == []
        events: list[TraceEvent] = [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]
    return Recorded(path, result, events)


def scripted(*replies: object) -> ScriptedProvider:
    return ScriptedProvider(list(replies))  # type: ignore[arg-type]


def assert_equality_law(run: Recorded) -> list[Finding]:
    """The findings written during the run are exactly those recomputed from the saved trace."""
    written = recorded_findings(run.events)
    assert written == recompute_findings(run.events)
    return written


def rows_of(event: FindingEvent) -> list[Any]:
    return list(event.rows)


REFUND_SCRIPT = (
    ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}),
    ScriptedReply.tool_call("refund", {"order_id": "ORD-1234", "amount": 1250.0}),
    ScriptedReply.text("Refunded $1,250.00 on ORD-1234; the fee was $40.00."),
)


def refund_agent() -> Agent:
    return Agent("shop").system_prompt("You run a shop.").tools(lookup_order, refund)


# ----------------------------------------------------------------------------------------------
# Unarmed agents write the trace they always did


def test_an_agent_that_arms_no_layer_writes_byte_for_byte_the_plain_trace(tmp_path: Path) -> None:
    plain = record(refund_agent(), "Refund ORD-1234", scripted(*REFUND_SCRIPT), tmp_path, name="plain")
    declared = (
        Agent("shop")
        .system_prompt("You run a shop.")
        .tools(tool(lookup_order, display_name="Order lookup"), tool(refund, hides_arguments=True))
    )
    armed_off = [
        declared,  # honesty declarations on tools, no layer
        refund_agent().honesty(HonestyLayers()),  # hooks installed, no layer armed
        refund_agent().findings().honesty(None),  # armed, then disarmed
    ]
    for index, agent in enumerate(armed_off):
        run = record(agent, "Refund ORD-1234", scripted(*REFUND_SCRIPT), tmp_path, name=f"off{index}")
        assert run.path.read_bytes() == plain.path.read_bytes()
    assert "finding" not in plain.kinds() and plain.start().honesty is None
    assert recompute_findings(plain.events) == []


def test_arming_returns_a_new_agent_and_leaves_the_original_unarmed() -> None:
    base = refund_agent()
    armed = base.findings()
    assert base.spec.honesty is None
    assert isinstance(armed.spec.honesty, HonestyLayers) and armed.spec.honesty.armed


# ----------------------------------------------------------------------------------------------
# Arming on the builder and what run_start records


def test_findings_arms_all_three_layers_and_run_start_records_the_arms(tmp_path: Path) -> None:
    agent = (
        Agent("shop")
        .tools(tool(lookup_order, display_name="Order lookup"), tool(set_pin, hides_arguments=True), refund)
        .findings(
            external_grounds={"balance": 1250.0},
            declared_sources={"price-list": {"SKU-77": 19.5}},
            standing_line="unsupported",
        )
    )
    run = record(agent, "hi", scripted("hello"), tmp_path)
    assert run.start().honesty == HonestyArms(
        inputs=True,
        results=True,
        answer=True,
        argument_sources=True,
        hidden_argument_tools=["set_pin"],
        external_grounds=[ExternalGround(label="balance", value=1250.0)],
        declared_sources=[{"name": "price-list", "content": {"SKU-77": 19.5}}],  # type: ignore[list-item]
        standing_line="unsupported",
        display_names={"lookup_order": "Order lookup"},
    )


def test_the_arming_methods_compose_layer_by_layer(tmp_path: Path) -> None:
    agent = refund_agent().inputs_layer().answer_layer(standing_line=True)
    arms = record(agent, "hi", scripted("hello"), tmp_path).start().honesty
    assert arms is not None
    assert (arms.inputs, arms.results, arms.answer, arms.argument_sources, arms.standing_line) == (
        True,
        False,
        True,
        False,
        "always",
    )
    agent = agent.results_layer().inputs_layer(argument_sources=True).answer_layer(standing_line=False)
    arms = record(agent, "hi", scripted("hello"), tmp_path, name="more").start().honesty
    assert arms is not None
    assert (arms.inputs, arms.results, arms.answer, arms.argument_sources, arms.standing_line) == (
        True,
        True,
        True,
        True,
        None,
    )


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        (lambda a: a.findings(external_grounds={"": 1}), "non-empty string"),
        (lambda a: a.findings(external_grounds={"now": {1, 2}}), "must be JSON data"),
        (lambda a: a.findings(external_grounds={"x": float("nan")}), "must be JSON data"),
        (lambda a: a.inputs_layer(declared_sources="a text"), "mapping of label to value"),
        (lambda a: a.findings(argument_sources=False, external_grounds={"x": 1}), "argument_sources=True"),
        (lambda a: a.answer_layer(standing_line="sometimes"), "standing_line must be"),
        (lambda a: a.inputs_layer(argument_sources="yes"), "argument_sources must be a bool"),
        (lambda a: a.honesty(object()).findings(), "custom honesty hooks"),
    ],
)
def test_a_bad_arming_is_a_clear_definition_error(arm: Any, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        arm(refund_agent())


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda: tool(refund, display_name="  "), "display_name must be a non-empty string"),
        (lambda: tool(refund, coverage=5), "coverage must be a text or a function"),
        (lambda: tool(refund, hides_arguments="yes"), "hides_arguments must be a bool"),
    ],
)
def test_a_bad_tool_declaration_is_a_clear_definition_error(declare: Any, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        declare()


def test_tool_applies_honesty_declarations_to_a_tool_it_is_given() -> None:
    plain = tool(refund)
    named = tool(plain, display_name="Refunds", hides_arguments=True)
    assert (named.display_name, named.hides_arguments, named.handler) == ("Refunds", True, plain.handler)
    assert tool(plain) is plain


# ----------------------------------------------------------------------------------------------
# Inputs layer


def test_argument_rows_trace_each_value_to_the_user_a_previous_result_or_nowhere(tmp_path: Path) -> None:
    run = record(refund_agent().inputs_layer(), "Please refund ORD-1234", scripted(*REFUND_SCRIPT), tmp_path)
    first, second = run.findings("inputs")
    assert (first.turn, first.iteration, second.iteration) == (1, 1, 2)
    (asked,) = rows_of(first)
    assert (asked.tool_call_id, asked.path, asked.value, asked.source, asked.source_text) == (
        "call_1",
        "$.order_id",
        "ORD-1234",
        "user",
        "ORD-1234",
    )
    order_id, amount = rows_of(second)
    # Newest first: the lookup's result holds both, so it wins over the user's message.
    assert (
        order_id.source,
        order_id.source_tool_call_id,
        order_id.source_tool_name,
        order_id.source_path,
        order_id.source_iteration,
    ) == ("tool-result", "call_1", "lookup_order", "$.order.id", 1)
    assert (amount.path, amount.value, amount.source_path) == ("$.amount", 1250.0, "$.order.total")
    assert not any(isinstance(row, BasisRow) for row in rows_of(second))
    assert_equality_law(run)


def test_a_value_no_source_holds_is_from_nowhere_and_a_final_reply_files_no_inputs_row(
    tmp_path: Path,
) -> None:
    provider = scripted(ScriptedReply.tool_call("refund", {"order_id": "ORD-9", "amount": 75.0}), "done")
    run = record(refund_agent().inputs_layer(), "Refund my last order", provider, tmp_path)
    (visit,) = run.findings("inputs")  # the final reply asked for no tool: no visit is written
    assert [(row.path, row.source) for row in rows_of(visit)] == [
        ("$.order_id", "nowhere"),
        ("$.amount", "nowhere"),
    ]
    assert_equality_law(run)


def test_one_write_per_visit_right_after_its_llm_call_and_before_any_tool_runs(tmp_path: Path) -> None:
    provider = scripted(
        ScriptedReply.batch(
            ScriptedCall("lookup_order", {"order_id": "ORD-1234"}),
            ScriptedCall("lookup_order", {"order_id": "ORD-5"}),
        ),
        "ok",
    )
    run = record(refund_agent().inputs_layer(), "Orders ORD-1234 and ORD-5", provider, tmp_path)
    (visit,) = run.findings("inputs")
    assert [(row.tool_call_id, row.value) for row in rows_of(visit)] == [
        ("call_1", "ORD-1234"),
        ("call_2", "ORD-5"),
    ]
    kinds = run.kinds()
    at = kinds.index("finding")
    assert kinds[at - 1 : at + 3] == ["llm_call", "finding", "tool_result", "tool_result"]


def test_external_grounds_and_declared_sources_back_arguments_when_argument_sources_are_armed(
    tmp_path: Path,
) -> None:
    def order_item(sku: str, price: float, account: str) -> str:
        """Order an item.

        Args:
            sku: The item.
            price: Its price.
            account: The account to bill.
        """
        return "ordered"

    provider = scripted(
        ScriptedReply.tool_call("order_item", {"sku": "SKU-77", "price": 19.5, "account": "ACC-3"}), "ok"
    )
    agent = (
        Agent("a")
        .tools(order_item)
        .inputs_layer(
            external_grounds={"signed-in account": "ACC-3"}, declared_sources={"prices": {"SKU-77": 19.5}}
        )
    )
    run = record(agent, "Order one SKU-77", provider, tmp_path)
    sku, price, account = rows_of(run.findings("inputs")[0])
    assert (sku.source, price.source, price.label, price.source_path) == (
        "user",
        "declared",
        "prices",
        '$["SKU-77"]',
    )
    assert (account.source, account.label) == ("external", "signed-in account")
    assert_equality_law(run)


def test_from_citations_are_verified_recorded_and_stripped_before_the_call_runs(tmp_path: Path) -> None:
    cite = {
        "order_id": "ORD-1234",
        "amount": 1250.0,
        "_from": [
            {"arg": "$.order_id", "source": "tool:call_1", "path": "$.order.id"},
            {"arg": "$.amount", "source": "user"},  # the user never said 1250: refused
            {"source": "tool:call_1", "bogus": True},  # not well formed: dropped
        ],
    }
    provider = scripted(
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}),
        ScriptedReply.tool_call("refund", cite),
        "Refunded.",
    )
    run = record(refund_agent().inputs_layer(argument_sources=True), "Refund ORD-1234", provider, tmp_path)
    basis, order_id, amount = rows_of(run.findings("inputs")[1])
    assert isinstance(basis, BasisRow)
    assert (basis.tool_call_id, basis.from_entries, basis.dropped_from) == (
        "call_2",
        ["$.order_id <- tool:call_1 at $.order.id"],
        2,
    )
    assert (order_id.source, order_id.source_path, order_id.refused_reference) == (
        "tool-result",
        "$.order.id",
        None,
    )
    assert (amount.refused_reference, amount.source, amount.source_path) == (
        "user",
        "tool-result",
        "$.order.total",
    )
    # The model's reply keeps what it wrote; Route ran the call without "_from" (the tool accepts
    # no such argument, so it would otherwise have been refused as invalid).
    second_call = run.of("llm_call")[1]
    assert "_from" in second_call.response.tool_calls[0].args
    refunded = run.of("tool_result")[1]
    assert refunded.args == {"order_id": "ORD-1234", "amount": 1250.0} and refunded.status is None
    # The conversation the model reads next shows the call as it ran.
    third_request = run.of("llm_call")[2].request
    assistant = [m for m in third_request.messages if m.role == "assistant"][-1]
    assert assistant.tool_calls is not None and "_from" not in assistant.tool_calls[0].args
    assert_equality_law(run)


def test_without_argument_sources_from_is_an_ordinary_argument(tmp_path: Path) -> None:
    provider = scripted(
        ScriptedReply.tool_call("refund", {"order_id": "O-1", "amount": 1.0, "_from": "user"}), "ok"
    )
    run = record(refund_agent().inputs_layer(), "Refund O-1", provider, tmp_path)
    rows = rows_of(run.findings("inputs")[0])
    assert [row.path for row in rows] == ["$.order_id", "$.amount", "$._from"]
    assert run.of("tool_result")[0].status == "invalid"  # the tool takes no "_from"


def test_while_a_hiding_tool_is_in_reach_no_row_shows_a_value_the_model_wrote(tmp_path: Path) -> None:
    agent = (
        Agent("bank")
        .tools(lookup_order, tool(set_pin, hides_arguments=True))
        .inputs_layer(argument_sources=True)
    )
    provider = scripted(
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}),
        ScriptedReply.tool_call(
            "set_pin", {"pin": "4821", "_from": [{"arg": "$.pin", "source": "user", "quote": "4821"}]}
        ),
        "done",
    )
    run = record(agent, "Look up ORD-1234, then set my PIN to 4821", provider, tmp_path)
    (order,) = rows_of(run.findings("inputs")[0])
    basis, pin = rows_of(run.findings("inputs")[1])
    for row in (order, pin):  # the hiding tool is offered on both calls
        assert (row.value, row.hidden, row.source_text) == (None, True, None)
    assert (order.source, pin.source) == ("user", "user")  # where it came from is still shown
    assert basis.from_entries == ["$.pin <- user"]  # the quote is withheld too
    assert "4821" not in run.findings("inputs")[1].model_dump_json()
    # Hiding governs finding rows only: the call record and the tool result keep the arguments.
    assert run.of("tool_result")[1].args == {"pin": "4821"}
    assert_equality_law(run)


# ----------------------------------------------------------------------------------------------
# Results layer


def test_each_batch_is_judged_once_at_the_next_loop_head_with_status_and_coverage(tmp_path: Path) -> None:
    def search(query: str) -> dict[str, object]:
        """Search orders.

        Args:
            query: What to look for.
        """
        return envelope({"hits": ["ORD-1", "ORD-2"], "total": 40}, status="partial")

    def first_hits(args: object, result: Any) -> str:
        return f"first {len(result['hits'])} of {result['total']}"

    agent = (
        Agent("a")
        .tools(tool(search, coverage=first_hits), tool(refund, coverage="refunds of this week only"))
        .results_layer()
    )
    provider = scripted(
        ScriptedReply.batch(
            ScriptedCall("search", {"query": "late"}),
            ScriptedCall("refund", {"order_id": "ORD-1", "amount": 5.0}),
        ),
        ScriptedReply.tool_call("refund", {"order_id": "ORD-2", "amount": 7.0}),
        "done",
    )
    run = record(agent, "late orders", provider, tmp_path)
    first, second = run.findings("results")
    assert (first.iteration, second.iteration) == (2, 3)
    searched, refunded = rows_of(first)
    assert (searched.batch_iteration, searched.tool_call_id, searched.status, searched.coverage) == (
        1,
        "call_1",
        "partial",
        "first 2 of 40",
    )
    assert searched.values == ["ORD-1", "ORD-2", "40"]
    assert (refunded.tool_call_id, refunded.coverage, refunded.values) == (
        "call_2",
        "refunds of this week only",
        ["5.0", "ORD-1"],
    )
    assert [row.tool_call_id for row in rows_of(second)] == ["call_3"]
    # Written at the loop head: the first event of the iteration, before its pass.
    for visit in (first, second):
        of_iteration = [e.kind for e in run.events if e.turn == 1 and e.iteration == visit.iteration]
        assert of_iteration[0] == "finding"
    assert [e.coverage for e in run.of("tool_result")] == [
        "first 2 of 40",
        "refunds of this week only",
        "refunds of this week only",
    ]
    assert_equality_law(run)


def test_a_coverage_declaration_that_raises_is_recorded_as_unknown(tmp_path: Path) -> None:
    def broken(args: object, result: object) -> str:
        raise KeyError("total")

    agent = Agent("a").tools(tool(lookup_order, coverage=broken)).results_layer()
    run = record(
        agent, "x", scripted(ScriptedReply.tool_call("lookup_order", {"order_id": "O"}), "ok"), tmp_path
    )
    (result,) = run.of("tool_result")
    assert result.coverage == "unknown (the coverage declaration raised KeyError: 'total')"
    assert rows_of(run.findings("results")[0])[0].coverage == result.coverage


def test_batches_are_judged_per_run_never_by_call_id(tmp_path: Path) -> None:
    # The provider reuses the id "c1" in every turn: each batch is still judged exactly once.
    provider = scripted(
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}, id="c1"),
        "first",
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-5"}, id="c1"),
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-6"}, id="c1"),
        "second",
    )
    run = record(refund_agent().results_layer(), ["one", "two"], provider, tmp_path)
    judged = [
        (e.turn, e.iteration, row.batch_iteration, row.tool_call_id)
        for e in run.findings("results")
        for row in rows_of(e)
    ]
    assert judged == [(1, 2, 1, "c1"), (2, 2, 1, "c1"), (2, 3, 2, "c1")]
    assert_equality_law(run)


# ----------------------------------------------------------------------------------------------
# Answer layer


def test_the_answer_is_assessed_once_before_turn_end_with_supported_and_unsupported_values(
    tmp_path: Path,
) -> None:
    agent = (
        Agent("shop")
        .tools(tool(lookup_order, display_name="Order lookup"), refund)
        .answer_layer(standing_line=True)
    )
    run = record(agent, "Refund ORD-1234", scripted(*REFUND_SCRIPT), tmp_path)
    (visit,) = run.findings("answer")
    kinds = run.kinds()
    assert kinds[kinds.index("turn_end") - 1] == "finding" and visit.iteration == 3
    (row,) = rows_of(visit)
    assert isinstance(row, AnswerAssessmentRow)
    # docs/honesty.md §12.4's example: a tool surface and no other arm.
    assert row.reads == [
        "history",
        "turnNumber",
        "pausedToolCallId",
        "findingsLedger",
        "stoppedEarly",
        "coverageDeclared",
    ]
    stated = {v.text: (v.supported, v.supported_by) for v in row.values}
    assert stated == {
        "$1,250.00": (True, ["tool:call_1", "tool:call_2"]),
        "ORD-1234": (True, ["tool:call_1", "tool:call_2", "user"]),
        "$40.00": (False, []),
    }
    answer = run.of("turn_end")[0].final_content
    assert all(answer[v.start : v.end] == v.text for v in row.values)
    assert row.standing_line == (
        "2 of 3 values in this answer are backed by tool results (Order lookup, refund); "
        "1 ($40.00) appears in no source."
    )
    assert row.stopped_early is None and row.assumed == []
    assert_equality_law(run)


def test_the_fold_reads_only_keys_the_agents_arms_can_write(tmp_path: Path) -> None:
    bare = record(Agent("chat").answer_layer(), "hi", scripted("Hello on 2026-01-05."), tmp_path, name="b")
    (row,) = rows_of(bare.findings("answer")[0])
    assert row.reads == ["history", "turnNumber", "pausedToolCallId", "findingsLedger", "stoppedEarly"]
    assert [(v.text, v.supported) for v in row.values] == [("2026-01-05", False)]
    skills = Agent("s").skills(define_skill("faq", body="Answer FAQs.", description="FAQ")).findings()
    run = record(skills, "hi", scripted("Hello."), tmp_path, name="s")
    (row,) = rows_of(run.findings("answer")[0])
    assert row.reads == [
        "history",
        "turnNumber",
        "pausedToolCallId",
        "findingsLedger",
        "stoppedEarly",
        "coverageDeclared",
        "argumentAsk",  # .findings() arms the inputs layer, which writes it
    ]
    assert row.values == [] and row.standing_line is None


def test_a_turn_cut_short_is_in_the_assessment(tmp_path: Path) -> None:
    provider = scripted(
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}),
        ScriptedReply.tool_call(
            "refund", {"order_id": "ORD-1234", "amount": 1250.0}, content="About to refund $1,250.00."
        ),
    )
    run = record(
        refund_agent().max_iterations(2).findings(standing_line="unsupported"),
        "Refund ORD-1234",
        provider,
        tmp_path,
    )
    (end,) = run.of("turn_end")
    (row,) = rows_of(run.findings("answer")[0])
    assert end.stopped_early is not None and row.stopped_early == end.stopped_early
    assert [(v.text, v.supported) for v in row.values] == [("$1,250.00", True)]
    assert row.standing_line is None  # "unsupported" mode, and every value is supported
    # The inputs layer never judges a call Route will not run: only the first call has rows.
    assert [f.iteration for f in run.findings("inputs")] == [1]
    assert {row.tool_call_id for row in rows_of(run.findings("inputs")[0])} == {"call_1"}
    assert_equality_law(run)


def test_a_json_answer_gets_no_standing_line(tmp_path: Path) -> None:
    run = record(refund_agent().answer_layer(standing_line=True), "x", scripted('{"total": 12}'), tmp_path)
    (row,) = rows_of(run.findings("answer")[0])
    assert row.standing_line is None and "12" in [v.text for v in row.values]


def test_each_run_of_a_shared_agent_keeps_its_own_ledger(tmp_path: Path) -> None:
    agent = refund_agent().findings()

    def provider(answer: str) -> ScriptedProvider:
        return scripted(ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}), answer)

    first = record(agent, "x", provider("Total $1,250.00."), tmp_path, name="one")
    second = record(agent, "x", scripted("Total $1,250.00."), tmp_path, name="two")
    assert rows_of(first.findings("answer")[0])[0].values[0].supported
    # The second run never read the first run's lookup: the same amount is unsupported there.
    assert not rows_of(second.findings("answer")[0])[0].values[0].supported
    assert second.findings("results") == []


def test_a_multi_turn_run_keeps_one_ledger_across_turns(tmp_path: Path) -> None:
    provider = scripted(
        ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-1234"}),
        "It costs $1,250.00.",
        ScriptedReply.tool_call("refund", {"order_id": "ORD-1234", "amount": 1250.0}),
        "Refunded $1,250.00.",
    )
    run = record(refund_agent().findings(), ["What does ORD-1234 cost?", "Refund it."], provider, tmp_path)
    refund_rows = rows_of(run.findings("inputs")[1])
    assert run.findings("inputs")[1].turn == 2
    # Turn 2's call is traced to turn 1's lookup (iteration 1 of turn 1).
    assert [(r.path, r.source_tool_call_id, r.source_iteration) for r in refund_rows] == [
        ("$.order_id", "call_1", 1),
        ("$.amount", "call_1", 1),
    ]
    answers = [rows_of(e)[0] for e in run.findings("answer")]
    assert [(e.turn, e.iteration) for e in run.findings("answer")] == [(1, 2), (2, 2)]
    assert all(v.supported for row in answers for v in row.values)
    assert all(isinstance(r, ResultRow) for e in run.findings("results") for r in rows_of(e))
    assert all(isinstance(r, ArgumentRow) for r in refund_rows)
    assert_equality_law(run)

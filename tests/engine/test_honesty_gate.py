"""The evidence gate and its revision turn, and the laws of the fold (docs/honesty.md §12.5, §12.4).

Properties over random runs: the findings written equal those recomputed from the saved trace; each
batch is judged once; the answer fold reads only keys some arm of the agent writes; the enforcing
gate revises at most once per turn, with the tools off. Unit cases: the flag-only posture, a
revision that is still unsupported, a tool call on the revision turn, a call Route will not run.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.demo.script import this_turn
from fpdebug.engine.agent import Agent
from fpdebug.engine.honesty import answer_fold_reads, fold_reads, gate_verdict
from fpdebug.engine.honesty import hooks as hooks_module
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    AskAnswerEvent,
    AskRow,
    FindingEvent,
    LlmCallEvent,
    LlmRequest,
    Message,
    ResultRow,
    ToolPeriod,
    ToolResultEvent,
    TraceEvent,
)
from tests.conftest import T0


def lookup(key: str) -> dict[str, object]:
    """Look a key up."""
    return {"key": key, "total": 1250.5, "on": "2026-03-04"}


def note(text: str, amount: float = 0.0) -> str:
    """Note something down."""
    return f"noted {text}"


class Model:
    """A scripted model: each turn's batches, then its answer; its revision when the gate asks."""

    def __init__(self, turns: Sequence[tuple[Sequence[Sequence[ScriptedCall]], str, str]]) -> None:
        self.turns = turns

    def __call__(self, request: LlmRequest) -> ScriptedReply:
        typed = [m for m in request.messages if m.role == "user" and m.injection_id is None]
        batches, answer, revised = self.turns[len(typed) - 1]
        mine = this_turn(request)
        if any(m.role == "system" and m.content.startswith("Evidence check:") for m in mine):
            return ScriptedReply.text(revised)
        done = sum(1 for m in mine if m.role == "assistant" and m.tool_calls)
        return ScriptedReply.batch(*batches[done]) if done < len(batches) else ScriptedReply.text(answer)


def run(
    agent: Agent, model: Model, messages: Sequence[str]
) -> tuple[list[TraceEvent], list[tuple[Sequence[str], Mapping[str, object]]]]:
    """Run and read the trace back; every (reads, committed) the in-run answer fold was handed."""
    folds: list[tuple[Sequence[str], Mapping[str, object]]] = []
    real = hooks_module.assess_answer

    def spy(answer: str, committed: Mapping[str, object], **kwargs: Any) -> AnswerAssessmentRow | None:
        folds.append((list(kwargs["reads"]), dict(committed)))
        return real(answer, committed, **kwargs)

    with tempfile.TemporaryDirectory() as directory, mock.patch.object(hooks_module, "assess_answer", spy):
        path = Path(directory) / "run.jsonl"
        clock = FixedClock(T0)
        with TraceFileSink.create(path, clock=clock, durability="none") as sink:
            result = agent.run(
                list(messages),
                provider=ScriptedProvider(respond=model),
                sink=sink,
                clock=clock,
                answer=lambda ask: "REF-5",  # the user's side of an argument ask
            )
        assert result.status == "completed"
        with TraceReader(path) as reader:
            events: list[TraceEvent] = [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]
    return events, folds


def calls_of(events: Sequence[TraceEvent]) -> list[LlmCallEvent]:
    return [e for e in events if isinstance(e, LlmCallEvent)]


def findings(events: Sequence[TraceEvent], layer: str) -> list[FindingEvent]:
    return [e for e in events if isinstance(e, FindingEvent) and e.layer == layer]


# ----------------------------------------------------------------------------------------------
# Properties over random runs

VALUES = st.sampled_from(["ORD-1", "REF-5", "2026-03-04", "C-9"])
CALLS = st.lists(
    st.one_of(
        st.builds(lambda v: ScriptedCall("lookup", {"key": v}), VALUES),
        st.builds(
            lambda v, a: ScriptedCall("note", {"text": v, "amount": a}),
            VALUES,
            st.sampled_from([1250.5, 99.0]),
        ),
    ),
    min_size=1,
    max_size=2,
)
ANSWERS = st.sampled_from(
    [
        "Done: $1,250.50 on 2026-03-04.",
        "The fee is $75.00.",
        "OK REF-5 and ORD-1.",
        '{"total": 3}',
        "Nothing.",
    ]
)
TURN = st.tuples(st.lists(CALLS, max_size=3), ANSWERS, ANSWERS)
ARMS = st.fixed_dictionaries(
    {
        "inputs": st.booleans(),
        "results": st.booleans(),
        "answer": st.booleans(),
        "gate": st.sampled_from([None, "flag", "enforce"]),
        "middleware": st.booleans(),
        "validation": st.booleans(),
        "time": st.booleans(),
        "ask": st.booleans(),
    }
)


def no_fee(answer: str) -> str | None:
    """Answer validation for the properties: an answer stating the $75.00 fee is withheld."""
    return "states the fee" if "$75.00" in answer else None


def agent_of(arms: Mapping[str, Any], limit: int) -> Agent:
    # Under the time layer a lookup of a date covers that day (a call-window row); of an id, nothing.
    period = ToolPeriod(start="key", end="key")
    agent = (
        Agent("prop").tools(tool(lookup, display_name="Lookup", period=period), note).max_iterations(limit)
    )
    if arms["middleware"]:
        agent = agent.tool_middleware(lambda call: call)
    if arms["inputs"] or arms["ask"]:
        agent = agent.inputs_layer(ask=arms["ask"])
    if arms["results"]:
        agent = agent.results_layer()
    if arms["answer"]:
        agent = agent.answer_layer(standing_line="unsupported")
    if arms["gate"] is not None:
        agent = agent.evidence_gate(enforce=arms["gate"] == "enforce")
    if arms["validation"]:
        agent = agent.answer_validation(no_fee)
    if arms["time"]:
        agent = agent.time("Europe/Paris")
    return agent


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(TURN, min_size=1, max_size=2), arms=ARMS, limit=st.integers(min_value=1, max_value=4))
def test_the_honesty_laws_hold_on_any_run_with_or_without_the_gate(
    turns: list[tuple[list[list[ScriptedCall]], str, str]], arms: dict[str, Any], limit: int
) -> None:
    messages = [f"turn {i}: look up ORD-1 for C-9" for i in range(len(turns))]
    events, folds = run(agent_of(arms, limit), Model(turns), messages)
    # The equality law: what the run wrote is what its saved trace recomputes to.
    written = recorded_findings(events)
    assert written == recompute_findings(events)
    # Judged once: no call of a batch has two result rows, and every batch a later loop head of its
    # turn saw is judged (when the results layer is armed).
    judged = [
        (f.turn, row.batch_iteration, row.tool_call_id)
        for f in findings(events, "results")
        for row in f.rows
        if isinstance(row, ResultRow)
    ]
    assert len(judged) == len(set(judged))
    ran = {(e.turn, e.iteration, e.tool_call_id) for e in events if isinstance(e, ToolResultEvent)}
    assert set(judged) == (ran if arms["results"] else set())
    # A fold never reads what nothing writes: each key read is one the run's arms wrote.
    for reads, committed in folds:
        assert set(reads) <= set(committed), set(reads) - set(committed)
        assert "pausedToolCallId" in reads
        # An answer is never assessed as if a paused call had run: no call is paused at the fold.
        assert committed["pausedToolCallId"] is None
        assert ("unsupportedValues" in reads) == (arms["gate"] is not None)
        assert ("answerValidation" in reads) == arms["validation"]
    # The argument ask: each ask is answered once, the call ran with the answer, and the answered
    # argument is filed again with the user as its source.
    asks = [
        (f.turn, row.tool_call_id, row.path)
        for f in findings(events, "inputs")
        for row in f.rows
        if isinstance(row, AskRow)
    ]
    answered = [(e.turn, e.tool_call_id, e.path) for e in events if isinstance(e, AskAnswerEvent)]
    assert asks == answered and len(asks) == len(set(asks))
    assert bool(asks) <= arms["ask"]
    ran_args = {(e.turn, e.tool_call_id): e.args for e in events if isinstance(e, ToolResultEvent)}
    for turn, call_id, path in asks:
        assert ran_args[(turn, call_id)][path.removeprefix("$.")] == "REF-5"
    # The inputs layer never judges a call Route does not run.
    dispatched = {(c.turn, c.iteration) for c in calls_of(events) if c.route == "tool-calls"}
    assert {(f.turn, f.iteration) for f in findings(events, "inputs")} <= dispatched
    # The enforcing gate revises at most once a turn, and the revision turn offers no tool.
    calls = calls_of(events)
    for turn in range(1, len(turns) + 1):
        mine = [c for c in calls if c.turn == turn]
        revises = [i for i, c in enumerate(mine) if c.route == "evidence-recheck"]
        assert len(revises) <= (1 if arms["gate"] == "enforce" else 0)
        for i in revises:
            assert mine[i + 1].request.tools == [] and mine[i + 1].route == "final"


def test_fold_reads_never_lists_a_key_nothing_writes_in_any_combination() -> None:
    for tools, gate, validation, inputs, middleware in itertools.product([False, True], repeat=5):
        arms = {
            "tools": tools,
            "evidence_gate": gate,
            "answer_validation": validation,
            "inputs": inputs,
            "tool_middleware": middleware,
        }
        # Every key of the seed's list has a writer in fpdebug: the fold reads exactly that list.
        assert fold_reads(**arms) == answer_fold_reads(**arms)
        assert ("argumentAsk" in fold_reads(**arms)) == inputs
        assert fold_reads(**arms)[:3] == ["history", "turnNumber", "pausedToolCallId"]


def test_the_fold_reads_the_seeds_example_list() -> None:
    # The seed's @example: tools only.
    assert answer_fold_reads(
        tools=True, evidence_gate=False, answer_validation=False, inputs=False, tool_middleware=False
    ) == ["history", "turnNumber", "pausedToolCallId", "findingsLedger", "stoppedEarly", "coverageDeclared"]
    assert fold_reads(
        tools=True, evidence_gate=True, answer_validation=True, inputs=True, tool_middleware=True
    ) == [
        "history",
        "turnNumber",
        "pausedToolCallId",
        "findingsLedger",
        "stoppedEarly",
        "coverageDeclared",
        "unsupportedValues",
        "answerValidation",
        "argumentAsk",
        "middlewareDecisions",
    ]


# ----------------------------------------------------------------------------------------------
# Unit cases

FEE = [[ScriptedCall("lookup", {"key": "ORD-1"})]]


def test_the_flag_only_gate_writes_its_verdicts_and_lets_the_answer_stand() -> None:
    agent = Agent("a").tools(lookup).evidence_gate(enforce=False)
    events, folds = run(agent, Model([(FEE, "Total $1,250.50, fee $75.00.", "unused")]), ["ORD-1?"])
    assert [c.route for c in calls_of(events)] == ["tool-calls", "final"]
    (start,) = [e for e in events if e.kind == "run_start"]
    assert (start.honesty.evidence_gate, start.honesty.tools_off_after_revision) == (True, None)  # type: ignore[attr-defined]
    ((reads, committed),) = folds
    assert committed["unsupportedValues"] == ("$75.00",) and "unsupportedValues" in reads
    (row,) = findings(events, "answer")[0].rows
    assert [(v.text, v.supported) for v in row.values] == [("$1,250.50", True), ("$75.00", False)]  # type: ignore[union-attr]
    assert recompute_findings(events) == recorded_findings(events)


def test_a_revision_that_still_states_the_value_is_flagged_not_sent_back_again() -> None:
    agent = Agent("a").tools(lookup).evidence_gate()
    model = Model([(FEE, "Fee $75.00.", "Still $75.00.")])
    events, folds = run(agent, model, ["ORD-1?"])
    assert [c.route for c in calls_of(events)] == ["tool-calls", "evidence-recheck", "final"]
    assert [f[1]["unsupportedValues"] for f in folds] == [("$75.00",), ("$75.00",)]
    assert recompute_findings(events) == recorded_findings(events)


def test_a_tool_call_on_the_revision_turn_runs_nothing_and_is_never_judged() -> None:
    class Stubborn(Model):
        def __call__(self, request: LlmRequest) -> ScriptedReply:
            if any(m.role == "system" for m in this_turn(request)):
                return ScriptedReply.tool_call("lookup", {"key": "ORD-9"}, content="Let me check again.")
            return super().__call__(request)

    agent = Agent("a").tools(lookup).findings().evidence_gate()
    events, _ = run(agent, Stubborn([(FEE, "Fee $75.00.", "")]), ["ORD-1?"])
    calls = calls_of(events)
    assert [c.route for c in calls] == ["tool-calls", "evidence-recheck", "final"]
    assert [e.tool_call_id for e in events if isinstance(e, ToolResultEvent)] == ["call_1"]
    assert [f.iteration for f in findings(events, "inputs")] == [1]  # the revision's call: no row
    assert recompute_findings(events) == recorded_findings(events)


def test_a_call_route_will_not_run_gets_no_argument_row() -> None:
    agent = Agent("a").tools(lookup).max_iterations(1).findings()
    events, _ = run(agent, Model([(FEE, "unused", "unused")]), ["ORD-1?"])
    assert [c.route for c in calls_of(events)] == ["final"]
    assert findings(events, "inputs") == [] and not any(isinstance(e, ToolResultEvent) for e in events)
    assert recompute_findings(events) == recorded_findings(events)


def test_the_gate_judges_by_the_sources_never_by_its_own_verdicts() -> None:
    committed = {
        "history": (Message(role="user", content="Pay $75.00"),),
        "unsupportedValues": ("$75.00",),
    }
    reads = fold_reads(
        tools=False, evidence_gate=True, answer_validation=False, inputs=False, tool_middleware=False
    )
    assert gate_verdict("Paid $75.00 and $3.00.", committed, reads=reads) == ["$3.00"]


def test_a_withheld_answer_is_reported_and_never_assessed() -> None:
    def picky(answer: str) -> str | None:
        if "boom" in answer:
            raise ValueError("cannot parse")
        return "states the fee" if "$75.00" in answer else None

    agent = Agent("a").tools(lookup).answer_validation(picky)
    model = Model([(FEE, "Fee $75.00.", ""), ([], "boom", ""), ([], "Total $1,250.50.", "")])
    events, folds = run(agent, model, ["one", "two", "three"])
    (start,) = [e for e in events if e.kind == "run_start"]
    assert start.honesty.answer_validation is True  # type: ignore[attr-defined]
    visits = [[(r.row, getattr(r, "reason", None)) for r in f.rows] for f in findings(events, "answer")]
    assert visits == [
        [("validation", "states the fee")],
        [("validation", "the validation raised ValueError: cannot parse")],
        [("validation", None), ("assessment", None)],
    ]
    assert [f[1]["answerValidation"].withheld for f in folds] == [True, True, False]  # type: ignore[attr-defined]
    assert recompute_findings(events) == recorded_findings(events)


def test_the_gate_posture_is_a_bool_and_arms_the_answer_layer() -> None:
    with pytest.raises(DefinitionError, match="bool"):
        Agent("a").evidence_gate(enforce="yes")  # type: ignore[arg-type]
    layers = Agent("a").evidence_gate().spec.honesty
    assert layers is not None and layers.answer and layers.gate_posture == "enforce"  # type: ignore[attr-defined]
    flag = Agent("a").evidence_gate().evidence_gate(enforce=False).spec.honesty
    assert flag.gate_posture == "flag"  # type: ignore[union-attr]
    with pytest.raises(DefinitionError, match="function"):
        Agent("a").answer_validation("not a function")  # type: ignore[arg-type]

"""Unit tests for the pure pieces the honesty wiring added, and the equality law over random runs.

``judge_inputs(...).resolved`` (Resolve, call by call), ``tool_surface``, the grounds and declared
sources as the trace records them, ``HonestyLayers.arm`` / ``arms``; then a property: whatever a
scripted model asks for, with any combination of layers armed, the findings written during the run
are those recomputed from the trace read back from disk.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.engine.agent import Agent
from fpdebug.engine.honesty import InputsConfig, SourcesInReach, judge_inputs
from fpdebug.engine.honesty.hooks import HonestyLayers, declared_sources_of, external_grounds_of
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings, tool_surface
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    DeclaredSource,
    ExternalGround,
    InjectionDecl,
    ToolCallRecord,
    ToolSchema,
    TriggerDecl,
)
from tests.conftest import T0

# ----------------------------------------------------------------------------------------------
# Resolve, call by call


def test_resolved_keeps_each_calls_own_arguments_even_when_a_reply_repeats_an_id() -> None:
    calls = [
        ToolCallRecord(id="c1", name="refund", args={"amount": 5, "_from": "user"}),
        ToolCallRecord(id="c1", name="refund", args={"amount": 7}),
    ]
    verdict = judge_inputs(
        calls, SourcesInReach(user_messages=("refund 5 and 7",)), config=InputsConfig(argument_sources=True)
    )
    assert [call.args for call in verdict.resolved] == [{"amount": 5}, {"amount": 7}]
    assert [call.id for call in verdict.resolved] == ["c1", "c1"]
    assert verdict.resolved[1] is calls[1]  # nothing to strip: the call as the model wrote it


def test_without_argument_sources_resolve_changes_nothing_and_tools_off_runs_nothing() -> None:
    calls = [ToolCallRecord(id="c1", name="refund", args={"_from": "user"})]
    assert list(judge_inputs(calls, SourcesInReach()).resolved) == calls
    assert judge_inputs(calls, SourcesInReach(), tools_off=True).resolved == ()


# ----------------------------------------------------------------------------------------------
# The tools arm


def decl(kind: str, *, tools: list[str] | None = None) -> InjectionDecl:
    return InjectionDecl(
        id="x",
        flavor="skill",
        trigger=TriggerDecl(kind=kind),  # type: ignore[arg-type]
        slots=["system-prompt"],
        tool_names=tools or [],
    )


@pytest.mark.parametrize(
    ("tools", "injections", "surface"),
    [
        ([], [], False),
        ([ToolSchema(name="t")], [], True),
        ([], [decl("always", tools=["t"])], True),
        ([], [decl("llm-activated")], True),  # read_skill can run
        ([], [decl("always")], False),
    ],
)
def test_tool_surface(tools: list[ToolSchema], injections: list[InjectionDecl], surface: bool) -> None:
    assert tool_surface(tools, injections) is surface


# ----------------------------------------------------------------------------------------------
# Grounds and declared sources, as the trace records them


def test_grounds_are_json_data_exactly_as_run_start_holds_them() -> None:
    grounds = external_grounds_of({"limits": (1, 2.5), "by id": {7: "seven"}})
    assert grounds == (
        ExternalGround(label="limits", value=[1, 2.5]),
        ExternalGround(label="by id", value={"7": "seven"}),
    )
    given_as_models = external_grounds_of([ExternalGround(label="a", value=1)])
    assert given_as_models == (ExternalGround(label="a", value=1),)
    assert declared_sources_of({"faq": "Refunds take 5 days."}) == (
        DeclaredSource(name="faq", content="Refunds take 5 days."),
    )


def test_a_label_given_twice_is_refused() -> None:
    with pytest.raises(DefinitionError, match="given twice"):
        external_grounds_of([ExternalGround(label="a", value=1), ExternalGround(label="a", value=2)])
    with pytest.raises(DefinitionError, match="mapping of label to value"):
        declared_sources_of([("faq", "text")])  # type: ignore[list-item]


# ----------------------------------------------------------------------------------------------
# HonestyLayers.arm / arms


def test_a_layer_once_armed_stays_armed_and_an_option_not_given_is_kept() -> None:
    layers = HonestyLayers().arm(inputs=True, external_grounds={"g": 1}, standing_line="unsupported")
    assert (layers.inputs, layers.argument_sources, layers.standing_line) == (True, True, "unsupported")
    later = layers.arm(answer=True)
    kept = (later.inputs, later.answer, later.argument_sources, later.external_grounds, later.standing_line)
    assert kept == (True, True, True, layers.external_grounds, "unsupported")
    assert later.arm(argument_sources=False).argument_sources is False
    assert later.arm(standing_line=False).standing_line is None


def test_arms_name_the_hiding_tools_and_display_names_and_are_none_when_nothing_is_armed() -> None:
    def pin(code: str) -> str:
        """Set a PIN.

        Args:
            code: The PIN.
        """
        return "ok"

    tools = [tool(pin, hides_arguments=True, display_name="PIN change")]
    assert HonestyLayers().arms(tools) is None
    arms = HonestyLayers(results=True).arms(tools)
    assert arms is not None
    assert (arms.hidden_argument_tools, arms.display_names) == (["pin"], {"pin": "PIN change"})
    assert (arms.external_grounds, arms.declared_sources, arms.standing_line) == (None, None, None)


# ----------------------------------------------------------------------------------------------
# The equality law over random runs


def lookup(key: str) -> dict[str, object]:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return {"key": key, "value": 1250.5, "ref": f"REF-{len(key)}", "when": "2026-03-04"}


def note(text: str, amount: float = 0.0) -> str:
    """Write a note.

    Args:
        text: The note.
        amount: An amount to mention.
    """
    return f"noted {text} for ${amount:,.2f}"


VALUES = st.sampled_from(["ORD-1", "REF-5", "2026-03-04", "hello", "C-9"]) | st.sampled_from([1250.5, 3, 0.5])
CALLS = st.lists(
    st.one_of(
        st.builds(lambda v: ScriptedCall("lookup", {"key": str(v)}), VALUES),
        st.builds(
            lambda v, a: ScriptedCall("note", {"text": str(v), "amount": a}),
            VALUES,
            st.sampled_from([1250.5, 3.0, 99.0]),
        ),
        st.builds(lambda v: ScriptedCall("note", {"text": str(v), "_from": "user"}), VALUES),
    ),
    min_size=1,
    max_size=3,
)
TURN = st.tuples(
    st.lists(CALLS, max_size=3),
    st.sampled_from(["Done: $1,250.50 on 2026-03-04.", "OK REF-5.", '{"total": 3}', "Nothing to report."]),
)
ARMS = st.fixed_dictionaries(
    {
        "inputs": st.booleans(),
        "results": st.booleans(),
        "answer": st.booleans(),
        "argument_sources": st.booleans(),
        "standing_line": st.sampled_from([None, "always", "unsupported"]),
        "hide": st.booleans(),
        "grounds": st.booleans(),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(TURN, min_size=1, max_size=2), arms=ARMS, limit=st.integers(min_value=1, max_value=4))
def test_findings_written_during_any_run_equal_those_recomputed_from_its_saved_trace(
    turns: list[tuple[list[list[ScriptedCall]], str]],
    arms: dict[str, object],
    limit: int,
) -> None:
    layers = HonestyLayers().arm(
        inputs=bool(arms["inputs"]),
        results=bool(arms["results"]),
        answer=bool(arms["answer"]),
        argument_sources=bool(arms["argument_sources"]) or None,
        external_grounds={"account": "C-9"} if arms["grounds"] else None,
        standing_line=arms["standing_line"],  # type: ignore[arg-type]
    )
    agent = (
        Agent("prop")
        .tools(tool(lookup, display_name="Lookup"), tool(note, hides_arguments=bool(arms["hide"])))
        .max_iterations(limit)
        .honesty(layers)
    )
    script: list[ScriptedReply] = []
    for batches, answer in turns:
        script += [ScriptedReply.batch(*batch) for batch in batches[: limit - 1]]
        script.append(ScriptedReply.text(answer))
    messages = [f"turn {i}: look up ORD-1 and C-9" for i in range(len(turns))]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.jsonl"
        clock = FixedClock(T0)
        with TraceFileSink.create(path, clock=clock, durability="none") as sink:
            provider = ScriptedProvider(script)
            result = agent.run(messages, provider=provider, sink=sink, clock=clock, run_id="p")
        with TraceReader(path) as reader:
            events = [reader[i] for i in range(1, len(reader))]
    assert result.status == "completed"
    written = recorded_findings(events)  # type: ignore[arg-type]
    assert written == recompute_findings(events)  # type: ignore[arg-type]
    assert {f.layer for f in written} <= {layer for layer in ("inputs", "results", "answer") if arms[layer]}
    if arms["answer"]:
        assert [f.turn for f in written if f.layer == "answer"] == list(range(1, len(turns) + 1))

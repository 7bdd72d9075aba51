"""Values a tool returns are untrusted: odd shapes stay plain data or no match, never a crash.

docs/context-model.md §4.1 (a near-miss envelope stays data, and its author is warned) and §5.3 (a route guard
that cannot read its field is no match for that (edge, result) pair), asserted on the unit and
through :meth:`Agent.run`.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import EnvelopeNearMissWarning
from fpdebug.engine.injections import InjectionContext, define_skill
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import Guard, SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.engine.types import ToolResult
from fpdebug.trace.clock import FixedClock
from tests.conftest import T0
from tests.engine.test_agent import record

R = ScriptedReply

DEEP_ARRAY = "[" * 100_000
"""A JSON text the decoder cannot descend into (it raises RecursionError, not ValueError)."""


def calls_give() -> ScriptedProvider:
    """A model that calls ``give`` once, then answers."""
    return ScriptedProvider([R.tool_call("give"), "done"])


def give_tool(value: object):  # type: ignore[no-untyped-def]
    def give() -> object:
        """Give the value."""
        return value

    return tool(give)


# ----------------------------------------------------------------------------------------------
# §4.1: unhashable values where a kind or a status belongs


@pytest.mark.parametrize(
    "value",
    [
        {"content": "hello", "effects": [], "status": ["success"]},
        {"content": "hello", "effects": [{"kind": {"k": 1}}]},
        {"content": "hello", "effects": [{"kind": ["require-instruction"], "instructionId": "i"}]},
    ],
    ids=["status-list", "kind-dict", "kind-list"],
)
def test_a_near_miss_with_unhashable_values_is_plain_data_for_the_run(
    value: dict[str, object], tmp_path: Path
) -> None:
    run = record(Agent("a").tools(give_tool(value)), "go", calls_give(), tmp_path)
    assert run.result.status == "completed" and run.result.content == "done"
    (result,) = run.of("tool_result")
    # Plain data: the model reads the whole value as JSON, with no status and no effects judged.
    assert json.loads(result.result) == value
    assert result.status is None and result.effects == [] and result.malformed == []
    assert run.of("tool_effect") == []


# ----------------------------------------------------------------------------------------------
# §4.1: the near-miss warning reaches the author


def test_a_near_miss_warns_the_author_at_their_own_call_and_stays_data() -> None:
    value = {"content": "hello", "status": "success"}
    agent = Agent("a").tools(give_tool(value))
    with pytest.warns(EnvelopeNearMissWarning, match=r"tool 'give'.*no 'effects'.*plain data") as caught:
        result = agent.run("go", provider=calls_give(), clock=FixedClock(T0), run_id="w")
    (warning,) = [w for w in caught if issubclass(w.category, EnvelopeNearMissWarning)]
    # The warning points past the engine's frames, at the line that called agent.run (here).
    assert Path(warning.filename).resolve() == Path(__file__).resolve()
    assert result.status == "completed"
    assert result.events is not None
    (tool_result,) = [e for e in result.events if e.kind == "tool_result"]
    assert json.loads(tool_result.result) == value  # type: ignore[union-attr]


def test_a_real_envelope_and_plain_data_do_not_warn() -> None:
    for value in ({"content": "hello", "effects": [], "status": "success"}, {"content": "hello"}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = Agent("a").tools(give_tool(value)).run("go", provider=calls_give(), run_id="q")
        assert result.status == "completed"


# ----------------------------------------------------------------------------------------------
# §5.3: a guard over a JSON text too deeply nested to decode is no match


def guarded_map():  # type: ignore[no-untyped-def]
    def lookup() -> str:
        """Look it up."""
        return DEEP_ARRAY

    return (
        SkillMapBuilder()
        .skill(define_skill("a", body="A.", tools=[tool(lookup)]))
        .skill(define_skill("b", body="B."))
        .entry("a")
        .route("a", "b", on_tool_return="lookup", guard={"tier": {"eq": "gold"}})
        .build()
    )


def test_a_guard_reads_no_field_from_a_text_too_deep_to_decode() -> None:
    guard = Guard("tier", "ne", "gold")  # "ne" would pass on any field that is there
    assert guard.passes(DEEP_ARRAY) is False
    assert guard.passes(DEEP_ARRAY.encode()) is False
    assert guard.passes('{"tier": "silver"}') is True


def test_the_resolver_stays_when_the_only_result_is_too_deep_to_decode() -> None:
    graph = guarded_map()
    deep = ToolResult("lookup", DEEP_ARRAY, "c1")
    (edge,) = graph.routes
    assert edge.judge(deep) == "closed"  # the tool matched; the guard found no field
    move = graph.explain_next_skill(InjectionContext(2, current_skill_id="a", tool_results=(deep,)))
    assert (move.by, move.to_skill) == ("stay", "a")


def test_a_deeply_nested_tool_result_leaves_the_run_on_its_skill(tmp_path: Path) -> None:
    model = ScriptedProvider([R.batch(ScriptedCall("lookup", {})), "done"])
    run = record(Agent("deep").skill_map(guarded_map()), "go", model, tmp_path)
    assert run.result.status == "completed" and run.result.content == "done"
    assert [(e.to_skill, e.by) for e in run.of("cursor_move")] == [("a", "entry"), ("a", "stay")]


# ----------------------------------------------------------------------------------------------
# A return value that cannot become text is the tool's failure, not a crash of the run


def _circular() -> dict[str, object]:
    loop: dict[str, object] = {"id": "A-17"}
    loop["self"] = loop
    return loop


def _too_deep() -> list[object]:
    deep: list[object] = []
    for _ in range(5_000):
        deep = [deep]
    return deep


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (_circular(), "ValueError: Circular reference detected"),
        (_too_deep(), "RecursionError"),
        ({"when": object()}, None),  # default=str turns an unknown object into its text: readable
    ],
    ids=["circular", "too-deep", "unknown-object"],
)
def test_a_result_that_cannot_be_written_as_json_is_a_failure_the_loop_survives(
    value: object, why: str | None, tmp_path: Path
) -> None:
    run = record(Agent("a").tools(give_tool(value)), "go", calls_give(), tmp_path)
    assert run.result.status == "completed" and run.result.content == "done"
    (result,) = run.of("tool_result")
    if why is None:
        assert result.status is None and result.error is None
        return
    assert result.status == "failure" and result.error is not None
    assert result.error.type == "UnreadableToolResult"
    assert result.error.message.startswith("give returned a value that cannot be written as JSON: ")
    assert why in result.error.message
    # The model read the failure, exactly as recorded.
    assert result.result == f"Error: give failed: UnreadableToolResult: {result.error.message}"

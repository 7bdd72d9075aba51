"""The agent loop (docs/context-model.md §7), asserted on the trace each run wrote, read back through the trace reader.

Builder rules, iteration numbering, slot composition, the route decision and ``stopped_early``, tool
failures and timeouts, provider failures, the absence of unused features' events, multi-turn runs,
and the ways a run can be stopped (interruption, Ctrl-C, a disk that refuses to write).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from fpdebug.engine.agent import Agent, RunResult
from fpdebug.engine.effects import envelope
from fpdebug.engine.injections import (
    define_fact,
    define_instruction,
    define_skill,
    define_steering,
)
from fpdebug.engine.providers.base import Provider
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink, NullSink, TraceFileSink
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError, FpdebugError, ProviderError, RunInterrupted, TraceWriteError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
)
from tests.conftest import T0

# ----------------------------------------------------------------------------------------------
# Recording into a real trace file and reading it back


@dataclass
class Recorded:
    """A run recorded into a trace file, read back."""

    path: Path
    result: RunResult
    events: list[TraceEvent]
    model: RunModel
    raw: list[dict[str, object]]

    # Typed loosely on purpose: a test names the kind it asks for and reads that kind's fields.
    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]

    def at(self, kind: str, iteration: int, turn: int = 1) -> list[Any]:
        return [e for e in self.events if e.kind == kind and e.iteration == iteration and e.turn == turn]

    def one(self, kind: str, iteration: int, turn: int = 1) -> Any:
        (found,) = self.at(kind, iteration, turn)
        return found


def read_back(path: Path) -> tuple[list[TraceEvent], RunModel, list[dict[str, object]]]:
    """Every event of a trace file (validated by the reader), its RunModel, and its raw JSON lines."""
    with TraceReader(path) as reader:
        assert reader.problems() == []
        events = [reader[i] for i in range(1, len(reader))]
        model = RunModel.build(reader)
    raw = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    return events, model, raw  # type: ignore[return-value]


def record(
    agent: Agent,
    messages: str | Sequence[str],
    provider: Provider,
    tmp_path: Path,
    *,
    name: str = "run",
    run_id: str = "r1",
) -> Recorded:
    """Run ``agent`` into ``tmp_path/<name>.jsonl`` with a fixed clock, then read the trace back."""
    path = tmp_path / f"{name}.jsonl"
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run(messages, provider=provider, sink=sink, clock=clock, run_id=run_id)
    events, model, raw = read_back(path)
    return Recorded(path, result, events, model, raw)


def scripted(*replies: object) -> ScriptedProvider:
    return ScriptedProvider(list(replies))  # type: ignore[arg-type]


def never(_: object) -> bool:
    return False


def echo(text: str) -> str:
    """Repeat the text.

    Args:
        text: What to repeat.
    """
    return text


# ----------------------------------------------------------------------------------------------
# The builder


class TestBuilder:
    def test_every_method_returns_a_new_agent_and_leaves_the_old_one_alone(self) -> None:
        base = Agent("a")
        changed = base.system_prompt("Be useful.").tools(echo).max_iterations(3)
        assert (base.spec.system_prompt, base.spec.tools, base.spec.max_iterations) == ("", (), 10)
        assert changed.spec.system_prompt == "Be useful."
        assert [t.name for t in changed.spec.tools] == ["echo"]
        assert changed.spec.max_iterations == 3

    def test_maps_without_a_skill_map_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="nothing is mounted"):
            Agent("a").maps().check()

    @pytest.mark.parametrize(
        "build",
        [
            lambda: Agent("a").max_iterations(0),
            lambda: Agent("a").maps(renewal_grace=0),
            lambda: Agent("a").tool_timeout(-1),
            lambda: Agent("a").continuity("forever"),  # type: ignore[arg-type]
            lambda: Agent(""),
            lambda: Agent("a").injections("tone"),  # type: ignore[arg-type]
            lambda: Agent("a").skills(define_steering("tone", prompt="x")),
        ],
    )
    def test_bad_settings_are_refused_where_declared(self, build: object) -> None:
        with pytest.raises(DefinitionError):
            build()  # type: ignore[operator]

    def test_two_different_tools_with_one_name_are_refused(self) -> None:
        def other(text: str) -> str:
            return text

        agent = Agent("a").tools(echo, tool(other, name="echo"))
        with pytest.raises(DefinitionError, match="two different tools are named 'echo'"):
            agent.check()

    def test_read_skill_is_a_reserved_tool_name(self) -> None:
        with pytest.raises(DefinitionError, match="reserved"):
            Agent("a").tools(tool(echo, name="read_skill")).check()

    def test_duplicate_injection_ids_are_refused(self) -> None:
        agent = Agent("a").injections(define_steering("x", prompt="1"), define_fact("x", data="2"))
        with pytest.raises(DefinitionError, match="duplicate"):
            agent.check()

    def test_without_refuses_unknown_ids_and_skill_map_nodes(self) -> None:
        graph = SkillMapBuilder().skill(define_skill("triage", body="t")).entry("triage").build()
        agent = Agent("a").injections(define_steering("tone", prompt="x")).skill_map(graph)
        with pytest.raises(DefinitionError, match="no injection 'ghost'"):
            agent.without(injection_ids=["ghost"]).check()
        with pytest.raises(DefinitionError, match="skill-map node"):
            agent.without(injection_ids=["triage"]).check()

    def test_without_drops_injections_and_tools_and_records_it(self, tmp_path: Path) -> None:
        agent = (
            Agent("a")
            .injections(define_steering("tone", prompt="Be brief."), define_fact("f", data="F"))
            .tools(echo)
        )
        run = record(agent.without(injection_ids=["f"], tool_names=["echo"]), "hi", scripted("ok"), tmp_path)
        (start,) = run.of("run_start")
        assert isinstance(start, RunStartEvent)
        assert [i.id for i in start.injections] == ["tone"]
        assert start.tools == []
        assert start.options["without"] == {"injection_ids": ["f"], "tool_names": ["echo"]}
        call = run.one("llm_call", 1)
        assert isinstance(call, LlmCallEvent)
        assert [s.injection_id for s in call.request.system_prompt] == ["tone"] and call.request.tools == []


# ----------------------------------------------------------------------------------------------
# The loop


class TestLoop:
    def test_iteration_numbering_and_one_pass_per_iteration(self, tmp_path: Path) -> None:
        agent = Agent("a").tools(echo)
        model = scripted(
            ScriptedReply.tool_call("echo", {"text": "1"}),
            ScriptedReply.tool_call("echo", {"text": "2"}),
            "done",
        )
        run = record(agent, "go", model, tmp_path)
        assert [(e.kind, e.iteration) for e in run.events if e.kind in ("pass", "llm_call")] == [
            ("pass", 1),
            ("llm_call", 1),
            ("pass", 2),
            ("llm_call", 2),
            ("pass", 3),
            ("llm_call", 3),
        ]
        assert [e.route for e in run.of("llm_call")] == ["tool-calls", "tool-calls", "final"]
        (end,) = run.of("turn_end")
        assert isinstance(end, TurnEndEvent)
        assert (end.iteration_count, end.final_content, end.stopped_early) == (3, "done", None)
        assert [e.seq for e in run.events] == list(range(1, len(run.events) + 1))
        assert run.model.runs[0].status == "completed"
        assert run.result.content == "done" and run.result.iterations == 3

    def test_slots_compose_base_then_active_prompts_messages_and_tools(self, tmp_path: Path) -> None:
        helper = define_skill(
            "helper", description="Helps", body="Helper body.", tools=[tool(echo, name="helper_tool")]
        )
        quiet = define_skill("quiet", description="Tool-only", body="Quiet body.", surface_mode="tool-only")
        agent = (
            Agent("a")
            .system_prompt("Base prompt.")
            .injections(
                define_steering("tone", prompt="Be brief."),
                define_instruction("note", prompt="Remember the note.", slot="messages", role="user"),
                define_fact("off", data="never shown", active_when=never),
            )
            .skills(helper, quiet)
            .tools(echo)
        )
        model = scripted(
            ScriptedReply.batch(
                ScriptedCall("read_skill", {"id": "helper"}), ScriptedCall("read_skill", {"id": "quiet"})
            ),
            "done",
        )
        run = record(agent, "hi", model, tmp_path)
        first, second = run.of("llm_call")
        assert isinstance(first, LlmCallEvent) and isinstance(second, LlmCallEvent)
        assert [(s.source, s.injection_id, s.text) for s in first.request.system_prompt] == [
            ("base", None, "Base prompt."),
            ("steering", "tone", "Be brief."),
        ]
        assert [t.name for t in first.request.tools] == ["echo", "read_skill"]
        assert [(m.role, m.content, m.injection_id) for m in first.request.messages] == [
            ("user", "hi", None),
            ("user", "Remember the note.", "note"),
        ]
        # Both skills active; the tool-only body stays out of the system prompt.
        assert [s.injection_id for s in second.request.system_prompt] == [None, "tone", "helper"]
        assert [t.name for t in second.request.tools] == ["echo", "helper_tool", "read_skill"]
        assert [t.injection_id for t in second.request.tools] == [None, "helper", None]
        # The messages-slot injection rides after the history, not inside it.
        assert [m.role for m in second.request.messages] == ["user", "assistant", "tool", "tool", "user"]
        results = run.of("tool_result")
        assert "Quiet body." in results[1].result  # a tool-only body arrives as the result
        assert results[0].skill_gate.outcome == "open"

    def test_max_iterations_stops_early(self, tmp_path: Path) -> None:
        agent = Agent("a").tools(echo).max_iterations(2)
        model = scripted(
            ScriptedReply.tool_call("echo", {"text": "1"}),
            ScriptedReply.batch(ScriptedCall("echo", {"text": "2"}), ScriptedCall("echo", {"text": "3"})),
        )
        run = record(agent, "go", model, tmp_path)
        second = run.one("llm_call", 2)
        assert isinstance(second, LlmCallEvent) and second.route == "final"
        assert run.at("tool_result", 2) == []  # the pending calls never ran
        (end,) = run.of("turn_end")
        assert isinstance(end, TurnEndEvent) and end.stopped_early is not None
        assert end.stopped_early.model_dump(exclude_none=True) == {
            "reason": "max-iterations",
            "iteration": 2,
            "pending_tool_calls": 2,
            "answer_was_empty": True,
        }
        assert end.iteration_count == 2
        assert run.model.runs[0].turns[0].stopped_early == "max-iterations"

    def test_a_tool_that_raises_becomes_a_failure_and_the_loop_goes_on(self, tmp_path: Path) -> None:
        def explode(order_id: str) -> str:
            """Fail."""
            raise ValueError(f"order {order_id} is corrupt")

        agent = Agent("a").tools(explode, echo)
        model = scripted(
            ScriptedReply.tool_call("explode", {"order_id": "A-1"}),
            ScriptedReply.tool_call("echo", {"text": "again"}),
            "gave up",
        )
        run = record(agent, "go", model, tmp_path)
        failed = run.one("tool_result", 1)
        assert isinstance(failed, ToolResultEvent)
        assert failed.status == "failure"
        assert failed.error is not None and (failed.error.type, failed.error.message) == (
            "ValueError",
            "order A-1 is corrupt",
        )
        assert "ValueError: order A-1 is corrupt" in failed.result
        second = run.one("llm_call", 2)
        assert isinstance(second, LlmCallEvent)
        assert second.request.messages[-1].content == failed.result  # the model read the failure
        assert run.result.status == "completed" and run.result.content == "gave up"

    def test_invalid_arguments_and_unknown_tools_are_answered_invalid(self, tmp_path: Path) -> None:
        def add(a: int, b: int) -> int:
            """Add."""
            return a + b

        model = scripted(
            ScriptedReply.batch(
                ScriptedCall("add", {"a": "x"}),
                ScriptedCall("nope", {}),
                ScriptedCall("add", {"a": "2", "b": 3}),
            ),
            "ok",
        )
        run = record(Agent("a").tools(add), "go", model, tmp_path)
        bad, unknown, good = run.of("tool_result")
        assert (bad.status, bad.error.type) == ("invalid", "InvalidToolArguments")
        assert "a: Input should be a valid integer" in bad.result and "b: Field required" in bad.result
        assert (unknown.status, unknown.error.type) == ("invalid", "ToolError")
        assert (good.status, good.result) == (None, "5")

    def test_a_hung_tool_times_out_into_a_failure(self, tmp_path: Path) -> None:
        release = threading.Event()

        def hang(text: str) -> str:
            """Wait for ever."""
            release.wait(10)
            return text

        agent = Agent("a").tools(tool(hang, timeout=0.05), echo)
        model = scripted(
            ScriptedReply.tool_call("hang", {"text": "x"}),
            ScriptedReply.tool_call("echo", {"text": "y"}),
            "ok",
        )
        try:
            run = record(agent, "go", model, tmp_path)
        finally:
            release.set()
        hung = run.one("tool_result", 1)
        assert isinstance(hung, ToolResultEvent)
        assert hung.status == "failure" and hung.error is not None and hung.error.type == "TimeoutError"
        assert "did not return within 0.05 s" in hung.error.message
        assert run.one("tool_result", 2).result == "y"
        assert run.result.status == "completed"

    def test_envelopes_pydantic_results_and_malformed_effects(self, tmp_path: Path) -> None:
        from pydantic import BaseModel

        class Order(BaseModel):
            id: str
            total: float

        def get(order_id: str) -> Order:
            """Get an order."""
            return Order(id=order_id, total=9.5)

        def bad() -> dict[str, object]:
            """Return a malformed effect."""
            return envelope(
                "done", {"kind": "require-instruction", "instructionId": "x", "deliveryLease": "forever"}
            )

        model = scripted(
            ScriptedReply.batch(ScriptedCall("get", {"order_id": "A"}), ScriptedCall("bad", {})), "ok"
        )
        run = record(Agent("a").tools(get, bad), "go", model, tmp_path)
        got, malformed = run.of("tool_result")
        assert got.result == '{"id": "A", "total": 9.5}'
        assert malformed.result == "done"
        assert [m.kind for m in malformed.malformed] == ["require-instruction"]
        assert "deliveryLease 'forever'" in malformed.malformed[0].refusal_reason
        assert run.of("lease_grant") == []

    def test_a_reply_that_is_not_an_llm_response_is_the_providers_failure(self, tmp_path: Path) -> None:
        class Sloppy:
            name, model = "sloppy", "m-1"

            def complete(self, request: LlmRequest) -> object:
                return "hello"  # a str where an LlmResponse belongs

        run = record(Agent("a"), "go", Sloppy(), tmp_path)  # type: ignore[arg-type]
        (call,) = run.of("llm_call")
        assert isinstance(call, LlmCallEvent) and call.response is None
        assert call.error is not None and call.error.type == "ProviderError"
        assert call.error.message == "sloppy.complete() returned str 'hello', not an LlmResponse"
        assert run.result.status == "failed"

    @pytest.mark.parametrize("provider", [5, None, "scripted", object()])
    def test_something_that_is_not_a_provider_is_refused_before_anything_is_written(
        self, provider: object
    ) -> None:
        sink = MemorySink()
        with pytest.raises(
            DefinitionError, match=r"the provider must be a Provider .* it lacks a `name` string"
        ):
            Agent("a").run("go", provider=provider, sink=sink)  # type: ignore[arg-type]
        assert sink.events == []

    def test_a_provider_failure_is_recorded_and_nothing_before_is_lost(self, tmp_path: Path) -> None:
        class Flaky:
            name, model = "flaky", "m-1"

            def __init__(self) -> None:
                self.calls = 0

            def complete(self, request: LlmRequest) -> LlmResponse:
                self.calls += 1
                if self.calls == 2:
                    raise ProviderError("rate limited", status=429, provider="flaky")
                return LlmResponse(tool_calls=[ToolCallRecord(id="c1", name="echo", args={"text": "x"})])

        model = Flaky()
        run = record(Agent("a").tools(echo), "go", model, tmp_path)
        kinds = [e.kind for e in run.events]
        assert kinds == [
            "run_start",
            "turn_start",
            "pass",
            "llm_call",
            "tool_result",
            "pass",
            "llm_call",
            "run_end",
        ]
        failed = run.one("llm_call", 2)
        assert isinstance(failed, LlmCallEvent)
        assert failed.response is None and failed.route is None
        assert failed.error is not None and (
            failed.error.type,
            failed.error.status,
            failed.error.message,
        ) == (
            "ProviderError",
            429,
            "rate limited",
        )
        assert failed.request.messages[-1].role == "tool"  # the exact request that failed
        (end,) = run.of("run_end")
        assert isinstance(end, RunEndEvent) and end.status == "failed"
        assert end.error == failed.error
        assert run.result.status == "failed" and run.result.turns[0].status == "failed"
        with pytest.raises(ProviderError, match="rate limited"):
            run.result.check()
        assert run.model.runs[0].status == "failed"

    def test_an_unused_feature_writes_no_event_and_no_key(self, tmp_path: Path) -> None:
        agent = (
            Agent("a")
            .system_prompt("Base.")
            .injections(define_steering("tone", prompt="Be brief."))
            .tools(echo)
        )
        run = record(agent, "go", scripted(ScriptedReply.tool_call("echo", {"text": "1"}), "done"), tmp_path)
        assert {e.kind for e in run.events} == {
            "run_start",
            "turn_start",
            "pass",
            "llm_call",
            "tool_result",
            "turn_end",
            "run_end",
        }
        passes = [line for line in run.raw if line["kind"] == "pass"]
        for line in passes:
            assert not {"lease_active_ids", "parked_ids", "served_ids", "superseded_ids"} & set(line)
        start = next(line for line in run.raw if line["kind"] == "run_start")
        assert "skill_map" not in start and "maps" not in start and "honesty" not in start
        # A tool that returned plain data used no effects: no effects keys on its result (§11.10),
        # and read back the record still has empty lists.
        (result_line,) = [line for line in run.raw if line["kind"] == "tool_result"]
        assert not {"effects", "malformed", "skill_gate"} & set(result_line)
        (result,) = run.of("tool_result")
        assert isinstance(result, ToolResultEvent) and result.effects == [] and result.malformed == []

    def test_the_default_sink_keeps_the_events(self) -> None:
        result = Agent("a").run("hi", provider=scripted("hello"), clock=FixedClock(T0), run_id="m")
        assert result.events is not None
        assert [e.kind for e in result.events][-1] == "run_end"
        null = NullSink()
        Agent("a").run("hi", provider=scripted("hello"), sink=null)
        assert null.count == len(result.events)


class TestMultiTurn:
    def graph_agent(self) -> Agent:
        graph = (
            SkillMapBuilder()
            .skill(define_skill("triage", body="Triage."))
            .skill(define_skill("billing", body="Billing."))
            .entry("triage", keywords=["order"])
            .route("triage", "billing", on_tool_return="echo")
            .build()
        )
        return Agent("a").skill_map(graph).tools(echo)

    def test_one_run_start_a_turn_each_iterations_restart_history_carries(self, tmp_path: Path) -> None:
        model = scripted(ScriptedReply.tool_call("echo", {"text": "1"}), "first", "second")
        run = record(self.graph_agent(), ["my order?", "thanks"], model, tmp_path)
        kinds = [e.kind for e in run.events]
        assert kinds.count("run_start") == 1 and kinds.count("run_end") == 1
        assert [(e.kind, e.turn) for e in run.events if e.kind in ("turn_start", "turn_end")] == [
            ("turn_start", 1),
            ("turn_end", 1),
            ("turn_start", 2),
            ("turn_end", 2),
        ]
        assert [t.iteration_count for t in run.of("turn_end")] == [2, 1]
        turn2 = run.one("llm_call", 1, turn=2)
        assert isinstance(turn2, LlmCallEvent)
        assert [m.content for m in turn2.request.messages if m.role in ("user", "assistant")] == [
            "my order?",
            "",
            "first",
            "thanks",
        ]
        assert [t.number for t in run.model.runs[0].turns] == [1, 2]
        assert [t.content for t in run.result.turns] == ["first", "second"]

    def test_the_cursor_resets_each_turn_unless_continuity_carries_it(self, tmp_path: Path) -> None:
        messages = ["my order?", "and now?"]
        reset = record(
            self.graph_agent(),
            messages,
            scripted(ScriptedReply.tool_call("echo", {"text": "1"}), "a", "b"),
            tmp_path,
        )
        move = reset.one("cursor_move", 1, turn=2)
        assert (move.from_skill, move.to_skill, move.by) == (None, None, "none")
        carried = record(
            self.graph_agent().continuity("conversation"),
            messages,
            scripted(ScriptedReply.tool_call("echo", {"text": "1"}), "a", "b"),
            tmp_path,
            name="carried",
        )
        move = carried.one("cursor_move", 1, turn=2)
        # The carried cursor holds the start: the turn-start verdict is continuity, not a stay.
        assert (move.from_skill, move.to_skill, move.by) == ("billing", "billing", "continuity")

    def test_activations_are_per_turn(self, tmp_path: Path) -> None:
        agent = Agent("a").skills(define_skill("helper", body="Helper body."))
        model = scripted(ScriptedReply.tool_call("read_skill", {"id": "helper"}), "one", "two")
        run = record(agent, ["a", "b"], model, tmp_path)
        assert "helper" in run.one("pass", 2).active_ids
        assert run.one("pass", 1, turn=2).active_ids == []

    def test_a_conversation_object_sends_one_turn_at_a_time(self, tmp_path: Path) -> None:
        path = tmp_path / "chat.jsonl"
        with (
            TraceFileSink.create(path) as sink,
            Agent("a").conversation(provider=scripted("x", "y"), sink=sink) as chat,
        ):
            assert chat.send("one").content == "x"
            assert chat.send("two").content == "y"
        assert chat.result is not None and chat.result.status == "completed"
        with pytest.raises(Exception, match="has ended"):
            chat.send("three")
        events, model, _ = read_back(path)
        assert [e.kind for e in events].count("turn_end") == 2 and model.runs[0].status == "completed"


# ----------------------------------------------------------------------------------------------
# Stopping a run


class Gate:
    """A sink wrapper like the debugger's drive-mode gate: it stops the run before the Nth event of a kind."""

    def __init__(self, inner: TraceFileSink, *, kind: str, nth: int, error: BaseException) -> None:
        self.inner, self.kind, self.nth, self.error = inner, kind, nth, error
        self.seen = 0
        self.refused: list[TraceEvent] = []

    @property
    def next_seq(self) -> int:
        return self.inner.next_seq

    def emit(self, event: TraceEvent) -> None:
        if event.kind == self.kind:
            self.seen += 1
            if self.seen == self.nth:
                self.refused.append(event)
                raise self.error
        self.inner.emit(event)

    def close(self) -> None:
        self.inner.close()


def looping_agent() -> tuple[Agent, ScriptedProvider]:
    model = ScriptedProvider(respond=lambda r: ScriptedReply.tool_call("echo", {"text": "again"}))
    return Agent("a").tools(echo).max_iterations(5), model


class TestStopping:
    def test_a_gate_that_raises_run_interrupted_ends_the_run_interrupted(self, tmp_path: Path) -> None:
        agent, model = looping_agent()
        path = tmp_path / "gate.jsonl"
        with TraceFileSink.create(path, clock=FixedClock(T0)) as inner:
            gate = Gate(inner, kind="llm_call", nth=3, error=RunInterrupted("stop"))
            result = agent.run("go", provider=model, sink=gate, clock=FixedClock(T0), run_id="g")
        assert result.status == "interrupted" and result.turns[0].status == "interrupted"
        events, model_, _ = read_back(path)  # dense seq: the refused event's seq went to run_end
        assert events[-1].kind == "run_end" and events[-1].status == "interrupted"
        assert [e.kind for e in events].count("llm_call") == 2
        assert events[-1].seq == gate.refused[0].seq
        assert model_.runs[0].status == "interrupted"
        with pytest.raises(RunInterrupted):
            result.check()

    def test_a_gate_that_stores_the_event_then_stops_ends_the_run_after_it(self, tmp_path: Path) -> None:
        class StoringGate(Gate):
            def emit(self, event: TraceEvent) -> None:
                self.inner.emit(event)
                if event.kind == self.kind:
                    self.seen += 1
                    if self.seen == self.nth:
                        raise RunInterrupted("stopped while paused on it", stored=True)

        agent, model = looping_agent()
        path = tmp_path / "stored.jsonl"
        with TraceFileSink.create(path, clock=FixedClock(T0)) as inner:
            gate = StoringGate(inner, kind="pass", nth=2, error=RunInterrupted("unused"))
            result = agent.run("go", provider=model, sink=gate, clock=FixedClock(T0), run_id="g")
        assert result.status == "interrupted"
        events, _, _ = read_back(path)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))  # run_end has a seq of its own
        assert [e.kind for e in events[-2:]] == ["pass", "run_end"] and events[-2].iteration == 2
        calls = [e for e in events if e.kind == "llm_call"]
        assert len(calls) == 1 and len(model.requests) == 1  # the second iteration's call was never made
        assert events[-1].input_tokens == calls[0].response.usage.input_tokens

    def test_a_sink_that_stores_run_start_then_stops_gets_its_run_end(self, tmp_path: Path) -> None:
        class StoringGate(Gate):
            def emit(self, event: TraceEvent) -> None:
                self.inner.emit(event)
                if event.kind == "run_start":
                    raise RunInterrupted("stopped as the run opened", stored=True)

        agent, model = looping_agent()
        path = tmp_path / "opened.jsonl"
        with TraceFileSink.create(path, clock=FixedClock(T0)) as inner:
            gate = StoringGate(inner, kind="run_start", nth=1, error=RunInterrupted("unused"))
            result = agent.run(["go", "again"], provider=model, sink=gate, clock=FixedClock(T0), run_id="g")
        assert result.status == "interrupted" and result.turns == ()
        assert not model.requests  # the run ended before its first turn: no model call
        events, run_model, _ = read_back(path)  # read_back asserts the trace has no problem
        assert [(e.kind, e.seq) for e in events] == [("run_start", 1), ("run_end", 2)]
        end = events[-1]
        assert isinstance(end, RunEndEvent) and end.status == "interrupted"
        assert (end.turns, end.input_tokens, end.output_tokens) == (0, 0, 0)
        assert run_model.runs[0].status == "interrupted"

    def test_a_sink_that_refuses_run_start_leaves_no_record_and_a_valid_trace(self, tmp_path: Path) -> None:
        agent, model = looping_agent()
        path = tmp_path / "refused.jsonl"
        with TraceFileSink.create(path, clock=FixedClock(T0)) as inner:
            gate = Gate(inner, kind="run_start", nth=1, error=RunInterrupted("stop"))
            result = agent.run("go", provider=model, sink=gate, clock=FixedClock(T0), run_id="g")
            assert inner.next_seq == 1  # nothing consumed: a next run on this file starts at seq 1
        assert result.status == "interrupted" and result.turns == () and not model.requests
        with pytest.raises(RunInterrupted):
            result.check()
        events, run_model, _ = read_back(path)  # the header alone: a run_end would close no run_start
        assert events == [] and run_model.runs == []

    def test_a_conversation_stopped_on_run_start_is_born_ended(self, tmp_path: Path) -> None:
        agent, model = looping_agent()
        with TraceFileSink.create(tmp_path / "c.jsonl", clock=FixedClock(T0)) as inner:
            gate = Gate(inner, kind="run_start", nth=1, error=RunInterrupted("stop"))
            with agent.conversation(provider=model, sink=gate, clock=FixedClock(T0)) as chat:
                assert chat.status == "interrupted"
                with pytest.raises(FpdebugError, match="has ended"):
                    chat.send("go")
        assert chat.result is not None and chat.result.status == "interrupted" and not model.requests

    def test_ctrl_c_is_recorded_then_re_raised(self, tmp_path: Path) -> None:
        def stop(text: str) -> str:
            """Stop."""
            raise KeyboardInterrupt

        agent = Agent("a").tools(tool(stop, timeout=float("inf")))
        path = tmp_path / "ctrl-c.jsonl"
        with TraceFileSink.create(path) as sink, pytest.raises(KeyboardInterrupt):
            agent.run("go", provider=scripted(ScriptedReply.tool_call("stop", {"text": "x"})), sink=sink)
        events, model, _ = read_back(path)
        assert events[-1].kind == "run_end" and events[-1].status == "interrupted"
        assert model.runs[0].status == "interrupted"

    def test_ctrl_c_inside_a_worker_thread_tool_stops_the_run_too(self, tmp_path: Path) -> None:
        def stop(text: str) -> str:
            """Stop."""
            raise KeyboardInterrupt

        sink = MemorySink()
        with pytest.raises(KeyboardInterrupt):
            Agent("a").tools(tool(stop, timeout=5)).run(
                "go", provider=scripted(ScriptedReply.tool_call("stop", {"text": "x"})), sink=sink
            )
        assert sink.events[-1].kind == "run_end" and sink.events[-1].status == "interrupted"

    def test_a_sink_that_cannot_write_propagates_after_trying_run_end_failed(self, tmp_path: Path) -> None:
        agent, model = looping_agent()
        path = tmp_path / "full.jsonl"

        class DiskFull(Gate):
            def emit(self, event: TraceEvent) -> None:
                # Once the disk is full it stays full: every later write fails too.
                if event.kind == self.kind:
                    self.seen += 1
                if self.refused or self.seen == self.nth:
                    self.refused.append(event)
                    raise TraceWriteError("disk full")
                self.inner.emit(event)

        with TraceFileSink.create(path) as inner:
            full = DiskFull(inner, kind="tool_result", nth=2, error=TraceWriteError("disk full"))
            with pytest.raises(TraceWriteError, match="disk full"):
                agent.run("go", provider=model, sink=full)
        tried = full.refused[-1]
        assert isinstance(tried, RunEndEvent) and tried.status == "failed"
        assert tried.error is not None and tried.error.type == "TraceWriteError"
        events, _, _ = read_back(path)  # what was written before is intact
        assert [e.kind for e in events].count("tool_result") == 1 and events[-1].kind == "llm_call"

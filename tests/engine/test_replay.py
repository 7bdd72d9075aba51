"""The replay provider: a recorded run replays event for event; any divergence is loud and precise.

Event-for-event means every field of every event is equal, except the provider's name: a replayed
run records ``provider: "replay"`` in ``run_start`` and in each ``llm_call`` (the model stays the
recorded one). The timestamps match because both runs use the same fixed clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import load_scenario, run_target
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_fact, define_steering
from fpdebug.engine.providers.base import BLOCK_ENV_VAR, allow_live_calls
from fpdebug.engine.providers.replay import ReplayProvider, request_difference
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.errors import ProviderError, ReplayDivergenceError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, LlmRequest, Message, PromptSegment, RunEndEvent, TraceEvent
from tests.conftest import T0
from tests.engine.test_agent import echo, record

PROVIDER_FIELDS = {"provider"}
"""The only fields a replay changes (``run_start.provider`` and ``llm_call.provider``)."""


def comparable(events: list[TraceEvent]) -> list[dict[str, object]]:
    return [
        e.model_dump(mode="json", exclude=PROVIDER_FIELDS if e.kind in ("run_start", "llm_call") else None)
        for e in events
    ]


def events_of(path: Path) -> list[TraceEvent]:
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]


@pytest.mark.parametrize("name", ["support", "zone-trap", "leases-cyclic"])
def test_a_recorded_scenario_replays_event_for_event(tmp_path: Path, name: str) -> None:
    recorded = run_target(name, trace_path=tmp_path / "recorded.jsonl", clock=FixedClock(T0), run_id="r")
    replay = ReplayProvider.from_trace(recorded.trace_path)
    assert (replay.model, replay.recorded_provider, replay.calls) == (
        load_scenario(name).scripted_provider().model,
        "scripted",
        recorded.result.iterations,
    )
    again = run_target(name, trace_path=tmp_path / "replayed.jsonl", provider=replay, clock=FixedClock(T0))
    assert again.result.status == "completed" and replay.remaining == 0
    original, replayed = events_of(recorded.trace_path), events_of(again.trace_path)
    assert comparable(replayed) == comparable(original)
    assert [e.provider for e in replayed if isinstance(e, LlmCallEvent)] == ["replay"] * replay.calls
    assert {e.provider for e in original if isinstance(e, LlmCallEvent)} == {"scripted"}


def test_a_multi_turn_run_replays_with_its_recorded_messages(tmp_path: Path) -> None:
    agent = Agent("a").tools(echo)
    model = ScriptedProvider([ScriptedReply.tool_call("echo", {"text": "1"}), "one", "two"])
    original = record(agent, ["first", "second"], model, tmp_path, name="orig")
    replay = ReplayProvider.from_trace(original.path)
    assert replay.user_messages == ("first", "second")
    again = record(agent, list(replay.user_messages), replay, tmp_path, name="again")
    assert comparable(again.events) == comparable(original.events)


def test_a_failed_call_replays_as_the_same_failure(tmp_path: Path) -> None:
    class Down:
        name, model = "flaky", "m"

        def complete(self, request: LlmRequest) -> object:
            raise ProviderError("upstream overloaded", status=529, provider="flaky")

    original = record(Agent("a"), "hi", Down(), tmp_path, name="orig")  # type: ignore[arg-type]
    again = record(Agent("a"), "hi", ReplayProvider.from_trace(original.path), tmp_path, name="again")
    assert comparable(again.events) == comparable(original.events)
    end = again.events[-1]
    assert isinstance(end, RunEndEvent) and end.error is not None
    assert (end.status, end.error.status, end.error.message) == ("failed", 529, "upstream overloaded")


def recorded_agent(tmp_path: Path) -> tuple[Agent, Path]:
    agent = (
        Agent("a").system_prompt("Base.").injections(define_steering("tone", prompt="Be brief.")).tools(echo)
    )
    model = ScriptedProvider([ScriptedReply.tool_call("echo", {"text": "hello"}), "done"])
    return agent, record(agent, "say hello", model, tmp_path, name="orig").path


def diverge(agent: Agent, path: Path, message: str = "say hello") -> ReplayDivergenceError:
    result = agent.run(message, provider=ReplayProvider.from_trace(path), clock=FixedClock(T0))
    assert result.status == "failed"
    assert isinstance(result.exception, ReplayDivergenceError)
    call = [e for e in result.events or () if isinstance(e, LlmCallEvent)][-1]
    assert call.error is not None and call.error.type == "ReplayDivergenceError"  # recorded in the new trace
    return result.exception


class TestDivergence:
    def test_a_different_system_prompt(self, tmp_path: Path) -> None:
        agent, path = recorded_agent(tmp_path)
        error = diverge(agent.injections(define_fact("extra", data="New fact.")), path)
        message = str(error)
        assert "request #1 (recorded at turn 1, iteration 1)" in message
        recorded_prompt = "Base.\n\nBe brief."  # the new fact starts right after it
        assert f"system_prompt (first difference at character {len(recorded_prompt)})" in message
        assert "recorded 'Base.\\n\\nBe brief.' but received 'Base.\\n\\nBe brief.\\n\\nNew fact.'" in message

    def test_a_different_message_names_its_index(self, tmp_path: Path) -> None:
        agent, path = recorded_agent(tmp_path)
        error = diverge(agent, path, message="say goodbye")
        assert error.difference.field.startswith("messages")
        assert error.difference.message_index == 0
        assert '"content": "say hello"' in error.difference.recorded
        assert '"content": "say goodbye"' in error.difference.received
        assert "messages (recorded 1, received 1) differs at index 0" in str(error)

    def test_a_different_tool_set(self, tmp_path: Path) -> None:
        agent, path = recorded_agent(tmp_path)
        error = diverge(agent.without(tool_names=["echo"]), path)
        assert 'tools differs: recorded ["echo"] but received []' in str(error)

    def test_a_different_tool_schema(self, tmp_path: Path) -> None:
        def echo(text: str, loud: bool = False) -> str:
            """Repeat the text."""
            return text

        _, path = recorded_agent(tmp_path)
        agent = (
            Agent("a")
            .system_prompt("Base.")
            .injections(define_steering("tone", prompt="Be brief."))
            .tools(echo)
        )
        error = diverge(agent, path)
        assert error.difference.field == "tools.echo"

    def test_more_requests_than_recorded_is_loud(self, tmp_path: Path) -> None:
        _, path = recorded_agent(tmp_path)
        replay = ReplayProvider.from_trace(path)
        request = events_of(path)
        first = next(e for e in request if isinstance(e, LlmCallEvent))
        second = [e for e in request if isinstance(e, LlmCallEvent)][1]
        replay.complete(first.request)
        replay.complete(second.request)
        with pytest.raises(
            ReplayDivergenceError, match=r"exhausted: it holds 2 LLM calls but the replay sent request #3"
        ):
            replay.complete(first.request)

    def test_the_first_difference_is_reported_in_a_fixed_order(self) -> None:
        base = LlmRequest(
            system_prompt=[PromptSegment(source="base", text="A")],
            messages=[Message(role="user", content="x"), Message(role="assistant", content="y")],
        )
        same = base.model_copy()
        assert request_difference(base, same) is None
        retagged = base.model_copy(
            update={"system_prompt": [PromptSegment(source="fact", injection_id="f", text="A")]}
        )
        assert request_difference(base, retagged).field == "system_prompt.segments"
        shorter = base.model_copy(update={"messages": base.messages[:1]})
        difference = request_difference(base, shorter)
        assert (
            difference is not None and difference.message_index == 1 and difference.received == "(no message)"
        )
        warmer = base.model_copy(update={"temperature": 0.7})
        assert request_difference(base, warmer).field == "temperature"


class TestLoading:
    def test_a_trace_with_several_runs_needs_a_run_id(self, tmp_path: Path) -> None:
        path = tmp_path / "two.jsonl"
        with TraceFileSink.create(path) as sink:
            Agent("a").run("one", provider=ScriptedProvider(["1"]), sink=sink, run_id="first")
            Agent("a").run("two", provider=ScriptedProvider(["2"]), sink=sink, run_id="second")
        with pytest.raises(ProviderError, match=r"the trace holds 2 runs \(first, second\); pass run_id"):
            ReplayProvider.from_trace(path)
        with pytest.raises(ProviderError, match="no run 'third'"):
            ReplayProvider.from_trace(path, run_id="third")
        replay = ReplayProvider.from_trace(path, run_id="second")
        assert (replay.user_messages, replay.calls) == (("two",), 1)

    def test_replay_never_asks_the_live_call_switch(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        agent, path = recorded_agent(tmp_path)
        monkeypatch.setenv(BLOCK_ENV_VAR, "1")
        with allow_live_calls(False):
            result = agent.run("say hello", provider=ReplayProvider.from_trace(path))
        assert result.status == "completed" and result.content == "done"

"""Issue 17: stop reasons are facts the loop acts on, with the real SDK clients against a fake server.

A reply cut at the token limit runs none of its tool calls (each is an ``invalid`` result saying
why; ``on_truncation`` re-asks or fails); a refusal is flagged on ``turn_end``/``run_end`` and the
result; a failed tool's result goes back to Anthropic with ``is_error``; tool names the APIs refuse
are refused when the agent is declared; reasoning settings are recorded in ``run_start.options``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import RunEndEvent, RunStartEvent, ToolResultEvent, TurnEndEvent
from tests.engine.test_agent import record
from tests.fakeservers import FakeResponse, FakeServer, RecordedRequest, anthropic_message, openai_completion

KEY = "sk-test-0123456789abcdef"

refunds: list[dict[str, object]] = []


def refund(order_id: str = "LAST", amount: float = 500.0) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount: How much.
    """
    refunds.append({"order_id": order_id, "amount": amount})
    return "refunded"


def boom(order_id: str) -> str:
    """Always fails.

    Args:
        order_id: The order.
    """
    raise ValueError(f"no such order {order_id}")


@pytest.fixture(autouse=True)
def _no_refunds() -> None:
    refunds.clear()


def claude(server: FakeServer) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key=KEY, base_url=server.url, max_retries=0)


def gpt(server: FakeServer) -> OpenAIProvider:
    return OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{server.url}/v1", max_retries=0)


def _anthropic_truncated_then_fine(request: RecordedRequest) -> FakeResponse:
    if len(request.json()["messages"]) == 1:
        # The token limit cut the tool_use block: its input is partial (here: empty).
        content = [{"type": "tool_use", "id": "toolu_1", "name": "refund", "input": {}}]
        return FakeResponse(body=anthropic_message(content, stop_reason="max_tokens"))
    return FakeResponse(body=anthropic_message([{"type": "text", "text": "Which order?"}]))


def test_an_anthropic_tool_call_cut_by_max_tokens_does_not_run(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.handler = _anthropic_truncated_then_fine
    run = record(Agent("a").tools(refund), "refund my order", claude(fake_server), tmp_path)
    assert refunds == []  # the refund tool did not run with its default arguments
    (result,) = run.of("tool_result")
    assert isinstance(result, ToolResultEvent)
    assert result.status == "invalid" and result.error is not None
    assert result.error.type == "TruncatedToolCall" and "max_tokens" in result.error.message
    # reask (the default): the model is told, with is_error, and asked again.
    assert run.result.status == "completed" and run.result.content == "Which order?"
    [block] = fake_server.requests[1].json()["messages"][-1]["content"]
    assert block["type"] == "tool_result" and block["is_error"] is True
    assert "token limit" in block["content"]
    assert main(["validate", str(run.path)]) == 0


def test_an_openai_reply_cut_by_length_fails_the_run_when_asked(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.handler = lambda request: FakeResponse(
        body=openai_completion(
            tool_calls=(("call_a", "refund", '{"order_id": "A-17"}'),), finish_reason="length"
        )
    )
    agent = Agent("a").tools(refund).on_truncation("fail")
    run = record(agent, "refund A-17", gpt(fake_server), tmp_path)
    assert refunds == []
    assert run.result.status == "failed"
    assert run.result.error is not None and run.result.error.type == "TruncatedReply"
    (result,) = run.of("tool_result")
    assert isinstance(result, ToolResultEvent) and result.status == "invalid"
    (end,) = run.of("run_end")
    assert isinstance(end, RunEndEvent) and end.status == "failed"
    (start,) = run.of("run_start")
    assert isinstance(start, RunStartEvent) and start.options["on_truncation"] == "fail"
    assert len(fake_server.requests) == 1


def test_on_truncation_takes_reask_or_fail() -> None:
    with pytest.raises(DefinitionError, match="on_truncation"):
        Agent("a").on_truncation("retry")  # type: ignore[arg-type]


def test_an_anthropic_refusal_is_flagged_not_a_silent_empty_answer(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.handler = lambda request: FakeResponse(body=anthropic_message([], stop_reason="refusal"))
    run = record(Agent("a"), "help me with something bad", claude(fake_server), tmp_path)
    (turn_end,) = run.of("turn_end")
    assert isinstance(turn_end, TurnEndEvent) and turn_end.refusal == "refusal"
    (run_end,) = run.of("run_end")
    assert isinstance(run_end, RunEndEvent) and run_end.refused_turns == [1]
    assert run.result.turns[0].refusal == "refusal" and run.result.refused_turns == (1,)


@pytest.mark.parametrize("how", ["content_filter", "refusal_field"])
def test_an_openai_refusal_is_flagged(fake_server: FakeServer, tmp_path: Path, how: str) -> None:
    if how == "content_filter":
        body = openai_completion(content=None, finish_reason="content_filter")
    else:
        body = openai_completion(content=None)
        body["choices"][0]["message"]["refusal"] = "I can't help with that."
    fake_server.handler = lambda request: FakeResponse(body=body)
    run = record(Agent("a"), "help me with something bad", gpt(fake_server), tmp_path)
    (turn_end,) = run.of("turn_end")
    assert isinstance(turn_end, TurnEndEvent)
    assert turn_end.refusal == ("content_filter" if how == "content_filter" else "refusal")


def test_a_failed_tool_goes_back_to_anthropic_with_is_error(fake_server: FakeServer, tmp_path: Path) -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        if len(request.json()["messages"]) == 1:
            content = [{"type": "tool_use", "id": "toolu_1", "name": "boom", "input": {"order_id": "A"}}]
            return FakeResponse(body=anthropic_message(content, stop_reason="tool_use"))
        return FakeResponse(body=anthropic_message([{"type": "text", "text": "It failed."}]))

    fake_server.handler = answer
    record(Agent("a").tools(boom), "go", claude(fake_server), tmp_path)
    [block] = fake_server.requests[1].json()["messages"][-1]["content"]
    assert block["is_error"] is True and "ValueError" in block["content"]


@pytest.mark.parametrize("name", ["lookup order", "search.web", "x" * 65, "café"])
def test_tool_names_the_apis_refuse_are_refused_when_declared(name: str) -> None:
    with pytest.raises(DefinitionError, match="not accepted by the model APIs"):
        Tool(name)


def test_reasoning_settings_are_recorded_in_run_start(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.handler = lambda request: FakeResponse(body=openai_completion(content="ok"))
    model = OpenAIProvider(
        "o4-mini", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0, reasoning_effort="low"
    )
    run = record(Agent("a"), "hi", model, tmp_path)
    (start,) = run.of("run_start")
    assert isinstance(start, RunStartEvent)
    assert start.options["provider_options"] == {"reasoning_effort": "low"}


def test_anthropic_cache_tokens_count_as_input_in_turn_end_run_end_and_summary(
    fake_server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    fake_server.handler = lambda request: FakeResponse(
        body=anthropic_message(
            [{"type": "text", "text": "hi"}],
            input_tokens=20,
            output_tokens=5,
            cache_read=1000,
            cache_write=300,
        )
    )
    run = record(Agent("a"), "hi", claude(fake_server), tmp_path)
    (turn_end,) = run.of("turn_end")
    (run_end,) = run.of("run_end")
    assert isinstance(turn_end, TurnEndEvent) and isinstance(run_end, RunEndEvent)
    assert turn_end.input_tokens == run_end.input_tokens == run.result.input_tokens == 1320
    assert main(["summary", "--json", str(run.path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["input_tokens"] == 1320

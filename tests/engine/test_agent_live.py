"""A live provider run end to end: the real SDK clients against the local fake API server, into a trace."""

from __future__ import annotations

import json
from pathlib import Path

from fpdebug.cli import main
from fpdebug.demo import run_target
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_steering
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.trace.schema import LlmCallEvent, RunEndEvent, ToolResultEvent, TurnEndEvent
from tests.engine.test_agent import echo, record
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_message,
    openai_completion,
    openai_error,
)

KEY = "sk-test-0123456789abcdef"


def test_an_openai_compatible_run_writes_a_valid_trace(fake_server: FakeServer, tmp_path: Path) -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        body = request.json()
        if not any(m["role"] == "tool" for m in body["messages"]):
            return FakeResponse(
                body=openai_completion(
                    tool_calls=(("call_a", "echo", '{"text": "ping"}'),),
                    finish_reason="tool_calls",
                    prompt_tokens=40,
                    completion_tokens=5,
                )
            )
        return FakeResponse(body=openai_completion(content="pong", prompt_tokens=60, completion_tokens=2))

    fake_server.handler = answer
    agent = (
        Agent("live").system_prompt("Base.").injections(define_steering("tone", prompt="Brief.")).tools(echo)
    )
    model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    run = record(agent, "say ping", model, tmp_path)
    assert run.result.status == "completed" and run.result.content == "pong"
    first, second = run.of("llm_call")
    assert isinstance(first, LlmCallEvent) and isinstance(second, LlmCallEvent)
    assert (first.provider, first.model, first.route) == ("openai", "gpt-test", "tool-calls")
    assert first.response is not None and first.response.usage.input_tokens == 40
    assert first.response.stop_reason == "tool_calls"
    (result,) = run.of("tool_result")
    assert isinstance(result, ToolResultEvent) and (result.tool_call_id, result.result) == ("call_a", "ping")
    # What the server received is what the trace says was sent.
    sent = fake_server.requests[1].json()
    assert sent["messages"][0] == {"role": "system", "content": "Base.\n\nBrief."}
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "call_a", "content": "ping"}
    assert [t["function"]["name"] for t in sent["tools"]] == [t.name for t in second.request.tools]
    (end,) = run.of("turn_end")
    assert isinstance(end, TurnEndEvent) and (end.input_tokens, end.output_tokens) == (100, 7)
    assert main(["validate", str(run.path)]) == 0
    assert KEY not in run.path.read_text()


def test_an_anthropic_run_writes_a_valid_trace(fake_server: FakeServer, tmp_path: Path) -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        body = request.json()
        if len(body["messages"]) == 1:
            content = [{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "ping"}}]
            return FakeResponse(body=anthropic_message(content, stop_reason="tool_use", input_tokens=30))
        return FakeResponse(body=anthropic_message([{"type": "text", "text": "pong"}], output_tokens=1))

    fake_server.handler = answer
    model = AnthropicProvider("claude-test", api_key=KEY, base_url=fake_server.url, max_retries=0)
    run = record(Agent("live").tools(echo), "say ping", model, tmp_path)
    assert run.result.content == "pong"
    assert [e.route for e in run.of("llm_call")] == ["tool-calls", "final"]  # type: ignore[attr-defined]
    assert json.loads(fake_server.requests[1].body)["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert main(["validate", str(run.path)]) == 0


def test_an_http_error_is_the_runs_recorded_failure(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.handler = lambda request: FakeResponse(
        500, openai_error("the server had an error", kind="server_error")
    )
    model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    run = record(Agent("live"), "hi", model, tmp_path)
    (call,) = run.of("llm_call")
    assert isinstance(call, LlmCallEvent) and call.error is not None and call.error.status == 500
    end = run.events[-1]
    assert isinstance(end, RunEndEvent) and end.status == "failed" and end.error == call.error
    assert main(["validate", str(run.path)]) == 0


def test_a_demo_scenario_runs_live_when_asked(fake_server: FakeServer, tmp_path: Path) -> None:
    # The leases scenario with a live model that answers straight away: the scenario's own agent,
    # tools and messages, the live provider's wire format.
    fake_server.handler = lambda request: FakeResponse(body=openai_completion(content="108.00 USD"))
    model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    run = run_target("leases", trace_path=tmp_path / "live.jsonl", provider=model)
    assert run.result.status == "completed" and run.result.content == "108.00 USD"
    sent = fake_server.requests[0].json()
    assert sent["messages"][-1] == {"role": "user", "content": "What is 100 EUR in USD at today's rate?"}
    assert {t["function"]["name"] for t in sent["tools"]} == {"fetch", "calc"}
    assert main(["validate", str(run.trace_path)]) == 0

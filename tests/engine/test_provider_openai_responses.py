"""The OpenAI Responses API provider against a local fake ``/v1/responses`` server (the real SDK)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers import LIVE_PROVIDERS, live_provider
from fpdebug.engine.providers.openai_responses import OpenAIResponsesProvider
from fpdebug.trace.schema import (
    LlmRequest,
    Message,
    PromptSegment,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TurnEndEvent,
    Usage,
)
from tests.engine.test_agent import echo, record
from tests.fakeservers import FakeResponse, FakeServer, RecordedRequest, reply_with

LOOKUP = ToolSchema(
    name="lookup_order",
    description="Find an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)


def response(
    output: list[dict[str, Any]],
    *,
    status: str = "completed",
    incomplete: str | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cached: int = 0,
    reasoning: int = 0,
) -> dict[str, Any]:
    """A Responses API reply body."""
    return {
        "id": "resp_test",
        "object": "response",
        "created_at": 0,
        "model": "gpt-5-test",
        "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def text(content: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": content, "annotations": []}],
    }


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def provider(server: FakeServer, **options: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(
        "gpt-5-test", api_key="k", base_url=f"{server.url}/v1", max_retries=0, **options
    )


def test_a_round_trip_maps_the_request_and_the_reply(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        response(
            [call("call_2", "lookup_order", '{"order_id": "B-2"}')],
            input_tokens=300,
            output_tokens=40,
            cached=256,
            reasoning=32,
        )
    )
    request = LlmRequest(
        system_prompt=[PromptSegment(source="base", text="Be brief.")],
        messages=[
            Message(role="user", content="Where is A-17?"),
            Message(
                role="assistant",
                tool_calls=[ToolCallRecord(id="call_1", name="lookup_order", args={"order_id": "A-17"})],
            ),
            Message(role="tool", tool_call_id="call_1", tool_name="lookup_order", content="shipped"),
        ],
        tools=[LOOKUP],
        max_tokens=500,
    )
    reply = provider(fake_server, reasoning_effort="low").complete(request)
    sent = fake_server.requests[0]
    assert sent.path == "/v1/responses"
    body = sent.json()
    assert body["instructions"] == "Be brief."
    assert body["input"] == [
        {"role": "user", "content": "Where is A-17?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "lookup_order",
            "arguments": '{"order_id": "A-17"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "shipped"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "lookup_order",
            "description": "Find an order.",
            "parameters": LOOKUP.parameters,
            "strict": False,
        }
    ]
    assert (body["max_output_tokens"], body["reasoning"], body["store"]) == (500, {"effort": "low"}, False)
    assert reply.tool_calls == [ToolCallRecord(id="call_2", name="lookup_order", args={"order_id": "B-2"})]
    assert (reply.stop_reason, reply.id, reply.model) == ("completed", "resp_test", "gpt-5-test")
    assert reply.usage == Usage(
        input_tokens=300,
        output_tokens=40,
        cache_read_tokens=256,
        reasoning_tokens=32,
        input_includes_cache=True,
    )


def test_a_truncated_reply_runs_no_tool_and_a_refusal_is_flagged(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        if len(request.json()["input"]) == 1:
            return FakeResponse(
                body=response(
                    [call("c1", "echo", '{"text": "pi')], status="incomplete", incomplete="max_output_tokens"
                )
            )
        refusal = {
            "type": "message",
            "id": "msg_2",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        }
        return FakeResponse(body=response([refusal]))

    fake_server.handler = answer
    run = record(Agent("a").tools(echo), "say ping", provider(fake_server, malformed_args="keep"), tmp_path)
    (result,) = run.of("tool_result")
    assert isinstance(result, ToolResultEvent) and result.status == "invalid"
    assert result.error is not None and result.error.type == "TruncatedToolCall"
    (end,) = run.of("turn_end")
    assert isinstance(end, TurnEndEvent) and end.refusal == "refusal"
    assert end.final_content == "I can't help with that."


def test_it_is_a_live_provider_by_name() -> None:
    assert "openai-responses" in LIVE_PROVIDERS
    built = live_provider("openai-responses", "gpt-5", base_url="http://127.0.0.1:9/v1")
    assert isinstance(built, OpenAIResponsesProvider) and built.name == "openai-responses"

"""The Anthropic provider against a local fake Messages API server (the real SDK, no network).

What both live providers do alike (errors, key safety, timeouts, malformed arguments) is in
``test_provider_live.py``; here is what only the Messages API does.
"""

from __future__ import annotations

import pytest

from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.trace.schema import LlmRequest, Message, PromptSegment, ToolCallRecord, ToolSchema, Usage
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_error,
    anthropic_message,
    reply_with,
)

KEY = "sk-ant-test-0123456789abcdef"

LOOKUP = ToolSchema(
    name="lookup_order",
    description="Find an order by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
REFUND = ToolSchema(name="refund", description="Refund an order.")


def provider(server: FakeServer, **options: object) -> AnthropicProvider:
    options.setdefault("max_retries", 0)
    return AnthropicProvider("claude-test", api_key=KEY, base_url=server.url, **options)  # type: ignore[arg-type]


def conversation() -> LlmRequest:
    """A second-iteration request: two tool calls were made and both results came back."""
    return LlmRequest(
        system_prompt=[
            PromptSegment(source="base", text="You are a support agent."),
            PromptSegment(source="instructions", injection_id="refund-policy", text="Refund within 14 days."),
        ],
        messages=[
            Message(role="user", content="Where is order A-17? Refund B-2."),
            Message(
                role="assistant",
                content="Let me check both.",
                tool_calls=[
                    ToolCallRecord(id="toolu_1", name="lookup_order", args={"order_id": "A-17"}),
                    ToolCallRecord(id="toolu_2", name="refund", args={"order_id": "B-2"}),
                ],
            ),
            Message(
                role="tool", tool_call_id="toolu_1", tool_name="lookup_order", content='{"status": "shipped"}'
            ),
            Message(role="tool", tool_call_id="toolu_2", tool_name="refund", content="refunded"),
        ],
        tools=[LOOKUP, REFUND],
    )


def test_a_tool_use_round_trip(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        anthropic_message(
            [
                {"type": "text", "text": "A-17 shipped. "},
                {"type": "text", "text": "One more check."},
                {"type": "tool_use", "id": "toolu_3", "name": "lookup_order", "input": {"order_id": "B-2"}},
            ],
            stop_reason="tool_use",
            input_tokens=321,
            output_tokens=45,
            cache_read=300,
            cache_write=12,
        )
    )
    reply = provider(fake_server, max_tokens=512).complete(conversation())

    [sent] = fake_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    body = sent.json()
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 512
    assert body["system"] == "You are a support agent.\n\nRefund within 14 days."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Where is order A-17? Refund B-2."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check both."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup_order", "input": {"order_id": "A-17"}},
                {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"order_id": "B-2"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "shipped"}'},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "refunded"},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "lookup_order", "description": "Find an order by id.", "input_schema": LOOKUP.parameters},
        {
            "name": "refund",
            "description": "Refund an order.",
            "input_schema": {"type": "object", "properties": {}},
        },
    ]

    assert reply.content == "A-17 shipped. One more check."
    assert reply.tool_calls == [ToolCallRecord(id="toolu_3", name="lookup_order", args={"order_id": "B-2"})]
    assert reply.stop_reason == "tool_use"
    # Input tokens count the cache reads and writes (issue 17: one usage definition, OTel's).
    assert reply.usage == Usage(
        input_tokens=321 + 300 + 12,
        output_tokens=45,
        cache_read_tokens=300,
        cache_write_tokens=12,
        input_includes_cache=True,
    )


def test_a_final_answer_and_a_plain_request(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        anthropic_message([{"type": "text", "text": "Hello!"}], input_tokens=9, output_tokens=2)
    )
    reply = provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    body = fake_server.requests[0].json()
    # Nothing was declared, so nothing is sent: no system, no tools.
    assert set(body) == {"model", "max_tokens", "messages"}
    assert body["max_tokens"] == 4096
    assert reply.content == "Hello!"
    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(input_tokens=9, output_tokens=2, input_includes_cache=True)


def test_the_request_budget_wins_and_unsupported_settings_are_not_sent(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    request = LlmRequest(
        messages=[Message(role="user", content="hi")], temperature=0.7, max_tokens=64, seed=3
    )
    provider(fake_server, max_tokens=999).complete(request)
    body = fake_server.requests[0].json()
    assert body["max_tokens"] == 64
    # The Messages API of the 2.x SDK has no temperature or seed; sending them would be refused.
    assert "temperature" not in body and "seed" not in body


def test_system_messages_and_a_user_turn_after_tool_results_are_merged(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    request = LlmRequest(
        system_prompt=[PromptSegment(source="base", text="Base.")],
        messages=[
            Message(role="system", content="Delivered by the messages slot.", injection_id="note"),
            Message(role="user", content="go"),
            Message(role="assistant", tool_calls=[ToolCallRecord(id="t1", name="ping")]),
            Message(role="tool", tool_call_id="t1", tool_name="ping", content="pong"),
            Message(role="user", content="and now?"),
        ],
    )
    provider(fake_server).complete(request)
    body = fake_server.requests[0].json()
    assert body["system"] == "Base.\n\nDelivered by the messages slot."
    assert body["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ping", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "pong"},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_an_empty_assistant_turn_is_left_out(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    request = LlmRequest(
        messages=[
            Message(role="user", content="first"),
            Message(role="assistant", content=""),
            Message(role="user", content="second"),
        ]
    )
    provider(fake_server).complete(request)
    assert fake_server.requests[0].json()["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}
    ]


def test_the_key_is_sent_in_a_header(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    headers = fake_server.requests[0].headers
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert "anthropic-version" in headers


def test_the_key_comes_from_the_environment(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    AnthropicProvider("claude-test", base_url=fake_server.url, max_retries=0).complete(
        LlmRequest(messages=[Message(role="user", content="hi")])
    )
    headers = fake_server.requests[0].headers
    assert "sk-ant-from-env" in headers.get("x-api-key", "") + headers.get("authorization", "")


def test_retries_are_the_sdks_when_asked_for(fake_server: FakeServer) -> None:
    attempts: list[RecordedRequest] = []

    def flaky(request: RecordedRequest) -> FakeResponse:
        attempts.append(request)
        if len(attempts) == 1:
            return FakeResponse(
                500, anthropic_error("api_error", "try again"), headers={"retry-after-ms": "1"}
            )
        return FakeResponse(200, anthropic_message([{"type": "text", "text": "second time"}]))

    fake_server.handler = flaky
    reply = provider(fake_server, max_retries=1).complete(
        LlmRequest(messages=[Message(role="user", content="hi")])
    )
    assert reply.content == "second time"
    assert len(attempts) == 2


def test_arguments_sent_as_a_json_string_object_are_accepted(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        anthropic_message(
            [{"type": "tool_use", "id": "toolu_9", "name": "refund", "input": '{"order_id": "B-2"}'}]
        )
    )
    reply = provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert reply.tool_calls[0].args == {"order_id": "B-2"}
    assert reply.tool_calls[0].raw_args is None

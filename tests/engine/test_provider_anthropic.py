"""The Anthropic provider against a local fake Messages API server (the real SDK, no network)."""

from __future__ import annotations

import time

import pytest

from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.base import allow_live_calls
from fpdebug.errors import LiveCallRefusedError, ProviderError
from fpdebug.trace.schema import LlmRequest, Message, PromptSegment, ToolCallRecord, ToolSchema, Usage
from tests.fakeservers import FakeResponse, FakeServer, RecordedRequest, anthropic_error, anthropic_message

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
            Message(role="tool", tool_call_id="toolu_1", tool_name="lookup_order", content='{"status": "shipped"}'),
            Message(role="tool", tool_call_id="toolu_2", tool_name="refund", content="refunded"),
        ],
        tools=[LOOKUP, REFUND],
    )


def reply_with(body: dict[str, object], status: int = 200) -> object:
    return lambda request: FakeResponse(status, body)


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
        {"name": "refund", "description": "Refund an order.", "input_schema": {"type": "object", "properties": {}}},
    ]

    assert reply.content == "A-17 shipped. One more check."
    assert reply.tool_calls == [ToolCallRecord(id="toolu_3", name="lookup_order", args={"order_id": "B-2"})]
    assert reply.stop_reason == "tool_use"
    assert reply.usage == Usage(input_tokens=321, output_tokens=45, cache_read_tokens=300, cache_write_tokens=12)


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
    assert reply.usage == Usage(input_tokens=9, output_tokens=2)


def test_the_request_budget_wins_and_unsupported_settings_are_not_sent(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    request = LlmRequest(messages=[Message(role="user", content="hi")], temperature=0.7, max_tokens=64, seed=3)
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


def test_no_key_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as caught:
        AnthropicProvider("claude-test")
    assert caught.value.provider == "anthropic"


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [
        (401, "authentication_error", "invalid x-api-key"),
        (403, "permission_error", "this key may not use the model"),
        (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        (500, "api_error", "Internal server error"),
        (529, "overloaded_error", "Overloaded"),
    ],
)
def test_http_errors_become_provider_errors_with_status_and_message(
    fake_server: FakeServer, status: int, kind: str, message: str
) -> None:
    fake_server.handler = reply_with(anthropic_error(kind, message), status)
    with pytest.raises(ProviderError) as caught:
        provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    error = caught.value
    assert error.status == status
    assert error.provider == "anthropic"
    assert message in error.message
    assert kind in error.message
    assert f"HTTP {status}" in str(error)
    assert len(fake_server.requests) == 1  # max_retries=0: one attempt, no hidden retry


def test_retries_are_the_sdks_when_asked_for(fake_server: FakeServer) -> None:
    attempts: list[RecordedRequest] = []

    def flaky(request: RecordedRequest) -> FakeResponse:
        attempts.append(request)
        if len(attempts) == 1:
            return FakeResponse(500, anthropic_error("api_error", "try again"), headers={"retry-after-ms": "1"})
        return FakeResponse(200, anthropic_message([{"type": "text", "text": "second time"}]))

    fake_server.handler = flaky
    reply = provider(fake_server, max_retries=1).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert reply.content == "second time"
    assert len(attempts) == 2


def test_a_server_that_echoes_the_key_does_not_leak_it(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_error("authentication_error", f"bad key {KEY}"), 401)
    subject = provider(fake_server)
    with pytest.raises(ProviderError) as caught:
        subject.complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    error = caught.value
    for text in (str(error), repr(error), error.message, *map(str, error.args), repr(subject), str(subject)):
        assert KEY not in text
    assert "[redacted]" in error.message
    # Nothing chained either: a traceback printer would otherwise show the SDK's exception.
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_a_timeout_is_a_provider_error(fake_server: FakeServer) -> None:
    fake_server.handler = lambda request: FakeResponse(200, anthropic_message([]), delay=5.0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out after 0.3s") as caught:
        provider(fake_server, timeout=0.3).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert caught.value.status is None
    assert time.monotonic() - started < 4.0


def test_connection_refused_is_a_provider_error() -> None:
    closed = FakeServer().start()
    url = closed.url
    closed.stop()
    refused = r"could not reach http://127\.0\.0\.1:\d+.*Connect"
    with allow_live_calls(True), pytest.raises(ProviderError, match=refused) as caught:
        AnthropicProvider("claude-test", api_key=KEY, base_url=url, max_retries=0).complete(
            LlmRequest(messages=[Message(role="user", content="hi")])
        )
    assert caught.value.status is None
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [("{\"order_id\": \"A-", "is not valid JSON"), ("[1, 2]", "is a JSON array, not an object")],
)
def test_malformed_tool_arguments_raise_by_default(fake_server: FakeServer, raw: str, problem: str) -> None:
    fake_server.handler = reply_with(
        anthropic_message(
            [{"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": raw}], stop_reason="tool_use"
        )
    )
    with pytest.raises(ProviderError) as caught:
        provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert "malformed tool-call arguments" in caught.value.message
    assert "'toolu_9'" in caught.value.message
    assert "'lookup_order'" in caught.value.message
    assert problem in caught.value.message


def test_malformed_tool_arguments_can_be_kept_for_the_loop(fake_server: FakeServer) -> None:
    raw = '{"order_id": "A-'
    fake_server.handler = reply_with(
        anthropic_message(
            [{"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": raw}], stop_reason="tool_use"
        )
    )
    reply = provider(fake_server, malformed_args="keep").complete(
        LlmRequest(messages=[Message(role="user", content="hi")])
    )
    assert reply.tool_calls == [ToolCallRecord(id="toolu_9", name="lookup_order", args={}, raw_args=raw)]


def test_arguments_sent_as_a_json_string_object_are_accepted(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        anthropic_message([{"type": "tool_use", "id": "toolu_9", "name": "refund", "input": '{"order_id": "B-2"}'}])
    )
    reply = provider(fake_server).complete(LlmRequest(messages=[Message(role="user", content="hi")]))
    assert reply.tool_calls[0].args == {"order_id": "B-2"}
    assert reply.tool_calls[0].raw_args is None


def test_a_blocked_provider_never_reaches_the_server() -> None:
    # No fake_server fixture here: the suite-wide block stays in force.
    with FakeServer() as server:
        subject = AnthropicProvider("claude-test", api_key=KEY, base_url=server.url, max_retries=0)
        with pytest.raises(LiveCallRefusedError) as caught:
            subject.complete(LlmRequest(messages=[Message(role="user", content="hi")]))
        assert server.requests == []
    assert caught.value.provider == "anthropic"
    assert KEY not in str(caught.value)


def test_repr_names_the_model_and_endpoint_only(fake_server: FakeServer) -> None:
    subject = provider(fake_server)
    assert repr(subject) == f"AnthropicProvider(model='claude-test', base_url='{fake_server.url}')"
    assert (subject.name, subject.model) == ("anthropic", "claude-test")

"""The OpenAI provider against a local fake Chat Completions server (the real SDK, no network).

What both live providers do alike (errors, key safety, timeouts, malformed arguments) is in
``test_provider_live.py``; here is what only Chat Completions (and compatible servers) do.
"""

from __future__ import annotations

import json

import pytest

from fpdebug.engine.providers.openai import NO_KEY_PLACEHOLDER, OpenAIProvider
from fpdebug.errors import ProviderError
from fpdebug.trace.schema import LlmRequest, Message, PromptSegment, ToolCallRecord, ToolSchema, Usage
from tests.fakeservers import FakeServer, openai_completion, reply_with

KEY = "sk-proj-test-0123456789abcdef"

LOOKUP = ToolSchema(
    name="lookup_order",
    description="Find an order by id.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)
PING = ToolSchema(name="ping", description="Check the service.")
HELLO = LlmRequest(messages=[Message(role="user", content="hi")])


def provider(server: FakeServer, **options: object) -> OpenAIProvider:
    options.setdefault("max_retries", 0)
    options.setdefault("api_key", KEY)
    return OpenAIProvider("gpt-test", base_url=f"{server.url}/v1", **options)  # type: ignore[arg-type]


def conversation() -> LlmRequest:
    """A second-iteration request: two tool calls were made and both results came back."""
    return LlmRequest(
        system_prompt=[
            PromptSegment(source="base", text="You are a support agent."),
            PromptSegment(source="fact", injection_id="hq", text="Headquarters: Oslo."),
        ],
        messages=[
            Message(role="user", content="Where is A-17? Is the service up?"),
            Message(
                role="assistant",
                tool_calls=[
                    ToolCallRecord(id="call_a", name="lookup_order", args={"order_id": "A-17"}),
                    ToolCallRecord(id="call_b", name="ping"),
                ],
            ),
            Message(
                role="tool", tool_call_id="call_a", tool_name="lookup_order", content='{"status": "shipped"}'
            ),
            Message(role="tool", tool_call_id="call_b", tool_name="ping", content="up"),
        ],
        tools=[LOOKUP, PING],
        temperature=0.2,
        seed=7,
    )


def test_a_tool_call_round_trip(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        openai_completion(
            content="Checking B-2 too.",
            tool_calls=[("call_c", "lookup_order", '{"order_id": "B-2"}'), ("call_d", "ping", "{}")],
            finish_reason="tool_calls",
            prompt_tokens=250,
            completion_tokens=30,
            cached_tokens=128,
        )
    )
    reply = provider(fake_server).complete(conversation())

    [sent] = fake_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    body = sent.json()
    assert body["model"] == "gpt-test"
    assert (body["temperature"], body["seed"]) == (0.2, 7)
    assert body["messages"] == [
        {"role": "system", "content": "You are a support agent.\n\nHeadquarters: Oslo."},
        {"role": "user", "content": "Where is A-17? Is the service up?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A-17"}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "ping", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"status": "shipped"}'},
        {"role": "tool", "tool_call_id": "call_b", "content": "up"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Find an order by id.",
                "parameters": LOOKUP.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ping",
                "description": "Check the service.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]

    assert reply.content == "Checking B-2 too."
    assert reply.tool_calls == [
        ToolCallRecord(id="call_c", name="lookup_order", args={"order_id": "B-2"}),
        ToolCallRecord(id="call_d", name="ping", args={}),
    ]
    assert reply.stop_reason == "tool_calls"
    assert reply.usage == Usage(
        input_tokens=250, output_tokens=30, cache_read_tokens=128, input_includes_cache=True
    )


def test_a_final_answer_and_a_plain_request(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        openai_completion(content="Hello!", prompt_tokens=8, completion_tokens=2)
    )
    reply = provider(fake_server).complete(HELLO)
    body = fake_server.requests[0].json()
    assert set(body) == {"model", "messages"}
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert (reply.content, reply.tool_calls, reply.stop_reason) == ("Hello!", [], "stop")
    assert reply.usage == Usage(input_tokens=8, output_tokens=2, input_includes_cache=True)


def test_base_url_is_honoured_with_no_key_for_a_local_server(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ollama / vLLM: any path prefix, no key needed; the budget goes out as `max_completion_tokens`
    # (issue 17: a gateway in front of an o-series model refuses `max_tokens`).
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_server.handler = reply_with(openai_completion(content="from llama"))
    subject = OpenAIProvider(
        "llama3.2", base_url=f"{fake_server.url}/ollama/v1", max_retries=0, max_tokens=300
    )
    assert subject.complete(HELLO).content == "from llama"
    sent = fake_server.requests[0]
    assert sent.path == "/ollama/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {NO_KEY_PLACEHOLDER}"
    body = sent.json()
    assert (body["model"], body["max_completion_tokens"]) == ("llama3.2", 300)
    assert "max_tokens" not in body


def test_the_request_budget_wins_over_the_constructor(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    provider(fake_server, max_tokens=999, temperature=0.9).complete(
        LlmRequest(messages=[Message(role="user", content="hi")], max_tokens=50, temperature=0.0)
    )
    body = fake_server.requests[0].json()
    assert (body["max_completion_tokens"], body["temperature"]) == (50, 0.0)


def test_openai_itself_gets_max_completion_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    params = OpenAIProvider("gpt-test", api_key=KEY, max_tokens=123).build_params(HELLO)
    assert params["max_completion_tokens"] == 123
    assert "max_tokens" not in params


def test_the_key_is_sent_in_the_authorization_header(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    provider(fake_server).complete(HELLO)
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_the_key_comes_from_the_environment(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    fake_server.handler = reply_with(openai_completion(content="ok"))
    OpenAIProvider("gpt-test", base_url=f"{fake_server.url}/v1", max_retries=0).complete(HELLO)
    assert fake_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_a_non_json_error_body_is_kept_as_the_message(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(b"<html><body>502 Bad Gateway</body></html>", 502)
    with pytest.raises(ProviderError) as caught:
        provider(fake_server).complete(HELLO)
    assert caught.value.status == 502
    assert "502 Bad Gateway" in caught.value.message


def test_malformed_tool_arguments_can_be_kept_and_are_sent_back_verbatim(fake_server: FakeServer) -> None:
    raw = '{"order_id": "A-'
    fake_server.handler = reply_with(
        openai_completion(tool_calls=[("call_z", "lookup_order", raw)], finish_reason="tool_calls")
    )
    subject = provider(fake_server, malformed_args="keep")
    reply = subject.complete(HELLO)
    assert reply.tool_calls == [ToolCallRecord(id="call_z", name="lookup_order", args={}, raw_args=raw)]

    # The next request replays the model's own words, not a repaired version of them.
    fake_server.handler = reply_with(openai_completion(content="sorry"))
    follow_up = HELLO.model_copy(
        update={
            "messages": [
                *HELLO.messages,
                Message(role="assistant", tool_calls=reply.tool_calls),
                Message(
                    role="tool", tool_call_id="call_z", tool_name="lookup_order", content="invalid arguments"
                ),
            ]
        }
    )
    subject.complete(follow_up)
    sent = fake_server.requests[1].json()["messages"][1]
    assert sent["tool_calls"][0]["function"]["arguments"] == raw


def test_empty_arguments_mean_no_arguments(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        openai_completion(tool_calls=[("call_p", "ping", "")], finish_reason="tool_calls")
    )
    assert provider(fake_server).complete(HELLO).tool_calls == [
        ToolCallRecord(id="call_p", name="ping", args={})
    ]


def test_a_reply_without_choices_is_a_provider_error(fake_server: FakeServer) -> None:
    body = openai_completion(content="x")
    body["choices"] = []
    fake_server.handler = reply_with(body)
    with pytest.raises(ProviderError, match="no choices"):
        provider(fake_server).complete(HELLO)


def test_a_refusal_is_recorded_as_the_content(fake_server: FakeServer) -> None:
    body = openai_completion(content=None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    fake_server.handler = reply_with(body)
    assert provider(fake_server).complete(HELLO).content == "I can't help with that."


def test_arguments_are_sent_as_json_text(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    args = {"query": "naïve café", "limit": 3, "nested": {"a": [1, 2]}}
    provider(fake_server).complete(
        LlmRequest(
            messages=[
                Message(role="user", content="search"),
                Message(role="assistant", tool_calls=[ToolCallRecord(id="call_s", name="search", args=args)]),
                Message(role="tool", tool_call_id="call_s", tool_name="search", content="[]"),
            ]
        )
    )
    sent = fake_server.requests[0].json()["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == args

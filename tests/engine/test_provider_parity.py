"""Issue 17's provider probes, with the real SDK clients against a local fake server (no network).

Each test here failed before issue 17: a gateway refusing ``max_tokens``, ``OPENAI_BASE_URL``
without a key, ``ANTHROPIC_BASE_URL`` followed, ``is_error`` on a failed tool's result, the
response id and model and the reasoning tokens recorded, input tokens that count the cache, the
SDKs' own timeout and retry defaults, reasoning/thinking settings and prompt caching passed through.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.trace.schema import LlmRequest, Message, PromptSegment, ToolCallRecord, Usage
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_error,
    openai_stream,
    reply_with,
)

HELLO = LlmRequest(messages=[Message(role="user", content="hi")], max_tokens=100)


def _gateway(request: RecordedRequest) -> FakeResponse:
    # What an OpenAI-compatible gateway in front of an o-series / gpt-5 model answers.
    if "max_tokens" in request.json():
        return FakeResponse(
            400,
            openai_error(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                code="unsupported_parameter",
            ),
        )
    return FakeResponse(200, openai_completion(content="ok"))


def test_a_reasoning_model_behind_a_gateway_gets_max_completion_tokens(fake_server: FakeServer) -> None:
    fake_server.handler = _gateway
    subject = OpenAIProvider("o4-mini", api_key="k", base_url=f"{fake_server.url}/v1", max_retries=0)
    assert subject.complete(HELLO).content == "ok"
    assert fake_server.requests[0].json()["max_completion_tokens"] == 100


def test_legacy_max_tokens_is_the_switch_for_old_servers(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    subject = OpenAIProvider(
        "old", api_key="k", base_url=f"{fake_server.url}/v1", max_retries=0, legacy_max_tokens=True
    )
    subject.complete(HELLO)
    body = fake_server.requests[0].json()
    assert body["max_tokens"] == 100 and "max_completion_tokens" not in body
    assert subject.run_options == {"legacy_max_tokens": True}


def test_openai_base_url_from_the_environment_needs_no_key(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ollama / vLLM: OPENAI_BASE_URL set, no key at all.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake_server.url}/v1")
    fake_server.handler = reply_with(openai_completion(content="from ollama"))
    subject = OpenAIProvider("llama3.2", max_retries=0)
    assert subject.base_url == f"{fake_server.url}/v1"
    assert subject.complete(HELLO).content == "from ollama"
    assert fake_server.requests[0].path == "/v1/chat/completions"


def test_anthropic_base_url_from_the_environment_is_followed(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.url)
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "hi"}]))
    subject = AnthropicProvider("claude-test", max_retries=0)
    assert subject.complete(HELLO).content == "hi"
    assert fake_server.requests[0].path == "/v1/messages"


def test_the_sdks_own_timeout_and_retry_defaults_are_kept() -> None:
    # A fixed 60 s override turned off the Anthropic SDK's non-streaming guard (its default timeout
    # scales with max_tokens), and a slow reply became three billed requests.
    claude = AnthropicProvider("claude-test", api_key="k")
    assert claude._client.timeout == anthropic.DEFAULT_TIMEOUT
    assert claude._client.max_retries == anthropic.DEFAULT_MAX_RETRIES
    gpt = OpenAIProvider("gpt-test", api_key="k")
    assert gpt._client.timeout == openai.DEFAULT_TIMEOUT
    assert gpt._client.max_retries == openai.DEFAULT_MAX_RETRIES


def test_a_failed_tool_result_goes_to_anthropic_with_is_error(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "sorry"}]))
    request = LlmRequest(
        messages=[
            Message(role="user", content="refund A-17"),
            Message(role="assistant", tool_calls=[ToolCallRecord(id="t1", name="refund")]),
            Message(
                role="tool",
                tool_call_id="t1",
                tool_name="refund",
                content="Error: refund failed: ValueError: no such order",
                is_error=True,
            ),
        ]
    )
    AnthropicProvider("claude-test", api_key="k", base_url=fake_server.url, max_retries=0).complete(request)
    [block] = fake_server.requests[0].json()["messages"][2]["content"]
    assert block["is_error"] is True


def test_anthropic_records_id_model_and_input_tokens_with_the_cache(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(
        anthropic_message(
            [{"type": "text", "text": "hi"}],
            input_tokens=20,
            output_tokens=5,
            cache_read=1000,
            cache_write=300,
            model="claude-test-20260101",
        )
    )
    reply = AnthropicProvider("claude-test", api_key="k", base_url=fake_server.url, max_retries=0).complete(
        HELLO
    )
    assert (reply.id, reply.model) == ("msg_test", "claude-test-20260101")
    assert reply.usage.input_tokens == 1320
    assert reply.usage.total_input_tokens("anthropic") == 1320


def test_openai_records_id_model_and_reasoning_tokens(fake_server: FakeServer) -> None:
    body = openai_completion(content="42", prompt_tokens=50, completion_tokens=300, cached_tokens=40)
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 256}
    fake_server.handler = reply_with(body)
    reply = OpenAIProvider("o4-mini", api_key="k", base_url=f"{fake_server.url}/v1", max_retries=0).complete(
        HELLO
    )
    assert (reply.id, reply.model) == ("chatcmpl-test", "gpt-test")
    assert reply.usage == Usage(
        input_tokens=50,
        output_tokens=300,
        cache_read_tokens=40,
        reasoning_tokens=256,
        input_includes_cache=True,
    )


def test_an_old_anthropic_trace_still_reads_its_cache_tokens() -> None:
    # Traces written before the marker recorded Anthropic's own split; they are read inclusive.
    old = Usage(input_tokens=20, cache_read_tokens=1000, cache_write_tokens=300)
    assert old.total_input_tokens("anthropic") == 1320
    assert old.total_input_tokens("openai") == 20


def test_openai_reasoning_effort_is_sent_and_recorded(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    subject = OpenAIProvider(
        "o4-mini", api_key="k", base_url=f"{fake_server.url}/v1", max_retries=0, reasoning_effort="high"
    )
    subject.complete(HELLO)
    assert fake_server.requests[0].json()["reasoning_effort"] == "high"
    assert subject.run_options == {"reasoning_effort": "high"}


def test_anthropic_thinking_and_prompt_caching(fake_server: FakeServer) -> None:
    fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
    thinking = {"type": "enabled", "budget_tokens": 2048}
    subject = AnthropicProvider(
        "claude-test",
        api_key="k",
        base_url=fake_server.url,
        max_retries=0,
        thinking=thinking,
        cache_prompt=True,
    )
    request = HELLO.model_copy(
        update={
            "system_prompt": [
                PromptSegment(source="base", text="You are a support agent."),
                PromptSegment(source="fact", injection_id="hq", text="Headquarters: Oslo."),
            ]
        }
    )
    subject.complete(request)
    body = fake_server.requests[0].json()
    assert body["thinking"] == thinking
    # The always-on prefix carries the breakpoint; the text sent is the same as without caching.
    assert body["system"] == [
        {"type": "text", "text": "You are a support agent.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n\nHeadquarters: Oslo."},
    ]
    assert subject.run_options == {"thinking": thinking, "cache_prompt": True}


def test_anthropic_streams_deltas_and_returns_the_final_reply(fake_server: FakeServer) -> None:
    fake_server.handler = lambda request: anthropic_stream(
        ["Hel", "lo ", "there"], input_tokens=7, output_tokens=3
    )
    pieces: list[str] = []
    subject = AnthropicProvider(
        "claude-test", api_key="k", base_url=fake_server.url, max_retries=0, on_delta=pieces.append
    )
    reply = subject.complete(HELLO)
    assert pieces == ["Hel", "lo ", "there"]
    assert fake_server.requests[0].json()["stream"] is True
    assert (reply.content, reply.stop_reason) == ("Hello there", "end_turn")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (7, 3)


def test_openai_streams_deltas_and_returns_the_final_reply(fake_server: FakeServer) -> None:
    fake_server.handler = lambda request: openai_stream(["Hel", "lo"], prompt_tokens=9, completion_tokens=2)
    pieces: list[str] = []
    subject = OpenAIProvider(
        "gpt-test", api_key="k", base_url=f"{fake_server.url}/v1", max_retries=0, on_delta=pieces.append
    )
    reply = subject.complete(HELLO)
    assert pieces == ["Hel", "lo"]
    assert fake_server.requests[0].json()["stream"] is True
    assert (reply.content, reply.stop_reason, reply.id) == ("Hello", "stop", "chatcmpl-test")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (9, 2)


def test_a_failing_delta_sink_does_not_fail_the_call(fake_server: FakeServer) -> None:
    fake_server.handler = lambda request: anthropic_stream(["a", "b"])

    def broken(text: str) -> None:
        raise RuntimeError("display gone")

    subject = AnthropicProvider(
        "claude-test", api_key="k", base_url=fake_server.url, max_retries=0, on_delta=broken
    )
    assert subject.complete(HELLO).content == "ab"

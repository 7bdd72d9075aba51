"""What both live providers must do alike, each against its own fake API server (the real SDKs).

Failures become ProviderErrors with the status and the server's message; the key never leaks; a
timeout, a refused connection and a blocked call are clear errors; malformed tool-call arguments are
refused or kept as asked. What only one API does is tested in ``test_provider_anthropic.py`` and
``test_provider_openai.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from fpdebug.engine.providers import live_provider
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.base import SdkProvider, allow_live_calls
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.errors import LiveCallRefusedError, ProviderError
from fpdebug.trace.schema import LlmRequest, Message, ToolCallRecord
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
    reply_with,
)

HELLO = LlmRequest(messages=[Message(role="user", content="hi")])


@dataclass(frozen=True)
class Live:
    """One live provider and the wire format of its fake server."""

    name: str
    """The provider's default name."""
    provider_class: type[SdkProvider]
    """The class under test."""
    model: str
    """The model asked."""
    key: str
    """The test key (it must never show up anywhere but the request headers)."""
    env_var: str
    """Where the key comes from by default."""
    api_path: str
    """What follows the server's URL in ``base_url``."""
    text_reply: Callable[[str], dict[str, Any]]
    """A reply body with just text."""
    error_body: Callable[[str, str], dict[str, Any]]
    """An error body for ``(kind, message)``."""
    tool_call_reply: Callable[[str, str, str], dict[str, Any]]
    """A reply body with one tool call ``(id, name, arguments as text)``."""

    def provider(self, server: FakeServer, **options: Any) -> SdkProvider:
        """The provider pointed at the fake server, with no retries unless asked."""
        options.setdefault("max_retries", 0)
        options.setdefault("api_key", self.key)
        return self.provider_class(self.model, base_url=self.base_url(server.url), **options)

    def base_url(self, server_url: str) -> str:
        """The ``base_url`` for a server at ``server_url``."""
        return f"{server_url}{self.api_path}"


ANTHROPIC = Live(
    name="anthropic",
    provider_class=AnthropicProvider,
    model="claude-test",
    api_path="",
    key="sk-ant-test-0123456789abcdef",
    env_var="ANTHROPIC_API_KEY",
    text_reply=lambda text: anthropic_message([{"type": "text", "text": text}]),
    error_body=anthropic_error,
    tool_call_reply=lambda call_id, name, raw: anthropic_message(
        [{"type": "tool_use", "id": call_id, "name": name, "input": raw}], stop_reason="tool_use"
    ),
)
OPENAI = Live(
    name="openai",
    provider_class=OpenAIProvider,
    model="gpt-test",
    api_path="/v1",
    key="sk-proj-test-0123456789abcdef",
    env_var="OPENAI_API_KEY",
    text_reply=lambda text: openai_completion(content=text),
    error_body=lambda kind, message: openai_error(message, kind=kind),
    tool_call_reply=lambda call_id, name, raw: openai_completion(
        tool_calls=((call_id, name, raw),), finish_reason="tool_calls"
    ),
)
LIVE = [pytest.param(ANTHROPIC, id="anthropic"), pytest.param(OPENAI, id="openai")]


@pytest.mark.parametrize(
    ("live", "status", "kind", "message"),
    [
        (ANTHROPIC, 401, "authentication_error", "invalid x-api-key"),
        (ANTHROPIC, 403, "permission_error", "this key may not use the model"),
        (
            ANTHROPIC,
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        (ANTHROPIC, 500, "api_error", "Internal server error"),
        (ANTHROPIC, 529, "overloaded_error", "Overloaded"),
        (OPENAI, 401, "invalid_request_error", "Incorrect API key provided"),
        (OPENAI, 403, "permission_denied", "Project does not have access to model"),
        (OPENAI, 429, "requests", "Rate limit reached for requests"),
        (OPENAI, 500, "server_error", "The server had an error while processing your request"),
        (OPENAI, 503, "server_error", "The engine is currently overloaded"),
    ],
    ids=lambda value: value.name if isinstance(value, Live) else None,
)
def test_http_errors_become_provider_errors_with_status_and_message(
    fake_server: FakeServer, live: Live, status: int, kind: str, message: str
) -> None:
    fake_server.handler = reply_with(live.error_body(kind, message), status)
    with pytest.raises(ProviderError) as caught:
        live.provider(fake_server).complete(HELLO)
    error = caught.value
    assert error.status == status
    assert error.provider == live.name
    assert message in error.message
    assert kind in error.message
    assert f"HTTP {status}" in str(error)
    assert len(fake_server.requests) == 1  # max_retries=0: one attempt, no hidden retry


@pytest.mark.parametrize("live", LIVE)
def test_a_huge_error_body_is_cut_short(fake_server: FakeServer, live: Live) -> None:
    fake_server.handler = reply_with(live.error_body("api_error", "x" * 50_000), 500)
    with pytest.raises(ProviderError) as caught:
        live.provider(fake_server).complete(HELLO)
    assert len(caught.value.message) < 1100
    assert "more characters" in caught.value.message


@pytest.mark.parametrize("live", LIVE)
def test_a_server_that_echoes_the_key_does_not_leak_it(fake_server: FakeServer, live: Live) -> None:
    fake_server.handler = reply_with(live.error_body("authentication_error", f"bad key {live.key}."), 401)
    subject = live.provider(fake_server)
    with pytest.raises(ProviderError) as caught:
        subject.complete(HELLO)
    error = caught.value
    for text in (str(error), repr(error), error.message, *map(str, error.args), repr(subject), str(subject)):
        assert live.key not in text
    assert "[redacted]" in error.message
    # Nothing chained either: a traceback printer would otherwise show the SDK's exception.
    assert error.__cause__ is None
    assert error.__suppress_context__


@pytest.mark.parametrize("live", LIVE)
def test_a_timeout_is_a_provider_error(fake_server: FakeServer, live: Live) -> None:
    fake_server.handler = lambda request: FakeResponse(200, live.text_reply("late"), delay=5.0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out after 0.3s") as caught:
        live.provider(fake_server, timeout=0.3).complete(HELLO)
    assert caught.value.status is None
    assert time.monotonic() - started < 4.0


@pytest.mark.parametrize("live", LIVE)
def test_connection_refused_is_a_provider_error(live: Live) -> None:
    closed = FakeServer().start()
    url = closed.url
    closed.stop()
    refused = r"could not reach http://127\.0\.0\.1:\d+.*Connect"
    subject = live.provider_class(live.model, api_key=live.key, base_url=live.base_url(url), max_retries=0)
    with allow_live_calls(True), pytest.raises(ProviderError, match=refused) as caught:
        subject.complete(HELLO)
    assert caught.value.status is None
    assert live.key not in str(caught.value)


@pytest.mark.parametrize("live", LIVE)
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"order_id": "A-', "is not valid JSON"),
        ("'order_id': 1", "is not valid JSON"),
        ('"A-17"', "is a JSON string, not an object"),
        ("[1, 2]", "is a JSON array, not an object"),
    ],
)
def test_malformed_tool_arguments_raise_by_default(
    fake_server: FakeServer, live: Live, raw: str, problem: str
) -> None:
    fake_server.handler = reply_with(live.tool_call_reply("call_9", "lookup_order", raw))
    with pytest.raises(ProviderError) as caught:
        live.provider(fake_server).complete(HELLO)
    message = caught.value.message
    assert "malformed tool-call arguments" in message
    assert "'call_9'" in message and "'lookup_order'" in message
    assert problem in message
    assert caught.value.status is None


@pytest.mark.parametrize("live", LIVE)
def test_malformed_tool_arguments_can_be_kept_for_the_loop(fake_server: FakeServer, live: Live) -> None:
    raw = '{"order_id": "A-'
    fake_server.handler = reply_with(live.tool_call_reply("call_9", "lookup_order", raw))
    reply = live.provider(fake_server, malformed_args="keep").complete(HELLO)
    assert reply.tool_calls == [ToolCallRecord(id="call_9", name="lookup_order", args={}, raw_args=raw)]


@pytest.mark.parametrize("live", LIVE)
def test_no_key_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, live: Live) -> None:
    monkeypatch.delenv(live.env_var, raising=False)
    with pytest.raises(ProviderError, match=live.env_var) as caught:
        live.provider_class(live.model)
    assert caught.value.provider == live.name


@pytest.mark.parametrize("live", LIVE)
def test_a_blocked_provider_never_reaches_the_server(live: Live) -> None:
    # No fake_server fixture here: the suite-wide block stays in force.
    with FakeServer() as server:
        subject = live.provider(server)
        with pytest.raises(LiveCallRefusedError) as caught:
            subject.complete(HELLO)
        assert server.requests == []
    assert caught.value.provider == live.name
    assert live.key not in str(caught.value)


@pytest.mark.parametrize(
    ("live", "class_name"),
    [(ANTHROPIC, "AnthropicProvider"), (OPENAI, "OpenAIProvider")],
    ids=["anthropic", "openai"],
)
def test_repr_names_the_model_and_endpoint_only(fake_server: FakeServer, live: Live, class_name: str) -> None:
    subject = live.provider(fake_server)
    assert repr(subject) == f"{class_name}(model='{live.model}', base_url='{live.base_url(fake_server.url)}')"
    assert (subject.name, subject.model) == (live.name, live.model)


@pytest.mark.parametrize("live", LIVE)
def test_live_provider_builds_each_by_name(monkeypatch: pytest.MonkeyPatch, live: Live) -> None:
    monkeypatch.setenv(live.env_var, live.key)
    built = live_provider(live.name, live.model, base_url="http://127.0.0.1:9/v1")
    assert type(built) is live.provider_class
    assert (built.name, built.model, built.base_url) == (live.name, live.model, "http://127.0.0.1:9/v1")


def test_live_provider_refuses_an_unknown_name() -> None:
    with pytest.raises(ProviderError, match="unknown live provider 'scripted'; use one of anthropic, openai"):
        live_provider("scripted", "m")

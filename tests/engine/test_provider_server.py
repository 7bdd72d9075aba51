"""The endpoint a live provider talked to: recorded on ``run_start`` (host and port only) and exported
as the OTel GenAI ``server.address`` / ``server.port`` of each chat span."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.base import server_of
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.engine.providers.openai_responses import OpenAIResponsesProvider
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.engine.sink import MemorySink
from fpdebug.export.stream import OtlpStreamSink
from fpdebug.trace.schema import RunStartEvent
from tests.engine.test_agent import record
from tests.fakeservers import FakeServer, anthropic_message, openai_completion, reply_with

KEY = "sk-test-0123456789abcdef"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://user:hunter2@gateway.example.com:8443/v1?api_key=s3cret#frag",
            ("gateway.example.com", 8443),
        ),
        ("https://api.anthropic.com", ("api.anthropic.com", 443)),
        ("http://localhost:11434/v1", ("localhost", 11434)),
        ("http://[::1]/v1", ("::1", 80)),
        ("not a url", None),
        ("http://host:99999/", None),
    ],
)
def test_only_the_host_and_port_of_an_endpoint_are_kept(url: str, expected: tuple[str, int] | None) -> None:
    assert server_of(url) == expected


def test_the_sdks_default_endpoint_is_the_server_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert AnthropicProvider("claude-test", api_key=KEY).server == ("api.anthropic.com", 443)
    assert OpenAIProvider("gpt-test", api_key=KEY).server == ("api.openai.com", 443)


def test_a_base_url_with_credentials_records_no_credentials(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    port = int(fake_server.url.rsplit(":", 1)[1])
    url = f"http://someone:pa55word-xyz@127.0.0.1:{port}/v1?token=qs-secret-123"
    run = record(
        Agent("live"), "hi", OpenAIProvider("gpt-test", api_key=KEY, base_url=url, max_retries=0), tmp_path
    )
    (start,) = run.of("run_start")
    assert (start.server_address, start.server_port) == ("127.0.0.1", port)
    text = run.path.read_text()
    assert "pa55word-xyz" not in text and "qs-secret-123" not in text and "someone" not in text


@pytest.mark.parametrize("kind", ["anthropic", "openai", "openai-responses"])
def test_a_live_run_records_its_server_and_exports_it_on_each_chat_span(
    fake_server: FakeServer, kind: str
) -> None:
    port = int(fake_server.url.rsplit(":", 1)[1])
    if kind == "anthropic":
        fake_server.handler = reply_with(anthropic_message([{"type": "text", "text": "ok"}]))
        model: object = AnthropicProvider("claude-test", api_key=KEY, base_url=fake_server.url, max_retries=0)
    elif kind == "openai":
        fake_server.handler = reply_with(openai_completion(content="ok"))
        model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    else:
        fake_server.handler = reply_with(
            {
                "id": "resp_1",
                "object": "response",
                "created_at": 0,
                "model": "gpt-test",
                "status": "completed",
                "output": [
                    {
                        "type": "message",
                        "id": "msg_1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}],
                    }
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
            }
        )
        model = OpenAIResponsesProvider(
            "gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0
        )
    exporter = InMemorySpanExporter()
    inner = MemorySink()
    sink = OtlpStreamSink(inner, exporter=exporter)
    result = Agent("live").run("hi", provider=model, sink=sink)  # type: ignore[arg-type]
    sink.close()
    assert result.status == "completed"
    start = inner.events[0]
    assert isinstance(start, RunStartEvent)
    assert (start.server_address, start.server_port) == ("127.0.0.1", port)
    (chat,) = [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
    assert chat.attributes is not None
    assert (chat.attributes["server.address"], chat.attributes["server.port"]) == ("127.0.0.1", port)


def test_a_replay_talks_to_no_server_and_exports_none(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.handler = reply_with(openai_completion(content="ok"))
    model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    run = record(Agent("live"), "hi", model, tmp_path)
    exporter = InMemorySpanExporter()
    inner = MemorySink()
    sink = OtlpStreamSink(inner, exporter=exporter)
    Agent("live").run("hi", provider=ReplayProvider.from_trace(run.path), sink=sink)
    sink.close()
    start = inner.events[0]
    assert isinstance(start, RunStartEvent) and start.server_address is None and start.server_port is None
    (chat,) = [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
    assert chat.attributes is not None and "server.address" not in chat.attributes

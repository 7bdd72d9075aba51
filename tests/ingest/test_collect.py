"""``fpdebug collect``: the real OTLP/HTTP exporter sends, a follower sees the run as it arrives."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from fpdebug.ingest.collect import RAW_FILE, CollectorServer, make_server
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, RunEndEvent, ToolResultEvent, TurnEndEvent

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "ingest" / "fixtures" / "otlp"
SYSTEM = '[{"type":"text","content":"Be brief."}]'


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[CollectorServer]:
    server = make_server(tmp_path / "traces", port=0, max_body=64 * 1024)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    server.collector.close()


def _url(server: CollectorServer, path: str) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}{path}"


def _kinds(reader: TraceReader) -> list[str]:
    reader.refresh()
    return [record.kind for record in list(reader)[1:]]


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_real_exporter_spans_reach_a_follower_as_they_end(
    collector: CollectorServer, compression: Compression
) -> None:
    exporter = OTLPSpanExporter(endpoint=_url(collector, "/v1/traces"), compression=compression, timeout=5)
    provider = TracerProvider(resource=Resource.create({"service.name": "weather"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # each span is sent when it ends
    tracer = provider.get_tracer("my-agent", "1.0")
    directory = Path(collector.collector.directory)
    with tracer.start_as_current_span("invoke_agent weather") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "weather")
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.id": "chatcmpl-1",
                    "gen_ai.usage.input_tokens": 30,
                    "gen_ai.usage.output_tokens": 7,
                    "gen_ai.system_instructions": SYSTEM,
                    "gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text","content":"Paris?"}]}]',
                    "gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"tool_call","id":"c1",'
                    '"name":"get_weather","arguments":{"city":"Paris"}}],"finish_reason":"tool_calls"}]',
                }
            )
        (trace_file,) = directory.glob("otlp-*.fptrace.jsonl")
        follower = TraceReader(trace_file, wait_for_header=True)
        assert _kinds(follower) == ["run_start", "turn_start", "llm_call"]
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "c1",
                    "gen_ai.tool.call.arguments": '{"city":"Paris"}',
                    "gen_ai.tool.call.result": "15C, cloudy",
                }
            )
        assert _kinds(follower)[-1] == "tool_result"
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.id": "chatcmpl-2",
                    "gen_ai.usage.input_tokens": 50,
                    "gen_ai.usage.output_tokens": 9,
                    "gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"text",'
                    '"content":"15C and cloudy."}],"finish_reason":"stop"}]',
                }
            )
        agent.set_attribute("gen_ai.usage.input_tokens", 80)  # a run total: never added to the calls
    provider.shutdown()
    assert _kinds(follower) == [
        "run_start",
        "turn_start",
        "llm_call",
        "tool_result",
        "llm_call",
        "turn_end",
        "run_end",
    ]
    records = list(follower)[1:]
    assert follower.problems() == []
    assert follower.header.source is not None and follower.header.source.producer == "my-agent 1.0"
    (tool_result,) = [r for r in records if isinstance(r, ToolResultEvent)]
    assert (tool_result.tool_call_id, tool_result.args, tool_result.result) == (
        "c1",
        {"city": "Paris"},
        "15C, cloudy",
    )
    calls = [r for r in records if isinstance(r, LlmCallEvent)]
    assert [c.response.id for c in calls if c.response] == ["chatcmpl-1", "chatcmpl-2"]
    (end,) = [r for r in records if isinstance(r, TurnEndEvent)]
    assert (end.final_content, end.input_tokens, end.output_tokens) == ("15C and cloudy.", 80, 16)
    assert records[-1] == next(r for r in records if isinstance(r, RunEndEvent))
    follower.close()
    assert (directory / RAW_FILE).stat().st_size > 0


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


PROTOBUF = {"Content-Type": "application/x-protobuf"}


def test_bad_bodies_get_400_and_nothing_is_written(collector: CollectorServer) -> None:
    directory = Path(collector.collector.directory)
    url = _url(collector, "/v1/traces")
    status, message = _post(url, b"\x0a\xff\xff\xff\x0f", PROTOBUF)
    assert status == 400 and "not a valid OTLP/protobuf traces request" in message
    status, message = _post(url, b"{not json", {"Content-Type": "application/json"})
    assert status == 400 and "not JSON" in message
    status, message = _post(url, b"\x1f\x8b garbage", {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status == 400 and "gzip" in message
    status, _message = _post(url, b"x", {"Content-Type": "text/plain"})
    assert status == 415
    status, _message = _post(_url(collector, "/v1/metrics"), b"", PROTOBUF)
    assert status == 404
    assert list(directory.iterdir()) == []


def test_oversize_bodies_get_413(collector: CollectorServer) -> None:
    url = _url(collector, "/v1/traces")
    status, message = _post(url, b"\x00" * (64 * 1024 + 1), PROTOBUF)
    assert status == 413 and "over the limit" in message
    bomb = gzip.compress(b"\x00" * (1 << 20))  # 1 MiB of zeros, a kilobyte compressed
    status, message = _post(url, bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
    assert status == 413 and "decompressed" in message
    assert list(Path(collector.collector.directory).iterdir()) == []


def test_json_bodies_with_hex_ids_and_gzip(collector: CollectorServer) -> None:
    request = json.loads((FIXTURES / "openai_v2_latest.otlp.json").read_text())
    body = gzip.compress(json.dumps(request).encode())
    status, text = _post(
        _url(collector, "/v1/traces"), body, {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    assert (status, text) == (200, "{}")
    (trace_file,) = Path(collector.collector.directory).glob("otlp-*.fptrace.jsonl")
    with TraceReader(trace_file) as reader:
        assert [r.kind for r in list(reader)[1:]].count("llm_call") == 3
        assert reader.problems() == []


def test_a_kill_after_the_200_loses_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "live"
    process = subprocess.Popen(
        [sys.executable, "-m", "fpdebug", "collect", "--port", "0", "--dir", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "OTLP/HTTP on http://127.0.0.1:" in line, line + (
            process.stderr.read() if process.stderr else ""
        )
        port = int(line.split("http://127.0.0.1:", 1)[1].split(" ", 1)[0])
        body = (FIXTURES / "anthropic_sdk.otlp.pb").read_bytes()
        assert _post(f"http://127.0.0.1:{port}/v1/traces", body, PROTOBUF)[0] == 200
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(timeout=10)
    (trace_file,) = directory.glob("otlp-*.fptrace.jsonl")
    with TraceReader(trace_file) as reader:
        kinds = [r.kind for r in list(reader)[1:]]
        assert reader.problems() == []
    assert kinds.count("llm_call") == 3 and kinds.count("tool_result") == 3 and kinds[-1] == "run_end"


def test_loopback_unless_host_is_given_and_then_it_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.cli import main

    bound: list[str] = []
    monkeypatch.setattr(
        CollectorServer, "serve_forever", lambda self, poll_interval=0.5: bound.append(self.server_address[0])
    )
    assert main(["collect", "--port", "0", "--dir", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    assert bound == ["127.0.0.1"] and "http://127.0.0.1:" in out and err == ""
    assert main(["collect", "--port", "0", "--dir", str(tmp_path / "b"), "--host", "0.0.0.0"]) == 0
    _out, err = capsys.readouterr()
    assert bound[-1] == "0.0.0.0" and "not loopback, as --host asked" in err
    assert main(["collect", "--port", "0", "--dir", str(tmp_path / "c"), "--max-body", "0"]) == 2


def test_logs_posted_before_their_spans_are_merged_live(collector: CollectorServer) -> None:
    """openai-v2 2.1b0's legacy layout: content in log records, sent to /v1/logs."""
    logs = (FIXTURES / "openai_v2_legacy_events.logs.otlp.pb").read_bytes()
    traces = (FIXTURES / "openai_v2_legacy_events.otlp.pb").read_bytes()
    assert _post(_url(collector, "/v1/logs"), logs, PROTOBUF)[0] == 200
    assert (
        _post(_url(collector, "/v1/traces"), gzip.compress(traces), {**PROTOBUF, "Content-Encoding": "gzip"})[
            0
        ]
        == 200
    )
    (trace_file,) = Path(collector.collector.directory).glob("otlp-*.fptrace.jsonl")
    with TraceReader(trace_file) as reader:
        records = list(reader)[1:]
    calls = [r for r in records if isinstance(r, LlmCallEvent)]
    assert [len(c.request.messages) for c in calls] == [1, 4, 6]
    assert [r.tool_call_id for r in records if isinstance(r, ToolResultEvent)] == [
        "call_Wx7PARIS0001",
        "call_Wx7TOKYO0002",
        "call_Calc7DIFF003",
    ]
    raw = (Path(collector.collector.directory) / RAW_FILE).read_bytes().splitlines()
    assert len(raw) == 2 and b"resourceLogs" in raw[0] and b"resourceSpans" in raw[1]


def test_open_trace_files_are_bounded(tmp_path: Path) -> None:
    """Traces whose root never comes (legacy layout) do not hold a file each forever."""
    from fpdebug.ingest.collect import Collector, decode_body

    collector = Collector(tmp_path, max_open=2)
    body = (FIXTURES / "openai_v2_legacy_events.otlp.pb").read_bytes()
    request = decode_body("traces", body, content_type="application/x-protobuf")
    spans = request.resource_spans[0].scope_spans[0].spans  # the three chat spans, no root
    for number in range(5):
        for span in spans:
            span.trace_id = bytes([number + 1]) * 16
        collector.accept("traces", request)
    assert sum(not trace.writer.closed for trace in collector._traces.values()) <= 2
    for span in spans:  # a trace closed for the bound reopens and goes on
        span.trace_id = bytes([1]) * 16
        span.span_id = bytes([9]) + span.span_id[1:]
        for attribute in span.attributes:
            if attribute.key == "gen_ai.response.id":  # new calls, not duplicates of the first ones
                attribute.value.string_value += "-again"
    collector.accept("traces", request)
    collector.close()
    with TraceReader(tmp_path / f"otlp-{'01' * 16}.fptrace.jsonl") as reader:
        assert reader.problems() == []
        assert [r.kind for r in list(reader)[1:]].count("llm_call") == 6

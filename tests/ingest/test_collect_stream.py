"""``fpdebug collect`` spools each body to disk and reads it with the streaming readers.

Driven through the collector's own functions (no server, no subprocess): the HTTP path is
covered by tests/ingest/test_collect.py, which runs the real exporter against a real server.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fpdebug.ingest import collect as collect_module
from fpdebug.ingest.collect import RAW_FILE, BadRequest, Collector, plan_body, raw_json_pieces, spool_body
from fpdebug.ingest.otlp import import_otlp
from fpdebug.ingest.otlp_decode import normalise_ids
from fpdebug.trace.reader import TraceReader

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"


def _traces(copies: int = 1) -> ExportTraceServiceRequest:
    """The openai-v2 run, ``copies`` times over (a trace each), in one request."""
    template = ExportTraceServiceRequest()
    json_format.ParseDict(
        normalise_ids(json.loads((FIXTURES / "openai_v2_latest.otlp.json").read_text())), template
    )
    request = ExportTraceServiceRequest()
    for number in range(copies):
        resource_spans = request.resource_spans.add()
        resource_spans.CopyFrom(template.resource_spans[0])
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.trace_id = (number + 1).to_bytes(16, "big")
    return request


def _accept(
    collector: Collector, body: bytes, content_type: str, encoding: str = "", signal: Any = "traces"
) -> None:
    spooled = spool_body(
        io.BytesIO(body), len(body), directory=collector.directory, content_encoding=encoding, limit=1 << 30
    )
    with spooled:
        collector.accept_file(signal, spooled, plan_body(signal, spooled, content_type=content_type))


@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_the_raw_line_is_what_message_to_dict_wrote(tmp_path: Path, signal: str) -> None:
    """The verbatim line, pieced together span by span, is the line the whole message gave."""
    if signal == "traces":
        message: Any = _traces(3)
    else:
        message = ExportLogsServiceRequest.FromString(
            (FIXTURES / "openai_v2_legacy_events.logs.otlp.pb").read_bytes()
        )
    body = io.BytesIO(message.SerializeToString())
    plan = plan_body(signal, body, content_type="application/x-protobuf")  # type: ignore[arg-type]
    line = b"".join(raw_json_pieces(signal, body, plan))  # type: ignore[arg-type]
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == json_format.MessageToDict(message)


def test_an_empty_request_is_a_line_import_can_read(tmp_path: Path) -> None:
    collector = Collector(tmp_path)
    _accept(collector, b"", "application/x-protobuf")
    collector.close()
    assert (tmp_path / RAW_FILE).read_bytes() == b'{"resourceSpans":[]}\n'


def test_a_large_gzip_json_body_writes_every_trace_and_its_raw_line(tmp_path: Path) -> None:
    request = _traces(12)
    body = gzip.compress(json.dumps(json_format.MessageToDict(request), indent=2).encode())
    collector = Collector(tmp_path / "live")
    (tmp_path / "live").mkdir()
    _accept(collector, body, "application/json", "gzip")
    collector.close()
    files = sorted((tmp_path / "live").glob("otlp-*.fptrace.jsonl"))
    assert len(files) == 12
    with TraceReader(files[0]) as reader:
        assert reader.problems() == []
        assert [r.kind for r in list(reader)[1:]].count("llm_call") == 3
    assert sorted(p.name for p in (tmp_path / "live").iterdir()) == sorted(
        [*(f.name for f in files), RAW_FILE]
    )
    summary = import_otlp([tmp_path / "live" / RAW_FILE], tmp_path / "again.fptrace.jsonl")
    assert summary.runs == 12 and summary.counts["llm_call"] == 36


def test_spooled_bodies_are_files_not_memory(tmp_path: Path) -> None:
    body = gzip.compress(_traces(2).SerializeToString())
    spooled = spool_body(io.BytesIO(body), len(body), directory=tmp_path, content_encoding="gzip")
    with spooled:
        assert os.fstat(spooled.fileno()).st_size == len(_traces(2).SerializeToString())
    assert list(tmp_path.iterdir()) == []  # anonymous: nothing left behind


@pytest.mark.parametrize(
    ("body", "encoding", "status", "message"),
    [
        (gzip.compress(b"x" * 5000, mtime=0)[:-12], "gzip", 400, "ends before its end of stream"),
        (b"\x1f\x8b garbage", "gzip", 400, "not valid gzip"),
        (gzip.compress(b"\x00" * (1 << 20), mtime=0), "gzip", 413, "over 65536 bytes once decompressed"),
        (b"abc", "br", 415, "unsupported Content-Encoding"),
    ],
)
def test_bad_and_oversize_encodings(
    tmp_path: Path, body: bytes, encoding: str, status: int, message: str
) -> None:
    with pytest.raises(BadRequest, match=message) as caught:
        spool_body(io.BytesIO(body), len(body), directory=tmp_path, content_encoding=encoding, limit=65536)
    assert caught.value.status == status
    assert list(tmp_path.iterdir()) == []


def test_a_short_body_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="ended after 3 of its 10 bytes") as caught:
        spool_body(io.BytesIO(b"abc"), 10, directory=tmp_path)
    assert caught.value.status == 400


def test_a_bad_span_deep_in_a_body_writes_nothing(tmp_path: Path) -> None:
    obj = json_format.MessageToDict(_traces(5))
    obj["resourceSpans"][4]["scopeSpans"][0]["spans"][-1]["kind"] = {"not": "a kind"}
    collector = Collector(tmp_path)
    with pytest.raises(
        BadRequest, match="not a valid OTLP/JSON traces request: .*the span at byte"
    ) as caught:
        _accept(collector, orjson.dumps(obj), "application/json")
    assert caught.value.status == 400
    collector.close()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_raw_write_leaves_no_half_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collector = Collector(tmp_path)
    body = _traces(1).SerializeToString()
    _accept(collector, body, "application/x-protobuf")
    before = (tmp_path / RAW_FILE).read_bytes()
    calls: list[int] = []
    original = collect_module._write_all

    def failing(fd: int, data: bytes | bytearray) -> None:
        calls.append(len(data))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        original(fd, data)

    monkeypatch.setattr(collect_module, "_CHUNK", 4096)  # several writes for one line
    monkeypatch.setattr(collect_module, "_write_all", failing)
    with pytest.raises(OSError, match="No space"):
        _accept(collector, _traces(3).SerializeToString(), "application/x-protobuf")
    assert (tmp_path / RAW_FILE).read_bytes() == before
    monkeypatch.setattr(collect_module, "_write_all", original)
    _accept(collector, body, "application/x-protobuf")  # the next line follows a whole one
    collector.close()
    lines = (tmp_path / RAW_FILE).read_bytes().splitlines()
    assert len(lines) == 2 and all(orjson.loads(line) for line in lines)


def test_a_line_a_kill_cut_short_is_dropped_on_reopening(tmp_path: Path) -> None:
    whole = orjson.dumps(json_format.MessageToDict(_traces(1))) + b"\n"
    (tmp_path / RAW_FILE).write_bytes(whole + whole[: len(whole) // 2])  # never acknowledged
    collector = Collector(tmp_path)
    _accept(collector, _traces(1).SerializeToString(), "application/x-protobuf")
    collector.close()
    lines = (tmp_path / RAW_FILE).read_bytes().splitlines()
    assert len(lines) == 2 and all(orjson.loads(line) for line in lines)

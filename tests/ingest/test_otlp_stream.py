"""ONE large OTLP request read in bounded memory: the same spans and the same trace as a whole parse.

Every fixture is re-encoded with the real ``opentelemetry-proto`` classes as one JSON document
(compact, pretty, snake_case, hex ids) and as one protobuf body, then read by
:mod:`fpdebug.ingest.otlp_stream` and compared with the whole-request decode the importer used
before (``decode_json_object`` / ``decode_protobuf`` fed to one :class:`TraceConverter`).
"""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fpdebug.cli import main
from fpdebug.ingest import otlp_stream
from fpdebug.ingest.otlp import ImportSummary, TraceConverter, import_otlp
from fpdebug.ingest.otlp_decode import (
    OtlpDecodeError,
    decode_json_object,
    decode_protobuf,
    detect_encoding,
    normalise_ids,
)
from fpdebug.trace.redact import default_redactor
from fpdebug.trace.writer import dump_record

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
TRACE_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.otlp.*") if ".logs." not in p.name)


def _request(name: str) -> ExportTraceServiceRequest:
    data = (FIXTURES / name).read_bytes()
    request = ExportTraceServiceRequest()
    if name.endswith(".json"):
        json_format.ParseDict(normalise_ids(orjson.loads(data)), request)
    else:
        request.ParseFromString(data)
    return request


def _hex_ids(node: Any) -> Any:
    """``MessageToDict`` writes ids in base64; the OTLP/HTTP spec (and collectors) write hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"):
                node[key] = base64.b64decode(value).hex().upper()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
    return node


ENCODINGS: dict[str, Callable[[ExportTraceServiceRequest], bytes]] = {
    "protobuf": lambda request: request.SerializeToString(),
    "json": lambda request: orjson.dumps(json_format.MessageToDict(request)),
    "json-pretty-hex": lambda request: json.dumps(
        _hex_ids(json_format.MessageToDict(request)), indent=2
    ).encode(),
    "json-snake": lambda request: orjson.dumps(
        json_format.MessageToDict(request, preserving_proto_field_name=True)
    ),
}


def _streamed(data: bytes) -> tuple[otlp_stream.Plan, list[Any]]:
    handle = io.BytesIO(data)
    encoding = detect_encoding(handle)
    assert encoding in ("otlp-json", "otlp-protobuf")
    plan = otlp_stream.plan(handle, encoding, name="x")
    return plan, list(otlp_stream.records(handle, plan))


def _whole(data: bytes) -> list[Any]:
    spans, logs = (
        decode_protobuf(data) if not data.startswith(b"{") else decode_json_object(orjson.loads(data))
    )
    return spans or logs


def _events_of_whole_import(data: bytes) -> list[bytes]:
    """What the importer wrote before it streamed: one request decoded whole, fed in one batch."""
    lines: list[bytes] = []
    redactor = default_redactor()
    converter = TraceConverter(
        lambda event: lines.append(redactor.redact_line(dump_record(event))), ImportSummary(Path("x"), "otlp")
    )
    converter.add(_whole(data), [])
    converter.finish()
    return lines


def _events_of_import(tmp_path: Path, data: bytes) -> list[bytes]:
    source = tmp_path / "one-request"
    source.write_bytes(data)
    out = tmp_path / "out.fptrace.jsonl"
    import_otlp([source], out)
    return [line + b"\n" for line in out.read_bytes().splitlines()[1:]]


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("name", TRACE_FIXTURES)
def test_streamed_spans_and_trace_equal_the_whole_request(tmp_path: Path, name: str, encoding: str) -> None:
    data = ENCODINGS[encoding](_request(name))
    plan, streamed = _streamed(data)
    assert plan.signal == "traces" and plan.leaves == len(streamed) > 0
    assert streamed == _whole(data)
    assert _events_of_import(tmp_path, data) == _events_of_whole_import(data)


def test_legacy_logs_body_streams_as_logs() -> None:
    data = (FIXTURES / "openai_v2_legacy_events.logs.otlp.pb").read_bytes()
    plan, streamed = _streamed(data)
    assert plan.signal == "logs" and len(streamed) == 17
    assert streamed == _whole(data)


def _several_traces_and_scopes() -> ExportTraceServiceRequest:
    """Three copies of a run (three traces), each root span alone in a scope placed before its spans."""
    request = ExportTraceServiceRequest()
    template = _request("pydantic_ai_v5.otlp.json").resource_spans[0]
    for number in range(3):
        resource_spans = request.resource_spans.add()
        resource_spans.CopyFrom(template)
        (scope_spans,) = resource_spans.scope_spans
        for span in scope_spans.spans:
            span.trace_id = bytes([number + 1]) * 16
        root_scope = resource_spans.scope_spans.add()
        root_scope.scope.name = "the-agent"
        (root,) = [span for span in scope_spans.spans if not span.parent_span_id]
        root_scope.spans.add().CopyFrom(root)
        scope_spans.spans.remove(root)
        resource_spans.scope_spans.reverse()  # the root's scope first: the trace is not done yet
    return request


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_trace_is_converted_after_its_last_span_wherever_its_root_is(tmp_path: Path, encoding: str) -> None:
    data = ENCODINGS[encoding](_several_traces_and_scopes())
    plan, streamed = _streamed(data)
    assert streamed == _whole(data)
    assert plan.ends == {6, 13, 20}  # each trace's last span: seven spans a trace
    events = _events_of_import(tmp_path, data)
    assert events == _events_of_whole_import(data)
    runs = [orjson.loads(line)["run_id"] for line in events if b'"run_start"' in line]
    assert len(runs) == 3 and sum(b'"llm_call"' in line for line in events) == 9


def test_members_after_the_spans_are_read_first(tmp_path: Path) -> None:
    """JSON members and protobuf fields may come in any order: resource and scope after the spans."""
    request = _request("openai_v2_latest.otlp.json")
    obj = json_format.MessageToDict(request)
    for resource_spans in obj["resourceSpans"]:
        resource_spans["schemaUrl"] = "https://opentelemetry.io/schemas/1.0"
        for scope_spans in resource_spans["scopeSpans"]:
            scope_spans["spans"] = scope_spans.pop("spans")  # the spans before the scope... (order kept)
            scope_spans["scope"] = scope_spans.pop("scope")  # ...and the scope moved after them
        resource_spans["resource"] = resource_spans.pop("resource")
    data = orjson.dumps(obj)
    assert data.index(b'"spans"') < data.index(b'"scope"') and data.rindex(b'"resource"') > data.index(
        b'"spans"'
    )
    _plan, streamed = _streamed(data)
    assert streamed == _whole(data) == _whole(request.SerializeToString())
    assert streamed[0].resource["service.name"] and streamed[0].scope

    # protobuf: each ResourceSpans and ScopeSpans with its fields in reverse order
    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2]) + _varint(len(payload)) + payload

    body = b""
    for resource_spans in request.resource_spans:
        inner = b""
        for scope_spans in resource_spans.scope_spans:
            scope = b"".join(field(2, span.SerializeToString()) for span in scope_spans.spans)
            scope += field(3, scope_spans.schema_url.encode()) if scope_spans.schema_url else b""
            inner += field(2, scope + field(1, scope_spans.scope.SerializeToString()))
        inner += field(3, resource_spans.schema_url.encode()) if resource_spans.schema_url else b""
        body += field(1, inner + field(1, resource_spans.resource.SerializeToString()))
    assert ExportTraceServiceRequest.FromString(body) == request  # the real parser agrees
    _plan, streamed_pb = _streamed(body)
    assert streamed_pb == streamed


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_all(data: bytes) -> None:
    handle = io.BytesIO(data)
    encoding = detect_encoding(handle)
    if encoding in ("otlp-json", "otlp-protobuf"):
        list(otlp_stream.records(handle, otlp_stream.plan(handle, encoding, name="cut")))


@pytest.mark.parametrize("encoding", ["protobuf", "json", "json-pretty-hex"])
def test_every_truncation_is_a_clean_error_naming_the_byte(encoding: str) -> None:
    data = ENCODINGS[encoding](_request("pydantic_ai_v5.otlp.pb"))
    # (one byte, b"\n" or b"{", is white space or an unfinished document; see the JSON Lines tests)
    for cut in sorted({*range(2, 64), *range(64, len(data), 97), len(data) - 2}):
        with pytest.raises(OtlpDecodeError, match=r"at byte \d+|ends at byte \d+") as caught:
            _read_all(data[:cut])
        assert "truncated" in str(caught.value) or "not JSON" in str(caught.value), cut


def test_garbage_is_a_clean_error_never_a_traceback() -> None:
    protobuf = _request("anthropic_sdk.otlp.json").SerializeToString()
    document = orjson.dumps(json_format.MessageToDict(_request("anthropic_sdk.otlp.json")))
    rng = random.Random(16)
    for _ in range(300):
        base = bytearray(rng.choice((protobuf, document)))
        for _flip in range(rng.randint(1, 4)):
            base[rng.randrange(len(base))] = rng.randrange(256)
        try:
            _read_all(bytes(base))
        except OtlpDecodeError as error:
            assert str(error).startswith("cut: "), error


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"resourceSpans": {"spans": []}}', "at byte 18: resourceSpans is not an array"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]}',
            "at byte 46: an item of spans is not an object",
        ),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}', "the span at byte 46"),
        (b'{"resourceSpans": [{"resource": {"attributes": 3}}]}', "the resource at byte 32"),
        (b'{"resourceSpans": []} {"resourceSpans": []}', "at byte 22: more than one JSON value"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{}] x', "not JSON at byte 50: expected ','"),
        (b'{"hello": "world", "n": [1, 2, {"deep": null}]}', "JSON that is not OTLP"),
        (b"\x0a\x02\x12\x05", "at byte 2: field 2 of the resource's spans runs to byte 9, but the body ends"),
        (b"\x0a\x02\x12\x05" + bytes(9), "at byte 2: field 2 .* but its message ends at byte 4"),
        (b"\x0a\x02\x08\x01", "at byte 2: field 1 of the resource's spans has wire type 0, not 2"),
        (b"\x0a\x05\x12\x03\x12\x01\x0b", "at byte 6: the span does not parse"),
        (b"\x03", "at byte 0: field number 0"),
        (b"\x1b", "at byte 0: wire type 3"),
    ],
)
def test_bad_structure_names_what_and_where(content: bytes, message: str) -> None:
    with pytest.raises(OtlpDecodeError, match=message.replace("(", r"\(").replace("'", ".")):
        _read_all(content)


def test_import_of_a_truncated_body_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "cut.pb"
    source.write_bytes(_several_traces_and_scopes().SerializeToString()[:-100])
    out = tmp_path / "out.fptrace.jsonl"
    assert main(["import", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cut.pb: not a valid OTLP/protobuf body (truncated or corrupt) at byte " in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.pb"]


def test_a_one_line_document_is_never_read_as_one_json_lines_line(tmp_path: Path) -> None:
    """Told by content: one line (or a pretty document) is one request; several whole lines, JSON Lines."""
    request = json_format.MessageToDict(_request("openai_v2_latest.otlp.json"))
    one = orjson.dumps(request)
    cases = {
        one: "otlp-json",
        one + b"\n\n  \n": "otlp-json",
        json.dumps(request, indent=1).encode(): "otlp-json",
        one + b"\n" + one + b"\n": "otlp-jsonl",
        b"\x0a\x00": "otlp-protobuf",
    }
    for data, encoding in cases.items():
        assert detect_encoding(io.BytesIO(data)) == encoding
    source = tmp_path / "one.json"
    source.write_bytes(one + b"\n")
    summary = import_otlp([source], tmp_path / "out.fptrace.jsonl")
    assert summary.runs == 1 and summary.counts["llm_call"] == 3


def test_progress_counts_both_passes_and_ends_at_the_size(tmp_path: Path) -> None:
    source = tmp_path / "three.pb"
    source.write_bytes(_several_traces_and_scopes().SerializeToString())
    seen: list[tuple[int, int]] = []
    import_otlp(
        [source], tmp_path / "out.fptrace.jsonl", progress=lambda done, total: seen.append((done, total))
    )
    size = source.stat().st_size
    assert seen[-1] == (size, size)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # never backwards
    assert any(done <= size // 2 for done, _ in seen[1:]) and len(seen) > 10  # the plan pass counts too

"""Read OTLP back the way a collector would, independently of the code under test.

``parse_otlp_json`` turns an OTLP/JSON document into the official protobuf message: the only
difference between OTLP/JSON and protobuf's JSON mapping is that trace and span ids are hex, so the
ids are re-encoded as base64 and the document is handed to ``google.protobuf.json_format.Parse``
(which rejects unknown or misspelled fields).
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord
from fpdebug.trace.schema import TraceEvent, TraceHeader

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_traces"
"""The committed demo traces."""

SAMPLES = sorted(SAMPLES_DIR.glob("*.fptrace.jsonl"))
"""Every committed demo trace."""

CONTENT_KEYS = frozenset(
    {
        "gen_ai.system_instructions",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.definitions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "fpdebug.cursor.witness.text",
        "fpdebug.engagement.park_card",
        "fpdebug.finding.unsupported_values",
    }
)
"""Attributes that carry what a user, a model or a tool wrote (exported only on request)."""


def raw_records(path: Path) -> list[dict[str, Any]]:
    """The trace's event lines as plain JSON objects (line 0, the header, left out)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def trace_events(path: Path) -> list[TraceEvent]:
    """The trace's valid events, in file order."""
    with TraceReader(path) as reader:
        return [
            record
            for _, record in reader.iter_records(1)
            if not isinstance(record, InvalidRecord | OpaqueRecord | TraceHeader)
        ]


def _base64_ids(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId"):
                assert isinstance(value, str) and value == value.lower(), value
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                _base64_ids(value)
    elif isinstance(node, list):
        for item in node:
            _base64_ids(item)


def parse_otlp_json(document: dict[str, Any] | str) -> ExportTraceServiceRequest:
    """Parse an OTLP/JSON ``ExportTraceServiceRequest`` with the official protobuf definitions."""
    data = json.loads(document) if isinstance(document, str) else copy.deepcopy(document)
    _base64_ids(data)
    return Parse(json.dumps(data), ExportTraceServiceRequest())


def spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    """Every span of a request, in encoding order."""
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def value(any_value: AnyValue) -> Any:
    """An ``AnyValue`` as a Python value."""
    which = any_value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value(item) for item in any_value.array_value.values]
    if which == "kvlist_value":
        return attrs(any_value.kvlist_value.values)
    return getattr(any_value, which)


def attrs(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    """Key-value pairs as a dict."""
    return {pair.key: value(pair.value) for pair in pairs}


def ns(ts: str) -> int:
    """An ISO-8601 UTC timestamp from a trace line, as ns since the epoch."""
    from datetime import datetime

    moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def mixed_runs(path: Path, seed: int, *, sequential: bool = False) -> Path:
    """Runs of three samples in one file, all but the first cut short at random (no ``run_end``),
    with broken lines among them: interleaved at random, or one run after another when ``sequential``.
    """
    rng = random.Random(seed)
    samples = [sample.read_bytes().splitlines() for sample in SAMPLES]
    queues = []
    for index, lines in enumerate(rng.sample(samples, 3)):
        records = [json.loads(line) for line in lines[1:]]
        if index != 0:
            records = records[: rng.randint(1, len(records))]
        for record in records:
            record["run_id"] = f"{record['run_id']}-{index}"
        queues.append(records)
    body: list[bytes] = [samples[0][0]]
    seq = 0
    while any(queues):
        queue = next(q for q in queues if q) if sequential else rng.choice([q for q in queues if q])
        record = queue.pop(0)
        seq += 1
        record["seq"] = seq
        body.append(json.dumps(record, separators=(",", ":")).encode())
        if rng.random() < 0.05:
            body.append(b'{"kind":"pass","seq":')  # a broken line: skipped by every reader
    path.write_bytes(b"\n".join(body) + b"\n")
    return path

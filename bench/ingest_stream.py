"""Importing ONE large OTLP request (a JSON document, a protobuf body): time and peak memory.

Usage::

    .venv/bin/python -m bench.ingest_stream              # 100 MB of each, in bench/out/
    .venv/bin/python -m bench.ingest_stream --mb 30

Generates a single ``ExportTraceServiceRequest`` of the given size twice, as one OTLP/JSON
document and as one OTLP/protobuf body: the spans of the pydantic-ai fixture (one weather-agent
run: an agent span, three LLM calls, tool spans) repeated with fresh trace and span ids, all in
one resource and one scope, as a collector or a batch exporter would write one big request.
Each file is written as it is generated (never held whole).

Each figure runs in a fresh child process (``python -m bench.ingest_stream import FILE``), which
prints its wall time, its CPU time and its peak RSS (``VmHWM``): ``fpdebug import``'s code path
(:func:`fpdebug.ingest.detect.import_sources`). The baselines, measured in the same run and the
same way, are ``wc -l FILE`` (reading the bytes once) and parsing the whole file in memory as
the importer did before it streamed (``orjson.loads``, or ``ExportTraceServiceRequest.FromString``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["generate", "main"]

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "bench" / "out"
FIXTURE = ROOT / "tests" / "ingest" / "fixtures" / "otlp" / "pydantic_ai_v5.otlp.json"


def _peak_rss_mb() -> float:
    """This process's peak RSS in MB: ``VmHWM``, the peak of its own address space.

    Not ``ru_maxrss``, which Linux carries across ``execve``: a child would start with its
    parent's peak (this bench's parent stays small, but a caller's may not).
    """
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """User + system CPU of this process (on a shared machine, wall time also counts the neighbours)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_TRACE = bytes(range(0xA0, 0xB0))
"""A placeholder trace id, replaced in each copy's bytes (ids have fixed lengths in both encodings)."""
_SPAN = bytes(range(0xC0, 0xC4))
"""The first half of a placeholder span id; the second half is the span's index in the template."""


def generate(path: Path, size: int, encoding: str, *, pad: int = 0) -> int:
    """Write one traces request of at least ``size`` bytes to ``path``; return its number of traces.

    ``encoding`` is ``json`` (compact OTLP/JSON, hex ids) or ``protobuf``; ``pad`` adds an
    attribute of that many bytes to every span (a long prompt). Each span of the template is
    serialised once, by ``json_format`` or ``opentelemetry-proto``, with placeholder ids that
    each copy replaces. The outer messages of the protobuf body are framed here: their lengths
    must be known before the spans are written, which a message class would only know by holding
    them all.
    """
    import orjson
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from fpdebug.ingest.otlp_decode import normalise_ids

    request = ExportTraceServiceRequest()
    json_format.ParseDict(normalise_ids(json.loads(FIXTURE.read_text())), request)
    resource_spans = request.resource_spans[0]
    scope_spans = resource_spans.scope_spans[0]
    index = {span.span_id: number for number, span in enumerate(scope_spans.spans)}
    templates: list[bytes] = []
    for number, span in enumerate(scope_spans.spans):
        span.trace_id = _TRACE
        span.span_id = _SPAN + number.to_bytes(4, "big")
        if span.parent_span_id:
            span.parent_span_id = _SPAN + index[span.parent_span_id].to_bytes(4, "big")
        if pad:
            padding = span.attributes.add()
            padding.key = "bench.padding"
            padding.value.string_value = "p" * pad
        if encoding == "json":
            obj = json_format.MessageToDict(span)
            for key, name in (
                ("traceId", "trace_id"),
                ("spanId", "span_id"),
                ("parentSpanId", "parent_span_id"),
            ):
                if key in obj:  # hex, as the OTLP/HTTP JSON spec writes ids
                    obj[key] = getattr(span, name).hex()
            templates.append(orjson.dumps(obj))
        else:
            data = span.SerializeToString()
            templates.append(b"\x12" + _varint(len(data)) + data)  # ScopeSpans.spans
    per_trace = sum(len(template) + 1 for template in templates)
    traces = max(1, -(-size // per_trace))
    trace_old, span_old = (
        (_TRACE.hex().encode(), _SPAN.hex().encode()) if encoding == "json" else (_TRACE, _SPAN)
    )

    def copy(number: int) -> bytes:
        trace = number.to_bytes(16, "big")
        span = number.to_bytes(4, "big")
        if encoding == "json":
            trace, span = trace.hex().encode(), span.hex().encode()
        joiner = b"," if encoding == "json" else b""
        return joiner.join(templates).replace(trace_old, trace).replace(span_old, span)

    with path.open("wb") as out:
        if encoding == "json":
            head = orjson.dumps({"resource": json_format.MessageToDict(resource_spans.resource)})[:-1]
            scope = orjson.dumps(json_format.MessageToDict(scope_spans.scope))
            out.write(b'{"resourceSpans":[' + head + b',"scopeSpans":[{"scope":' + scope + b',"spans":[')
            for number in range(traces):
                out.write((b"," if number else b"") + copy(number))
            out.write(b"]}]}]}\n")
            return traces
        scope_bytes = scope_spans.scope.SerializeToString()
        scope_spans_len = (
            1 + len(_varint(len(scope_bytes))) + len(scope_bytes) + sum(map(len, templates)) * traces
        )
        resource_bytes = resource_spans.resource.SerializeToString()
        resource_spans_len = (
            1 + len(_varint(len(resource_bytes))) + len(resource_bytes)
            + 1 + len(_varint(scope_spans_len)) + scope_spans_len
        )  # fmt: skip
        out.write(b"\x0a" + _varint(resource_spans_len))  # ExportTraceServiceRequest.resource_spans
        out.write(b"\x0a" + _varint(len(resource_bytes)) + resource_bytes)  # ResourceSpans.resource
        out.write(b"\x12" + _varint(scope_spans_len))  # ResourceSpans.scope_spans
        out.write(b"\x0a" + _varint(len(scope_bytes)) + scope_bytes)  # ScopeSpans.scope
        for number in range(traces):
            out.write(copy(number))
    return traces


def _child_import(path: Path) -> dict[str, object]:
    from fpdebug.ingest.detect import import_sources

    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        kind, summary = import_sources([path], Path(work) / "out.fptrace.jsonl")
        seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cpu_s": _cpu_s(),
        "peak_rss_mb": _peak_rss_mb(),
        "summary": f"{kind}: {summary}",
    }


def _child_parse(path: Path) -> dict[str, object]:
    start = time.perf_counter()
    data = path.read_bytes()
    if data.startswith(b"{"):
        import orjson

        orjson.loads(data)
    else:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        ExportTraceServiceRequest.FromString(data)
    return {"seconds": time.perf_counter() - start, "cpu_s": _cpu_s(), "peak_rss_mb": _peak_rss_mb()}


def _run_child(mode: str, path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.ingest_stream", mode, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} {path} failed: {done.stderr.strip()[-800:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _wc(path: Path) -> dict[str, object]:
    start = time.perf_counter()
    subprocess.run(["wc", "-l", str(path)], check=True, capture_output=True)
    return {"seconds": time.perf_counter() - start}


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, measure, print the table (or, as a child, measure one thing and print JSON)."""
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_stream", description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=("bench", "import", "parse"))
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--mb", type=int, default=100, help="size of each generated file (default 100)")
    args = parser.parse_args(argv)
    if args.mode != "bench":
        print(json.dumps((_child_import if args.mode == "import" else _child_parse)(args.path)))
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for encoding, suffix in (("json", "otlp.json"), ("protobuf", "otlp.pb")):
        path = OUT_DIR / f"single-{args.mb}mb.{suffix}"
        if not path.exists():
            traces = generate(path, args.mb * 1_000_000, encoding)
            print(f"generated {path.name}: {traces} traces", file=sys.stderr)
        with path.open("rb") as handle:  # every figure reads it from the page cache
            while handle.read(1 << 20):  # in chunks: a child would inherit this process's peak RSS
                pass
        size_mb = path.stat().st_size / 1e6
        wc, parse, imported = _wc(path), _run_child("parse", path), _run_child("import", path)
        print(f"{encoding}: {size_mb:.1f} MB, one request")
        print(f"  wc -l                 {wc['seconds']:8.2f} s wall")
        for label, got in (("whole parse (before)", parse), ("fpdebug import", imported)):
            print(
                f"  {label:<21} {got['seconds']:8.2f} s wall {got['cpu_s']:8.2f} s CPU"
                f"   peak RSS {got['peak_rss_mb']:7.1f} MB"
            )
        print(f"  {imported['summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``fpdebug export TRACE [--format otlp-json] [-o FILE] [--endpoint URL]``: a trace as OTel spans."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.export.otlp import OtlpJsonWriter

HELP = "Export a trace as OpenTelemetry spans (GenAI conventions): OTLP/JSON, or OTLP/HTTP to a collector."

FORMATS = ("otlp-json",)
"""The file formats ``--format`` accepts."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, ``--format``, ``-o``, ``--endpoint``, ``--header``, ``--timeout``,
    ``--service-name`` and ``--include-content``."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file (.jsonl) to export")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="otlp-json",
        help="the file format (default otlp-json: an OTLP ExportTraceServiceRequest in JSON)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE (created 0600), not stdout; with --endpoint, write it as well",
    )
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        nargs="?",
        const="",
        help="send the spans over OTLP/HTTP (protobuf) to this collector: a base URL as "
        "OTEL_EXPORTER_OTLP_ENDPOINT is (/v1/traces is appended unless the path already ends with it), "
        "e.g. http://localhost:4318; --endpoint alone takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as given) "
        "or OTEL_EXPORTER_OTLP_ENDPOINT (base URL) from the environment",
    )
    parser.add_argument(
        "--header",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="an HTTP header for --endpoint (repeatable); without any, the SDK reads "
        "OTEL_EXPORTER_OTLP_HEADERS",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=10.0,
        help="seconds per OTLP/HTTP request, retries included (default 10)",
    )
    parser.add_argument(
        "--service-name",
        metavar="NAME",
        default="fpdebug",
        help="the service.name resource attribute (default fpdebug)",
    )
    parser.add_argument(
        "--include-content",
        action="store_true",
        help="also export prompts, replies, tool arguments and results (may be sensitive)",
    )


def run(args: argparse.Namespace) -> int:
    """Read the trace run by run into spans, writing them as OTLP/JSON and/or sending them over
    OTLP/HTTP as they come: memory holds one run and one batch, whatever the number of runs."""
    from fpdebug.errors import ExportError
    from fpdebug.export.saved import TraceSpans, batched
    from fpdebug.export.spans import trace_salt
    from fpdebug.trace.reader import TraceReader

    headers = _headers(args.header)
    if args.timeout <= 0:
        raise ExportError(f"--timeout must be positive, got {args.timeout}")
    try:
        from fpdebug.export import otlp
    except ImportError as error:
        raise ExportError(
            f"OpenTelemetry is not installed ({error.name}); install the extra: pip install 'fpdebug[otel]'"
        ) from error
    target = _target(otlp, args.endpoint)  # a bad URL fails before the trace is read
    from fpdebug.commands import collector_paused

    with TraceReader(args.trace) as reader, collector_paused():
        producer = reader.header.producer
        salt = trace_salt(reader.header.model_dump_json())
        spans = TraceSpans(reader, include_content=args.include_content, id_salt=salt)
        sender = None
        if target is not None:
            sender = otlp.SpanSender(
                target,
                headers=headers,
                timeout=args.timeout,
                service_name=args.service_name,
                producer=producer,
                as_given=True,
            )
        try:
            with _document(otlp, args, target, producer) as document:
                for batch in batched(spans):
                    if document is not None:
                        document.write(batch)
                    if sender is not None:
                        sender.send(batch)
        except BaseException:
            if sender is not None:
                sender.abort()
            raise
    if spans.skipped:
        from fpdebug.commands import terminal_text  # a file name can hold escape sequences too

        print(
            f"fpdebug export: {spans.skipped} invalid or unknown line(s) of {terminal_text(args.trace)} "
            "were left out (`fpdebug validate` lists them)",
            file=sys.stderr,
        )
    if sender is not None:
        sent = sender.close()
        print(f"fpdebug export: sent {sent} span(s) to {target}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _document(
    otlp: ModuleType, args: argparse.Namespace, target: str | None, producer: str | None
) -> Iterator[OtlpJsonWriter | None]:
    """The OTLP/JSON document being written to ``-o`` or stdout, or ``None`` when only sending."""
    from fpdebug.commands import output_stream
    from fpdebug.trace.redact import default_redactor

    if target is not None and args.output is None:
        yield None
        return
    # ensure_ascii: every control or bidi character from the trace comes out escaped, on a terminal too.
    # Each piece is redacted as the JSON document it is, so stdout need not redact line by line.
    with output_stream(args.output, trace=args.trace, encoding="ascii", redacted=True) as write:
        document = otlp.OtlpJsonWriter(
            write,
            service_name=args.service_name,
            producer=producer,
            redact_json=default_redactor().redact_json,
        )
        yield document
        document.close()


def _target(otlp: ModuleType, endpoint: str | None) -> str | None:
    """The traces URL to send to: ``--endpoint URL`` as a base URL, bare ``--endpoint`` from the
    environment by the SDK's rules, no ``--endpoint`` none (the spans go to a file or stdout)."""
    import os

    from fpdebug.errors import ExportError

    if endpoint is None:
        return None
    if endpoint:
        return str(otlp.traces_endpoint(endpoint))
    target = otlp.endpoint_from_env(os.environ)
    if target is None:
        raise ExportError(
            "--endpoint without a URL reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
            "OTEL_EXPORTER_OTLP_ENDPOINT, and neither is set"
        )
    return str(target)


def _headers(pairs: list[str]) -> dict[str, str] | None:
    from fpdebug.errors import ExportError

    if not pairs:
        return None
    headers: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            # Never echo the value: a header is often an API key.
            raise ExportError(f"--header needs KEY=VALUE, got a value without '=' (key {key.strip()[:40]!r})")
        headers[key.strip()] = value.strip()
    return headers

"""``fpdebug collect [--port 4318] [--dir DIR] [--host 127.0.0.1]``: receive OTLP/HTTP, write traces live."""

from __future__ import annotations

import argparse
import sys

HELP = "Receive OpenTelemetry spans over OTLP/HTTP and write each trace as an fpdebug trace as it arrives."

LOOPBACK = "127.0.0.1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--port``, ``--dir``, ``--host`` and ``--max-body``."""
    parser.add_argument(
        "--port", type=int, default=4318, help="the port (default 4318, OTLP/HTTP's; 0 = any free)"
    )
    parser.add_argument("--dir", default=".", metavar="DIR", help="where the traces go (default: here)")
    parser.add_argument(
        "--host",
        default=None,
        metavar="ADDRESS",
        help="the address to bind (default 127.0.0.1, loopback only; any other lets other machines send)",
    )
    parser.add_argument(
        "--max-body",
        type=int,
        default=16 << 20,
        metavar="BYTES",
        help="refuse bodies over this size, compressed or not, with 413 (default 16 MiB)",
    )
    parser.epilog = (
        "Point an instrumented app at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 "
        "(protobuf or JSON, gzip or not). Each trace goes to DIR/otlp-<trace id>.fptrace.jsonl "
        "(open it with fpdebug view --follow) and every request verbatim to DIR/received.otlp.jsonl. "
        "A request is answered only once it is on disk. Ctrl-C stops."
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted.

    Raises:
        FpdebugError: The address cannot be bound or DIR cannot be created (exit 2).
    """
    from pathlib import Path

    from fpdebug.commands import terminal_text
    from fpdebug.errors import ConfigError
    from fpdebug.ingest.collect import make_server

    host = args.host if args.host is not None else LOOPBACK
    if args.max_body <= 0:
        raise ConfigError(f"--max-body must be positive, got {args.max_body}")
    directory = Path(args.dir)
    try:
        server = make_server(directory, host=host, port=args.port, max_body=args.max_body)
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {terminal_text(host)}:{args.port} or write {terminal_text(str(directory))}: "
            f"{error.strerror or error}"
        ) from error
    bound_host, bound_port = server.server_address[:2]
    if args.host is not None and host not in ("127.0.0.1", "::1", "localhost"):
        print(
            f"fpdebug collect: listening on {terminal_text(str(bound_host))} (not loopback, as --host asked): "
            "anyone who can reach this port can write traces here",
            file=sys.stderr,
        )
    print(
        f"fpdebug collect: OTLP/HTTP on http://{terminal_text(str(bound_host))}:{bound_port} "
        f"(/v1/traces, /v1/logs), writing to {terminal_text(str(directory))}",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        server.collector.close()
    return 0

"""``fpdebug report TRACE [--format md|json] [-o FILE]``: a run report to paste into a ticket."""

from __future__ import annotations

import argparse

HELP = "Write a run report for a ticket: header, iteration timeline, leases, parks, routing, verdicts."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, ``--format``, ``-o`` and ``--backtrack``."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file (.jsonl) to report on")
    parser.add_argument(
        "--format", choices=("md", "json"), default="md", help="Markdown (default) or JSON (for scripts)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument(
        "--backtrack",
        metavar="FILE",
        help="the backtrack sidecar to include (default: TRACE.backtrack.jsonl if it exists, or the one in "
        "$XDG_CACHE_HOME/fpdebug/sidecars for a read-only or git-tracked trace)",
    )
    parser.epilog = (
        "The report holds ids, names, counts and states, never a prompt, reply or tool output (from a "
        "reply, only the unsupported values it stated); every string from the trace is made inert and "
        "Markdown-escaped."
    )


def run(args: argparse.Namespace) -> int:
    """Build the report and print or write it."""
    import json
    import os
    from pathlib import Path

    from fpdebug.backtrack.sidecar import load_sidecar
    from fpdebug.commands import collector_paused, output_stream, write_output
    from fpdebug.errors import ExportError
    from fpdebug.export.report import report_trace
    from fpdebug.export.report_stream import default_sidecar, write_markdown_report
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.redact import default_redactor

    if args.backtrack is not None and not os.path.isfile(args.backtrack):
        raise ExportError(f"no backtrack sidecar at {args.backtrack}")
    redactor = default_redactor()
    if args.format == "json":
        with collector_paused():
            report = redactor.redact_value(report_trace(args.trace, sidecar=args.backtrack))
        write_output(json.dumps(report, indent=2, ensure_ascii=True) + "\n", args.output, trace=args.trace)
        return 0
    # Markdown goes out run by run, each run's section as it is done: memory does not grow with runs.
    # The trace and the sidecar are opened first: one that cannot be read leaves no output file.
    with TraceReader(args.trace) as reader, collector_paused():
        sidecar = default_sidecar(args.trace, args.backtrack)
        saved = load_sidecar(sidecar) if sidecar is not None else None
        with output_stream(args.output, trace=args.trace) as write:
            name = Path(args.trace).name
            write_markdown_report(reader, write, name=name, redactor=redactor, sidecar=saved)
    return 0

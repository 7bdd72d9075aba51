"""``fpdebug schema``: the trace contract as JSON Schema, generated from the pydantic models."""

from __future__ import annotations

import argparse

HELP = "Print the trace contract (header and every event kind) as JSON Schema."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``-o``."""
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.epilog = "A copy is committed as docs/trace-schema.json, for other programs that write traces."


def trace_schema() -> dict[str, object]:
    """The JSON Schema of one trace line: the header, or any event (discriminated on ``kind``)."""
    from pydantic import TypeAdapter

    from fpdebug.trace.schema import SCHEMA_VERSION, TraceEvent, TraceHeader

    line: TypeAdapter[TraceHeader | TraceEvent] = TypeAdapter(TraceHeader | TraceEvent)
    schema = line.json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://fpdebug.dev/trace-schema/v{SCHEMA_VERSION}.json",
        "title": f"fpdebug trace line (schema_version {SCHEMA_VERSION})",
        "description": (
            "One line of an fpdebug trace (JSON Lines): line 0 is a trace_header, every other line one "
            "event; optional fields are left out when unset (the trace contract)."
        ),
        **schema,
    }


def render() -> str:
    """The schema as the exact text ``fpdebug schema`` prints (sorted keys, 2-space indent)."""
    import json

    return json.dumps(trace_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def run(args: argparse.Namespace) -> int:
    """Print or write the schema."""
    from fpdebug.commands import write_output

    text = render()
    if args.output in (None, "-"):
        print(text, end="")
    else:
        write_output(text, args.output, trace="/dev/null")
    return 0

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
    _by_reference(schema["$defs"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://fpdebug.dev/trace-schema/v{SCHEMA_VERSION}.json",
        "title": f"fpdebug trace line (schema_version {SCHEMA_VERSION})",
        "description": (
            "One line of an fpdebug trace (JSON Lines): line 0 is a trace_header, every other line one "
            "event; optional fields are left out when unset (the trace contract). From schema_version 2 an "
            "llm_call's request items may be [seq, k] references to the defs of an earlier record "
            "(docs/trace-contract.md, section 8.7)."
        ),
        **schema,
    }


def _by_reference(defs: dict[str, dict[str, object]]) -> None:
    """Let an ``llm_call`` hold its request by reference (schema_version 2, docs/trace-contract.md §8.7)."""
    ref = {
        "description": "[seq, k]: item k of the defs of the record whose seq is seq (at most this record's)",
        "items": {"minimum": 0, "type": "integer"},
        "maxItems": 2,
        "minItems": 2,
        "type": "array",
    }
    defs["ItemRef"] = ref
    request = defs["LlmRequest"]["properties"]
    assert isinstance(request, dict)
    for name, item in (("system_prompt", "PromptSegment"), ("messages", "Message"), ("tools", "ToolSchema")):
        request[name]["items"] = {"anyOf": [{"$ref": f"#/$defs/{item}"}, {"$ref": "#/$defs/ItemRef"}]}
    listed = request["messages"]
    request["messages"] = {
        "anyOf": [
            listed,
            {
                "additionalProperties": False,
                "description": "the first keep messages of the request of the llm_call at seq from, then add",
                "properties": {
                    "from": {"minimum": 1, "type": "integer"},
                    "keep": {"minimum": 0, "type": "integer"},
                    "add": listed,
                },
                "required": ["from", "keep"],
                "type": "object",
            },
        ],
        "title": "Messages",
    }
    call = defs["LlmCallEvent"]["properties"]
    assert isinstance(call, dict)
    call["defs"] = {
        "description": "schema_version 2: the prompt segments, messages and tool schemas this record is "
        "the first to use, referred to by [seq, k]",
        "items": {"type": "object"},
        "type": "array",
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

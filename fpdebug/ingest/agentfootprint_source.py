"""Reading an agentfootprint Recording's raw JSON safely: typed accessors and the recording's parts.

Every value of a recording is read through these helpers, so a field of the wrong type is treated as
absent (and stays absent in the trace) instead of raising halfway through an import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fpdebug.trace.schema import ToolCallRecord, ToolSchema

__all__ = [
    "ENGINEERED",
    "RecordingSource",
    "event_ts",
    "event_type",
    "integer",
    "obj",
    "payloads",
    "text",
    "tool_call",
]

PREFIX = "agentfootprint."
"""Every event type starts with it; the rest is ``<domain>.<name>``."""

ENGINEERED = frozenset({"rag", "skill", "memory", "instructions", "steering", "fact", "custom"})
"""The injected-context sources that are injections (the rest are the baseline: base, user, …)."""


@dataclass
class RecordingSource:
    """The parts of one recording an import reads."""

    recording: dict[str, Any]
    """The Recording: ``{snapshot, events, structure}``."""
    envelope: dict[str, Any] = field(default_factory=dict)
    """The v1 envelope, or ``{}`` for a bare Recording."""

    def __post_init__(self) -> None:
        self.snapshot: dict[str, Any] = obj(self.recording.get("snapshot"))
        """The footprintjs run snapshot."""
        self.shared: dict[str, Any] = obj(self.snapshot.get("sharedState"))
        """The final scope state."""
        raw = self.recording.get("events")
        self.events: list[dict[str, Any]] = (
            [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
        )
        """The typed events, in emission order."""

    def first(self, kind: str) -> dict[str, Any] | None:
        """The payload of the first event of ``kind`` (without the ``agentfootprint.`` prefix)."""
        return next(payloads(self.events, kind), None)

    def tool_schema(self, tool: dict[str, Any], injection_id: str | None) -> ToolSchema:
        """A tool as an ``llm_start`` listed it, with the input schema the snapshot kept for it."""
        name = text(tool.get("name"))
        parameters: dict[str, Any] = {}
        for schema in self.shared.get("dynamicToolSchemas") or ():
            if (
                isinstance(schema, dict)
                and schema.get("name") == name
                and isinstance(schema.get("inputSchema"), dict)
            ):
                parameters = dict(schema["inputSchema"])
                break
        return ToolSchema(
            name=name,
            description=text(tool.get("description")),
            parameters=parameters,
            injection_id=injection_id,
        )


def payloads(events: list[dict[str, Any]], kind: str) -> Any:
    """The payloads (objects) of every event of ``kind``, in order."""
    for event in events:
        payload = event.get("payload")
        if event_type(event) == kind and isinstance(payload, dict):
            yield payload


def event_type(event: dict[str, Any]) -> str:
    """The event's type without the ``agentfootprint.`` prefix."""
    kind = event.get("type")
    return kind[len(PREFIX) :] if isinstance(kind, str) and kind.startswith(PREFIX) else str(kind)


def event_ts(event: dict[str, Any]) -> datetime | None:
    """The event's wall clock (``meta.wallClockMs``) as a UTC time, when it has one."""
    meta = event.get("meta")
    wall = meta.get("wallClockMs") if isinstance(meta, dict) else None
    if isinstance(wall, int | float) and not isinstance(wall, bool):
        try:
            return datetime.fromtimestamp(wall / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def obj(value: object) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text(value: object) -> str:
    """``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def integer(value: object) -> int:
    """``value`` when it is an integer (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def tool_call(call: object) -> ToolCallRecord | None:
    """One recorded tool call (``{id, name, args}``); arguments given as a JSON string are parsed."""
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    args = call.get("args")
    raw: str | None = None
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        raw, args = (None, parsed) if isinstance(parsed, dict) else (args, {})
    return ToolCallRecord(
        id=text(call.get("id")), name=call["name"], args=args if isinstance(args, dict) else {}, raw_args=raw
    )

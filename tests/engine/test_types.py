"""The engine's plain values (ARCHITECTURE §4 signatures)."""

from __future__ import annotations

import dataclasses

import pytest

from fpdebug.engine.types import TOOL_STATUSES, Tool, ToolCall, ToolResult, require_id
from fpdebug.errors import DefinitionError, ToolError
from fpdebug.trace.schema import ToolCallRecord, ToolSchema


def test_tool_result_signature_and_defaults() -> None:
    res = ToolResult("lookup", {"amount": 3}, "c1", "success")
    assert (res.tool_name, res.result, res.tool_call_id, res.status) == (
        "lookup",
        {"amount": 3},
        "c1",
        "success",
    )
    bare = ToolResult("lookup")
    assert (bare.result, bare.tool_call_id, bare.status) == (None, None, None)


def test_tool_result_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolResult("lookup").status = "success"  # type: ignore[misc]


def test_the_seven_statuses() -> None:
    assert {"success", "failure", "denied", "invalid", "partial", "pending", "absent"} == TOOL_STATUSES
    with pytest.raises(ToolError, match="not one of"):
        ToolResult("lookup", status="ok")  # type: ignore[arg-type]
    # An unhashable value is refused in the same words, not with a TypeError from the set lookup.
    with pytest.raises(ToolError, match="not one of"):
        ToolResult("lookup", status=["success"])  # type: ignore[arg-type]


def test_tool_schema_is_tagged_with_its_injection() -> None:
    tool = Tool("get_zone_info", "Zone facts", {"type": "object"})
    assert tool.schema(injection_id="zone-audit") == ToolSchema(
        name="get_zone_info",
        description="Zone facts",
        parameters={"type": "object"},
        injection_id="zone-audit",
    )
    assert Tool.from_schema(tool.schema()).name == "get_zone_info"


def test_tool_call_record() -> None:
    assert ToolCall("c1", "fetch", {"q": 1}).record() == ToolCallRecord(id="c1", name="fetch", args={"q": 1})


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_empty_ids_are_refused(bad: object) -> None:
    with pytest.raises(DefinitionError, match="non-empty"):
        require_id(bad)
    with pytest.raises(DefinitionError):
        Tool(bad)  # type: ignore[arg-type]

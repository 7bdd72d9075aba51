"""The exact request and reply of an imported agentfootprint LLM call, and its tools' effects.

agentfootprint records no single request object. What was sent is rebuilt from the iteration's
``context.injected`` events in emission order (docs/trace-contract.md §8.4): the system-prompt slot's
pieces are the prompt's segments (checked against ``llm_start.systemPromptText`` when recorded), the
messages slot's pieces are the messages, and ``llm_start.tools`` the tools offered. The assistant
messages' tool calls, and the calls a reply asked for, are not on those events: they come from the
conversation history of ``agent.iteration_end`` (by position) and the iteration's ``tool_start``s.
"""

from __future__ import annotations

from typing import Any

from fpdebug.ingest.agentfootprint_source import ENGINEERED, RecordingSource, integer, obj, text, tool_call
from fpdebug.trace.schema import (
    EffectJudgment,
    LlmResponse,
    Message,
    PromptSegment,
    ToolCallRecord,
    ToolSchema,
    Usage,
)

__all__ = ["judgment", "prompt_segments", "reply", "request_messages", "request_tools", "requested_calls"]

_ROLES = frozenset({"system", "user", "assistant", "tool"})
_ROLE_OF_SOURCE = {"user": "user", "assistant": "assistant", "tool-result": "tool"}


def prompt_segments(
    injected: list[dict[str, Any]], recorded: object, where: str, warnings: list[str]
) -> list[PromptSegment]:
    """The system prompt's segments, each tagged by its source and source id, in the order sent.

    When the recording also holds the assembled text (``recordSystemPrompt: true``) and the segments
    do not join to it, the recorded text wins as one segment and a warning says so.
    """
    segments = [
        PromptSegment(
            source=text(item.get("source")) or "base",
            injection_id=item.get("sourceId") if isinstance(item.get("sourceId"), str) else None,
            text=text(item.get("rawContent")),
        )
        for item in injected
        if item.get("slot") == "system-prompt"
    ]
    if isinstance(recorded, str) and "\n\n".join(segment.text for segment in segments) != recorded:
        warnings.append(
            f"{where}: the system prompt's segments do not join to the recorded systemPromptText; "
            "the recorded text is kept as one segment"
        )
        return [PromptSegment(source="base", text=recorded)]
    return segments


def request_messages(injected: list[dict[str, Any]], history: list[Any]) -> list[Message]:
    """The messages sent: the messages slot's pieces, with the history's tool calls by position."""
    entries = [entry if isinstance(entry, dict) else {} for entry in history]
    messages: list[Message] = []
    for item in injected:
        if item.get("slot") != "messages":
            continue
        source = item.get("source")
        role = item.get("asRole")
        if role not in _ROLES:
            role = _ROLE_OF_SOURCE.get(str(source), "user")
        position = item.get("position")
        recorded = entries[position] if isinstance(position, int) and 0 <= position < len(entries) else {}
        source_id = item.get("sourceId") if isinstance(item.get("sourceId"), str) else None
        calls = (
            recorded.get("toolCalls") if role == "assistant" and recorded.get("role") == "assistant" else None
        )
        messages.append(
            Message(
                role=role,  # type: ignore[arg-type]  # one of _ROLES, checked above
                content=text(item.get("rawContent")),
                tool_calls=[c for c in map(tool_call, calls) if c is not None]
                if isinstance(calls, list)
                else None,
                tool_call_id=source_id if source == "tool-result" else None,
                tool_name=(text(recorded.get("toolName")) or None) if role == "tool" else None,
                injection_id=source_id if source in ENGINEERED else None,
            )
        )
    return messages


def request_tools(
    source: RecordingSource, injected: list[dict[str, Any]], start: dict[str, Any]
) -> list[ToolSchema]:
    """The tools offered (``llm_start.tools``), each tagged with the skill that unlocked it, if one did."""
    owners: dict[str, str] = {}
    for item in injected:
        if (
            item.get("slot") == "tools"
            and item.get("source") in ENGINEERED
            and isinstance(item.get("sourceId"), str)
        ):
            owners.setdefault(text(item.get("rawContent")).split(":", 1)[0].strip(), item["sourceId"])
    tools = start.get("tools")
    if not isinstance(tools, list):
        return []
    return [
        source.tool_schema(tool, owners.get(text(tool.get("name"))))
        for tool in tools
        if isinstance(tool, dict)
    ]


def requested_calls(history: list[Any] | None, tool_starts: list[dict[str, Any]]) -> list[ToolCallRecord]:
    """The calls the reply asked for: the iteration's last assistant message holds them as sent;
    without a history, the tool starts (same ids, names and arguments)."""
    for message in reversed(history or ()):
        if isinstance(message, dict) and message.get("role") == "assistant":
            calls = message.get("toolCalls")
            if isinstance(calls, list):
                return [c for c in map(tool_call, calls) if c is not None]
            break
    found = [
        tool_call({"id": start.get("toolCallId"), "name": start.get("toolName"), "args": start.get("args")})
        for start in tool_starts
    ]
    return [c for c in found if c is not None]


def reply(end: dict[str, Any], calls: list[ToolCallRecord]) -> LlmResponse:
    """The reply of ``llm_end``: content, stop reason and usage, with the calls it asked for."""
    usage = obj(end.get("usage"))
    cache_read, cache_write = usage.get("cacheRead"), usage.get("cacheWrite")
    return LlmResponse(
        content=text(end.get("content")),
        tool_calls=calls,
        stop_reason=end.get("stopReason") if isinstance(end.get("stopReason"), str) else None,
        usage=Usage(
            input_tokens=integer(usage.get("input")),
            output_tokens=integer(usage.get("output")),
            cache_read_tokens=cache_read if isinstance(cache_read, int) else None,
            cache_write_tokens=cache_write if isinstance(cache_write, int) else None,
        ),
    )


def judgment(effect: dict[str, Any]) -> EffectJudgment | None:
    """One ``tools.effect`` as the judgment of a tool result's effect (docs/context-model.md §4.2)."""
    kind, outcome = effect.get("kind"), effect.get("outcome")
    if kind not in ("propose-transition", "require-instruction"):
        return None
    if outcome not in ("accepted", "refused", "superseded"):
        return None

    def field(key: str) -> str | None:
        value = effect.get(key)
        return value if isinstance(value, str) else None

    return EffectJudgment(
        kind=kind,
        outcome=outcome,
        target_skill_id=field("targetSkillId"),
        reason=field("reason"),
        instruction_id=field("instructionId"),
        delivery_lease=field("deliveryLease"),
        refusal_reason=field("refusalReason"),
        superseded_by="earlier-proposal" if effect.get("supersededBy") == "earlier-proposal" else None,
    )

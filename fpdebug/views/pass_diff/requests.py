"""The two LLM requests of a pass diff compared: conversation messages, tool schemas, system prompt.

Messages are a multiset difference (a conversation grows; a window strategy may also drop some),
tools are compared by name, and the system prompt segment by segment, keyed by source and injection,
with a line diff of a segment whose text changed.
"""

from __future__ import annotations

import difflib

from fpdebug.trace.schema import (
    EngagementEvent,
    LlmCallEvent,
    LlmRequest,
    Message,
    PassEvent,
    ToolResultEvent,
)
from fpdebug.views.pass_diff.model import MessageChange, PassDiff, SegmentChange, ToolChange
from fpdebug.views.pass_diff.records import Step, Walk, describe_reason, record

_DIFF_LINES = 40  # lines of a changed segment's text diff kept

_MessageKey = tuple[object, ...]
_SegmentKey = tuple[str, str | None, int]


def request_changes(
    diff: PassDiff, walk: Walk, a: LlmRequest, b: LlmRequest, b_pass: PassEvent | None
) -> None:
    """Fill ``diff.messages``, ``diff.tools`` (and ``tools_same``) and ``diff.segments`` from the two requests."""
    _message_changes(diff, walk, a, b)
    _tool_changes(diff, walk, a, b, b_pass)
    _segment_changes(diff, a, b)


def _message_changes(diff: PassDiff, walk: Walk, a: LlmRequest, b: LlmRequest) -> None:
    """Messages in one request only: B's new ones (with the record that wrote each), then A's dropped ones."""
    diff.messages_counts = (len(a.messages), len(b.messages))
    entered, unmatched = _unmatched(a.messages, b.messages)
    wanted = {m.tool_call_id for m in entered if m.role == "tool" and m.tool_call_id}
    wanted |= {f"ask:{m.tool_calls[0].id}" for m in entered if m.role == "assistant" and m.tool_calls}
    results = _result_lines(walk, wanted) if wanted and not diff.across_runs else {}
    for message in entered:
        line = results.get(message.tool_call_id) if message.tool_call_id else None
        if message.role == "assistant" and message.tool_calls:
            line = results.get(f"ask:{message.tool_calls[0].id}")
        diff.messages.append(
            MessageChange("entered", message.role, _message_what(message), message.content, line)
        )
    for message in a.messages:
        key = _message_key(message)
        if unmatched.get(key, 0):
            unmatched[key] -= 1
            diff.messages.append(MessageChange("left", message.role, _message_what(message), message.content))


def _unmatched(a: list[Message], b: list[Message]) -> tuple[list[Message], dict[_MessageKey, int]]:
    """B's messages that A has no copy of (in B's order), and how many copies of each A has left over."""
    remaining: dict[_MessageKey, int] = {}
    for message in a:
        key = _message_key(message)
        remaining[key] = remaining.get(key, 0) + 1
    entered: list[Message] = []
    for message in b:
        key = _message_key(message)
        if remaining.get(key, 0):
            remaining[key] -= 1
            continue
        entered.append(message)
    return entered, remaining


def _message_key(message: Message) -> _MessageKey:
    calls = tuple((call.id, call.name) for call in message.tool_calls or [])
    return (
        message.role,
        message.tool_call_id,
        message.tool_name,
        message.injection_id,
        message.content,
        calls,
    )


def _message_what(message: Message) -> str:
    if message.role == "tool":
        return f"tool result of {message.tool_name or '?'} {message.tool_call_id or ''}".rstrip()
    if message.injection_id is not None:
        return f"{message.role} message delivered by {message.injection_id}"
    if message.role == "assistant":
        if message.tool_calls:
            asked = ", ".join(f"{call.name} {call.id}" for call in message.tool_calls)
            return f"assistant reply asking for {asked}"
        return "assistant reply"
    if message.role == "user":
        return "user message"
    return f"{message.role} message"


def _result_lines(walk: Walk, wanted: set[str]) -> dict[str, int]:
    """For the ``wanted`` keys, ``tool call id → line`` of its tool result in the walk and
    ``ask:<id> → line`` of the call that asked for it. Reads backwards from B and stops once every
    key is found (an ``llm_call`` record is the biggest of a pass)."""
    found: dict[str, int] = {}
    results = {key for key in wanted if not key.startswith("ask:")}
    asks = wanted - results
    for step in reversed(walk.steps):
        if results - found.keys():
            _find_results(walk, step, results, found)
        if asks - found.keys():
            _find_asks(walk, step, asks, found)
        if not wanted - found.keys():
            break
    return found


def _find_results(walk: Walk, step: Step, results: set[str], found: dict[str, int]) -> None:
    for line in step.iteration.tool_result_lines:
        result = record(walk.session, line, ToolResultEvent)
        if result is not None and result.tool_call_id in results:
            found.setdefault(result.tool_call_id, line)


def _find_asks(walk: Walk, step: Step, asks: set[str], found: dict[str, int]) -> None:
    for line in step.iteration.llm_lines:
        call = record(walk.session, line, LlmCallEvent)
        if call is not None and call.response is not None:
            for asked in call.response.tool_calls:
                if f"ask:{asked.id}" in asks:
                    found.setdefault(f"ask:{asked.id}", line)


def _tool_changes(diff: PassDiff, walk: Walk, a: LlmRequest, b: LlmRequest, b_pass: PassEvent | None) -> None:
    """Tool schemas offered on one call only, and why (the injection that offers it, a parked map)."""
    a_tools = {schema.name: schema for schema in a.tools}
    b_tools = {schema.name: schema for schema in b.tools}
    parked_tools: set[str] = set()
    engagement = record(walk.session, walk.steps[-1].iteration.engagement_line, EngagementEvent)
    if engagement is not None:
        parked_tools = set(engagement.parked_tool_names)
    diff.tools_same = [name for name in b_tools if name in a_tools]
    for name, schema in b_tools.items():
        if name not in a_tools:
            why = f"offered by {schema.injection_id}" if schema.injection_id else "an agent tool"
            if schema.injection_id and b_pass is not None:
                reason = next((r for r in b_pass.reasons if r.id == schema.injection_id), None)
                if reason is not None:
                    why += f" ({describe_reason(reason, None)})"
            diff.tools.append(ToolChange("entered", name, why))
    for name, schema in a_tools.items():
        if name not in b_tools:
            if name in parked_tools:
                why = "a parked map took it off the wire"
            elif schema.injection_id:
                why = f"{schema.injection_id}, which offered it, left the tools slot"
            else:
                why = "no longer offered"
            diff.tools.append(ToolChange("left", name, why))


def _segment_changes(diff: PassDiff, a: LlmRequest, b: LlmRequest) -> None:
    """System-prompt segments added, removed or rewritten (a rewritten one with its line diff)."""
    a_segments, b_segments = _keyed_segments(a), _keyed_segments(b)
    for key, (position, text) in b_segments.items():
        before = a_segments.get(key)
        if before is None:
            diff.segments.append(SegmentChange("added", key[0], key[1], position, text))
        elif before[1] != text:
            lines = difflib.unified_diff(before[1].splitlines(), text.splitlines(), lineterm="", n=1)
            body = tuple(line for line in lines if not line.startswith(("---", "+++")))
            diff.segments.append(SegmentChange("changed", key[0], key[1], position, text, body[:_DIFF_LINES]))
        else:
            diff.segments_same += 1
    for key, (position, text) in a_segments.items():
        if key not in b_segments:
            diff.segments.append(SegmentChange("removed", key[0], key[1], position, text))


def _keyed_segments(request: LlmRequest) -> dict[_SegmentKey, tuple[int, str]]:
    """``(source, injection id, nth of that pair) → (1-based position, text)`` for each segment."""
    found: dict[_SegmentKey, tuple[int, str]] = {}
    counts: dict[tuple[str, str | None], int] = {}
    for position, segment in enumerate(request.system_prompt, 1):
        base = (segment.source, segment.injection_id)
        counts[base] = counts.get(base, 0) + 1
        found[(*base, counts[base])] = (position, segment.text)
    return found

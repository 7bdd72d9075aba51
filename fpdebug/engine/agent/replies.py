"""The provider's reply made well formed as it arrives (lone surrogates replaced by U+FFFD)."""

from __future__ import annotations

from fpdebug.trace.records import well_formed_text, well_formed_value
from fpdebug.trace.schema import LlmResponse, ToolCallRecord


def well_formed_call(call: ToolCallRecord) -> ToolCallRecord:
    """``call`` with every lone surrogate of its id, name and arguments replaced by U+FFFD."""
    update: dict[str, object] = {}
    for name in ("id", "name", "raw_args"):
        text = getattr(call, name)
        if isinstance(text, str) and well_formed_text(text) is not text:
            update[name] = well_formed_text(text)
    args = well_formed_value(call.args)
    if args is not call.args:
        update["args"] = args
    return call.model_copy(update=update) if update else call


def well_formed_reply(response: LlmResponse) -> LlmResponse:
    """The provider's reply with every lone surrogate replaced by U+FFFD (what the trace records).

    A model can send half an emoji; the trace holds UTF-8, so it records U+FFFD. Repairing the
    reply as it arrives makes the tool receive, and the conversation send back, that same text.
    """
    content = well_formed_text(response.content)
    stop_reason = response.stop_reason
    if stop_reason is not None:
        stop_reason = well_formed_text(stop_reason)
    calls = [well_formed_call(call) for call in response.tool_calls]
    if (
        content is response.content
        and stop_reason is response.stop_reason
        and all(a is b for a, b in zip(calls, response.tool_calls, strict=True))
    ):
        return response
    return response.model_copy(update={"content": content, "stop_reason": stop_reason, "tool_calls": calls})

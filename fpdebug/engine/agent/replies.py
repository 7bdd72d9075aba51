"""The provider's reply made well formed as it arrives (lone surrogates replaced by U+FFFD), and
what its stop reason means to the loop: a truncated reply, a refusal."""

from __future__ import annotations

from fpdebug.trace.records import well_formed_text, well_formed_value
from fpdebug.trace.schema import LlmResponse, Message, ToolCallRecord


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


TRUNCATION_STOP_REASONS = frozenset({"max_tokens", "length", "max_output_tokens"})
"""Stop reasons of a reply cut at the token limit: Anthropic ``max_tokens``, Chat Completions
``length``, the Responses API's ``max_output_tokens``."""

REFUSAL_STOP_REASONS = frozenset({"refusal", "content_filter"})
"""Stop reasons of a refused reply: Anthropic ``refusal``, OpenAI ``content_filter``."""


def truncated_calls(response: LlmResponse) -> bool:
    """Whether the reply asks for tools but was cut at the token limit (its calls may be partial).

    A call cut short can look whole (a refund with its default arguments), so none of the reply's
    calls may run.
    """
    return bool(response.tool_calls) and response.stop_reason in TRUNCATION_STOP_REASONS


def refusal_of(response: LlmResponse) -> str | None:
    """How the reply refused, or ``None``: the stop reason (``refusal``, ``content_filter``), or
    ``refusal`` when the provider reported a refusal message apart from the text."""
    if response.stop_reason in REFUSAL_STOP_REASONS:
        return response.stop_reason
    if response.refusal is not None:
        return "refusal"
    return None


def assistant_turn(response: LlmResponse) -> Message:
    """The reply as the assistant message the conversation keeps: text, tool calls and thinking.

    The thinking blocks ride along unchanged: with Anthropic's extended thinking, the turn that asked
    for tools must go back with them (signatures intact) before its tool results, or the API
    refuses the next call. Their text is not repaired like the reply's: the signature covers it.
    """
    return Message(
        role="assistant",
        content=response.content,
        tool_calls=list(response.tool_calls),
        thinking=response.thinking,
    )

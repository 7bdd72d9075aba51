"""Helpers for scripted models whose answers are a function of the request (what they can see).

A scenario's ``respond(request)`` reads the request like a model would: the system prompt's
segments, this turn's messages, the tools on offer. The helpers keep those readings short and
identical across scenarios.
"""

from __future__ import annotations

import json

from fpdebug.trace.schema import LlmRequest, Message

__all__ = [
    "last_result",
    "offered",
    "prompt_has",
    "segment_ids",
    "this_turn",
    "tool_results",
    "user_message",
]


def _typed(message: Message) -> bool:
    """A user message the user typed: not an injection's, not one the loop wrote (a nudge, a wrap-up)."""
    return message.role == "user" and message.injection_id is None and not message.from_loop


def this_turn(request: LlmRequest) -> list[Message]:
    """The messages after the turn's user message (earlier turns are the conversation's past)."""
    messages = request.messages
    for index in range(len(messages) - 1, -1, -1):
        if _typed(messages[index]):
            return list(messages[index + 1 :])
    return list(messages)


def user_message(request: LlmRequest) -> str:
    """The turn's user message (the last one the user typed)."""
    for message in reversed(request.messages):
        if _typed(message):
            return message.content
    return ""


def tool_results(request: LlmRequest, name: str | None = None) -> list[Message]:
    """This turn's tool results, optionally only those of one tool."""
    return [m for m in this_turn(request) if m.role == "tool" and (name is None or m.tool_name == name)]


def last_result(request: LlmRequest, name: str) -> object:
    """The latest result of a tool this turn, parsed as JSON when it is JSON (``None`` if never called)."""
    found = tool_results(request, name)
    if not found:
        return None
    try:
        return json.loads(found[-1].content)
    except ValueError:
        return found[-1].content


def offered(request: LlmRequest) -> set[str]:
    """The names of the tools on offer."""
    return {tool.name for tool in request.tools}


def segment_ids(request: LlmRequest) -> list[str]:
    """The ids of the injections whose text rides the system prompt, in order."""
    return [s.injection_id for s in request.system_prompt if s.injection_id is not None]


def prompt_has(request: LlmRequest, text: str) -> bool:
    """Whether any system-prompt segment contains ``text`` (case-insensitive)."""
    needle = text.casefold()
    return any(needle in segment.text.casefold() for segment in request.system_prompt)

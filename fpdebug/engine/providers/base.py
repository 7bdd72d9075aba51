"""The provider contract: one ``Provider`` protocol, the request/reply models and the live-call switch.

A provider turns one :class:`LlmRequest` into one :class:`LlmResponse`. The request and reply are the
trace schema's own models (the ``llm_call`` record stores them as they are), so what the loop sent,
what the trace records and what a replay compares are one and the same value.

Errors: every failure of :meth:`Provider.complete` is a :class:`~fpdebug.errors.ProviderError`
carrying the HTTP ``status`` when there was one and the ``provider`` name. A reply whose tool-call
arguments are not a JSON object is a failure too (``malformed_args="raise"``, the default of both live
providers): the run records it as its failure, as issue 4 asks. A live provider built with
``malformed_args="keep"`` instead returns the call with ``args={}`` and the text in ``raw_args`` so the
loop can answer it with an ``invalid`` tool result and let the model try again.

The live-call switch (pydantic-ai's ``ALLOW_MODEL_REQUESTS`` idea): live providers call
:func:`check_live_call` before every request and raise
:class:`~fpdebug.errors.LiveCallRefusedError` when live calls are blocked, either for the whole process
by ``FPDEBUG_BLOCK_LIVE_CALLS=1`` (which nothing in code can lift) or by an enclosing
``with allow_live_calls(False):``. The scripted and replay providers never reach the network at all.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from fpdebug.errors import LiveCallRefusedError
from fpdebug.trace.schema import LlmRequest, LlmResponse

__all__ = [
    "BLOCK_ENV_VAR",
    "LlmRequest",
    "LlmResponse",
    "MalformedArgs",
    "Provider",
    "allow_live_calls",
    "check_live_call",
    "estimate_tokens",
    "live_calls_allowed",
    "parse_tool_arguments",
    "redact",
    "system_text",
]

BLOCK_ENV_VAR = "FPDEBUG_BLOCK_LIVE_CALLS"
"""Set to ``1`` (or ``true``/``yes``/``on``) to refuse every live model call in the process."""

MalformedArgs: TypeAlias = Literal["raise", "keep"]
"""What a live provider does with tool-call arguments that are not a JSON object: raise a
:class:`~fpdebug.errors.ProviderError`, or keep the text in ``raw_args`` with ``args={}``."""


@runtime_checkable
class Provider(Protocol):
    """Anything that answers one model request. Synchronous: the loop runs in a worker thread."""

    name: str
    """The provider's name as recorded in the trace (``scripted``, ``anthropic``, ``openai``…)."""
    model: str
    """The model asked."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send one request and return the model's reply.

        Args:
            request: the exact system prompt segments, messages and tool schemas to send.

        Returns:
            The reply: text, tool calls, stop reason and usage.

        Raises:
            ProviderError: for every failure (HTTP status, timeout, connection, malformed reply).
        """
        ...


# ----------------------------------------------------------------------------------------------
# The live-call switch

_switch_lock = threading.Lock()
_override: bool | None = None
"""The innermost ``allow_live_calls`` flag in force, or ``None`` outside any."""


def _env_blocks() -> bool:
    # Read on every call, not at import: a test or a wrapper script may set it at any time.
    return os.environ.get(BLOCK_ENV_VAR, "").strip().lower() in {"1", "true", "yes", "on"}


def live_calls_allowed() -> bool:
    """Whether a live provider may reach its model right now.

    Returns:
        ``False`` when ``FPDEBUG_BLOCK_LIVE_CALLS`` blocks the process or the innermost
        :func:`allow_live_calls` says ``False``; ``True`` otherwise.
    """
    if _env_blocks():
        return False
    return _override if _override is not None else True


@contextmanager
def allow_live_calls(flag: bool) -> Iterator[None]:
    """Allow or block live model calls inside the ``with`` block, then restore the previous state.

    The switch is process-wide (a worker thread running the agent loop sees it too); nested blocks
    restore in order. ``FPDEBUG_BLOCK_LIVE_CALLS=1`` still wins over ``allow_live_calls(True)``.

    Args:
        flag: ``True`` to allow, ``False`` to block.
    """
    global _override
    with _switch_lock:
        previous, _override = _override, flag
    try:
        yield
    finally:
        with _switch_lock:
            _override = previous


def check_live_call(provider: str, model: str) -> None:
    """Refuse a live call when live calls are blocked; live providers call it before every request.

    Args:
        provider: the provider's name, for the message.
        model: the model that would have been asked.

    Raises:
        LiveCallRefusedError: live calls are blocked.
    """
    if live_calls_allowed():
        return
    why = f"{BLOCK_ENV_VAR}=1 is set" if _env_blocks() else "live calls are blocked by allow_live_calls(False)"
    raise LiveCallRefusedError(
        f"refused a live call to model {model!r}: {why}; use the scripted or replay provider, "
        "or allow live calls explicitly",
        provider=provider,
    )


# ----------------------------------------------------------------------------------------------
# Helpers the providers share


def system_text(request: LlmRequest) -> str:
    """The system prompt as sent: the segments' texts joined by a blank line.

    Args:
        request: the request whose segments to join.

    Returns:
        The joined text (empty when there are no segments).
    """
    return "\n\n".join(segment.text for segment in request.system_prompt)


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: one token per four characters, rounded up.

    Args:
        text: any text.

    Returns:
        ``ceil(len(text) / 4)``.
    """
    return math.ceil(len(text) / 4)


def redact(text: str, secret: str | None) -> str:
    """Remove a secret from text a provider is about to put in an error.

    A server may echo the key it was sent (a fake or hostile one certainly can); the key must never
    reach an error message, a trace or a terminal.

    Args:
        text: the message to clean.
        secret: the API key, or ``None`` when there is none.

    Returns:
        ``text`` with every occurrence of ``secret`` replaced by ``[redacted]``.
    """
    if not secret:
        return text
    return text.replace(secret, "[redacted]")


_JSON_KINDS = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def parse_tool_arguments(text: str) -> dict[str, Any]:
    """Parse the argument text of a tool call, which must be a JSON object.

    Args:
        text: the arguments as the model sent them. Blank text means no arguments (some
            OpenAI-compatible servers send ``""`` for a call without any).

    Returns:
        The arguments.

    Raises:
        ValueError: the text is not JSON, or not a JSON object; the message says which.
    """
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(parsed, dict):
        kind = "null" if parsed is None else _JSON_KINDS.get(type(parsed), type(parsed).__name__)
        raise ValueError(f"is a JSON {kind}, not an object")
    return parsed

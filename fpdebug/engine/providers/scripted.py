"""The scripted provider: a list of replies, or a function of the request, never the network (docs/backtracking.md §9.12)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from pydantic import JsonValue, ValidationError

from fpdebug.engine.providers.base import LlmRequest, LlmResponse, estimate_tokens, system_text
from fpdebug.errors import DefinitionError, ProviderError, ScriptExhaustedError
from fpdebug.trace.schema import Message, ToolCallRecord, Usage

__all__ = ["ReplyLike", "Responder", "ScriptedCall", "ScriptedProvider", "ScriptedReply"]


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call a scripted reply asks for."""

    name: str
    """The tool to call."""
    args: Mapping[str, JsonValue] = field(default_factory=dict)
    """Its arguments."""
    id: str | None = None
    """The call id; ``None`` derives ``call_<n>`` from the request (see :class:`ScriptedProvider`)."""


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted model reply: text, tool calls, stop reason and usage.

    Build one with the helpers::

        ScriptedReply.text("The refund is approved.")
        ScriptedReply.tool_call("lookup_order", {"order_id": "A-17"})
        ScriptedReply.batch(ScriptedCall("a", {}), ScriptedCall("b", {"x": 1}), content="Two checks.")
    """

    content: str = ""
    """The reply text."""
    tool_calls: tuple[ScriptedCall, ...] = ()
    """The tool calls, in order."""
    stop_reason: str | None = None
    """``None`` means ``tool_use`` when there are tool calls, else ``end_turn``."""
    usage: Usage | None = None
    """``None`` means a deterministic estimate (a token per four characters)."""

    @classmethod
    def text(
        cls, content: str, *, stop_reason: str | None = None, usage: Usage | None = None
    ) -> ScriptedReply:
        """A final answer with no tool calls.

        Args:
            content: the answer.
            stop_reason: overrides ``end_turn``.
            usage: overrides the token estimate.

        Returns:
            The reply.
        """
        return cls(content=content, stop_reason=stop_reason, usage=usage)

    @classmethod
    def tool_call(
        cls,
        name: str,
        args: Mapping[str, JsonValue] | None = None,
        *,
        id: str | None = None,
        content: str = "",
        usage: Usage | None = None,
    ) -> ScriptedReply:
        """A reply asking for one tool call.

        Args:
            name: the tool.
            args: its arguments (``{}`` when omitted).
            id: the call id; derived from the request when omitted.
            content: text the model says alongside the call.
            usage: overrides the token estimate.

        Returns:
            The reply.
        """
        return cls(content=content, tool_calls=(ScriptedCall(name, dict(args or {}), id),), usage=usage)

    @classmethod
    def batch(cls, *calls: ScriptedCall, content: str = "", usage: Usage | None = None) -> ScriptedReply:
        """A reply asking for several tool calls in one batch.

        Args:
            *calls: the calls, in order.
            content: text the model says alongside the calls.
            usage: overrides the token estimate.

        Returns:
            The reply.
        """
        return cls(content=content, tool_calls=tuple(calls), usage=usage)


ReplyLike: TypeAlias = str | ScriptedReply | LlmResponse | Mapping[str, object]
"""What a script entry or a ``respond`` function may give: a final text, a :class:`ScriptedReply`, a
ready :class:`LlmResponse`, or a mapping ``{content, tool_calls: [{id?, name, args}], stop_reason,
usage}`` (docs/backtracking.md §9.12's reply shape)."""

Responder: TypeAlias = Callable[[LlmRequest], ReplyLike]
"""A function that answers a request (the backtracker's scripted model: same context, same answer)."""

_CALL_ID = re.compile(r"call_(\d+)")


class ScriptedProvider:
    """A model that plays a script, or answers through a function of its request. Never live.

    Precedence (docs/backtracking.md §9.12): ``replies`` (consumed in order by a per-instance cursor; one request too
    many raises :class:`~fpdebug.errors.ScriptExhaustedError`), then ``reply`` (the same text every
    time), then ``respond`` (a function of the request). With none of them, it echoes the last user
    message.

    Tool-call ids a reply leaves out are ``call_<n>``, where ``n`` continues the highest ``call_<n>``
    already in the request's conversation. They are a function of the request, so a rerun gets the
    same ids whether or not the instance was reset.

    Usage a reply leaves out is estimated deterministically: a token per four characters of the
    request (system prompt, messages, tool schemas) and of the reply.
    """

    def __init__(
        self,
        replies: Sequence[ReplyLike] | None = None,
        *,
        reply: str | None = None,
        respond: Responder | None = None,
        name: str = "scripted",
        model: str = "scripted",
    ) -> None:
        """Build a scripted model.

        Args:
            replies: the script, one entry per request.
            reply: a fixed answer for every request.
            respond: a function from the request to the reply.
            name: the provider name recorded in the trace.
            model: the model name recorded in the trace.

        Raises:
            DefinitionError: a script entry is not a reply.
        """
        self.name = name
        self.model = model
        self._script: list[ScriptedReply | LlmResponse] | None = (
            [_coerce(entry, where=f"scripted reply #{i}") for i, entry in enumerate(replies, 1)]
            if replies is not None
            else None
        )
        self._fixed = reply
        self._respond = respond
        self._lock = threading.Lock()
        self._cursor = 0
        self._requests: list[LlmRequest] = []

    def __repr__(self) -> str:
        mode = (
            f"replies={len(self._script)}"
            if self._script is not None
            else "reply=…"
            if self._fixed is not None
            else "respond=…"
            if self._respond is not None
            else "echo"
        )
        return f"ScriptedProvider({mode}, name={self.name!r}, model={self.model!r})"

    @property
    def requests(self) -> tuple[LlmRequest, ...]:
        """Every request received since construction or the last :meth:`reset`, in order."""
        return tuple(self._requests)

    @property
    def remaining(self) -> int | None:
        """Script entries not yet served; ``None`` when the provider is not playing a list."""
        return None if self._script is None else len(self._script) - self._cursor

    def reset(self) -> None:
        """Rewind the script to its first reply and forget the requests received."""
        with self._lock:
            self._cursor = 0
            self._requests.clear()

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer one request from the script or the function.

        Args:
            request: the request.

        Returns:
            The scripted reply, with ids and usage filled in.

        Raises:
            ScriptExhaustedError: the script has no reply left for this request.
            ProviderError: ``respond`` raised or returned something that is not a reply.
        """
        with self._lock:
            self._requests.append(request)
            number = len(self._requests)
            if self._script is not None:
                if self._cursor >= len(self._script):
                    count = len(self._script)
                    raise ScriptExhaustedError(
                        f"exhausted: scripted {count} {'reply' if count == 1 else 'replies'} "
                        f"but received request #{count + 1}",
                        provider=self.name,
                    )
                chosen: ScriptedReply | LlmResponse = self._script[self._cursor]
                self._cursor += 1
        if self._script is None:
            chosen = self._answer(request, number)
        if isinstance(chosen, LlmResponse):
            return chosen
        return _finish(chosen, request)

    def _answer(self, request: LlmRequest, number: int) -> ScriptedReply | LlmResponse:
        if self._fixed is not None:
            return ScriptedReply.text(self._fixed)
        if self._respond is None:
            last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
            return ScriptedReply.text(last_user)
        try:
            produced = self._respond(request)
        except Exception as exc:
            # A scenario's respond function is user code: its failure is the run's failure, recorded,
            # not a traceback out of the loop.
            raise ProviderError(
                f"respond function raised {type(exc).__name__} on request #{number}: {exc}",
                provider=self.name,
            ) from exc
        try:
            return _coerce(produced, where=f"respond's reply to request #{number}")
        except DefinitionError as exc:
            raise ProviderError(str(exc), provider=self.name) from exc


def _coerce(entry: object, *, where: str) -> ScriptedReply | LlmResponse:
    """Normalise one script entry; a bad one is refused when the script is built."""
    if isinstance(entry, str):
        return ScriptedReply.text(entry)
    if isinstance(entry, ScriptedReply | LlmResponse):
        return entry
    if isinstance(entry, Mapping):
        unknown = set(entry) - {"content", "tool_calls", "stop_reason", "usage"}
        if unknown:
            raise DefinitionError(f"{where} has unknown keys {sorted(unknown)}")
        try:
            calls = tuple(
                ScriptedCall(name=str(call["name"]), args=dict(call.get("args") or {}), id=call.get("id"))
                for call in entry.get("tool_calls") or ()
            )
            usage = entry.get("usage")
            return ScriptedReply(
                content=str(entry.get("content") or ""),
                tool_calls=calls,
                stop_reason=entry.get("stop_reason"),
                usage=Usage.model_validate(usage) if usage is not None else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError, ValidationError) as exc:
            raise DefinitionError(f"{where} is not a valid reply mapping: {exc}") from exc
    raise DefinitionError(
        f"{where} has type {type(entry).__name__}; expected a str, ScriptedReply, LlmResponse or mapping"
    )


def _next_call_number(messages: Sequence[Message]) -> int:
    highest = 0
    for message in messages:
        for ids in (
            [call.id for call in message.tool_calls or ()],
            [message.tool_call_id] if message.tool_call_id else [],
        ):
            for call_id in ids:
                if match := _CALL_ID.fullmatch(call_id):
                    highest = max(highest, int(match.group(1)))
    return highest + 1


def _request_text(request: LlmRequest) -> str:
    """Everything a real model would read, for the token estimate."""
    parts = [system_text(request)]
    for message in request.messages:
        parts.append(message.content)
        parts.extend(call.name + json.dumps(call.args, sort_keys=True) for call in message.tool_calls or ())
    parts.extend(
        tool.name + tool.description + json.dumps(tool.parameters, sort_keys=True) for tool in request.tools
    )
    return "".join(parts)


def _finish(reply: ScriptedReply, request: LlmRequest) -> LlmResponse:
    """Give a scripted reply its ids, stop reason and usage, as a real provider's reply would have."""
    number = _next_call_number(request.messages)
    calls: list[ToolCallRecord] = []
    for call in reply.tool_calls:
        call_id = call.id
        if call_id is None:
            call_id, number = f"call_{number}", number + 1
        calls.append(ToolCallRecord(id=call_id, name=call.name, args=dict(call.args)))
    usage = reply.usage
    if usage is None:
        out = reply.content + "".join(c.name + json.dumps(c.args, sort_keys=True) for c in calls)
        usage = Usage(
            input_tokens=estimate_tokens(_request_text(request)),
            output_tokens=estimate_tokens(out),
        )
    return LlmResponse(
        content=reply.content,
        tool_calls=calls,
        stop_reason=reply.stop_reason or ("tool_use" if calls else "end_turn"),
        usage=usage,
    )

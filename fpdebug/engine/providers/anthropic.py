"""The Anthropic provider: the Messages API with tool use, through the official ``anthropic`` SDK."""

from __future__ import annotations

import json
import os
from typing import Any

import anthropic

from fpdebug.engine.providers.base import (
    LlmRequest,
    LlmResponse,
    MalformedArgs,
    check_live_call,
    parse_tool_arguments,
    redact,
    system_text,
)
from fpdebug.errors import ProviderError
from fpdebug.trace.schema import Message, ToolCallRecord, ToolSchema, Usage

__all__ = ["API_KEY_ENV_VAR", "AnthropicProvider"]

API_KEY_ENV_VAR = "ANTHROPIC_API_KEY"
"""Where the key comes from when the constructor is not given one."""

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_EXCERPT = 200
_MAX_MESSAGE = 1000


class AnthropicProvider:
    """A live Claude model behind the Messages API.

    The request maps as follows: the system prompt segments joined by a blank line become ``system``
    (any ``system``-role message is appended to it, since the Messages API has no such role); user
    messages become user turns; an assistant message becomes text plus ``tool_use`` blocks; ``tool``
    messages become ``tool_result`` blocks, and consecutive results (with any user text after them)
    are merged into one user turn, as the API requires. Tool schemas become
    ``{name, description, input_schema}``. ``LlmRequest.temperature`` and ``LlmRequest.seed`` are not
    sent: the Messages API of the ``anthropic`` 2.x SDK has neither parameter.

    The key is read once, at construction, from ``api_key`` or ``ANTHROPIC_API_KEY``. It is handed to
    the SDK client and appears in no repr, error message or trace.
    """

    name: str
    """``anthropic``, or the name given."""
    model: str
    """The model asked (``claude-…``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 4096,
        max_retries: int = 2,
        malformed_args: MalformedArgs = "raise",
        name: str = "anthropic",
    ) -> None:
        """Build the provider (no network traffic happens here).

        Args:
            model: the model id.
            api_key: the key; defaults to ``ANTHROPIC_API_KEY``.
            base_url: another endpoint (a proxy, a gateway); defaults to the SDK's
                (``ANTHROPIC_BASE_URL`` or ``https://api.anthropic.com``).
            timeout: seconds before a request is abandoned.
            max_tokens: the reply budget when the request sets none.
            max_retries: the SDK's retries on connection errors, 408/409/429 and 5xx.
            malformed_args: ``raise`` a ProviderError for tool arguments that are not a JSON object,
                or ``keep`` them in ``raw_args`` (see :mod:`fpdebug.engine.providers.base`).
            name: the provider name recorded in the trace.

        Raises:
            ProviderError: no key was given and ``ANTHROPIC_API_KEY`` is not set.
        """
        self.name = name
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.malformed_args = malformed_args
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV_VAR)
        if not key:
            raise ProviderError(
                f"no Anthropic API key: pass api_key= or set {API_KEY_ENV_VAR}", provider=name
            )
        # The key lives only in the SDK client and in this closure-like attribute used to scrub
        # error text; it is never formatted into anything.
        self._secret = key
        self._client = anthropic.Anthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicProvider(model={self.model!r}{where})"

    def close(self) -> None:
        """Release the SDK client's connections."""
        self._client.close()

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send one Messages API request.

        Args:
            request: the request.

        Returns:
            The reply: text blocks joined, tool_use blocks as tool calls, stop reason, usage.

        Raises:
            LiveCallRefusedError: live calls are blocked.
            ProviderError: an HTTP error (with its status), a timeout, a connection failure, or a
                reply that cannot be read.
        """
        check_live_call(self.name, self.model)
        params = self.build_params(request)
        try:
            reply = self._client.messages.create(**params)
        except anthropic.APIStatusError as exc:
            raise self._error(_status_message(exc), status=exc.status_code) from None
        except anthropic.APITimeoutError:
            raise self._error(f"request timed out after {self.timeout:g}s") from None
        except anthropic.APIConnectionError as exc:
            raise self._error(f"could not reach {self._client.base_url}: {_cause(exc)}") from None
        except anthropic.AnthropicError as exc:
            raise self._error(f"{type(exc).__name__}: {exc}") from None
        return self._parse(reply)

    def build_params(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments ``messages.create`` receives for a request (pure; no network).

        Args:
            request: the request.

        Returns:
            ``model``, ``max_tokens``, ``messages`` and, when there are any, ``system`` and ``tools``.
        """
        system, messages = _messages(request)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens if request.max_tokens is not None else self.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [_tool(tool) for tool in request.tools]
        return params

    def _error(self, message: str, *, status: int | None = None) -> ProviderError:
        # `from None` above and redaction here: neither the chained SDK exception (which holds the
        # request and its headers) nor an echoing server can carry the key into a log or a trace.
        text = redact(message, self._secret)
        if len(text) > _MAX_MESSAGE:
            # An error body can be a whole HTML page from a proxy; the gist is at the start.
            text = text[:_MAX_MESSAGE] + f"… ({len(text) - _MAX_MESSAGE} more characters)"
        return ProviderError(text, status=status, provider=self.name)

    def _parse(self, reply: Any) -> LlmResponse:
        texts: list[str] = []
        calls: list[ToolCallRecord] = []
        for block in getattr(reply, "content", None) or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                calls.append(self._tool_call(block))
        usage = getattr(reply, "usage", None)
        return LlmResponse(
            content="".join(texts),
            tool_calls=calls,
            stop_reason=getattr(reply, "stop_reason", None),
            usage=Usage(
                input_tokens=getattr(usage, "input_tokens", None) or 0,
                output_tokens=getattr(usage, "output_tokens", None) or 0,
                cache_read_tokens=getattr(usage, "cache_read_input_tokens", None),
                cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None),
            ),
        )

    def _tool_call(self, block: Any) -> ToolCallRecord:
        raw = block.input
        if isinstance(raw, dict):
            return ToolCallRecord(id=block.id, name=block.name, args=raw)
        # The API sends `input` as an object; anything else (a string of JSON, possibly broken) came
        # from a proxy or a compatible server that got it wrong.
        text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            return ToolCallRecord(id=block.id, name=block.name, args=parse_tool_arguments(text))
        except ValueError as exc:
            if self.malformed_args == "keep":
                return ToolCallRecord(id=block.id, name=block.name, args={}, raw_args=text)
            raise self._error(
                f"malformed tool-call arguments: call {block.id!r} to {block.name!r} {exc}: {text[:_EXCERPT]!r}"
            ) from None


def _tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters or _EMPTY_SCHEMA,
    }


def _messages(request: LlmRequest) -> tuple[str, list[dict[str, Any]]]:
    """Map the conversation to Messages API turns; returns ``(system, messages)``."""
    system_parts = [system_text(request)] if request.system_prompt else []
    turns: list[dict[str, Any]] = []

    def user_blocks() -> list[dict[str, Any]]:
        # Tool results and user text that follow each other share one user turn: the API wants
        # every tool_result of a batch in the turn right after the assistant's tool_use turn.
        if turns and turns[-1]["role"] == "user":
            content: list[dict[str, Any]] = turns[-1]["content"]
            return content
        turns.append({"role": "user", "content": []})
        return turns[-1]["content"]

    for message in request.messages:
        if message.role == "system":
            system_parts.append(message.content)
        elif message.role == "user":
            user_blocks().append({"type": "text", "text": message.content})
        elif message.role == "tool":
            user_blocks().append(
                {"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}
            )
        elif message.content or message.tool_calls:
            turns.append({"role": "assistant", "content": _assistant_blocks(message)})
        # else: an empty assistant turn (the model said nothing) is left out; the API refuses empty
        # text blocks, and the user turns around it merge into one.
    return "\n\n".join(part for part in system_parts if part), turns


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls or ():
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.args})
    return blocks


def _status_message(exc: anthropic.APIStatusError) -> str:
    kind = getattr(exc, "type", None)
    detail = getattr(exc, "api_message", None) or exc.message
    return f"{kind}: {detail}" if kind else str(detail)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)

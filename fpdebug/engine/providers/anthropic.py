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
    SdkErrors,
    SdkProvider,
    parameters_schema,
    system_text,
)
from fpdebug.errors import ProviderError
from fpdebug.trace.schema import Message, ToolCallRecord, ToolSchema, Usage

__all__ = ["API_KEY_ENV_VAR", "AnthropicProvider"]

API_KEY_ENV_VAR = "ANTHROPIC_API_KEY"
"""Where the key comes from when the constructor is not given one."""


class AnthropicProvider(SdkProvider):
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

    sdk_errors = SdkErrors(
        status=anthropic.APIStatusError,
        timeout=anthropic.APITimeoutError,
        connection=anthropic.APIConnectionError,
        other=anthropic.AnthropicError,
    )
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
        self._secret = key
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

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

    def _send(self, params: dict[str, Any]) -> Any:
        return self._client.messages.create(**params)

    def _parse(self, reply: Any) -> LlmResponse:
        """The reply: text blocks joined, tool_use blocks as tool calls, stop reason, usage."""
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
        return self._tool_call_from_text(block.id, block.name, text)

    @staticmethod
    def _status_message(exc: anthropic.APIStatusError) -> str:
        kind = getattr(exc, "type", None)
        detail = getattr(exc, "api_message", None) or exc.message
        return f"{kind}: {detail}" if kind else str(detail)


def _tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": parameters_schema(tool),
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
        blocks: list[dict[str, Any]] = []
        turns.append({"role": "user", "content": blocks})
        return blocks

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

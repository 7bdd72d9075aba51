"""The OpenAI provider: Chat Completions with tool calls, through the official ``openai`` SDK.

Also the way to any OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp's server): pass its
``base_url``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import openai

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

__all__ = ["API_KEY_ENV_VAR", "BASE_URL_ENV_VAR", "NO_KEY_PLACEHOLDER", "OpenAIProvider"]

API_KEY_ENV_VAR = "OPENAI_API_KEY"
"""Where the key comes from when the constructor is not given one."""
BASE_URL_ENV_VAR = "OPENAI_BASE_URL"
"""Where the endpoint comes from when the constructor is not given one."""

NO_KEY_PLACEHOLDER = "not-needed"
"""Sent as the key to a ``base_url`` server when no key is set (local servers ignore it)."""


class OpenAIProvider(SdkProvider):
    """A live model behind the Chat Completions API (OpenAI, or any compatible server).

    The request maps as follows: the system prompt segments joined by a blank line become the first
    ``system`` message; user, system and tool messages keep their roles (a tool message carries its
    ``tool_call_id``); an assistant message carries its ``tool_calls`` as function calls whose
    ``arguments`` are the JSON of the recorded args (or the model's own text when it was malformed and
    kept). Tool schemas become function tools. ``LlmRequest.seed`` is sent as ``seed``.

    The reply budget is sent as ``max_completion_tokens`` (what o-series and gpt-5 models accept,
    and gateways in front of them); ``legacy_max_tokens=True`` sends ``max_tokens`` instead, for an
    old server that knows only that field.

    The key is read once, at construction, from ``api_key`` or ``OPENAI_API_KEY``; the endpoint from
    ``base_url`` or ``OPENAI_BASE_URL``. With a base URL and no key, a placeholder is sent (Ollama
    and vLLM need none). The key appears in no repr, error message or trace. Timeouts and retries
    are the SDK's own unless given.

    Usage: ``prompt_tokens`` already counts cached tokens (the OTel GenAI definition), cached and
    reasoning tokens are recorded apart too, with the response id and model. A ``refusal`` in the
    reply is recorded in ``LlmResponse.refusal`` (and as the content, when there is no other text).
    """

    sdk_errors = SdkErrors(
        status=openai.APIStatusError,
        timeout=openai.APITimeoutError,
        connection=openai.APIConnectionError,
        other=openai.OpenAIError,
    )
    name: str
    """``openai``, or the name given."""
    model: str
    """The model asked."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        max_retries: int | None = None,
        malformed_args: MalformedArgs = "raise",
        name: str = "openai",
        legacy_max_tokens: bool = False,
        reasoning_effort: str | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> None:
        """Build the provider (no network traffic happens here).

        Args:
            model: the model id (``gpt-…``, or the name a compatible server knows, e.g. ``llama3.2``).
            api_key: the key; defaults to ``OPENAI_API_KEY``.
            base_url: an OpenAI-compatible server, e.g. ``http://localhost:11434/v1`` (Ollama) or
                ``http://localhost:8000/v1`` (vLLM); defaults to ``OPENAI_BASE_URL``, then OpenAI's.
            timeout: seconds before a request is abandoned; ``None`` keeps the SDK's default.
            max_tokens: the reply budget when the request sets none; ``None`` leaves it to the server.
            temperature: the sampling temperature when the request sets none.
            max_retries: the SDK's retries on connection errors, 408/409/429 and 5xx; ``None`` keeps
                the SDK's default (2).
            malformed_args: ``raise`` a ProviderError for tool arguments that are not a JSON object,
                or ``keep`` them in ``raw_args`` (see :mod:`fpdebug.engine.providers.base`).
            name: the provider name recorded in the trace.
            legacy_max_tokens: send the budget as ``max_tokens`` (old servers) instead of
                ``max_completion_tokens``.
            reasoning_effort: sent as ``reasoning_effort`` (``low``, ``medium``, ``high``) to a
                reasoning model, and listed in :attr:`run_options`.
            on_delta: stream the reply, handing each piece of text to this callback as it arrives.

        Raises:
            ProviderError: no key, no ``OPENAI_API_KEY`` and no base URL.
        """
        self.name = name
        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV_VAR) or None
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.malformed_args = malformed_args
        self.legacy_max_tokens = legacy_max_tokens
        self.reasoning_effort = reasoning_effort
        self.on_delta = on_delta
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV_VAR)
        if not key:
            if self.base_url is None:
                raise ProviderError(
                    f"no OpenAI API key: pass api_key= or set {API_KEY_ENV_VAR} "
                    "(or give base_url= for a local OpenAI-compatible server)",
                    provider=name,
                )
            key = NO_KEY_PLACEHOLDER
        self._secret = None if key == NO_KEY_PLACEHOLDER else key
        # Only what was asked is passed: the SDK keeps its own timeout and retry defaults otherwise.
        client_options: dict[str, Any] = {}
        if timeout is not None:
            client_options["timeout"] = timeout
        if max_retries is not None:
            client_options["max_retries"] = max_retries
        self._client: openai.OpenAI = openai.OpenAI(api_key=key, base_url=self.base_url, **client_options)

    @property
    def run_options(self) -> dict[str, Any]:
        """The settings worth recording in ``run_start.options`` (reasoning effort, legacy budget)."""
        recorded: dict[str, Any] = {}
        if self.reasoning_effort is not None:
            recorded["reasoning_effort"] = self.reasoning_effort
        if self.legacy_max_tokens:
            recorded["legacy_max_tokens"] = True
        return recorded

    def build_params(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments ``chat.completions.create`` receives for a request (pure; no network).

        Args:
            request: the request.

        Returns:
            ``model``, ``messages`` and, when set, ``tools``, ``temperature``, the token budget, ``seed``.
        """
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": system_text(request)})
        messages.extend(_message(message) for message in request.messages)
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            params["tools"] = [_tool(tool) for tool in request.tools]
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = request.max_tokens if request.max_tokens is not None else self.max_tokens
        if max_tokens is not None:
            params["max_tokens" if self.legacy_max_tokens else "max_completion_tokens"] = max_tokens
        if request.seed is not None:
            params["seed"] = request.seed
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        return params

    def _send(self, params: dict[str, Any]) -> Any:
        if self.on_delta is None:
            return self._client.chat.completions.create(**params)
        # Streamed: the text goes to the sink as it arrives; the accumulated completion is the same
        # value a non-streamed call returns (usage included), so the recorded reply does not change.
        with self._client.chat.completions.stream(**params, stream_options={"include_usage": True}) as stream:
            for event in stream:
                if event.type == "content.delta":
                    self._delta(event.delta)
            return stream.get_final_completion()

    def _parse(self, reply: Any) -> LlmResponse:
        """The first choice: text, tool calls, finish reason as ``stop_reason``, usage."""
        choices = getattr(reply, "choices", None) or []
        if not choices:
            raise self._error("the reply has no choices")
        choice = choices[0]
        message = choice.message
        calls = [
            self._tool_call(call) for call in message.tool_calls or () if getattr(call, "function", None)
        ]
        usage = getattr(reply, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        output_details = getattr(usage, "completion_tokens_details", None)
        refusal = getattr(message, "refusal", None) or None
        return LlmResponse(
            # A refusal is the model's answer too; record it rather than an empty string.
            content=message.content or refusal or "",
            tool_calls=calls,
            stop_reason=choice.finish_reason,
            usage=Usage(
                input_tokens=getattr(usage, "prompt_tokens", None) or 0,
                output_tokens=getattr(usage, "completion_tokens", None) or 0,
                cache_read_tokens=getattr(details, "cached_tokens", None),
                reasoning_tokens=getattr(output_details, "reasoning_tokens", None),
                input_includes_cache=True,
            ),
            id=getattr(reply, "id", None) or None,
            model=getattr(reply, "model", None) or None,
            refusal=refusal if isinstance(refusal, str) else None,
        )

    def _tool_call(self, call: Any) -> ToolCallRecord:
        return self._tool_call_from_text(call.id, call.function.name, call.function.arguments or "")

    @staticmethod
    def _status_message(exc: openai.APIStatusError) -> str:
        body = exc.body
        detail: object = None
        if isinstance(body, str) and body.strip():
            # Not JSON (a proxy's HTML page) or a bare {"error": "text"}: the text is the message.
            detail = body
        elif isinstance(body, dict):
            # The SDK hands over the `error` object itself for OpenAI-shaped bodies; some compatible
            # servers nest it once more or put the text under "message" at the top.
            detail = body.get("message") or body.get("error")
            if isinstance(detail, dict):
                detail = detail.get("message")
        text = str(detail) if detail else exc.message
        kind = getattr(exc, "type", None)
        return f"{kind}: {text}" if kind else text


def _tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters_schema(tool),
        },
    }


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.raw_args if call.raw_args is not None else json.dumps(call.args),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}

"""The OpenAI Responses API provider (``/v1/responses``), through the official ``openai`` SDK.

The same SDK, key, endpoint and error handling as :class:`~fpdebug.engine.providers.openai.OpenAIProvider`
(it subclasses it); only the wire format differs: the system prompt is ``instructions``, the
conversation is a list of input items (messages, ``function_call`` and ``function_call_output``),
the budget is ``max_output_tokens`` and reasoning settings go in ``reasoning``.
"""

from __future__ import annotations

import json
from typing import Any

from fpdebug.engine.providers.base import LlmRequest, LlmResponse, parameters_schema, system_text
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.trace.schema import Message, ToolCallRecord, ToolSchema, Usage

__all__ = ["OpenAIResponsesProvider"]


class OpenAIResponsesProvider(OpenAIProvider):
    """A live model behind OpenAI's Responses API.

    The request maps as follows: the system prompt segments joined by a blank line become
    ``instructions``; user, system and assistant text become input messages; an assistant's tool
    calls become ``function_call`` items and tool messages ``function_call_output`` items, linked by
    ``call_id``. Tools are function tools with ``strict: false`` (the schemas are the agent's, not
    rewritten for strict mode). Nothing is stored server-side (``store: false``): every request
    carries its whole conversation, as the trace records it.

    The reply: the output text joined, ``function_call`` items as tool calls, a ``refusal`` part as
    :attr:`LlmResponse.refusal`. ``stop_reason`` is the response's ``status`` (``completed``), or for
    an incomplete one the reason (``max_output_tokens``, ``content_filter``), which the loop treats
    as a truncation or a refusal. Usage: ``input_tokens`` (cached included), cached and reasoning
    tokens.
    """

    def __init__(self, model: str, **options: Any) -> None:
        """Build the provider (no network traffic happens here); options as for ``OpenAIProvider``.

        Args:
            model: the model id.
            **options: ``api_key``, ``base_url``, ``timeout``, ``max_tokens``, ``temperature``,
                ``max_retries``, ``malformed_args``, ``reasoning_effort``, ``on_delta``, and
                ``name`` (default ``openai-responses``).
        """
        options.setdefault("name", "openai-responses")
        super().__init__(model, **options)

    def build_params(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments ``responses.create`` receives for a request (pure; no network).

        Args:
            request: the request.

        Returns:
            ``model``, ``input``, ``store`` and, when set, ``instructions``, ``tools``,
            ``temperature``, ``max_output_tokens``, ``reasoning``.
        """
        params: dict[str, Any] = {
            "model": self.model,
            "input": [item for message in request.messages for item in _items(message)],
            "store": False,
        }
        if request.system_prompt:
            params["instructions"] = system_text(request)
        if request.tools:
            params["tools"] = [_tool(tool) for tool in request.tools]
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            params["temperature"] = temperature
        max_tokens = request.max_tokens if request.max_tokens is not None else self.max_tokens
        if max_tokens is not None:
            params["max_output_tokens"] = max_tokens
        if self.reasoning_effort is not None:
            params["reasoning"] = {"effort": self.reasoning_effort}
        return params

    def _send(self, params: dict[str, Any]) -> Any:
        if self.on_delta is None:
            return self._client.responses.create(**params)
        with self._client.responses.stream(**params) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    self._delta(event.delta)
            return stream.get_final_response()

    def _parse(self, reply: Any) -> LlmResponse:
        """The output items: text, refusal, function calls; the status or incomplete reason; usage."""
        texts: list[str] = []
        refusals: list[str] = []
        calls: list[ToolCallRecord] = []
        for item in getattr(reply, "output", None) or ():
            kind = getattr(item, "type", None)
            if kind == "message":
                for part in getattr(item, "content", None) or ():
                    if getattr(part, "type", None) == "output_text":
                        texts.append(part.text)
                    elif getattr(part, "type", None) == "refusal":
                        refusals.append(part.refusal)
            elif kind == "function_call":
                calls.append(self._tool_call_from_text(item.call_id, item.name, item.arguments or ""))
        status = getattr(reply, "status", None)
        incomplete = getattr(getattr(reply, "incomplete_details", None), "reason", None)
        usage = getattr(reply, "usage", None)
        refusal = "".join(refusals) or None
        return LlmResponse(
            content="".join(texts) or refusal or "",
            tool_calls=calls,
            stop_reason=incomplete if status == "incomplete" and incomplete else status,
            usage=Usage(
                input_tokens=getattr(usage, "input_tokens", None) or 0,
                output_tokens=getattr(usage, "output_tokens", None) or 0,
                cache_read_tokens=getattr(
                    getattr(usage, "input_tokens_details", None), "cached_tokens", None
                ),
                reasoning_tokens=getattr(
                    getattr(usage, "output_tokens_details", None), "reasoning_tokens", None
                ),
                input_includes_cache=True,
            ),
            id=getattr(reply, "id", None) or None,
            model=getattr(reply, "model", None) or None,
            refusal=refusal,
        )


def _tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters_schema(tool),
        "strict": False,
    }


def _items(message: Message) -> list[dict[str, Any]]:
    """One conversation message as Responses input items."""
    if message.role == "tool":
        return [
            {"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.content}
        ]
    items: list[dict[str, Any]] = []
    if message.content or message.role != "assistant":
        items.append({"role": message.role, "content": message.content})
    for call in message.tool_calls or ():
        arguments = call.raw_args if call.raw_args is not None else json.dumps(call.args)
        items.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments})
    return items

"""The Anthropic provider: the Messages API with tool use, through the official ``anthropic`` SDK."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
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
from fpdebug.trace.schema import Message, ThinkingBlock, ToolCallRecord, ToolSchema, Usage

__all__ = ["API_KEY_ENV_VAR", "BASE_URL_ENV_VAR", "AnthropicProvider"]

API_KEY_ENV_VAR = "ANTHROPIC_API_KEY"
"""Where the key comes from when the constructor is not given one."""
BASE_URL_ENV_VAR = "ANTHROPIC_BASE_URL"
"""Where the endpoint comes from when the constructor is not given one."""
NO_KEY_PLACEHOLDER = "not-needed"
"""Sent as the key to a ``base_url`` gateway when no key is set (a local gateway may need none)."""


class AnthropicProvider(SdkProvider):
    """A live Claude model behind the Messages API.

    The request maps as follows: the system prompt segments joined by a blank line become ``system``
    (any ``system``-role message is appended to it, since the Messages API has no such role); user
    messages become user turns; an assistant message becomes text plus ``tool_use`` blocks; ``tool``
    messages become ``tool_result`` blocks, and consecutive results (with any user text after them)
    are merged into one user turn, as the API requires. Tool schemas become
    ``{name, description, input_schema}``. ``LlmRequest.temperature`` and ``LlmRequest.seed`` are not
    sent: the Messages API of the ``anthropic`` 2.x SDK has neither parameter.

    A ``tool`` message recorded as failed (``Message.is_error``) becomes a ``tool_result`` with
    ``is_error: true``. An assistant message's thinking blocks (``Message.thinking``) lead its turn,
    unchanged: with extended thinking on, the API checks their signatures on the turn that asked for
    tools. The reply's ``usage.input_tokens`` is recorded with the cache reads and writes
    included (the OTel GenAI definition; the API reports them apart), and marked so
    (``Usage.input_includes_cache``).

    The key is read once, at construction, from ``api_key`` or ``ANTHROPIC_API_KEY``; with a base URL
    (``base_url=`` or ``ANTHROPIC_BASE_URL``) it is optional. It is handed to the SDK client and
    appears in no repr, error message or trace. Timeouts and retries are the SDK's own unless given
    (its default timeout scales with ``max_tokens`` and refuses a non-streaming request that could
    outlast it, a guard a fixed override would turn off).
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
        timeout: float | None = None,
        max_tokens: int = 4096,
        max_retries: int | None = None,
        malformed_args: MalformedArgs = "raise",
        name: str = "anthropic",
        thinking: dict[str, Any] | None = None,
        cache_prompt: bool = False,
        on_delta: Callable[[str], None] | None = None,
    ) -> None:
        """Build the provider (no network traffic happens here).

        Args:
            model: the model id.
            api_key: the key; defaults to ``ANTHROPIC_API_KEY``.
            base_url: another endpoint (a proxy, a gateway); defaults to ``ANTHROPIC_BASE_URL``, then
                the SDK's (``https://api.anthropic.com``).
            timeout: seconds before a request is abandoned; ``None`` keeps the SDK's default.
            max_tokens: the reply budget when the request sets none.
            max_retries: the SDK's retries on connection errors, 408/409/429 and 5xx; ``None`` keeps
                the SDK's default (2).
            malformed_args: ``raise`` a ProviderError for tool arguments that are not a JSON object,
                or ``keep`` them in ``raw_args`` (see :mod:`fpdebug.engine.providers.base`).
            name: the provider name recorded in the trace.
            thinking: extended thinking, sent as given (``{"type": "enabled", "budget_tokens": 2048}``)
                and listed in :attr:`run_options`. The reply's thinking blocks are kept
                (``LlmResponse.thinking``) and sent back with the assistant turn, as the API requires.
            cache_prompt: end the stable prefix (``LlmRequest.cache_prefix``: the agent's own prompt
                and tools, the always-on injections) with ``cache_control`` breakpoints, one on the
                last stable tool and one on the stable system prompt, so the API caches it
                (:func:`stable_prefix_length`). The loop marks the prefix for a provider whose
                ``cache_prompt`` is true.
            on_delta: stream the reply, handing each piece of text to this callback as it arrives.

        Raises:
            ProviderError: no key was given, ``ANTHROPIC_API_KEY`` is not set and there is no base URL.
        """
        self.name = name
        self.model = model
        self.base_url = base_url or os.environ.get(BASE_URL_ENV_VAR) or None
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.malformed_args = malformed_args
        self.thinking = thinking
        self.cache_prompt = cache_prompt
        self.on_delta = on_delta
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV_VAR)
        if not key:
            if self.base_url is None:
                raise ProviderError(
                    f"no Anthropic API key: pass api_key= or set {API_KEY_ENV_VAR} "
                    f"(or give base_url= / {BASE_URL_ENV_VAR} for a gateway that needs none)",
                    provider=name,
                )
            key = NO_KEY_PLACEHOLDER
        self._secret = None if key == NO_KEY_PLACEHOLDER else key
        # Only what was asked is passed: the SDK's own defaults keep its guards (see the class doc).
        client_options: dict[str, Any] = {}
        if timeout is not None:
            client_options["timeout"] = timeout
        if max_retries is not None:
            client_options["max_retries"] = max_retries
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, **client_options
        )

    @property
    def run_options(self) -> dict[str, Any]:
        """The settings worth recording in ``run_start.options`` (thinking, prompt caching)."""
        recorded: dict[str, Any] = {}
        if self.thinking is not None:
            recorded["thinking"] = self.thinking
        if self.cache_prompt:
            recorded["cache_prompt"] = True
        return recorded

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
            params["system"] = _cached_system(request, system) if self.cache_prompt else system
        if request.tools:
            params["tools"] = [_tool(tool) for tool in request.tools]
            if self.cache_prompt:
                _mark_cached_tools(request, params["tools"])
        if self.thinking is not None:
            params["thinking"] = self.thinking
        return params

    def _send(self, params: dict[str, Any]) -> Any:
        if self.on_delta is None:
            return self._client.messages.create(**params)
        # Streamed: the text goes to the sink as it arrives; the final message is the same value a
        # non-streamed call returns, so the recorded reply does not depend on streaming.
        with self._client.messages.stream(**params) as stream:
            for text in stream.text_stream:
                self._delta(text)
            return stream.get_final_message()

    def _parse(self, reply: Any) -> LlmResponse:
        """The reply: text blocks joined, tool_use blocks as tool calls, thinking blocks kept as they
        came, stop reason, usage."""
        texts: list[str] = []
        calls: list[ToolCallRecord] = []
        thinking: list[ThinkingBlock] = []
        for block in getattr(reply, "content", None) or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                calls.append(self._tool_call(block))
            elif kind in ("thinking", "redacted_thinking"):
                thinking.append(_thinking_block(block))
        usage = getattr(reply, "usage", None)
        cache_read = getattr(usage, "cache_read_input_tokens", None)
        cache_write = getattr(usage, "cache_creation_input_tokens", None)
        return LlmResponse(
            content="".join(texts),
            tool_calls=calls,
            stop_reason=getattr(reply, "stop_reason", None),
            usage=Usage(
                # The API counts cache reads and writes apart; the trace counts every input token.
                input_tokens=(getattr(usage, "input_tokens", None) or 0)
                + (cache_read or 0)
                + (cache_write or 0),
                output_tokens=getattr(usage, "output_tokens", None) or 0,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
                input_includes_cache=True,
            ),
            id=_text_or_none(getattr(reply, "id", None)),
            model=_text_or_none(getattr(reply, "model", None)),
            thinking=thinking or None,
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
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True  # the model is told the call failed, not only by its text
            user_blocks().append(block)
        elif message.content or message.tool_calls:
            turns.append({"role": "assistant", "content": _assistant_blocks(message)})
        # else: an empty assistant turn (the model said nothing) is left out; the API refuses empty
        # text blocks, and the user turns around it merge into one.
    return "\n\n".join(part for part in system_parts if part), turns


def _thinking_block(block: Any) -> ThinkingBlock:
    """A reply's ``thinking`` / ``redacted_thinking`` block as recorded (signature, data unchanged)."""
    if block.type == "redacted_thinking":
        return ThinkingBlock(type="redacted_thinking", data=getattr(block, "data", None) or "")
    return ThinkingBlock(
        type="thinking",
        thinking=getattr(block, "thinking", None) or "",
        signature=getattr(block, "signature", None) or "",
    )


def _thinking_param(block: ThinkingBlock) -> dict[str, Any]:
    """A recorded thinking block as the API wants it back: exactly the fields it came with."""
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data or ""}
    return {"type": "thinking", "thinking": block.thinking or "", "signature": block.signature or ""}


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    # With extended thinking on, the API wants the tool_use turn to start with its thinking blocks,
    # unchanged (their signatures are checked); they came first in the reply too.
    blocks: list[dict[str, Any]] = [_thinking_param(block) for block in message.thinking or ()]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls or ():
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.args})
    return blocks


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
"""The breakpoint put on the last block of the stable prefix (the API's default, five-minute cache)."""

MAX_BREAKPOINTS = 4
"""The Messages API refuses a request with more ``cache_control`` blocks; fpdebug puts at most two
(the stable tools, the stable system prompt)."""


def stable_prefix_length(request: LlmRequest) -> int:
    """How many leading segments of the system prompt are stable (the cacheable prefix).

    The request says so when the loop composed it for a caching provider
    (``LlmRequest.cache_prefix``: the agent's own prompt, then the always-on injections that are not
    templates). Without it, only the agent's own prompt (source ``base``) counts: an injection's
    segment may come and go from one pass to the next, and the cache matches prefixes only.

    Args:
        request: the request.

    Returns:
        The number of leading stable segments (0 when the prompt starts with one that varies).
    """
    if request.cache_prefix is not None:
        return min(request.cache_prefix.system_segments, len(request.system_prompt))
    count = 0
    for segment in request.system_prompt:
        if segment.source != "base":
            break
        count += 1
    return count


def _mark_cached_tools(request: LlmRequest, tools: list[dict[str, Any]]) -> None:
    """Put a breakpoint on the last stable tool, when the request says which lead (``cache_prefix``).

    The API caches tools, then the system prompt, then the messages, in that order: this breakpoint
    keeps the agent's own tools cached while an injection's tools come and go after them.
    """
    stable = min(request.cache_prefix.tools, len(tools)) if request.cache_prefix is not None else 0
    if stable:
        tools[stable - 1]["cache_control"] = dict(CACHE_CONTROL)


def _cached_system(request: LlmRequest, system: str) -> str | list[dict[str, Any]]:
    """The system prompt as blocks, the stable prefix ending in a ``cache_control`` breakpoint.

    The text sent is the same as without caching: the prefix block and the rest are the joined
    segments cut at a segment boundary (the blank line between them goes with the rest).
    """
    stable = stable_prefix_length(request)
    if stable == 0:
        return system
    prefix = "\n\n".join(segment.text for segment in request.system_prompt[:stable])
    if not prefix or not system.startswith(prefix):
        return system
    blocks: list[dict[str, Any]] = [{"type": "text", "text": prefix, "cache_control": dict(CACHE_CONTROL)}]
    rest = system[len(prefix) :]
    if rest.strip():
        blocks.append({"type": "text", "text": rest})
    return blocks

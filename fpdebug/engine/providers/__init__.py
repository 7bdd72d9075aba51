"""Model providers behind one protocol: scripted, replay, Anthropic, OpenAI and OpenAI Responses.

The live providers (:class:`AnthropicProvider`, :class:`OpenAIProvider`) are imported on first use
(an attribute of this package, or :func:`live_provider`), so importing this package never loads a
model SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fpdebug.engine.providers.base import (
    BLOCK_ENV_VAR,
    LlmRequest,
    LlmResponse,
    MalformedArgs,
    Provider,
    allow_live_calls,
    check_live_call,
    live_calls_allowed,
)
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.errors import ProviderError

if TYPE_CHECKING:
    from fpdebug.engine.providers.anthropic import AnthropicProvider
    from fpdebug.engine.providers.openai import OpenAIProvider
    from fpdebug.engine.providers.openai_responses import OpenAIResponsesProvider

__all__ = [
    "BLOCK_ENV_VAR",
    "LIVE_PROVIDERS",
    "AnthropicProvider",
    "LlmRequest",
    "LlmResponse",
    "MalformedArgs",
    "OpenAIProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "ReplayProvider",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedReply",
    "allow_live_calls",
    "check_live_call",
    "live_calls_allowed",
    "live_provider",
]

LIVE_PROVIDERS: tuple[str, ...] = ("anthropic", "openai", "openai-responses")
"""The names of the providers that call a model over the network."""

_LAZY = {
    "AnthropicProvider": "fpdebug.engine.providers.anthropic",
    "OpenAIProvider": "fpdebug.engine.providers.openai",
    "OpenAIResponsesProvider": "fpdebug.engine.providers.openai_responses",
}


def __getattr__(name: str) -> object:
    # The SDKs cost a noticeable import time and are only needed for live runs.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def live_provider(kind: str, model: str, *, base_url: str | None = None) -> Provider:
    """A live provider by name, its SDK imported only now; the key comes from the environment.

    Args:
        kind: ``anthropic``, ``openai`` (Chat Completions) or ``openai-responses`` (Responses API).
        model: The model to ask.
        base_url: Another endpoint (a proxy, an OpenAI-compatible server).

    Returns:
        The provider (no network traffic happens here).

    Raises:
        ProviderError: An unknown kind, or no API key where one is needed.
    """
    if kind == "anthropic":
        from fpdebug.engine.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model, base_url=base_url)
    if kind == "openai":
        from fpdebug.engine.providers.openai import OpenAIProvider

        return OpenAIProvider(model, base_url=base_url)
    if kind == "openai-responses":
        from fpdebug.engine.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(model, base_url=base_url)
    raise ProviderError(
        f"unknown live provider {kind!r}; use one of {', '.join(LIVE_PROVIDERS)}", provider=kind
    )

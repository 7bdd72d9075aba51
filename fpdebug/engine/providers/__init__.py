"""Model providers behind one protocol: scripted, replay, Anthropic and OpenAI.

The live providers (:class:`AnthropicProvider`, :class:`OpenAIProvider`) are imported on first use,
so importing this package never loads a model SDK.
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

if TYPE_CHECKING:
    from fpdebug.engine.providers.anthropic import AnthropicProvider
    from fpdebug.engine.providers.openai import OpenAIProvider

__all__ = [
    "BLOCK_ENV_VAR",
    "AnthropicProvider",
    "LlmRequest",
    "LlmResponse",
    "MalformedArgs",
    "OpenAIProvider",
    "Provider",
    "ReplayProvider",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedReply",
    "allow_live_calls",
    "check_live_call",
    "live_calls_allowed",
]

_LAZY = {
    "AnthropicProvider": "fpdebug.engine.providers.anthropic",
    "OpenAIProvider": "fpdebug.engine.providers.openai",
}


def __getattr__(name: str) -> object:
    # The SDKs cost a noticeable import time and are only needed for live runs.
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

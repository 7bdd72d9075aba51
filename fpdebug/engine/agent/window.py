"""The window strategy: ``Compact`` folds older messages out of the history (docs/context-model.md §7.1).

Armed by :meth:`Agent.window <fpdebug.engine.agent.Agent.window>`, it runs at every loop head, after
the results layer's visit (which reads the batch before anything is folded away) and before the
Evaluate pass. When the history is over the window, the oldest messages are dropped until it fits:

- the history is cut into **blocks**: an assistant message that asked for tools together with the
  ``tool`` messages answering it, or any other single message. A block is dropped whole, so a tool
  call is never split from its results;
- the turn's own user message (the last ``user`` message the loop did not write) is never dropped,
  nor the first user message of the conversation while ``keep_first_user`` holds, nor the newest
  block (what the model must read next);
- the dropped span is replaced by nothing: no summary, no note. The history keeps only messages
  some writer put there, and the ``compact`` event is the record of what went.

``max_tokens`` is an estimate, not a tokenizer: a message counts ``ceil(chars / 4)``, where chars are
its content plus each tool call's name and JSON arguments. Compaction writes the history in place,
so later turns see it compacted too; the next ``llm_call`` records the compacted request as sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import Message

__all__ = ["Compaction", "Window", "apply_dropped", "compact", "estimate_tokens"]


@dataclass(frozen=True)
class Window:
    """The declared window (:meth:`Agent.window`): exactly one of the two limits."""

    max_messages: int | None = None
    max_tokens: int | None = None
    keep_first_user: bool = True

    @classmethod
    def declare(cls, max_messages: int | None, max_tokens: int | None, keep_first_user: bool) -> Window:
        """Validate a declaration: one positive limit, and a boolean ``keep_first_user``."""
        if (max_messages is None) == (max_tokens is None):
            raise DefinitionError("window takes exactly one of max_messages= or max_tokens=")
        for name, value in (("max_messages", max_messages), ("max_tokens", max_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise DefinitionError(f"window {name} must be a positive int, got {value!r}")
        if not isinstance(keep_first_user, bool):
            raise DefinitionError(f"window keep_first_user takes True or False, got {keep_first_user!r}")
        return cls(max_messages, max_tokens, keep_first_user)

    @property
    def limit(self) -> str:
        """The limit as the ``compact`` event names it: ``max_messages=N`` or ``max_tokens=N``."""
        if self.max_messages is not None:
            return f"max_messages={self.max_messages}"
        return f"max_tokens={self.max_tokens}"

    def declaration(self) -> dict[str, object]:
        """The window as ``run_start.options`` records it."""
        return {
            "max_messages": self.max_messages,
            "max_tokens": self.max_tokens,
            "keep_first_user": self.keep_first_user,
        }

    def size(self, messages: Sequence[Message]) -> int:
        """The history's size in the window's unit (messages, or estimated tokens)."""
        if self.max_messages is not None:
            return len(messages)
        return sum(estimate_tokens(m) for m in messages)

    def fits(self, messages: Sequence[Message]) -> bool:
        """Whether the history is within the window."""
        cap = self.max_messages if self.max_messages is not None else self.max_tokens
        assert cap is not None
        return self.size(messages) <= cap


@dataclass(frozen=True)
class Compaction:
    """One fold: the positions dropped (in the history before it) and the sizes around it."""

    dropped_at: tuple[int, ...]
    kept: int
    size_before: int
    size_after: int

    def fields(self, window: Window) -> dict[str, object]:
        """The ``compact`` event's fields."""
        return {
            "dropped": len(self.dropped_at),
            "kept": self.kept,
            "dropped_at": list(self.dropped_at),
            "limit": window.limit,
            "size_before": self.size_before,
            "size_after": self.size_after,
        }


def estimate_tokens(message: Message) -> int:
    """A message's token estimate: ``ceil(chars / 4)`` over its content and its tool calls."""
    chars = len(message.content)
    for call in message.tool_calls or ():
        chars += len(call.name) + len(json.dumps(call.args, sort_keys=True, default=str))
    return math.ceil(chars / 4)


def _blocks(history: Sequence[Message]) -> list[list[int]]:
    """The history's positions cut into blocks: a tool-call message with its results, or one message."""
    blocks: list[list[int]] = []
    for index, message in enumerate(history):
        if message.role == "tool" and blocks and history[blocks[-1][0]].tool_calls:
            blocks[-1].append(index)
        else:
            blocks.append([index])
    return blocks


def _protected(history: Sequence[Message], keep_first_user: bool) -> set[int]:
    """The positions never dropped: the turn's user message, and the first user message if kept."""
    users = [i for i, m in enumerate(history) if m.role == "user" and not m.from_loop]
    kept = set(users[-1:])
    if keep_first_user:
        kept.update(users[:1])
    return kept


def compact(history: list[Message], window: Window) -> Compaction | None:
    """Fold the oldest blocks out of ``history`` (in place) until it fits the window.

    Returns:
        What was dropped, or ``None`` when the history already fit or nothing could be dropped.
    """
    if window.fits(history):
        return None
    before = window.size(history)
    protected = _protected(history, window.keep_first_user)
    candidates = [b for b in _blocks(history)[:-1] if not protected.intersection(b)]
    dropped: set[int] = set()
    for block in candidates:
        dropped.update(block)
        if window.fits([m for i, m in enumerate(history) if i not in dropped]):
            break
    if not dropped:
        return None
    history[:] = [m for i, m in enumerate(history) if i not in dropped]
    return Compaction(tuple(sorted(dropped)), len(history), before, window.size(history))


def apply_dropped(history: list[Message], dropped_at: Sequence[int]) -> None:
    """Replay a recorded fold: drop the recorded positions from ``history`` (in place)."""
    gone = set(dropped_at)
    history[:] = [m for i, m in enumerate(history) if i not in gone]

"""The replay provider: serves the ``llm_call`` records of a saved trace, in order, and never goes live.

Each request the loop sends is compared with the request recorded at the same position (the system
prompt's text and segments, the messages, the tool names and schemas, temperature and reply budget).
The first difference raises :class:`~fpdebug.errors.ReplayDivergenceError`, whose message says which
field differed, the recorded and the received value, and for messages the first differing index. A
request beyond the recording is a divergence too (the cassette is exhausted). A recorded failed call
is replayed as the same failure (a :class:`~fpdebug.errors.ProviderError` with the recorded status
and message), so a failed run replays to the same ``run_end``.

The provider never touches the network nor the live-call switch (docs/backtracking.md §9.12: ordered, loud on
exhaustion, a fresh instance per run).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from fpdebug import errors
from fpdebug.engine.providers.base import LlmRequest, LlmResponse, system_text
from fpdebug.errors import ProviderError, ReplayDivergenceError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.redact import REPLACEMENT, default_redactor
from fpdebug.trace.schema import LlmCallEvent, Message, RunStartEvent, TraceEvent, TurnStartEvent

__all__ = ["Difference", "ReplayProvider", "request_difference"]

_EXCERPT = 160


@dataclass(frozen=True, slots=True)
class Difference:
    """The first way a received request differs from the recorded one."""

    field: str
    """``system_prompt``, ``system_prompt.segments``, ``messages``, ``tools``, ``tools.<name>``…"""
    recorded: str
    """The recorded value, shortened for display."""
    received: str
    """The received value, shortened for display."""
    message_index: int | None = None
    """For ``messages``: the 0-based index of the first differing message."""

    def describe(self) -> str:
        """One sentence: which field, where, recorded vs received."""
        where = f" at index {self.message_index}" if self.message_index is not None else ""
        return f"{self.field} differs{where}: recorded {self.recorded} but received {self.received}"


def _short(value: object) -> str:
    if isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _around(a: str, b: str) -> tuple[str, str, int]:
    """Excerpts of two texts around their first differing character."""
    index = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, index - 40)
    cut_a, cut_b = a[start : index + 80], b[start : index + 80]
    lead = "…" if start else ""
    return _short(lead + cut_a), _short(lead + cut_b), index


def _message_view(message: Message | None) -> str:
    if message is None:
        return "(no message)"
    return _short(message.model_dump(mode="json", exclude_none=True))


def _comparable(message: Message | None) -> Message | None:
    """A message as a replay compares it: ``is_error`` left out, since traces written before it
    existed flag no failed result; the failure is in the text and the tool_result either way."""
    if message is None or message.is_error is None:
        return message
    return message.model_copy(update={"is_error": None})


def _tags(request: LlmRequest) -> list[str]:
    return [f"{s.source}:{s.injection_id}" if s.injection_id else s.source for s in request.system_prompt]


def request_difference(recorded: LlmRequest, received: LlmRequest) -> Difference | None:
    """The first difference between two requests, or ``None`` when they are the same.

    Args:
        recorded: The request of the recording.
        received: The request the run sent now.

    Returns:
        The :class:`Difference`, checked in the order: system prompt text, its segments (source and
        injection of each), messages, tool names, tool schemas, temperature, reply budget.
    """
    old_text, new_text = system_text(recorded), system_text(received)
    if old_text != new_text:
        a, b, index = _around(old_text, new_text)
        return Difference(f"system_prompt (first difference at character {index})", a, b)
    old_tags, new_tags = _tags(recorded), _tags(received)
    if old_tags != new_tags:
        return Difference("system_prompt.segments", _short(old_tags), _short(new_tags))
    old_messages, new_messages = recorded.messages, received.messages
    for index in range(max(len(old_messages), len(new_messages))):
        old = old_messages[index] if index < len(old_messages) else None
        new = new_messages[index] if index < len(new_messages) else None
        if _comparable(old) != _comparable(new):
            return Difference(
                f"messages (recorded {len(old_messages)}, received {len(new_messages)})",
                _message_view(old),
                _message_view(new),
                message_index=index,
            )
    old_names, new_names = [t.name for t in recorded.tools], [t.name for t in received.tools]
    if old_names != new_names:
        return Difference("tools", _short(old_names), _short(new_names))
    for old_tool, new_tool in zip(recorded.tools, received.tools, strict=True):
        if old_tool != new_tool:
            return Difference(
                f"tools.{old_tool.name}",
                _short(old_tool.model_dump(mode="json", exclude_none=True)),
                _short(new_tool.model_dump(mode="json", exclude_none=True)),
            )
    for name in ("temperature", "max_tokens", "seed"):
        if getattr(recorded, name) != getattr(received, name):
            return Difference(name, _short(getattr(recorded, name)), _short(getattr(received, name)))
    return None


def _redacted_request(request: LlmRequest) -> LlmRequest:
    """``request`` as the trace writer would have recorded it (secrets replaced)."""
    text = request.model_dump_json()
    redacted = default_redactor().redact_json(text)
    return request if redacted == text else LlmRequest.model_validate_json(redacted)


def _unreproducible(difference: Difference) -> Difference:
    """Say that the recorded side holds a redacted value, which no replay can reproduce."""
    return Difference(
        f"{difference.field} (the recording holds a redacted value here: the trace writer replaced a "
        "secret it could not keep, so a replay reaching this point cannot match it)",
        difference.recorded,
        difference.received,
        message_index=difference.message_index,
    )


def _replayed_error(call: LlmCallEvent, provider: str) -> ProviderError:
    assert call.error is not None
    kind = getattr(errors, call.error.type, None)
    cls = kind if isinstance(kind, type) and issubclass(kind, ProviderError) else ProviderError
    return cls(call.error.message, status=call.error.status, provider=provider)


_CassetteEvent: TypeAlias = LlmCallEvent | RunStartEvent | TurnStartEvent


def _cassette_events(
    source: str | os.PathLike[str] | TraceReader | Iterable[TraceEvent],
) -> list[_CassetteEvent]:
    """The events a cassette is made of (``run_start``, ``turn_start``, ``llm_call``), in trace order."""
    if isinstance(source, str | os.PathLike):
        with TraceReader(source) as reader:
            return [r for r in reader if isinstance(r, LlmCallEvent | RunStartEvent | TurnStartEvent)]
    if isinstance(source, TraceReader):
        return [r for r in source if isinstance(r, LlmCallEvent | RunStartEvent | TurnStartEvent)]
    return [e for e in source if isinstance(e, LlmCallEvent | RunStartEvent | TurnStartEvent)]


def _pick_run(runs: list[str], run_id: str | None) -> str:
    """The run to replay: ``run_id`` when the trace holds it, else the trace's only run."""
    if run_id is None:
        if len(runs) != 1:
            found = ", ".join(runs) if runs else "none"
            raise ProviderError(
                f"cannot pick the run to replay: the trace holds {len(runs)} runs ({found}); pass run_id",
                provider="replay",
            )
        return runs[0]
    if run_id not in runs:
        raise ProviderError(
            f"the trace has no run {run_id!r} (runs: {', '.join(runs) or 'none'})", provider="replay"
        )
    return run_id


class ReplayProvider:
    """A model that answers with the recorded replies of one run, checking each request against the recording.

    Build one with :meth:`from_trace`. ``name`` is ``replay``; ``model`` is the recorded model. The
    recording's user messages, provider, iteration limit and options are kept for the caller that
    re-runs it (``fpdebug run --provider replay`` uses them).
    """

    def __init__(
        self,
        calls: Sequence[LlmCallEvent],
        *,
        model: str,
        run_id: str,
        recorded_provider: str = "unknown",
        user_messages: Sequence[str] = (),
        max_iterations: int | None = None,
        options: dict[str, object] | None = None,
        name: str = "replay",
    ) -> None:
        """Build a cassette from ``llm_call`` records (in call order).

        Args:
            calls: The recorded calls.
            model: The recorded model (the replay reports it as its own).
            run_id: The recorded run.
            recorded_provider: The provider that made the recording.
            user_messages: The recorded turns' user messages.
            max_iterations: The recorded iteration limit.
            options: The recorded ``run_start.options``.
            name: The provider name recorded in the new trace.
        """
        self.name = name
        self.model = model
        self.run_id = run_id
        """The recorded run's id."""
        self.recorded_provider = recorded_provider
        """The provider that made the recording."""
        self.user_messages: tuple[str, ...] = tuple(user_messages)
        """The recorded user messages, one per turn."""
        self.max_iterations = max_iterations
        """The recorded per-turn iteration limit."""
        self.options: dict[str, object] = dict(options or {})
        """The recorded ``run_start.options`` (``scenario`` names the demo that made it)."""
        self._calls = tuple(calls)
        self._cursor = 0
        self._lock = threading.Lock()

    @classmethod
    def from_trace(
        cls, source: str | os.PathLike[str] | TraceReader | Iterable[TraceEvent], *, run_id: str | None = None
    ) -> ReplayProvider:
        """Load the cassette of one run of a trace.

        Args:
            source: A trace path, an open :class:`~fpdebug.trace.reader.TraceReader`, or the events
                themselves (e.g. ``RunResult.events``).
            run_id: The run to replay; may be omitted when the trace holds exactly one run.

        Returns:
            The provider.

        Raises:
            ProviderError: No such run, several runs and no ``run_id``, or a run without ``run_start``.
            TraceError: The file cannot be read.
        """
        events = _cassette_events(source)
        starts = [e for e in events if isinstance(e, RunStartEvent)]
        run_id = _pick_run(list(dict.fromkeys(e.run_id for e in starts)), run_id)
        start = next(e for e in starts if e.run_id == run_id)
        return cls(
            [e for e in events if isinstance(e, LlmCallEvent) and e.run_id == run_id],
            model=start.model,
            run_id=run_id,
            recorded_provider=start.provider,
            user_messages=[
                e.user_message for e in events if isinstance(e, TurnStartEvent) and e.run_id == run_id
            ],
            max_iterations=start.max_iterations,
            options=dict(start.options),
        )

    def __repr__(self) -> str:
        return f"ReplayProvider(run_id={self.run_id!r}, calls={len(self._calls)}, model={self.model!r})"

    @property
    def calls(self) -> int:
        """How many calls the cassette holds."""
        return len(self._calls)

    @property
    def remaining(self) -> int:
        """Recorded calls not yet served."""
        return len(self._calls) - self._cursor

    def reset(self) -> None:
        """Rewind to the first recorded call."""
        with self._lock:
            self._cursor = 0

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Serve the next recorded reply, after checking the request against the recorded one.

        Args:
            request: The request the run sends.

        Returns:
            The recorded reply.

        Raises:
            ReplayDivergenceError: The request differs from the recorded one, or the recording has no
                call left; the message says what differed.
            ProviderError: The recorded call failed (replayed with its status and message).
        """
        with self._lock:
            number = self._cursor + 1
            if self._cursor >= len(self._calls):
                count = len(self._calls)
                raise ReplayDivergenceError(
                    f"the recording of run {self.run_id!r} is exhausted: it holds {count} LLM "
                    f"call{'s' if count != 1 else ''} but the replay sent request #{number}",
                    provider=self.name,
                )
            self._cursor += 1
        recorded = self._calls[number - 1]
        difference = request_difference(recorded.request, request)
        if difference is not None:
            # The trace was written through the redactor, the live request was not: a request that
            # matches once redacted the same way is the same request (a tool that returned a key).
            redacted = _redacted_request(request)
            difference = request_difference(recorded.request, redacted)
            if difference is not None and REPLACEMENT in difference.recorded:
                difference = _unreproducible(difference)
        if difference is not None:
            error = ReplayDivergenceError(
                f"request #{number} (recorded at turn {recorded.turn}, iteration {recorded.iteration}) "
                f"diverged: {difference.describe()}",
                provider=self.name,
            )
            error.difference = difference  # type: ignore[attr-defined]
            raise error
        if recorded.error is not None or recorded.response is None:
            if recorded.error is None:
                raise ProviderError(f"request #{number} was recorded without a reply", provider=self.name)
            raise _replayed_error(recorded, self.name)
        return recorded.response

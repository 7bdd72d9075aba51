"""OTLP spans of one trace → fpdebug events, incrementally (shared by ``import`` and ``collect``).

What each span becomes (docs/guide/ingest.md):

- an LLM span → ``llm_call``: the request as recorded (system instructions, messages, tool
  definitions) and the reply (tool calls, finish reason, usage, response id and model). Two spans
  with one ``gen_ai.response.id`` (two instrumentations of one call) give one call: the first fed;
  the batch importer feeds the richer one first.
- a tool span → ``tool_result``. Without tool spans, each tool call of a reply that the next
  request answers (a ``tool`` message, or a ``tool_call_response`` part) → ``tool_result``, placed
  before that next call.
- an agent span, or the trace's root → the end of a turn, with its final answer (the span's own
  output when it recorded one, else the last reply's text). ``turn_start`` is written before the
  turn's first record, with the user's message as the agent span or the first request recorded it.
- a root span that is not an LLM call → ``run_end``.

One OTel trace is one run. Usage comes only from LLM spans: the run totals an agent span carries
(``gen_ai.usage.*`` on ``invoke_agent``, ``gen_ai.aggregated_usage.*``) are never added to it.
Spans of any other kind (an iteration span, a chain, a retriever) are not mapped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from fpdebug.ingest.otlp_decode import OtlpLog, OtlpSpan
from fpdebug.ingest.otlp_genai import (
    LlmSpan,
    agent_final_answer,
    agent_name,
    agent_user_message,
    classify,
    provider_of,
    read_llm,
    read_tool,
)
from fpdebug.trace.schema import (
    LlmCallEvent,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = ["RunBuilder", "SeqCounter", "run_id_of", "ts_of"]

_TOOL_STOPS = frozenset({"tool_calls", "tool_call", "tool_use", "function_call"})


def _route(llm: LlmSpan) -> Literal["tool-calls", "final"] | None:
    """Where the reply sent the loop: its tool calls, or a tool-asking stop reason, say ``tool-calls``."""
    response = llm.response
    if response is None:
        return None
    if response.tool_calls or (response.stop_reason or "").lower() in _TOOL_STOPS:
        return "tool-calls"
    return "final"


def ts_of(ns: int) -> datetime:
    """A span time (ns since the epoch) as a UTC datetime (microsecond precision)."""
    return datetime.fromtimestamp(ns // 1000 / 1_000_000, tz=UTC)


def run_id_of(span: OtlpSpan) -> str:
    """The run a span belongs to: the id its producer gave the run, else its OTel trace id."""
    for key in ("fpdebug.run.id", "agentfootprint.run.id"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return span.trace_id


@dataclass(slots=True)
class SeqCounter:
    """Hands out the dense ``seq`` of one trace file (shared by every run written to it)."""

    next: int = 1
    """The next seq to hand out."""

    def take(self) -> int:
        """The next seq."""
        value = self.next
        self.next += 1
        return value


@dataclass(slots=True)
class _Pending:
    call: ToolCallRecord
    turn: int
    iteration: int


@dataclass(slots=True)
class RunBuilder:
    """Turns the spans of one OTel trace into events, one span at a time.

    Args:
        run_id: The run's id.
        seq: The file's seq counter.
        closes_turn: Whether an agent or root span ends the current turn (the batch importer
            says so for outermost agent spans and roots; the live collector for roots only,
            since it cannot yet know a span's ancestors).
        logs_for: The log records (legacy content layout) of a span id.
    """

    run_id: str
    seq: SeqCounter
    closes_turn: Callable[[OtlpSpan], bool]
    logs_for: Callable[[str], list[OtlpLog]] = lambda _span_id: []
    agent_hint: str | None = None
    """The agent's name, when known in advance."""
    user_hints: dict[str, str] = field(default_factory=dict)
    """User messages known in advance, by the span id of the agent span that recorded them."""
    skip: set[str] = field(default_factory=set)
    """Span ids not to map (duplicates the batch importer has ruled out)."""
    started: bool = False
    ended: bool = False
    turn: int = 0
    turn_open: bool = False
    iteration: int = 0
    call_index: int = 0
    turn_tokens: list[int] = field(default_factory=lambda: [0, 0])
    run_tokens: list[int] = field(default_factory=lambda: [0, 0])
    last_content: str = ""
    response_ids: set[str] = field(default_factory=set)
    pending: dict[str, _Pending] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    provider: str | None = None
    model: str | None = None
    last_ns: int = 0

    # ------------------------------------------------------------------------------------------

    def feed(self, span: OtlpSpan) -> list[TraceEvent]:
        """The events one span completes (possibly none)."""
        if self.ended or span.span_id in self.skip:
            return []
        self.last_ns = max(self.last_ns, span.end_ns)
        role = classify(span)
        if role == "llm":
            return self._llm(read_llm(span, self.logs_for(span.span_id)))
        if role == "tool":
            return self._tool(span)
        if role == "agent" and self.agent_hint is None:
            self.agent_hint = agent_name(span)
        if not self.closes_turn(span):
            return []
        events = self._close_turn(span)
        if not span.parent_span_id:
            events += self._end_run(span.end_ns, failed=span.status_code == 2)
        return events

    def finish(self) -> list[TraceEvent]:
        """Close what is still open at the end of a file (a trace without a root that ends it)."""
        if self.ended or not self.started:
            return []
        events = self._close_turn(None) if self.turn_open else []
        return events + self._end_run(self.last_ns, failed=False)

    # ------------------------------------------------------------------------------------------

    def _envelope(self, ns: int, *, iteration: int | None = None, turn: bool = True) -> dict[str, Any]:
        envelope: dict[str, Any] = {"seq": self.seq.take(), "ts": ts_of(ns), "run_id": self.run_id}
        if turn:
            envelope["turn"] = self.turn
        if iteration is not None:
            envelope["iteration"] = iteration
        return envelope

    def _start(self, ns: int, user: str | None) -> list[TraceEvent]:
        events: list[TraceEvent] = []
        if not self.started:
            self.started = True
            events.append(
                RunStartEvent(
                    **self._envelope(ns, turn=False),
                    agent_name=self.agent_hint or "agent",
                    provider=self.provider or "unknown",
                    model=self.model or "unknown",
                    max_iterations=0,  # not recorded by OTLP: 0 says so, it is never a real limit
                )
            )
        if not self.turn_open:
            self.turn += 1
            self.turn_open = True
            self.iteration = 0
            self.turn_tokens = [0, 0]
            events.append(TurnStartEvent(**self._envelope(ns), user_message=user or ""))
        return events

    def _llm(self, llm: LlmSpan) -> list[TraceEvent]:
        if llm.response_id is not None:
            if llm.response_id in self.response_ids:
                return []  # a second instrumentation of the same call
            self.response_ids.add(llm.response_id)
        span = llm.span
        if self.provider is None and llm.provider != "unknown":
            self.provider = llm.provider
        self.model = self.model or llm.model
        user = next(
            (m.content for m in reversed(llm.request.messages) if m.role == "user" and m.content), None
        )
        events = self._start(span.start_ns, self.user_hints.get(span.parent_span_id) or user)
        # Tool calls answered in this request that no tool span reported: the pair is the result.
        for message in llm.request.messages:
            call_id = message.tool_call_id
            if (
                message.role != "tool"
                or not call_id
                or call_id in self.answered
                or call_id not in self.pending
            ):
                continue
            pending = self.pending.pop(call_id)
            self.answered.add(call_id)
            events.append(
                ToolResultEvent(
                    **self._envelope(span.start_ns, iteration=pending.iteration),
                    tool_call_id=call_id,
                    tool_name=pending.call.name,
                    args=pending.call.args,
                    result=message.content,
                )
            )
        self.iteration += 1
        self.call_index += 1
        response = llm.response
        if response is not None:
            self.turn_tokens[0] += response.usage.input_tokens
            self.turn_tokens[1] += response.usage.output_tokens
            self.run_tokens[0] += response.usage.input_tokens
            self.run_tokens[1] += response.usage.output_tokens
            for call in response.tool_calls:
                if call.id and call.id not in self.answered:
                    self.pending[call.id] = _Pending(call, self.turn, self.iteration)
            if not response.tool_calls:
                self.last_content = response.content
        events.append(
            LlmCallEvent(
                **self._envelope(span.end_ns, iteration=self.iteration),
                call_index=self.call_index,
                provider=llm.provider,
                model=llm.model,
                request=llm.request,
                response=response,
                error=llm.error,
                latency_ms=max(span.end_ns - span.start_ns, 0) / 1_000_000,
                route=_route(llm),
            )
        )
        return events

    def _tool(self, span: OtlpSpan) -> list[TraceEvent]:
        tool = read_tool(span)
        if self.provider is None:
            self.provider = provider_of(span.attributes)
        call_id = tool.call_id
        if call_id is None:  # a tool span without an id: the oldest pending call of that name
            call_id = next((key for key, p in self.pending.items() if p.call.name == tool.name), None)
        if call_id is not None and call_id in self.answered:
            return []
        pending = self.pending.pop(call_id, None) if call_id is not None else None
        events = self._start(span.start_ns, None)
        if call_id is not None:
            self.answered.add(call_id)
        iteration = pending.iteration if pending is not None else (self.iteration or None)
        args = tool.args or (pending.call.args if pending is not None else {})
        events.append(
            ToolResultEvent(
                **self._envelope(span.end_ns, iteration=iteration),
                tool_call_id=call_id or span.span_id,
                tool_name=tool.name,
                args=args,
                result=tool.result,
                status=tool.status,  # type: ignore[arg-type]
                error=tool.error,
                duration_ms=max(span.end_ns - span.start_ns, 0) / 1_000_000,
            )
        )
        return events

    def _close_turn(self, span: OtlpSpan | None) -> list[TraceEvent]:
        answer = agent_final_answer(span) if span is not None else None
        events: list[TraceEvent] = []
        if not self.turn_open:
            if span is None:
                return events
            user = agent_user_message(span)
            # A turn no call or tool opened: an agent span that recorded an exchange of its own
            # (an answer without a model call), or a lone root that did; never a second turn made
            # from the plain root that wraps the agent spans already mapped.
            if (classify(span) != "agent" and self.started) or (answer is None and user is None):
                return events
            events = self._start(span.start_ns, user)
        self.turn_open = False
        ns = span.end_ns if span is not None else self.last_ns
        events.append(
            TurnEndEvent(
                **self._envelope(ns),
                final_content=answer if answer is not None else self.last_content,
                input_tokens=self.turn_tokens[0],
                output_tokens=self.turn_tokens[1],
                iteration_count=self.iteration,
            )
        )
        self.last_content = ""
        return events

    def _end_run(self, ns: int, *, failed: bool) -> list[TraceEvent]:
        if not self.started:
            return []
        self.ended = True
        return [
            RunEndEvent(
                **self._envelope(ns, turn=False),
                status="failed" if failed else "completed",
                turns=self.turn,
                input_tokens=self.run_tokens[0],
                output_tokens=self.run_tokens[1],
            )
        ]

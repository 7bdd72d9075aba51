"""Trace events → OpenTelemetry-shaped spans (GenAI semantic conventions), without importing OpenTelemetry.

One trace file becomes one OTel trace per run. The span tree::

    run {agent}                          one per run (INTERNAL): fpdebug.run.* attributes
    └── invoke_agent {agent}             one per turn (INTERNAL): gen_ai.operation.name=invoke_agent
        │                                 + every fpdebug fact of the turn as a span event
        ├── chat {model}                 one per llm_call (CLIENT; INTERNAL for in-process models)
        └── execute_tool {tool}          one per tool_result (INTERNAL)

**Where fpdebug's facts go.** ``pass``, ``cursor_move``, ``lease_grant``, ``lease_prune``,
``engagement``, ``skill_rejected``, ``route_conflict``, ``reroute_superseded`` and ``finding``
records become span events named ``fpdebug.<kind>`` on the turn's ``invoke_agent`` span, each with
``fpdebug.seq``, ``fpdebug.turn``, ``fpdebug.iteration`` and its facts under ``fpdebug.<fact>.*``.
The turn span, not the chat span, because a pass happens *before* its call (it decides the
request) and a lease grant *after* it (in the tool batch): only the turn span covers both. Each
chat span also carries ``fpdebug.iteration`` and its pass's ``fpdebug.pass.active_ids``, so a
backend can filter calls by the context that rode them. A record with no turn goes on the run span.

**Ids are derived, not random**: the trace id from the run id, each span id from the run id, the
span's role and the ``seq`` of the record that opened it (SHA-256, truncated). Exporting one trace
twice gives byte-identical output, and a backend that receives it twice sees the same spans.
Timestamps come from the records' ``ts``: a chat span ends at its ``llm_call``'s ``ts`` and starts
``latency_ms`` earlier; a tool span likewise with ``duration_ms``.

**Content is opt-in.** Prompts, replies, tool arguments and results, witness texts, park cards and
the values an answer states are exported only with ``include_content=True`` (as
``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.call.arguments`` / ``result`` and a few ``fpdebug.*`` attributes). Without it a span
says what happened (ids, names, counts, statuses, tokens) and nothing a user or tool wrote. Either
way the text is the trace's own, already redacted when it was written: nothing is added.

**Errors.** A failed ``llm_call``, a tool that failed (``failure``, ``denied``, ``invalid`` or a
recorded error) and a failed run get status ERROR, ``error.type`` and an ``exception`` event; a turn
the run failed in does too. An interrupted run is not an error (``fpdebug.run.status`` says so). A
trace that ends without ``run_end`` (crashed, or still running) closes its open spans at the last
record's time with ``fpdebug.incomplete = true``.

:class:`SpanBuilder` is incremental (``feed`` returns the spans an event completed), so the same
code serves a saved trace (:func:`build_spans`) and a live run (:mod:`fpdebug.export.stream`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeAlias

from fpdebug.export.span_facts import fact_attributes, put_position
from fpdebug.trace.cost import CostTotal, call_cost, usage_of
from fpdebug.trace.schema import (
    ErrorInfo,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "FACT_KINDS",
    "IN_PROCESS_PROVIDERS",
    "AttributeValue",
    "SpanBuilder",
    "SpanEventRecord",
    "SpanKindName",
    "SpanRecord",
    "SpanRole",
    "attribute",
    "build_spans",
    "finish_reason",
    "span_id_for",
    "time_ns",
    "trace_id_for",
    "trace_salt",
]

AttributeValue: TypeAlias = (
    "str | bool | int | float | list[AttributeValue] | dict[str, AttributeValue] | None"
)
"""An OTLP ``AnyValue``: a scalar, a list, a map, or empty."""

SpanKindName: TypeAlias = Literal["internal", "client"]
"""The OTel span kinds fpdebug uses."""

SpanRole: TypeAlias = Literal["run", "turn", "chat", "tool"]
"""Which record opened a span: a run, a turn, an LLM call or a tool call."""

FACT_KINDS: frozenset[str] = frozenset(
    {
        "pass",
        "cursor_move",
        "lease_grant",
        "lease_prune",
        "engagement",
        "skill_rejected",
        "route_conflict",
        "reroute_superseded",
        "finding",
    }
)
"""The record kinds exported as ``fpdebug.<kind>`` span events."""

IN_PROCESS_PROVIDERS: frozenset[str] = frozenset({"scripted", "replay"})
"""Providers that answer inside the process: their chat spans are INTERNAL, not CLIENT."""

_FAILED_TOOL_STATUSES = frozenset({"failure", "denied", "invalid"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)  # made once: time_ns runs once per event
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(slots=True)
class SpanEventRecord:
    """A span event: an fpdebug fact, or an ``exception``."""

    name: str
    """``fpdebug.<kind>`` or ``exception``."""
    time_ns: int
    """When it happened (the record's ``ts``), in ns since the epoch."""
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    """Its attributes, in a fixed order."""


@dataclass(slots=True)
class SpanRecord:
    """One span, ready for an OTLP encoder: ids, name, kind, times, attributes, events, status."""

    run_id: str
    """The run (one run is one OTel trace)."""
    role: SpanRole
    """What kind of record opened it."""
    seq: int
    """The ``seq`` of the record that opened it."""
    order: int
    """Creation order in the builder (sorting by it puts parents before children)."""
    trace_id: int
    """The 128-bit trace id (:func:`trace_id_for`)."""
    span_id: int
    """The 64-bit span id (:func:`span_id_for`)."""
    parent_span_id: int | None
    """The parent's span id; ``None`` for the run span."""
    name: str
    """The span name (``run …``, ``invoke_agent …``, ``chat …``, ``execute_tool …``)."""
    kind: SpanKindName
    """INTERNAL or CLIENT."""
    start_ns: int
    """Start, in ns since the epoch."""
    end_ns: int
    """End, in ns since the epoch."""
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    """Attributes, in a fixed order."""
    events: list[SpanEventRecord] = field(default_factory=list)
    """Span events, in record order."""
    status: Literal["unset", "error"] = "unset"
    """ERROR for failures; UNSET otherwise (instrumentation leaves success unset)."""
    status_message: str | None = None
    """The error's description, for ERROR."""


def _digest(*parts: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OTLP


def trace_id_for(run_id: str, salt: str = "") -> int:
    """The OTel trace id of a run: 128 bits of SHA-256 over the run id (and the export's salt, if any)."""
    return _digest("fpdebug.trace", run_id, *_salted(salt), size=16)


def span_id_for(run_id: str, role: SpanRole, seq: int, salt: str = "") -> int:
    """The OTel span id of the span a record opened: 64 bits of SHA-256 over run id, role, seq (and salt)."""
    return _digest("fpdebug.span", run_id, role, str(seq), *_salted(salt), size=8)


def _salted(salt: str) -> tuple[str, ...]:
    # No salt keeps the ids every earlier export had (a live stream, the API's default).
    return (salt,) if salt else ()


def trace_salt(header_line: str) -> str:
    """The id salt of one trace file: a digest of its header line (producer, creation time, import source).

    Two exports of one file get the same ids (re-sending is idempotent); a replay or rerun writes a new
    file with its own header, so its spans never collide with the original run's, even under one run id.
    """
    return hashlib.sha256(header_line.strip().encode()).hexdigest()[:16]


def time_ns(ts: datetime) -> int:
    """A record's ``ts`` as integer nanoseconds since the epoch (exact: no float rounding)."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - _EPOCH) // _MICROSECOND * 1000


def _ms_ns(ms: float) -> int:
    # The schema refuses non-finite and huge durations; a record built in memory may still hold
    # one, and a span without a width is better than an export that stops.
    if not math.isfinite(ms):
        return 0
    return min(max(round(ms * 1_000_000), 0), _INT64[1])


def attribute(value: object) -> AttributeValue:
    """A JSON-like value as an :data:`AttributeValue` (OTLP ints are int64: larger ones become text)."""
    if value is None or isinstance(value, bool | str | float):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, dict):
        return {str(key): attribute(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [attribute(item) for item in value]
    return str(value)


FINISH_REASONS: dict[str, str] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "length": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "refusal": "content_filter",
    "content_filter": "content_filter",
    "error": "error",
}
"""Provider stop reasons (Anthropic's, OpenAI's) → the GenAI convention's finish reasons."""


def finish_reason(stop_reason: str | None) -> str:
    """The convention's finish reason (``stop``, ``length``, ``content_filter``, ``tool_call``,
    ``error``) for a provider's stop reason; one it does not know is passed through as recorded."""
    if not stop_reason:
        return "stop"
    return FINISH_REASONS.get(stop_reason.lower(), stop_reason)


def _json(value: object) -> str:
    """A structured attribute as the JSON string backends parse (Phoenix, Langfuse): compact, keys kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _message_parts(message: Message) -> list[AttributeValue]:
    parts: list[AttributeValue] = []
    if message.role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id or "", "response": message.content}
        )
        return parts
    # The conventions' ReasoningPart: readable thinking only (a signature or redacted data is opaque).
    for block in message.thinking or ():
        if block.type == "thinking" and block.thinking:
            parts.append({"type": "reasoning", "content": block.thinking})
    if message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls or ():
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": attribute(call.args)}
        )
    return parts


@dataclass(slots=True)
class _RunState:
    run_id: str
    trace_id: int
    root: SpanRecord
    agent_name: str = "agent"
    provider: str | None = None
    model: str | None = None
    server: tuple[str, int] | None = None
    """The host and port the run's live provider talked to (``run_start.server_address`` / ``_port``)."""
    turns: dict[int, SpanRecord] = field(default_factory=dict)
    last_ns: int = 0
    active_ids: dict[tuple[int | None, int | None], list[str]] = field(default_factory=dict)
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    stop_reasons: dict[int, str] = field(default_factory=dict)
    cached_input: dict[int, int] = field(default_factory=dict)
    """Per turn: cache tokens a provider reported apart from its input tokens (see usage_of)."""
    run_cached_input: int = 0
    """The same over the whole run: run_end's input tokens summed the calls' reported input."""
    run_cost: CostTotal = field(default_factory=CostTotal)
    """The run's calls, priced."""
    turn_costs: dict[int, CostTotal] = field(default_factory=dict)
    """Per turn: its calls, priced."""


class SpanBuilder:
    """Turns trace events into :class:`SpanRecord` s, incrementally.

    Feed events in file order; :meth:`feed` returns the spans that event completed (a chat or tool
    span at once, a turn span at ``turn_end``, the run span at ``run_end``), :meth:`finish` closes
    whatever is still open (marked ``fpdebug.incomplete``).

    Args:
        include_content: Export prompts, replies, tool arguments and results (see the module doc).
    """

    def __init__(self, *, include_content: bool = False, id_salt: str = "") -> None:
        self.include_content = include_content
        """Whether content-bearing attributes are exported."""
        self.id_salt = id_salt
        """Mixed into every trace and span id (:func:`trace_salt`): one file's export never collides
        with another file's, a replay's included."""
        self._runs: dict[str, _RunState] = {}
        self._order = 0

    # ------------------------------------------------------------------------------------------

    def feed(self, event: TraceEvent) -> list[SpanRecord]:
        """Take one event; return the spans it completed (possibly none)."""
        state = self._state(event)
        now = time_ns(event.ts)
        state.last_ns = max(state.last_ns, now)
        if isinstance(event, RunStartEvent):
            self._run_start(state, event)
            return []
        if isinstance(event, RunEndEvent):
            return self._run_end(state, event, now)
        if isinstance(event, TurnStartEvent):
            return self._turn_start(state, event, now)
        if isinstance(event, TurnEndEvent):
            return self._turn_end(state, event, now)
        if isinstance(event, LlmCallEvent):
            return [self._chat(state, event, now)]
        if isinstance(event, ToolResultEvent):
            return [self._tool(state, event, now)]
        if isinstance(event, PassEvent):
            state.active_ids[(event.turn, event.iteration)] = list(event.active_ids)
        if event.kind in FACT_KINDS:
            host = self._host(state, event, now)
            host.events.append(SpanEventRecord(f"fpdebug.{event.kind}", now, self._fact(event)))
        return []

    def finish(self) -> list[SpanRecord]:
        """Close every span still open (a trace without ``run_end``) and return them."""
        done: list[SpanRecord] = []
        for run_id in list(self._runs):
            done.extend(self.finish_run(run_id))
        return done

    def finish_run(self, run_id: str) -> list[SpanRecord]:
        """Close one run's open spans, as :meth:`finish` would, once no record of it can follow.

        A saved trace's exporter calls it after the run's last line, so a run that never ended
        (a crash, a one-record run) is not held open to the end of the file.
        """
        state = self._runs.pop(run_id, None)
        if state is None:
            return []
        done: list[SpanRecord] = []
        for turn in list(state.turns.values()):
            turn.end_ns = max(turn.start_ns, state.last_ns)
            turn.attributes["fpdebug.incomplete"] = True
            done.append(turn)
        state.turns.clear()
        state.root.end_ns = max(state.root.start_ns, state.last_ns)
        state.root.attributes["fpdebug.incomplete"] = True
        done.append(state.root)
        return done

    @property
    def open_runs(self) -> int:
        """Runs fed and not yet ended or finished."""
        return len(self._runs)

    # -- spans -----------------------------------------------------------------------------------

    def _new_span(
        self,
        state: _RunState,
        role: SpanRole,
        seq: int,
        *,
        name: str,
        kind: SpanKindName,
        start: int,
        end: int,
        parent: SpanRecord | None,
    ) -> SpanRecord:
        self._order += 1
        return SpanRecord(
            run_id=state.run_id,
            role=role,
            seq=seq,
            order=self._order,
            trace_id=state.trace_id,
            span_id=span_id_for(state.run_id, role, seq, self.id_salt),
            parent_span_id=parent.span_id if parent is not None else None,
            name=name,
            kind=kind,
            start_ns=start,
            end_ns=end,
        )

    def _state(self, event: TraceEvent) -> _RunState:
        state = self._runs.get(event.run_id)
        if state is None:
            now = time_ns(event.ts)
            trace_id = trace_id_for(event.run_id, self.id_salt)
            self._order += 1
            root = SpanRecord(
                run_id=event.run_id,
                role="run",
                seq=event.seq,
                order=self._order,
                trace_id=trace_id,
                span_id=span_id_for(event.run_id, "run", event.seq, self.id_salt),
                parent_span_id=None,
                name="run agent",
                kind="internal",
                start_ns=now,
                end_ns=now,
                attributes={"fpdebug.run.id": event.run_id, "gen_ai.conversation.id": event.run_id},
            )
            state = self._runs[event.run_id] = _RunState(event.run_id, trace_id, root)
        return state

    def _run_start(self, state: _RunState, event: RunStartEvent) -> None:
        state.agent_name, state.provider, state.model = event.agent_name, event.provider, event.model
        if event.server_address and event.server_port is not None:
            state.server = (event.server_address, event.server_port)
        for schema in event.tools:
            if schema.description:
                state.tool_descriptions[schema.name] = schema.description
        root = state.root
        root.name = f"run {event.agent_name}"
        attrs = root.attributes
        attrs["gen_ai.agent.name"] = event.agent_name
        attrs["fpdebug.run.provider"] = event.provider
        attrs["fpdebug.run.model"] = event.model
        attrs["fpdebug.run.max_iterations"] = event.max_iterations
        attrs["fpdebug.run.injection_ids"] = [decl.id for decl in event.injections]
        attrs["fpdebug.run.tool_names"] = [schema.name for schema in event.tools]
        if event.skill_map is not None:
            attrs["fpdebug.run.skill_map.nodes"] = list(event.skill_map.nodes)
        if event.maps is not None:
            attrs["fpdebug.run.maps"] = [mounted.id for mounted in event.maps.maps]
            attrs["fpdebug.run.renewal_grace"] = event.maps.renewal_grace
        if self.include_content and event.system_prompt:
            attrs["gen_ai.system_instructions"] = _json([{"type": "text", "content": event.system_prompt}])

    def _run_end(self, state: _RunState, event: RunEndEvent, now: int) -> list[SpanRecord]:
        done: list[SpanRecord] = []
        for turn in list(state.turns.values()):
            turn.end_ns = max(turn.start_ns, now)
            if event.status == "failed":
                self._fail(turn, event.error, now, fallback="run failed")
            else:
                turn.attributes["fpdebug.turn.ended_by"] = f"run {event.status}"
            done.append(turn)
        state.turns.clear()
        root = state.root
        root.end_ns = max(root.start_ns, now)
        attrs = root.attributes
        attrs["fpdebug.run.status"] = event.status
        attrs["fpdebug.run.turns"] = event.turns
        # One usage definition (usage_of): the cache tokens an older call record left out count here too.
        attrs["fpdebug.run.input_tokens"] = event.input_tokens + state.run_cached_input
        attrs["fpdebug.run.output_tokens"] = event.output_tokens
        _put_cost(attrs, state.run_cost)
        if event.status == "failed":
            self._fail(root, event.error, now, fallback="run failed")
        done.append(root)
        del self._runs[state.run_id]
        return done

    def _turn_span(self, state: _RunState, number: int, seq: int, now: int) -> SpanRecord:
        span = state.turns.get(number)
        if span is None:
            span = self._new_span(
                state,
                "turn",
                seq,
                name=f"invoke_agent {state.agent_name}",
                kind="internal",
                start=now,
                end=now,
                parent=state.root,
            )
            attrs = span.attributes
            attrs["gen_ai.operation.name"] = "invoke_agent"
            attrs["gen_ai.provider.name"] = state.provider or "unknown"
            attrs["gen_ai.agent.name"] = state.agent_name
            attrs["gen_ai.conversation.id"] = state.run_id
            if state.model:
                attrs["gen_ai.request.model"] = state.model
            attrs["fpdebug.run.id"] = state.run_id
            attrs["fpdebug.turn"] = number
            state.turns[number] = span
        return span

    def _host(self, state: _RunState, event: TraceEvent, now: int) -> SpanRecord:
        """The span an event belongs under: its turn's span, or the run span when it has no turn."""
        return self._turn_span(state, event.turn, event.seq, now) if event.turn is not None else state.root

    def _turn_start(self, state: _RunState, event: TurnStartEvent, now: int) -> list[SpanRecord]:
        number = event.turn if event.turn is not None else len(state.turns) + 1
        done: list[SpanRecord] = []
        for other, span in list(state.turns.items()):  # a turn that never ended: closed here, marked
            if other != number:
                span.end_ns = max(span.start_ns, now)
                span.attributes["fpdebug.incomplete"] = True
                done.append(state.turns.pop(other))
        span = self._turn_span(state, number, event.seq, now)
        if self.include_content:
            span.attributes["gen_ai.input.messages"] = _json(
                [{"role": "user", "parts": [{"type": "text", "content": event.user_message}]}]
            )
        return done

    def _turn_end(self, state: _RunState, event: TurnEndEvent, now: int) -> list[SpanRecord]:
        number = event.turn if event.turn is not None else max(state.turns, default=0)
        span = self._turn_span(state, number, event.seq, now)
        span.end_ns = max(span.start_ns, now)
        attrs = span.attributes
        attrs["gen_ai.usage.input_tokens"] = event.input_tokens + state.cached_input.get(number, 0)
        attrs["gen_ai.usage.output_tokens"] = event.output_tokens
        attrs["fpdebug.turn.iteration_count"] = event.iteration_count
        if event.stopped_early is not None:
            attrs["fpdebug.turn.stopped_early"] = event.stopped_early.reason
            attrs["fpdebug.turn.pending_tool_calls"] = event.stopped_early.pending_tool_calls
        if self.include_content:
            attrs["gen_ai.output.messages"] = _json(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": event.final_content}],
                        "finish_reason": finish_reason(state.stop_reasons.get(number)),
                    }
                ]
            )
        _put_cost(attrs, state.turn_costs.pop(number, CostTotal()))
        del state.turns[number]
        return [span]

    def _chat(self, state: _RunState, event: LlmCallEvent, now: int) -> SpanRecord:
        parent = self._host(state, event, now)
        start = now - _ms_ns(event.latency_ms)
        span = self._new_span(
            state,
            "chat",
            event.seq,
            name=f"chat {event.model}",
            kind="internal" if event.provider in IN_PROCESS_PROVIDERS else "client",
            start=start,
            end=now,
            parent=parent,
        )
        attrs = span.attributes
        attrs["gen_ai.operation.name"] = "chat"
        attrs["gen_ai.provider.name"] = event.provider
        attrs["gen_ai.request.model"] = event.model
        attrs["gen_ai.conversation.id"] = state.run_id
        if state.server is not None and event.provider == state.provider:
            attrs["server.address"], attrs["server.port"] = state.server
        request = event.request
        if request.temperature is not None:
            attrs["gen_ai.request.temperature"] = request.temperature
        if request.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = request.max_tokens
        if request.seed is not None:
            attrs["gen_ai.request.seed"] = request.seed
        for schema in request.tools:
            if schema.description:
                state.tool_descriptions[schema.name] = schema.description
        response = event.response
        if response is not None:
            self._put_reply(state, attrs, event, response)
        cost = call_cost(event)
        state.run_cost.add(cost)
        if event.turn is not None:
            state.turn_costs.setdefault(event.turn, CostTotal()).add(cost)
        _put_cost(attrs, CostTotal.of([cost]))
        if cost.dollars is not None:
            # Langfuse reads a call's cost from gen_ai.usage.cost (its documented OTel property mapping);
            # only on chat spans, so a backend that sums spans does not count a turn's or a run's twice.
            attrs["gen_ai.usage.cost"] = float(cost.dollars)
        put_position(attrs, event)
        attrs["fpdebug.call_index"] = event.call_index
        if event.route is not None:
            attrs["fpdebug.route"] = event.route
        if response is not None:
            attrs["fpdebug.tool_call_count"] = len(response.tool_calls)
        active = state.active_ids.get((event.turn, event.iteration))
        if active is not None:
            attrs["fpdebug.pass.active_ids"] = list(active)
        attrs["fpdebug.request.system_prompt_sources"] = [
            segment.injection_id or segment.source for segment in request.system_prompt
        ]
        attrs["fpdebug.request.tool_names"] = [schema.name for schema in request.tools]
        if self.include_content:
            _put_chat_content(attrs, request, response)
        if event.error is not None:
            self._fail(span, event.error, now, fallback="the call failed")
        return span

    @staticmethod
    def _put_reply(
        state: _RunState, attrs: dict[str, AttributeValue], event: LlmCallEvent, response: LlmResponse
    ) -> None:
        """The reply's id, model, finish reason and usage (input tokens include cache reads and writes)."""
        if response.id:
            attrs["gen_ai.response.id"] = response.id
        if response.model:
            attrs["gen_ai.response.model"] = response.model
        if response.stop_reason:
            attrs["gen_ai.response.finish_reasons"] = [finish_reason(response.stop_reason)]
            attrs["fpdebug.response.stop_reason"] = response.stop_reason
            if event.turn is not None:
                state.stop_reasons[event.turn] = response.stop_reason
        usage = response.usage
        tokens = usage_of(event.provider, usage)
        attrs["gen_ai.usage.input_tokens"] = tokens.input_total
        extra = tokens.input_total - usage.input_tokens
        state.run_cached_input += extra
        if event.turn is not None and extra:
            state.cached_input[event.turn] = state.cached_input.get(event.turn, 0) + extra
        attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
        if usage.cache_read_tokens is not None:
            attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
        if usage.cache_write_tokens is not None:
            # Both names while the conventions rename cache_creation to cache_write.
            attrs["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
            attrs["gen_ai.usage.cache_write.input_tokens"] = usage.cache_write_tokens
        if usage.reasoning_tokens is not None:
            attrs["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens

    def _tool(self, state: _RunState, event: ToolResultEvent, now: int) -> SpanRecord:
        parent = self._host(state, event, now)
        span = self._new_span(
            state,
            "tool",
            event.seq,
            name=f"execute_tool {event.tool_name}",
            kind="internal",
            start=now - _ms_ns(event.duration_ms),
            end=now,
            parent=parent,
        )
        attrs = span.attributes
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = event.tool_name
        attrs["gen_ai.tool.call.id"] = event.tool_call_id
        attrs["gen_ai.tool.type"] = "function"
        description = state.tool_descriptions.get(event.tool_name)
        if description:
            attrs["gen_ai.tool.description"] = description
        put_position(attrs, event)
        if event.status is not None:
            attrs["fpdebug.tool.status"] = event.status
        if event.effects:
            attrs["fpdebug.tool.effects"] = [f"{effect.kind}:{effect.outcome}" for effect in event.effects]
        if event.malformed:
            attrs["fpdebug.tool.malformed_effects"] = [effect.kind for effect in event.malformed]
        if event.skill_gate is not None:
            attrs["fpdebug.tool.skill_gate.skill_id"] = event.skill_gate.skill_id
            attrs["fpdebug.tool.skill_gate.outcome"] = event.skill_gate.outcome
        if event.coverage is not None:
            attrs["fpdebug.tool.coverage"] = event.coverage
        if self.include_content:
            attrs["gen_ai.tool.call.arguments"] = _json(event.args)
            attrs["gen_ai.tool.call.result"] = event.result
        if event.error is not None or event.status in _FAILED_TOOL_STATUSES:
            fallback = f"the tool returned status {event.status}" if event.status else "the tool failed"
            self._fail(span, event.error, now, fallback=fallback, error_type=event.status)
        return span

    @staticmethod
    def _fail(
        span: SpanRecord, error: ErrorInfo | None, now: int, *, fallback: str, error_type: str | None = None
    ) -> None:
        span.status = "error"
        kind = error.type if error is not None else (error_type or "_OTHER")
        message = f"{error.type}: {error.message}" if error is not None else fallback
        span.status_message = message
        span.attributes["error.type"] = kind
        exception: dict[str, AttributeValue] = {
            "exception.type": kind,
            "exception.message": error.message if error else fallback,
        }
        if error is not None and error.status is not None:
            exception["fpdebug.error.status"] = error.status
        span.events.append(SpanEventRecord("exception", now, exception))

    def _fact(self, event: TraceEvent) -> dict[str, AttributeValue]:
        return fact_attributes(event, include_content=self.include_content)


def _put_chat_content(
    attrs: dict[str, AttributeValue], request: LlmRequest, response: LlmResponse | None
) -> None:
    """The call's messages, under ``include_content``: instructions, tool definitions, input and output
    messages, each a JSON string (the conventions mark all of them opt-in)."""
    if request.tools:
        attrs["gen_ai.tool.definitions"] = _json(
            [
                {
                    "type": "function",
                    "name": schema.name,
                    "description": schema.description,
                    "parameters": schema.parameters,
                }
                for schema in request.tools
            ]
        )
    attrs["gen_ai.system_instructions"] = _json(
        [{"type": "text", "content": segment.text} for segment in request.system_prompt]
    )
    attrs["gen_ai.input.messages"] = _json(
        [{"role": message.role, "parts": _message_parts(message)} for message in request.messages]
    )
    if response is not None:
        assistant = Message(
            role="assistant",
            content=response.content,
            tool_calls=list(response.tool_calls) or None,
            thinking=response.thinking,
        )
        attrs["gen_ai.output.messages"] = _json(
            [
                {
                    "role": "assistant",
                    "parts": _message_parts(assistant),
                    "finish_reason": finish_reason(response.stop_reason),
                }
            ]
        )


def _put_cost(attrs: dict[str, AttributeValue], cost: CostTotal) -> None:
    """``fpdebug.cost.usd`` when every call was priced; else ``fpdebug.cost.unpriced`` says why (never $0)."""
    if cost.priced == 0 and not cost.unpriced:
        return
    if cost.known:
        attrs["fpdebug.cost.usd"] = float(cost.dollars)
    else:
        attrs["fpdebug.cost.unpriced"] = cost.text()
        if cost.priced:
            attrs["fpdebug.cost.priced_usd"] = float(cost.dollars)


def build_spans(
    events: Iterable[TraceEvent], *, include_content: bool = False, id_salt: str = ""
) -> list[SpanRecord]:
    """Every span of every run in ``events`` (file order), parents before children.

    Args:
        events: Trace events in file order (invalid and opaque records left out by the caller).
        include_content: Export prompts, replies, tool arguments and results.
        id_salt: Mixed into every id (:func:`trace_salt`); empty keeps the run-id-only ids.

    Returns:
        The spans, sorted by when the builder opened them (a run, its turns, each turn's calls).
    """
    builder = SpanBuilder(include_content=include_content, id_salt=id_salt)
    spans: list[SpanRecord] = []
    for event in events:
        spans.extend(builder.feed(event))
    spans.extend(builder.finish())
    spans.sort(key=lambda span: span.order)
    return spans

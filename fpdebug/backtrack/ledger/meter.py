"""One trace metered for the context ledger: per run, what was offered to each call and what was used.

The rules of docs/backtracking.md §9.10, mapped onto what an fpdebug trace records:

- **an offer** is one ``llm_call`` (the reference's LLM call marker). At each call, every
  injection active on that iteration's ``pass`` (``active_ids``; the request's tagged segments,
  messages and tools when no pass was recorded), every tool schema an injection contributed
  (dynamic) and every agent tool (static) counts as offered once;
- **tokens**: ``ceil(len(json) / 4)`` of what the piece put on the wire at that call: an
  injection's system-prompt segments and messages (its tools count on their own tool rows), a
  dynamic tool's schema; a static tool counts 0;
- **a tool is used** when an assistant reply of the run called it (the run's final history is the
  concatenation of those replies);
- **a skill** (a skill-flavored injection) **is used** when the run activated it (a ``read_skill``
  the gate accepted, or a pass that admitted it as ``llm-activated``), and only then: an always-on
  skill whose body rode the answer is not credited on the slice;
- **an injection is used** when it is on the final answer's slice: it is one of the pieces that the
  provenance of the run's final-answer call (:func:`~fpdebug.backtrack.provenance.trace_provenance`)
  says the model read; ``used_via`` names the slot it landed in.

Uses count at most once per piece per run. A run with no ``llm_call`` is refused, not metered.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from fpdebug.backtrack.provenance import trace_provenance
from fpdebug.errors import FpdebugError
from fpdebug.trace.cost import input_price_per_token
from fpdebug.trace.model import Run, RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, LlmRequest, PassEvent, RunStartEvent, ToolResultEvent

__all__ = ["PieceKey", "PieceMeter", "RefusedRun", "RunMeter", "approx_tokens", "meter_trace"]

PieceKey = tuple[str, str]
"""``(kind, id)``: ``kind`` is ``injection``, ``skill`` or ``tool``."""


def approx_tokens(value: object) -> int:
    """``ceil(len(json) / 4)``: the ledger's tokenizer-free estimate of a piece on the wire."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False, sort_keys=True)) / 4)


@dataclass(slots=True)
class PieceMeter:
    """One piece's offers in one run."""

    offered: int = 0
    tokens: int = 0
    dollars: Decimal = Decimal(0)
    """Dollars of the priced offers (tokens × the call's input price)."""
    priced: int = 0
    unpriced: dict[str, int] = field(default_factory=dict)
    """Offers without a price, by reason."""


@dataclass(slots=True)
class RunMeter:
    """One run's offers and uses."""

    trace: str
    run_id: str
    status: str
    calls: int = 0
    offers: dict[PieceKey, PieceMeter] = field(default_factory=dict)
    uses: dict[PieceKey, str] = field(default_factory=dict)
    """Each used piece, with how (``tool-called``, ``skill-activated``, ``answer-slice(<slot>)``)."""
    note: str | None = None
    """Why a rule could not be applied in full (the final answer unreadable, …)."""

    @property
    def ref(self) -> str:
        """``<trace>#<run id>``: the ref that names this run even when run ids repeat across files."""
        return f"{self.trace}#{self.run_id}"


@dataclass(frozen=True, slots=True)
class RefusedRun:
    """A run the ledger refused to meter, and why."""

    trace: str
    run_id: str
    reason: str


@dataclass(slots=True)
class _RunFacts:
    start: RunStartEvent | None = None
    passes: dict[tuple[int | None, int | None], PassEvent] = field(default_factory=dict)
    calls: list[LlmCallEvent] = field(default_factory=list)
    activated: set[str] = field(default_factory=set)


def _collect(reader: TraceReader, model: RunModel) -> dict[str, _RunFacts]:
    facts: dict[str, _RunFacts] = {}
    for line, record in reader.iter_records(0):
        model.feed(line, record)
        run_id = getattr(record, "run_id", None)
        if not isinstance(run_id, str):
            continue
        run = facts.setdefault(run_id, _RunFacts())
        if isinstance(record, RunStartEvent):
            run.start = record
        elif isinstance(record, PassEvent):
            run.passes[(record.turn, record.iteration)] = record
            run.activated.update(r.id for r in record.reasons if r.via == "llm-activated")
        elif isinstance(record, LlmCallEvent):
            run.calls.append(record)
        elif isinstance(record, ToolResultEvent) and record.skill_gate is not None:
            gate = record.skill_gate
            run.activated.update([gate.skill_id] if gate.outcome != "rejected" else [])
    return facts


def _injection_parts(request: LlmRequest) -> dict[str, list[object]]:
    """What each injection put in the request's system prompt and messages (its tools are tool rows)."""
    parts: dict[str, list[object]] = {}
    for segment in request.system_prompt:
        if segment.injection_id:
            parts.setdefault(segment.injection_id, []).append(segment.text)
    for message in request.messages:
        if message.injection_id:
            parts.setdefault(message.injection_id, []).append(
                message.model_dump(mode="json", exclude_none=True)
            )
    return parts


def _offer(meter: RunMeter, key: PieceKey, tokens: int, price: tuple[Decimal | None, str | None]) -> None:
    piece = meter.offers.setdefault(key, PieceMeter())
    piece.offered += 1
    piece.tokens += tokens
    per_token, reason = price
    if per_token is None:
        why = reason or "unknown price"
        piece.unpriced[why] = piece.unpriced.get(why, 0) + 1
    else:
        piece.dollars += per_token * tokens
        piece.priced += 1


def _meter_call(meter: RunMeter, facts: _RunFacts, call: LlmCallEvent, flavors: Mapping[str, str]) -> None:
    meter.calls += 1
    price = input_price_per_token(call)
    request = call.request
    parts = _injection_parts(request)
    on_pass = facts.passes.get((call.turn, call.iteration))
    if on_pass is not None:
        active: Iterable[str] = on_pass.active_ids
    else:  # no pass recorded (an imported trace): the request's tags say who rode
        tagged = [*parts, *(schema.injection_id for schema in request.tools if schema.injection_id)]
        active = dict.fromkeys(tagged)
    for injection_id in active:
        kind = "skill" if flavors.get(injection_id) == "skill" else "injection"
        own = parts.get(injection_id)
        _offer(meter, (kind, injection_id), approx_tokens(own) if own else 0, price)
    for schema in request.tools:
        dynamic = schema.injection_id is not None
        tokens = approx_tokens(schema.model_dump(mode="json", exclude_none=True)) if dynamic else 0
        _offer(meter, ("tool", schema.name), tokens, price)
    for tool_call in call.response.tool_calls if call.response is not None else ():
        meter.uses.setdefault(("tool", tool_call.name), "tool-called")


def _final_call_line(model: RunModel, run: Run) -> int | None:
    """The line of the run's final answer: the last ended turn's final iteration's last call with a reply."""
    for turn in reversed(run.turns):
        if turn.end_line is None or turn.iteration_count is None:
            continue
        iteration = turn.iteration(turn.iteration_count)
        for line in reversed(iteration.llm_lines if iteration is not None else []):
            record = model.record(line)
            if isinstance(record, LlmCallEvent) and record.response is not None:
                return line
        return None
    return None


def _slice_uses(meter: RunMeter, model: RunModel, run: Run, flavors: Mapping[str, str]) -> None:
    line = _final_call_line(model, run)
    if line is None:
        meter.note = "no readable final answer: no injection is credited on the answer's slice"
        return
    try:
        provenance = trace_provenance(model, line=line)
    except FpdebugError as exc:
        meter.note = f"the final answer's provenance failed ({exc}): no injection is credited"
        return
    for piece in provenance.pieces:
        if piece.injection_id is None or piece.kind == "tool-schema":
            continue  # a skill's tool schema is its tool row's business, not the injection's
        if flavors.get(piece.injection_id) == "skill":
            continue  # a skill is used only when activated (§9.10), even if its body rode the answer
        meter.uses.setdefault(("injection", piece.injection_id), f"answer-slice({piece.slot})")


def meter_trace(path: str) -> tuple[list[RunMeter], list[RefusedRun]]:
    """Meter every run of one trace file.

    Args:
        path: The trace.

    Returns:
        The metered runs, and the refused ones (no ``llm_call``; or still being written: no
        ``run_end`` yet).

    Raises:
        TraceError: The file is not a readable fpdebug trace (the caller reports it and goes on).
    """
    metered: list[RunMeter] = []
    refused: list[RefusedRun] = []
    with TraceReader(path) as reader:
        model = RunModel(reader)
        facts = _collect(reader, model)
        for run in model.runs:
            run_facts = facts.get(run.run_id, _RunFacts())
            if run.status == "running":
                refused.append(RefusedRun(path, run.run_id, "still being written (no run_end yet)"))
                continue
            if not run_facts.calls:
                refused.append(RefusedRun(path, run.run_id, "no llm_call: nothing was offered to meter"))
                continue
            start = run_facts.start
            flavors = {decl.id: decl.flavor for decl in start.injections} if start is not None else {}
            meter = RunMeter(path, run.run_id, run.status)
            for call in run_facts.calls:
                _meter_call(meter, run_facts, call, flavors)
            for skill_id in run_facts.activated:
                if flavors.get(skill_id) == "skill":
                    meter.uses.setdefault(("skill", skill_id), "skill-activated")
            _slice_uses(meter, model, run, flavors)
            metered.append(meter)
    return metered, refused

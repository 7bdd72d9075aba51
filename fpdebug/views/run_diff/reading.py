"""What the run diff reads of one run: its declaration, and each pass's records (never the whole file).

Every record goes through :func:`~fpdebug.views.pass_diff.records.record`, which turns an
unreadable line into ``None``: the diff says what it could not read instead of failing.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from fpdebug.trace.model import Iteration, LeaseLifetime, Run
from fpdebug.trace.schema import (
    InjectionDecl,
    LlmCallEvent,
    LlmRequest,
    Message,
    PassEvent,
    RunStartEvent,
    ToolResultEvent,
)
from fpdebug.views.pass_diff.records import call_record, pass_record, record
from fpdebug.views.session import TraceSession

_DIFF_LINES = 40  # lines of a changed text's diff kept
_CLIP = 160  # characters of a text quoted in a difference


@dataclass
class RunReading:
    """One run of one trace, and what the diff has learnt of it so far."""

    session: TraceSession
    run: Run
    start: RunStartEvent | None
    catalog: dict[str, InjectionDecl]
    """The injections its ``run_start`` declares, by id."""
    left_out: frozenset[str]
    """The injections its ``run_start.options.without`` says were left out on purpose."""
    pruned_at: dict[tuple[int, int], list[LeaseLifetime]] = field(default_factory=dict)
    """``(turn, iteration)`` → the leases pruned there."""
    granted_at: dict[tuple[int, int], list[LeaseLifetime]] = field(default_factory=dict)
    """``(turn, iteration)`` → the leases granted there (by its tool batch)."""
    maps_at: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)
    """``(turn, iteration)`` → each mounted map's standing recorded there (``engaged by explicit``…)."""
    call_ids: dict[str, str] = field(default_factory=dict)
    """Tool call id → ``#n`` (the n-th call the model asked for in this run): two runs name their
    calls differently (a live model's ids are random), so calls are compared by position."""

    @classmethod
    def of(cls, session: TraceSession, run: Run) -> RunReading:
        """Read ``run``'s declaration."""
        start = session.run_start(run.run_id)
        catalog = {decl.id: decl for decl in (start.injections if start is not None else [])}
        without = start.options.get("without") if start is not None else None
        ids = without.get("injection_ids") if isinstance(without, dict) else None
        left_out = frozenset(str(id_) for id_ in ids) if isinstance(ids, list) else frozenset()
        reading = cls(session=session, run=run, start=start, catalog=catalog, left_out=left_out)
        # Indexed once, so each pass finds its leases and map standings without a walk of the run.
        for lease in run.leases:
            if lease.pruned_turn is not None and lease.pruned_iteration is not None:
                reading.pruned_at.setdefault((lease.pruned_turn, lease.pruned_iteration), []).append(lease)
            if lease.grant_line is not None and lease.turn is not None:
                reading.granted_at.setdefault((lease.turn, lease.granted_iteration), []).append(lease)
        for map_id, timeline in run.maps.items():
            for point in timeline.points:
                if point.turn is not None and point.iteration is not None:
                    words = f"{point.standing} by {point.by}" + (f", at {point.at}" if point.at else "")
                    reading.maps_at.setdefault((point.turn, point.iteration), {})[map_id] = words
        return reading

    def pass_of(self, iteration: Iteration | None) -> PassEvent | None:
        """The iteration's ``pass`` record, if it can be read, its reasons' call ids as ``#n``."""
        record = pass_record(self.session, iteration) if iteration is not None else None
        if record is None or not any(reason.tool_call_id for reason in record.reasons):
            return record
        reasons = [
            reason.model_copy(
                update={"tool_call_id": self.call_ids.get(reason.tool_call_id, reason.tool_call_id)}
            )
            if reason.tool_call_id is not None
            else reason
            for reason in record.reasons
        ]
        return record.model_copy(update={"reasons": reasons})

    def call_of(self, iteration: Iteration | None) -> LlmCallEvent | None:
        """The iteration's first readable ``llm_call`` record."""
        return call_record(self.session, iteration) if iteration is not None else None

    def results_of(self, iteration: Iteration | None) -> list[ToolResultEvent]:
        """The iteration's readable ``tool_result`` records, in file order."""
        if iteration is None:
            return []
        found = (record(self.session, line, ToolResultEvent) for line in iteration.tool_result_lines)
        return [result for result in found if result is not None]

    def number_calls(self, call: LlmCallEvent | None) -> None:
        """Give each tool call the response asks for its ``#n`` (in the order the model asked)."""
        if call is None or call.response is None:
            return
        for asked in call.response.tool_calls:
            self.call_ids.setdefault(asked.id, f"#{len(self.call_ids) + 1}")

    def canonical(self, request: LlmRequest) -> LlmRequest:
        """``request`` with every tool call id replaced by its ``#n`` (ids not seen are kept)."""
        return request.model_copy(update={"messages": [self._message(m) for m in request.messages]})

    def _message(self, message: Message) -> Message:
        update: dict[str, object] = {}
        if message.tool_call_id is not None:
            update["tool_call_id"] = self.call_ids.get(message.tool_call_id, message.tool_call_id)
        if message.tool_calls:
            update["tool_calls"] = [
                call.model_copy(update={"id": self.call_ids.get(call.id, call.id)})
                for call in message.tool_calls
            ]
        return message.model_copy(update=update) if update else message


def clip(text: str | None) -> str | None:
    """``text`` on one line, cut to :data:`_CLIP` characters (``None`` stays ``None``)."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= _CLIP else flat[: _CLIP - 1] + "…"


def line_diff(a: str, b: str) -> tuple[str, ...]:
    """The unified line diff of ``a`` → ``b`` without its file headers (capped)."""
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=1)
    body = tuple(line for line in lines if not line.startswith(("---", "+++")))
    return body[:_DIFF_LINES]


def load_all(session: TraceSession) -> TraceSession:
    """Index and model the whole file with the session's own loading steps; return it.

    Lines are not validated in full here (on a file of many runs that costs ten times the
    model): the diff reads the records of the two runs it compares, and reading a record
    validates it, so an invalid one among them lands in :attr:`TraceSession.found_invalid`.
    """
    session.index_step()
    while not session.index_done:
        session.index_step()
    while session.model_step():
        pass
    return session


def validate_run(session: TraceSession, run: Run) -> None:
    """Read every record of ``run`` in full, so an invalid one lands in ``session.found_invalid``.

    The records the diff compares are read anyway (and cached by the reader); this adds the few it
    does not (cursor moves, lease records, findings).
    """
    lines = [line for line in (run.start_line, run.end_line) if line is not None]
    for turn in run.turns:
        lines += [line for line in (turn.start_line, turn.end_line) if line is not None]
        lines += list(turn.lines)
        for iteration in turn.iterations:
            lines += iteration.lines
    for line in lines:
        try:
            session.record(line)
        except IndexError:
            continue

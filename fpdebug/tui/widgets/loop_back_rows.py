"""The inspector's rows for Route's non-tool ways back and its limits (docs/context-model.md §7.2).

A window's fold (what Compact dropped, docs/context-model.md §7.1), the step nudge, the wrap-up and
the output re-ask (what the loop re-asked, and why), and a turn the cost budget cut short (what the
run had spent of its budget). They head the inspector's "Routing and findings" section of the
iteration they belong to.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import (
    CompactEvent,
    OutputRetryEvent,
    StepsUnfinishedEvent,
    StoppedEarly,
    TurnEndEvent,
    WrapUpEvent,
)
from fpdebug.tui.widgets.document import DocBuilder
from fpdebug.views.session import TraceSession

__all__ = ["LoopBack", "loop_back_of", "loop_back_rows"]


@dataclass(frozen=True, slots=True)
class LoopBack:
    """An iteration's re-asks, and the budget stop its final reply ended the turn on."""

    nudges: list[StepsUnfinishedEvent]
    wraps: list[WrapUpEvent]
    retries: list[OutputRetryEvent]
    budget_stop: StoppedEarly | None
    folds: list[CompactEvent]

    def __bool__(self) -> bool:
        return bool(self.nudges or self.wraps or self.retries or self.budget_stop or self.folds)


def _of(session: TraceSession, lines: list[int], cls: type) -> list:
    return [record for record in map(session.record, lines) if isinstance(record, cls)]


def loop_back_of(session: TraceSession, iteration: Iteration) -> LoopBack:
    """Read the iteration's ``steps_unfinished``, ``wrap_up`` and ``output_retry`` records, and its
    turn's ``turn_end`` when this iteration ended the turn on the cost budget."""
    stop = None
    run = session.model.run(iteration.run_id)
    turn = run.turn(iteration.turn) if run is not None else None
    if (
        turn is not None
        and turn.stopped_early == "cost-budget"
        and turn.iteration_count == iteration.number
        and turn.end_line is not None
    ):
        end = session.record(turn.end_line)
        stop = end.stopped_early if isinstance(end, TurnEndEvent) else None
    return LoopBack(
        _of(session, iteration.lines_of("steps_unfinished"), StepsUnfinishedEvent),
        _of(session, iteration.lines_of("wrap_up"), WrapUpEvent),
        _of(session, iteration.lines_of("output_retry"), OutputRetryEvent),
        stop,
        _of(session, iteration.lines_of("compact"), CompactEvent),
    )


def _dollars(value: float | None) -> str:
    return "an unknown amount" if value is None else f"${value:.4g}"


def loop_back_rows(doc: DocBuilder, found: LoopBack) -> None:
    """Route's non-tool ways back (what the loop re-asked, and why), then a cost-budget stop."""
    palette = doc.palette
    for fold in found.folds:
        doc.line(
            ("compacted ", palette.warn),
            f"{fold.dropped} older message(s) folded out of the history ({fold.limit}); "
            f"{fold.kept} kept, size {fold.size_before} → {fold.size_after}",
            indent=2,
            hang=2,
        )
    for nudge in found.nudges:
        where = f"step {nudge.step} of {nudge.total} ({nudge.tool}) of "
        doc.line(
            ("step nudge ", palette.warn), where, (nudge.skill_id, palette.accent), " unfinished", indent=2
        )
        doc.content(nudge.nudge, indent=4, rows=2, style=palette.dim)
    for wrap in found.wraps:
        if wrap.reason == "cost-budget":
            pending = (
                f"{wrap.pending_tool_calls} call(s) asked for past the cost budget never ran "
                f"(spent {_dollars(wrap.spent_usd)} of {_dollars(wrap.budget_usd)}); one more call, tools off"
            )
        else:
            pending = f"{wrap.pending_tool_calls} call(s) asked for at the limit never ran; one more call, tools off"
        doc.line(("wrap-up ", palette.warn), pending, indent=2)
    for retry in found.retries:
        doc.line(
            ("output retry ", palette.warn),
            f"{retry.attempt} of {retry.max_retries}: the reply failed the output schema — ",
            (retry.error, palette.bad),
            indent=2,
            hang=2,
        )
        doc.content(retry.reask, indent=4, rows=2, style=palette.dim)
    stop = found.budget_stop
    if stop is not None:
        wrapped = " · wrapped up" if stop.wrapped_up else ""
        doc.line(
            ("stopped early ", palette.bad),
            f"cost-budget at iteration {stop.iteration}: the run spent {_dollars(stop.spent_usd)} of its "
            f"{_dollars(stop.budget_usd)} budget; {stop.pending_tool_calls} call(s) never ran{wrapped}",
            indent=2,
            hang=2,
        )

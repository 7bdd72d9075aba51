"""The results layer: which batch the loop head judges, once, and its result rows (docs/honesty.md §12.3).

At the loop head, :func:`batch_to_judge` says whether the batch in place is new (``iteration ==
stamp + 1``): each batch is judged once per run, never by call id. A result row per call: status,
declared coverage, the values the result holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from fpdebug.engine.honesty.sources import values_in
from fpdebug.trace.schema import ResultRow, ToolResultStatus

__all__ = [
    "RESULT_VALUES_LIMIT",
    "BatchTime",
    "CallWindow",
    "RanCall",
    "TurnClock",
    "batch_to_judge",
    "judge_results",
    "results_at_loop_head",
    "time_of_batch",
]

RESULT_VALUES_LIMIT = 100
"""A result row lists at most this many values; the rest are counted in ``values_omitted``."""


def batch_to_judge(iteration: int, stamp: object) -> int | None:
    """Which batch the loop head hands the results layer on this visit (docs/honesty.md §12.3).

    ToolCalls writes a stamp beside the batch it dispatched (the iteration that dispatched it) and
    advances the iteration by exactly one; every other way back to the loop head runs no tool and
    advances the iteration again. So the batch in place is new exactly when ``iteration ==
    stamp + 1``, and each batch is judged once per run. Never decided by tool-call id: a resumed leg
    repeats a provider's synthetic ids, and starts with no stamp.

    Args:
        iteration: The loop head's iteration.
        stamp: The stamp beside the batch in place (``None`` when there is none).

    Returns:
        The iteration that dispatched the batch to judge, or ``None`` when there is none. A stamp
        that is not an ``int`` (``True`` included) is no stamp.
    """
    if isinstance(stamp, int) and not isinstance(stamp, bool) and iteration == stamp + 1:
        return stamp
    return None


@dataclass(frozen=True)
class CallWindow:
    """A call's time row: when it ran.

    Attributes:
        tool_call_id: The call.
        start: When it started.
        end: When it ended.
    """

    tool_call_id: str
    start: datetime
    end: datetime


@dataclass(frozen=True)
class TurnClock:
    """A turn's clock row: the turn it belongs to and its ``now``.

    Attributes:
        turn: The turn whose clock it is.
        now: The instant the turn reads as "now".
    """

    turn: int
    now: datetime


@dataclass(frozen=True)
class RanCall:
    """One call of a dispatched batch, as the model read its result.

    Attributes:
        tool_call_id: The call.
        tool_name: The tool.
        result: The result text the model read.
        status: The status an envelope declared (or ``failure`` when the tool raised).
        coverage: The coverage the tool declared, when it declared one.
        window: The call's window (its ``call-window`` row), under the time layer.
    """

    tool_call_id: str
    tool_name: str
    result: str
    status: ToolResultStatus | None = None
    coverage: str | None = None
    window: CallWindow | None = None


@dataclass(frozen=True)
class BatchTime:
    """What :func:`time_of_batch` hands the result checks.

    Attributes:
        now: This turn's clock, or ``None``.
        windows: The time rows of the batch's calls that have one.
    """

    now: datetime | None = None
    windows: tuple[CallWindow, ...] = ()


def time_of_batch(clock: TurnClock | None, calls: Sequence[RanCall], *, turn: int) -> BatchTime:
    """The times the result checks may use for a batch: only this turn's clock (docs/honesty.md §12.3).

    Without the time layer there is no clock row, so the answer is the empty :class:`BatchTime` and
    no result row carries a time. A clock carried forward from an earlier turn (a restored ledger)
    holds an earlier ``now`` and must not judge this turn's calls, so it yields nothing either.

    Args:
        clock: The latest clock row in the ledger, if any.
        calls: The batch.
        turn: The turn being judged.

    Returns:
        ``now`` and the calls' windows when the clock belongs to ``turn``, else nothing.
    """
    if clock is None or clock.turn != turn:
        return BatchTime()
    return BatchTime(clock.now, tuple(c.window for c in calls if c.window is not None))


def judge_results(
    batch_iteration: int, calls: Sequence[RanCall], time: BatchTime | None = None
) -> list[ResultRow]:
    """One result row per call of a batch: status, declared coverage, the values it holds.

    Under the time layer, a call whose window ends after this turn's ``now`` is marked
    ``beyond_now``: its result cannot cover the part of the window still to come.

    Args:
        batch_iteration: The iteration that dispatched the batch.
        calls: The batch's calls, in call order.
        time: What :func:`time_of_batch` gave for the batch (nothing by default).

    Returns:
        The rows, in call order.
    """
    now = time.now if time is not None else None
    ends = {w.tool_call_id: w.end for w in time.windows} if time is not None else {}
    rows = []
    for call in calls:
        end = ends.get(call.tool_call_id)
        values = values_in(call.result)
        omitted = len(values) - RESULT_VALUES_LIMIT
        rows.append(
            ResultRow(
                batch_iteration=batch_iteration,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                status=call.status,
                coverage=call.coverage,
                values=values[:RESULT_VALUES_LIMIT],
                values_omitted=omitted if omitted > 0 else None,
                beyond_now=None if now is None or end is None else end > now,
            )
        )
    return rows


def results_at_loop_head(
    iteration: int,
    stamp: object,
    calls: Sequence[RanCall],
    *,
    clock: TurnClock | None = None,
    turn: int | None = None,
) -> list[ResultRow]:
    """The results layer's visit at the loop head: the rows to file, or none.

    Args:
        iteration: The loop head's iteration.
        stamp: The stamp ToolCalls wrote beside the batch in place (``None`` when there is none).
        calls: The batch in place (each with its window, under the time layer).
        clock: The latest clock row in the ledger (the time layer), if any.
        turn: The turn being judged (a clock of another turn judges nothing).

    Returns:
        The batch's result rows when :func:`batch_to_judge` says it is new on this visit, else ``[]``.
    """
    batch = batch_to_judge(iteration, stamp)
    if batch is None:
        return []
    time = time_of_batch(clock, calls, turn=turn) if turn is not None else None
    return judge_results(batch, calls, time)

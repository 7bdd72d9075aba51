"""The findings ledger: the rows one layer visit files, as ONE ``finding`` event (docs/honesty.md §12).

Each layer visit files at most one finding (:func:`file_finding`); a visit with nothing to say files
nothing. The ledger of a run is its ``finding`` events, in trace order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias

from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AskRow,
    BasisRow,
    CallWindowRow,
    ClockRow,
    FindingEvent,
    ResultRow,
    ValidationRow,
)

__all__ = ["Finding", "HonestyRow", "Layer", "file_finding"]

Layer: TypeAlias = Literal["inputs", "results", "answer"]
"""The layer that files a finding."""

HonestyRow: TypeAlias = (
    ArgumentRow
    | AskRow
    | BasisRow
    | ClockRow
    | CallWindowRow
    | ResultRow
    | AnswerAssessmentRow
    | ValidationRow
)
"""Any row a layer files (``FindingEvent.rows``)."""


@dataclass(frozen=True)
class Finding:
    """The rows one layer visit files: one ``finding`` event, before its envelope.

    Attributes:
        layer: The layer that filed them.
        turn: The turn of the visit.
        iteration: The iteration of the visit (the loop head's, for the results layer).
        rows: The rows, in filing order.
    """

    layer: Layer
    turn: int | None
    iteration: int | None
    rows: tuple[HonestyRow, ...]

    @classmethod
    def of_event(cls, event: FindingEvent) -> Finding:
        """The finding a recorded ``finding`` event holds.

        Args:
            event: The recorded event.

        Returns:
            Its layer, turn, iteration and rows.
        """
        return cls(event.layer, event.turn, event.iteration, tuple(event.rows))

    def to_event(self, *, seq: int, ts: datetime, run_id: str) -> FindingEvent:
        """The ``finding`` event that records this finding, in the envelope the sink assigns.

        Args:
            seq: The event's position in the trace.
            ts: When it is emitted (from the injected clock).
            run_id: The run.

        Returns:
            The event.
        """
        return FindingEvent(
            seq=seq,
            ts=ts,
            run_id=run_id,
            turn=self.turn,
            iteration=self.iteration,
            layer=self.layer,
            rows=list(self.rows),
        )


def file_finding(
    layer: Layer, rows: Iterable[HonestyRow], *, turn: int | None, iteration: int | None
) -> Finding | None:
    """Merge one visit's rows into ONE finding, or nothing when the visit has nothing to say.

    Args:
        layer: The layer.
        rows: The rows its visit produced.
        turn: The turn of the visit.
        iteration: The iteration of the visit.

    Returns:
        The finding to write as one ``finding`` event, or ``None`` (write nothing).
    """
    kept = tuple(rows)
    return Finding(layer, turn, iteration, kept) if kept else None

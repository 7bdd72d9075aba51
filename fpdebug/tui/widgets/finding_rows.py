"""The honesty rows of a ``finding`` in the pass inspector (docs/honesty.md §12): shown in full, not as a count.

Results-layer rows say what each call of the judged batch returned (status, declared coverage, the
values it holds); the answer layer's rows say whether validation withheld the answer and which
values the answer states that no source supports (the timeline's ``unsupported`` badge points at
those lines). The time layer's rows say the turn's clock (``now``, in the app's zone) and the
window each call covers; a result whose window runs past ``now`` says so. The argument ask says
which call waits, on which argument, the model's guess and the question; an argument the user
answered says the call runs with the answer (the timeline's ``ask`` badge points at those lines).
Other argument and basis rows are shown beside their calls in the Calls view, so here they are
counted. Every value is trace text: it goes through :meth:`DocBuilder.compose` as such.
"""

from __future__ import annotations

import json
from datetime import datetime

from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AskRow,
    CallWindowRow,
    ClockRow,
    FindingEvent,
    ResultRow,
    ValidationRow,
)
from fpdebug.tui.widgets.document import DocBuilder

__all__ = ["finding_rows"]

_VALUES_SHOWN = 12  # a result holds up to 100 values; the inspector names the first few


def finding_rows(doc: DocBuilder, finding: FindingEvent) -> None:
    """Add one finding: its layer and row count, then each results and answer row in full."""
    palette = doc.palette
    doc.line(("finding ", palette.key), f"{finding.layer} layer: {len(finding.rows)} row(s)", indent=2)
    for row in finding.rows:
        if isinstance(row, ResultRow):
            _result(doc, row)
        elif isinstance(row, ValidationRow):
            verdict = ("withheld", palette.bad) if row.withheld else ("passed", palette.good)
            doc.line(
                ("validation ", palette.key),
                verdict,
                *((" — ", (row.reason, "")) if row.reason else ()),
                indent=4,
            )
        elif isinstance(row, AnswerAssessmentRow):
            _assessment(doc, row)
        elif isinstance(row, AskRow):
            guess = "(hidden)" if row.hidden else json.dumps(row.guessed, default=str)
            doc.line(
                ("argument ask ", palette.warn),
                (row.tool_call_id, palette.accent),
                f" {row.tool_name} {row.path} · the model guessed {guess}; the call waits for the user",
                indent=4,
                hang=2,
            )
            doc.content(row.question, indent=6, rows=2, style=palette.dim)
        elif isinstance(row, ArgumentRow) and row.answered:
            value = "(hidden)" if row.hidden else json.dumps(row.value, default=str)
            doc.line(
                ("answered ", palette.good),
                (row.tool_call_id, palette.accent),
                f" {row.tool_name} {row.path} ← the user: {value}; the call runs with it",
                indent=4,
                hang=2,
            )
        elif isinstance(row, ClockRow):
            doc.line(
                ("clock ", palette.key), f"turn {row.turn} · now {_at(row.now)} ", (row.zone, ""), indent=4
            )
        elif isinstance(row, CallWindowRow):
            doc.line(
                ("window ", palette.key),
                (row.tool_call_id, palette.accent),
                " ",
                (row.tool_name, ""),
                f" · {_at(row.start)} → {_at(row.end)} ",
                (row.zone, ""),
                indent=4,
                hang=2,
            )


def _at(moment: datetime) -> str:
    """An instant as the row holds it, to the minute, with its offset (``2026-03-01 00:00+01:00``)."""
    return moment.isoformat(sep=" ", timespec="minutes")


def _result(doc: DocBuilder, row: ResultRow) -> None:
    palette = doc.palette
    doc.line(
        ("result ", palette.key),
        (row.tool_call_id, palette.accent),
        " ",
        (row.tool_name, ""),
        f" · batch of I{row.batch_iteration}",
        *((" · status ", (row.status, palette.warn)) if row.status else ()),
        *((" · ", ("beyond now", palette.warn)) if row.beyond_now else ()),
        indent=4,
        hang=2,
    )
    if row.coverage is not None:
        doc.line(("coverage ", palette.dim), (row.coverage, ""), indent=6, hang=2)
    shown = row.values[:_VALUES_SHOWN]
    more = len(row.values) - len(shown) + (row.values_omitted or 0)
    doc.line(
        ("values ", palette.dim),
        (", ".join(shown) or "(none)", ""),
        *((f" and {more} more",) if more else ()),
        indent=6,
        hang=2,
    )


def _assessment(doc: DocBuilder, row: AnswerAssessmentRow) -> None:
    palette = doc.palette
    supported = sum(1 for value in row.values if value.supported)
    doc.line(
        ("assessment ", palette.key),
        f"{supported} of {len(row.values)} value(s) supported",
        *((" · stopped early",) if row.stopped_early is not None else ()),
        indent=4,
    )
    for value in row.values:
        if not value.supported:
            doc.line(
                ("unsupported ", palette.bad),
                (value.text, palette.accent),
                f" ({value.kind}) — the answer states it; no source holds it",
                indent=6,
                hang=2,
            )

"""The recalled chunks of a turn (``Agent.rag`` / ``Agent.memory``, docs/context-model.md §1.3), for
the pass view: listed apart from the evaluated injections, since they were added outside the
evaluator, once per turn before the first pass, and ride every call of the turn."""

from __future__ import annotations

from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import RecallEvent, Retrieval
from fpdebug.tui.text import Palette, clip
from fpdebug.tui.widgets.document import DocBuilder, Part
from fpdebug.views.session import TraceSession


def turn_recalls(session: TraceSession, iteration: Iteration) -> list[RecallEvent]:
    """The ``recall`` records of ``iteration``'s turn (written on its first iteration)."""
    run = session.model.run(iteration.run_id)
    turn = run.turn(iteration.turn) if run is not None else None
    if turn is None or not turn.iterations:
        return []
    found: list[RecallEvent] = []
    for line in turn.iterations[0].lines_of("recall"):
        record = session.record(line)
        if isinstance(record, RecallEvent):
            found.append(record)
    return found


def retrieval_parts(retrieval: Retrieval, palette: Palette) -> list[Part]:
    """``recalled by 'mem' · score 0.213 · rank 2 · threshold 0.1``: a chunk's tag in the prompt view."""
    threshold: list[Part] = (
        [" · threshold ", (f"{retrieval.threshold:g}", "")] if retrieval.threshold is not None else []
    )
    return [
        (" · recalled by ", palette.dim),
        (retrieval.recall_id, palette.key),
        " · score ",
        (f"{retrieval.score:.3f}", palette.accent),
        " · rank ",
        (str(retrieval.rank), ""),
        *threshold,
    ]


def recalled_section(doc: DocBuilder, session: TraceSession, iteration: Iteration) -> None:
    """One row per kept chunk of the turn's recalls; nothing when the agent recalls nothing."""
    recalls = turn_recalls(session, iteration)
    if not recalls:
        return
    palette = doc.palette
    kept = sum(len(recall.chunks) for recall in recalls)
    doc.heading(
        "Recalled",
        (
            f"  {kept} chunk(s), added outside the evaluator before the first pass; on every call of the turn",
            palette.dim,
        ),
    )
    for recall in recalls:
        threshold = f", threshold {recall.threshold:g}" if recall.threshold is not None else ""
        dropped = f", {recall.below_threshold} dropped" if recall.below_threshold else ""
        excluded = f", left out: {', '.join(recall.excluded)}" if recall.excluded else ""
        doc.line(
            (recall.flavor, palette.key),
            " ",
            (recall.recall_id, palette.accent),
            (f"  asked with the user's message{threshold}{dropped}{excluded}", palette.dim),
            indent=2,
        )
        if not recall.chunks:
            doc.line(("nothing recalled", palette.dim), indent=4)
        for chunk in recall.chunks:
            doc.line(
                f"{chunk.rank:>2} ",
                (chunk.entry_id, palette.accent),
                " · score ",
                (f"{chunk.score:.3f}", ""),
                "  ",
                (clip(chunk.text, 80), palette.dim),
                indent=4,
            )

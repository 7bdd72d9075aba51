"""The backtrack pane's document: a :class:`~fpdebug.backtrack.BacktrackReport` and the answer assessment.

:func:`backtrack_document` renders, tier by tier and always labelled (docs/backtracking.md §9.1, §9.9):

- the call and its answer, the claim, the report's tier and where the verdicts come from (this
  session, or saved beside the trace with their date and status);
- the **answer assessment** of the answer layer (docs §12.4), read from the trace's ``finding``
  rows by :func:`find_assessment`: each value the answer states, supported (each supporting row is a
  link: the tool result's iteration, the user's message, the ground declared in ``run_start``) or
  unsupported, the Assumed block and the standing line;
- the **verdicts** (the causal tier): the rerun provider and flip test, the baseline line, each
  probe's verdict with its flips ``f/n`` as it arrived, the bisection's culprit sets;
- the **suspects** (correlational: aligned with the answer, never "because"): up to six cards, each
  with its score, its verdict stamp and its provenance chain ``ANSWER ← READ ← LANDED ← … ← BORN``,
  every hop a link to its record's iteration; the folded line and the score note;
- what was **available but not sent** (missing-context candidates);
- the honesty lines.

Trace text (answers, chains, suspect texts, values) is shown through :func:`~fpdebug.tui.text.plain`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from rich.text import Text

from fpdebug.backtrack.provenance import Hop
from fpdebug.backtrack.report import BacktrackReport, ProbeVerdict, SuspectCard
from fpdebug.backtrack.walk import Walk
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    AssumedValue,
    FindingEvent,
    StatedValue,
    ToolResultEvent,
)
from fpdebug.tui.text import Palette, clip, compact_json
from fpdebug.tui.widgets.document import Block, DocBuilder, Part
from fpdebug.tui.widgets.link_document import Jump, LinkBlock, link_line
from fpdebug.views.session import TraceSession

__all__ = [
    "AssessedValue",
    "Assessment",
    "PaneState",
    "SupportRef",
    "VerdictBlock",
    "backtrack_document",
    "find_assessment",
    "hop_jump",
]

_CALL_VERBS = frozenset({"READ", "ASKED"})
_SEGMENT = re.compile(r"^system-prompt segment (\d+)\b")  # the Calls view numbers segments [1]…


@dataclass(frozen=True)
class SupportRef:
    """One row that supports a stated value, resolved in the trace."""

    ref: str
    """As recorded: ``tool:call_1``, ``user``, ``external:<label>``, ``declared:<name>``."""
    words: str
    """What it is: ``list_orders result (call_1) at T1·I1``."""
    jump: Jump | None = None
    """Where it is."""


@dataclass(frozen=True)
class AssessedValue:
    """A value the answer states, with its supporting rows."""

    value: StatedValue
    """As the answer layer recorded it."""
    refs: tuple[SupportRef, ...] = ()
    """Its supporting rows, resolved."""


@dataclass(frozen=True)
class Assessment:
    """The answer layer's assessment of one final answer."""

    line: int
    """The ``finding`` record."""
    values: tuple[AssessedValue, ...]
    """Each value the answer states."""
    assumed: tuple[AssumedValue, ...] = ()
    """The Assumed block (middleware rewrites that superseded an argument row)."""
    standing_line: str | None = None
    """The standing line, when the layer composed one."""
    stopped_early: str | None = None
    """Why the turn was cut short, when it was."""


@dataclass
class PaneState:
    """What the pane knows besides the report: where it came from and what runs."""

    origin: str = "explained"
    """``explained`` (this session, no reruns yet), ``saved`` (read from the sidecar) or ``live``
    (reruns started in this session)."""
    saved_at: datetime | None = None
    """When the saved backtrack started."""
    saved_status: str | None = None
    """Its end status (``complete``, ``cancelled``, ``failed``, ``unfinished``)."""
    saved_where: str = "beside the trace"
    """Where the sidecar is: ``beside the trace``, or ``in fpdebug's cache`` (a read-only or tracked trace)."""
    running: bool = False
    """Reruns are in progress."""
    done: int = 0
    """Reruns made."""
    total: int = 0
    """Reruns planned (an upper bound while a bisection runs)."""
    error: str | None = None
    """Why the reruns could not start or stopped."""
    hint: str | None = None
    """What to do about the error (the CLI command for a live provider)."""
    notes: list[str] = field(default_factory=list)
    """Other remarks (an unreadable sidecar…)."""
    walk: Walk | None = None
    """The walk to the root, once one ran in this session (W; never saved)."""


# ----------------------------------------------------------------------------------------------
# The assessment, from the trace


def find_assessment(session: TraceSession, call_line: int) -> Assessment | None:
    """The answer layer's assessment of the answer of the ``llm_call`` on ``call_line``, if any.

    Looks at the ``finding`` records of the call's iteration (the answer layer writes its one row
    right before ``turn_end``, in the final iteration).
    """
    row = session.row_at_line(call_line)
    if row is None:
        return None
    iteration = session.iterations[row]
    for line in iteration.finding_lines:
        record = session.record(line)
        if not isinstance(record, FindingEvent) or record.layer != "answer":
            continue
        for finding in record.rows:
            if isinstance(finding, AnswerAssessmentRow):
                values = tuple(
                    AssessedValue(
                        value,
                        tuple(
                            _resolve(session, iteration.run_id, call_line, ref) for ref in value.supported_by
                        ),
                    )
                    for value in finding.values
                )
                stopped = finding.stopped_early
                return Assessment(
                    line=line,
                    values=values,
                    assumed=tuple(finding.assumed),
                    standing_line=finding.standing_line,
                    stopped_early=(
                        f"{stopped.reason} at iteration {stopped.iteration}" if stopped is not None else None
                    ),
                )
    return None


def _resolve(session: TraceSession, run_id: str, before: int, ref: str) -> SupportRef:
    run = session.model.run(run_id)
    kind, _, name = ref.partition(":")
    if kind == "tool" and name and run is not None:
        for iteration in reversed(list(run.iterations())):
            if iteration.first_line > before:
                continue
            for line in iteration.tool_result_lines:
                record = session.record(line)
                if isinstance(record, ToolResultEvent) and record.tool_call_id == name:
                    where = session.label(iteration)
                    words = f"{record.tool_name} result ({name}) at {where}"
                    return SupportRef(ref, words, Jump(line, "passes"))
        return SupportRef(ref, f"tool call {name} (its result is not in the trace)")
    if kind == "user" and run is not None:
        row = session.row_at_line(before)
        turn = run.turn(session.iterations[row].turn) if row is not None else None
        if turn is not None and turn.start_line is not None:
            words = f"the user's message (turn {turn.number})"
            return SupportRef(ref, words, Jump(turn.start_line, "events"))
        return SupportRef(ref, "the user's message")
    if kind in ("external", "declared") and run is not None:
        words = "external ground" if kind == "external" else "declared source"
        jump = Jump(run.start_line, "events") if run.start_line is not None else None
        return SupportRef(ref, f"{words} '{name}' (declared in run_start)", jump)
    return SupportRef(ref, ref)


# ----------------------------------------------------------------------------------------------
# The document


def hop_jump(hop: Hop) -> Jump | None:
    """Where a chain hop leads: its record's iteration (the call view for an LLM call's hop)."""
    if hop.line is None:
        return None
    return Jump(hop.line, "calls" if hop.verb in _CALL_VERBS else "passes")


def backtrack_document(
    report: BacktrackReport | None,
    state: PaneState,
    assessment: Assessment | None,
    palette: Palette,
    *,
    trace_name: str = "TRACE",
    source_note: str | None = None,
) -> list[Block]:
    """The pane's document.

    Args:
        report: The report (``None`` while the provenance is being traced).
        state: Where it came from and what runs.
        assessment: The answer layer's assessment of the answer, when the trace has one.
        palette: Styles.
        trace_name: The trace's file name (for the command line the pane suggests).
        source_note: What an imported trace's source did not record (``views.source.source_honesty``).
    """
    doc = DocBuilder(palette)
    if report is None:
        if state.error:
            doc.line(Text("Backtrack", style=palette.heading))
            doc.line(("⚠ ", palette.bad), (state.error, palette.bad), indent=2, hang=2)
        else:
            doc.line(("Tracing the provenance of the answer…", palette.dim))
        return doc.blocks
    _head(doc, report, state, trace_name)
    _convicted_section(doc, report)
    _assessment_section(doc, report, assessment)
    _verdicts_section(doc, report, state)
    if state.walk is not None:
        _walk_section(doc, state.walk)
    _suspects_section(doc, report)
    _missing_section(doc, report)
    doc.heading("Honesty")
    if source_note:
        doc.line((f"⚠ {source_note}", palette.warn), indent=2, hang=2)
    for line in report.honesty:
        doc.line((line, palette.warn if line.startswith("⚠") else palette.dim), indent=2, hang=2)
    return doc.blocks


def _head(doc: DocBuilder, report: BacktrackReport, state: PaneState, trace_name: str) -> None:
    palette = doc.palette
    link_line(
        doc,
        Jump(report.call_line, "calls"),
        Text("Backtrack ", style=palette.heading),
        (report.decided_at.label, palette.accent),
    )
    if report.target_note:  # before anything is read as the final answer's explanation
        doc.fact("⚠ target", (report.target_note, palette.bad))
    if report.read_problems.note:
        doc.fact("trace", (report.read_problems.note, palette.warn))
    doc.fact("claim", (report.claim, ""))
    doc.fact("answer", ("'" + clip(report.answer, 600) + "'", palette.accent))
    tier_style = palette.good if report.mode == "causal" else palette.warn
    doc.fact("tier", (report.mode.upper(), tier_style), "  ", (report.mode_label, palette.dim))
    doc.fact("verdicts", *_state_parts(report, state, palette))
    if state.error:
        doc.fact("⚠ stopped", (state.error, palette.bad))
        if state.hint:
            doc.fact("", (state.hint, palette.warn))
    for note in state.notes:
        doc.fact("note", (note, palette.dim))
    if not state.running:
        doc.fact(
            "keys",
            ("a", palette.key),
            " ablate suspects (seeded reruns, scripted model)  ·  ",
            ("i", palette.key),
            " ablate and bisect  ·  ",
            ("r", palette.key),
            " ablate and restore missing  ·  ",
            ("enter", palette.key),
            " jump to the highlighted row",
        )
    else:
        doc.fact(
            "keys", ("x", palette.key), " or ", ("esc", palette.key), " cancel (finished verdicts are kept)"
        )


class VerdictBlock(LinkBlock):
    """A confirmed culprit's verdict line, pinned first; ``enter`` opens the call where it landed."""


def _landed_jump(card: SuspectCard) -> Jump | None:
    """The Calls view of the call the culprit landed in (its LANDED hop, else its first hop with a line)."""
    for hop in card.chain:
        if hop.verb == "LANDED" and hop.line is not None:
            segment = _SEGMENT.search(hop.text)
            return Jump(hop.line, "calls", anchor=f"[{segment.group(1)}] " if segment else None)
    return next((Jump(hop.line, "calls") for hop in card.chain if hop.line is not None), None)


def _chain_lines(doc: DocBuilder, card: SuspectCard) -> None:
    palette = doc.palette
    for hop in card.chain:
        seq = [(f"  seq {hop.seq}", palette.dim)] if hop.seq is not None else []
        link_line(
            doc,
            hop_jump(hop),
            ("   " * hop.level, ""),
            (f"← {hop.verb:<9}", palette.key),
            (hop.text, ""),
            *seq,
            indent=7,
            hang=11,
        )


def _convicted_section(doc: DocBuilder, report: BacktrackReport) -> None:
    """Culprits that reruns confirmed, first of all (docs/backtracking.md §9): the verdict, then the chain."""
    palette = doc.palette
    convicted = [
        card for card in report.cards if card.verdict is not None and card.verdict.kind == "confirmed"
    ]
    if not convicted:
        return
    doc.heading("Convicted by reruns", ("  CAUSAL: ablating it flipped the answer", palette.dim))
    for card in convicted:
        assert card.verdict is not None
        parts = doc.compose(
            ("CONFIRMED ", palette.good),
            (card.label, palette.accent),
            (f"  {card.verdict.flips}/{card.verdict.samples} flipped  ·  ", palette.dim),
            ("enter", palette.key),
            (" opens the call where it landed", palette.dim),
        )
        jump = _landed_jump(card)
        if jump is None:
            doc.line(parts, indent=2, hang=4)
        else:
            doc.blocks.append(VerdictBlock(parts, jump, indent=2, hang=4))
        _chain_lines(doc, card)


def _confirmed(report: BacktrackReport, palette: Palette) -> list[Part]:
    """`` · CONFIRMED: injection 'x' 3/3`` for every confirmed verdict (the causal headline)."""
    found = [v for v in report.verdicts if v.verdict.kind == "confirmed"]
    if not found:
        return []
    names = ", ".join(f"{v.label} {v.verdict.flips}/{v.verdict.samples}" for v in found)
    return [" · ", ("CONFIRMED: ", palette.good), (names, palette.accent)]


def _state_parts(report: BacktrackReport, state: PaneState, palette: Palette) -> list[Part]:
    if state.running:
        total = f" of up to {state.total}" if state.total else ""
        return [("running", palette.warn), f": {state.done}{total} reruns, verdicts appear as they complete"]
    if state.origin == "saved":
        when = state.saved_at.strftime("%Y-%m-%d %H:%M UTC") if state.saved_at is not None else "?"
        status = state.saved_status or report.status
        return [
            ("SAVED", palette.accent),
            f" {state.saved_where} on {when} · {status} · {report.runs_used} reruns",
            *_confirmed(report, palette),
            ("  (press a to run them again)", palette.dim),
        ]
    if state.origin == "live":
        style = palette.good if report.status == "complete" else palette.warn
        words = f" in this session · {report.runs_used} reruns · saved {state.saved_where}"
        return [(report.status, style), words, *_confirmed(report, palette)]
    return [("none yet", palette.dim), ("  (chains and rankings only; nothing was rerun)", palette.dim)]


def _value_style(value: StatedValue, palette: Palette) -> object:
    return palette.good if value.supported else palette.bad


def _assessment_section(doc: DocBuilder, report: BacktrackReport, assessment: Assessment | None) -> None:
    palette = doc.palette
    if assessment is None:
        if report.unsupported:
            doc.heading("Unsupported values", ("  stated in the answer, held by no source", palette.dim))
            for card in report.unsupported:
                doc.line(
                    ("✗ ", palette.bad),
                    (card.text, palette.accent),
                    f"  {card.value_kind}  ",
                    (card.note, palette.dim),
                    indent=2,
                    hang=4,
                )
        return
    supported = sum(1 for item in assessment.values if item.value.supported)
    doc.heading(
        "Answer assessment",
        (
            f"  answer layer (docs §12.4): {supported} of {len(assessment.values)} value(s) supported;"
            " enter on a row jumps to it",
            palette.dim,
        ),
    )
    link_line(
        doc,
        Jump(assessment.line, "passes"),
        ("→ the answer layer's finding row", palette.dim),
        (f" (line {assessment.line})", palette.dim),
        indent=2,
    )
    if not assessment.values:
        doc.line(("the answer states no number, amount, date, id or quoted string", palette.dim), indent=2)
    for item in assessment.values:
        value = item.value
        if value.supported:
            doc.line(
                ("✓ ", palette.good),
                (value.text, palette.accent),
                (f"  {value.kind}", palette.dim),
                ("  supported by", palette.dim),
                indent=2,
            )
            for ref in item.refs:
                link_line(
                    doc, ref.jump, (f"{ref.ref:<16}", palette.key), " ", (ref.words, ""), indent=6, hang=17
                )
        else:
            doc.line(
                ("✗ ", palette.bad),
                (value.text, palette.accent),
                (f"  {value.kind}", palette.dim),
                ("  UNSUPPORTED", palette.bad),
                (
                    ": no tool result, user message, ground or declared source holds it "
                    "(the model supplied it)",
                    palette.dim,
                ),
                indent=2,
                hang=4,
            )
    if assessment.assumed:
        doc.line(
            ("Assumed", palette.key),
            ("  middleware rewrites that superseded an argument row", palette.dim),
            indent=2,
        )
        for assumed in assessment.assumed:
            if assumed.hidden:
                what: list[Part] = [("value hidden", palette.dim)]
            elif assumed.removed:
                what = [(compact_json(assumed.original), ""), " → ", ("removed", palette.bad)]
            else:
                ran = compact_json(assumed.rewritten_to)
                what = [(compact_json(assumed.original), ""), " → ", (ran, palette.warn)]
            doc.line(
                (assumed.tool_call_id, palette.accent),
                " ",
                (assumed.path, palette.key),
                "  asked ",
                *what,
                indent=4,
            )
    if assessment.stopped_early:
        doc.fact("cut short", (assessment.stopped_early, palette.warn))
    if assessment.standing_line:
        doc.fact("standing", (assessment.standing_line, ""))


def _stamp(card: SuspectCard | None, probe: ProbeVerdict | None, palette: Palette) -> list[Part]:
    verdict = card.verdict if card is not None else None
    if verdict is not None:
        if verdict.kind == "confirmed":
            return ["  ", (f"CONFIRMED · CAUSAL {verdict.flips}/{verdict.samples}", palette.good)]
        return ["  ", (f"not confirmed {verdict.flips}/{verdict.samples}", palette.dim)]
    if probe is not None:
        ablation = probe.verdict
        return ["  ", (f"inconclusive {ablation.flips}/{ablation.samples}", palette.warn)]
    return []


def _suspects_section(doc: DocBuilder, report: BacktrackReport) -> None:
    palette = doc.palette
    doc.heading(
        "Suspects",
        (
            '  CORRELATIONAL: aligned with the answer, never "because"; chains say how each got on the wire',
            palette.dim,
        ),
    )
    if not report.cards:
        doc.line(
            (
                "no suspect rode this call (only baseline context: the base prompt, the user, replies)",
                palette.dim,
            ),
            indent=2,
        )
    for card in report.cards:
        kind = f" ({card.flavor})" if card.flavor else ""
        bound = " (upper bound: no text scored)" if card.upper_bound else ""
        doc.line(
            (f"#{card.rank} ", palette.key),
            (card.label, palette.accent),
            (kind, palette.dim),
            (f"  score {card.score:.3f}{bound}", palette.dim),
            *_stamp(card, card.probe, palette),
            indent=2,
            hang=4,
        )
        if card.text:
            doc.line(("text ", palette.dim), (card.text, ""), indent=5, hang=5)
        reason = card.reason.removeprefix("rode because ")
        doc.line(("rode because ", palette.dim), (reason, ""), indent=5, hang=5)
        doc.line(("ANSWER   ", palette.key), ("'" + clip(report.answer, 80) + "'", palette.dim), indent=7)
        _chain_lines(doc, card)
    if report.folded:
        doc.line((report.folded, palette.dim), indent=2, hang=4)
    if report.score_note:
        doc.line(("⚠ ", palette.warn), (report.score_note, palette.warn), indent=2, hang=4)


def _missing_section(doc: DocBuilder, report: BacktrackReport) -> None:
    palette = doc.palette
    if not report.missing:
        return
    doc.heading("Available but not sent", ("  missing-context candidates (correlational)", palette.dim))
    for card in report.missing:
        stamp: list[Part] = []
        if card.verdict is not None:
            style = palette.good if card.verdict.kind == "confirmed" else palette.dim
            word = "CONFIRMED · CAUSAL" if card.verdict.kind == "confirmed" else "not confirmed"
            stamp = ["  ", (f"{word} {card.verdict.flips}/{card.verdict.samples}", style)]
        doc.line(
            (f"#{card.rank} ", palette.key),
            (card.label, palette.accent),
            (f"  score {card.score:.3f}", palette.dim),
            *stamp,
            indent=2,
            hang=4,
        )
        doc.line((card.reason, palette.dim), indent=5, hang=2)


def _walk_section(doc: DocBuilder, walk: Walk) -> None:
    """The walk's hops: each call it stood on, its beam's verdicts, the hop, the root and the stop."""
    palette = doc.palette
    doc.heading(
        "Walk to the root", ("  one recorded call rerun per frame (docs/backtracking.md §9.8)", palette.dim)
    )
    for number, step in enumerate(walk.steps, 1):
        doc.line(
            (f"{number}. ", palette.dim),
            (f"seq {step.call_seq}", palette.accent),
            f" iteration {step.iteration} wrote ",
            (step.output, ""),
            indent=2,
            hang=5,
        )
        recall = ", ".join(f"{label} {score:.2f}" for label, score in step.recall[:4]) or "nothing"
        doc.line(("recall ", palette.dim), (recall, ""), indent=5, hang=2)
        for verdict in step.verdicts:
            style = {"confirmed": palette.good, "inconclusive": palette.warn}.get(verdict.kind, palette.dim)
            doc.line(
                (f"{verdict.kind:<15}", style),
                (verdict.label, palette.accent),
                (f"  {verdict.flips}/{verdict.samples} flipped", style),
                indent=5,
                hang=17,
            )
        if step.writer is not None:
            link_line(
                doc,
                hop_jump(step.writer),
                ("← HOP  ", palette.accent),
                (step.writer.text, ""),
                indent=5,
                hang=7,
            )
    root = f"{walk.root} (convicted at seq {walk.root_seq})" if walk.root else "none convicted"
    doc.fact("root", (root, palette.good if walk.root else palette.warn))
    doc.fact("stop", (walk.stop, palette.accent), (f"  {walk.stop_note}", palette.dim))
    doc.fact("reruns", (f"{walk.ablations} probes, {walk.runs} reruns", ""))


def _verdicts_section(doc: DocBuilder, report: BacktrackReport, state: PaneState) -> None:
    palette = doc.palette
    doc.heading("Verdicts", ("  CAUSAL tier: seeded reruns of the recorded call, nothing else", palette.dim))
    if report.rerun_provider:
        doc.fact("reruns", (report.rerun_provider, ""))
    if report.flip_test:
        doc.fact("flip test", (report.flip_test, ""))
    if report.baseline is None and not report.verdicts and report.bisect is None:
        words = "no reruns yet: press a (ablate) or i (ablate and bisect)"
        if state.running:
            words = "reruns in progress…"
        doc.line((words, palette.dim), indent=2)
        return
    if report.baseline is not None:
        stable = report.stable_baseline
        doc.fact(
            "baseline",
            (report.baseline, ""),
            (
                "  (stable)" if stable else "  (UNSTABLE: no rerun can prove anything)",
                palette.good if stable else palette.bad,
            ),
        )
    for verdict in report.verdicts:
        ablation = verdict.verdict
        word, style = {
            "confirmed": ("CONFIRMED", palette.good),
            "not-confirmed": ("not confirmed", palette.dim),
            "inconclusive": ("inconclusive", palette.warn),
        }[ablation.kind]
        doc.line(
            (f"{word:<15}", style),
            (verdict.label, palette.accent),
            f"  {verdict.action}  ",
            (f"{ablation.flips}/{ablation.samples} flipped", style),
            indent=2,
            hang=17,
        )
        doc.line((ablation.claim, palette.dim), indent=17, hang=2)
        if ablation.kind == "confirmed" and verdict.answers:
            doc.line(("reruns answered: ", palette.dim), (" | ".join(verdict.answers), ""), indent=17, hang=2)
    if report.bisect is not None:
        bisect = report.bisect
        sets = " · ".join("[" + ", ".join(group) + "]" for group in bisect.culprits) or "no culprit set"
        style = palette.good if bisect.verdict == "confirmed" else palette.warn
        doc.fact(
            "bisect",
            (f"{bisect.verdict} ({bisect.tier})", style),
            " — culprit sets: ",
            (sets, palette.accent),
            (f"; {bisect.probes} probes, {bisect.runs_used} reruns", palette.dim),
        )
        doc.fact("", (bisect.reason, palette.dim))

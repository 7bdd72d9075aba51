"""``fpdebug backtrack TRACE``: from an answer back to the context that caused it, with causal reruns."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.backtrack.provenance import ContextPiece, Hop, MissingPiece
    from fpdebug.backtrack.report import BacktrackReport, ProbeVerdict, VerdictStamp
    from fpdebug.backtrack.session import Backtrack
    from fpdebug.backtrack.walk import Walk

HELP = "Explain an answer: the chain of every piece of context, ranked suspects, and seeded rerun verdicts."

ANSWER_LIMIT = 2000
"""Characters of the answer the text output shows; the rest is counted (``--json`` has it all)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, the call, the reruns, the provider and the output options."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file")
    parser.add_argument(
        "--call",
        type=int,
        metavar="SEQ",
        help="the llm_call to explain, by seq (default: the final answer of the last turn)",
    )
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="rerun the call without each top suspect (after a baseline): causal verdicts",
    )
    parser.add_argument(
        "--restore", action="store_true", help="rerun the call with each missing-context candidate put back"
    )
    parser.add_argument("--bisect", action="store_true", help="find the minimal sets of culprits (ddmin)")
    parser.add_argument(
        "--samples", type=int, default=3, metavar="N", help="seeded reruns per probe (at least 2; default 3)"
    )
    parser.add_argument(
        "--provider",
        choices=("scripted", "anthropic", "openai", "openai-responses"),
        help="the model reruns use: the run's scripted model (default), or a live one "
        "(only when named here, with --model)",
    )
    parser.add_argument("--model", metavar="M", help="the live model to rerun with")
    parser.add_argument(
        "--module",
        metavar="PATH_OR_MODULE",
        help="the agent module (a .py path or a dotted module) whose scripted model reruns "
        "use, when the run came from your own module: fpdebug imports only a module "
        "named here, never one because the trace names it (built-in scenarios need "
        "nothing); it must have the module name the trace recorded (a file's name "
        "without .py, a dotted module's last part: ~/agents/login.py matches "
        "agents/login.py and agents.login)",
    )
    parser.add_argument(
        "--force-module",
        action="store_true",
        help="rerun with --module even though the trace recorded another module",
    )
    parser.add_argument("--base-url", metavar="URL", help="another endpoint for the live provider")
    parser.add_argument(
        "--flip-test",
        choices=("auto", "exact", "normalized", "similarity"),
        default="auto",
        help="how a rerun's answer counts as changed (default auto: normalized text for "
        "short answers, lexical similarity < 0.8 for long ones)",
    )
    parser.add_argument(
        "--max-probes", type=int, default=24, metavar="N", help="the bisection's probe budget (default 24)"
    )
    parser.add_argument(
        "--walk",
        action="store_true",
        help="walk from the call back to its root: recall, a beam ablated per frame, hop along the "
        "writer to the producing call (docs/backtracking.md §9.8)",
    )
    parser.add_argument(
        "--beam", type=int, default=2, metavar="N", help="sources the walk ablates per frame (default 2)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="do not append the report and verdicts to TRACE.backtrack.jsonl",
    )


def run(args: argparse.Namespace) -> int:
    """Explain the call, rerun it as asked, print the report.

    Exit 0; 1 when the call explained by default is not the final answer as recorded (its record is
    unreadable, torn, failed or missing, or a later call is unreadable: the report says which, and
    ``--call SEQ`` picks another); errors exit 2 through cli.main.
    """
    from fpdebug.commands import collector_paused
    from fpdebug.errors import BacktrackError

    if args.samples < 2:
        raise BacktrackError(
            f"--samples must be at least 2 (a causal verdict needs N ≥ 2), got {args.samples}"
        )
    if args.model and args.provider in (None, "scripted"):
        raise BacktrackError("--model names a live model: pass --provider anthropic or --provider openai too")
    if args.max_probes < 1:
        raise BacktrackError(f"--max-probes must be at least 1, got {args.max_probes}")
    if args.beam < 1:
        raise BacktrackError(f"--beam must be at least 1, got {args.beam}")
    if args.force_module and not args.module:
        raise BacktrackError("--force-module needs the module to load (--module PATH_OR_MODULE)")
    trace = Path(args.trace)
    reruns = args.ablate or args.restore or args.bisect
    progress = _progress if reruns and sys.stderr.isatty() else None
    # Without reruns the work is one sweep that builds long-lived objects and no cycles (issue 22);
    # reruns run the engine, whose garbage the collector should keep collecting.
    with contextlib.nullcontext() if reruns else collector_paused():
        result = _explain(trace, args, progress)
    if progress is not None:
        print(file=sys.stderr)
    walk = _walk(trace, args) if args.walk else None
    source_note = _source_note(trace)
    if args.json:
        data = _as_json(result, source_note)
        if walk is not None:
            data["walk"] = walk.model_dump(mode="json", exclude_none=True)
        print(json.dumps(data, indent=2, ensure_ascii=True))
    else:
        sys.stdout.write(render(result, source_note=source_note))
        if walk is not None:
            sys.stdout.write(render_walk(walk))
    return 1 if result.report.target_note else 0


def _walk(trace: Path, args: argparse.Namespace) -> Walk:
    from fpdebug.backtrack.walk import walk_to_root
    from fpdebug.demo import recorded_module_loader

    return walk_to_root(
        trace,
        seq=args.call,
        samples=args.samples,
        beam=args.beam,
        flip_test=args.flip_test,
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        load_module=recorded_module_loader(trace, module=args.module, force=args.force_module),
    )


def render_walk(walk: Walk) -> str:
    """The walk as text: one block per frame it stood on, then the root and why it stopped."""
    from fpdebug.trace.inert import inert_line

    lines = ["", f"walk to the root (docs/backtracking.md §9.8): from llm_call seq {walk.symptom_seq}"]
    for number, step in enumerate(walk.steps, 1):
        turn = f"turn {step.turn}, " if step.turn is not None else ""
        lines.append(
            f"  {number}. seq {step.call_seq} ({turn}iteration {step.iteration}) wrote {bounded(step.output, 80)}"
        )
        recall = ", ".join(f"{label} {score:.2f}" for label, score in step.recall[:4]) or "nothing"
        lines.append(f"     recall ({step.narrowed_by}): {recall}")
        if step.baseline_flips is not None:
            samples = step.verdicts[0].samples if step.verdicts else 0
            lines.append(f"     baseline: {step.baseline_flips}/{samples} flipped with no ablation")
        lines += [f"     {verdict.claim}" for verdict in step.verdicts]
        if step.writer is not None:
            lines.append(f"     ← HOP     {step.writer.text}  [seq {step.writer.seq}]")
    root = f"{walk.root} (convicted at seq {walk.root_seq})" if walk.root else "none convicted"
    lines.append(f"  root: {root}")
    lines.append(f"  stop: {walk.stop}: {walk.stop_note}")
    lines.append(f"  {walk.ablations} probes, {walk.runs} reruns (each replays one recorded call)")
    return "".join(inert_line(line) + "\n" for line in lines)


def _explain(trace: Path, args: argparse.Namespace, progress: Callable[[int, int], None] | None) -> Backtrack:
    from fpdebug.backtrack.session import backtrack
    from fpdebug.demo import recorded_module_loader

    return backtrack(
        trace,
        seq=args.call,
        ablate=args.ablate,
        restore=args.restore,
        bisect=args.bisect,
        samples=args.samples,
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        load_module=recorded_module_loader(trace, module=args.module, force=args.force_module),
        flip_test=args.flip_test,
        max_probes=args.max_probes,
        save=not args.no_save,
        progress=progress,
    )


def _progress(done: int, total: int) -> None:
    print(f"\r  reruns {done}/{total}", end="", file=sys.stderr, flush=True)


def _source_note(trace: Path) -> str | None:
    """What an imported trace's source did not record (``None`` for fpdebug's own traces)."""
    from fpdebug.trace.reader import TraceReader
    from fpdebug.views.source import import_source, source_honesty

    with TraceReader(trace, index=False) as reader:
        return source_honesty(import_source(reader))


def _as_json(result: Backtrack, source_note: str | None = None) -> dict[str, object]:
    context = [
        {
            "id": piece.id,
            "kind": piece.kind,
            "source": piece.source,
            "injection_id": piece.injection_id,
            "tool_name": piece.tool_name,
            "tool_call_id": piece.tool_call_id,
            "reason": piece.reason,
            "suspect": piece.suspect_id,
            "chain": [hop.model_dump(mode="json", exclude_none=True) for hop in piece.chain],
        }
        for piece in result.provenance.pieces
    ]
    missing = [
        candidate.model_dump(mode="json", exclude_none=True) for candidate in result.provenance.missing
    ]
    report = result.report.model_dump(mode="json", exclude_none=True)
    report["honesty"] = ([f"⚠ {source_note}"] if source_note else []) + result.report.honesty
    extra: dict[str, object] = {}
    if result.live_calls is not None:
        live = result.live_calls
        extra["live_calls"] = {
            "provider": live.provider,
            "calls": live.calls,
            "input_tokens": live.input_tokens,
            "output_tokens": live.output_tokens,
            "tokens": live.tokens,
            "tokens_per_rerun": round(live.per_rerun, 1),
        }
    return {
        **extra,
        "report": report,
        "context": context,
        "available_not_sent": missing,
        "sidecar": str(result.sidecar) if result.sidecar is not None else None,
    }


# ----------------------------------------------------------------------------------------------
# Text


def render(result: Backtrack, *, source_note: str | None = None) -> str:
    """The report as text; every line passes through ``inert_line`` (trace text is untrusted).

    ``source_note``: what an imported trace's source did not record, first of the honesty lines."""
    from fpdebug.trace.inert import inert_line

    report = result.report
    lines: list[str] = []
    lines += _header(report)
    lines += ["", f"context that rode {report.decided_at.label}: correlational, how each piece got there"]
    lines += [
        f"  {_where(piece):<16} {_what(piece):<40} {piece.reason}" for piece in result.provenance.pieces
    ]
    lines += _suspects(report)
    lines += _missing(report, result.provenance.missing)
    lines += _verdicts(report)
    if result.live_calls is not None:
        lines += ["", f"live calls (sent to {result.live_calls.provider})", f"  {result.live_calls.words()}"]
    lines += _assessment(report)
    lines += ["", "honesty"]
    if source_note:
        lines.append(f"  ⚠ {source_note}")
    lines += [f"  {line}" for line in report.honesty]
    if result.sidecar is not None:
        lines += ["", f"saved to {result.sidecar}"]
    return "".join(inert_line(line) + "\n" for line in lines)


def _suspects(report: BacktrackReport) -> list[str]:
    lines = ["", 'suspects (correlational: aligned with the answer, never "because")']
    if not report.cards:
        lines.append("  none: nothing engineered rode this call (only the base prompt, the user and replies)")
    for card in report.cards:
        bound = " (upper bound: no text to score)" if card.upper_bound else ""
        stamp = _card_stamp(card.verdict, card.probe)
        flavor = f" ({card.flavor})" if card.flavor and card.kind != "tool" else ""
        lines.append(f"  #{card.rank} {card.label}{flavor}  score {card.score:.3f}{bound}{stamp}")
        if card.text:
            lines.append(f"     text: {card.text}")
        lines.append(f"     {card.reason}")
        lines += _chain(report.answer, card.chain)
    if report.folded:
        lines.append(f"  {report.folded}")
    if report.score_note:
        lines.append(f"  ⚠ {report.score_note}")
    return lines


def _missing(report: BacktrackReport, candidates: list[MissingPiece]) -> list[str]:
    lines = ["", "available but not sent (missing-context candidates, correlational)"]
    if not candidates:
        lines.append("  none")
    ranked = {card.source: card for card in report.missing}
    for candidate in candidates:
        card = ranked.get(candidate.id)
        name = candidate.injection_id or candidate.tool_name or candidate.id
        stamp = _card_stamp(card.verdict, card.probe) if card is not None else ""
        restorable = "" if candidate.restorable else " (cannot be restored)"
        # A detail that starts with its reason ("parked: its map is parked") is not prefixed twice.
        why = (
            candidate.detail
            if candidate.detail.startswith(candidate.reason)
            else (f"{candidate.reason}: {candidate.detail}")
        )
        lines.append(f"  {candidate.kind} '{name}' — {why}{restorable}{stamp}")
    return lines


def _verdicts(report: BacktrackReport) -> list[str]:
    if report.rerun_provider is not None and report.baseline is None and report.bisect is None:
        return ["", "verdicts: nothing to rerun (no suspect or missing piece that a rerun can apply)"]
    if report.baseline is None and report.bisect is None:
        return []
    lines = ["", "verdicts (causal tier: seeded reruns of the recorded call)"]
    lines.append(f"  reruns: {report.rerun_provider}; flip test: {report.flip_test}")
    if report.baseline is not None:
        stable = "stable" if report.baseline_flips == 0 else "UNSTABLE"
        lines.append(f"  baseline: {report.baseline} ({stable})")
    for verdict in report.verdicts:
        lines.append(f"  {verdict.verdict.claim}")
        if verdict.verdict.kind != "not-confirmed" and verdict.answers:
            lines.append(f"     reruns answered: {' | '.join(verdict.answers)}")
    if report.bisect is not None:
        bisect = report.bisect
        sets = " · ".join("[" + ", ".join(group) + "]" for group in bisect.culprits) or "none"
        lines.append(
            f"  bisect: {bisect.verdict} ({bisect.tier}) — culprit sets: {sets}; "
            f"{bisect.probes} probes, {bisect.runs_used} reruns"
        )
        lines.append(f"     {bisect.reason}")
    if report.status == "cancelled":
        lines.append("  cancelled: the verdicts above are the ones that finished")
    return lines


def _assessment(report: BacktrackReport) -> list[str]:
    if not report.assessed and not report.unsupported:
        return []
    lines = ["", "answer assessment (answer layer)"]
    if not report.unsupported:
        lines.append("  every value the answer states has a source")
    for value in report.unsupported:
        lines.append(f"  unsupported-value {value.text!r} ({value.value_kind}): {value.note}")
    return lines


def _header(report: BacktrackReport) -> list[str]:
    agent = f", agent {report.agent}" if report.agent else ""
    lines = [f"backtrack {report.trace} (run {report.run_id}{agent}, model {report.model})"]
    if report.target_note:  # first, before anything is read as the final answer's explanation
        lines.append(f"⚠ target: {report.target_note}")
    if report.read_problems.note:
        lines.append(f"trace:  {report.read_problems.note}")
    return [
        *lines,
        f"claim:  {report.claim}",
        f"tier:   {report.mode_label}",
        f"answer: {report.decided_at.label} answered",
        f"        {bounded(report.answer)}",
    ]


def bounded(answer: str, limit: int = ANSWER_LIMIT) -> str:
    """The answer quoted, at most ``limit`` characters of it, then how many more there are."""
    if len(answer) <= limit:
        return repr(answer)
    return f"{answer[:limit]!r} … ({len(answer) - limit} more characters)"


def _chain(answer: str, chain: list[Hop]) -> list[str]:
    shown = answer if len(answer) <= 80 else answer[:79] + "…"
    lines = [f"       ANSWER   {shown!r}"]
    for hop in chain:
        seq = f"  [seq {hop.seq}]" if hop.seq is not None else ""
        lines.append(f"     {'   ' * hop.level}  ← {hop.verb:<8} {hop.text}{seq}")
    return lines


def _where(piece: ContextPiece) -> str:
    slot = {"system-prompt": "system-prompt", "messages": "message", "tools": "tool"}[piece.slot]
    return f"{slot} {piece.position + 1}"


def _what(piece: ContextPiece) -> str:
    if piece.kind in ("injection", "memory", "park-card"):
        return f"{piece.source} '{piece.injection_id}'"
    if piece.kind == "tool-result":
        return f"result of `{piece.tool_name}` {piece.tool_call_id or ''}".rstrip()
    if piece.kind == "tool-schema":
        owner = f" of '{piece.injection_id}'" if piece.injection_id else ""
        return f"tool `{piece.tool_name}`{owner}"
    return piece.kind


def _card_stamp(verdict: VerdictStamp | None, probe: ProbeVerdict | None) -> str:
    # Inconclusive probes carry no stamp (docs/backtracking.md §9.9), but the text still says a probe ran.
    if verdict is not None:
        words = "CAUSAL" if verdict.kind == "confirmed" else "not confirmed"
        return f"   [{words} {verdict.flips}/{verdict.samples}]"
    if probe is not None:
        return f"   [inconclusive {probe.verdict.flips}/{probe.verdict.samples}]"
    return ""

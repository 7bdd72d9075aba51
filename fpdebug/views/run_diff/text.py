"""The run diff in words, for a terminal: every string from a trace goes through ``inert_line``."""

from __future__ import annotations

from fpdebug.trace.inert import inert_line as safe
from fpdebug.views.run_diff.model import Difference, Point, RunDiff, RunSide, Stage

STAGE_WORDS: dict[Stage, str] = {
    "declared": "declaration",
    "turn": "turn start",
    "context": "context pass",
    "request": "request",
    "response": "response",
    "tools": "tool results",
    "end": "end",
}
"""How each stage is named on screen."""

_SUMMARY_ITEMS = 4  # differences named per stage in a consequence line


def _side_line(name: str, side: RunSide) -> str:
    source = "" if side.source == "fpdebug" else f", imported from {side.source}"
    return (
        f"{name}: {safe(side.path)} run {side.number} of {side.runs} ({safe(side.run_id)}): {side.status}, "
        f"{side.turns} turn(s), {side.iterations} iteration(s){source}"
    )


def _name(difference: Difference) -> str:
    """``injection tone``; just ``model`` when the subject only repeats the kind."""
    if difference.subject.replace("_", "-").replace(" ", "-") == difference.kind:
        return difference.kind
    return f"{difference.kind} {safe(difference.subject)}"


def difference_lines(difference: Difference, indent: str = "  ") -> list[str]:
    """One difference: what it is, what each run has, why, and its line diff."""
    lines = [f"{indent}{_name(difference)}"]
    lines.append(f"{indent}  A: {safe(difference.a) if difference.a is not None else '—'}")
    lines.append(f"{indent}  B: {safe(difference.b) if difference.b is not None else '—'}")
    if difference.why:
        lines.append(f"{indent}  why: {safe(difference.why)}")
    lines.extend(f"{indent}  | {safe(line)}" for line in difference.detail)
    return lines


def point_summary(point: Point) -> str:
    """A point in one line: ``identical``, or each stage with what differs there."""
    if point.identical:
        return "identical"
    if point.present != "both":
        only = point.differences[0]
        words = only.a if point.present == "a" else only.b
        return f"only in {point.present.upper()}: {safe(words or '')}"
    parts = []
    for stage in STAGE_WORDS:
        # One name per thing that differs ("message user message ×2": one in each request).
        counts: dict[str, int] = {}
        for difference in point.differences:
            if difference.stage == stage:
                name = _name(difference)
                counts[name] = counts.get(name, 0) + 1
        if not counts:
            continue
        named = [name if n == 1 else f"{name} ×{n}" for name, n in list(counts.items())[:_SUMMARY_ITEMS]]
        if len(counts) > _SUMMARY_ITEMS:
            named.append(f"{len(counts) - _SUMMARY_ITEMS} more")
        parts.append(f"{STAGE_WORDS[stage]}: {', '.join(named)}")
    return "; ".join(parts)


def render(diff: RunDiff) -> str:
    """The whole diff as text (what ``fpdebug diff`` prints)."""
    lines = [_side_line("A", diff.a), _side_line("B", diff.b)]
    lines += [f"note: {safe(note)}" for note in diff.notes]
    if diff.identical:
        lines.append(f"identical: the two runs agree at every point ({len(diff.points)} compared)")
        return "\n".join(lines)
    if diff.declared:
        lines += ["", "declared differently (run_start):"]
        for difference in diff.declared:
            lines += difference_lines(difference)
    first = diff.first
    if first is None:
        lines += ["", "no pass differs: the runs behave alike, only their declarations differ"]
        return "\n".join(lines)
    stage = first.first_stage
    assert stage is not None
    lines += ["", f"first divergence: {first.label}, {STAGE_WORDS[stage]}"]
    for difference in first.differences:
        if difference.stage == stage:
            lines += difference_lines(difference)
    rest = [d for d in first.differences if d.stage != stage]
    if rest:
        lines += ["", f"then, on the same pass ({first.label}):"]
        for difference in rest:
            lines += difference_lines(difference)
    consequences = diff.consequences()
    if consequences:
        width = max(len(point.label) for point in consequences)
        lines += ["", "consequences, pass by pass:"]
        lines += [f"  {point.label:<{width}}  {point_summary(point)}" for point in consequences]
    return "\n".join(lines)

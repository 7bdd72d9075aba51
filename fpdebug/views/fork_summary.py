"""The summary a finished fork prints (``fpdebug fork``; the debugger can show the same lines).

Deliberately short: the fork's trace, where it forked and with which edits, how it ended, both final
answers, and the first call whose request differs. The full comparison is ``fpdebug diff PARENT
FORK``, which the summary names.
"""

from __future__ import annotations

import shlex

from fpdebug.backtrack.fork_run import ForkOutcome
from fpdebug.trace.cost import CostTotal, call_cost
from fpdebug.trace.inert import inert_line

__all__ = ["ANSWER_LIMIT", "outcome_lines"]

ANSWER_LIMIT = 300
"""Characters of each final answer the summary shows."""


def _answer(text: str) -> str:
    shown = inert_line(text) if text else "(no final answer)"
    return shown if len(shown) <= ANSWER_LIMIT else shown[: ANSWER_LIMIT - 1] + "…"


def outcome_lines(outcome: ForkOutcome, *, parent: str) -> list[str]:
    """The summary: the fork trace, its point and edits, how it ended, the answers, the first difference."""
    point = outcome.point
    result = outcome.result
    edits = "; ".join(inert_line(e.describe()) for e in outcome.edits)
    lines = [
        f"fork: {inert_line(str(outcome.path))}",
        f"parent: {inert_line(parent)} run {inert_line(point.run_id)}, forked at pass {point.at_pass} of turn "
        f"{point.turn} ({point.before} call{'s' if point.before != 1 else ''} replayed); edits: {edits}",
        f"continued on {outcome.continuation}: run {inert_line(result.run_id)} {result.status}, "
        f"{len(outcome.calls)} call(s)",
    ]
    if result.error is not None:
        lines.append(f"  {inert_line(result.error.type)}: {inert_line(result.error.message)}")
    lines.append(f"parent's final answer: {_answer(outcome.parent_answer)}")
    lines.append(f"fork's final answer:   {_answer(result.content or '')}")
    first = outcome.first_difference()
    if first is None:
        lines.append("first difference: none (every request is the parent's)")
    else:
        where = f"turn {first.turn}, pass {first.iteration}" if first.turn is not None else "?"
        lines.append(f"first difference: call {first.call} ({where}): {inert_line(first.what)}")
    if outcome.live:
        lines.append(f"cost of the live calls: {_live_cost(outcome)}")
    lines.append(f"see `fpdebug diff {shlex.quote(parent)} {shlex.quote(str(outcome.path))}`")
    return lines


def _live_cost(outcome: ForkOutcome) -> str:
    calls = outcome.live_calls()
    costs = [call_cost(call) for call in calls]
    total = CostTotal.of(costs)
    # The one usage definition (cache reads and writes count as input), as `fpdebug summary` counts.
    tokens = sum(cost.tokens.input_total + cost.tokens.output for cost in costs)
    return f"{total.text()} over {len(calls)} call(s), {tokens} tokens"

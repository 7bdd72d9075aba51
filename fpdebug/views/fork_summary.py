"""The summary a finished fork prints (``fpdebug fork``; the debugger can show the same lines).

Deliberately short: the fork's trace, where it forked and with which edits, how it ended, both final
answers, and the first call whose request differs. The full comparison is ``fpdebug diff PARENT
FORK``, which the summary names.
"""

from __future__ import annotations

import math
import shlex
from datetime import UTC, datetime

from fpdebug.backtrack.fork import ForkPoint
from fpdebug.backtrack.fork_run import ForkOutcome
from fpdebug.trace.cost import CostTotal, TokenCounts, call_cost, price_tokens, usage_of
from fpdebug.trace.inert import inert_line

__all__ = ["ANSWER_LIMIT", "live_cost_estimate", "outcome_lines"]

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


def live_cost_estimate(point: ForkPoint, provider: str, model: str) -> str:
    """What a live continuation would cost, before it runs: the parent's calls from the fork point on,
    priced at ``provider``/``model`` today.

    Each call's tokens are the parent's recorded usage when it has one, else ``len(request JSON) / 4``
    (a scripted parent reports none): an estimate, since the fork's calls differ from the parent's.
    """
    calls = point.calls[point.before :]
    if not model.strip():
        return "no estimate: name the model"
    costs = []
    tokens_seen = 0
    for call in calls:
        usage = call.response.usage if call.response is not None else None
        if usage is not None and usage.total_input_tokens(call.provider):
            tokens = usage_of(call.provider, usage)
        else:
            tokens = TokenCounts(math.ceil(len(call.request.model_dump_json()) / 4), 0, 0, 0, None)
        tokens_seen += tokens.input_total + tokens.output
        costs.append(price_tokens(provider, model, tokens, datetime.now(UTC)))
    total = CostTotal.of(costs)
    count = f"{len(calls)} call{'' if len(calls) == 1 else 's'}"
    if not total.known:
        return f"no estimate: {inert_line(model)} has no price in the table ({count}, ~{tokens_seen} tokens)"
    return f"about {total.text()} for {count} (~{tokens_seen} tokens, as the parent's calls from pass {point.at_pass} on)"

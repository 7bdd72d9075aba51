"""Cost in the pass inspector: each active injection's share of the call and the run, and a call's cost.

The shares are by characters (fpdebug/trace/cost.py): an estimate without a tokenizer.
"""

from __future__ import annotations

from fpdebug.trace.cost import call_cost, format_dollars, injection_shares
from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import LlmCallEvent
from fpdebug.tui.costs import run_costs
from fpdebug.tui.text import clip, number
from fpdebug.tui.widgets.document import DocBuilder
from fpdebug.views.session import TraceSession

__all__ = ["call_cost_text", "injection_cost_section"]


def call_cost_text(call: LlmCallEvent) -> str:
    """One call's cost: dollars, ``unknown price`` or ``no price: scripted`` (never $0 for no price)."""
    cost = call_cost(call)
    if cost.dollars is None:
        return cost.unpriced or "unknown price"
    return format_dollars(cost.dollars)


def injection_cost_section(
    doc: DocBuilder, session: TraceSession, iteration: Iteration, active: list[str]
) -> None:
    """What each active injection's segments took of this call and of the whole run (by characters)."""
    run = session.run_of(iteration)
    calls = [(line, session.record(line)) for line in iteration.llm_lines]
    if run is None or not calls:
        return
    palette = doc.palette
    costs = run_costs(session, run)
    here: dict[str, float] = {}
    for line, call in calls:
        if not isinstance(call, LlmCallEvent):
            continue
        cost = costs.calls.get(line) or call_cost(call)
        for injection_id, share in injection_shares(call.request, cost).items():
            here[injection_id] = here.get(injection_id, 0.0) + share.tokens
    doc.heading(
        "Context cost",
        (
            "  ≈ input tokens by the segments' share of the request's characters: this call · the run",
            palette.dim,
        ),
    )
    rows = [id_ for id_ in active if id_ in here or id_ in costs.injections]
    if not rows:
        doc.line(("no active injection put text in the request", palette.dim), indent=2)
    width = min(max((len(id_) for id_ in rows), default=4), 26)
    for id_ in rows:
        total = costs.injections.get(id_)
        across = f"≈{number(round(total.tokens))} tokens, {total.cost.text()}" if total is not None else "—"
        doc.line(
            (f"{clip(id_, width):<{width}}", palette.accent),
            f"  ≈{number(round(here.get(id_, 0.0)))} · ",
            (across, palette.key),
            indent=2,
        )

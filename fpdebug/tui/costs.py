"""A run's costs for the debugger's header, call view and pass inspector (fpdebug/trace/cost.py).

Pricing a run reads every ``llm_call`` record of it, so the result is kept per session and run and
recomputed only when the run has grown (a followed file, a live run).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from fpdebug.trace.cost import RunCosts, costs_of
from fpdebug.trace.model import Run
from fpdebug.views.session import TraceSession

__all__ = ["run_costs"]

_CACHE: WeakKeyDictionary[TraceSession, dict[str, tuple[int, RunCosts]]] = WeakKeyDictionary()


def run_costs(session: TraceSession, run: Run) -> RunCosts:
    """The run's calls priced: per call line, iteration, turn, the run, and per injection."""
    per_session = _CACHE.setdefault(session, {})
    cached = per_session.get(run.run_id)
    if cached is not None and cached[0] == run.last_line:
        return cached[1]
    lines = [line for iteration in run.iterations() for line in iteration.llm_lines]
    costs = costs_of((line, session.record(line)) for line in lines)
    per_session[run.run_id] = (run.last_line, costs)
    return costs

"""Cheap per-iteration facts for timeline rows, read from raw lines with orjson (no pydantic models).

The timeline shows a row per iteration. Most of a row comes from the model's compact facts
(:class:`~fpdebug.trace.model.Iteration`); the few facts the model does not keep (how many
injections were active, which maps are parked, whether a call failed) are peeked from the raw
lines of the rows on screen with ``orjson``, defensively: a field of the wrong type counts as
absent, never as an error.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from fpdebug.trace.model import Iteration, RunModel
from fpdebug.trace.reader import TraceReader

__all__ = ["BADGES", "RowFacts", "badges_of", "invalid_near", "row_facts"]

BADGES: tuple[str, ...] = (
    "grant",
    "prune",
    "park",
    "reengage",
    "conflict",
    "rejected",
    "superseded",
    "error",
    "invalid",
    "refused",
    "unsupported",
    "beyond",
    "nudge",
    "wrapup",
    "ask",
    "retry",
    "budget",
    "compact",
    "proposal",
    "declined",
)
"""Every badge a timeline row can show, in display order."""


@dataclass(frozen=True, slots=True)
class RowFacts:
    """What a timeline row needs beyond the model's compact facts."""

    active: int | None = None
    """How many injections were active on the pass (``None``: no readable pass record)."""
    evaluated: int | None = None
    """How many injections were evaluated."""
    parked_maps: tuple[str, ...] | None = None
    """Maps parked after the pass (``None``: the kernel is not mounted or no engagement record)."""
    errors: int = 0
    """Failed LLM calls and tool calls of the iteration."""
    prune_reasons: tuple[str, ...] = ()
    """The reasons of the leases pruned in this iteration, in record order."""
    unsupported: int = 0
    """Values the answers assessed in this iteration state that no source supports (docs/honesty.md §12.4)."""
    proposals: int = 0
    """Route proposals the iteration's batch had accepted (honoured by the next pass)."""
    declined: bool = False
    """The pass's cursor move was a model pick that declined the menu left to it (docs/context-model.md §5.1)."""
    asks: int = 0
    """Arguments the inputs layer put to the user in this iteration (docs/honesty.md §12.7)."""
    beyond_now: int = 0
    """Results the results layer judged here whose call window ends after the turn's clock
    (``beyond_now``, docs/honesty.md §12.6)."""


def _load(reader: TraceReader, line: int | None) -> dict[str, object] | None:
    if line is None:
        return None
    try:
        data = orjson.loads(reader.raw(line))
    except (orjson.JSONDecodeError, IndexError):
        return None
    return data if isinstance(data, dict) else None


def row_facts(reader: TraceReader, iteration: Iteration) -> RowFacts:
    """Peek the pass, engagement, call, tool and prune lines of one iteration.

    Args:
        reader: Where the lines are.
        iteration: The iteration (its line numbers come from the model).
    """
    active = evaluated = None
    record = _load(reader, iteration.pass_line)
    if record is not None:
        ids = record.get("active_ids")
        active = len(ids) if isinstance(ids, list) else None
        total = record.get("evaluated_total")
        evaluated = total if type(total) is int else None
    parked: tuple[str, ...] | None = None
    record = _load(reader, iteration.engagement_line)
    if record is not None and isinstance(records := record.get("records"), list):
        parked = tuple(
            str(item.get("map_id"))
            for item in records
            if isinstance(item, dict) and item.get("standing") == "parked"
        )
    errors = proposals = 0
    for line in (*iteration.llm_lines, *iteration.tool_result_lines):
        record = _load(reader, line)
        if record is not None and isinstance(record.get("error"), dict):
            errors += 1
        if record is not None and isinstance(effects := record.get("effects"), list):
            proposals += sum(1 for e in effects if isinstance(e, dict) and _accepted_proposal(e))
    reasons: list[str] = []
    for line in iteration.lease_prune_lines:
        record = _load(reader, line)
        if record is not None and isinstance(pruned := record.get("pruned"), list):
            reasons.extend(str(item.get("reason")) for item in pruned if isinstance(item, dict))
    record = _load(reader, iteration.cursor_line)
    declined = record is not None and record.get("declined_offer") is True
    unsupported, asks, beyond = _finding_counts(reader, iteration)
    return RowFacts(
        active,
        evaluated,
        parked,
        errors,
        tuple(reasons),
        unsupported,
        proposals,
        declined,
        asks,
        beyond,
    )


def _finding_counts(reader: TraceReader, iteration: Iteration) -> tuple[int, int, int]:
    """How many values the answer layer's assessments of this iteration marked unsupported, how many
    arguments the inputs layer asked the user for, and how many results the results layer's rows
    here marked ``beyond_now``."""
    unsupported = asks = beyond = 0
    for line in iteration.finding_lines:
        record = _load(reader, line)
        if record is None or not isinstance(rows := record.get("rows"), list):
            continue
        layer = record.get("layer")
        for row in rows:
            if not isinstance(row, dict):
                continue
            if layer == "results" and row.get("beyond_now") is True:
                beyond += 1
            if layer == "inputs" and row.get("row") == "ask":
                asks += 1
            values = row.get("values") if layer == "answer" and row.get("row") == "assessment" else None
            if isinstance(values, list):
                unsupported += sum(1 for v in values if isinstance(v, dict) and v.get("supported") is False)
    return unsupported, asks, beyond


def _accepted_proposal(effect: dict[str, object]) -> bool:
    return effect.get("kind") == "propose-transition" and effect.get("outcome") == "accepted"


def invalid_near(model: RunModel, iteration: Iteration, *, found: Sequence[int] = ()) -> int:
    """How many invalid or opaque lines lie in or right next to the iteration's lines.

    Args:
        model: For the lines it found invalid or opaque.
        iteration: The iteration.
        found: More invalid lines, sorted (lines the model took as events, found invalid when
            validated in full).
    """
    if not len(iteration):
        return 0
    low, high = iteration.first_line - 1, iteration.last_line + 1
    return (
        _count_between(model.invalid_lines, low, high)
        + _count_between(model.opaque_lines, low, high)
        + _count_between(found, low, high)
    )


def _count_between(lines: Sequence[int], low: int, high: int) -> int:
    # The model appends these in line order, so they are sorted.
    start = bisect_left(lines, low)
    end = bisect_left(lines, high + 1)
    return max(end - start, 0)


def badges_of(
    model: RunModel, iteration: Iteration, facts: RowFacts, *, found: Sequence[int] = ()
) -> list[str]:
    """The badges of a timeline row, in :data:`BADGES` order.

    Args:
        model: For the invalid and opaque lines.
        iteration: The iteration's compact facts.
        facts: The peeked facts of the same iteration.
        found: More invalid lines, sorted (see :func:`invalid_near`).
    """
    changes = {note.change for note in iteration.engagement_changes}
    shown = {
        "grant": iteration.has("lease_grant"),
        "prune": iteration.has("lease_prune"),
        "park": "parked" in changes,
        "reengage": "reengaged" in changes,
        "conflict": iteration.has("route_conflict"),
        "rejected": iteration.has("skill_rejected"),
        "superseded": iteration.has("reroute_superseded"),
        "error": facts.errors > 0,
        "invalid": invalid_near(model, iteration, found=found) > 0,
        "refused": _refused_here(model, iteration),
        "unsupported": facts.unsupported > 0,
        "beyond": facts.beyond_now > 0,
        "nudge": iteration.has("steps_unfinished"),
        "wrapup": iteration.has("wrap_up"),
        "ask": facts.asks > 0,
        "retry": iteration.has("output_retry"),
        "budget": _ended_on_budget(model, iteration),
        "compact": iteration.has("compact"),
        "proposal": facts.proposals > 0,
        "declined": facts.declined,
    }
    return [name for name in BADGES if shown[name]]


def _ended_on_budget(model: RunModel, iteration: Iteration) -> bool:
    """Whether this iteration gave its turn's final reply, and the cost budget had cut the turn."""
    run = model.run(iteration.run_id)
    turn = run.turn(iteration.turn) if run is not None else None
    return (
        turn is not None and turn.stopped_early == "cost-budget" and turn.iteration_count == iteration.number
    )


def _refused_here(model: RunModel, iteration: Iteration) -> bool:
    """Whether this iteration gave its turn's final reply, and that reply was a refusal."""
    run = model.run(iteration.run_id)
    turn = run.turn(iteration.turn) if run is not None else None
    return turn is not None and turn.refusal is not None and turn.iteration_count == iteration.number

"""The pieces of an imported pass: its cursor move, skipped rows, slots, delta and engagement changes.

Each function reads one part of a ``context.evaluated`` payload (or the iteration's injected context
and ``map.*`` events) and returns the fpdebug sub-records of docs/trace-contract.md §8.3 and §8.6.
A value the recording holds in a shape this contract cannot hold is left out with a warning.
"""

from __future__ import annotations

import json
from typing import Any

from fpdebug.engine.engagement import strength_of_move
from fpdebug.ingest.agentfootprint_source import ENGINEERED, obj, payloads, text
from fpdebug.trace.schema import (
    EngagementChange,
    EngagementPassFacts,
    PassDelta,
    Skipped,
    SlotDelta,
    SlotEntry,
    SlotRouting,
    Witness,
)

__all__ = [
    "cursor_fields",
    "engagement_changes",
    "member_tools",
    "pass_facts",
    "skipped",
    "slot_delta",
    "slots",
    "withheld_tools",
]

_SKIP_REASONS = frozenset({"predicate-threw", "unknown-trigger-kind", "unknown-fact", "parked"})
_STRENGTHS = frozenset({"explicit", "structural", "semantic", "lexical", "assumed"})


def cursor_fields(move: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``cursor_move`` from a ``cursorMove`` (its strength is fpdebug's ``strength_of_move``)."""
    by = text(move.get("by"))
    witness = move.get("witness")
    closed = move.get("guardsClosed")
    score, offered = move.get("score"), move.get("offered")
    return {
        "from_skill": move.get("from") if isinstance(move.get("from"), str) else None,
        "to_skill": move.get("to") if isinstance(move.get("to"), str) else None,
        "by": by,
        "strength": strength_of_move(by),
        "witness": _witness(witness) if isinstance(witness, dict) else None,
        "reachable": [r for r in move.get("reachable") or () if isinstance(r, str)],
        "guard": _guard_text(move.get("guard")),
        "guards_closed": [_guard_text(g) or "" for g in closed] if isinstance(closed, list) else None,
        # The turn-start cascade's evidence (docs/context-model.md §5.1): a scored verdict, the menu a
        # decider or a model pick resolved, and a pick that declined it.
        "score": score if isinstance(score, int | float) and not isinstance(score, bool) else None,
        "offered": [o for o in offered if isinstance(o, str)] if isinstance(offered, list) else None,
        "declined_offer": True if move.get("declinedOffer") is True else None,
    }


def skipped(details: object, warnings: list[str]) -> list[Skipped]:
    """``skippedDetails`` as skip rows; a reason outside fpdebug's closed set is left out, with a warning."""
    rows: list[Skipped] = []
    for item in details if isinstance(details, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        reason, error = item.get("reason"), item.get("error")
        if reason not in _SKIP_REASONS:
            warnings.append(f"skip reason {reason!r} of {item['id']!r} is not one fpdebug knows; left out")
            continue
        rows.append(Skipped(id=item["id"], reason=reason, error=error if isinstance(error, str) else None))
    return rows


def slots(injected: list[dict[str, Any]]) -> SlotRouting:
    """Which injection landed in which slot: one row per injection and slot, in emission order."""
    rows: dict[str, list[SlotEntry]] = {"system-prompt": [], "messages": [], "tools": []}
    for item in injected:
        slot, source, id_ = item.get("slot"), item.get("source"), item.get("sourceId")
        if slot not in rows or source not in ENGINEERED or not isinstance(id_, str):
            continue
        if any(entry.id == id_ for entry in rows[slot]):
            continue  # a skill with two tools lands once in the tools slot
        reason = item.get("reason")
        rows[slot].append(
            SlotEntry(id=id_, source=str(source), reason=reason if isinstance(reason, str) else "")
        )
    return SlotRouting(system_prompt=rows["system-prompt"], messages=rows["messages"], tools=rows["tools"])


def slot_delta(now: SlotRouting, before: SlotRouting | None) -> PassDelta:
    """Per slot, the ids added, removed and kept against the previous pass."""

    def one(current: list[SlotEntry], previous: list[SlotEntry]) -> SlotDelta:
        ids, old = [e.id for e in current], [e.id for e in previous]
        return SlotDelta(
            added=[i for i in ids if i not in old],
            removed=[i for i in old if i not in ids],
            kept=[i for i in ids if i in old],
        )

    base = before or SlotRouting()
    return PassDelta(
        system_prompt=one(now.system_prompt, base.system_prompt),
        messages=one(now.messages, base.messages),
        tools=one(now.tools, base.tools),
    )


def engagement_changes(
    map_events: list[tuple[str, dict[str, Any]]], number: int, warnings: list[str]
) -> list[EngagementChange]:
    """``map.engaged`` / ``map.parked`` of one pass as engagement changes, in emission order."""
    changes: list[EngagementChange] = []
    for kind, payload in map_events:
        by = payload.get("by")
        if by not in _STRENGTHS:
            warnings.append(f"{kind} at iteration {number}: strength {by!r} unknown; left out")
            continue
        witness, idle, at = payload.get("witness"), payload.get("idleCalls"), payload.get("iteration")
        changes.append(
            EngagementChange(
                kind="parked" if kind == "map.parked" else "engaged",
                map_id=text(payload.get("mapId")) or "skill-map",
                iteration=at if isinstance(at, int) else number,
                by=by,
                witness=witness if isinstance(witness, str) else None,
                reengaged=True if payload.get("reengaged") is True else None,
                upgraded=True if payload.get("upgraded") is True else None,
                tenant_changed=True if payload.get("tenantChanged") is True else None,
                idle_calls=idle if isinstance(idle, int) else None,
            )
        )
    return changes


def pass_facts(move: object, previous_batch: list[str]) -> EngagementPassFacts:
    """What the renewal feed read, as far as recorded: the move and the previous batch's tools."""
    if not isinstance(move, dict):
        return EngagementPassFacts(tool_names=list(previous_batch))
    witness = move.get("witness")
    return EngagementPassFacts(
        current_node=move.get("to") if isinstance(move.get("to"), str) else None,
        move_by=move.get("by") if isinstance(move.get("by"), str) else None,
        witness=text(witness.get("text")) if isinstance(witness, dict) else None,
        tool_names=list(previous_batch),
    )


def member_tools(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each skill's tools, as the passes' ``routing[].tools`` list them."""
    owned: dict[str, list[str]] = {}
    for payload in payloads(events, "context.evaluated"):
        for item in payload.get("routing") or ():
            if isinstance(item, dict) and isinstance(item.get("injectionId"), str):
                tools = owned.setdefault(item["injectionId"], [])
                tools += [t for t in item.get("tools") or () if isinstance(t, str) and t not in tools]
    return owned


def withheld_tools(
    owned: dict[str, list[str]], parked: list[str], llm_start: dict[str, Any] | None
) -> list[str]:
    """The parked members' tools that the pass's call did not offer."""
    offered = {text(tool.get("name")) for tool in obj(llm_start).get("tools") or () if isinstance(tool, dict)}
    withheld: list[str] = []
    for id_ in parked:
        withheld += [t for t in owned.get(id_, []) if t not in offered and t not in withheld]
    return withheld


def _witness(witness: dict[str, Any]) -> Witness:
    keyword = witness.get("keyword")
    # Bounded to 80 characters, whitespace collapsed (the schema's Witness).
    return Witness(
        text=" ".join(text(witness.get("text")).split())[:80],
        keyword=keyword if isinstance(keyword, str) else None,
    )


def _guard_text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)

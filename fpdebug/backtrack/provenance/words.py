"""The sentences of a provenance: why a piece rode, in words (``rode because …``)."""

from __future__ import annotations

from fpdebug.backtrack.provenance.models import Admission, CallRef, CursorOrigin, EngagementStanding
from fpdebug.trace.schema import Retrieval


def call_words(ref: CallRef) -> str:
    """A tool call as a sentence names it: its tool, its call id, its iteration."""
    call = f"call {ref.tool_call_id}" if ref.tool_call_id else "call"
    at = f" at iteration {ref.iteration}" if ref.iteration is not None else ""
    return f"`{ref.tool_name}` {call}{at}"


def cursor_words(cursor: CursorOrigin) -> str:
    """How the cursor came to stand where it does, in one clause."""
    words = f"cursor on {cursor.skill_id} by {cursor.by}"
    if cursor.by == "route":
        edge = f"edge {cursor.edge}" if cursor.edge else "a route edge"
        words += f" ({edge} fired by {call_words(cursor.fired_by)})" if cursor.fired_by else f" ({edge})"
    elif cursor.by == "model-pick" and cursor.picked_by is not None:
        words += f" via {call_words(cursor.picked_by)}"
    elif cursor.by == "tool-proposal" and cursor.fired_by is not None:
        words += f" proposed by {call_words(cursor.fired_by)}"
    elif cursor.by == "entry":
        kind = f"{cursor.entry_kind} entry" if cursor.entry_kind else "entry"
        witness = f", witness {cursor.witness!r}" if cursor.witness else ""
        words += f" ({kind}{witness})"
    if cursor.iteration is not None:
        words += f", moved at iteration {cursor.iteration}"
        if cursor.stays:
            words += f", stayed {cursor.stays} pass{'es' if cursor.stays != 1 else ''} since"
    return words


def engagement_words(standing: EngagementStanding) -> str:
    """A map's standing, its change this pass, its founding and idle count (docs/context-model.md §6.3)."""
    words = f"map {standing.map_id} {standing.standing} by {standing.by} since iteration {standing.since}"
    if standing.change == "reengaged":
        words += " (re-engaged this pass"
        words += f" by {call_words(standing.reengaged_by)})" if standing.reengaged_by else ")"
    elif standing.change:
        words += f" ({standing.change} this pass)"
    on = f" on {standing.founded_on}" if standing.founded_on else ""
    founded = f"founded by {standing.founded_by} at iteration {standing.founded_at}{on}"
    return words + f"; {founded}; idle {standing.idle}"


_FIXED_WORDS: dict[str, str] = {
    "always": "its trigger is always",
    "fork-edit": "a fork's edit put it in",
    "base": "it is the agent's own system prompt",
    "user": "the user said it",
    "conversation": "it is the model's own earlier reply in this conversation",
    "loop": "the loop re-asked the model (a step nudge or a wrap-up)",
    "registry": "the agent offers this tool on every call",
    "unknown": "the trace does not say (an untracked source)",
}
"""The admissions whose words need nothing but their name."""


def admission_words(admission: Admission) -> str:
    """What admitted a piece, in one clause (the ALLOWED hop's text)."""
    fixed = _FIXED_WORDS.get(admission.via)
    if fixed is not None:
        return fixed
    match admission.via:
        case "rule":
            description = f" ({admission.trigger_description})" if admission.trigger_description else ""
            return f"its rule held{description}"
        case "cursor":
            return cursor_words(admission.cursor) if admission.cursor else "the cursor is on it"
        case "tree":
            path = " › ".join(admission.tree_path or []) or "(path not recorded)"
            return f"every branch on its path held (decision tree {admission.tree_label or '?'}: {path})"
        case "on-tool-return":
            ref = admission.activation
            return f"{call_words(ref)} returned" if ref else "a tool it waits for returned"
        case "llm-activated":
            ref = admission.activation
            return f"{call_words(ref)} activated it" if ref else "the model activated it"
        case "lease":
            lease = admission.lease
            if lease is None:
                return "a lease served it"
            tenant = lease.tenant if lease.tenant is not None else "none"
            return (
                f"lease ({lease.delivery_lease}) granted by {call_words(lease.granted_by)}, tenant {tenant}"
            )
        case "park-card":
            standing = admission.engagement
            if standing is None:
                return "a map is parked"
            return f"map {standing.map_id} is parked (idle {standing.idle})"
        case "tool-result":
            ref = admission.activation
            return f"{call_words(ref)} returned it" if ref else "a tool returned it"
        case "recall":
            return recall_words(admission.retrieval)
    return admission.via


def recall_words(retrieval: Retrieval | None) -> str:
    """``recall``: which source recalled the chunk for the turn's message, and how it ranked."""
    if retrieval is None:
        return "a rag or memory source recalled it"
    threshold = f", threshold {retrieval.threshold:g}" if retrieval.threshold is not None else ""
    return (
        f"{retrieval.recall_id!r} recalled it for the turn's message "
        f"(score {retrieval.score:.3f}, rank {retrieval.rank}{threshold})"
    )


def reason_words(admission: Admission) -> str:
    """``rode because …``: the admission, then the cursor and the map standing when they add to it."""
    words = f"rode because {admission_words(admission)}"
    if admission.via != "cursor" and admission.cursor is not None:
        words += f"; {cursor_words(admission.cursor)}"
    if admission.via != "park-card" and admission.engagement is not None:
        words += f"; {engagement_words(admission.engagement)}"
    return words

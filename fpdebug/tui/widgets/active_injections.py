"""The Active injections section of the pass inspector: one row per injection that rode a pass.

Each row gives the injection's flavor, the slot(s) it landed in and why it rode; the why is prose,
and on a narrow inspector it goes under the columns rather than down a column of a few cells
(:class:`~fpdebug.tui.widgets.document.ColumnsBlock`).
"""

from __future__ import annotations

from rich.text import Text

from fpdebug.trace.schema import ActiveReason, InjectionDecl, PassEvent, RunStartEvent, SlotRouting
from fpdebug.tui.text import Palette, clip
from fpdebug.tui.widgets.document import DocBuilder, Part
from fpdebug.views.source import trigger_not_recorded
from fpdebug.views.tree_words import tree_path_text

__all__ = ["active_injections", "active_rows", "reason_text"]


def reason_text(reason: ActiveReason | None, trigger: str | None, palette: Palette) -> Text:
    """Why an active injection rode, in words (from its :class:`ActiveReason`, else its trigger)."""
    if reason is None:
        return DocBuilder.compose(("trigger " + (trigger or "?"), palette.dim))
    via = reason.via
    call: list[Part] = []
    if reason.tool_call_id is not None or reason.at_iteration is not None:
        call = [" (call ", (reason.tool_call_id or "?", ""), f", iteration {reason.at_iteration or '?'})"]
    if via == "lease":
        tenant = reason.tenant if reason.tenant is not None else "(no tenant)"
        return DocBuilder.compose(
            ("lease ", palette.good),
            (reason.delivery_lease or "?", palette.key),
            " granted by ",
            (reason.tool_name or "?", ""),
            *call,
            ", tenant ",
            (tenant, ""),
        )
    if via == "on-tool-return":
        return DocBuilder.compose("on tool return: ", (reason.tool_name or "?", ""), *call)
    if via == "llm-activated":
        return DocBuilder.compose("activated by ", (reason.tool_name or "read_skill", ""), *call)
    if via == "cursor":
        return DocBuilder.compose(("cursor", palette.accent), " is on this skill-map node")
    if via == "tree":
        return DocBuilder.compose(
            ("tree ", palette.accent),
            (reason.label or "?", palette.key),
            ": ",
            (tree_path_text(reason.path), ""),
            " (no cursor)",
        )
    if via == "park-card":
        return DocBuilder.compose(("park card", palette.bad), " (the kernel's map-status row)")
    if via == "fork-edit":
        return DocBuilder.compose(("fork edit", palette.warn), " (the fork put it in at its pass)")
    if via == "rule" and trigger:
        return DocBuilder.compose("rule")
    return DocBuilder.compose((via, ""))


def _slots_of(routing: SlotRouting) -> dict[str, list[str]]:
    """The slot names each injection landed in, by injection id."""
    slots: dict[str, list[str]] = {}
    by_slot = (
        ("system-prompt", routing.system_prompt),
        ("messages", routing.messages),
        ("tools", routing.tools),
    )
    for name, entries in by_slot:
        for entry in entries:
            slots.setdefault(entry.id, []).append(name)
    return slots


def active_rows(record: PassEvent) -> list[str]:
    """The active ids in declaration order, then the park card row(s) the reasons add."""
    rows = list(record.active_ids)
    if any(reason.via == "park-card" for reason in record.reasons):
        rows += [
            reason.id for reason in record.reasons if reason.via == "park-card" and reason.id not in rows
        ]
    return rows


def active_injections(doc: DocBuilder, record: PassEvent, start: RunStartEvent | None) -> None:
    """One row per active injection: flavor, the slot(s) it landed in, why it rode."""
    palette = doc.palette
    catalog = {decl.id: decl for decl in (start.injections if start is not None else [])}
    reasons = {reason.id: reason for reason in record.reasons}
    slots = _slots_of(record.by_slot)
    summary = (
        f"  {len(record.active_ids)} of {record.evaluated_total} evaluated, in declaration order:"
        " flavor · slot(s) it landed in · why it rode"
    )
    doc.heading("Active injections", (summary, palette.dim))
    rows = active_rows(record)
    width = min(max((len(id_) for id_ in rows), default=4), 26)
    if not rows:
        doc.line(("nothing was active", palette.dim), indent=2)
    landed = {id_: ", ".join(slots.get(id_, [])) or "no slot" for id_ in rows}
    slot_width = min(max((len(value) for value in landed.values()), default=7), 24)
    flavors = {id_: _flavor(catalog.get(id_), id_ in reasons) for id_ in rows}
    flavor_width = max((len(flavor) for flavor in flavors.values()), default=8)
    for number_, id_ in enumerate(rows, 1):
        decl = catalog.get(id_)
        trigger = "not recorded" if trigger_not_recorded(decl) else decl.trigger.kind if decl else None
        head: list[Part] = [f"{number_:>2} ", (f"{clip(id_, width):<{width}}", palette.accent), " "]
        head += [
            (f"{flavors[id_]:<{flavor_width}} ", palette.dim),
            (f"{landed[id_]:<{slot_width}}  ", palette.key),
        ]
        doc.columns(head, [reason_text(reasons.get(id_), trigger, palette)], indent=1, under=3)


def _flavor(decl: InjectionDecl | None, has_reason: bool) -> str:
    if decl is not None:
        return decl.flavor
    return "steering" if has_reason else "?"

"""What the two runs declare differently (their ``run_start``), and how their turns and runs end."""

from __future__ import annotations

import json

from fpdebug.trace.model import Turn
from fpdebug.trace.schema import (
    HonestyArms,
    InjectionDecl,
    MapsPlanDecl,
    RunEndEvent,
    RunStartEvent,
    SkillMapDecl,
    TurnEndEvent,
    TurnStartEvent,
)
from fpdebug.views.pass_diff.records import record
from fpdebug.views.run_diff.model import Difference
from fpdebug.views.run_diff.reading import RunReading, clip, line_diff


def declared_differences(a: RunReading, b: RunReading) -> list[Difference]:
    """How the two ``run_start`` records differ: provider, model, prompt, injections, tools, options."""
    sa, sb = a.start, b.start
    if sa is None or sb is None:
        return []
    found = []
    for name in ("provider", "model", "agent_name", "max_iterations"):
        va, vb = getattr(sa, name), getattr(sb, name)
        if va != vb:
            found.append(Difference("declared", name.replace("_", "-"), name, str(va), str(vb)))
    if sa.system_prompt != sb.system_prompt:
        found.append(
            Difference(
                "declared",
                "system-prompt",
                "system_prompt",
                clip(sa.system_prompt),
                clip(sb.system_prompt),
                detail=line_diff(sa.system_prompt, sb.system_prompt),
            )
        )
    found += _injections(a, b)
    tools_a, tools_b = {t.name for t in sa.tools}, {t.name for t in sb.tools}
    for name in sorted(tools_a ^ tools_b):
        found.append(
            Difference(
                "declared",
                "tool",
                name,
                "declared" if name in tools_a else None,
                "declared" if name in tools_b else None,
            )
        )
    found += _options(sa, sb)
    found += _plans(sa, sb)
    return found


def _plans(sa: RunStartEvent, sb: RunStartEvent) -> list[Difference]:
    """The skill map, the mounted maps and the honesty arms, each compared whole (with a line diff)."""
    found = []
    for name in ("skill_map", "maps", "honesty"):
        va, vb = getattr(sa, name), getattr(sb, name)
        da = va.model_dump(mode="json", exclude_none=True) if va is not None else None
        db = vb.model_dump(mode="json", exclude_none=True) if vb is not None else None
        if da == db:
            continue
        ta = json.dumps(da, indent=1, sort_keys=True, ensure_ascii=False) if da is not None else ""
        tb = json.dumps(db, indent=1, sort_keys=True, ensure_ascii=False) if db is not None else ""
        found.append(
            Difference(
                "declared",
                name.replace("_", "-"),
                name,
                _plan_words(va),
                _plan_words(vb),
                why="declared differently",
                detail=line_diff(ta, tb),
            )
        )
    return found


def _decl_words(decl: InjectionDecl | None) -> str | None:
    if decl is None:
        return None
    return f"{decl.flavor}, trigger {decl.trigger.kind}, slots {', '.join(decl.slots)}"


def _decl_key(decl: InjectionDecl) -> str:
    return json.dumps(decl.model_dump(mode="json"), sort_keys=True)


def _injections(a: RunReading, b: RunReading) -> list[Difference]:
    found = []
    for id_ in [*a.catalog, *(id_ for id_ in b.catalog if id_ not in a.catalog)]:
        da, db = a.catalog.get(id_), b.catalog.get(id_)
        if da is not None and db is not None and _decl_key(da) == _decl_key(db):
            continue
        if db is None:
            why = (
                "B left it out (run_start.options.without)" if id_ in b.left_out else "B does not declare it"
            )
        elif da is None:
            why = (
                "A left it out (run_start.options.without)" if id_ in a.left_out else "A does not declare it"
            )
        else:
            why = "declared differently"
        detail: tuple[str, ...] = ()
        if da is not None and db is not None and (da.system_prompt or "") != (db.system_prompt or ""):
            detail = line_diff(da.system_prompt or "", db.system_prompt or "")
        found.append(Difference("declared", "injection", id_, _decl_words(da), _decl_words(db), why, detail))
    return found


_PROVENANCE = frozenset({"scenario", "module"})
"""Options that name where the run came from (a module's path changes with the directory it ran
from): not compared, since what the runs did is."""


def _plan_words(plan: object) -> str | None:
    """A skill map, maps plan or honesty arms, in a few words."""
    if plan is None:
        return None
    if isinstance(plan, SkillMapDecl):
        trees = f", {len(plan.trees)} decision tree(s)" if plan.trees else ""
        return clip(
            f"{len(plan.nodes)} skill(s) ({', '.join(plan.nodes)}), {len(plan.edges)} route(s){trees}"
        )
    if isinstance(plan, MapsPlanDecl):
        return clip(f"{len(plan.maps)} map(s) ({', '.join(m.id for m in plan.maps)})")
    if isinstance(plan, HonestyArms):
        armed = [
            name
            for name in ("inputs", "results", "answer", "argument_sources", "tool_middleware")
            if getattr(plan, name)
        ]
        return f"armed: {', '.join(armed) or 'none'}"
    return None


def _options(sa: RunStartEvent, sb: RunStartEvent) -> list[Difference]:
    found = []
    for key in sorted((set(sa.options) | set(sb.options)) - _PROVENANCE):
        va, vb = sa.options.get(key), sb.options.get(key)
        if va != vb:
            found.append(Difference("declared", "option", key, _json(va), _json(vb)))
    return found


def _json(value: object) -> str | None:
    return None if value is None else clip(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def turn_start_differences(a: RunReading, b: RunReading, ta: Turn, tb: Turn) -> list[Difference]:
    """The user messages of two aligned turns."""
    sa = record(a.session, ta.start_line, TurnStartEvent)
    sb = record(b.session, tb.start_line, TurnStartEvent)
    if sa is None or sb is None or sa.user_message == sb.user_message:
        return []
    return [
        Difference(
            "turn",
            "user-message",
            "user message",
            clip(sa.user_message),
            clip(sb.user_message),
            why="the turn started from another user message",
            detail=line_diff(sa.user_message, sb.user_message),
        )
    ]


def turn_end_differences(a: RunReading, b: RunReading, ta: Turn, tb: Turn) -> list[Difference]:
    """The final answers (and early stops, refusals) of two aligned turns."""
    ea = record(a.session, ta.end_line, TurnEndEvent)
    eb = record(b.session, tb.end_line, TurnEndEvent)
    if ea is None or eb is None:
        if (ea is None) == (eb is None):
            return []
        return [Difference("end", "turn-end", "turn_end", _ended(ea), _ended(eb), why="one turn did not end")]
    found = []
    if ea.final_content != eb.final_content:
        found.append(
            Difference(
                "end",
                "final-answer",
                "final answer",
                clip(ea.final_content) or "(empty)",
                clip(eb.final_content) or "(empty)",
                why="the turn ended on another answer",
                detail=line_diff(ea.final_content, eb.final_content),
            )
        )
    stop_a = ea.stopped_early.reason if ea.stopped_early is not None else None
    stop_b = eb.stopped_early.reason if eb.stopped_early is not None else None
    if stop_a != stop_b:
        found.append(Difference("end", "stopped-early", "stopped early", stop_a, stop_b))
    if ea.refusal != eb.refusal:
        found.append(Difference("end", "refusal", "refusal", clip(ea.refusal), clip(eb.refusal)))
    return found


def _ended(end: TurnEndEvent | None) -> str | None:
    return "ended" if end is not None else None


def run_end_differences(a: RunReading, b: RunReading) -> list[Difference]:
    """How the two runs ended: status and error."""
    ea = record(a.session, a.run.end_line, RunEndEvent)
    eb = record(b.session, b.run.end_line, RunEndEvent)
    status_a = ea.status if ea is not None else a.run.status
    status_b = eb.status if eb is not None else b.run.status
    found = []
    if status_a != status_b:
        found.append(
            Difference("end", "status", "status", status_a, status_b, why="the runs ended differently")
        )
    error_a = f"{ea.error.type}: {ea.error.message}" if ea is not None and ea.error is not None else None
    error_b = f"{eb.error.type}: {eb.error.message}" if eb is not None and eb.error is not None else None
    if error_a != error_b:
        found.append(Difference("end", "error", "error", clip(error_a), clip(error_b)))
    return found

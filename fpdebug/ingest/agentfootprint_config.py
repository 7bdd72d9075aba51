"""The ``run_start`` of an imported agentfootprint run: its declared configuration, as far as recorded.

Read from ``agent.run_configured`` (the manifest; the envelope's ``configuration`` when that event
was dropped), ``skill.graph_declared`` (the skill map), ``recording.structure`` (the flowchart's stage
names, in ``options``) and the snapshot's scope (``maxIterations``, the tools' input schemas).

agentfootprint keeps no catalog of injections and no trigger definitions (their ``activeWhen`` is
code). The catalog written here holds every injection the recording shows, with its flavor, slots,
text and description as injected; the trigger is the one its flavor fixes (steering is always on, a
skill is activated by ``read_skill``), else ``rule`` with a description saying it was not recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

from fpdebug.engine.evaluate import PARK_CARD_ID
from fpdebug.ingest.agentfootprint_source import ENGINEERED, RecordingSource, obj, payloads, text
from fpdebug.trace.schema import (
    ContextSource,
    EdgeDecl,
    EntryDecl,
    InjectionDecl,
    RunStartEvent,
    SkillMapDecl,
    ToolSchema,
    TriggerDecl,
)

__all__ = ["NOT_RECORDED_TRIGGER", "read_run_start"]

NOT_RECORDED_TRIGGER = "not recorded: agentfootprint keeps no trigger definitions"
"""The description of a trigger whose kind the recording does not say."""

_FLAVORS = frozenset(get_args(ContextSource))
_SLOTS = ("system-prompt", "messages", "tools")


@dataclass
class _Seen:
    """What the injected-context events show of one injection."""

    flavor: str | None = None
    slots: list[str] = field(default_factory=list)
    prompt: str | None = None
    tools: list[str] = field(default_factory=list)
    description: str | None = None


def read_run_start(
    source: RecordingSource, run_id: str, ts: datetime, warnings: list[str]
) -> tuple[RunStartEvent, dict[str, InjectionDecl]]:
    """The run's ``run_start`` and its catalog by id (the pass's reasons read the catalog's triggers)."""
    manifest = source.first("agent.run_configured")
    if manifest is None:
        manifest = obj(obj(source.envelope.get("configuration")).get("manifest"))
    llm = obj(manifest.get("llm"))
    graph = source.first("skill.graph_declared")
    options: dict[str, Any] = {key: value for key, value in manifest.items() if key not in ("agentId", "llm")}
    options["source"] = "agentfootprint"
    stages = stage_names(source.recording.get("structure"))
    if stages:
        options["stages"] = stages
    max_iterations = source.shared.get("maxIterations")
    if not isinstance(max_iterations, int):
        max_iterations = 0
        warnings.append("the recording does not hold maxIterations; run_start says 0")
    catalog = _catalog(source, graph)
    start = RunStartEvent(
        seq=1,
        ts=ts,
        run_id=run_id,
        agent_name=text(manifest.get("agentId")) or "agent",
        provider=text(llm.get("provider")) or "unknown",
        model=text(llm.get("model")) or "unknown",
        max_iterations=max_iterations,
        system_prompt=next(
            (
                text(p.get("rawContent"))
                for p in payloads(source.events, "context.injected")
                if p.get("source") == "base"
            ),
            "",
        ),
        injections=list(catalog.values()),
        tools=_agent_tools(source),
        skill_map=_skill_map(source, graph),
        options=options,
    )
    return start, catalog


def _agent_tools(source: RecordingSource) -> list[ToolSchema]:
    # Every registered tool (skills' tools are registered up front too), as the first call listed them.
    tools = obj(source.first("stream.llm_start")).get("tools")
    if not isinstance(tools, list):
        return []
    return [source.tool_schema(tool, None) for tool in tools if isinstance(tool, dict)]


def _skill_map(source: RecordingSource, graph: dict[str, Any] | None) -> SkillMapDecl | None:
    if graph is None:
        return None
    nodes = [text(node.get("id")) for node in graph.get("nodes") or () if isinstance(node, dict)]
    keyword = _entry_keyword(source)
    entries: list[EntryDecl] = []
    edges: list[EdgeDecl] = []
    for edge in graph.get("edges") or ():
        if not isinstance(edge, dict):
            continue
        kind, target, origin = edge.get("kind"), text(edge.get("to")), edge.get("from")
        label = edge.get("label") if isinstance(edge.get("label"), str) else None
        if kind == "entry" or origin is None:
            if keyword is not None and keyword[0] == target:
                # Only the keyword that matched is recorded, not the entry's whole list.
                entries.append(EntryDecl(skill_id=target, kind="keywords", keywords=[keyword[1]]))
            else:
                description = label or "entry condition not recorded by agentfootprint"
                entries.append(EntryDecl(skill_id=target, kind="when", description=description))
            continue
        # The edge's kind is recorded (on-tool-return, on-tool-status, model), its tool or status not.
        when = (
            None if kind == "model" else f"{kind}: {label}" if label else f"{kind} (condition not recorded)"
        )
        edges.append(
            EdgeDecl(from_skill=text(origin), to_skill=target, when=when, deterministic=kind != "model")
        )
    return SkillMapDecl(nodes=nodes, entries=entries, edges=edges)


def _entry_keyword(source: RecordingSource) -> tuple[str, str] | None:
    """The node and keyword of a keyword entry, from the entry move's witness."""
    for payload in payloads(source.events, "context.evaluated"):
        move = obj(payload.get("cursorMove"))
        keyword = obj(move.get("witness")).get("keyword")
        if move.get("by") == "entry" and isinstance(keyword, str) and isinstance(move.get("to"), str):
            return move["to"], keyword
    return None


def _catalog(source: RecordingSource, graph: dict[str, Any] | None) -> dict[str, InjectionDecl]:
    """Every injection the recording shows, in order of first appearance (skills last if never seen)."""
    skills: dict[str, str | None] = {}
    for node in obj(graph).get("nodes") or ():
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            skills[node["id"]] = node.get("description") if isinstance(node.get("description"), str) else None
    seen: dict[str, _Seen] = {}
    order: dict[str, None] = {}
    for event in source.events:
        payload = event.get("payload")
        if not isinstance(payload, dict):
            continue
        if event.get("type") == "agentfootprint.context.evaluated":
            _note_evaluated(payload, skills, order)
        elif event.get("type") == "agentfootprint.context.injected":
            _note_injected(payload, seen, order)
    order.update(dict.fromkeys(skills))
    return {id_: _declare(id_, seen.get(id_, _Seen()), skills) for id_ in order}


def _note_evaluated(payload: dict[str, Any], skills: dict[str, str | None], order: dict[str, None]) -> None:
    for item in payload.get("skillCatalog") or ():
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            description = item.get("description")
            skills.setdefault(item["id"], description if isinstance(description, str) else None)
    order.update((id_, None) for id_ in payload.get("activeIds") or () if isinstance(id_, str))
    for skipped in payload.get("skippedDetails") or ():
        if isinstance(skipped, dict) and isinstance(skipped.get("id"), str):
            order.setdefault(skipped["id"], None)


def _note_injected(payload: dict[str, Any], seen: dict[str, _Seen], order: dict[str, None]) -> None:
    flavor, id_, slot = payload.get("source"), payload.get("sourceId"), payload.get("slot")
    if flavor not in ENGINEERED or not isinstance(id_, str) or id_ == PARK_CARD_ID:
        return
    order.setdefault(id_, None)
    info = seen.setdefault(id_, _Seen(flavor=str(flavor)))
    if slot in _SLOTS and slot not in info.slots:
        info.slots.append(str(slot))
    if slot == "system-prompt" and info.prompt is None and isinstance(payload.get("rawContent"), str):
        info.prompt = payload["rawContent"]
    if slot == "tools":
        name = text(payload.get("rawContent")).split(":", 1)[0].strip()
        if name and name not in info.tools:
            info.tools.append(name)
    reason = payload.get("reason")
    # The reason is the injection's description when it has one, else "<flavor> '<id>' active".
    if (
        info.description is None
        and flavor != "skill"
        and isinstance(reason, str)
        and reason != f"{flavor} '{id_}' active"
    ):
        info.description = reason


def _declare(id_: str, info: _Seen, skills: dict[str, str | None]) -> InjectionDecl:
    flavor = info.flavor or ("skill" if id_ in skills else "custom")
    description = info.description
    if flavor == "skill":
        trigger = TriggerDecl(kind="llm-activated", via_tool_name="read_skill", graph_node=id_ in skills)
        description = skills.get(id_)
    elif flavor == "steering":
        trigger = TriggerDecl(kind="always")  # steering is always on, by definition of the flavor
    else:
        trigger = TriggerDecl(kind="rule", description=NOT_RECORDED_TRIGGER)
    return InjectionDecl(
        id=id_,
        flavor=flavor if flavor in _FLAVORS else "custom",  # type: ignore[arg-type]
        description=description,
        trigger=trigger,
        slots=[slot for slot in _SLOTS if slot in info.slots] or ["system-prompt"],  # type: ignore[misc]
        system_prompt=info.prompt,
        tool_names=info.tools,
    )


def stage_names(structure: object, limit: int = 200) -> list[str]:
    """The flowchart's stage names in chain order (subflows and forks included), as declared."""
    names: list[str] = []
    stack: list[object] = [structure]
    seen: set[int] = set()
    while stack and len(names) < limit:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.get("name"), str):
            names.append(node["name"])
        following: list[object] = [node.get("subflowStructure")]
        children = node.get("children")
        if isinstance(children, list):
            following.extend(children)
        following.append(node.get("next"))
        stack.extend(reversed([item for item in following if item is not None]))
    return names

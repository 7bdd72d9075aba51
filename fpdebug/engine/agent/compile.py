"""Compilation: a declared :class:`~fpdebug.engine.agent.spec.AgentSpec` turned, once, into what the loop needs.

It refuses what cannot run (duplicate ids or tool names, reserved tool names, a ``without()`` that
names a skill-map node or nothing) and builds the catalog, the tool table, the engagement plan, the
step plans and the ``read_skill`` tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fpdebug.engine.agent.spec import READ_SKILL, AgentSpec
from fpdebug.engine.engagement import EngagementPlan, skill_map_plan
from fpdebug.engine.evaluate import PassSetup
from fpdebug.engine.injections import Injection, LlmActivated
from fpdebug.engine.steps import SKIP_STEP, StepPlan, step_plans_of
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import ToolSchema


@dataclass(frozen=True, slots=True)
class Compiled:
    """What the loop needs, derived once from a spec."""

    setup: PassSetup
    plan: EngagementPlan | None
    tools_by_name: Mapping[str, Tool]
    agent_tools: tuple[ToolSchema, ...]
    read_skill: ToolSchema | None
    open_skill_ids: tuple[str, ...]
    catalog_by_id: Mapping[str, Injection]
    step_plans: Mapping[str, StepPlan]


def _tool_key(t: Tool) -> tuple[object, ...]:
    handler = id(t.handler) if t.handler is not None else None
    coverage = t.coverage if isinstance(t.coverage, str | None) else id(t.coverage)
    honesty = (t.hides_arguments, t.display_name, coverage)
    return (t.name, t.description, repr(dict(t.parameters)), handler, *honesty)


def compile_spec(spec: AgentSpec) -> Compiled:
    """Compile ``spec`` into what the loop needs, refusing what cannot run.

    Raises:
        DefinitionError: A ``without()`` id that is a node or unknown, duplicate ids, ``.maps()``
            without a skill map, a reserved or duplicate tool name.
    """
    graph = spec.skill_map
    map_injections = graph.injections if graph is not None else ()
    _check_without(spec)
    if spec.turn_start is not None and graph is None:
        raise DefinitionError("turn_start() needs a skill map: the cascade starts the map's cursor")
    _check_turn_start(spec)
    own = tuple(i for i in spec.injections if i.id not in set(spec.excluded_injections))
    catalog = own + map_injections
    setup = PassSetup(catalog, skill_map=graph)  # refuses duplicate ids
    plan: EngagementPlan | None = None
    if spec.maps is not None:
        plan = skill_map_plan(
            graph, renewal_grace=spec.maps.renewal_grace, non_parkable=spec.maps.non_parkable
        )
        setup = PassSetup(catalog, skill_map=graph, engagement=plan)
    step_plans = step_plans_of(catalog)
    by_name = _tools_by_name(spec, catalog, steps_declared=bool(step_plans))
    agent_tools = tuple(dict.fromkeys(t.name for t in spec.tools if t.name not in spec.ignored_tools))
    # Skills the gate admits from anywhere: the map's open skills, then stand-alone read_skill ids.
    standalone = tuple(
        i.id for i in own if isinstance(i.trigger, LlmActivated) and i.trigger.via_tool_name == READ_SKILL
    )
    open_ids = tuple(dict.fromkeys([*(graph.open_skill_ids if graph is not None else ()), *standalone]))
    read_skill: ToolSchema | None = None
    # A decision-tree leaf is never a pick (it has no cursor; the gate refuses it), so the catalog
    # leaves it out, and a map of trees alone offers no read_skill at all.
    leaves = set(graph.tree_leaves) if graph is not None else set()
    pickable = [i for i in catalog if (i.flavor == "skill" or i.id in standalone) and i.id not in leaves]
    if (graph is not None and (pickable or not leaves)) or standalone:
        read_skill = _read_skill_schema(pickable)
    return Compiled(
        setup=setup,
        plan=plan,
        tools_by_name=MappingProxyType(by_name),
        agent_tools=tuple(by_name[n].schema() for n in agent_tools),
        read_skill=read_skill,
        open_skill_ids=open_ids,
        catalog_by_id=MappingProxyType({i.id: i for i in catalog}),
        step_plans=MappingProxyType(step_plans),
    )


def _check_without(spec: AgentSpec) -> None:
    """Refuse a ``without()`` id that is a skill-map node or names no injection of the agent."""
    graph = spec.skill_map
    node_ids = set(graph.node_ids) if graph is not None else set()
    known = {i.id for i in spec.injections} | {i.id for i in (graph.injections if graph is not None else ())}
    for sid in spec.excluded_injections:
        if sid in node_ids:
            raise DefinitionError(
                f"without(): {sid!r} is a skill-map node; a node cannot be left out of its map"
            )
        if sid not in known:
            raise DefinitionError(f"without(): no injection {sid!r} in this agent")


def _tools_by_name(spec: AgentSpec, catalog: Sequence[Injection], *, steps_declared: bool) -> dict[str, Tool]:
    """Every dispatchable tool by name: the agent's own, then its injections' (first declaration
    wins; the same tool may be declared twice, two different tools may not share a name)."""
    ignored = set(spec.ignored_tools)
    by_name: dict[str, Tool] = {}
    for t in (*spec.tools, *(t for injection in catalog for t in injection.tools)):
        if t.name == READ_SKILL:
            raise DefinitionError(f"the tool name {READ_SKILL!r} is reserved for loading skills")
        if t.name == SKIP_STEP and steps_declared:
            raise DefinitionError(
                f"the tool name {SKIP_STEP!r} is reserved for skipping a step: a skill of this agent "
                "declares steps"
            )
        if t.name in ignored:
            continue
        seen = by_name.get(t.name)
        if seen is not None and _tool_key(seen) != _tool_key(t):
            raise DefinitionError(f"two different tools are named {t.name!r}; tool names must be unique")
        by_name.setdefault(t.name, t)
    return by_name


def _read_skill_schema(skills: Sequence[Injection]) -> ToolSchema:
    lines = [f"- {s.id}: {s.description or '(no description)'}" for s in skills]
    return ToolSchema(
        name=READ_SKILL,
        description=(
            "Load a skill by its id: its instructions join the system prompt and its tools become "
            "available from the next call on. Skills:\n" + "\n".join(lines)
        ),
        parameters={
            "type": "object",
            "properties": {"id": {"type": "string", "description": "The id of the skill to load."}},
            "required": ["id"],
        },
    )


def _check_turn_start(spec: AgentSpec) -> None:
    """Refuse a cascade the map cannot honour: a start rule off the map, an entry scorer without
    entries, the ``rails`` posture with entries by read (no hop could ever land a cursor)."""
    graph, start = spec.skill_map, spec.turn_start
    if graph is None:
        return
    if start is not None:
        for rule in start.rules:
            if rule.skill_id not in graph.node_ids:
                raise DefinitionError(f"start rule names {rule.skill_id!r}, which is not a node of the map")
        if start.entry_scorer is not None and not graph.entry_ids:
            raise DefinitionError("turn_start(): an entry scorer needs a map with entries to score")
    if spec.read_skill_posture == "rails" and graph.entry_mode == "read":
        raise DefinitionError(
            "read_skill_posture('rails') cannot honour entries by read: the model's read is the only way "
            "in; use entries by relevance, or the 'guard' posture"
        )

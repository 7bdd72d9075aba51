"""Slot composition: one Evaluate pass's result turned into the request the model receives.

The system prompt is the base segment then each active injection's segment; the messages are the
conversation then the injected messages; the tools are the agent's, the active injections', a step
in progress narrowed to its current step (docs/context-model.md §5.6), ``read_skill`` and
``skip_step``, less the parked maps' tools (docs/context-model.md §6).

For a provider that caches (``cache_prompt``), the request also says where its stable prefix ends
(:class:`~fpdebug.trace.schema.CachePrefix`): the leading system segments and tools that ride every
call unchanged. Nothing is reordered for it: the prefix is what already leads.
"""

from __future__ import annotations

from collections.abc import Sequence

from fpdebug.engine.agent.compile import Compiled
from fpdebug.engine.agent.spec import READ_SKILL, AgentSpec
from fpdebug.engine.evaluate import PassResult
from fpdebug.engine.injections import Step, StepPointer
from fpdebug.engine.steps import (
    SKIP_STEP,
    current_step,
    held_out_step_tools,
    skip_step_schema,
    step_banner_prefix,
)
from fpdebug.trace.schema import CachePrefix, LlmRequest, Message, PromptSegment, ToolSchema


def compose_request(
    spec: AgentSpec,
    compiled: Compiled,
    result: PassResult,
    history: Sequence[Message],
    step_pointer: tuple[StepPointer, ...] | None,
    *,
    mark_cache_prefix: bool = False,
) -> LlmRequest:
    """The request for this iteration's LLM call, composed from the pass ``result``.

    Args:
        spec: The agent's declaration (base prompt, ignored tools, sampling).
        compiled: The compiled agent (its own tools, ``read_skill``, the step plans).
        result: The Evaluate pass of this iteration.
        history: The conversation so far.
        step_pointer: The procedures in progress after the pass.
        mark_cache_prefix: Record where the stable prefix ends (``LlmRequest.cache_prefix``), for a
            provider that caches it.

    Returns:
        The request, its tools in offer order.
    """
    injected: list[Message] = []
    for row in result.active_injections:
        injected.extend(m.model_copy(update={"injection_id": row.id}) for m in row.messages)
    tools = _offered_tools(spec, compiled, result)
    procedure = current_step(step_pointer, compiled.step_plans)
    if procedure is not None:
        _narrow_to_step(tools, compiled, result, step_pointer, procedure[0], procedure[2])
    if compiled.read_skill is not None:
        tools.setdefault(READ_SKILL, compiled.read_skill)
    if procedure is not None:
        tools.setdefault(SKIP_STEP, skip_step_schema(procedure[0], procedure[1]))
    parked = set(result.parked_tool_names or ())
    system_prompt = _system_prompt(spec, result)
    offered = [schema for name, schema in tools.items() if name not in parked]
    return LlmRequest(
        system_prompt=system_prompt,
        messages=[*history, *injected],
        tools=offered,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        cache_prefix=_cache_prefix(compiled, result, system_prompt, offered) if mark_cache_prefix else None,
    )


def _cache_prefix(
    compiled: Compiled, result: PassResult, system_prompt: list[PromptSegment], tools: list[ToolSchema]
) -> CachePrefix:
    """How many leading segments and tools ride every call unchanged.

    Stable: the agent's own prompt, its own tools as declared (not a step's narrowed copy) and
    ``read_skill``, and the segments and tools of injections active ``always`` whose prompt is not
    a template. A triggered injection, a lease or a park card may come and go from one call to the
    next, and a cache matches prefixes only, so the prefix stops at the first of them.
    """
    stable_ids = {
        reason.id
        for reason in result.reasons
        if reason.via == "always"
        and (injection := compiled.catalog_by_id.get(reason.id)) is not None
        and not injection.templated
    }
    segments = 0
    for segment in system_prompt:
        if not (segment.source == "base" or segment.injection_id in stable_ids):
            break
        segments += 1
    own = {schema.name: schema for schema in compiled.agent_tools}
    if compiled.read_skill is not None:
        own[compiled.read_skill.name] = compiled.read_skill
    count = 0
    for schema in tools:
        if not (own.get(schema.name) == schema or (schema.injection_id or "") in stable_ids):
            break
        count += 1
    return CachePrefix(system_segments=segments, tools=count)


def _system_prompt(spec: AgentSpec, result: PassResult) -> list[PromptSegment]:
    """The base segment, then each active injection that lands in the system prompt."""
    segments: list[PromptSegment] = []
    if spec.system_prompt:
        segments.append(PromptSegment(source="base", text=spec.system_prompt))
    for row in result.active_injections:
        if row.lands_in_system_prompt and row.system_prompt:
            segments.append(PromptSegment(source=row.flavor, injection_id=row.id, text=row.system_prompt))
    return segments


def _offered_tools(spec: AgentSpec, compiled: Compiled, result: PassResult) -> dict[str, ToolSchema]:
    """The agent's own tools, then each active injection's (first offer of a name wins)."""
    ignored = set(spec.ignored_tools)
    tools: dict[str, ToolSchema] = {s.name: s for s in compiled.agent_tools}
    for row in result.active_injections:
        for schema in row.tools:
            if schema.name not in ignored:
                tools.setdefault(schema.name, schema)
    return tools


def _narrow_to_step(
    tools: dict[str, ToolSchema],
    compiled: Compiled,
    result: PassResult,
    step_pointer: tuple[StepPointer, ...] | None,
    pointer: StepPointer,
    step: Step,
) -> None:
    """Narrow the offer to the step in progress (docs/context-model.md §5.6; reference buildToolsSlot.ts).

    The stepped skill's other step tools are held out unless another source offers them too, and
    the current step's tool leads with the banner.
    """
    others = {s.name for s in compiled.agent_tools}
    for row in result.active_injections:
        if row.id != pointer.skill_id:
            others.update(schema.name for schema in row.tools)
    for name in held_out_step_tools(step_pointer, compiled.step_plans, others):
        tools.pop(name, None)
    offered = tools.get(step.tool)
    if offered is not None:
        banner = step_banner_prefix(pointer, step)
        tools[step.tool] = offered.model_copy(update={"description": banner + offered.description})

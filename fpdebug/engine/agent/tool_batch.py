"""The tool-calls stage (docs/context-model.md §7): the calls resolved through the tool middleware,
then the batch they form, with the carriers the read_skill gate and effect judging share.

:class:`~fpdebug.engine.agent.loop.TurnLoop` runs each call and records it; this module holds what
the stage computes without recording: :func:`resolve_calls` (the Resolve stage), the
:class:`ToolBatch` in progress, and :func:`skill_text` (what an accepted or refused pick reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fpdebug.engine.agent.compile import Compiled
from fpdebug.engine.agent.spec import AgentSpec
from fpdebug.engine.effects import EffectScope, EffectState
from fpdebug.engine.skillmap import PickCarriers, SkillPick, apply_skill_pick
from fpdebug.engine.steps import read_skill_step_intro
from fpdebug.engine.tool_middleware import ToolCallContext, apply_tool_middleware
from fpdebug.engine.types import ToolCall, ToolResult
from fpdebug.errors import ToolMiddlewareError
from fpdebug.trace.records import well_formed_value
from fpdebug.trace.schema import ErrorInfo, ToolCallRecord


@dataclass(frozen=True, slots=True)
class ResolvedCalls:
    """The calls of a reply as they will run (after the tool middleware), and the refused ones."""

    calls: tuple[ToolCallRecord, ...]
    """Each call with the arguments it runs with (in call order)."""
    refused: dict[int, ErrorInfo] = field(default_factory=dict)
    """Position → why a middleware refused the call (it is answered ``failure``; its tool does not run)."""


def resolve_calls(
    spec: AgentSpec,
    compiled: Compiled,
    calls: Sequence[ToolCallRecord],
    *,
    run_id: str,
    turn: int,
    iteration: int,
) -> ResolvedCalls:
    """Run the tool middleware over each call to one of the agent's tools whose arguments parsed.

    Args:
        spec: The agent's declaration (its middleware chain and ignored tools).
        compiled: The compiled agent (its tools by name).
        calls: The calls of the reply, as the model asked for them.
        run_id: The run, for the middleware's context.
        turn: The turn, for the middleware's context.
        iteration: The iteration, for the middleware's context.

    Returns:
        The calls as they will run, and the positions of the refused ones.
    """
    chain = spec.tool_middleware
    if not chain:
        return ResolvedCalls(tuple(calls))
    ran: list[ToolCallRecord] = []
    refused: dict[int, ErrorInfo] = {}
    for position, call in enumerate(calls):
        ignored = call.name in spec.ignored_tools
        found = None if ignored else compiled.tools_by_name.get(call.name)
        if found is None or call.raw_args is not None:
            ran.append(call)  # read_skill, an unknown tool or unparsed arguments: nothing to rewrite
            continue
        context = ToolCallContext(run_id, turn, iteration, found, MappingProxyType(dict(call.args)))
        try:
            rewritten = apply_tool_middleware(chain, ToolCall(call.id, call.name, call.args), context)
        except ToolMiddlewareError as exc:
            # Refused calls run with nothing rewritten, so their tool_result.args are the request.
            refused[position] = ErrorInfo(type=type(exc).__name__, message=str(exc))
            ran.append(call)
            continue
        ran.append(call.model_copy(update={"args": well_formed_value(dict(rewritten.args))}))
    return ResolvedCalls(tuple(ran), refused)


@dataclass(slots=True)
class ToolBatch:
    """One batch in progress: the carriers its calls write, and what each call left for the model."""

    carriers: PickCarriers
    """The read_skill gate's carriers (docs/context-model.md §5.5)."""
    state: EffectState
    """Effect judging's carriers (docs/context-model.md §4.2); shares the activations with ``carriers``."""
    scope: EffectScope
    """What effects are judged against (the iteration, the cursor, the map, the catalog)."""
    parked: frozenset[str]
    """Skill ids of parked maps (the gate refuses them)."""
    results: list[ToolResult] = field(default_factory=list)
    """Each call's result, in call order (the next pass's ``tool_results``)."""
    texts: list[str] = field(default_factory=list)
    """Each result as the model read it."""
    coverage: list[str | None] = field(default_factory=list)
    """What each call declared its result covers."""

    def read(self, text: str, coverage: str | None) -> None:
        """Note what the model reads of the call just run, and its coverage."""
        self.texts.append(text)
        self.coverage.append(coverage)

    def apply_pick(self, pick: SkillPick) -> None:
        """Write the gate's verdict into the carriers; the gate and effect judging share one
        activation list (docs/context-model.md §5.5, §4.2)."""
        self.carriers = apply_skill_pick(
            replace(self.carriers, activated_injection_ids=self.state.activated_injection_ids), pick
        )
        self.state = replace(self.state, activated_injection_ids=self.carriers.activated_injection_ids)


def skill_text(compiled: Compiled, pick: SkillPick) -> str:
    """What the model reads back from ``read_skill``: the refusal, or the skill loaded (with a
    tool-only body and where its procedure starts)."""
    if not pick.accepted:
        return pick.refusal()
    skill = compiled.catalog_by_id.get(pick.skill_id)
    verb = "re-engaged" if pick.outcome == "re-engagement" else "loaded"
    text = (
        f"Skill '{pick.skill_id}' {verb}: its instructions ride the system prompt and its tools are "
        "available from the next call on."
    )
    if pick.outcome == "hop":
        text += " The conversation moves to this skill."
    if skill is not None and skill.surface_mode in ("tool-only", "both") and skill.system_prompt:
        # A tool-only body never rides the system prompt: the tool result is how it arrives.
        text += "\n\n" + skill.system_prompt
    plan = compiled.step_plans.get(pick.skill_id)
    if plan is not None:
        text += read_skill_step_intro(plan)  # where its procedure starts
    return text

"""The agent: an immutable builder for the declared configuration, and the ReAct loop that records it all.

Declare an agent with the fluent, copy-on-write :class:`Agent` (every method returns a new agent;
an agent is a value and may be shared between threads and reruns)::

    agent = (
        Agent("support")
        .system_prompt("You are a support agent.")
        .injections(tone, refund_policy, wire_format)
        .tools(lookup_customer)                     # plain callables, or tool(fn, timeout=…)
        .skill_map(skill_map)                       # nodes, entries, routes, open skills
        .maps(renewal_grace=3)                      # the engagement kernel (docs/context-model.md §6)
        .tool_middleware(cap_refunds)               # may rewrite a call's arguments before it runs
        .max_iterations(8)
    )
    result = agent.run("Refund order A-17", provider=model, sink=sink, clock=clock, run_id="r1")

The loop (:class:`TurnLoop`) follows docs/context-model.md §7: per iteration one Evaluate pass, slot composition,
one LLM call, the route decision, and (on the ``tool-calls`` branch) the batch with the read_skill
gate and effect judging; every fact goes to the :class:`~fpdebug.engine.sink.EventSink` as a trace
event. Several user messages in one run form a :class:`Conversation`.

Hook points for the honesty layers (docs/honesty.md §12) are marked ``HONESTY HOOK``: the results layer at
the loop head, the inputs layer after the LLM call and before Route (its rows written right after
the ``llm_call`` record), the answer layer on the final branch. They are plain method calls that do
nothing unless the agent carries :class:`HonestyHooks` (the arming methods :meth:`Agent.findings`,
:meth:`Agent.inputs_layer`, :meth:`Agent.results_layer` and :meth:`Agent.answer_layer` install
them), so an unarmed agent's trace is unchanged.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol, Self, TypeAlias

from pydantic import BaseModel

from fpdebug.engine.effects import (
    EffectScope,
    EffectState,
    Envelope,
    judge_effects,
    parse_envelope,
    proposal_conflict,
    text_of,
    warn_near_miss,
)
from fpdebug.engine.engagement import EngagementPlan, MapEngagementRecord, parked_member_ids, skill_map_plan
from fpdebug.engine.evaluate import PassInputs, PassResult, PassSetup, evaluate_pass
from fpdebug.engine.injections import Injection, LlmActivated, StepPointer
from fpdebug.engine.leases import InstructionLease, PendingToolTransition
from fpdebug.engine.providers.base import check_provider
from fpdebug.engine.sink import EventSink, MemorySink, Recorder
from fpdebug.engine.skillmap import PickCarriers, SkillMap, SkillPick, apply_skill_pick, gate_skill_pick
from fpdebug.engine.steps import (
    SKIP_STEP,
    StepPlan,
    current_step,
    held_out_step_tools,
    read_skill_step_intro,
    skip_step_result,
    skip_step_schema,
    step_banner_prefix,
    step_on_return,
    step_plans_of,
)
from fpdebug.engine.tool_middleware import (
    ToolCallContext,
    ToolMiddleware,
    apply_tool_middleware,
    check_tool_middleware,
)
from fpdebug.engine.tools import InvalidToolArguments, ToolFunction, ToolTimeout, call_tool, tool
from fpdebug.engine.types import Activation, Tool, ToolCall, ToolResult
from fpdebug.errors import DefinitionError, FpdebugError, ProviderError, RunInterrupted, ToolMiddlewareError
from fpdebug.trace.clock import Clock, SystemClock
from fpdebug.trace.records import well_formed_text, well_formed_value
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    ErrorInfo,
    HonestyArms,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    PromptSegment,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StoppedEarly,
    ToolCallRecord,
    ToolResultEvent,
    ToolResultStatus,
    ToolSchema,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
)

if TYPE_CHECKING:
    from fpdebug.engine.providers.base import Provider

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_TOOL_TIMEOUT",
    "READ_SKILL",
    "Agent",
    "AgentSpec",
    "Continuity",
    "Conversation",
    "HonestyHooks",
    "MapsOptions",
    "RunResult",
    "RunStatus",
    "TurnLoop",
    "TurnResult",
]

READ_SKILL = "read_skill"
"""The tool the model calls to load a skill (its argument is ``{"id": <skill id>}``)."""

DEFAULT_MAX_ITERATIONS = 10
"""The per-turn iteration limit when the agent sets none."""

DEFAULT_TOOL_TIMEOUT: float | None = 60.0
"""Seconds a tool call may take when neither the agent nor the tool says otherwise."""

Continuity: TypeAlias = Literal["turn", "conversation"]
"""Whether the skill-map cursor starts each turn afresh (``turn``) or carries over (``conversation``)."""

RunStatus: TypeAlias = Literal["completed", "failed", "interrupted"]
"""How a run (or a turn) ended."""

ToolLike: TypeAlias = Tool | Callable[..., object]
"""A tool as the builder accepts it: a :class:`Tool`, or a plain function (see :func:`tool`)."""


# ----------------------------------------------------------------------------------------------
# The declared configuration


@dataclass(frozen=True, slots=True)
class MapsOptions:
    """The engagement kernel's options (``Agent.maps``)."""

    renewal_grace: int = 3
    """Idle passes a tentative map survives before it parks (an integer >= 1)."""
    non_parkable: bool = False
    """The map counts idle passes but never parks."""


class HonestyHooks(Protocol):
    """What the honesty layers plug into the loop (docs/honesty.md §12). Unset on an unarmed agent.

    The builder's arming methods (:meth:`Agent.findings`, :meth:`Agent.inputs_layer`,
    :meth:`Agent.results_layer`, :meth:`Agent.answer_layer`) install
    :class:`~fpdebug.engine.honesty_hooks.HonestyLayers`, which implements it.
    """

    def run_arms(self, conversation: Conversation) -> HonestyArms | None:
        """Called once per run before ``run_start`` is written; returns ``run_start.honesty``."""
        ...

    def loop_head(self, loop: TurnLoop) -> None:
        """Results layer: called at the loop head of every iteration, before the Evaluate pass."""
        ...

    def after_llm_call(self, loop: TurnLoop, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        """Inputs layer: called after the LLM call, before Route; returns what Route may dispatch."""
        ...

    def after_llm_record(self, loop: TurnLoop) -> None:
        """Inputs layer's write: called right after the ``llm_call`` record, before any tool runs.

        The rows follow the call they are about, and a gate that stops the run on them loses no
        reply the provider already gave. ``loop.calls_to_run`` holds the calls as they will run,
        after the tool middleware (empty on the final branch): a rewrite is the difference.
        """
        ...

    def before_final(self, loop: TurnLoop, content: str) -> None:
        """Answer layer: called first on the final branch, before ``turn_end``."""
        ...


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """Everything an :class:`Agent` declares (read it as ``agent.spec``)."""

    name: str = "agent"
    """The agent's name (recorded in ``run_start``)."""
    system_prompt: str = ""
    """The base system prompt (the ``base`` segment)."""
    injections: tuple[Injection, ...] = ()
    """Injections and stand-alone skills, in declaration order."""
    tools: tuple[Tool, ...] = ()
    """The agent's own tools, always offered."""
    skill_map: SkillMap | None = None
    """The mounted skill graph."""
    maps: MapsOptions | None = None
    """The engagement kernel's options, when ``.maps()`` is mounted."""
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    """The per-turn iteration limit."""
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    """Seconds a tool call may take unless the tool sets its own; ``None``: no limit (runs inline)."""
    continuity: Continuity = "turn"
    """Whether the cursor carries from one turn to the next."""
    temperature: float | None = None
    """Sampling temperature sent with every request (not sent when ``None``)."""
    max_tokens: int | None = None
    """Reply budget sent with every request (the provider's default when ``None``)."""
    options: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """Free-form JSON-able settings recorded in ``run_start.options`` (a scenario's name…)."""
    excluded_injections: tuple[str, ...] = ()
    """Injection ids left out of the catalog (:meth:`Agent.without`)."""
    ignored_tools: tuple[str, ...] = ()
    """Tool names never offered nor dispatched (:meth:`Agent.without`)."""
    honesty: HonestyHooks | None = None
    """The honesty layers' hooks, when armed."""
    tool_middleware: tuple[ToolMiddleware, ...] = ()
    """Before-tool middleware, in the order they run (:meth:`Agent.tool_middleware`)."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    """What the loop needs, derived once from a spec."""

    setup: PassSetup
    plan: EngagementPlan | None
    tools_by_name: Mapping[str, Tool]
    agent_tools: tuple[ToolSchema, ...]
    read_skill: ToolSchema | None
    open_skill_ids: tuple[str, ...]
    catalog_by_id: Mapping[str, Injection]
    step_plans: Mapping[str, StepPlan]


class Agent:
    """An agent's declared configuration: a fluent, immutable builder whose methods return new agents.

    Args:
        name: The agent's name, recorded in the trace.
    """

    __slots__ = ("_compiled", "_lock", "spec")

    def __init__(self, name: str = "agent", *, spec: AgentSpec | None = None) -> None:
        if spec is None:
            if not isinstance(name, str) or not name.strip():
                raise DefinitionError(f"an agent's name must be a non-empty string, got {name!r}")
            spec = AgentSpec(name=name)
        self.spec: AgentSpec = spec
        """The declaration."""
        self._compiled: _Compiled | None = None
        self._lock = threading.Lock()

    def _with(self, **changes: object) -> Agent:
        return Agent(spec=replace(self.spec, **changes))  # type: ignore[arg-type]

    @property
    def name(self) -> str:
        """The agent's name."""
        return self.spec.name

    def __repr__(self) -> str:
        spec = self.spec
        return (
            f"Agent({spec.name!r}, injections={len(spec.injections)}, tools={len(spec.tools)}, "
            f"skill_map={'yes' if spec.skill_map is not None else 'no'}, "
            f"max_iterations={spec.max_iterations})"
        )

    # -- builder ---------------------------------------------------------------------------------

    def system_prompt(self, text: str) -> Agent:
        """Set the base system prompt (sent first, as the ``base`` segment; empty sends no segment)."""
        if not isinstance(text, str):
            raise DefinitionError(f"system_prompt must be a string, got {text!r}")
        return self._with(system_prompt=text)

    def injections(self, *injections: Injection) -> Agent:
        """Add injections (steering, instructions, facts, skills…), in declaration order."""
        for injection in injections:
            if not isinstance(injection, Injection):
                raise DefinitionError(f"injections() takes Injection values (define_*), got {injection!r}")
        return self._with(injections=(*self.spec.injections, *injections))

    def skills(self, *skills: Injection) -> Agent:
        """Add stand-alone skills (``define_skill``): loaded by ``read_skill`` from anywhere."""
        for skill in skills:
            if not isinstance(skill, Injection) or skill.flavor != "skill":
                raise DefinitionError(f"skills() takes define_skill values, got {skill!r}")
        return self.injections(*skills)

    def tools(self, *tools: ToolLike) -> Agent:
        """Add the agent's own tools: plain functions (schema from type hints) or :class:`Tool` values."""
        built = tuple(tool(t) if not isinstance(t, Tool) else t for t in tools)
        return self._with(tools=(*self.spec.tools, *built))

    def skill_map(self, skill_map: SkillMap) -> Agent:
        """Mount a skill graph (replaces any mounted before); its nodes join the catalog."""
        if not isinstance(skill_map, SkillMap):
            raise DefinitionError(f"skill_map() takes a built SkillMap, got {skill_map!r}")
        return self._with(skill_map=skill_map)

    def maps(self, *, renewal_grace: int = 3, non_parkable: bool = False) -> Agent:
        """Mount the engagement kernel over the skill map (docs/context-model.md §6): idle guesses park.

        Args:
            renewal_grace: Idle passes a tentative map survives before it parks (integer >= 1).
            non_parkable: Count idle passes but never park.
        """
        if isinstance(renewal_grace, bool) or not isinstance(renewal_grace, int) or renewal_grace < 1:
            raise DefinitionError(f"renewalGrace must be an integer >= 1, got {renewal_grace!r}")
        return self._with(maps=MapsOptions(renewal_grace, bool(non_parkable)))

    def max_iterations(self, n: int) -> Agent:
        """Set the per-turn iteration limit (a turn that still asks for tools at it stops early)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise DefinitionError(f"max_iterations must be an integer >= 1, got {n!r}")
        return self._with(max_iterations=n)

    def tool_timeout(self, seconds: float | None) -> Agent:
        """Set the default seconds a tool call may take (``None``: no limit, tools run inline)."""
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0
        ):
            raise DefinitionError(
                f"tool_timeout must be a positive number of seconds or None, got {seconds!r}"
            )
        return self._with(tool_timeout=seconds)

    def continuity(self, mode: Continuity) -> Agent:
        """``turn`` (default): each turn starts the cursor afresh; ``conversation``: the cursor carries."""
        if mode not in ("turn", "conversation"):
            raise DefinitionError(f"continuity must be 'turn' or 'conversation', got {mode!r}")
        return self._with(continuity=mode)

    def sampling(self, *, temperature: float | None = None, max_tokens: int | None = None) -> Agent:
        """Set the request's temperature and reply budget (``None`` leaves them to the provider)."""
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
            raise DefinitionError(f"max_tokens must be an integer, got {max_tokens!r}")
        return self._with(temperature=temperature, max_tokens=max_tokens)

    def options(self, **values: object) -> Agent:
        """Add free-form JSON-able settings recorded in ``run_start.options`` (``scenario="support"``…)."""
        return self._with(options=MappingProxyType({**self.spec.options, **values}))

    def tool_middleware(self, *middleware: ToolMiddleware) -> Agent:
        """Add before-tool middleware: each may rewrite a call's arguments before the tool runs.

        Each is called as ``middleware(call, context)`` with the
        :class:`~fpdebug.engine.types.ToolCall` as the previous one left it and a
        :class:`~fpdebug.engine.tool_middleware.ToolCallContext`, and returns ``None`` (no change), a
        mapping (the arguments to run with) or a ``ToolCall`` with the same id and tool. The chain
        runs in the Resolve stage (after the LLM call, once Route has chosen ``tool-calls``), over
        every call to one of the agent's tools whose arguments parsed (not ``read_skill``), before
        any tool of the batch runs. The ``llm_call`` keeps what the model asked for; the
        ``tool_result`` records the arguments the tool ran with. A middleware that raises, or
        returns something else, makes the call a ``failure`` result (``ToolMiddlewareError``; the
        tool does not run) and the loop goes on.

        Args:
            middleware: The functions, run after any added before.

        Returns:
            A new agent. With an honesty layer armed, ``run_start.honesty.tool_middleware`` is true,
            the inputs layer's rows say which values were rewritten and the answer layer lists the
            rewrites in its Assumed block.

        Raises:
            DefinitionError: One is not callable.
        """
        return self._with(tool_middleware=(*self.spec.tool_middleware, *check_tool_middleware(middleware)))

    def honesty(self, hooks: HonestyHooks | None) -> Agent:
        """Install custom honesty hooks, or with ``None`` disarm every honesty layer."""
        return self._with(honesty=hooks)

    def _arm(self, **arms: object) -> Agent:
        from fpdebug.engine.honesty_hooks import HonestyLayers

        layers = self.spec.honesty if self.spec.honesty is not None else HonestyLayers()
        if not isinstance(layers, HonestyLayers):
            raise DefinitionError(
                "this agent carries custom honesty hooks (agent.honesty(hooks)); arm the built-in "
                "layers on an agent without them, or call agent.honesty(None) first"
            )
        return self._with(honesty=layers.arm(**arms))

    def findings(
        self,
        *,
        argument_sources: bool | None = None,
        external_grounds: Mapping[str, object] | None = None,
        declared_sources: Mapping[str, object] | None = None,
        standing_line: Literal["always", "unsupported"] | bool | None = None,
    ) -> Agent:
        """Arm the whole findings ledger: the inputs, results and answer layers (docs/honesty.md §12).

        Args:
            argument_sources: Read the model's ``_from`` citations (stripped before the call runs)
                and search the app's grounds and declared sources.
            external_grounds: Values the app vouches for, label → value (arms argument sources).
            declared_sources: Documents the app declares, name → JSON data or text (arms argument
                sources).
            standing_line: Compose a one-line standing for prose answers: ``True``/``"always"``,
                or ``"unsupported"`` (only when a value is unsupported).

        Returns:
            A new agent; ``run_start.honesty`` records the arms.
        """
        return self._arm(
            inputs=True,
            results=True,
            answer=True,
            argument_sources=argument_sources,
            external_grounds=external_grounds,
            declared_sources=declared_sources,
            standing_line=standing_line,
        )

    def inputs_layer(
        self,
        *,
        argument_sources: bool | None = None,
        external_grounds: Mapping[str, object] | None = None,
        declared_sources: Mapping[str, object] | None = None,
    ) -> Agent:
        """Arm the inputs layer: after each LLM call, where every tool argument's value came from.

        Args:
            argument_sources: Read ``_from`` citations and search grounds and declared sources.
            external_grounds: Values the app vouches for, label → value (arms argument sources).
            declared_sources: Documents the app declares, name → data (arms argument sources).

        Returns:
            A new agent.
        """
        return self._arm(
            inputs=True,
            argument_sources=argument_sources,
            external_grounds=external_grounds,
            declared_sources=declared_sources,
        )

    def results_layer(self) -> Agent:
        """Arm the results layer: at the loop head, each tool batch judged once (status, coverage, values).

        Returns:
            A new agent.
        """
        return self._arm(results=True)

    def answer_layer(self, *, standing_line: Literal["always", "unsupported"] | bool | None = None) -> Agent:
        """Arm the answer layer: each final answer's values, supported by which rows or unsupported.

        Args:
            standing_line: ``True``/``"always"``, ``"unsupported"``, or ``False`` for no line.

        Returns:
            A new agent.
        """
        return self._arm(answer=True, standing_line=standing_line)

    def without(self, *, injection_ids: Iterable[str] = (), tool_names: Iterable[str] = ()) -> Agent:
        """The same agent with some context left out (what a backtrack rerun ablates).

        Args:
            injection_ids: Injections to drop from the catalog (skill-map nodes cannot be dropped).
            tool_names: Tools never offered nor dispatched (a call to one is answered as unknown).

        Returns:
            A new agent; ``run_start.options["without"]`` records what was left out.
        """
        ids = tuple(dict.fromkeys([*self.spec.excluded_injections, *injection_ids]))
        names = tuple(dict.fromkeys([*self.spec.ignored_tools, *tool_names]))
        return self._with(excluded_injections=ids, ignored_tools=names)

    # -- compilation -----------------------------------------------------------------------------

    def check(self) -> Agent:
        """Compile the declaration now, so mistakes surface before a run.

        Returns:
            This agent.

        Raises:
            DefinitionError: Duplicate ids or tool names, ``.maps()`` without a skill map, an
                excluded id that is not in the catalog or is a skill-map node…
        """
        self._compile()
        return self

    def _compile(self) -> _Compiled:
        with self._lock:
            if self._compiled is None:
                self._compiled = _compile(self.spec)
            return self._compiled

    # -- running ---------------------------------------------------------------------------------

    def conversation(
        self,
        *,
        provider: Provider,
        sink: EventSink | None = None,
        clock: Clock | None = None,
        run_id: str | None = None,
        options: Mapping[str, object] | None = None,
    ) -> Conversation:
        """Open a run that takes several user messages (``run_start`` is written now).

        Args:
            provider: The model.
            sink: Where the events go; a new :class:`~fpdebug.engine.sink.MemorySink` by default.
            clock: Stamps events and measures latencies; the system clock by default.
            run_id: The run's id; a random 12-hex-digit id by default.
            options: Extra settings recorded in ``run_start.options`` for this run only.

        Returns:
            The open :class:`Conversation` (already ended ``interrupted`` if the sink stopped the run
            on its ``run_start``: ``run_end`` follows it when the sink stored it, and nothing of the
            run is written when it refused it).
        """
        return Conversation(self, provider=provider, sink=sink, clock=clock, run_id=run_id, options=options)

    def run(
        self,
        user_message: str | Sequence[str],
        *,
        provider: Provider,
        sink: EventSink | None = None,
        clock: Clock | None = None,
        run_id: str | None = None,
        options: Mapping[str, object] | None = None,
    ) -> RunResult:
        """Run one or several turns and end the run.

        A provider failure does not raise: it is recorded (an ``llm_call`` with ``error``, then
        ``run_end`` ``failed``) and the result's ``status`` is ``failed`` (``result.check()`` raises
        it). A sink that raises :class:`~fpdebug.errors.RunInterrupted` ends the run as
        ``interrupted``. A ``KeyboardInterrupt`` is recorded as ``interrupted`` and re-raised; any
        other exception (a sink that cannot write, a bug) is recorded as ``failed`` when the sink
        still can, and re-raised.

        Args:
            user_message: One message, or a sequence of messages (one turn each).
            provider: The model.
            sink: Where the events go; a new ``MemorySink`` by default (``result.events``).
            clock: Stamps events and measures latencies.
            run_id: The run's id.
            options: Extra settings recorded in ``run_start.options``.

        Returns:
            The :class:`RunResult`.
        """
        messages = [user_message] if isinstance(user_message, str) else list(user_message)
        if not messages or not all(isinstance(m, str) for m in messages):
            raise DefinitionError("run() needs a user message (a string) or a non-empty list of them")
        conversation = self.conversation(
            provider=provider, sink=sink, clock=clock, run_id=run_id, options=options
        )
        for message in messages:
            if conversation.status != "running" or conversation.send(message).status != "completed":
                break
        return conversation.close()


def _tool_key(t: Tool) -> tuple[object, ...]:
    handler = id(t.handler) if t.handler is not None else None
    coverage = t.coverage if isinstance(t.coverage, str | None) else id(t.coverage)
    honesty = (t.hides_arguments, t.display_name, coverage)
    return (t.name, t.description, repr(dict(t.parameters)), handler, *honesty)


def _compile(spec: AgentSpec) -> _Compiled:
    graph = spec.skill_map
    excluded = set(spec.excluded_injections)
    node_ids = set(graph.node_ids) if graph is not None else set()
    known = {i.id for i in spec.injections} | {i.id for i in (graph.injections if graph is not None else ())}
    for sid in spec.excluded_injections:
        if sid in node_ids:
            raise DefinitionError(
                f"without(): {sid!r} is a skill-map node; a node cannot be left out of its map"
            )
        if sid not in known:
            raise DefinitionError(f"without(): no injection {sid!r} in this agent")
    own = tuple(i for i in spec.injections if i.id not in excluded)
    catalog = own + (graph.injections if graph is not None else ())
    setup = PassSetup(catalog, skill_map=graph)  # refuses duplicate ids
    plan: EngagementPlan | None = None
    if spec.maps is not None:
        plan = skill_map_plan(
            graph, renewal_grace=spec.maps.renewal_grace, non_parkable=spec.maps.non_parkable
        )
        setup = PassSetup(catalog, skill_map=graph, engagement=plan)

    ignored = set(spec.ignored_tools)
    step_plans = step_plans_of(catalog)
    by_name: dict[str, Tool] = {}
    for t in (*spec.tools, *(t for injection in catalog for t in injection.tools)):
        if t.name == READ_SKILL:
            raise DefinitionError(f"the tool name {READ_SKILL!r} is reserved for loading skills")
        if t.name == SKIP_STEP and step_plans:
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
    agent_tools = tuple(dict.fromkeys(t.name for t in spec.tools if t.name not in ignored))

    # Skills the gate admits from anywhere: the map's open skills, then stand-alone read_skill ids.
    standalone = tuple(
        i.id for i in own if isinstance(i.trigger, LlmActivated) and i.trigger.via_tool_name == READ_SKILL
    )
    open_ids = tuple(dict.fromkeys([*(graph.open_skill_ids if graph is not None else ()), *standalone]))
    read_skill: ToolSchema | None = None
    if graph is not None or standalone:
        skills = [i for i in catalog if i.flavor == "skill" or i.id in standalone]
        read_skill = _read_skill_schema(skills)
    return _Compiled(
        setup=setup,
        plan=plan,
        tools_by_name=MappingProxyType(by_name),
        agent_tools=tuple(by_name[n].schema() for n in agent_tools),
        read_skill=read_skill,
        open_skill_ids=open_ids,
        catalog_by_id=MappingProxyType({i.id: i for i in catalog}),
        step_plans=MappingProxyType(step_plans),
    )


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


# ----------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How one turn ended."""

    turn: int
    """The 1-based turn."""
    user_message: str
    """What the user said."""
    content: str
    """The final answer (empty when the turn did not complete)."""
    iterations: int
    """The iteration of the final pass (or of the pass that was running when the turn stopped)."""
    status: RunStatus
    """``completed``, or how the run ended during this turn."""
    stopped_early: StoppedEarly | None = None
    """Set when the iteration limit cut the turn short."""
    input_tokens: int = 0
    """Prompt tokens of the turn's calls."""
    output_tokens: int = 0
    """Completion tokens of the turn's calls."""
    error: ErrorInfo | None = None
    """Why the run failed during this turn."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended, with its turns (and its events when it recorded into memory)."""

    run_id: str
    """The run's id."""
    status: RunStatus
    """``completed``, ``failed`` or ``interrupted``."""
    turns: tuple[TurnResult, ...]
    """Every turn run, in order."""
    error: ErrorInfo | None = None
    """Why it failed."""
    exception: BaseException | None = None
    """The exception behind a failure (a :class:`~fpdebug.errors.ProviderError`…)."""
    input_tokens: int = 0
    """Prompt tokens of all calls."""
    output_tokens: int = 0
    """Completion tokens of all calls."""
    events: tuple[TraceEvent, ...] | None = None
    """The events, when the run recorded into a :class:`~fpdebug.engine.sink.MemorySink`."""

    @property
    def content(self) -> str:
        """The last turn's final answer (empty when there is none)."""
        return self.turns[-1].content if self.turns else ""

    @property
    def iterations(self) -> int:
        """Iterations over all turns."""
        return sum(turn.iterations for turn in self.turns)

    def check(self) -> RunResult:
        """Raise the failure (or :class:`~fpdebug.errors.RunInterrupted`) unless the run completed.

        Returns:
            This result, when the run completed.
        """
        if self.status == "completed":
            return self
        if self.exception is not None:
            raise self.exception
        if self.status == "interrupted":
            raise RunInterrupted(f"run {self.run_id} was interrupted")
        why = self.error.message if self.error is not None else "unknown error"
        raise FpdebugError(f"run {self.run_id} failed: {why}")


def _unreadable_result(tool_name: str, exc: Exception) -> ErrorInfo:
    """A tool's return value that cannot become the text the model reads, as the tool's failure.

    A value that refers to itself, or is nested deeper than JSON encoding allows, would otherwise
    raise out of the loop; it is recorded like a tool that raised.
    """
    return ErrorInfo(
        type="UnreadableToolResult",
        message=f"{tool_name} returned a value that cannot be written as JSON: {type(exc).__name__}: {exc}",
    )


def _well_formed_call(call: ToolCallRecord) -> ToolCallRecord:
    """``call`` with every lone surrogate of its id, name and arguments replaced by U+FFFD."""
    update: dict[str, object] = {}
    for name in ("id", "name", "raw_args"):
        text = getattr(call, name)
        if isinstance(text, str) and well_formed_text(text) is not text:
            update[name] = well_formed_text(text)
    args = well_formed_value(call.args)
    if args is not call.args:
        update["args"] = args
    return call.model_copy(update=update) if update else call


def _well_formed_reply(response: LlmResponse) -> LlmResponse:
    """The provider's reply with every lone surrogate replaced by U+FFFD (what the trace records).

    A model can send half an emoji; the trace holds UTF-8, so it records U+FFFD. Repairing the
    reply as it arrives makes the tool receive, and the conversation send back, that same text.
    """
    content = well_formed_text(response.content)
    stop_reason = response.stop_reason
    if stop_reason is not None:
        stop_reason = well_formed_text(stop_reason)
    calls = [_well_formed_call(call) for call in response.tool_calls]
    if (
        content is response.content
        and stop_reason is response.stop_reason
        and all(a is b for a, b in zip(calls, response.tool_calls, strict=True))
    ):
        return response
    return response.model_copy(update={"content": content, "stop_reason": stop_reason, "tool_calls": calls})


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as the trace records it (a ``ProviderError`` keeps its status, not its prefix)."""
    # Exception text may hold a lone surrogate (a surrogateescape file name): repaired here, so the
    # model reads what the trace records (see fpdebug.trace.records.well_formed_text).
    if isinstance(exc, ProviderError):
        return ErrorInfo(type=type(exc).__name__, message=well_formed_text(exc.message), status=exc.status)
    return ErrorInfo(type=type(exc).__name__, message=well_formed_text(str(exc) or type(exc).__name__))


class _RunFailed(Exception):
    """Internal: the provider failed; its llm_call is recorded, run_end is due."""

    def __init__(self, error: ErrorInfo, cause: BaseException) -> None:
        super().__init__(error.message)
        self.error = error
        self.cause = cause


def _ms(start: datetime, end: datetime) -> float:
    return round((end - start).total_seconds() * 1000.0, 3)


def _coverage_of(declared: Tool | None, args: Mapping[str, object], result: object) -> str | None:
    """What a successful call's result covers, as its tool declares it (``None``: it declares none)."""
    coverage = declared.coverage if declared is not None else None
    if coverage is None or isinstance(coverage, str):
        return coverage
    try:
        text = coverage(dict(args), result)
    except Exception as exc:
        return f"unknown (the coverage declaration raised {type(exc).__name__}: {exc})"
    if text is None:
        return None
    return text if isinstance(text, str) else str(text)


# ----------------------------------------------------------------------------------------------
# The run


class Conversation:
    """An open run: send user messages one turn at a time, then :meth:`close` it (writes ``run_end``).

    Use it as a context manager to close it even when the caller fails::

        with agent.conversation(provider=model, sink=sink) as chat:
            chat.send("Where is my order?")
            chat.send("And the refund?")
        result = chat.result
    """

    def __init__(
        self,
        agent: Agent,
        *,
        provider: Provider,
        sink: EventSink | None,
        clock: Clock | None,
        run_id: str | None,
        options: Mapping[str, object] | None,
    ) -> None:
        self.agent = agent
        """The agent."""
        self.provider = check_provider(provider)
        """The model."""
        self.compiled = agent._compile()
        self.sink: EventSink = sink if sink is not None else MemorySink()
        """Where the events go."""
        self.clock: Clock = clock or SystemClock()
        """The run's clock."""
        self.run_id: str = run_id or uuid.uuid4().hex[:12]
        """The run's id."""
        self.recorder = Recorder(self.sink, clock=self.clock, run_id=self.run_id)
        """Stamps and emits the events."""
        self.history: list[Message] = []
        """The conversation as the model sees it, across turns."""
        self.turns: list[TurnResult] = []
        """The turns run so far."""
        self.calls = 0
        """LLM calls made so far (the next ``llm_call``'s ``call_index`` is one more)."""
        self.cursor: str | None = None
        """The cursor at the end of the last turn (carried only under ``continuity('conversation')``)."""
        self.status: RunStatus | Literal["running"] = "running"
        """``running`` until ``run_end`` is written."""
        self._result: RunResult | None = None
        self._busy = threading.Lock()
        try:
            self.recorder.emit(RunStartEvent, **self._run_start_fields(options))
        except RunInterrupted as stop:  # stopped as it opens: the conversation is born ended
            if stop.stored:
                self._end("interrupted")  # run_start is in the trace: close the run it opened
            else:
                # The sink refused run_start: nothing of the run is in the trace, and a run_end alone
                # would close a run the trace never opened.
                self.status = "interrupted"
                events = tuple(self.sink.events) if isinstance(self.sink, MemorySink) else None
                self._result = RunResult(run_id=self.run_id, status="interrupted", turns=(), events=events)

    def _run_start_fields(self, options: Mapping[str, object] | None) -> dict[str, object]:
        spec, compiled = self.agent.spec, self.compiled
        recorded: dict[str, object] = {"tool_timeout": spec.tool_timeout, "continuity": spec.continuity}
        if spec.temperature is not None:
            recorded["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            recorded["max_tokens"] = spec.max_tokens
        if spec.excluded_injections or spec.ignored_tools:
            recorded["without"] = {
                "injection_ids": list(spec.excluded_injections),
                "tool_names": list(spec.ignored_tools),
            }
        recorded.update(spec.options)
        recorded.update(options or {})
        return {
            "agent_name": spec.name,
            "provider": self.provider.name,
            "model": self.provider.model,
            "max_iterations": spec.max_iterations,
            "system_prompt": spec.system_prompt,
            "injections": [i.declaration() for i in compiled.setup.injections],
            "tools": list(compiled.agent_tools),
            "skill_map": spec.skill_map.declaration() if spec.skill_map is not None else None,
            "maps": compiled.plan.declaration() if compiled.plan is not None else None,
            "honesty": spec.honesty.run_arms(self) if spec.honesty is not None else None,
            "options": recorded,
        }

    @property
    def result(self) -> RunResult | None:
        """The run's result once it ended (``None`` while it is open)."""
        return self._result

    def send(self, user_message: str) -> TurnResult:
        """Run one turn.

        Args:
            user_message: What the user says.

        Returns:
            The turn's result. When the run ended during the turn (``failed`` or ``interrupted``), the
            conversation is closed and further sends raise.

        Raises:
            FpdebugError: The conversation has ended, or another turn is running.
            KeyboardInterrupt: Re-raised after ``run_end`` ``interrupted`` was recorded.
            Exception: A sink that cannot write (after trying to record ``run_end`` ``failed``).
        """
        if not isinstance(user_message, str):
            raise DefinitionError(f"a user message must be a string, got {user_message!r}")
        # A lone surrogate (a non-UTF-8 file name passed on through `--message "$(ls)"`) is sent as
        # U+FFFD: the trace can hold only that, and the model must read what the trace records.
        user_message = well_formed_text(user_message)
        if self.status != "running":
            raise FpdebugError(f"run {self.run_id} has ended ({self.status}); open a new conversation")
        if not self._busy.acquire(blocking=False):
            raise FpdebugError(f"run {self.run_id}: a turn is already running; send one message at a time")
        try:
            loop = TurnLoop(self, len(self.turns) + 1, user_message)
            try:
                turn = loop.run()
            except _RunFailed as failed:
                turn = loop.result("failed", error=failed.error)
                self.turns.append(turn)
                self._end("failed", error=failed.error, exception=failed.cause)
                return turn
            except RunInterrupted:
                turn = loop.result("interrupted")
                self.turns.append(turn)
                self._end("interrupted")
                return turn
            except KeyboardInterrupt:
                self.turns.append(loop.result("interrupted"))
                self._end_quietly("interrupted", None)
                raise
            except BaseException as exc:
                error = error_info(exc)
                self.turns.append(loop.result("failed", error=error))
                self._end_quietly("failed", error, exc)
                raise
            self.turns.append(turn)
            if self.agent.spec.continuity == "conversation":
                self.cursor = loop.cursor
            return turn
        finally:
            self._busy.release()

    def close(self) -> RunResult:
        """End the run (``run_end`` ``completed`` if nothing ended it before) and return its result."""
        if self._result is None:
            self._end("completed")
        assert self._result is not None
        return self._result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._result is not None:
            return
        if exc is None:
            self.close()
        elif isinstance(exc, KeyboardInterrupt | RunInterrupted):
            self._end_quietly("interrupted", None)
        else:
            self._end_quietly("failed", error_info(exc), exc)

    def _end(
        self, status: RunStatus, *, error: ErrorInfo | None = None, exception: BaseException | None = None
    ) -> None:
        inputs = sum(t.input_tokens for t in self.turns)
        outputs = sum(t.output_tokens for t in self.turns)
        self.status = status
        # The result exists before the write, so a sink that fails on run_end loses no answer.
        self._result = RunResult(
            run_id=self.run_id,
            status=status,
            turns=tuple(self.turns),
            error=error,
            exception=exception,
            input_tokens=inputs,
            output_tokens=outputs,
            events=tuple(self.sink.events) if isinstance(self.sink, MemorySink) else None,
        )
        try:
            self.recorder.emit(
                RunEndEvent,
                status=status,
                error=error,
                turns=len(self.turns),
                input_tokens=inputs,
                output_tokens=outputs,
            )
        except RunInterrupted:
            pass  # a gate still stopping the run: it is ending anyway, and the gate chose to drop run_end
        if isinstance(self.sink, MemorySink):
            self._result = replace(self._result, events=tuple(self.sink.events))

    def _end_quietly(
        self, status: RunStatus, error: ErrorInfo | None, exception: BaseException | None = None
    ) -> None:
        # The run is already going down with another exception: record what we can, never mask it.
        try:
            self._end(status, error=error, exception=exception)
        except BaseException:
            pass


class TurnLoop:
    """One turn of the ReAct loop (docs/context-model.md §7), with every carrier of docs/context-model.md §3.1 / §7.3 as an attribute.

    The honesty hooks receive this object; its public attributes are the loop's state: ``turn``,
    ``iteration``, ``user_message``, ``history`` (the conversation so far), ``tool_results`` and
    ``batch_iteration`` (the batch in place and the iteration that dispatched it), ``batch_texts``
    and ``batch_coverage`` (that batch as the model read it, and what each call declared it
    covers), ``calls_to_run`` (the calls of the reply as they will run, after the tool middleware),
    ``stopped_early`` (set on the final branch), ``activated``, ``cursor``, ``recorder`` (to emit
    ``finding`` events), ``conversation``.
    """

    def __init__(self, conversation: Conversation, turn: int, user_message: str) -> None:
        self.conversation = conversation
        """The run this turn belongs to."""
        self.turn = turn
        """The 1-based turn."""
        self.user_message = user_message
        """What the user said."""
        self.recorder = conversation.recorder
        """Stamps and emits the events."""
        self.spec = conversation.agent.spec
        self.compiled = conversation.compiled
        self.history = conversation.history
        """The conversation so far (shared with the run; this turn appends to it)."""
        self.iteration = 1
        """The current iteration (seed 1; every loop branch increments, final does not)."""
        # Carriers (docs/context-model.md §3.1): None means "feature unused", different from empty.
        self.cursor: str | None = conversation.cursor if self.spec.continuity == "conversation" else None
        """The skill-map cursor after the last pass."""
        self.activated: tuple[str, ...] = ()
        """Turn-cumulative ``read_skill`` activations and accepted proposal targets."""
        self.provenance: dict[str, Activation] = {}
        """Who activated each id."""
        self.pending_pick: str | None = None
        self.pending_transition: PendingToolTransition | None = None
        self.leases: tuple[InstructionLease, ...] | None = None
        self.accepted: tuple[str, ...] | None = None
        self.served: tuple[str, ...] | None = None
        self.engagement: tuple[MapEngagementRecord, ...] | None = None
        self.prior_by_slot = None
        self.step_pointer: tuple[StepPointer, ...] | None = None
        self.tool_results: tuple[ToolResult, ...] | None = None
        """The batch in place (the previous tool-calls branch's results)."""
        self.batch_iteration: int | None = None
        """The iteration that dispatched :attr:`tool_results`."""
        self.batch_texts: tuple[str, ...] | None = None
        """Each result of the batch in place as the model read it (aligned with :attr:`tool_results`)."""
        self.batch_coverage: tuple[str | None, ...] | None = None
        """The coverage each call of the batch in place declared (aligned with :attr:`tool_results`)."""
        self.calls_to_run: tuple[ToolCallRecord, ...] = ()
        """The calls Route dispatches in this iteration, each with the arguments it runs with (after
        the tool middleware); empty on the final branch."""
        self.stopped_early: StoppedEarly | None = None
        """Set on the final branch when a limit cut the turn short (before the answer layer reads it)."""
        self.input_tokens = 0
        """Prompt tokens of this turn's calls."""
        self.output_tokens = 0
        """Completion tokens of this turn's calls."""

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> TurnResult:
        """Run the turn to its final answer."""
        emit, turn = self.recorder.emit, self.turn
        emit(TurnStartEvent, turn=turn, user_message=self.user_message)
        self.history.append(Message(role="user", content=self.user_message))
        max_iterations = self.spec.max_iterations
        while True:
            self._honesty_loop_head()
            result = self._evaluate()
            request = self._compose(result)
            reply, latency_ms = self._call(request)
            response = self._honesty_inputs(request, reply)  # what Route may dispatch
            calls = response.tool_calls
            route: Literal["tool-calls", "final"] = (
                "tool-calls" if calls and self.iteration < max_iterations else "final"
            )
            self._record_llm_call(request, latency_ms=latency_ms, response=reply, route=route)
            refused: dict[int, ErrorInfo] = {}
            self.calls_to_run = ()
            if route == "tool-calls":
                self.calls_to_run, refused = self._tool_middleware(calls)
            self._honesty_inputs_record()
            if route == "final":
                return self._final(response)
            # The model's own request stays in the history; the tool messages say what ran.
            self.history.append(Message(role="assistant", content=response.content, tool_calls=list(calls)))
            self._dispatch(self.calls_to_run, refused)
            self.iteration += 1

    def result(self, status: RunStatus, *, error: ErrorInfo | None = None) -> TurnResult:
        """This turn's result as it stands (for a turn the run ended during)."""
        return TurnResult(
            turn=self.turn,
            user_message=self.user_message,
            content="",
            iterations=self.iteration,
            status=status,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            error=error,
        )

    def _emit(self, event_type: type[BaseModel], /, **fields: object) -> None:
        self.recorder.emit(event_type, turn=self.turn, iteration=self.iteration, **fields)

    # -- one Evaluate pass ------------------------------------------------------------------------

    def _evaluate(self) -> PassResult:
        batch = self.tool_results
        result = evaluate_pass(
            self.compiled.setup,
            PassInputs(
                iteration=self.iteration,
                max_iterations=self.spec.max_iterations,
                user_message=self.user_message,
                history=tuple(self.history),
                last_tool_result=batch[-1] if batch else None,
                tool_results=batch,
                batch_iteration=self.batch_iteration,
                activated_injection_ids=self.activated,
                activation_provenance=dict(self.provenance),
                prior_by_slot=self.prior_by_slot,
                current_skill_id=self.cursor,
                pending_skill_pick=self.pending_pick,
                step_pointer=self.step_pointer,
                pending_tool_transition=self.pending_transition,
                instruction_leases=self.leases,
                accepted_skill_picks=self.accepted,
                served_injection_ids=self.served,
                map_engagement=self.engagement,
            ),
        )
        # Outputs REPLACE the carriers (docs/context-model.md §3.2), never concatenate.
        if result.routes:
            self.cursor = result.next_skill_cursor
        if result.next_step_pointer is not None:
            self.step_pointer = result.next_step_pointer
        if result.next_instruction_leases is not None:
            self.leases = result.next_instruction_leases
        if result.engagement is not None:
            self.engagement = result.engagement.advance.next
            self.served = result.next_served_injection_ids
        self.prior_by_slot = result.by_slot
        self._record_pass(result)
        return result

    def _record_pass(self, result: PassResult) -> None:
        # In the order of docs/context-model.md §3.4: the advance, the sweep, a conflict, engagement, the told-the-truth
        # checks, then the pass itself (its context.evaluated comes last).
        move = result.cursor_move_fields()
        if move is not None:
            self._emit(CursorMoveEvent, **move)
        prune = result.lease_prune_fields()
        if prune is not None:
            self._emit(LeasePruneEvent, **prune)
        conflict = result.route_conflict_fields()
        if conflict is not None:
            self._emit(RouteConflictEvent, **conflict)
        engagement = result.engagement_fields()
        if engagement is not None:
            self._emit(EngagementEvent, **engagement)
        for reroute in result.reroute_fields():
            self._emit(RerouteSupersededEvent, **reroute)
        self._emit(PassEvent, **result.pass_fields())

    # -- slots and the call -----------------------------------------------------------------------

    def _compose(self, result: PassResult) -> LlmRequest:
        segments: list[PromptSegment] = []
        if self.spec.system_prompt:
            segments.append(PromptSegment(source="base", text=self.spec.system_prompt))
        injected: list[Message] = []
        ignored = set(self.spec.ignored_tools)
        parked = set(result.parked_tool_names or ())
        tools: dict[str, ToolSchema] = {s.name: s for s in self.compiled.agent_tools}
        for row in result.active_injections:
            if row.lands_in_system_prompt and row.system_prompt:
                segments.append(PromptSegment(source=row.flavor, injection_id=row.id, text=row.system_prompt))
            injected.extend(m.model_copy(update={"injection_id": row.id}) for m in row.messages)
            for schema in row.tools:
                if schema.name not in ignored:
                    tools.setdefault(schema.name, schema)
        procedure = current_step(self.step_pointer, self.compiled.step_plans)
        if procedure is not None:
            # A step in progress narrows the offer to it (docs/context-model.md §5.6; reference buildToolsSlot.ts):
            # the stepped skill's other step tools are held out unless another source offers them
            # too, the current step's tool leads with the banner, and skip_step is offered.
            pointer, _plan, step = procedure
            others = {s.name for s in self.compiled.agent_tools}
            for row in result.active_injections:
                if row.id != pointer.skill_id:
                    others.update(schema.name for schema in row.tools)
            for name in held_out_step_tools(self.step_pointer, self.compiled.step_plans, others):
                tools.pop(name, None)
            offered = tools.get(step.tool)
            if offered is not None:
                banner = step_banner_prefix(pointer, step)
                tools[step.tool] = offered.model_copy(update={"description": banner + offered.description})
        if self.compiled.read_skill is not None:
            tools.setdefault(READ_SKILL, self.compiled.read_skill)
        if procedure is not None:
            tools.setdefault(SKIP_STEP, skip_step_schema(procedure[0], procedure[1]))
        return LlmRequest(
            system_prompt=segments,
            messages=[*self.history, *injected],
            tools=[schema for name, schema in tools.items() if name not in parked],
            temperature=self.spec.temperature,
            max_tokens=self.spec.max_tokens,
        )

    def _call(self, request: LlmRequest) -> tuple[LlmResponse, float]:
        """Ask the provider; return its reply and the latency in ms (a failure is recorded here)."""
        conversation = self.conversation
        conversation.calls += 1
        start = self.recorder.now()
        try:
            response = conversation.provider.complete(request)
            if not isinstance(response, LlmResponse):
                raise ProviderError(
                    f"{conversation.provider.name}.complete() returned {type(response).__name__} "
                    f"{response!r:.80}, not an LlmResponse"
                )
            # Repaired before anything reads it: the tool receives, the conversation echoes and the
            # trace records the same arguments and text.
            response = _well_formed_reply(response)
        except RunInterrupted:
            raise
        except Exception as exc:  # every provider failure is the run's failure, recorded, not a traceback
            latency_ms = _ms(start, self.recorder.now())
            error = error_info(exc)
            self._record_llm_call(request, latency_ms=latency_ms, error=error)
            raise _RunFailed(error, exc) from exc
        latency_ms = _ms(start, self.recorder.now())
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        return response, latency_ms

    def _record_llm_call(
        self,
        request: LlmRequest,
        *,
        latency_ms: float,
        response: LlmResponse | None = None,
        route: str | None = None,
        error: ErrorInfo | None = None,
    ) -> None:
        """Record one ``llm_call``: the request, and the reply with its route or the failure."""
        conversation = self.conversation
        self._emit(
            LlmCallEvent,
            call_index=conversation.calls,
            provider=conversation.provider.name,
            model=conversation.provider.model,
            request=request,
            response=response,
            error=error,
            latency_ms=latency_ms,
            route=route,
        )

    def _record_tool_result(
        self,
        call: ToolCallRecord,
        text: str,
        start: datetime,
        *,
        status: ToolResultStatus | None = None,
        **fields: object,
    ) -> None:
        """Record one call's ``tool_result``: the text the model reads, how long the call took since
        ``start``, and the kind's other ``fields`` (status, error, effects, coverage, step…)."""
        self._emit(
            ToolResultEvent,
            tool_call_id=call.id,
            tool_name=call.name,
            args=dict(call.args),
            result=text,
            status=status,
            duration_ms=_ms(start, self.recorder.now()),
            **fields,
        )

    def _step_on_return(self, tool_name: str) -> tuple[str, dict[str, object]]:
        """Advance the step pointer for a call that ran clean: the suffix the model reads after the
        result and the ``tool_result.step`` field (both empty when nothing moved, docs/context-model.md §5.6)."""
        moved = step_on_return(self.step_pointer, self.compiled.step_plans, tool_name)
        if moved is None:
            return "", {}  # no procedure in progress, or not the current step's tool: no key written
        boundary, suffix = moved
        self.step_pointer = boundary.next
        return suffix, {"step": boundary.record()}

    def _skip_step(self, call: ToolCallRecord) -> str:
        """The framework's ``skip_step``: skip (or hold) the current step; record it; return the text."""
        start = self.recorder.now()
        if call.raw_args is not None:
            message = f'skip_step needs {{"reason": "<why>"}}, got {call.raw_args!r}'
            error = ErrorInfo(type="InvalidToolArguments", message=message)
            self._record_tool_result(call, message, start, status="invalid", error=error)
            return message
        reason = call.args.get("reason")
        text, boundary = skip_step_result(self.step_pointer, self.compiled.step_plans, reason)
        fields: dict[str, object] = {}
        if boundary is not None:
            self.step_pointer = boundary.next
            fields["step"] = boundary.record()
        self._record_tool_result(call, text, start, **fields)
        return text

    def _final(self, response: LlmResponse) -> TurnResult:
        content = response.content
        pending = len(response.tool_calls)
        stopped = (
            StoppedEarly(
                reason="max-iterations",
                iteration=self.iteration,
                pending_tool_calls=pending,
                answer_was_empty=not content.strip(),
            )
            if pending
            else None
        )
        self.stopped_early = stopped
        self._honesty_answer(content)
        self.history.append(Message(role="assistant", content=content))
        self.recorder.emit(
            TurnEndEvent,
            turn=self.turn,
            final_content=content,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            iteration_count=self.iteration,
            stopped_early=stopped,
        )
        return TurnResult(
            turn=self.turn,
            user_message=self.user_message,
            content=content,
            iterations=self.iteration,
            status="completed",
            stopped_early=stopped,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
        )

    # -- the tool-calls stage ---------------------------------------------------------------------

    def _tool_middleware(
        self, calls: Sequence[ToolCallRecord]
    ) -> tuple[tuple[ToolCallRecord, ...], dict[int, ErrorInfo]]:
        """Each call as it will run, and the positions of the calls a middleware refused."""
        chain = self.spec.tool_middleware
        if not chain:
            return tuple(calls), {}
        ran: list[ToolCallRecord] = []
        refused: dict[int, ErrorInfo] = {}
        for position, call in enumerate(calls):
            ignored = call.name in self.spec.ignored_tools
            found = None if ignored else self.compiled.tools_by_name.get(call.name)
            if found is None or call.raw_args is not None:
                ran.append(call)  # read_skill, an unknown tool or unparsed arguments: nothing to rewrite
                continue
            context = ToolCallContext(
                self.conversation.run_id, self.turn, self.iteration, found, MappingProxyType(dict(call.args))
            )
            try:
                rewritten = apply_tool_middleware(chain, ToolCall(call.id, call.name, call.args), context)
            except ToolMiddlewareError as exc:
                # Refused calls run with nothing rewritten, so their tool_result.args are the request.
                refused[position] = ErrorInfo(type=type(exc).__name__, message=str(exc))
                ran.append(call)
                continue
            ran.append(call.model_copy(update={"args": well_formed_value(dict(rewritten.args))}))
        return tuple(ran), refused

    def _dispatch(self, calls: Sequence[ToolCallRecord], refused: Mapping[int, ErrorInfo]) -> None:
        compiled = self.compiled
        skill_map = compiled.setup.skill_map
        plan = compiled.plan
        # The top of the tool-calls stage (docs/context-model.md §5.5): per-batch carriers reset, toolResults too.
        carriers = PickCarriers.start_of_batch(
            self.activated,
            pending_skill_pick=self.pending_pick,
            graph=skill_map is not None,
            maps=plan is not None,
        )
        state = EffectState(self.activated, self.leases, self.pending_transition).start_of_batch()
        scope = EffectScope(self.iteration, self.cursor, skill_map, compiled.catalog_by_id)
        parked = parked_member_ids(plan, self.engagement) if plan is not None else frozenset()
        batch: list[ToolResult] = []
        texts: list[str] = []
        coverage: list[str | None] = []
        for position, call in enumerate(calls):
            declared: str | None = None
            if call.name == READ_SKILL and compiled.read_skill is not None:
                pick, text, status = self._read_skill(call, skill_map, parked)
                if pick is not None:
                    # The gate and effect judging share one activation list (docs/context-model.md §5.5, §4.2).
                    carriers = apply_skill_pick(
                        replace(carriers, activated_injection_ids=state.activated_injection_ids), pick
                    )
                    state = replace(state, activated_injection_ids=carriers.activated_injection_ids)
                    if pick.accepted and pick.skill_id not in self.provenance:
                        self.provenance[pick.skill_id] = Activation(READ_SKILL, self.iteration, call.id)
                batch.append(ToolResult(READ_SKILL, text, call.id, status))
            elif call.name == SKIP_STEP and compiled.step_plans:
                text = self._skip_step(call)
                batch.append(ToolResult(SKIP_STEP, text, call.id))
            else:
                state, text, declared = self._run_tool(
                    call, scope, state, batch, refused=refused.get(position)
                )
            texts.append(text)
            coverage.append(declared)
            # The model reads each result as a tool message, in call order.
            self.history.append(Message(role="tool", content=text, tool_call_id=call.id, tool_name=call.name))
        self.activated = state.activated_injection_ids
        if skill_map is not None:
            self.pending_pick = carriers.pending_skill_pick
        if plan is not None:
            self.accepted = carriers.accepted_skill_picks
        self.leases = state.instruction_leases
        self.pending_transition = state.pending_tool_transition
        self.tool_results = tuple(batch)
        self.batch_iteration = self.iteration
        self.batch_texts = tuple(texts)
        self.batch_coverage = tuple(coverage)
        conflict = proposal_conflict(state, from_skill_id=self.cursor)
        if conflict is not None:
            self._emit(RouteConflictEvent, **conflict.fields())

    def _read_skill(
        self, call: ToolCallRecord, skill_map: SkillMap | None, parked: frozenset[str]
    ) -> tuple[SkillPick | None, str, ToolResultStatus | None]:
        start = self.recorder.now()
        requested = call.args.get("id")
        if call.raw_args is not None or not isinstance(requested, str) or not requested.strip():
            message = f'read_skill needs {{"id": "<skill id>"}}, got {call.raw_args or call.args!r}'
            error = ErrorInfo(type="InvalidToolArguments", message=message)
            self._record_tool_result(call, message, start, status="invalid", error=error)
            return None, message, "invalid"
        if skill_map is not None:
            pick = gate_skill_pick(
                requested,
                hops=skill_map.allowed_skill_ids(self.cursor),
                open_skill_ids=self.compiled.open_skill_ids,
                parked_member_ids=parked,
                current_skill_id=self.cursor,
            )
        else:  # no graph: every read_skill skill is admitted like an open skill
            pick = gate_skill_pick(requested, hops=(), open_skill_ids=self.compiled.open_skill_ids)
        text = self._skill_text(pick)
        self._record_tool_result(call, text, start, skill_gate=pick.record())
        if not pick.accepted:
            self._emit(
                SkillRejectedEvent,
                requested_id=requested,
                current_skill_id=pick.current_skill_id,
                allowed=list(pick.allowed),
                tool_call_id=call.id,
                posture=pick.posture,
            )
        return pick, text, None

    def _skill_text(self, pick: SkillPick) -> str:
        if not pick.accepted:
            return pick.refusal()
        skill = self.compiled.catalog_by_id.get(pick.skill_id)
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
        plan = self.compiled.step_plans.get(pick.skill_id)
        if plan is not None:
            text += read_skill_step_intro(plan)  # where its procedure starts
        return text

    def _run_tool(
        self,
        call: ToolCallRecord,
        scope: EffectScope,
        state: EffectState,
        batch: list[ToolResult],
        *,
        refused: ErrorInfo | None = None,
    ) -> tuple[EffectState, str, str | None]:
        """Run one call, record its ``tool_result``; return the effect state, the text read, the coverage.

        ``refused`` is a tool middleware's failure: the tool does not run, the call is a ``failure``.
        """
        start = self.recorder.now()
        found = None if call.name in self.spec.ignored_tools else self.compiled.tools_by_name.get(call.name)
        value: object = None
        envelope: Envelope | None = None
        content_text = ""
        error: ErrorInfo | None = None
        status: ToolResultStatus | None = None
        if refused is not None:
            status, error = "failure", refused
        elif call.raw_args is not None:
            status = "invalid"
            error = ErrorInfo(
                type="InvalidToolArguments",
                message=f"the arguments are not a JSON object: {call.raw_args[:200]!r}",
            )
        elif found is None:
            status = "invalid"
            error = ErrorInfo(type="ToolError", message=f"there is no tool named {call.name!r}")
        elif found.handler is None:
            status = "failure"
            error = ErrorInfo(type="ToolError", message=f"tool {call.name!r} is declared without a handler")
        else:
            handler = found.handler
            timeout = handler.timeout if isinstance(handler, ToolFunction) else None
            if timeout is None:
                timeout = self.spec.tool_timeout
            try:
                value = call_tool(handler, call.args, timeout=timeout)
            except RunInterrupted:
                raise
            except InvalidToolArguments as exc:
                status, error = (
                    "invalid",
                    ErrorInfo(type="InvalidToolArguments", message=well_formed_text(str(exc))),
                )
            except ToolTimeout as exc:
                status, error = "failure", ErrorInfo(type="TimeoutError", message=f"{call.name} {exc}")
            except Exception as exc:
                status, error = "failure", error_info(exc)
            else:
                if isinstance(value, BaseModel):
                    # call_tool repaired the strings it could walk; a model's are repaired once dumped.
                    value = well_formed_value(value.model_dump(mode="json"))
                envelope = parse_envelope(value)
                try:
                    content_text = text_of(value if envelope is None else envelope.content)
                except (ValueError, TypeError, RecursionError) as exc:
                    status, error = "failure", _unreadable_result(call.name, exc)
        if error is not None:
            text = f"Error: {call.name} failed: {error.type}: {error.message}"
            self._record_tool_result(call, text, start, status=status, error=error)
            batch.append(ToolResult(call.name, text, call.id, status))
            return state, text, None
        if envelope is None:
            warn_near_miss(value, tool_name=call.name)
            suffix, step = self._step_on_return(call.name)
            text = content_text + suffix
            coverage = _coverage_of(found, call.args, value)
            self._record_tool_result(call, text, start, coverage=coverage, **step)
            batch.append(ToolResult(call.name, value, call.id))
            return state, text, coverage
        judged = judge_effects(envelope, tool_name=call.name, tool_call_id=call.id, scope=scope, state=state)
        for sid, activation in judged.activations:
            self.provenance.setdefault(sid, activation)
        # A declared status does not stop the advance: only a call that failed to run clean does
        # (reference toolCalls.ts: `executed && !error && !denied && !skillRejected && !ceilingRefused`).
        suffix, step = self._step_on_return(call.name)
        text = content_text + suffix + judged.suffix
        coverage = _coverage_of(found, call.args, envelope.content)
        self._record_tool_result(
            call,
            text,
            start,
            status=envelope.status,
            effects=list(judged.judgments),
            malformed=list(envelope.malformed),
            coverage=coverage,
            **step,
        )
        for lease in judged.grants:
            self._emit(LeaseGrantEvent, lease=lease.record())
        for prune in judged.prunes:
            self._emit(LeasePruneEvent, **prune.fields())
        batch.append(ToolResult(call.name, envelope.content, call.id, envelope.status))
        return judged.state, text, coverage

    # -- HONESTY HOOKS (docs/honesty.md §12): plain calls that do nothing on an unarmed agent -------------

    def _honesty_loop_head(self) -> None:
        # HONESTY HOOK — results layer, at the loop head (every iteration, before the pass).
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.loop_head(self)

    def _honesty_inputs(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        # HONESTY HOOK — inputs layer, after the LLM call and before Route.
        hooks = self.spec.honesty
        if hooks is None:
            return response
        return hooks.after_llm_call(self, request, response)

    def _honesty_inputs_record(self) -> None:
        # HONESTY HOOK — inputs layer's write, right after the llm_call record.
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.after_llm_record(self)

    def _honesty_answer(self, content: str) -> None:
        # HONESTY HOOK — answer layer, first on the final branch.
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.before_final(self, content)

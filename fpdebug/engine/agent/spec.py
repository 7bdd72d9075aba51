"""What an agent declares: :class:`AgentSpec`, its options and the honesty hooks' protocol.

The builder (:mod:`fpdebug.engine.agent.builder`) produces the spec; compilation
(:mod:`fpdebug.engine.agent.compile`) derives what the loop needs from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from fpdebug.engine.agent.limits import CostBudget, OutputSchema
from fpdebug.engine.agent.turn_start import TurnStart
from fpdebug.engine.agent.window import Window
from fpdebug.engine.injections import Injection
from fpdebug.engine.recall import RecallSource
from fpdebug.engine.skillmap import SkillMap
from fpdebug.engine.tool_middleware import ToolMiddleware
from fpdebug.engine.types import Tool
from fpdebug.trace.schema import AskRow, HonestyArms, LlmRequest, LlmResponse

if TYPE_CHECKING:
    from fpdebug.engine.agent.conversation import Conversation
    from fpdebug.engine.agent.loop import TurnLoop


READ_SKILL = "read_skill"
"""The tool the model calls to load a skill (its argument is ``{"id": <skill id>}``)."""

DEFAULT_MAX_ITERATIONS = 10
"""The per-turn iteration limit when the agent sets none."""

DEFAULT_TOOL_TIMEOUT: float | None = 60.0
"""Seconds a tool call may take when neither the agent nor the tool says otherwise."""

TruncationPolicy: TypeAlias = Literal["reask", "fail"]
"""What the loop does with a reply cut at the token limit while asking for tools (none of its calls
runs either way): tell the model and ask again (``reask``, the default), or fail the run (``fail``)."""

Continuity: TypeAlias = Literal["turn", "conversation"]
"""Whether the skill-map cursor starts each turn afresh (``turn``) or carries over (``conversation``)."""

RequestEdit: TypeAlias = Callable[[LlmRequest, int, int], LlmRequest]
"""Rewrites a composed request: called as ``edit(request, turn, iteration)``, returns the request to
send (the same one for no change). The ``llm_call`` records what it returns."""

ToolLike: TypeAlias = Tool | Callable[..., object]
"""A tool as the builder accepts it: a :class:`Tool`, or a plain function (see :func:`tool`)."""


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
    :class:`~fpdebug.engine.honesty.hooks.HonestyLayers`, which implements it.
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

    def paused(self, loop: TurnLoop) -> AskRow | None:
        """The argument ask the turn pauses on, asked right after the inputs layer's write on the
        ``tool-calls`` branch: the batch waits for the user's answer (docs/honesty.md §12.7)."""
        ...

    def answer_ask(self, loop: TurnLoop, answer: object) -> AskRow | None:
        """The user's answer to the waiting ask (``Conversation.resume``): recorded and filed;
        ``loop.calls_to_run`` then holds it. Returns the next ask, or ``None`` when the batch runs."""
        ...

    def evidence_gate(self, loop: TurnLoop, content: str) -> str | None:
        """The evidence gate: called on a reply Route sends to ``final``, before its ``llm_call`` is
        recorded. Returns the ask for a revision turn (Route becomes ``evidence-recheck``, the tools go off),
        or ``None`` to let the answer stand (docs/honesty.md §12.5)."""
        ...

    def before_final(self, loop: TurnLoop, content: str) -> None:
        """Answer layer: called first on the final branch (and on a draft sent back for revision),
        before ``turn_end``."""
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
    turn_start: TurnStart | None = None
    """The turn-start cascade's classifier and decider (:meth:`Agent.turn_start`)."""
    read_skill_posture: Literal["rails", "guard"] | None = None
    """The read_skill gate's posture for hops (:meth:`Agent.read_skill_posture`)."""
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
    request_edit: RequestEdit | None = None
    """Rewrites each request after Compose and before it is sent and recorded
    (:meth:`Agent.edit_requests`; what a fork applies from its pass on)."""
    on_truncation: TruncationPolicy = "reask"
    """A reply cut at the token limit with tool calls: re-ask the model, or fail the run
    (:meth:`Agent.on_truncation`)."""
    step_nudge: bool = True
    """An answer given with a step procedure unfinished is re-asked once per turn
    (:meth:`Agent.step_nudge`)."""
    wrap_up: bool = False
    """A reply still asking for tools at the limit gets one more call with tools off
    (:meth:`Agent.wrap_up`)."""
    cost_budget: CostBudget | None = None
    """The run's spend that stops tool dispatch (:meth:`Agent.cost_budget`)."""
    output_schema: OutputSchema | None = None
    """The declared type of a final answer, re-asked until it validates (:meth:`Agent.output_schema`)."""
    recall: tuple[RecallSource, ...] = ()
    """The ``rag`` and ``memory`` sources, read once per turn before the first pass
    (:meth:`Agent.rag`, :meth:`Agent.memory`)."""
    excluded_memory: tuple[str, ...] = ()
    """Recalled entry ids left out of every recall (:meth:`Agent.without`)."""
    window: Window | None = None
    """The window strategy that compacts the history at each loop head (:meth:`Agent.window`)."""

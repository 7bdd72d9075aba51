"""Injections: context declared as data, the four triggers, the factories and the evaluator.

An :class:`Injection` says WHAT it contributes (system-prompt text, messages, tools) and WHEN
(its trigger). :func:`evaluate_injections` decides one pass's active set in the order of
docs/context-model.md §2.1: park suppression, then lease admission, then the injection's own trigger, then the
template gate; it is pure and never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal, TypeAlias, get_args

from fpdebug.engine.types import (
    CONTEXT_SOURCES,
    ContextSource,
    Message,
    Tool,
    ToolResult,
    ToolSchema,
    require_id,
)
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import InjectionDecl, Skipped, TriggerDecl, Witness

if TYPE_CHECKING:
    from fpdebug.engine.skillmap import CursorMove

__all__ = [
    "PARKED_SENTENCE",
    "TEMPLATE_FACTS",
    "ActiveInjection",
    "Always",
    "ContextRole",
    "Evaluation",
    "Injection",
    "InjectionContext",
    "LlmActivated",
    "OnToolReturn",
    "ProposedTransition",
    "Rule",
    "Step",
    "StepPointer",
    "SurfaceMode",
    "Trigger",
    "TurnRoute",
    "check_unique_ids",
    "define_fact",
    "define_injection",
    "define_instruction",
    "define_skill",
    "define_steering",
    "evaluate_injections",
    "missing_facts",
    "project",
    "rekey_step_pointer",
    "render_template",
    "step_plans",
    "template_names",
    "tool_name_matches",
    "tool_results_of",
]

SurfaceMode: TypeAlias = Literal["auto", "system-prompt", "tool-only", "both"]
"""How a skill's body reaches the model (``tool-only`` bodies never ride the system prompt)."""

ContextRole: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""The role of a message an injection contributes."""

_SURFACE_MODES = frozenset(get_args(SurfaceMode))
_ROLES = frozenset(get_args(ContextRole))

TEMPLATE_FACTS: tuple[str, ...] = ("action", "actionBudget", "actionsRemaining")
"""The closed template vocabulary (docs/context-model.md §2.3): the iteration, ``max_iterations``, what is left."""

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")

PARKED_SENTENCE = (
    "its map is parked: the kernel suppresses its contribution until explicit or structural "
    "evidence re-engages the map"
)
"""The fixed error text of a ``parked`` skip."""


# ----------------------------------------------------------------------------------------------
# Triggers (docs/context-model.md §1.2)


@dataclass(frozen=True, slots=True)
class Always:
    """Active on every pass."""

    kind: ClassVar[str] = "always"


@dataclass(frozen=True, slots=True)
class Rule:
    """Active when ``active_when(ctx)`` is truthy; a raising predicate skips as ``predicate-threw``."""

    active_when: Callable[[InjectionContext], object]
    """The predicate over the pass context."""
    description: str | None = field(default=None, kw_only=True)
    """A human description of the predicate, recorded in the catalog."""
    graph_node: bool = field(default=False, kw_only=True)
    """True when a skill map compiled this rule from a node (docs/context-model.md §5.2): its admission is the cursor."""

    kind: ClassVar[str] = "rule"

    def __post_init__(self) -> None:
        if not callable(self.active_when):
            raise DefinitionError(f"a rule trigger needs a callable predicate, got {self.active_when!r}")


@dataclass(frozen=True, slots=True)
class OnToolReturn:
    """Active when ANY result of the previous batch came from a matching tool.

    A string matches by equality; a compiled regex by an unanchored ``pattern.search``.
    """

    tool_name: str | re.Pattern[str]
    """The tool name, or a compiled regex searched in the tool name."""

    kind: ClassVar[str] = "on-tool-return"

    def __post_init__(self) -> None:
        if isinstance(self.tool_name, str):
            require_id(self.tool_name, "on-tool-return tool name")
        elif not isinstance(self.tool_name, re.Pattern):
            raise DefinitionError(
                f"on-tool-return needs a tool name or a compiled regex, got {self.tool_name!r}"
            )


@dataclass(frozen=True, slots=True)
class LlmActivated:
    """Active once the model activated the id (turn-cumulative ``activated_injection_ids``)."""

    via_tool_name: str = "read_skill"
    """The tool whose call activates it."""

    kind: ClassVar[str] = "llm-activated"


Trigger: TypeAlias = Always | Rule | OnToolReturn | LlmActivated
"""Exactly four trigger kinds."""

_TRIGGER_TYPES = (Always, Rule, OnToolReturn, LlmActivated)


def tool_name_matches(spec: str | re.Pattern[str], name: str) -> bool:
    """Whether a tool name matches a name (equality) or a regex (unanchored search).

    Args:
        spec: The declared name or compiled regex.
        name: The tool name of a result.

    Returns:
        The match.
    """
    if isinstance(spec, str):
        return spec == name
    return spec.search(name) is not None


# ----------------------------------------------------------------------------------------------
# The pass context (docs/context-model.md §1.4)


@dataclass(frozen=True, slots=True)
class ProposedTransition:
    """What a pass's context sees of a valid transition proposal: its target only."""

    target_skill_id: str
    """The proposed skill."""


@dataclass(frozen=True, slots=True)
class TurnRoute:
    """A precomputed turn-start cascade verdict; the resolver honours it on iteration 1."""

    to_skill: str | None = None
    """Where the cascade starts the cursor (``None``: the cascade decided nothing)."""
    from_skill: str | None = None
    """The inherited cursor it started from, if any."""
    by: str = "entry"
    """``intent``, ``continuity``, ``decider`` or ``entry``."""
    witness: Witness | None = None
    """The text that decided, when the verdict came from a data matcher."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a skill's declared procedure (the reference's ``SkillStep``): run ``tool``, for
    the reason ``note``."""

    tool: str
    """The tool this step runs: one of the skill's own tools (repeats across steps are legal)."""
    note: str
    """Why the step exists: the sentence the model reads about it (non-empty)."""


@dataclass(frozen=True, slots=True)
class StepPointer:
    """Where a skill's step procedure stands (docs/context-model.md §5.6)."""

    skill_id: str
    """The skill whose steps these are."""
    step: int
    """1-based; ``total + 1`` means done."""
    total: int
    """How many steps the skill declares."""
    skipped: tuple[int, ...] = ()
    """Steps skipped so far."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectionContext:
    """What one pass can see, read-only (docs/context-model.md §1.4). Only ``iteration`` is positional."""

    iteration: int = field(kw_only=False)
    """The 1-based pass."""
    max_iterations: int | None = None
    """The turn's iteration budget, when known."""
    user_message: str = ""
    """The turn's user message."""
    history: tuple[Message, ...] = ()
    """The conversation so far."""
    last_tool_result: ToolResult | None = None
    """The last call of the previous batch."""
    tool_results: tuple[ToolResult, ...] | None = None
    """The whole previous batch in call order (``None``: not supplied)."""
    activated_injection_ids: tuple[str, ...] = ()
    """Turn-cumulative ids activated by ``read_skill`` or accepted proposals."""
    current_skill_id: str | None = None
    """The cursor as of the previous pass (the ``from`` gate)."""
    pending_skill_pick: str | None = None
    """The ``read_skill`` hop the gate accepted last iteration (one-shot)."""
    pending_tool_transition: ProposedTransition | None = None
    """A proposal valid on THIS pass (granted on the previous iteration), else ``None``."""
    lease_active_ids: tuple[str, ...] | None = None
    """Ids a ``require-instruction`` lease serves this pass."""
    parked_ids: frozenset[str] | None = None
    """Ids the engagement kernel suppresses this pass."""
    turn_route: TurnRoute | None = None
    """The turn-start cascade verdict (iteration 1)."""
    entry_scores: Mapping[str, float] | None = None
    """Turn-start entry scores, carried for a scorer; the core resolver does not read them."""
    entry_scorer: Callable[[InjectionContext], Mapping[str, float]] | None = None
    """A turn-start entry scorer, carried for the cascade; the core resolver does not call it."""
    step_pointer: tuple[StepPointer, ...] | None = None
    """The FRESH step pointer, already re-keyed for this pass."""
    cursor_move: CursorMove | None = None
    """The move this pass already resolved (set by the Evaluate pass, so that every graph trigger
    reads the same single resolver call)."""

    @property
    def iterations_remaining(self) -> int | None:
        """``max(0, max_iterations - iteration)``, or ``None`` without a budget (both or neither)."""
        if self.max_iterations is None:
            return None
        return max(0, self.max_iterations - self.iteration)


def tool_results_of(ctx: InjectionContext) -> tuple[ToolResult, ...]:
    """The previous batch: ``tool_results``, else ``(last_tool_result,)``, else ``()``.

    Args:
        ctx: The pass context.

    Returns:
        The one reading of the batch that the evaluator and the resolver share.
    """
    if ctx.tool_results is not None:
        return ctx.tool_results
    if ctx.last_tool_result is not None:
        return (ctx.last_tool_result,)
    return ()


# ----------------------------------------------------------------------------------------------
# Templates (docs/context-model.md §2.3)


def template_names(text: str) -> tuple[str, ...]:
    """Every placeholder name in ``text``, in order of appearance, de-duplicated."""
    names: list[str] = []
    for match in _PLACEHOLDER.finditer(text):
        if match.group(1) not in names:
            names.append(match.group(1))
    return tuple(names)


def _check_template(text: str) -> None:
    unknown = [name for name in template_names(text) if name not in TEMPLATE_FACTS]
    if unknown:
        raise DefinitionError(
            "unknown template name(s) "
            + ", ".join("{{" + name + "}}" for name in unknown)
            + "; the vocabulary is {{action}}, {{actionBudget}}, {{actionsRemaining}}"
        )


def _facts(ctx: InjectionContext | None) -> dict[str, int]:
    if ctx is None:
        return {}
    facts = {"action": ctx.iteration}
    if ctx.max_iterations is not None:
        facts["actionBudget"] = ctx.max_iterations
        facts["actionsRemaining"] = max(0, ctx.max_iterations - ctx.iteration)
    return facts


def missing_facts(text: str, ctx: InjectionContext | None) -> tuple[str, ...]:
    """The placeholders of ``text`` this pass cannot fill (all of them without a context)."""
    facts = _facts(ctx)
    return tuple(name for name in template_names(text) if name not in facts)


def render_template(text: str, ctx: InjectionContext | None) -> str | None:
    """Render all-or-nothing: the filled text, or ``None`` when any fact is missing."""
    facts = _facts(ctx)
    if any(name not in facts for name in template_names(text)):
        return None
    return _PLACEHOLDER.sub(lambda m: str(facts[m.group(1)]), text)


# ----------------------------------------------------------------------------------------------
# The injection


@dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    """One piece of declared context: what it contributes and when (docs/context-model.md §1.1)."""

    id: str
    """Unique across the agent."""
    flavor: ContextSource
    """The observability tag, from the closed ``ContextSource`` set."""
    trigger: Trigger
    """When it is active."""
    system_prompt: str | None = None
    """System-prompt text (a template when ``templated``)."""
    messages: tuple[Message, ...] = ()
    """Messages it contributes to the messages slot."""
    tools: tuple[Tool, ...] = ()
    """Tools it contributes to the tools slot."""
    description: str | None = None
    """Shown in the skill catalog; the default reason text."""
    templated: bool = False
    """``system_prompt`` is a template over :data:`TEMPLATE_FACTS`."""
    surface_mode: SurfaceMode | None = None
    """Skills: how the body reaches the model."""
    steps: tuple[Step, ...] | None = None
    """Skills: a step procedure, one ``(tool, note)`` pair per step."""
    metadata: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """Other author metadata (``on_skip``, ``auto_activate``, ``cache``…), stored as given."""

    def __post_init__(self) -> None:
        require_id(self.id, "injection id")
        if not isinstance(self.flavor, str) or self.flavor not in CONTEXT_SOURCES:
            raise DefinitionError(f"injection {self.id!r}: flavor {self.flavor!r} is not a ContextSource")
        if self.surface_mode is not None and (
            not isinstance(self.surface_mode, str) or self.surface_mode not in _SURFACE_MODES
        ):
            raise DefinitionError(
                f"injection {self.id!r}: surface mode {self.surface_mode!r} is not one of "
                "'auto', 'system-prompt', 'tool-only', 'both'"
            )

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools it contributes."""
        return tuple(tool.name for tool in self.tools)

    @property
    def lands_in_system_prompt(self) -> bool:
        """Whether its prompt may ride the system prompt (not a ``tool-only`` skill)."""
        return bool(self.system_prompt) and not (self.flavor == "skill" and self.surface_mode == "tool-only")

    def declaration(self) -> InjectionDecl:
        """The catalog row the trace's ``run_start`` records."""
        slots: list[Literal["system-prompt", "messages", "tools"]] = []
        if self.lands_in_system_prompt:
            slots.append("system-prompt")
        if self.messages:
            slots.append("messages")
        if self.tools:
            slots.append("tools")
        return InjectionDecl(
            id=self.id,
            flavor=self.flavor,
            description=self.description,
            trigger=_trigger_decl(self.trigger),
            slots=slots,
            system_prompt=self.system_prompt,
            messages=list(self.messages) or None,
            tool_names=list(self.tool_names),
            templated=self.templated,
            surface_mode=self.surface_mode,
        )


def _trigger_decl(trigger: object) -> TriggerDecl:
    match trigger:
        case Always():
            return TriggerDecl(kind="always")
        case Rule(description=description, graph_node=graph_node):
            return TriggerDecl(kind="rule", description=description, graph_node=graph_node)
        case OnToolReturn(tool_name=str() as name):
            return TriggerDecl(kind="on-tool-return", tool_name=name)
        case OnToolReturn(tool_name=re.Pattern() as pattern):
            return TriggerDecl(kind="on-tool-return", tool_pattern=pattern.pattern)
        case LlmActivated(via_tool_name=via):
            return TriggerDecl(kind="llm-activated", via_tool_name=via)
    raise DefinitionError(f"{trigger!r} is not a trigger (always, rule, on-tool-return, llm-activated)")


def check_unique_ids(injections: Iterable[Injection]) -> None:
    """Refuse a catalog in which two injections share an id.

    Args:
        injections: The agent's whole catalog (its own injections plus the skill map's nodes).

    Raises:
        DefinitionError: ``duplicate id '<id>'``.
    """
    seen: set[str] = set()
    for injection in injections:
        if injection.id in seen:
            raise DefinitionError(f"duplicate id {injection.id!r}")
        seen.add(injection.id)


# ----------------------------------------------------------------------------------------------
# Factories (docs/context-model.md §1.3)


def _tools(tools: Iterable[Tool | ToolSchema] | None, owner: str) -> tuple[Tool, ...]:
    out: list[Tool] = []
    for tool in tools or ():
        if isinstance(tool, ToolSchema):
            tool = Tool.from_schema(tool)
        if not isinstance(tool, Tool):
            raise DefinitionError(f"injection {owner!r}: {tool!r} is not a Tool or ToolSchema")
        out.append(tool)
    names = [tool.name for tool in out]
    for name in names:
        if names.count(name) > 1:
            raise DefinitionError(f"injection {owner!r} declares tool {name!r} twice")
    return tuple(out)


def _messages(messages: Iterable[Message | Mapping[str, object]] | None, owner: str) -> tuple[Message, ...]:
    out: list[Message] = []
    for message in messages or ():
        if isinstance(message, Mapping):
            try:
                message = Message.model_validate(dict(message))
            except ValueError as exc:
                raise DefinitionError(f"injection {owner!r}: bad message {message!r}: {exc}") from exc
        if not isinstance(message, Message):
            raise DefinitionError(f"injection {owner!r}: {message!r} is not a message")
        out.append(message)
    return tuple(out)


def define_injection(
    id: str,
    *,
    trigger: Trigger,
    flavor: ContextSource = "custom",
    system_prompt: str | None = None,
    messages: Iterable[Message | Mapping[str, object]] | None = None,
    tools: Iterable[Tool | ToolSchema] | None = None,
    description: str | None = None,
    metadata: Mapping[str, object] | None = None,
) -> Injection:
    """The general factory: any trigger, any flavor, any slots.

    Args:
        id: Unique id (non-empty).
        trigger: ``Always()``, ``Rule(pred)``, ``OnToolReturn(name_or_regex)`` or ``LlmActivated()``.
        flavor: The ``ContextSource`` tag.
        system_prompt: Text for the system-prompt slot.
        messages: Messages for the messages slot (``Message`` or ``{"role", "content"}`` dicts).
        tools: Tools for the tools slot.
        description: The catalog / reason text.
        metadata: Extra author metadata, stored as given.

    Returns:
        The frozen injection.

    Raises:
        DefinitionError: an empty id, an unknown flavor, a non-trigger, a bad message or tool.
    """
    if not isinstance(trigger, _TRIGGER_TYPES):
        raise DefinitionError(
            f"injection {id!r}: {trigger!r} is not a trigger (Always, Rule, OnToolReturn, LlmActivated)"
        )
    return Injection(
        id=id,
        flavor=flavor,
        trigger=trigger,
        system_prompt=system_prompt,
        messages=_messages(messages, id),
        tools=_tools(tools, id),
        description=description,
        metadata=MappingProxyType(dict(metadata or {})),
    )


def define_steering(id: str, *, prompt: str, description: str | None = None) -> Injection:
    """An always-on system-prompt rule (flavor ``steering``).

    Args:
        id: Unique id.
        prompt: The system-prompt text.
        description: The catalog / reason text.

    Returns:
        The frozen injection.
    """
    return define_injection(
        id, trigger=Always(), flavor="steering", system_prompt=prompt, description=description
    )


def _rule_or_always(active_when: Callable[[InjectionContext], object] | None) -> Trigger:
    return Always() if active_when is None else Rule(active_when)


def _slot_content(id: str, text: str, slot: str, role: str | None) -> tuple[str | None, tuple[Message, ...]]:
    if slot == "system-prompt":
        if role is not None:
            raise DefinitionError(f"injection {id!r}: role applies only to slot='messages'")
        return text, ()
    if slot == "messages":
        if not isinstance(role, str) or role not in _ROLES:
            raise DefinitionError(
                f"injection {id!r}: slot='messages' needs a role "
                f"(system, user, assistant or tool), got {role!r}"
            )
        return None, (Message(role=role, content=text),)  # type: ignore[arg-type]
    raise DefinitionError(f"injection {id!r}: slot must be 'system-prompt' or 'messages', got {slot!r}")


def define_instruction(
    id: str,
    *,
    prompt: str | None = None,
    prompt_template: str | None = None,
    active_when: Callable[[InjectionContext], object] | None = None,
    slot: Literal["system-prompt", "messages"] = "system-prompt",
    role: ContextRole | None = None,
    description: str | None = None,
) -> Injection:
    """An instruction (flavor ``instructions``): a rule when ``active_when`` is given, else always.

    Args:
        id: Unique id.
        prompt: Plain text; give exactly one of ``prompt`` and ``prompt_template``.
        prompt_template: Text over ``{{action}}``, ``{{actionBudget}}``, ``{{actionsRemaining}}``,
            rendered each pass all-or-nothing (system-prompt slot only).
        active_when: The rule predicate over the pass context.
        slot: ``system-prompt`` (default) or ``messages``.
        role: The message role; required with ``slot='messages'``.
        description: The catalog / reason text.

    Returns:
        The frozen injection.

    Raises:
        DefinitionError: both or neither of prompt / template, an unknown template name, a
            messages slot without a role, a template outside the system-prompt slot.
    """
    if (prompt is None) == (prompt_template is None):
        raise DefinitionError(f"instruction {id!r}: give exactly one of prompt and prompt_template")
    text = prompt if prompt is not None else prompt_template
    assert text is not None
    if prompt_template is not None:
        _check_template(prompt_template)
        if slot != "system-prompt":
            raise DefinitionError(
                f"instruction {id!r}: a prompt_template renders only in the system-prompt slot"
            )
    system_prompt, messages = _slot_content(id, text, slot, role)
    injection = define_injection(
        id,
        trigger=_rule_or_always(active_when),
        flavor="instructions",
        system_prompt=system_prompt,
        messages=messages,
        description=description,
    )
    if prompt_template is not None:
        injection = _replace(injection, templated=True)
    return injection


def define_fact(
    id: str,
    *,
    data: object,
    active_when: Callable[[InjectionContext], object] | None = None,
    slot: Literal["system-prompt", "messages"] = "system-prompt",
    role: ContextRole | None = None,
    description: str | None = None,
) -> Injection:
    """A fact (flavor ``fact``): a rule when ``active_when`` is given, else always.

    Args:
        id: Unique id.
        data: A string, or JSON-able data rendered as compact JSON.
        active_when: The rule predicate over the pass context.
        slot: ``system-prompt`` (default) or ``messages``.
        role: The message role; required with ``slot='messages'``.
        description: The catalog / reason text.

    Returns:
        The frozen injection.
    """
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    system_prompt, messages = _slot_content(id, text, slot, role)
    return define_injection(
        id,
        trigger=_rule_or_always(active_when),
        flavor="fact",
        system_prompt=system_prompt,
        messages=messages,
        description=description,
    )


def define_skill(
    id: str,
    *,
    body: str,
    description: str | None = None,
    tools: Iterable[Tool | ToolSchema] | None = None,
    surface_mode: SurfaceMode = "auto",
    steps: Sequence[Step | tuple[str, str]] | None = None,
    on_skip: str | None = None,
    via_tool_name: str = "read_skill",
) -> Injection:
    """A skill (flavor ``skill``), activated by the model through ``read_skill``.

    Args:
        id: Unique id.
        body: The skill's instructions (the system-prompt text unless ``tool-only``).
        description: Shown in the skill catalog.
        tools: Tools the skill brings while it is active.
        surface_mode: ``auto``, ``system-prompt``, ``tool-only`` or ``both``.
        steps: A step procedure: :class:`Step` values or ``(tool, note)`` pairs, each naming one of
            this skill's own ``tools`` and a non-empty note. A clean result of the current step's tool
            advances it; the model skips a step only through ``skip_step`` (docs/context-model.md §5.6,
            :mod:`fpdebug.engine.steps`).
        on_skip: What a ``skip_step`` does: ``advance`` (the default: record the skip, move to the
            next step) or ``hold`` (record it, keep the step current); legal only beside ``steps``.
        via_tool_name: The activating tool.

    Returns:
        The frozen injection.
    """
    base = define_injection(
        id,
        trigger=LlmActivated(via_tool_name),
        flavor="skill",
        system_prompt=body,
        tools=tools,
        description=description,
        metadata={"on_skip": on_skip} if on_skip is not None else None,
    )
    declared = _skill_steps(id, steps, on_skip, base.tool_names)
    return _replace(base, surface_mode=surface_mode, steps=declared)


def _skill_steps(
    skill_id: str,
    steps: Sequence[Step | tuple[str, str]] | None,
    on_skip: object,
    tool_names: Sequence[str],
) -> tuple[Step, ...] | None:
    """Validate a ``steps`` declaration against the skill's own tools (the reference refuses every
    mistake at ``defineSkill``, where all the data is in hand: ``skillSteps.ts`` ·
    ``validateSkillSteps``)."""
    where = f"define_skill({skill_id!r})"
    if steps is None:
        if on_skip is not None:
            raise DefinitionError(
                f"{where}: on_skip is legal only beside steps (it says what a skipped step does), and "
                "this skill declares no steps; add steps or drop on_skip"
            )
        return None
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        raise DefinitionError(f"{where}: steps must be a list of Step(tool=..., note=...) values")
    if not steps:
        raise DefinitionError(f"{where}: steps=[] declares nothing; omit the field instead")
    if on_skip is not None and on_skip not in ("advance", "hold"):
        raise DefinitionError(
            f"{where}: on_skip {on_skip!r} is not a policy; use 'advance' (record the skip and move on, "
            "the default) or 'hold' (record the skip and keep the step current)"
        )
    if not tool_names:
        raise DefinitionError(
            f"{where}: steps declares a tool sequence but this skill carries no tools; every step runs "
            "one of the skill's own tools"
        )
    out: list[Step] = []
    for n, step in enumerate(steps, start=1):
        if isinstance(step, str):
            # The shape before steps named tools: say what changed rather than guess a tool.
            raise DefinitionError(
                f"{where}: step {n} is the text {step!r}; a step is Step(tool=..., note=...) (or a "
                "(tool, note) pair) naming which of the skill's tools it runs, and only a clean result "
                "of that tool completes it"
            )
        if isinstance(step, tuple) and len(step) == 2:
            step = Step(*step)
        if not isinstance(step, Step):
            raise DefinitionError(f"{where}: step {n} ({step!r}) is not a Step(tool=..., note=...)")
        if not isinstance(step.tool, str) or not step.tool.strip():
            raise DefinitionError(f"{where}: step {n} names no tool; every step is Step(tool, note)")
        if not isinstance(step.note, str) or not step.note.strip():
            raise DefinitionError(
                f"{where}: step {n} ({step.tool!r}) has no note; the note is the sentence the model "
                "reads about why the step exists"
            )
        if step.tool not in tool_names:
            raise DefinitionError(
                f"{where}: step {n} names {step.tool!r}, which this skill's tools do not carry; steps "
                "may only sequence the skill's own tools"
            )
        out.append(step)
    return tuple(out)


def _replace(injection: Injection, **changes: object) -> Injection:
    return replace(injection, **changes)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# The evaluator (docs/context-model.md §2.1)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One pass's verdict: the active injections and the skipped ones."""

    active: tuple[Injection, ...]
    """Active injections, in declaration order, each once."""
    skipped: tuple[Skipped, ...]
    """Skipped injections, each with its reason (closed set) and error text."""
    leased: frozenset[str] = frozenset()
    """Active ids that a lease admitted (their trigger was not evaluated)."""

    @property
    def active_ids(self) -> tuple[str, ...]:
        """The active ids in declaration order."""
        return tuple(injection.id for injection in self.active)


def _admit_by_trigger(injection: Injection, ctx: InjectionContext) -> tuple[bool, Skipped | None]:
    trigger: object = injection.trigger
    match trigger:
        case Always():
            return True, None
        case Rule(active_when=predicate):
            try:
                return bool(predicate(ctx)), None
            except Exception as exc:  # a user predicate may raise anything; the pass must not
                return False, Skipped(
                    id=injection.id, reason="predicate-threw", error=str(exc) or type(exc).__name__
                )
        case OnToolReturn(tool_name=spec):
            return any(tool_name_matches(spec, r.tool_name) for r in tool_results_of(ctx)), None
        case LlmActivated():
            return injection.id in ctx.activated_injection_ids, None
    return False, Skipped(
        id=injection.id,
        reason="unknown-trigger-kind",
        error=f"trigger {type(trigger).__name__} is not one of always, rule, on-tool-return, llm-activated",
    )


def evaluate_injections(injections: Iterable[Injection], ctx: InjectionContext) -> Evaluation:
    """Decide one pass's active set: park → lease → trigger → template gate, in declaration order.

    Pure and never raises: a raising rule predicate is skipped as ``predicate-threw``.

    Args:
        injections: The catalog in declaration order.
        ctx: The pass context (``parked_ids`` and ``lease_active_ids`` already set by the pass).

    Returns:
        The :class:`Evaluation`.
    """
    admitted: list[Injection] = []
    skipped: list[Skipped] = []
    leased: set[str] = set()
    parked = ctx.parked_ids
    lease_ids = ctx.lease_active_ids
    for injection in injections:
        if parked and injection.id in parked:  # park beats everything, lease included
            skipped.append(Skipped(id=injection.id, reason="parked", error=PARKED_SENTENCE))
            continue
        if lease_ids and injection.id in lease_ids:  # the trigger is NOT evaluated
            admitted.append(injection)
            leased.add(injection.id)
            continue
        admit, skip = _admit_by_trigger(injection, ctx)
        if skip is not None:
            skipped.append(skip)
        elif admit:
            admitted.append(injection)
    active: list[Injection] = []
    for injection in admitted:
        missing = missing_facts(injection.system_prompt or "", ctx) if injection.templated else ()
        if missing:
            skipped.append(
                Skipped(
                    id=injection.id,
                    reason="unknown-fact",
                    error="the template needs "
                    + ", ".join("{{" + name + "}}" for name in missing)
                    + ", which this pass does not know",
                )
            )
            leased.discard(injection.id)
        else:
            active.append(injection)
    return Evaluation(active=tuple(active), skipped=tuple(skipped), leased=frozenset(leased))


# ----------------------------------------------------------------------------------------------
# Projection (docs/context-model.md §1.5)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveInjection:
    """What crosses into the slots: an active injection without its trigger, templates rendered."""

    id: str
    """The injection id (``agentfootprint:map-status`` for the park card row)."""
    flavor: ContextSource
    """Its flavor."""
    description: str | None = None
    """Its description."""
    surface_mode: SurfaceMode | None = None
    """Skills: how the body reaches the model."""
    system_prompt: str | None = None
    """The rendered prompt; absent when empty or when a template fact is missing."""
    messages: tuple[Message, ...] = ()
    """Messages for the messages slot."""
    tools: tuple[ToolSchema, ...] = ()
    """Tool schemas, each tagged with this injection's id."""

    @property
    def lands_in_system_prompt(self) -> bool:
        """A non-empty prompt that is not a ``tool-only`` skill's body."""
        return bool(self.system_prompt) and not (self.flavor == "skill" and self.surface_mode == "tool-only")


def project(injection: Injection, ctx: InjectionContext | None) -> ActiveInjection:
    """Project an active injection for the slots (templates rendered all-or-nothing).

    Args:
        injection: The active injection.
        ctx: The pass context; ``None`` leaves a templated prompt absent.

    Returns:
        The :class:`ActiveInjection`.
    """
    prompt = injection.system_prompt
    if prompt is not None and injection.templated:
        prompt = render_template(prompt, ctx)
    return ActiveInjection(
        id=injection.id,
        flavor=injection.flavor,
        description=injection.description,
        surface_mode=injection.surface_mode,
        system_prompt=prompt or None,
        messages=injection.messages,
        tools=tuple(tool.schema(injection_id=injection.id) for tool in injection.tools),
    )


# ----------------------------------------------------------------------------------------------
# Step pointer (docs/context-model.md §5.6)


def step_plans(injections: Iterable[Injection]) -> dict[str, int]:
    """Skill id → number of steps, for every skill that declares steps."""
    return {inj.id: len(inj.steps) for inj in injections if inj.steps}


def rekey_step_pointer(
    prior: Sequence[StepPointer] | None, tenant: str | None, plans: Mapping[str, int]
) -> tuple[StepPointer, ...]:
    """Re-key the step pointer for a pass's tenant (it can never move the cursor).

    Args:
        prior: The pointer before the pass.
        tenant: Who holds the tenure on this pass.
        plans: :func:`step_plans` of the catalog.

    Returns:
        ``()`` without a tenant; the prior pointer for the same tenant; a fresh pointer at step 1
        for a new tenant with a plan; ``()`` for a new tenant without one.
    """
    if tenant is None:
        return ()
    if prior and prior[0].skill_id == tenant:
        return tuple(prior)
    if tenant in plans:
        return (StepPointer(skill_id=tenant, step=1, total=plans[tenant]),)
    return ()

"""The factories (docs/context-model.md §1.3): ``define_steering``, ``define_instruction``, ``define_fact``, ``define_skill`` and ``define_injection``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Literal

from fpdebug.engine.injections.context import InjectionContext, Step
from fpdebug.engine.injections.injection import CONTEXT_ROLES, ContextRole, Injection, SurfaceMode
from fpdebug.engine.injections.templates import check_template
from fpdebug.engine.injections.triggers import TRIGGER_TYPES, Always, LlmActivated, Rule, Trigger
from fpdebug.engine.types import ContextSource, Message, Tool, ToolSchema
from fpdebug.errors import DefinitionError


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
    if not isinstance(trigger, TRIGGER_TYPES):
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
        if not isinstance(role, str) or role not in CONTEXT_ROLES:
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
        check_template(prompt_template)
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

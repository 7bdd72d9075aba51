"""Projection (docs/context-model.md §1.5): an active injection as the request receives it."""

from __future__ import annotations

from dataclasses import dataclass

from fpdebug.engine.injections.context import InjectionContext
from fpdebug.engine.injections.injection import Injection, SurfaceMode
from fpdebug.engine.injections.templates import render_template
from fpdebug.engine.types import ContextSource, Message, Tool, ToolSchema


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
        tools=_tool_schemas(injection) if injection.tools else (),
    )


_SCHEMAS: dict[tuple[int, str], tuple[tuple[Tool, ...], tuple[ToolSchema, ...]]] = {}
_SCHEMAS_MAX = 4096


def _tool_schemas(injection: Injection) -> tuple[ToolSchema, ...]:
    """The injection's tool schemas, built once per injection and reused while they still match.

    Every pass projects every active injection: a fresh :class:`ToolSchema` per tool per pass cost
    its validation here and, recorded, a serialisation per call (a version 2 trace knows a schema
    it has written by identity). The tools are frozen; the one thing that could still change is a
    ``parameters`` mapping mutated in place, so a cached schema is used only while it equals it.
    """
    key = (id(injection.tools), injection.id)
    cached = _SCHEMAS.get(key)
    if cached is not None and cached[0] is injection.tools:
        schemas = cached[1]
        if all(s.parameters == t.parameters for s, t in zip(schemas, injection.tools, strict=True)):
            return schemas
    schemas = tuple(tool.schema(injection_id=injection.id) for tool in injection.tools)
    if len(_SCHEMAS) >= _SCHEMAS_MAX:
        _SCHEMAS.clear()
    _SCHEMAS[key] = (injection.tools, schemas)  # the tuple is kept alive: its id stays its own
    return schemas

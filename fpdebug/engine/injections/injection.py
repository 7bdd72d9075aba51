"""The :class:`Injection`: context declared as data (what it contributes, and when)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, TypeAlias, get_args

from fpdebug.engine.injections.context import Step
from fpdebug.engine.injections.triggers import Always, LlmActivated, OnToolReturn, Rule, Trigger
from fpdebug.engine.types import CONTEXT_SOURCES, ContextSource, Message, Tool, require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import InjectionDecl, TriggerDecl

SurfaceMode: TypeAlias = Literal["auto", "system-prompt", "tool-only", "both"]
"""How a skill's body reaches the model (``tool-only`` bodies never ride the system prompt)."""

ContextRole: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""The role of a message an injection contributes."""

_SURFACE_MODES = frozenset(get_args(SurfaceMode))
CONTEXT_ROLES = frozenset(get_args(ContextRole))


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

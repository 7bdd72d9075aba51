"""The engine's plain values: tool calls, tool results, tools, activations and the shared vocabularies.

Conversation messages, tool-call records and tool schemas are the trace contract's own models
(:class:`~fpdebug.trace.schema.Message`, :class:`~fpdebug.trace.schema.ToolCallRecord`,
:class:`~fpdebug.trace.schema.ToolSchema`); they are re-exported here so that engine code has one
place to import its vocabulary from, and never defined twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeAlias, get_args

from fpdebug.errors import DefinitionError, ToolError
from fpdebug.trace.schema import (
    ContextSource,
    DeliveryLease,
    EvidenceStrength,
    Message,
    ToolCallRecord,
    ToolPeriod,
    ToolResultStatus,
    ToolSchema,
)

__all__ = [
    "CONTEXT_SOURCES",
    "DELIVERY_LEASES",
    "TOOL_STATUSES",
    "Activation",
    "ContextSource",
    "DeliveryLease",
    "EvidenceStrength",
    "JsonValue",
    "Message",
    "Tool",
    "ToolCall",
    "ToolCallRecord",
    "ToolResult",
    "ToolSchema",
    "ToolStatus",
    "require_id",
]

JsonValue: TypeAlias = object
"""A value a tool returned: JSON-like data (dict, list, str, number, bool, None) or any object."""

ToolStatus: TypeAlias = ToolResultStatus
"""The closed set of seven tool outcome statuses (docs/context-model.md §1.6)."""

TOOL_STATUSES: frozenset[str] = frozenset(get_args(ToolResultStatus))
"""``success``, ``failure``, ``denied``, ``invalid``, ``partial``, ``pending``, ``absent``."""

DELIVERY_LEASES: frozenset[str] = frozenset(get_args(DeliveryLease))
"""``next-call`` and ``until-skill-exit`` (docs/context-model.md §4.3)."""

CONTEXT_SOURCES: frozenset[str] = frozenset(get_args(ContextSource))
"""The closed ``ContextSource`` set an injection's flavor is drawn from (docs/context-model.md §1.1)."""


def require_id(value: object, what: str = "id") -> str:
    """Return ``value`` when it is a non-empty string, else refuse it.

    Args:
        value: The candidate id.
        what: How the error names the value (``"injection id"``, ``"skill id"``…).

    Returns:
        The id, unchanged.

    Raises:
        DefinitionError: ``value`` is not a string or is empty / only whitespace.
    """
    if not isinstance(value, str) or not value.strip():
        raise DefinitionError(f"{what} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One entry of a tool batch as the next pass sees it (docs/context-model.md §1.4 ``toolResults``)."""

    tool_name: str
    """The tool that was called."""
    result: JsonValue = None
    """What it returned: an envelope's ``content`` when it returned an envelope, else the raw value."""
    tool_call_id: str | None = None
    """The provider's call id, when the call had one."""
    status: ToolStatus | None = None
    """The status an envelope declared; ``None`` when the tool declared none."""

    def __post_init__(self) -> None:
        if not isinstance(self.tool_name, str):
            raise ToolError(f"a tool result needs a tool name, got {self.tool_name!r}")
        if self.status is not None and (not isinstance(self.status, str) or self.status not in TOOL_STATUSES):
            raise ToolError(
                f"tool result status {self.status!r} is not one of {', '.join(sorted(TOOL_STATUSES))}"
            )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for, as the engine dispatches it."""

    id: str
    """The provider's tool-call id."""
    name: str
    """The tool the model named."""
    args: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """The parsed arguments."""

    def record(self) -> ToolCallRecord:
        """The trace's record of this call."""
        return ToolCallRecord(id=self.id, name=self.name, args=dict(self.args))


TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A tool name the Anthropic and OpenAI APIs both accept (``^[a-zA-Z0-9_-]{1,64}$``)."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool an injection (a skill) or the agent offers: its schema and, optionally, its code."""

    name: str
    """The name the model calls it by."""
    description: str = ""
    """The description sent to the model."""
    parameters: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """The JSON schema of its arguments."""
    handler: Callable[..., object] | None = None
    """The Python callable that runs it (``None`` for a schema-only declaration)."""
    hides_arguments: bool = False
    """Honesty layers: while this tool is in reach, no finding row shows a value the model wrote."""
    display_name: str | None = None
    """Honesty layers: the tool in the app's words (an answer's standing line names it so)."""
    coverage: str | Callable[[Mapping[str, object], object], str | None] | None = None
    """What a result covers (``first 50 of 300``): a fixed text, or a function of the call's
    arguments and what the tool returned (an envelope's content) giving a text or ``None``.
    Recorded on the call's ``tool_result`` and read by the results and answer layers."""
    period: ToolPeriod | None = None
    """The time layer: the period a call covers, declared by its forms (the arguments holding its
    window's start and end); under ``.time()`` each call files a ``call-window`` row."""

    def __post_init__(self) -> None:
        require_id(self.name, "tool name")
        if not TOOL_NAME_PATTERN.fullmatch(self.name):
            # Both live APIs refuse the whole request over one bad name; say so when it is declared.
            raise DefinitionError(
                f"tool name {self.name!r} is not accepted by the model APIs: use 1 to 64 letters, "
                "digits, '_' or '-'"
            )
        if not isinstance(self.hides_arguments, bool):
            raise DefinitionError(
                f"tool {self.name!r}: hides_arguments must be a bool, got {self.hides_arguments!r}"
            )
        named = isinstance(self.display_name, str) and self.display_name.strip()
        if self.display_name is not None and not named:
            raise DefinitionError(
                f"tool {self.name!r}: display_name must be a non-empty string, got {self.display_name!r}"
            )
        if self.coverage is not None and not (isinstance(self.coverage, str) or callable(self.coverage)):
            raise DefinitionError(
                f"tool {self.name!r}: coverage must be a text or a function (args, result) -> text, "
                f"got {self.coverage!r}"
            )

    def schema(self, *, injection_id: str | None = None) -> ToolSchema:
        """The schema as offered to the model.

        Args:
            injection_id: The injection contributing it (docs/context-model.md §1.5 tags skill tools with it).

        Returns:
            The trace's :class:`~fpdebug.trace.schema.ToolSchema`.
        """
        return ToolSchema(
            name=self.name,
            description=self.description,
            parameters=dict(self.parameters),
            injection_id=injection_id,
        )

    @classmethod
    def from_schema(cls, schema: ToolSchema) -> Tool:
        """A schema-only tool built from a trace :class:`~fpdebug.trace.schema.ToolSchema`."""
        return cls(name=schema.name, description=schema.description, parameters=dict(schema.parameters))


@dataclass(frozen=True, slots=True)
class Activation:
    """Who put an id into ``activated_injection_ids``: a ``read_skill`` pick or an accepted proposal."""

    tool_name: str
    """``read_skill``, or the tool whose ``propose-transition`` was accepted."""
    iteration: int
    """The iteration whose batch activated it."""
    tool_call_id: str | None = None
    """The activating call."""

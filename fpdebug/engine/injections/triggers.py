"""The four triggers (docs/context-model.md §1.2): when an injection is active."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from fpdebug.engine.injections.context import InjectionContext
from fpdebug.engine.types import require_id
from fpdebug.errors import DefinitionError

if TYPE_CHECKING:
    from fpdebug.engine.ledger_gate import LedgerCheck


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
    tree_path: tuple[str, ...] | None = field(default=None, kw_only=True)
    """Set when a skill map compiled this rule for a decision-tree leaf: the branch labels from the
    root, whose conjunction is the predicate (docs/context-model.md §5.2); its admission is ``tree``."""
    tree_label: str | None = field(default=None, kw_only=True)
    """The decision tree's label, beside ``tree_path``."""
    ledger: LedgerCheck | None = field(default=None, kw_only=True)
    """The context ledger's gate joined to the predicate (set by ``ledger_gated``): asked only when
    the predicate admits, its demotion recorded as a ``ledger-demoted`` skip."""

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

TRIGGER_TYPES = (Always, Rule, OnToolReturn, LlmActivated)


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

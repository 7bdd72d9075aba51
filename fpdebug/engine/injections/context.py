"""The pass context (docs/context-model.md §1.4): what every trigger reads, and the step pointer it carries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fpdebug.engine.types import Message, ToolResult
from fpdebug.trace.schema import NearTie, Witness

if TYPE_CHECKING:
    from fpdebug.engine.skillmap import CursorMove


@dataclass(frozen=True, slots=True)
class ProposedTransition:
    """What a pass's context sees of a valid transition proposal: its target only."""

    target_skill_id: str
    """The proposed skill."""


@dataclass(frozen=True, slots=True)
class TurnRoute:
    """A precomputed turn-start cascade verdict; the resolver honours it on iteration 1."""

    to_skill: str | None = None
    """Where the cascade starts the cursor (``None``: no start, e.g. a menu left to the model)."""
    from_skill: str | None = None
    """The inherited cursor it started from, if any."""
    by: str = "entry"
    """``intent``, ``continuity``, ``decider``, ``entry`` (a start rule) or ``menu`` (a menu left
    outstanding to the model: no ``to_skill``, the menu in ``offered``)."""
    witness: Witness | None = None
    """The text that decided, when the verdict came from a data matcher or a classifier."""
    score: float | None = None
    """``intent`` (and a scored ``decider``) verdicts: the classifier's score of ``to_skill``."""
    offered: tuple[str, ...] | None = None
    """``decider`` verdicts: the menu the decider resolved; ``menu`` verdicts: the menu the model is
    offered (outstanding until a cursor lands)."""
    near_tie: NearTie | None = None
    """Set when tier 2's best score cleared the threshold but not the margin over the runner-up: the
    verdict came from a later tier, over the shortlist."""


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
    """The turn's entry scores (the entry scorer's, else the app's precomputed ones); the resolver does
    not read them."""
    entry_scorer: Callable[[InjectionContext], Mapping[str, float]] | None = None
    """The declared turn-start entry scorer; the resolver does not call it."""
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

"""How a turn and a run ended: :class:`TurnResult` and :class:`RunResult`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from fpdebug.engine.injections import StepPointer
from fpdebug.engine.leases import InstructionLease
from fpdebug.engine.steps import step_pointer_records
from fpdebug.errors import FpdebugError, RunInterrupted
from fpdebug.trace.schema import EndState, ErrorInfo, MapEngagementRecord, StoppedEarly, TraceEvent

RunStatus: TypeAlias = Literal["completed", "failed", "interrupted", "paused"]
"""How a run (or a turn) ended: ``paused`` waits for the user's answer to an argument ask."""


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
    """Set when a limit (the iterations, the cost budget) cut the turn short."""
    input_tokens: int = 0
    """Prompt tokens of the turn's calls."""
    output_tokens: int = 0
    """Completion tokens of the turn's calls."""
    error: ErrorInfo | None = None
    """Why the run failed during this turn."""
    refusal: str | None = None
    """Set when the final reply was a refusal (``refusal``, ``content_filter``): the answer is the
    model declining, not an answer."""
    output: object = None
    """The answer validated against the agent's output schema (:meth:`Agent.output_schema`): a model
    instance for a pydantic model; ``None`` without a schema."""


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
    def refused_turns(self) -> tuple[int, ...]:
        """The turns whose final reply was a refusal."""
        return tuple(turn.turn for turn in self.turns if turn.refusal is not None)

    @property
    def content(self) -> str:
        """The last turn's final answer (empty when there is none)."""
        return self.turns[-1].content if self.turns else ""

    @property
    def output(self) -> object:
        """The last turn's validated answer (:attr:`TurnResult.output`; ``None`` without a schema)."""
        return self.turns[-1].output if self.turns else None

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
        if self.status == "paused":
            raise FpdebugError(f"run {self.run_id} ended paused: an argument ask was never answered")
        why = self.error.message if self.error is not None else "unknown error"
        raise FpdebugError(f"run {self.run_id} failed: {why}")


def end_state_of(
    has_map: bool,
    cursor: str | None,
    leases: Sequence[InstructionLease] | None,
    engagement: Sequence[MapEngagementRecord] | None,
    step_pointer: Sequence[StepPointer] | None,
) -> EndState | None:
    """The carriers a turn left (docs/context-model.md §7.3): the cursor, the leases, the engagement
    records and the step pointer; ``None`` on an agent that uses none of them."""
    if not has_map and leases is None and engagement is None and step_pointer is None:
        return None
    return EndState(
        cursor=cursor,
        leases=[lease.record() for lease in leases] if leases is not None else None,
        engagement=list(engagement) if engagement is not None else None,
        step_pointer=step_pointer_records(step_pointer) if step_pointer is not None else None,
    )

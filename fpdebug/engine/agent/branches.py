"""Route's two non-tool ways back to the loop head (docs/context-model.md §5.6, §7.1, §7.2).

- **step-nudge**: the model answered (no tool call) while a declared step procedure is unfinished.
  Once per turn, and only while the budget lasts (``iteration < max_iterations``), Route re-asks: the
  answer stays in the history, a user message says which step is current, ``steps_unfinished`` is
  recorded and the loop goes round again. A second unfinished answer in the same turn is final.
- **wrap-up**: the model still asked for tools at the iteration limit. With ``Agent.wrap_up()`` Route
  does not end the turn on that reply: the calls never run, a user message says so, ``wrap_up`` is
  recorded, and one more call runs at ``max_iterations + 1`` with no tool offered. Its reply is the
  answer, and ``stopped_early`` is that of the cut reply, marked ``wrapped_up``.

Neither runs a tool, so neither touches the batch in place: the next loop head sees the previous
batch with its stamp (judged once: ``iteration == stamp + 1`` no longer holds), a proposal stamped
two iterations back is not honoured again, and the iteration advances by one like every loop branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fpdebug.engine.injections import StepPointer
from fpdebug.engine.steps import StepPlan, current_step
from fpdebug.trace.schema import LlmRequest, LlmResponse, Message, RouteChoice, StoppedEarly

__all__ = [
    "WRAP_UP_INSTRUCTION",
    "StepNudge",
    "WrapUp",
    "choose_route",
    "loop_back_messages",
    "step_nudge_due",
    "step_nudge_text",
    "tools_off",
]

WRAP_UP_INSTRUCTION = (
    "You have reached this turn's iteration limit: the tool calls you just asked for were not run, and "
    "no tool can run any more this turn. Answer now with what you already have, and say plainly what "
    "is still unknown."
)
"""What the model reads before the wrap-up call."""


@dataclass(frozen=True, slots=True)
class StepNudge:
    """A due step nudge: the procedure in progress and the sentence the model reads."""

    pointer: StepPointer
    """The pointer as it stands (its step is current)."""
    tool: str
    """The current step's tool."""
    text: str
    """The user message added to the history."""

    def fields(self) -> dict[str, object]:
        """The ``steps_unfinished`` event's fields."""
        return {
            "skill_id": self.pointer.skill_id,
            "step": self.pointer.step,
            "total": self.pointer.total,
            "tool": self.tool,
            "skipped": list(self.pointer.skipped),
            "nudge": self.text,
        }


@dataclass(frozen=True, slots=True)
class WrapUp:
    """A wrap-up: the reply cut at the limit, as ``stopped_early`` will say it."""

    stopped: StoppedEarly
    """``max-iterations`` at the cut, ``wrapped_up=True``."""

    def fields(self) -> dict[str, object]:
        """The ``wrap_up`` event's fields."""
        return {
            "pending_tool_calls": self.stopped.pending_tool_calls,
            "answer_was_empty": self.stopped.answer_was_empty,
            "instruction": WRAP_UP_INSTRUCTION,
        }


def step_nudge_text(pointer: StepPointer, plan: StepPlan) -> str:
    """The nudge the model reads: the procedure, the current step and its tool, the way out."""
    step = plan.steps[pointer.step - 1]
    remaining = pointer.total - pointer.step + 1
    return (
        f"The '{pointer.skill_id}' procedure is not finished: step {pointer.step} of {pointer.total} "
        f"({step.note}; tool: `{step.tool}`) is current and {remaining} step(s) remain. Run it, or call "
        "skip_step with a reason, before you answer."
    )


def step_nudge_due(pointer: Sequence[StepPointer] | None, plans: Mapping[str, StepPlan]) -> StepNudge | None:
    """The nudge due for an answer given while ``pointer`` stands, or ``None`` when no procedure is in
    progress (no pointer, a finished one, a skill without a plan)."""
    state = current_step(pointer, plans)
    if state is None:
        return None
    current, plan, step = state
    return StepNudge(current, step.tool, step_nudge_text(current, plan))


def choose_route(
    response: LlmResponse,
    *,
    iteration: int,
    max_iterations: int,
    nudge: StepNudge | None,
    wrap_up: bool,
) -> RouteChoice:
    """Route (docs/context-model.md §7.1), in the reference's order.

    Args:
        response: The reply.
        iteration: The iteration the reply belongs to.
        max_iterations: The turn's limit.
        nudge: The step nudge still available this turn (``None``: none due, or already spent).
        wrap_up: The agent wraps up, and this turn has not yet.

    Returns:
        ``tool-calls`` while the reply asks for tools and the budget lasts; ``wrap-up`` for a reply
        still asking for tools at the limit (when armed); ``step-nudge`` for an answer with steps left
        while the budget lasts; else ``final``.
    """
    if response.tool_calls:
        if iteration < max_iterations:
            return "tool-calls"
        return "wrap-up" if wrap_up and iteration == max_iterations else "final"
    if nudge is not None and iteration < max_iterations:
        return "step-nudge"
    return "final"


def loop_back_messages(response: LlmResponse, said: str) -> list[Message]:
    """What a non-tool branch adds to the history: the reply's text (an empty one is left out, and its
    tool calls, which never run, too), then the loop's own user message."""
    messages = []
    if response.content.strip():
        messages.append(Message(role="assistant", content=response.content))
    messages.append(Message(role="user", content=said, from_loop=True))
    return messages


def tools_off(request: LlmRequest) -> LlmRequest:
    """The wrap-up call's request: the same context with no tool offered (a cache mark keeps its
    system-prompt end and covers no tool)."""
    prefix = request.cache_prefix
    return request.model_copy(
        update={
            "tools": [],
            "cache_prefix": prefix.model_copy(update={"tools": 0}) if prefix is not None else None,
        }
    )

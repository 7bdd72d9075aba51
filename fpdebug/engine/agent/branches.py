"""Route and its non-tool ways back to the loop head (docs/context-model.md §5.6, §7.1, §7.2).

- **step-nudge**: the model answered (no tool call) while a declared step procedure is unfinished.
  Once per turn, and only while the budget lasts (``iteration < max_iterations``), Route re-asks: the
  answer stays in the history, a user message says which step is current, ``steps_unfinished`` is
  recorded and the loop goes round again. A second unfinished answer in the same turn is final.
- **wrap-up**: the model still asked for tools at the iteration limit. With ``Agent.wrap_up()`` Route
  does not end the turn on that reply: the calls never run, a user message says so, ``wrap_up`` is
  recorded, and one more call runs at ``max_iterations + 1`` with no tool offered. Its reply is the
  answer, and ``stopped_early`` is that of the cut reply, marked ``wrapped_up``. A reply cut by the
  run's cost budget (:mod:`.limits`) wraps up the same way, at whatever iteration it came.
- **output-retry**: the reply Route would send to ``final`` fails the agent's output schema. Up to
  ``max_retries`` times a turn, the reply's text and a re-ask carrying the error join the history,
  ``output_retry`` is recorded and the loop goes round again.

None of them runs a tool, so neither touches the batch in place: the next loop head sees the previous
batch with its stamp (judged once: ``iteration == stamp + 1`` no longer holds), a proposal stamped
two iterations back is not honoured again, and the iteration advances by one like every loop branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fpdebug.engine.agent.limits import OutputSchema, SpendMeter, output_reask
from fpdebug.engine.injections import StepPointer
from fpdebug.engine.steps import StepPlan, current_step
from fpdebug.trace.schema import LlmRequest, LlmResponse, Message, RouteChoice, StoppedEarly

__all__ = [
    "WRAP_UP_BUDGET_INSTRUCTION",
    "WRAP_UP_INSTRUCTION",
    "OutputRetry",
    "StepNudge",
    "WrapUp",
    "choose_route",
    "cut_short",
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

WRAP_UP_BUDGET_INSTRUCTION = (
    "This run has reached its cost budget: the tool calls you just asked for were not run, and no tool "
    "can run any more. Answer now with what you already have, and say plainly what is still unknown."
)
"""What the model reads before a wrap-up call the cost budget caused."""


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
        """The ``wrap_up`` event's fields (the budget's, when the cost budget cut the reply)."""
        stopped = self.stopped
        fields: dict[str, object] = {
            "pending_tool_calls": stopped.pending_tool_calls,
            "answer_was_empty": stopped.answer_was_empty,
            "instruction": WRAP_UP_INSTRUCTION,
        }
        if stopped.reason == "cost-budget":
            fields.update(
                instruction=WRAP_UP_BUDGET_INSTRUCTION,
                reason="cost-budget",
                budget_usd=stopped.budget_usd,
                spent_usd=stopped.spent_usd,
            )
        return fields


@dataclass(frozen=True, slots=True)
class OutputRetry:
    """A due ``output-retry``: the reply failed the output schema and a re-ask is left this turn."""

    attempt: int
    """This re-ask's number in the turn (1 for the first)."""
    schema: OutputSchema
    """The declaration."""
    error: str
    """Why the reply failed."""

    @property
    def reask(self) -> str:
        """The user message added to the history."""
        return output_reask(self.schema, self.error)

    def fields(self) -> dict[str, object]:
        """The ``output_retry`` event's fields."""
        return {
            "error": self.error,
            "attempt": self.attempt,
            "max_retries": self.schema.max_retries,
            "reask": self.reask,
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
    over_budget: bool = False,
) -> RouteChoice:
    """Route (docs/context-model.md §7.1), in the reference's order.

    Args:
        response: The reply.
        iteration: The iteration the reply belongs to.
        max_iterations: The turn's limit.
        nudge: The step nudge still available this turn (``None``: none due, or already spent).
        wrap_up: The agent wraps up, and this turn has not yet.
        over_budget: The run's spend has reached its cost budget (:class:`~.limits.SpendMeter`).

    Returns:
        ``tool-calls`` while the reply asks for tools, the iterations last and the spend is under the
        budget; ``wrap-up`` for a reply still asking for tools at the limit or past the budget (when
        armed); ``step-nudge`` for an answer with steps left while both last; else ``final``. The
        output schema's ``output-retry`` is decided after this, on a ``final`` reply.
    """
    if response.tool_calls:
        if iteration < max_iterations and not over_budget:
            return "tool-calls"
        return "wrap-up" if wrap_up and (over_budget or iteration == max_iterations) else "final"
    if nudge is not None and iteration < max_iterations and not over_budget:
        return "step-nudge"
    return "final"


def cut_short(
    response: LlmResponse, iteration: int, spend: SpendMeter | None, *, wrapped_up: bool | None = None
) -> StoppedEarly:
    """``stopped_early`` for a reply whose tool calls Route did not run.

    The reason is ``cost-budget`` when the run's spend has reached its budget, even at the iteration
    limit too: the budget would have stopped the tools at any iteration, so it is what cut the turn.
    """
    over = spend is not None and spend.over
    return StoppedEarly(
        reason="cost-budget" if over else "max-iterations",
        iteration=iteration,
        pending_tool_calls=len(response.tool_calls),
        answer_was_empty=not response.content.strip(),
        wrapped_up=wrapped_up,
        **(spend.stop_fields() if spend is not None and over else {}),
    )


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

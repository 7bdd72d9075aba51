"""Demo (h): the model answers with a refund procedure unfinished; the step nudge re-asks it once.

A support agent's map has two skills: ``triage`` (entry) and ``refund``, whose procedure declares two
steps, ``lookup_order`` then ``issue_refund``. On iteration 1 the model calls ``escalate``, whose
envelope proposes moving to ``refund`` ("the customer asked for their money back"). Iteration 2's
pass honours the proposal (the cursor moves by ``tool-proposal``) and the step pointer starts at
step 1 of 2, but the model answers at once: "I have started your refund." Route does not end the
turn: it chooses ``step-nudge``, the trace records ``steps_unfinished`` and the model reads which
step is current. Iteration 3 is that re-ask. It runs no tool of its own, so three rules show:

- the proposal stamped on iteration 1 is not honoured again (the cursor stays by ``stay``);
- the batch in place is still ``escalate``'s, so ``after-escalation`` (on the return of
  ``escalate``) is active again on this pass;
- the results layer, at its loop head, does not judge that batch a second time.

The model then runs both steps and answers; no second nudge is due. Every honesty layer is armed
(``.findings()``), so the equality law covers the re-ask.
"""

from __future__ import annotations

from fpdebug.demo.script import tool_results, user_message
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, propose_transition
from fpdebug.engine.injections import OnToolReturn, Step, define_injection, define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "step-nudge"
DESCRIPTION = "Step nudge: the model answers with the refund procedure unfinished and is re-asked once"
USER_MESSAGES = ("Order A-17 arrived broken. I want my money back.",)

EARLY_ANSWER = "I have started your refund for order A-17."
ANSWER = "Your refund of $42.00 for order A-17 is issued (refund R-9)."

EXPECTED = {
    "routes": ["tool-calls", "step-nudge", "tool-calls", "tool-calls", "final"],
    "cursor": ["triage", "refund", "refund", "refund", "refund"],
    "cursor_by": ["entry", "tool-proposal", "stay", "stay", "stay"],
    "nudged_at": 2,
    "answer": ANSWER,
}


def escalate(reason: str) -> dict[str, object]:
    """Hand the conversation to the refund desk.

    Args:
        reason: Why.
    """
    return envelope(
        "Escalated to refunds.", propose_transition("refund", "the customer asked for their money back")
    )


def lookup_order(order_id: str) -> dict[str, object]:
    """Look an order up.

    Args:
        order_id: The order id, such as A-17.
    """
    return {"order_id": order_id, "total": 42.00, "currency": "USD", "status": "delivered"}


def issue_refund(order_id: str, amount: float) -> dict[str, object]:
    """Refund an order.

    Args:
        order_id: The order id.
        amount: The amount to refund.
    """
    return {"refund_id": "R-9", "order_id": order_id, "amount": amount}


def build_agent() -> Agent:
    """Triage → refund (by the escalation's proposal), the refund procedure in two steps."""
    triage = define_skill(
        "triage",
        description="Triage",
        body="Triage: find out what the customer needs.",
        tools=[tool(escalate)],
    )
    refund = define_skill(
        "refund",
        description="Refunds",
        body="Refunds: follow the procedure.",
        tools=[tool(lookup_order), tool(issue_refund)],
        steps=[Step("lookup_order", "look the order up"), Step("issue_refund", "refund its total")],
    )
    skill_map = (
        SkillMapBuilder().skill(triage).skill(refund).entry("triage").route("triage", "refund").build()
    )
    return (
        Agent(NAME)
        .system_prompt("You are a support agent for an online shop.")
        .injections(
            define_injection(
                "after-escalation",
                trigger=OnToolReturn("escalate"),
                flavor="instructions",
                system_prompt="The case was escalated: keep the customer informed.",
                description="Rides every pass whose batch in place holds escalate's result",
            )
        )
        .skill_map(skill_map)
        .max_iterations(8)
        .findings()
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Escalate, answer too early, then (nudged) run both steps and answer."""
    said = [m.content for m in request.messages if m.role == "user" and m.from_loop]
    if not tool_results(request, "escalate"):
        return ScriptedReply.tool_call("escalate", {"reason": user_message(request)})
    if not any("procedure is not finished" in text for text in said):
        return ScriptedReply.text(EARLY_ANSWER)
    if not tool_results(request, "lookup_order"):
        return ScriptedReply.tool_call("lookup_order", {"order_id": "A-17"})
    if not tool_results(request, "issue_refund"):
        return ScriptedReply.tool_call("issue_refund", {"order_id": "A-17", "amount": 42.0})
    return ScriptedReply.text(ANSWER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-step-nudge")

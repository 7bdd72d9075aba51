"""Demo (k): a decision tree routes each turn's message to a leaf skill, with no cursor.

A support agent's map is one decision tree, ``support``. Its root has two branches: ``billing``
(the message names a charge, an invoice or a refund) and ``shipping`` (a parcel or a delivery).
Under ``billing``, ``refund`` (the word "refund") ends in the ``refund`` skill and ``copy`` (a copy
of an invoice) in ``invoice-copy``. A leaf is active on a pass exactly while every predicate on its
path holds: turn 1 ("Please refund the duplicate charge on my card.") takes ``billing › refund``, so
``refund`` and its ``charge_status`` tool ride from the first call; turn 2 ("Where is my parcel?")
takes the other branch, ``shipping``, and ``refund`` is gone. The tree has no cursor: every pass's
cursor move is ``by: none``, and each leaf's pass reason is ``via: tree`` with the path it took.
"""

from __future__ import annotations

from fpdebug.demo.script import tool_results, user_message
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder, branch
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "decision-tree"
DESCRIPTION = "Decision tree: each turn's message takes a branch to a leaf skill, with no cursor"
USER_MESSAGES = ("Please refund the duplicate charge on my card.", "Where is my parcel?")

FIRST_ANSWER = "Your refund of $42.00 was approved; it reaches your card in 3 days."
SECOND_ANSWER = "Your parcel PX-9 is out for delivery and arrives today."

EXPECTED = {
    "leaves": [["refund", "refund"], ["shipping", "shipping"]],
    "paths": [["billing", "refund"], ["shipping"]],
    "cursor_by": [["none", "none"], ["none", "none"]],
    "answers": [FIRST_ANSWER, SECOND_ANSWER],
}


def charge_status(charge: str) -> dict[str, object]:
    """The state of a refund.

    Args:
        charge: Which charge, in the customer's words.
    """
    return {"charge": charge, "amount": 42.00, "state": "approved", "days": 3}


def track_parcel() -> dict[str, object]:
    """Where the customer's latest parcel is."""
    return {"parcel": "PX-9", "state": "out for delivery", "eta": "today"}


def build_agent() -> Agent:
    """A map that is one tree: billing › refund | billing › copy, and shipping."""
    refund = define_skill(
        "refund",
        description="Refunds",
        body="Refunds: check the refund's state.",
        tools=[tool(charge_status)],
    )
    invoice_copy = define_skill(
        "invoice-copy", description="Invoice copies", body="Send a copy of an invoice."
    )
    shipping = define_skill(
        "shipping", description="Shipping", body="Shipping: track the parcel.", tools=[tool(track_parcel)]
    )
    skill_map = (
        SkillMapBuilder()
        .skill(refund)
        .skill(invoice_copy)
        .skill(shipping)
        .tree(
            "support",
            branch(
                "billing",
                keywords=["charge", "invoice", "refund"],
                then=[
                    branch("refund", keywords=["refund"], then="refund"),
                    branch("copy", regex=r"(?i)\bcopy\b", then="invoice-copy"),
                ],
            ),
            branch("shipping", keywords=["parcel", "delivery"], then="shipping"),
        )
        .build()
    )
    return Agent(NAME).system_prompt("You answer support questions.").skill_map(skill_map).max_iterations(4)


def respond(request: LlmRequest) -> ScriptedReply:
    """Turn 1: ask charge_status, answer. Turn 2: ask track_parcel, answer."""
    if "parcel" in user_message(request):
        if not tool_results(request, "track_parcel"):
            return ScriptedReply.tool_call("track_parcel", {})
        return ScriptedReply.text(SECOND_ANSWER)
    if not tool_results(request, "charge_status"):
        return ScriptedReply.tool_call("charge_status", {"charge": "the duplicate charge"})
    return ScriptedReply.text(FIRST_ANSWER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-decision-tree")

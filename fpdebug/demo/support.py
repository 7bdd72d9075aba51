"""Demo (a): a support agent whose skill map goes triage → billing → refund, with two instruction leases.

The timeline the scripted model plays (one turn, five iterations):

1. ``triage`` (entry): the model looks the order up (``lookup_order``);
2. ``billing`` (route on ``lookup_order``): it checks the policy and fetches the invoice in one
   batch; ``check_policy`` grants ``refund-policy`` until billing is left, ``fetch_invoice`` grants
   ``wire-format`` for the next call only (both with tenant ``billing``);
3. ``billing`` (stay): both leases serve; the sweep of this same pass removes the spent
   ``wire-format``; the model picks the refund skill (``read_skill('refund')``);
4. ``refund`` (model-pick): ``refund-policy``'s tenure ends; the model issues the refund;
5. the final answer.
"""

from __future__ import annotations

import re

from fpdebug.demo.script import last_result, offered, tool_results, user_message
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, require_instruction
from fpdebug.engine.injections import Rule, define_injection, define_skill, define_steering
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "support"
DESCRIPTION = "Support agent: skill map triage → billing → refund, an until-skill-exit and a next-call lease"
USER_MESSAGES = ("I was charged twice for order A-17. Please refund the duplicate charge.",)

ORDERS: dict[str, dict[str, object]] = {
    "A-17": {"order_id": "A-17", "customer_id": "C-4", "amount": 42.0, "status": "charged twice"},
    "B-2": {"order_id": "B-2", "customer_id": "C-9", "amount": 15.5, "status": "delivered"},
}

EXPECTED = {
    "iterations": 5,
    "cursor": ["triage", "billing", "billing", "refund", "refund"],
    "final": "I refunded the duplicate charge of $42.00 on order A-17 (refund R-1).",
}


def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order id, such as A-17.
    """
    if order_id not in ORDERS:
        raise KeyError(f"no order {order_id}")
    return dict(ORDERS[order_id])


def check_policy(topic: str) -> dict[str, object]:
    """Check the shop's policy on a topic (refunds, duplicate charges, invoices).

    Args:
        topic: What the policy question is about.
    """
    return envelope(
        f"Policy on {topic}: see the refund policy now in your instructions.",
        require_instruction("refund-policy", "until-skill-exit"),
    )


def fetch_invoice(order_id: str) -> dict[str, object]:
    """Fetch the invoice of an order.

    Args:
        order_id: The order id.
    """
    order = lookup_order(order_id)
    invoice = {"invoice_id": f"INV-{order_id}", "order_id": order_id, "amount": order["amount"], "charges": 2}
    return envelope(invoice, require_instruction("wire-format", "next-call"))


def issue_refund(order_id: str, amount: float) -> dict[str, object]:
    """Refund an amount to the order's original payment method.

    Args:
        order_id: The order id.
        amount: The amount to refund, in USD.
    """
    return {"refund_id": "R-1", "order_id": order_id, "amount": amount, "status": "issued"}


def _only_when_leased(_: object) -> bool:
    return False


def build_agent() -> Agent:
    """The support agent: three skills on a map, two lease-only instructions, one steering rule."""
    triage = define_skill(
        "triage",
        description="Work out which order the customer means",
        body="Triage: find the order the customer is talking about with lookup_order before anything else.",
        tools=[tool(lookup_order)],
    )
    billing = define_skill(
        "billing",
        description="Charges, invoices and the refund policy",
        body=(
            "Billing: check the policy and fetch the invoice before you decide. When money is due back, "
            "load the refund skill."
        ),
        tools=[tool(check_policy), tool(fetch_invoice)],
    )
    refund = define_skill(
        "refund",
        description="Issue refunds",
        body="Refund: issue the refund for the duplicated amount shown on the invoice, then confirm it.",
        tools=[tool(issue_refund)],
    )
    skill_map = (
        SkillMapBuilder()
        .skill(triage)
        .skill(billing)
        .skill(refund)
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup_order")
        .route("billing", "refund")  # model-only: the model picks it with read_skill
        .build()
    )
    never = Rule(_only_when_leased, description="never on its own: rides only while a lease serves it")
    refund_policy = define_injection(
        "refund-policy",
        trigger=never,
        flavor="instructions",
        system_prompt="Refund policy: a duplicate charge is refunded in full to the original payment method.",
        description="The refund policy (leased by check_policy until the billing skill is left)",
    )
    wire_format = define_injection(
        "wire-format",
        trigger=never,
        flavor="instructions",
        system_prompt="Quote every amount in USD with two decimals, such as $42.00.",
        description="Amount format (leased by fetch_invoice for the next call only)",
    )
    tone = define_steering("tone", prompt="Be brief and friendly.", description="House tone")
    return (
        Agent(NAME)
        .system_prompt("You are a customer support agent for an online shop.")
        .injections(tone, refund_policy, wire_format)
        .skill_map(skill_map)
        .max_iterations(8)
    )


def _order_id(request: LlmRequest) -> str:
    found = re.search(r"\b[A-Z]-\d+\b", user_message(request))
    return found.group(0) if found else "A-17"


def respond(request: LlmRequest) -> ScriptedReply:
    """The scripted model: what it does next depends on what this turn has seen and what is on offer."""
    order_id = _order_id(request)
    tools = offered(request)
    if not tool_results(request, "lookup_order"):
        return ScriptedReply.tool_call("lookup_order", {"order_id": order_id})
    if not tool_results(request, "check_policy") and {"check_policy", "fetch_invoice"} <= tools:
        return ScriptedReply.batch(
            ScriptedCall("check_policy", {"topic": "duplicate charge"}),
            ScriptedCall("fetch_invoice", {"order_id": order_id}),
            content="Let me check the policy and the invoice.",
        )
    if not tool_results(request, "read_skill") and "read_skill" in tools:
        return ScriptedReply.tool_call("read_skill", {"id": "refund"})
    invoice = last_result(request, "fetch_invoice")
    amount = float(invoice["amount"]) if isinstance(invoice, dict) and "amount" in invoice else 0.0
    if not tool_results(request, "issue_refund") and "issue_refund" in tools:
        return ScriptedReply.tool_call("issue_refund", {"order_id": order_id, "amount": amount})
    refund = last_result(request, "issue_refund")
    if isinstance(refund, dict) and refund.get("status") == "issued":
        refund_id = refund["refund_id"]
        return ScriptedReply.text(
            f"I refunded the duplicate charge of ${amount:.2f} on order {order_id} (refund {refund_id})."
        )
    return ScriptedReply.text(f"I could not refund order {order_id}; a colleague will follow up.")


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-support")

"""Demo (f): the second call's arguments are values from the first call's result, and the rows say so.

A support agent is asked to refund the most recent order of customer C-88. It lists the customer's
orders (``list_orders``, whose result declares its coverage: "the 2 most recent of 5 orders"), then
calls ``refund_order`` with the first order's id and total. The inputs layer traces both arguments
to the first call: ``$.order_id`` ← ``call_1`` at ``$.orders[0].order_id`` and ``$.amount`` ←
``call_1`` at ``$.orders[0].total``, iteration 1.

The agent arms argument sources (``.findings(argument_sources=True)``), so the model may cite its
sources in the reserved ``_from`` argument. It cites two: the order id from ``tool:call_1`` at
``$.orders[0].order_id`` (kept: that leaf holds it) and the amount from ``user`` (refused: the
user's message holds no 89.90). The refused citation is filtered out and named on the amount's row;
the basis row keeps one entry and counts one dropped. ``_from`` is stripped before the call runs,
so ``refund_order`` (which accepts no other argument) runs with the order id and the amount only.
"""

from __future__ import annotations

from collections.abc import Mapping

from fpdebug.demo.script import last_result, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "traced-argument"
DESCRIPTION = "Traced argument: the refund's order id and amount come from the first call's result"
USER_MESSAGES = ("Please refund the most recent order of customer C-88.",)

ANSWER = "Refunded $89.90 for order ORD-5521 (customer C-88); refund RF-9001 is issued."
"""The final answer."""

EXPECTED = {
    "answer": ANSWER,
    "traced": {
        "$.order_id": {"source_tool_call_id": "call_1", "source_path": "$.orders[0].order_id"},
        "$.amount": {"source_tool_call_id": "call_1", "source_path": "$.orders[0].total"},
    },
    "source_iteration": 1,
    "refused": {"$.amount": "user"},
    "basis": {"kept": 1, "dropped": 1},
    "coverage": "the 2 most recent of 5 orders",
}

_ORDERS = [
    {"order_id": "ORD-5521", "total": 89.90, "placed": "2026-01-03"},
    {"order_id": "ORD-5307", "total": 42.50, "placed": "2025-12-12"},
]


def list_orders(customer_id: str) -> dict[str, object]:
    """List a customer's most recent orders, newest first.

    Args:
        customer_id: The customer id, such as C-88.
    """
    return {"customer_id": customer_id, "orders": _ORDERS, "total_orders": 5}


def _orders_coverage(args: Mapping[str, object], result: object) -> str | None:
    if not isinstance(result, dict):
        return None
    return f"the {len(result['orders'])} most recent of {result['total_orders']} orders"


def refund_order(order_id: str, amount: float) -> dict[str, object]:
    """Refund an order.

    Args:
        order_id: The order to refund.
        amount: The amount to refund, in dollars.
    """
    return {"refund_id": "RF-9001", "order_id": order_id, "amount": amount, "status": "issued"}


def build_agent() -> Agent:
    """The support agent, every honesty layer armed with argument sources (``_from`` citations)."""
    return (
        Agent(NAME)
        .system_prompt(
            "You handle refunds for an online shop. When you call a tool, cite where each argument "
            'came from in "_from".'
        )
        .tools(tool(list_orders, coverage=_orders_coverage), refund_order)
        .findings(argument_sources=True)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """List the orders, refund the newest one citing the listing, then report the refund."""
    listing = last_result(request, "list_orders")
    if not isinstance(listing, dict):
        return ScriptedReply.tool_call("list_orders", {"customer_id": "C-88"})
    refund = last_result(request, "refund_order")
    if not isinstance(refund, dict):
        source = f"tool:{tool_results(request, 'list_orders')[-1].tool_call_id}"
        newest = listing["orders"][0]
        return ScriptedReply.tool_call(
            "refund_order",
            {
                "order_id": newest["order_id"],
                "amount": newest["total"],
                "_from": [
                    {"arg": "$.order_id", "source": source, "path": "$.orders[0].order_id"},
                    {"arg": "$.amount", "source": "user"},
                ],
            },
        )
    return ScriptedReply.text(
        f"Refunded ${refund['amount']:.2f} for order {refund['order_id']} "
        f"(customer {listing['customer_id']}); refund {refund['refund_id']} is issued."
    )


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-traced-argument")

"""Demo (k): the turn-start cascade, and a guess founded by a classifier that parks.

A support agent's map has ``billing`` (tool ``refund_charge``) and ``shipping`` (tool
``track_parcel``), each entered by keywords none of the customer's messages use. The app declares
a turn-start cascade (``Agent.turn_start``): a deterministic classifier that scores the skills
against the user message, and a decider that resolves a menu when the classifier is not sure.

Turn 1: "I was charged twice for order 42". The classifier scores billing 0.8, so the first pass
starts on ``billing`` ``by: intent`` (semantic evidence: a guess, tentative). The model then makes
three reads with the agent's own tools and never calls billing's tool: nothing renews the
guess, so after three idle passes (the renewal grace) the engagement kernel parks the map: billing's
prompt and ``refund_charge`` leave the request, the park card takes their place, and the model
answers. Turn 2: "And the other thing?". The classifier scores nothing, the cursor does not carry
(``continuity("turn")``), so the decider picks ``shipping`` from the menu of the map's skills
(``by: decider``); the model calls ``track_parcel``, shipping's own tool, which renews the map, and
answers.
"""

from __future__ import annotations

from collections.abc import Mapping

from fpdebug.demo.script import offered, tool_results, user_message
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "cascade"
DESCRIPTION = "Turn-start cascade: a classifier's guess starts the cursor and parks; a decider picks"
USER_MESSAGES = ("I was charged twice for order 42. Can you check?", "And the other thing?")

FIRST_ANSWER = "Order 42 was charged once: the second line is an authorization that will drop off."
SECOND_ANSWER = "Your parcel for order 42 is out for delivery today."

EXPECTED = {
    "cursor_by": [["intent", "stay", "stay", "stay"], ["decider", "stay"]],
    "cursor": [["billing"] * 4, ["shipping"] * 2],
    "score": 0.8,
    "offered": ["billing", "shipping"],
    "parked_at": [1, 4],
    "answers": [FIRST_ANSWER, SECOND_ANSWER],
}

_READS = (("lookup_order", "42"), ("list_payments", "42"), ("lookup_order", "41"))
"""The reads the model makes on turn 1 with the agent's own tools (none of them billing's): the order,
its payments, the customer's previous order."""


def classify(message: str) -> Mapping[str, float]:
    """The app's classifier: a deterministic score per skill (entry scoring)."""
    text = message.lower()
    return {"billing": 0.8 if "charged" in text else 0.0, "shipping": 0.7 if "deliver" in text else 0.0}


def decide(message: str, menu: tuple[str, ...]) -> str | None:
    """The app's decider: an unsure follow-up goes to the last skill of the menu."""
    return menu[-1] if "other" in message.lower() else None


def lookup_order(order_id: str) -> dict[str, object]:
    """Look an order up.

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "status": "shipped", "total": 42.0}


def list_payments(order_id: str) -> dict[str, object]:
    """The payments of an order.

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "captured": [42.0], "authorizations": [42.0]}


def refund_charge(order_id: str) -> dict[str, object]:
    """Refund a duplicate charge.

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "refunded": True}


def track_parcel(order_id: str) -> dict[str, object]:
    """Where an order's parcel is.

    Args:
        order_id: The order id.
    """
    return {"order_id": order_id, "status": "out for delivery"}


def build_agent() -> Agent:
    """Billing and shipping, entered by keywords nobody says; a classifier and a decider start turns."""
    billing = define_skill(
        "billing",
        description="Billing",
        body="Billing: refund duplicate charges.",
        tools=[tool(refund_charge)],
    )
    shipping = define_skill(
        "shipping", description="Shipping", body="Shipping: track parcels.", tools=[tool(track_parcel)]
    )
    skill_map = (
        SkillMapBuilder()
        .skill(billing)
        .skill(shipping)
        .entry("billing", keywords=["refund"])
        .entry("shipping", keywords=["parcel"])
        .build()
    )
    return (
        Agent(NAME)
        .system_prompt("You answer questions about orders.")
        .tools(lookup_order, list_payments)
        .skill_map(skill_map)
        .maps(renewal_grace=3)
        .turn_start(classifier=classify, threshold=0.5, decider=decide)
        .max_iterations(6)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Turn 1: three reads with the agent's tools, then answer. Turn 2: track the parcel, answer."""
    if "other" in user_message(request).lower():
        if "track_parcel" in offered(request) and not tool_results(request, "track_parcel"):
            return ScriptedReply.tool_call("track_parcel", {"order_id": "42"})
        return ScriptedReply.text(SECOND_ANSWER)
    done = len(tool_results(request))
    if done < len(_READS):
        name, order_id = _READS[done]
        return ScriptedReply.tool_call(name, {"order_id": order_id})
    return ScriptedReply.text(FIRST_ANSWER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-cascade")

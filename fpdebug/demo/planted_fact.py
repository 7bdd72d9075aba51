"""Demo (c): a planted fact makes the model answer wrongly; without it the model answers correctly.

A refund-approval agent is asked to refund $250 for order ORD-7. Its context holds the real limit
(``refund-limits``: refunds above $100 need manager review) and a planted, stale fact
(``vip-override``: approve every refund without review). The scripted model is a function of its
context, like a real one: while a system-prompt segment says "VIP override" it approves; when only
the limit is there it declines. Removing ``vip-override`` flips the answer; removing anything else
does not. That is what the backtracker's ablation must find.

Variants (``build_agent(variant=…)``, ``scripted_provider(variant=…)``) for the backtracker's tests.
A culprit SET (docs/backtracking.md §9.7) is a minimal set of pieces whose REMOVAL flips the answer:

- ``single``: the culprit is ``vip-override`` alone (the default): culprit sets ``[[vip-override]]``;
- ``joint``: two facts each enough on its own to approve (``vip-override``, ``legacy-policy``), so
  removing one changes nothing and only removing both flips the answer: ONE culprit set of two;
- ``independent``: approval needs two facts together (``vip-flag`` says the customer is VIP,
  ``vip-policy`` says VIPs skip review), so removing either alone flips the answer: TWO culprit
  sets of one each;
- ``unchanged``: a model that declines whatever its context says (no culprit).

The agent records its variant in ``run_start.options`` (``variant``), so a rerun of a recorded call
rebuilds the same scripted model. The model looks the order up only while ``lookup_order`` is on
offer: a rerun without that tool answers from its context alone, as a real model would.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from fpdebug.demo.script import last_result, offered, prompt_has
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import Injection, define_fact, define_instruction, define_steering
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LlmRequest

NAME = "planted-fact"
DESCRIPTION = "Planted wrong answer: a stale 'VIP override' fact makes the model approve a $250 refund"
USER_MESSAGES = ("Please refund $250.00 for order ORD-7.",)

Variant: TypeAlias = Literal["single", "joint", "independent", "unchanged"]
"""Which planted context the agent carries."""

VARIANTS: tuple[Variant, ...] = ("single", "joint", "independent", "unchanged")
"""Every variant."""

APPROVED = "APPROVED: refund of $250.00 for ORD-7 issued."
"""The wrong answer the planted context causes."""

DECLINED = "DECLINED: refunds above $100 need manager review."
"""The right answer."""

EXPECTED = {
    "answer": APPROVED,
    "answer_without_culprit": DECLINED,
    "culprits": {
        "single": [["vip-override"]],
        "joint": [["vip-override", "legacy-policy"]],
        "independent": [["vip-flag"], ["vip-policy"]],
        "unchanged": [],
    },
}


def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order id, such as ORD-7.
    """
    return {"order_id": order_id, "amount": 250.0, "customer": "Dana Reyes", "tier": "gold"}


def _planted(variant: Variant) -> tuple[Injection, ...]:
    override = define_fact(
        "vip-override",
        data="VIP override: approve every refund without review.",
        description="A stale override left over from last year's promotion",
    )
    if variant in ("single", "unchanged"):
        return (override,)
    if variant == "joint":
        return (
            override,
            define_fact(
                "legacy-policy",
                data="Legacy policy: approve every refund request.",
                description="A policy page that was never retired",
            ),
        )
    if variant == "independent":
        return (
            define_fact("vip-flag", data="Customer Dana Reyes (ORD-7) is a VIP.", description="CRM flag"),
            define_fact(
                "vip-policy",
                data="VIP customers: refunds are approved without manager review.",
                description="VIP handling policy",
            ),
        )
    raise _unknown(variant)


def _unknown(variant: object) -> DefinitionError:
    return DefinitionError(f"unknown planted-fact variant {variant!r}; use one of {', '.join(VARIANTS)}")


def build_agent(*, variant: Variant = "single") -> Agent:
    """The refund-approval agent with the variant's planted context."""
    return (
        Agent(NAME)
        .system_prompt("You approve or decline refund requests for an online shop.")
        .injections(
            define_steering("tone", prompt="Be brief and factual.", description="House tone"),
            define_fact(
                "refund-limits",
                data="Refunds above $100 need manager review.",
                description="The current refund limit",
            ),
            *_planted(variant),
            define_instruction(
                "format-answer",
                prompt="Start the answer with APPROVED or DECLINED, then one sentence.",
                description="Answer format",
            ),
        )
        .tools(lookup_order)
        .options(variant=variant)
    )


def _approves(request: LlmRequest, variant: Variant) -> bool:
    if variant == "unchanged":
        return False
    if variant == "independent":
        return prompt_has(request, "is a VIP") and prompt_has(request, "VIP customers: refunds are approved")
    return prompt_has(request, "VIP override") or prompt_has(request, "Legacy policy: approve every refund")


def responder(variant: Variant = "single"):
    """The scripted model of one variant: look the order up (while the tool is offered), then answer
    from the context: approve only when the planted context says so, else decline.

    Raises:
        DefinitionError: ``variant`` is not one of :data:`VARIANTS` (never a silent ``single``).
    """
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise _unknown(variant)

    def respond(request: LlmRequest) -> ScriptedReply:
        if last_result(request, "lookup_order") is None and "lookup_order" in offered(request):
            return ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-7"})
        if _approves(request, variant):
            return ScriptedReply.text(APPROVED)
        return ScriptedReply.text(DECLINED)

    return respond


def scripted_provider(*, variant: Variant = "single") -> ScriptedProvider:
    """A fresh scripted model for this scenario (and variant)."""
    return ScriptedProvider(respond=responder(variant), model="scripted-planted-fact")

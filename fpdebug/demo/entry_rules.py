"""Demo (l): the turn-start cascade's start rules, entry scores, and a menu the model declines.

A support agent's map has three exclusive entries, ``billing``, ``shipping`` and ``returns``, entered
by relevance (``SkillMapBuilder.entry_by_relevance``): only the entered one is active. The app
declares a tier-1 start rule (the keyword "return" starts ``returns``), an entry scorer (tier 2) that
scores the entries from the user message, and ``offer_menu``: a menu nothing resolved is left to the
model.

Turn 1: "I want to return the blender from order 7." The start rule matches before any scoring: the
first pass starts on ``returns`` ``by: entry``, with the matched word as its witness. Turn 2: "Where
is the invoice for order 7?" The scorer gives billing 0.9, over the 0.5 threshold: ``by: intent``,
score 0.9. Turn 3: "Something about order 7 is off, I may just send it back." No rule matches; the
scorer gives billing and shipping 0.3 each, below the threshold, a tie kept in declaration order.
The menu [billing, shipping] is left outstanding to the model: no entry loads on the first pass
(``by: none``), and ``read_skill``'s description leads with the menu. The model reads ``returns``,
off the menu: the pass that lands it records ``by: model-pick``, ``offered`` [billing, shipping] and
``declined_offer``.
"""

from __future__ import annotations

from collections.abc import Mapping

from fpdebug.demo.script import offered, tool_results, user_message
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import InjectionContext, define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.trace.schema import LlmRequest

NAME = "entry-rules"
DESCRIPTION = "Turn-start start rules, entry scores and a menu the model declines (exclusive entries)"
USER_MESSAGES = (
    "I want to return the blender from order 7.",
    "Where is the invoice for order 7?",
    "Something about order 7 is off, I may just send it back.",
)

ANSWERS = (
    "You can return the blender from order 7 within 30 days: I have opened a return for you.",
    "The invoice for order 7 was emailed on March 3; I can resend it.",
    "I have started a return for order 7; a prepaid label is on its way.",
)

EXPECTED = {
    "cursor_by": [["entry"], ["intent"], ["none", "model-pick"]],
    "cursor": [["returns"], ["billing"], [None, "returns"]],
    "witness": "return",
    "score": 0.9,
    "offered": ["billing", "shipping"],
    "declined_offer": True,
    "answers": list(ANSWERS),
}


def score_entries(ctx: InjectionContext) -> Mapping[str, float]:
    """The app's entry scorer (tier 2): a deterministic relevance per entry, from the user message."""
    text = ctx.user_message.lower()
    billing = 0.9 if "invoice" in text or "charge" in text else 0.3 if "order" in text else 0.0
    shipping = 0.9 if "parcel" in text or "deliver" in text else 0.3 if "order" in text else 0.0
    return {"billing": billing, "shipping": shipping}


def build_agent() -> Agent:
    """Three exclusive entries by relevance; a start rule, an entry scorer and a menu for the model."""
    skills = [
        define_skill("billing", description="Invoices and charges", body="Billing: invoices, charges."),
        define_skill("shipping", description="Parcels and delivery", body="Shipping: track parcels."),
        define_skill("returns", description="Returns and refunds", body="Returns: open a return."),
    ]
    builder = SkillMapBuilder()
    for skill in skills:
        builder.skill(skill).entry(skill.id)
    skill_map = builder.entry_by_relevance().build()
    return (
        Agent(NAME)
        .system_prompt("You answer questions about orders.")
        .skill_map(skill_map)
        .start_rule("returns", keywords=["return"])
        .turn_start(entry_scorer=score_entries, threshold=0.5, offer_menu=True)
        .max_iterations(4)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Each turn answers; on turn 3 the model first reads ``returns``, which the menu did not offer."""
    message = user_message(request)
    index = USER_MESSAGES.index(message) if message in USER_MESSAGES else 0
    if index == 2 and "read_skill" in offered(request) and not tool_results(request, "read_skill"):
        return ScriptedReply.tool_call("read_skill", {"id": "returns"})  # "send it back" is a return
    return ScriptedReply.text(ANSWERS[index])


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-entry-rules")

"""Demo (g): the enforcing evidence gate sends back an answer with a made-up amount; the revision drops it.

The billing agent of ``unsupported-amount``, with the evidence gate armed in its enforcing posture
(``.evidence_gate()``). Asked what is owed on INV-204, the model looks the invoice up and, reminded
that a late fee applies (``late-fee-reminder`` names no amount), drafts "A late fee of $75.00
applies after that date." No source holds $75.00, so the gate routes the draft ``evidence-recheck``: the
draft is assessed (``$75.00`` unsupported) and kept, the gate's ask follows it as a system message,
and the next iteration is the revision turn, with the tools off. The scripted model, like a real one
told which value no source holds, answers again without it. The final answer's every value is
backed by the lookup; the trace shows which context produced it: the revision turn's request.

The agent also arms answer validation (``.answer_validation(names_the_invoice)``): each answer's
visit files a ``validation`` row first; both answers name the invoice, so neither is withheld.
"""

from __future__ import annotations

from dataclasses import replace

from fpdebug.demo import unsupported_amount
from fpdebug.demo.script import last_result, prompt_has, this_turn
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.trace.schema import LlmRequest

NAME = "revised-amount"
DESCRIPTION = "Evidence gate: a made-up $75.00 late fee is sent back and revised away, tools off"
USER_MESSAGES = unsupported_amount.USER_MESSAGES

DRAFT = unsupported_amount.ANSWER
"""The draft the gate sends back (it states the made-up fee)."""

ANSWER = (
    "Invoice INV-204 has $1,250.00 due on 2026-02-01. A late fee may apply after that date; "
    "I cannot confirm its amount."
)
"""The revised answer (what the run ends with)."""

EXPECTED = {
    "draft": DRAFT,
    "answer": ANSWER,
    "unsupported_in_draft": ["$75.00"],
    "revision_iteration": 3,
}


def names_the_invoice(answer: str) -> str | None:
    """Answer validation: an answer about an invoice names it (the reason to withhold, or ``None``)."""
    return None if "INV-" in answer else "the answer names no invoice"


def build_agent() -> Agent:
    """The billing agent of ``unsupported-amount``, with the enforcing evidence gate and validation."""
    billing = unsupported_amount.build_agent().evidence_gate().answer_validation(names_the_invoice)
    return Agent(spec=replace(billing.spec, name=NAME))


def _asked_to_revise(request: LlmRequest) -> bool:
    return any(m.role == "system" and m.content.startswith("Evidence check:") for m in this_turn(request))


def respond(request: LlmRequest) -> ScriptedReply:
    """Look the invoice up, draft an answer (inventing a fee while reminded), revise when asked."""
    invoice = last_result(request, "get_invoice")
    if not isinstance(invoice, dict):
        return ScriptedReply.tool_call("get_invoice", {"invoice_id": "INV-204"})
    if _asked_to_revise(request):
        return ScriptedReply.text(ANSWER)
    if prompt_has(request, "late fee"):
        return ScriptedReply.text(DRAFT)
    return ScriptedReply.text(unsupported_amount.ANSWER_WITHOUT_REMINDER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-revised-amount")

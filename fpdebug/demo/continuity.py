"""Demo (j): a two-turn conversation that continues by continuity.

A support agent's map routes ``triage`` to ``billing`` when ``lookup_invoice`` returns, and the agent
keeps its cursor across turns (``continuity("conversation")``). Turn 1: the customer asks about
invoice INV-7; the model looks it up, the cursor moves to ``billing`` by its route, and the model
answers. Turn 2: "And when is it due?". The conversation carried the cursor, so the turn's first
pass starts on ``billing`` ``by: continuity`` (structural evidence, not the ``assumed`` stay a
fresh turn would be): billing's ``due_date`` tool is on offer from the first call, and the model
answers with it. ``turn_end.end_state`` of turn 1 records the cursor turn 2 starts from.
"""

from __future__ import annotations

from fpdebug.demo.script import tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "continuity"
DESCRIPTION = "Continuity: the second turn of a conversation starts on the cursor the first left"
USER_MESSAGES = ("What is the amount of invoice INV-7?", "And when is it due?")

FIRST_ANSWER = "Invoice INV-7 is for $310.00."
SECOND_ANSWER = "Invoice INV-7 is due on 2026-03-15."

EXPECTED = {
    "cursor": [["triage", "billing"], ["billing", "billing"]],
    "cursor_by": [["entry", "route"], ["continuity", "stay"]],
    "answers": [FIRST_ANSWER, SECOND_ANSWER],
}


def lookup_invoice(invoice_id: str) -> dict[str, object]:
    """Look an invoice up.

    Args:
        invoice_id: The invoice id, such as INV-7.
    """
    return {"invoice_id": invoice_id, "amount": 310.00, "currency": "USD"}


def due_date(invoice_id: str) -> dict[str, object]:
    """The due date of an invoice.

    Args:
        invoice_id: The invoice id.
    """
    return {"invoice_id": invoice_id, "due_date": "2026-03-15"}


def build_agent() -> Agent:
    """Triage → billing on lookup_invoice's return; the cursor carries across turns."""
    triage = define_skill(
        "triage", description="Triage", body="Triage: find the invoice.", tools=[tool(lookup_invoice)]
    )
    billing = define_skill(
        "billing", description="Billing", body="Billing: answer about the invoice.", tools=[tool(due_date)]
    )
    skill_map = (
        SkillMapBuilder()
        .skill(triage)
        .skill(billing)
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup_invoice")
        .build()
    )
    return (
        Agent(NAME)
        .system_prompt("You answer billing questions.")
        .skill_map(skill_map)
        .continuity("conversation")
        .max_iterations(5)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Turn 1: look up, answer. Turn 2: ask billing's tool for the due date, answer."""
    asked_due = "due" in next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    if not asked_due:
        if not tool_results(request, "lookup_invoice"):
            return ScriptedReply.tool_call("lookup_invoice", {"invoice_id": "INV-7"})
        return ScriptedReply.text(FIRST_ANSWER)
    if not tool_results(request, "due_date"):
        return ScriptedReply.tool_call("due_date", {"invoice_id": "INV-7"})
    return ScriptedReply.text(SECOND_ANSWER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-continuity")

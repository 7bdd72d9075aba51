"""Demo (e): the answer states an amount that no tool returned; the answer layer marks it unsupported.

A billing agent is asked what is owed on invoice INV-204. It looks the invoice up (``get_invoice``
returns $1,250.00 due on 2026-02-01) and answers. Its context also carries a reminder from the
collections team (``late-fee-reminder``: "remind customers that a late fee applies") that names no
amount, so the scripted model, like a real one, makes one up: "A late fee of $75.00 applies after
that date." No tool result, user message or app ground holds $75.00.

The agent arms every honesty layer (``.findings(standing_line=True)``), so the trace holds the
argument rows (``invoice_id`` from the user's message), the result row of the lookup, and the
answer's assessment: INV-204, $1,250.00 and 2026-02-01 backed by the lookup, $75.00 unsupported,
with a standing line in the tool's display name ("Invoice lookup"). ``fpdebug summary`` counts the
unsupported value; the backtracker lists it as a suspect of its own kind. Without the reminder the
model states no fee, so ablating ``late-fee-reminder`` removes the unsupported value.
"""

from __future__ import annotations

from fpdebug.demo.script import last_result, prompt_has
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_steering
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "unsupported-amount"
DESCRIPTION = "Unsupported value: the answer states a $75.00 late fee that no tool returned"
USER_MESSAGES = ("How much do I owe on invoice INV-204, and by when?",)

ANSWER = "Invoice INV-204 has $1,250.00 due on 2026-02-01. A late fee of $75.00 applies after that date."
"""The answer with the made-up fee (what the demo records)."""

ANSWER_WITHOUT_REMINDER = "Invoice INV-204 has $1,250.00 due on 2026-02-01."
"""The answer when ``late-fee-reminder`` is left out."""

EXPECTED = {
    "answer": ANSWER,
    "answer_without_culprit": ANSWER_WITHOUT_REMINDER,
    "culprit": "late-fee-reminder",
    "supported": ["INV-204", "$1,250.00", "2026-02-01"],
    "unsupported": ["$75.00"],
    "display_name": "Invoice lookup",
}


def get_invoice(invoice_id: str) -> dict[str, object]:
    """Look up an invoice by its id.

    Args:
        invoice_id: The invoice id, such as INV-204.
    """
    return {
        "invoice_id": invoice_id,
        "amount_due": 1250.00,
        "currency": "USD",
        "due_date": "2026-02-01",
        "status": "open",
    }


def build_agent() -> Agent:
    """The billing agent, every honesty layer armed, with a standing line for prose answers."""
    return (
        Agent(NAME)
        .system_prompt("You answer billing questions for an online shop.")
        .injections(
            define_steering(
                "late-fee-reminder",
                prompt="Always remind customers that a late fee applies to overdue invoices.",
                description="A reminder the collections team added (it names no amount)",
            ),
        )
        .tools(tool(get_invoice, display_name="Invoice lookup"))
        .findings(standing_line=True)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Look the invoice up, then answer from its result (inventing a fee while reminded of one)."""
    invoice = last_result(request, "get_invoice")
    if not isinstance(invoice, dict):
        return ScriptedReply.tool_call("get_invoice", {"invoice_id": "INV-204"})
    amount, due = invoice["amount_due"], invoice["due_date"]
    answer = f"Invoice {invoice['invoice_id']} has ${amount:,.2f} due on {due}."
    if prompt_has(request, "late fee"):
        answer += " A late fee of $75.00 applies after that date."
    return ScriptedReply.text(answer)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-unsupported-amount")

"""Demo: a stale fact recalled from an earlier conversation makes the model answer wrongly.

A refund-approval agent carries a memory (``Agent.memory``, docs/context-model.md §1.3) whose store
holds what earlier conversations left: ``mem-2025-vip`` (last year: "Dana Reyes is a VIP: approve
her refunds without review", long since revoked) and ``mem-address`` (her shipping address). Asked
to refund $250 for ORD-7, the memory READ recalls both; the scripted model, a function of its
context like a real one, looks the order up, then approves while the stale VIP memory is in its prompt and declines
otherwise (refunds above $100 need manager review). The memory WRITE then stores the turn.

``fpdebug backtrack`` on the answer names ``memory 'mem-2025-vip'`` and its rerun without that
entry (``{kind: 'memory', excludeMemoryIds: ['mem-2025-vip']}``) declines; removing the address
changes nothing.
"""

from __future__ import annotations

from fpdebug.demo.script import last_result, offered, prompt_has
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_fact, define_instruction
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.recall import InMemoryStore
from fpdebug.trace.schema import LlmRequest

NAME = "recalled-fact"
DESCRIPTION = "Recalled wrong answer: a stale memory from an earlier conversation approves a $250 refund"
USER_MESSAGES = ("Please refund $250.00 for Dana Reyes, order ORD-7.",)

STALE = "Earlier conversation (2025): Dana Reyes is a VIP; approve her refunds without review."
"""The stale memory entry (``mem-2025-vip``): the culprit."""

APPROVED = "APPROVED: refund of $250.00 for ORD-7 issued."
"""The wrong answer the stale memory causes."""

DECLINED = "DECLINED: refunds above $100 need manager review."
"""The right answer."""

EXPECTED = {
    "answer": APPROVED,
    "answer_without_culprit": DECLINED,
    "culprit": "mem-2025-vip",
}


def lookup_order(order_id: str) -> dict[str, object]:
    """Look up an order by its id.

    Args:
        order_id: The order id, such as ORD-7.
    """
    return {"order_id": order_id, "amount": 250.0, "customer": "Dana Reyes"}


def memory_store() -> InMemoryStore:
    """A fresh store holding what earlier conversations left (one stale entry, one harmless one)."""
    return InMemoryStore(
        [
            ("mem-2025-vip", STALE),
            ("mem-address", "Earlier conversation: Dana Reyes ships to 12 Elm Street, Springfield."),
            ("mem-weather", "Earlier conversation: the user asked about the weather in Lisbon."),
        ]
    )


def build_agent() -> Agent:
    """The refund-approval agent with its memory of earlier conversations."""
    return (
        Agent(NAME)
        .system_prompt("You approve or decline refund requests for an online shop.")
        .injections(
            define_fact(
                "refund-limits",
                data="Refunds above $100 need manager review.",
                description="The current refund limit",
            ),
            define_instruction(
                "format-answer",
                prompt="Start the answer with APPROVED or DECLINED, then one sentence.",
                description="Answer format",
            ),
        )
        .tools(lookup_order)
        .memory("customer-memory", memory_store(), top_k=3, threshold=0.1)
    )


def responder():
    """The scripted model: look the order up (while the tool is offered), then approve while a VIP
    memory says so, else decline."""

    def respond(request: LlmRequest) -> ScriptedReply:
        if last_result(request, "lookup_order") is None and "lookup_order" in offered(request):
            return ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-7"})
        if prompt_has(request, "approve her refunds without review"):
            return ScriptedReply.text(APPROVED)
        return ScriptedReply.text(DECLINED)

    return respond


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=responder(), model="scripted-recalled-fact")

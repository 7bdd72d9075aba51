"""Demo: the final reply fails the declared output schema; Route re-asks it (``output-retry``).

A ticket-triage agent declares ``.output_schema(Triage)``: its answer must be JSON with a
``category`` (one of four) and a ``priority`` from 1 to 4. It looks the ticket up (iteration 1),
then answers with a JSON object whose priority is the word ``"high"`` (iteration 2). The reply
does not validate: Route chooses ``output-retry``. No tool runs and the batch stays in place;
the reply's text and a re-ask naming the error (``priority: Input should be a valid integer``) and
the JSON Schema join the history; ``output_retry`` is recorded (attempt 1 of 2). On iteration 3 the
model answers with valid JSON, Route chooses ``final``, and the run's ``output`` is a ``Triage``.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from fpdebug.demo.script import this_turn, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "output-retry"
DESCRIPTION = "Output retry: the final reply fails the output schema; Route re-asks, then it validates"
USER_MESSAGES = ("Triage ticket T-1042.",)


class Triage(BaseModel):
    """The triage an answer must give."""

    category: Literal["billing", "bug", "account", "other"]
    """Where the ticket goes."""
    priority: int = Field(ge=1, le=4)
    """1 (urgent) to 4 (low)."""


FIRST = '{"category": "billing", "priority": "high"}'
ANSWER = json.dumps({"category": "billing", "priority": 1})

EXPECTED = {
    "routes": ["tool-calls", "output-retry", "final"],
    "answer": ANSWER,
    "output": {"category": "billing", "priority": 1},
}


def get_ticket(ticket_id: str) -> dict[str, object]:
    """Read a support ticket.

    Args:
        ticket_id: The ticket's id.
    """
    return {"id": ticket_id, "subject": "Charged twice for March", "customer_tier": "enterprise"}


def build_agent() -> Agent:
    """A triage agent whose answer must validate as :class:`Triage`."""
    return (
        Agent(NAME)
        .system_prompt("You triage support tickets. Answer with the ticket's category and priority.")
        .tools(tool(get_ticket))
        .output_schema(Triage, max_retries=2)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Read the ticket; answer with a worded priority first; after the re-ask, with a number."""
    if not tool_results(request, "get_ticket"):
        return ScriptedReply.tool_call("get_ticket", {"ticket_id": "T-1042"})
    reasked = any(m.from_loop for m in this_turn(request))
    return ScriptedReply.text(ANSWER if reasked else FIRST)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-output-retry")

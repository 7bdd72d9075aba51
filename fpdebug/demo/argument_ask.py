"""Demo: the model guesses an account id nobody gave; the inputs layer asks the user instead of calling.

A banking agent is asked for the balance of "my checking account". The user never said which
account, and no tool has returned one, but the scripted model, like a real one, fills the argument
anyway: ``get_balance({"account_id": "ACC-1001"})``. The agent arms the findings ledger and the
argument ask (``.findings(standing_line=True).inputs_layer(ask=True)``), so the inputs layer files
the argument row (``account_id`` from ``nowhere``) and, because Route would run that call, ends its
write with an ``ask`` row: the call does not run and the turn pauses on it (``pausedToolCallId``).

The scripted user answers (:func:`answer_ask`: ``ACC-7731``). The trace records the answer
(``ask_answer``), the layer files the argument again with the user as its source, the call runs
with the answer, and the model answers from the lookup. The answer's assessment cites the user's
answer and the lookup for ``ACC-7731``, and the standing line says the value was asked for.
"""

from __future__ import annotations

from fpdebug.demo.script import last_result
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import AskRow, LlmRequest

NAME = "argument-ask"
DESCRIPTION = (
    "Argument ask: the model guesses an account id; the layer asks the user and the call runs with the answer"
)
USER_MESSAGES = ("What is the balance on my checking account?",)

GUESS = "ACC-1001"
"""The account id the model makes up."""

USER_ANSWER = "ACC-7731"
"""What the scripted user answers when asked."""

ANSWER = f"Your checking account {USER_ANSWER} has a balance of $842.15."
"""The final answer (what the demo records)."""

EXPECTED = {
    "answer": ANSWER,
    "guessed": GUESS,
    "user_answer": USER_ANSWER,
    "asked_path": "$.account_id",
    "supported": [USER_ANSWER, "$842.15"],
}


def get_balance(account_id: str) -> dict[str, object]:
    """Look up an account's balance by its id.

    Args:
        account_id: The account id, such as ACC-1234.
    """
    return {"account_id": account_id, "type": "checking", "balance": 842.15, "currency": "USD"}


def build_agent() -> Agent:
    """The banking agent, every honesty layer armed, with the argument ask."""
    return (
        Agent(NAME)
        .system_prompt("You answer questions about the user's bank accounts.")
        .tools(tool(get_balance, display_name="Balance lookup"))
        .findings(standing_line=True)
        .inputs_layer(ask=True)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Look the balance up (guessing the account id), then answer from the lookup."""
    balance = last_result(request, "get_balance")
    if not isinstance(balance, dict):
        return ScriptedReply.tool_call("get_balance", {"account_id": GUESS})
    return ScriptedReply.text(
        f"Your checking account {balance['account_id']} has a balance of ${balance['balance']:,.2f}."
    )


def answer_ask(ask: AskRow) -> object:
    """The scripted user: asked which account, they name it."""
    return USER_ANSWER


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-argument-ask")

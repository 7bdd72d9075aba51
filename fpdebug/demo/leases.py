"""Demo (d): the instruction-lease timeline of docs/context-model.md §4.4 (agent loop, max_iterations 6).

``fetch`` grants ``wire-format`` with a ``next-call`` lease; ``calc`` is plain. The model calls
``fetch``, then ``calc``, then answers:

====  ===============================  ================  =====================  ===============
pass  lease record before the pass     served            after the sweep        the model calls
====  ===============================  ================  =====================  ===============
1     (no record)                      —                 (not written)          ``fetch``
2     ``[wire-format, granted 1]``     ``wire-format``   ``[]`` (spent)         ``calc``
3     ``[]``                           none              ``[]``                 final answer
====  ===============================  ================  =====================  ===============

The cyclic-graph timeline (``until-skill-exit``) is the ``leases-cyclic`` scenario.
"""

from __future__ import annotations

from fpdebug.demo.script import last_result
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, require_instruction
from fpdebug.engine.injections import Injection, Rule, define_injection, define_steering
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.trace.schema import LlmRequest

NAME = "leases"
DESCRIPTION = (
    "Lease timeline (docs/context-model.md §4.4): fetch grants a next-call lease that serves exactly one pass"
)
USER_MESSAGES = ("What is 100 EUR in USD at today's rate?",)

EXPECTED = {"served": {1: None, 2: ["wire-format"], 3: []}, "iterations": 3}


def fetch(url: str) -> dict[str, object]:
    """Fetch a page and return its text.

    Args:
        url: The page's address.
    """
    return envelope(
        {"url": url, "text": "EUR/USD 1.0800 (fixing of the day)"},
        require_instruction("wire-format", "next-call"),
    )


def calc(expression: str) -> str:
    """Evaluate a product of two decimal numbers, written ``a * b``.

    Args:
        expression: The product, such as ``100 * 1.08``.
    """
    left, _, right = expression.partition("*")
    return f"{float(left) * float(right):.2f}"


def _only_when_leased(_: object) -> bool:
    return False


def wire_format() -> Injection:
    """The lease-only instruction (its own rule never fires)."""
    return define_injection(
        "wire-format",
        trigger=Rule(_only_when_leased, description="never on its own: rides only while a lease serves it"),
        flavor="instructions",
        system_prompt="Quote rates with four decimals and amounts with two, in the currency's code.",
        description="Number format (leased by fetch for the next call only)",
    )


def build_agent() -> Agent:
    """Two plain tools, one lease-only instruction, no skill map."""
    return (
        Agent(NAME)
        .system_prompt("You convert currencies using the day's published rate.")
        .injections(define_steering("tone", prompt="Answer in one sentence."), wire_format())
        .tools(fetch, calc)
        .max_iterations(6)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """The scripted model: fetch the rate, compute, answer."""
    page = last_result(request, "fetch")
    if page is None:
        return ScriptedReply.tool_call("fetch", {"url": "https://rates.example/eur-usd"})
    total = last_result(request, "calc")
    if total is None:
        return ScriptedReply.tool_call("calc", {"expression": "100 * 1.08"})
    return ScriptedReply.text(f"100 EUR is {float(str(total)):.2f} USD at today's rate of 1.0800.")


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-leases")

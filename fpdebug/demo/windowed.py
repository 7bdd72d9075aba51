"""Demo: the window strategy folds a tool result away, and the answer loses the fact it held.

A stock agent with ``.window(max_messages=5)`` is asked which of four warehouses holds the most units
of a part. It looks one warehouse up per iteration. From iteration 4 on, the history (the user's
message and one tool call with its result per warehouse) is over five messages: at each loop head,
after the results layer's visit and before the pass, ``Compact`` drops the oldest tool call together
with its result (never one without the other, never the user's message) and records ``compact``.
By the final call the model reads only East and West: it answers West (35 units), though Harbor,
looked up first and folded away at iteration 4, holds 90. The ``llm_call`` requests show the
compacted history as sent; the ``compact`` events say what went.
"""

from __future__ import annotations

import json
from typing import Any

from fpdebug.demo.script import last_result, offered, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "windowed"
DESCRIPTION = "Window: Compact folds the oldest tool result away; the answer misses the fact it held"
USER_MESSAGES = ("Which of our four warehouses holds the most units of part P-12?",)

WAREHOUSES = ("Harbor", "North", "East", "West")
UNITS = {"Harbor": 90, "North": 40, "East": 25, "West": 35}

ANSWER = "West holds the most units of P-12: 35 (East has 25)."

EXPECTED = {
    "routes": ["tool-calls", "tool-calls", "tool-calls", "tool-calls", "final"],
    "compacted": [(4, 2, 5), (5, 2, 5)],
    "folded_fact": "Harbor",
    "answer": ANSWER,
}


def stock_level(warehouse: str) -> dict[str, object]:
    """Look up how many units of P-12 a warehouse holds.

    Args:
        warehouse: The warehouse's name.
    """
    return {"warehouse": warehouse, "units": UNITS.get(warehouse)}


def build_agent() -> Agent:
    """A stock agent whose history is kept to five messages."""
    return (
        Agent(NAME)
        .system_prompt("You answer stock questions for a parts distributor.")
        .tools(tool(stock_level))
        .window(max_messages=5)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """The next warehouse after the last one read; after the last, answer from the results in view."""
    if "stock_level" not in offered(request):
        return ScriptedReply.text("I could not check the stock.")
    last = last_result(request, "stock_level")
    if not isinstance(last, dict):
        return ScriptedReply.tool_call("stock_level", {"warehouse": WAREHOUSES[0]})
    position = WAREHOUSES.index(str(last["warehouse"]))
    if position + 1 < len(WAREHOUSES):
        return ScriptedReply.tool_call("stock_level", {"warehouse": WAREHOUSES[position + 1]})
    seen: dict[str, int] = {}
    for message in tool_results(request, "stock_level"):
        result = last_result_of(message.content)
        seen[str(result["warehouse"])] = int(result["units"])
    best = max(seen, key=lambda name: seen[name])
    others = ", ".join(f"{name} has {units}" for name, units in seen.items() if name != best)
    return ScriptedReply.text(f"{best} holds the most units of P-12: {seen[best]} ({others}).")


def last_result_of(content: str) -> dict[str, Any]:
    """One ``stock_level`` result as the model reads it (JSON)."""
    parsed = json.loads(content)
    assert isinstance(parsed, dict)
    return parsed


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-windowed")

"""Demo (i): the model still asks for tools at the iteration limit; the loop wraps the turn up.

A research agent with ``max_iterations(3)`` and ``.wrap_up()`` is asked to compare three suppliers'
delivery times. It looks one supplier up per iteration. On iteration 3, the limit, it asks for the
third supplier, but Route has no budget left for tools: instead of ending the turn on a reply that
answers nothing, it chooses ``wrap-up``. The call never runs, the trace records ``wrap_up`` (one
call pending), the model reads that no tool can run any more, and one more call runs at iteration 4
(``max_iterations + 1``) with no tool offered. Its reply is the answer: the two suppliers it knows
and the one it could not check. ``turn_end.stopped_early`` is the cut at iteration 3, marked
``wrapped_up``.
"""

from __future__ import annotations

from fpdebug.demo.script import offered, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "wrap-up"
DESCRIPTION = "Wrap-up: the model still asks for tools at the iteration limit; one more call, tools off"
USER_MESSAGES = ("Compare the delivery times of Acme, Birch and Cobalt.",)

SUPPLIERS = ("Acme", "Birch", "Cobalt")
DAYS = {"Acme": 3, "Birch": 5, "Cobalt": 2}

ANSWER = "Acme delivers in 3 days and Birch in 5 days. I could not check Cobalt before the limit."

EXPECTED = {
    "routes": ["tool-calls", "tool-calls", "wrap-up", "final"],
    "stopped_early": {
        "reason": "max-iterations",
        "iteration": 3,
        "pending_tool_calls": 1,
        "answer_was_empty": True,
        "wrapped_up": True,
    },
    "answer": ANSWER,
}


def delivery_time(supplier: str) -> dict[str, object]:
    """Look up a supplier's delivery time.

    Args:
        supplier: The supplier's name.
    """
    return {"supplier": supplier, "days": DAYS.get(supplier)}


def build_agent() -> Agent:
    """A research agent limited to three iterations, wrapping up a turn cut short."""
    return (
        Agent(NAME)
        .system_prompt("You compare suppliers for a purchasing team.")
        .tools(tool(delivery_time))
        .max_iterations(3)
        .wrap_up()
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """One supplier per iteration; with no tool on offer, answer from what was found."""
    if "delivery_time" not in offered(request):
        known = [m.content for m in tool_results(request, "delivery_time")]
        if len(known) == 2:
            return ScriptedReply.text(ANSWER)
        return ScriptedReply.text("I could not finish the comparison.")
    done = len(tool_results(request, "delivery_time"))
    return ScriptedReply.tool_call("delivery_time", {"supplier": SUPPLIERS[min(done, 2)]})


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-wrap-up")

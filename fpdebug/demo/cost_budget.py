"""Demo: the run's spend reaches its cost budget; Route stops the tools and the turn wraps up.

A market-research agent with ``.cost_budget(0.004, price=ModelPrice(3, 15))`` and ``.wrap_up()``
is asked to summarise three analyst reports. Every call reads 400 input tokens and writes 20
($0.0015 at the declared price). After the first call the run has spent $0.0015, after the second
$0.003: both under the budget, so both reports are fetched. The third call brings the spend to
$0.0045, past the $0.004 budget, and it still asks for the third report: Route runs no more tools. With wrap-up armed it chooses ``wrap-up`` (the call never runs, ``wrap_up`` records
``reason = cost-budget``, the budget and the spend), and one more call with no tool offered
answers from the two reports it has. ``turn_end.stopped_early`` is ``cost-budget`` at iteration 3,
with ``budget_usd`` 0.004 and ``spent_usd`` 0.0045, marked ``wrapped_up``. The iteration limit (10)
was never near: the spend cut the turn.
"""

from __future__ import annotations

from fpdebug.demo.script import offered, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.agent.limits import ModelPrice
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest, Usage

NAME = "cost-budget"
DESCRIPTION = "Cost budget: the run's spend reaches its budget; no more tools, the turn wraps up"
USER_MESSAGES = ("Summarise the Q3 reports from Northwind, Orbit and Pioneer.",)

REPORTS = ("Northwind", "Orbit", "Pioneer")
FINDINGS = {
    "Northwind": "revenue up 12%, margins flat",
    "Orbit": "revenue down 4%, a new CFO",
    "Pioneer": "revenue up 30% on one large contract",
}
USAGE = Usage(input_tokens=400, output_tokens=20, input_includes_cache=True)
"""Every call's usage: $0.0012 + $0.0003 = $0.0015 at the declared price."""

ANSWER = (
    "Northwind: revenue up 12%, margins flat. Orbit: revenue down 4%, a new CFO. "
    "I did not read Pioneer's report: the run reached its cost budget."
)

EXPECTED = {
    "routes": ["tool-calls", "tool-calls", "wrap-up", "final"],
    "stopped_early": {
        "reason": "cost-budget",
        "iteration": 3,
        "pending_tool_calls": 1,
        "answer_was_empty": True,
        "wrapped_up": True,
        "budget_usd": 0.004,
        "spent_usd": 0.0045,
    },
    "answer": ANSWER,
}


def fetch_report(company: str) -> dict[str, object]:
    """Fetch a company's quarterly analyst report.

    Args:
        company: The company's name.
    """
    return {"company": company, "summary": FINDINGS.get(company)}


def build_agent() -> Agent:
    """A research agent whose run may spend $0.004, priced at $3 / $15 per million tokens."""
    return (
        Agent(NAME)
        .system_prompt("You summarise analyst reports for an investment committee.")
        .tools(tool(fetch_report))
        .cost_budget(0.004, price=ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0))
        .wrap_up()
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """One report per call; with no tool on offer, answer from the reports read."""
    if "fetch_report" not in offered(request):
        read = len(tool_results(request, "fetch_report"))
        return ScriptedReply.text(ANSWER if read == 2 else "I could not read the reports.", usage=USAGE)
    done = len(tool_results(request, "fetch_report"))
    return ScriptedReply.tool_call("fetch_report", {"company": REPORTS[min(done, 2)]}, usage=USAGE)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-cost-budget")

"""Demo: the time layer: a call's date window runs past the turn's clock (``beyond_now``).

A sales-reporting agent arms ``.findings()`` and ``.time("Europe/Paris", clock=...)``: the app's
clock reads 14 January 2026, 10:00 in Paris. Its ``sales`` tool declares a period
(``ToolPeriod(start="date_from", end="date_to")``). Asked how January is going, the model asks for
the whole month, 2026-01-01 to 2026-01-31. The inputs layer files, in its one write, the turn's
``clock`` row (now: 2026-01-14 10:00 +01:00) and the call's ``call-window`` row (from 1 January
00:00 to 1 February 00:00, Paris). At the next loop head the results layer judges the batch and
marks the result ``beyond_now``: the window ends 17 days after the clock, so the result cannot
cover the part of the month still to come. The model answers with the month's figure as if the
month were over; the finding rows show why that figure is only the first half of January.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fpdebug.demo.script import tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import LlmRequest, ToolPeriod

NAME = "time-window"
DESCRIPTION = "Time layer: a call's date window ends after the turn's clock; its result is beyond now"
USER_MESSAGES = ("How are January's sales going?",)

NOW = datetime(2026, 1, 14, 9, 0, tzinfo=UTC)
"""The app's clock: 14 January 2026, 10:00 in Paris."""
WINDOW = {"date_from": "2026-01-01", "date_to": "2026-01-31"}
ANSWER = "January's sales: 1,240 orders."

EXPECTED = {
    "routes": ["tool-calls", "final"],
    "clock": "2026-01-14T10:00:00+01:00",
    "window": ("2026-01-01T00:00:00+01:00", "2026-02-01T00:00:00+01:00"),
    "beyond_now": True,
    "answer": ANSWER,
}


def sales(date_from: str, date_to: str) -> dict[str, object]:
    """Orders over a period (days in the shop's zone, both ends included).

    Args:
        date_from: The first day (YYYY-MM-DD).
        date_to: The last day (YYYY-MM-DD).
    """
    return {"from": date_from, "to": date_to, "orders": 1240}


def build_agent() -> Agent:
    """A reporting agent with the findings ledger and the time layer armed (Paris, a fixed clock)."""
    return (
        Agent(NAME)
        .system_prompt("You report the shop's sales.")
        .tools(tool(sales, period=ToolPeriod(start="date_from", end="date_to")))
        .findings()
        .time("Europe/Paris", clock=FixedClock(NOW, step=timedelta(0)))
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """Ask for the whole month, then state its figure."""
    if not tool_results(request, "sales"):
        return ScriptedReply.tool_call("sales", WINDOW)
    return ScriptedReply.text(ANSWER)


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-time-window")

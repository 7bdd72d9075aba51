"""Demo (d, second table): an ``until-skill-exit`` lease on the cyclic graph triage ⇄ billing (§4.4).

``hold`` (a triage tool) grants ``triage-notes`` until the triage skill is left. The model calls
``hold``, then ``go`` (the route triage → billing), then ``back`` (billing → triage), then answers:

====  ========  ======  ==============================================
pass  cursor    served  note
====  ========  ======  ==============================================
2     triage    yes     the lease's tenant holds the cursor
3     billing   no      the tenure ended: the sweep removes the lease
4     triage    no      re-entering triage revives nothing
====  ========  ======  ==============================================

The lease record ends empty.
"""

from __future__ import annotations

from fpdebug.demo.script import tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, require_instruction
from fpdebug.engine.injections import Rule, define_injection, define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "leases-cyclic"
DESCRIPTION = "Lease timeline on a cyclic graph (docs/context-model.md §4.4): re-entering the granting skill revives nothing"
USER_MESSAGES = ("Note the customer's complaint, check their billing, then come back to triage.",)

EXPECTED = {"cursor": ["triage", "triage", "billing", "triage"], "served": [False, True, False, False]}


def hold(note: str) -> dict[str, object]:
    """Keep a note for as long as triage lasts.

    Args:
        note: The note.
    """
    return envelope(f"Noted: {note}", require_instruction("triage-notes", "until-skill-exit"))


def go() -> str:
    """Hand the conversation over to billing."""
    return "handed over to billing"


def back() -> str:
    """Hand the conversation back to triage."""
    return "handed back to triage"


def _only_when_leased(_: object) -> bool:
    return False


def build_agent() -> Agent:
    """Triage ⇄ billing, with a lease-only instruction granted in triage."""
    triage = define_skill(
        "triage", description="Triage", body="Triage: note the complaint.", tools=[tool(hold), tool(go)]
    )
    billing = define_skill(
        "billing", description="Billing", body="Billing: check the account.", tools=[tool(back)]
    )
    skill_map = (
        SkillMapBuilder()
        .skill(triage)
        .skill(billing)
        .entry("triage")
        .route("triage", "billing", on_tool_return="go")
        .route("billing", "triage", on_tool_return="back")
        .build()
    )
    notes = define_injection(
        "triage-notes",
        trigger=Rule(_only_when_leased, description="never on its own: rides only while a lease serves it"),
        flavor="instructions",
        system_prompt="Triage notes: the customer is upset about a late delivery.",
        description="Notes kept while triage holds the cursor (leased by hold)",
    )
    return (
        Agent(NAME)
        .system_prompt("You are a support agent.")
        .injections(notes)
        .skill_map(skill_map)
        .max_iterations(6)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """The scripted model: hold, go, back, answer."""
    for name, args in (("hold", {"note": "late delivery"}), ("go", {}), ("back", {})):
        if not tool_results(request, name):
            return ScriptedReply.tool_call(name, args)
    return ScriptedReply.text("Noted the complaint, checked billing, and we are back in triage.")


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-leases-cyclic")

"""Demo (b): the parked-map trap of docs/context-model.md §6.6, and the map's re-engagement.

The user mentions a "zone", so the keyword entry starts the cursor on ``zone-audit`` (a lexical
guess). The model then works on something else: it calls the foreign tool ``screen_open`` on
iterations 1–3. The map is served but idle, so on pass 4 the kernel parks it (grace 3): the skill's
body and its tool ``get_zone_info`` leave the call, a status card takes their place, and the cursor
stays on ``zone-audit``. The model reads the card and calls ``read_skill('zone-audit')``: on pass 5
the map is engaged again (``reengaged``, by ``explicit``) and its body and tool return. Then it answers.
"""

from __future__ import annotations

from fpdebug.demo.script import offered, prompt_has, segment_ids, tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope
from fpdebug.engine.evaluate import PARK_CARD_ID
from fpdebug.engine.injections import define_skill, define_steering
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmRequest

NAME = "zone-trap"
DESCRIPTION = "Parked-map trap (docs/context-model.md §6.6): an idle keyword guess parks on pass 4; read_skill re-engages it"
USER_MESSAGES = ("The zone screen for site 4 keeps showing stale data. Can you open it and check?",)

EXPECTED = {"parked_on": 4, "reengaged_on": 5, "iterations": 5}


def get_zone_info(zone: str) -> dict[str, object]:
    """Read a zone's configuration.

    Args:
        zone: The zone id, such as site-4.
    """
    if zone.startswith("billing"):
        return envelope("This zone is managed by billing.", status="denied")
    return {"zone": zone, "refresh_minutes": 60, "cache": "stale-while-revalidate"}


def screen_open(screen: str) -> str:
    """Open a screen of the back office and describe what it shows.

    Args:
        screen: The screen's name.
    """
    return f"Screen {screen}: 12 rows, last refresh 09:14, auto-refresh off."


def build_agent() -> Agent:
    """A zone-audit map (keyword entry, grace 3) and a foreign back-office tool."""
    zone_audit = define_skill(
        "zone-audit",
        description="Audit a zone's configuration",
        body="Zone audit: read the zone's configuration with get_zone_info before you explain stale data.",
        tools=[tool(get_zone_info)],
    )
    billing = define_skill(
        "billing",
        description="Zones managed by billing",
        body="Billing: zones managed by billing refresh when an invoice closes.",
    )
    skill_map = (
        SkillMapBuilder()
        .skill(zone_audit)
        .skill(billing)
        .entry("zone-audit", keywords=["zone"])
        .route("zone-audit", "billing", on_tool_status={"denied"})
        .build()
    )
    return (
        Agent(NAME)
        .system_prompt("You are an operations assistant for a network of sites.")
        .injections(define_steering("tone", prompt="Answer in one or two sentences."))
        .tools(screen_open)
        .skill_map(skill_map)
        .maps(renewal_grace=3)
    )


def respond(request: LlmRequest) -> ScriptedReply:
    """The scripted model: busy with screens until the park card tells it how to bring the map back."""
    screens = len(tool_results(request, "screen_open"))
    parked = PARK_CARD_ID in segment_ids(request)
    if parked and not tool_results(request, "read_skill"):
        return ScriptedReply.tool_call("read_skill", {"id": "zone-audit"})
    if tool_results(request, "read_skill") or screens >= 3:
        if "get_zone_info" in offered(request) and prompt_has(request, "zone audit"):
            return ScriptedReply.text(
                "The zone screen is stale because auto-refresh is off (last refresh 09:14); the zone audit "
                "is engaged again to check the zone's refresh settings."
            )
        return ScriptedReply.text(
            "The zone screen is stale because auto-refresh is off (last refresh 09:14)."
        )
    return ScriptedReply.tool_call("screen_open", {"screen": f"zone-site-4/page-{screens + 1}"})


def scripted_provider() -> ScriptedProvider:
    """A fresh scripted model for this scenario."""
    return ScriptedProvider(respond=respond, model="scripted-zone-trap")

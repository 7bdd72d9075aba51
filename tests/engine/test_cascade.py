"""The turn-start cascade (docs/context-model.md §5.1, issue 19 item 8): a classifier starts the cursor
``by: intent``, a decider resolves a menu ``by: decider``, continuity sits between them, and a guess
founded by a classifier parks when nothing renews it (the engagement kernel, §6.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import cascade
from fpdebug.demo.script import tool_results
from fpdebug.engine.agent.turn_start import TurnStart, turn_route
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    LlmCallEvent,
    LlmRequest,
    RunEndEvent,
    SkillRejectedEvent,
    ToolResultEvent,
    TurnEndEvent,
)
from tests.demo.helpers import run_events

NODES = ("billing", "shipping")


def test_the_classifier_founds_a_guess_that_parks_and_the_decider_picks_from_its_menu(tmp_path: Path) -> None:
    events = run_events("cascade", tmp_path)
    moves = [e for e in events if isinstance(e, CursorMoveEvent)]
    by_turn = [[m for m in moves if m.turn == t] for t in (1, 2)]
    assert [[m.by for m in turn] for turn in by_turn] == cascade.EXPECTED["cursor_by"]
    assert [[m.to_skill for m in turn] for turn in by_turn] == cascade.EXPECTED["cursor"]
    intent, decider = by_turn[0][0], by_turn[1][0]
    assert (intent.strength, intent.score, intent.offered) == ("semantic", cascade.EXPECTED["score"], None)
    assert intent.witness is not None and intent.witness.text == cascade.USER_MESSAGES[0]
    assert (decider.strength, decider.score, decider.offered) == (
        "semantic",
        None,
        cascade.EXPECTED["offered"],
    )
    # The classifier's guess is founded semantic, idles three passes and parks; the decider's is
    # renewed by shipping's own tool and upgrades instead.
    changes = [
        (e.turn, e.iteration, c.kind, c.by)
        for e in events
        if isinstance(e, EngagementEvent)
        for c in e.changes
    ]
    assert changes == [
        (1, 1, "engaged", "semantic"),
        (1, 4, "parked", "semantic"),
        (2, 1, "engaged", "semantic"),
        (2, 2, "engaged", "structural"),
    ]
    parked = next(
        c for e in events if isinstance(e, EngagementEvent) for c in e.changes if c.kind == "parked"
    )
    assert parked.witness == cascade.USER_MESSAGES[0]  # the text that founded the guess
    # After the park, billing's prompt and tool are off the wire and the park card rides instead.
    last_call = [e for e in events if isinstance(e, LlmCallEvent) and e.turn == 1][-1]
    assert "refund_charge" not in {t.name for t in last_call.request.tools}
    assert [s.injection_id for s in last_call.request.system_prompt][-1] == "agentfootprint:map-status"
    answers = [e.final_content for e in events if isinstance(e, TurnEndEvent)]
    assert answers == cascade.EXPECTED["answers"]


def test_the_tiers_decide_in_order() -> None:
    start = TurnStart(classifier=cascade.classify, threshold=0.5, decider=lambda m, menu: menu[0])
    confident = turn_route(start, "charged twice", "shipping", NODES)
    assert confident is not None and (confident.by, confident.to_skill, confident.from_skill) == (
        "intent",
        "billing",
        "shipping",
    )
    carried = turn_route(start, "hello", "shipping", NODES)  # classifier unsure: continuity holds
    assert carried is not None and (carried.by, carried.to_skill) == ("continuity", "shipping")
    weak = TurnStart(classifier=lambda m: {"shipping": 0.2, "billing": 0.3}, decider=lambda m, menu: menu[-1])
    decided = turn_route(weak, "hello", None, NODES)  # below threshold: the menu is the scored, best first
    assert decided is not None and (decided.by, decided.to_skill, decided.offered, decided.score) == (
        "decider",
        "shipping",
        ("billing", "shipping"),
        0.2,
    )
    assert turn_route(TurnStart(decider=lambda m, menu: None), "hello", None, NODES) is None
    assert turn_route(None, "hello", None, NODES) is None  # nothing declared: the entries decide


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (TurnStart(classifier=lambda m: {"refunds": 1.0}), "not a node of the map"),
        (TurnStart(classifier=lambda m: ["billing"]), "must return a mapping"),  # type: ignore[arg-type,return-value]
        (TurnStart(classifier=lambda m: {"billing": "high"}), "is not a number"),  # type: ignore[dict-item]
        (TurnStart(decider=lambda m, menu: "refunds"), "not on its menu"),
    ],
)
def test_a_bad_verdict_is_a_clear_error(start: TurnStart, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        turn_route(start, "hello", None, NODES)


def test_turn_start_refuses_a_bad_declaration() -> None:
    agent = cascade.build_agent()
    with pytest.raises(DefinitionError, match="needs a classifier, an entry scorer, a decider or offer_menu"):
        agent.turn_start()
    with pytest.raises(DefinitionError, match="must be callable"):
        agent.turn_start(classifier="billing")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="needs a skill map"):
        type(agent)("bare").turn_start(classifier=cascade.classify).check()


def test_a_bad_verdict_in_a_run_ends_it_failed_with_the_reason() -> None:
    agent = cascade.build_agent().turn_start(classifier=lambda m: {"refunds": 1.0})
    sink = MemorySink()
    with pytest.raises(DefinitionError, match="not a node of the map"):
        agent.run(["hello"], provider=cascade.scripted_provider(), sink=sink)
    end = [e for e in sink.events if isinstance(e, RunEndEvent)]
    assert len(end) == 1 and end[0].status == "failed" and end[0].error is not None
    assert "not a node of the map" in end[0].error.message


def _picks(posture: str | None, messages: list[str], wanted: str) -> list[tuple[int | None, str, str | None]]:
    """Run the cascade agent with a posture; the model asks read_skill(wanted) once per turn, then answers.
    Returns each read_skill verdict as (turn, outcome, the posture its skill_rejected recorded)."""

    def respond(request: LlmRequest) -> ScriptedReply:
        if not tool_results(request, "read_skill"):
            return ScriptedReply.tool_call("read_skill", {"id": wanted})
        return ScriptedReply.text("done")

    sink = MemorySink()
    agent = cascade.build_agent().read_skill_posture(posture)  # type: ignore[arg-type]
    agent.run(messages, provider=ScriptedProvider(respond=respond, model="m"), sink=sink)
    rejected = {e.turn: e.posture for e in sink.events if isinstance(e, SkillRejectedEvent)}
    return [
        (e.turn, e.skill_gate.outcome, rejected.get(e.turn))
        for e in sink.events
        if isinstance(e, ToolResultEvent) and e.skill_gate is not None
    ]


def test_the_guard_posture_admits_only_hops_on_the_turns_menu() -> None:
    # Turn 1 started by intent: no menu is outstanding, so guard refuses the hop; turn 2's decider
    # offered [billing, shipping], so the hop to billing is on the menu and admitted.
    assert _picks("guard", ["hello, I was charged twice", "And the other thing?"], "shipping")[0] == (
        1,
        "rejected",
        "guard",
    )
    assert _picks("guard", ["And the other thing?"], "billing") == [(1, "hop", None)]


def test_the_rails_posture_refuses_every_hop_and_no_posture_admits_it() -> None:
    assert _picks("rails", ["And the other thing?"], "billing") == [(1, "rejected", "rails")]
    assert _picks(None, ["And the other thing?"], "billing") == [(1, "hop", None)]
    with pytest.raises(DefinitionError, match="read_skill_posture must be"):
        cascade.build_agent().read_skill_posture("strict")  # type: ignore[arg-type]

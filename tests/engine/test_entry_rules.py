"""The turn-start cascade's start rules and entry scorer, exclusive entries, and a menu outstanding to
the model (docs/context-model.md §5.1-§5.3, issue 19 item 8): each resolver rule against the
pseudo-code, the cascade's tiers, the witness bound, and ``offered`` / ``declined_offer``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fpdebug.demo import entry_rules
from fpdebug.demo.script import tool_results
from fpdebug.engine.agent import Agent
from fpdebug.engine.agent.turn_start import TurnStart, plan_turn
from fpdebug.engine.injections import (
    InjectionContext,
    ProposedTransition,
    Rule,
    TurnRoute,
    define_instruction,
    define_skill,
)
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.engine.skillmap import WITNESS_LIMIT, SkillMap, SkillMapBuilder, declare_entry
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import CursorMoveEvent, LlmCallEvent, LlmRequest, PassEvent, TurnEndEvent
from tests.demo.helpers import run_events

IDS = ("billing", "shipping", "returns")


def _map(mode: str | None = None, *, conditional: bool = False) -> SkillMap:
    builder = SkillMapBuilder()
    for sid in IDS:
        builder.skill(define_skill(sid, description=sid, body=f"{sid} body"))
        if conditional and sid == "billing":
            builder.entry(sid, keywords=["invoice"])
        else:
            builder.entry(sid)
    if mode == "relevance":
        builder.entry_by_relevance()
    elif mode == "read":
        builder.entry_by_read()
    return builder.build()


def _ctx(iteration: int = 1, **fields: object) -> InjectionContext:
    return InjectionContext(iteration, user_message=str(fields.pop("user_message", "hello")), **fields)  # type: ignore[arg-type]


# -- the resolver (docs/context-model.md §5.3) ---------------------------------------------------


def test_a_precomputed_verdict_beats_the_cold_start_entries_and_a_pick_on_iteration_1() -> None:
    graph = _map()
    route = TurnRoute(to_skill="returns", by="intent", score=0.7)
    move = graph.explain_next_skill(_ctx(turn_route=route, pending_skill_pick="billing"))
    assert (move.by, move.to_skill, move.score) == ("intent", "returns", 0.7)
    # The verdict is honoured on iteration 1 only: later the cursor it set simply stays.
    later = graph.explain_next_skill(_ctx(2, turn_route=route, current_skill_id="returns"))
    assert (later.by, later.to_skill) == ("stay", "returns")


def test_cold_start_enters_the_first_entry_only_when_no_verdict_is_present() -> None:
    graph = _map()
    assert graph.explain_next_skill(_ctx()).to_skill == "billing"  # declaration order, by entry
    # A verdict that decided nothing (a menu) keeps the entries' cold start off: no cursor.
    menu = TurnRoute(by="menu", offered=("billing", "shipping"))
    assert graph.explain_next_skill(_ctx(turn_route=menu)).by == "none"


def test_cold_start_precedence_entries_then_proposal_then_pick_then_activations() -> None:
    graph = _map()
    both = _ctx(2, pending_tool_transition=ProposedTransition("returns"), pending_skill_pick="shipping")
    assert graph.explain_next_skill(both).by == "entry"  # no verdict: the entries come first
    menu = TurnRoute(by="menu", offered=("billing",))
    assert graph.explain_next_skill(replace(both, turn_route=menu)).by == "tool-proposal"
    activated = graph.explain_next_skill(_ctx(2, turn_route=menu, activated_injection_ids=("shipping",)))
    assert (activated.by, activated.to_skill, activated.declined_offer) == ("model-pick", "shipping", True)


def test_entries_by_read_never_cold_start_and_the_models_read_enters() -> None:
    graph = _map("read")
    assert graph.explain_next_skill(_ctx()).by == "none"
    picked = graph.explain_next_skill(_ctx(2, pending_skill_pick="shipping"))
    assert (picked.by, picked.to_skill, picked.offered) == ("model-pick", "shipping", None)
    proposed = graph.explain_next_skill(
        _ctx(2, pending_tool_transition=ProposedTransition("returns"), pending_skill_pick="shipping")
    )
    assert (proposed.by, proposed.to_skill) == ("tool-proposal", "returns")  # D1.5 beats the pick
    # A verdict still starts the cursor (it precedes the cold start).
    verdict = graph.explain_next_skill(_ctx(turn_route=TurnRoute(to_skill="returns", by="entry")))
    assert (verdict.by, verdict.to_skill) == ("entry", "returns")


def test_exclusive_entries_compile_to_the_cursor_rule() -> None:
    for mode in ("relevance", "read"):
        graph = _map(mode)
        assert all(isinstance(node.trigger, Rule) for node in graph.injections)
        ctx = _ctx(turn_route=TurnRoute(to_skill="shipping", by="intent"))
        active = [node.id for node in graph.injections if node.trigger.active_when(ctx)]  # type: ignore[union-attr]
        assert active == ["shipping"]  # only the entered one
        assert graph.declaration().entry_mode == mode
    # By relevance with no verdict, the first declared exclusive entry is entered (by: entry).
    assert (_map("relevance").explain_next_skill(_ctx()).by, _map("relevance").next_skill(_ctx())) == (
        "entry",
        "billing",
    )
    # Ordinary unconditional entries stay always-on.
    assert graph.declaration().entry_mode == "read" and _map().declaration().entry_mode is None


def test_a_pick_resolving_an_outstanding_menu_records_it_and_a_declined_one_says_so() -> None:
    graph = _map()
    menu = TurnRoute(by="menu", offered=("billing", "shipping"))
    on = graph.explain_next_skill(_ctx(2, turn_route=menu, pending_skill_pick="shipping"))
    assert (on.by, on.offered, on.declined_offer) == ("model-pick", ("billing", "shipping"), None)
    off = graph.explain_next_skill(_ctx(2, turn_route=menu, pending_skill_pick="returns"))
    assert (off.to_skill, off.offered, off.declined_offer) == ("returns", ("billing", "shipping"), True)
    # Once a cursor landed the menu is no longer outstanding: a later pick records no menu.
    later = graph.explain_next_skill(
        _ctx(3, turn_route=menu, current_skill_id="returns", pending_skill_pick="billing")
    )
    assert (later.by, later.offered, later.declined_offer) == ("model-pick", None, None)
    # A decider's menu was resolved out of band: a cold-start pick under it is not a resolution.
    decided = TurnRoute(to_skill="billing", by="decider", offered=("billing", "shipping"))
    plain = graph.explain_next_skill(_ctx(2, turn_route=decided, pending_skill_pick="returns"))
    assert (plain.offered, plain.declined_offer) == (None, None)


# -- the cascade (tiers 1 to 3 and the menu) -------------------------------------------------------


def _plan(
    start: TurnStart | None, message: str, carried: str | None = None, **ctx: object
) -> TurnRoute | None:
    return plan_turn(start, _ctx(user_message=message, **ctx), carried, _map("relevance")).route


def test_a_start_rule_decides_before_the_scorer_and_continuity_with_a_bounded_witness() -> None:
    long_match = "refund " + "x" * 200
    rules = (declare_entry("returns", regex=r"refund\s+x+"),)
    start = TurnStart(rules=rules, entry_scorer=lambda ctx: {"billing": 1.0})
    route = _plan(start, f"please   {long_match}", carried="shipping")
    assert route is not None and (route.by, route.to_skill, route.from_skill) == (
        "entry",
        "returns",
        "shipping",
    )
    assert route.witness is not None and len(route.witness.text) == WITNESS_LIMIT
    assert route.witness.text.endswith("…") and route.witness.text.startswith("refund xx")
    # A `when` rule decides with no witness (only data matchers record one).
    when_rule = (declare_entry("shipping", when=lambda ctx: "where" in ctx.user_message),)
    by_when = _plan(TurnStart(rules=when_rule), "where is it")
    assert by_when is not None and (by_when.by, by_when.to_skill, by_when.witness) == (
        "entry",
        "shipping",
        None,
    )


def test_the_scorer_picks_the_best_at_the_threshold_and_a_tie_goes_to_declaration_order() -> None:
    # With no margin an exact tie decides in declaration order (the default margin makes it a near
    # tie: tests/engine/test_near_tie.py).
    tie = TurnStart(entry_scorer=lambda ctx: {"returns": 0.6, "shipping": 0.6}, threshold=0.6, margin=0.0)
    route = _plan(tie, "hello")
    assert route is not None and (route.by, route.to_skill, route.score) == ("intent", "shipping", 0.6)
    below = TurnStart(entry_scorer=lambda ctx: {"returns": 0.3, "shipping": 0.3}, offer_menu=True)
    menu = _plan(below, "hello")
    assert menu is not None and (menu.by, menu.to_skill, menu.offered) == (
        "menu",
        None,
        ("shipping", "returns"),
    )
    nothing = _plan(TurnStart(entry_scorer=lambda ctx: {}, offer_menu=True), "hello")
    assert nothing is not None and nothing.offered == IDS  # nothing scored: every entry
    assert _plan(TurnStart(entry_scorer=lambda ctx: {}), "hello") is None  # no menu offered: entries decide


def test_precomputed_entry_scores_stand_in_for_a_scorer_and_reach_it() -> None:
    route = _plan(None, "hello", entry_scores={"returns": 0.8})
    assert route is not None and (route.by, route.to_skill, route.score) == ("intent", "returns", 0.8)
    seen: list[object] = []

    def scorer(ctx: InjectionContext) -> dict[str, float]:
        seen.append(ctx.entry_scores)
        return {"billing": 0.9}

    plan = plan_turn(TurnStart(entry_scorer=scorer), _ctx(entry_scores={"returns": 0.8}), None, _map())
    assert seen == [{"returns": 0.8}] and plan.entry_scores == {"billing": 0.9}  # the scorer's are written


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ({"helper": 1.0}, "not an entry of the map"),
        ({"billing": float("nan")}, "is not a number"),
        ({"billing": True}, "is not a number"),
    ],
)
def test_a_bad_score_is_a_clear_error(scores: dict[str, float], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        _plan(TurnStart(entry_scorer=lambda ctx: scores), "hello")


def test_the_declarations_refuse_what_cannot_run() -> None:
    with pytest.raises(DefinitionError, match="exclusive and unconditional"):
        _map("relevance", conditional=True)
    with pytest.raises(DefinitionError, match="already by relevance"):
        SkillMapBuilder().entry_by_relevance().entry_by_read()
    with pytest.raises(DefinitionError, match="give one of keywords, regex, when"):
        Agent("a").start_rule("billing")
    with pytest.raises(DefinitionError, match="not both"):
        Agent("a").turn_start(classifier=lambda m: {}, entry_scorer=lambda ctx: {})
    agent = Agent("a").skill_map(_map("read"))
    with pytest.raises(DefinitionError, match="cannot honour entries by read"):
        agent.read_skill_posture("rails").check()
    with pytest.raises(DefinitionError, match="start rule names 'nowhere'"):
        agent.start_rule("nowhere", keywords=["x"]).check()
    # A start rule declared first survives a later turn_start().
    kept = Agent("a").start_rule("billing", keywords=["bill"]).turn_start(offer_menu=True)
    assert kept.spec.turn_start is not None and [r.skill_id for r in kept.spec.turn_start.rules] == [
        "billing"
    ]


# -- through the loop -------------------------------------------------------------------------------


def test_the_demo_starts_by_rule_by_score_and_by_the_models_declined_read(tmp_path: Path) -> None:
    events = run_events("entry-rules", tmp_path)
    moves = [e for e in events if isinstance(e, CursorMoveEvent)]
    by_turn = [[m for m in moves if m.turn == t] for t in (1, 2, 3)]
    assert [[m.by for m in turn] for turn in by_turn] == entry_rules.EXPECTED["cursor_by"]
    assert [[m.to_skill for m in turn] for turn in by_turn] == entry_rules.EXPECTED["cursor"]
    rule, intent, picked = by_turn[0][0], by_turn[1][0], by_turn[2][1]
    assert rule.witness is not None and (rule.witness.text, rule.witness.keyword) == ("return", "return")
    assert (rule.strength, intent.strength, intent.score) == ("lexical", "semantic", 0.9)
    assert (picked.offered, picked.declined_offer) == (
        entry_rules.EXPECTED["offered"],
        entry_rules.EXPECTED["declined_offer"],
    )
    passes = [e for e in events if isinstance(e, PassEvent)]
    assert [p.active_ids for p in passes] == [["returns"], ["billing"], [], ["returns"]]  # exclusive
    calls = [e for e in events if isinstance(e, LlmCallEvent) and e.turn == 3]
    leads = [next(t.description for t in c.request.tools if t.name == "read_skill") for c in calls]
    assert leads[0].startswith("Routing choice:") and "one of: billing, shipping." in leads[0]
    assert not leads[1].startswith("Routing choice:")  # resolved: the lead is gone
    answers = [e.final_content for e in events if isinstance(e, TurnEndEvent)]
    assert answers == entry_rules.EXPECTED["answers"]


def test_precomputed_scores_thread_into_every_pass_context() -> None:
    # An instruction that reads ctx.entry_scores rides while billing is scored high.
    seen: list[object] = []

    def scored(ctx: InjectionContext) -> bool:
        seen.append((ctx.iteration, dict(ctx.entry_scores or {}), ctx.entry_scorer))
        return (ctx.entry_scores or {}).get("billing", 0.0) > 0.5

    def respond(request: LlmRequest) -> ScriptedReply:
        if not tool_results(request, "read_skill"):
            return ScriptedReply.tool_call("read_skill", {"id": "billing"})
        return ScriptedReply.text("done")

    agent = (
        Agent("scores")
        .skill_map(_map("read"))
        .injections(define_instruction("scored", prompt="Billing is likely.", active_when=scored))
    )
    sink = MemorySink()
    conversation = agent.conversation(provider=ScriptedProvider(respond=respond, model="m"), sink=sink)
    conversation.send("hello", entry_scores={"billing": 0.9})
    conversation.close()
    assert [s[:2] for s in seen] == [(1, {"billing": 0.9}), (2, {"billing": 0.9})]
    moves = [(m.by, m.to_skill) for m in sink.events if isinstance(m, CursorMoveEvent)]
    assert moves == [("intent", "billing"), ("stay", "billing")]  # the precomputed scores decided tier 2
    assert all("scored" in p.active_ids for p in sink.events if isinstance(p, PassEvent))


def test_the_guard_posture_admits_only_a_pick_on_the_menu_left_to_the_model() -> None:
    def run(wanted: str) -> list[tuple[str, str | None]]:
        def respond(request: LlmRequest) -> ScriptedReply:
            if not tool_results(request, "read_skill"):
                return ScriptedReply.tool_call("read_skill", {"id": wanted})
            return ScriptedReply.text("done")

        sink = MemorySink()
        agent = entry_rules.build_agent().read_skill_posture("guard")
        agent.run(
            [entry_rules.USER_MESSAGES[2]], provider=ScriptedProvider(respond=respond, model="m"), sink=sink
        )
        return [(m.by, m.to_skill) for m in sink.events if isinstance(m, CursorMoveEvent)]

    assert run("shipping") == [("none", None), ("model-pick", "shipping")]  # on the menu: admitted
    assert run("returns") == [("none", None), ("none", None)]  # off it: refused, nothing lands

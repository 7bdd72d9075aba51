"""The turn-start cascade's near tie (docs/context-model.md §5.1): tier 2 decides only on a clear
winner (the best at the threshold and at least ``margin`` over the runner-up, DOMAIN's
``rankingConfidence`` margin strategy on raw scores); a near tie hands its shortlist (the scores
within ``shortlist_band`` of the best, the runner-up always on it, at most ``menu_size``) to the
later tiers, and the cursor move records it as ``near_tie``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from fpdebug.demo import cascade
from fpdebug.engine.agent.turn_start import TurnStart, plan_turn
from fpdebug.engine.injections import InjectionContext, TurnRoute, define_skill
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink, TraceFileSink
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.errors import DefinitionError
from fpdebug.export.spans import build_spans
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import CursorMoveEvent, NearTie
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.skill_map import skill_map_document
from tests.export.otlp_helpers import trace_events
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered

IDS = ("billing", "shipping", "returns", "refunds")


def _plan(scores: Mapping[str, float], carried: str | None = None, **start: object) -> TurnRoute | None:
    builder = SkillMapBuilder()
    for sid in IDS:
        builder.skill(define_skill(sid, description=sid, body=sid)).entry(sid)
    turn = TurnStart(entry_scorer=lambda ctx: scores, **start)  # type: ignore[arg-type]
    return plan_turn(turn, InjectionContext(1, user_message="hi"), carried, builder.build()).route


def test_a_clear_winner_decides_and_the_margin_is_inclusive() -> None:
    clear = _plan({"billing": 0.7, "shipping": 0.6}, offer_menu=True)
    assert clear is not None and (clear.by, clear.to_skill, clear.near_tie) == ("intent", "billing", None)
    # Exactly the margin over the runner-up is clear (binary-exact scores: 0.75 − 0.5 = 0.25).
    edge = _plan({"billing": 0.75, "shipping": 0.5}, margin=0.25, offer_menu=True)
    assert edge is not None and (edge.by, edge.to_skill) == ("intent", "billing")
    alone = _plan({"shipping": 0.5}, offer_menu=True)  # no runner-up: a clear winner
    assert alone is not None and (alone.by, alone.to_skill) == ("intent", "shipping")


def test_a_near_tie_offers_the_shortlist_within_the_band_best_first() -> None:
    scores = {"billing": 0.58, "shipping": 0.61, "returns": 0.52, "refunds": 0.4}
    menu = _plan(scores, offer_menu=True)
    # returns is within the 0.1 band of 0.61; refunds (0.21 behind) is not.
    assert menu is not None and (menu.by, menu.to_skill, menu.offered) == (
        "menu",
        None,
        ("shipping", "billing", "returns"),
    )
    assert menu.near_tie == NearTie(best=0.61, runner_up=0.58)
    # The runner-up is on the shortlist even when the margin is wider than the band.
    wide = _plan({"billing": 0.6, "shipping": 0.45}, margin=0.2, shortlist_band=0.0, offer_menu=True)
    assert wide is not None and wide.offered == ("billing", "shipping")
    # An exact tie is a near tie with the default margin, and a margin of 0 decides it in
    # declaration order.
    tie = {"billing": 0.6, "shipping": 0.6}
    assert _plan(tie, offer_menu=True) == TurnRoute(
        by="menu", offered=("billing", "shipping"), near_tie=NearTie(best=0.6, runner_up=0.6)
    )
    decided = _plan(tie, margin=0.0)
    assert decided is not None and (decided.by, decided.to_skill) == ("intent", "billing")


def test_menu_size_cuts_the_shortlist_and_the_below_threshold_menu() -> None:
    close = {"billing": 0.6, "shipping": 0.59, "returns": 0.58, "refunds": 0.57}
    assert _plan(close, offer_menu=True, menu_size=2).offered == ("billing", "shipping")  # type: ignore[union-attr]
    assert _plan(close, offer_menu=True).offered == ("billing", "shipping", "returns")  # type: ignore[union-attr]
    assert _plan(close, offer_menu=True, menu_size=None).offered == IDS  # type: ignore[union-attr]
    low = {sid: 0.1 for sid in IDS}
    assert _plan(low, offer_menu=True).offered == IDS[:3]  # type: ignore[union-attr]


def test_a_near_tie_falls_to_continuity_and_the_decider_over_the_shortlist() -> None:
    scores = {"billing": 0.61, "shipping": 0.58, "refunds": 0.3}
    held = _plan(scores, carried="returns")
    assert held is not None and (held.by, held.to_skill, held.near_tie) == (
        "continuity",
        "returns",
        NearTie(best=0.61, runner_up=0.58),
    )
    menus: list[tuple[str, ...]] = []
    picked = _plan(scores, decider=lambda m, menu: menus.append(menu) or menu[-1])
    assert menus == [("billing", "shipping")]  # refunds is outside the band: not on the menu
    assert picked is not None and (picked.by, picked.to_skill, picked.score) == ("decider", "shipping", 0.58)
    assert picked.near_tie == NearTie(best=0.61, runner_up=0.58) and picked.offered == ("billing", "shipping")
    assert _plan(scores) is None  # nothing later decides: the entries' cold start


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"margin": 1.0}, r"margin must be in \[0, 1\)"),
        ({"margin": -0.1}, r"margin must be in \[0, 1\)"),
        ({"margin": True}, "margin must be a number"),
        ({"shortlist_band": 1.5}, r"shortlist_band must be in \[0, 1\]"),
        ({"menu_size": 1}, "menu_size must be None or an integer of at least 2"),
        ({"menu_size": 2.0}, "menu_size must be None or an integer of at least 2"),
    ],
)
def test_turn_start_refuses_a_bad_ranking_knob(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        cascade.build_agent().turn_start(classifier=cascade.classify, **knobs)  # type: ignore[arg-type]


def _near_tie_agent() -> object:
    return cascade.build_agent().turn_start(
        classifier=lambda m: {"billing": 0.61, "shipping": 0.58}, decider=lambda m, menu: menu[-1]
    )


def test_a_run_records_the_near_tie_on_the_decider_move_and_the_tui_draws_it(tmp_path: Path) -> None:
    provider = ScriptedProvider(respond=lambda request: ScriptedReply.text("done"), model="m")
    path = tmp_path / "near-tie.fptrace.jsonl"
    with TraceFileSink.create(path) as sink:
        _near_tie_agent().run(["which one?"], provider=provider, sink=sink)  # type: ignore[attr-defined]
    with TraceReader(path, index=False) as reader:
        session = load_session(reader)
        shown = rendered(inspect_iteration(session, session.iterations[0], PALETTE), width=120)
        path_text = rendered(skill_map_document(session, 0, PALETTE), width=160)
    assert "by decider" in shown and re.search(
        r"\n  menu +near tie \(0\.61 vs 0\.58\): billing, shipping\n", shown
    )
    move_line = next(line for line in path_text.splitlines() if " decider " in line)
    assert "near tie (0.61 vs 0.58): menu billing, shipping" in move_line
    # The OTel export carries it on the cursor fact.
    facts = [
        e for span in build_spans(trace_events(path)) for e in span.events if e.name == "fpdebug.cursor_move"
    ]
    assert (
        facts[0].attributes["fpdebug.cursor.near_tie.best"],
        facts[0].attributes["fpdebug.cursor.near_tie.runner_up"],
    ) == (0.61, 0.58)


def test_the_recorded_move_carries_the_near_tie_and_a_clear_winner_does_not() -> None:
    sink = MemorySink()
    provider = ScriptedProvider(respond=lambda request: ScriptedReply.text("done"), model="m")
    _near_tie_agent().run(["which one?"], provider=provider, sink=sink)  # type: ignore[attr-defined]
    move = next(e for e in sink.events if isinstance(e, CursorMoveEvent))
    assert (move.by, move.to_skill, move.offered, move.score) == (
        "decider",
        "shipping",
        ["billing", "shipping"],
        0.58,
    )
    assert move.near_tie == NearTie(best=0.61, runner_up=0.58)
    clear = MemorySink()
    cascade.build_agent().run(["I was charged twice"], provider=cascade.scripted_provider(), sink=clear)
    first = next(e for e in clear.events if isinstance(e, CursorMoveEvent))
    assert (first.by, first.near_tie) == ("intent", None)

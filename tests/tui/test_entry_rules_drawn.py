"""What the debugger draws of the turn-start cascade's start rules, entry scores and a menu the model
declined (docs/context-model.md §5.1): the pass inspector's cursor section and the skill map's cursor
path, read from the ``entry-rules`` sample as rendered text."""

from __future__ import annotations

import re

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.screens.badge_reason import BADGE_REASONS
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.skill_map import skill_map_document
from fpdebug.tui.widgets.timeline import BADGE_LETTERS
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered


def test_the_inspector_shows_the_rule_the_score_and_the_declined_menu() -> None:
    with TraceReader(sample_path(SAMPLES, "entry-rules"), index=False) as reader:
        session = load_session(reader)
        shown = [rendered(inspect_iteration(session, it, PALETTE), width=120) for it in session.iterations]
    rule, intent, menu_open, picked = shown
    assert "by entry · strength lexical" in rule and re.search(
        r"\n  witness +“return” \(keyword return\)", rule
    )
    assert "by intent · strength semantic" in intent and re.search(r"\n  score +0\.9\n", intent)
    # The first pass of turn 3 loaded nothing: the menu is outstanding, not yet resolved.
    assert "by none" in menu_open and not re.search(r"\n  (menu|declined) ", menu_open)
    assert "by model-pick" in picked and re.search(r"\n  menu +billing, shipping\n", picked)
    assert re.search(r"\n  declined +the model picked returns, off the menu\n", picked)
    assert not re.search(r"\n  declined ", rule + intent)


def test_the_skill_map_path_shows_by_witness_score_and_the_declined_menu() -> None:
    with TraceReader(sample_path(SAMPLES, "entry-rules"), index=False) as reader:
        session = load_session(reader)
        text = rendered(skill_map_document(session, len(session.iterations) - 1, PALETTE), width=160)
    assert "exclusive, by relevance: the best-scored is entered, else the first" in text
    assert "▶ billing   exclusive (entered when it scores best; the first when nothing does)" in text
    lines = [line for line in text.splitlines() if re.search(r" → \w+ +(entry|intent|model-pick) ", line)]
    rule, intent, picked = (
        next(line for line in lines if f" {by} " in line) for by in ("entry", "intent", "model-pick")
    )
    assert "· → returns" in rule and "witness “return” (keyword return)" in rule
    assert "· → billing" in intent and "score 0.9" in intent and "menu" not in intent
    assert "menu billing, shipping" in picked and "✗ declined the menu" in picked


def test_the_pass_that_declined_the_menu_has_its_badge_and_its_reason_row() -> None:
    with TraceReader(sample_path(SAMPLES, "entry-rules"), index=False) as reader:
        session = load_session(reader)
        badged = [i for i in range(len(session.iterations)) if "declined" in session.badges(i)]
        assert badged == [3]  # turn 3's second pass, where the off-menu read landed
        shown = rendered(inspect_iteration(session, session.iterations[3], PALETTE), width=160)
    reason = BADGE_REASONS["declined"]
    assert reason.section == "Cursor" and any(reason.row(line) for line in shown.splitlines())
    assert BADGE_LETTERS["declined"] not in {BADGE_LETTERS[b] for b in BADGE_LETTERS if b != "declined"}

"""The decision trees on screen: the skill map view's tree outline, the pass inspector's ``tree`` reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    CursorMoveEvent,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    SkillMapDecl,
    Skipped,
    TreeBranchDecl,
    TreeDecl,
    TurnStartEvent,
)
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.skill_map import SkillMapView, skill_map_document
from tests.demo.helpers import SAMPLES
from tests.trace.samples import Script
from tests.tui.helpers import load_session, loaded, wait_for
from tests.tui.strategies import PALETTE, rendered
from tests.tui.traces import CONTROLS, MARKUP

EVIL = f"evil{MARKUP}{CONTROLS}"


def shown(path: Path, *, width: int = 120) -> tuple[list[str], list[str]]:
    """Per iteration: the skill map view's text and the pass inspector's text."""
    with TraceReader(path, index=False) as reader:
        session = load_session(reader)
        rows = range(len(session.iterations))
        maps = [rendered(skill_map_document(session, row, PALETTE), width=width) for row in rows]
        passes = [rendered(inspect_iteration(session, it, PALETTE), width=width) for it in session.iterations]
    return maps, passes


def test_the_map_view_draws_the_tree_and_marks_the_leaf_each_pass_took() -> None:
    maps, _ = shown(sample_path(SAMPLES, "decision-tree"))
    first, last = maps[0], maps[-1]
    assert "3 nodes · 0 entries · 0 edges · 1 tree" in first
    assert "Decision trees  no cursor: a leaf is active while every branch on its path holds" in first
    assert "(none: its tree leaves need no cursor)" in first
    assert "├─ billing  keywords charge, invoice, refund" in first
    assert "│  ├─ refund  keywords refund  → refund   ● active at T1·I1 (billing › refund)" in first
    assert "│  └─ copy  regex /(?i)\\bcopy\\b/  → invoice-copy\n" in first
    assert "└─ shipping  keywords parcel, delivery  → shipping\n" in first
    # The second turn took the other branch: refund is no longer marked, shipping is.
    assert "→ refund\n" in last and "→ shipping   ● active at T2·I2 (shipping)" in last


def test_the_pass_inspector_gives_the_leaf_s_path_as_why_it_rode() -> None:
    _, passes = shown(sample_path(SAMPLES, "decision-tree"))
    assert "refund skill system-prompt, tools  tree support: billing › refund (no cursor)" in passes[0]
    assert "shipping skill system-prompt, tools  tree support: shipping (no cursor)" in passes[2]
    assert "by none · strength assumed" in passes[0]


def hand_built(path: Path) -> Path:
    """A tree with a hostile label, a leaf skipped because its predicate raised, and one that rode."""
    s = Script(run_id="tree")
    tree = TreeDecl(
        label=EVIL,
        branches=[
            TreeBranchDecl(
                label="risky",
                kind="when",
                branches=[TreeBranchDecl(label=EVIL, kind="unconditional", leaf="a")],
            ),
            TreeBranchDecl(label="fine", kind="keywords", keywords=["go"], leaf="b"),
        ],
    )
    skill_map = SkillMapDecl(nodes=["a", "b"], entries=[], edges=[], trees=[tree])
    s.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=6, skill_map=skill_map)
    s.turn = 1
    s.add(TurnStartEvent, user_message="go")
    s.add(CursorMoveEvent, iteration=1, by="none", strength="assumed")
    s.add(
        PassEvent,
        iteration=1,
        active_ids=["b"],
        reasons=[{"id": "b", "via": "tree", "path": ["fine"], "label": EVIL}],
        skipped=[Skipped(id="a", reason="predicate-threw", error="boom")],
        evaluated_total=2,
    )
    s.turn = None
    s.add(RunEndEvent, status="completed", turns=1)
    return s.write(path)


def test_a_raising_branch_and_hostile_labels_are_shown_inert(tmp_path: Path) -> None:
    maps, passes = shown(hand_built(tmp_path / "tree.fptrace.jsonl"))
    assert "├─ risky  when a predicate" in maps[0]
    assert "→ a   ✕ predicate-threw at T1·I1: boom" in maps[0]
    assert "└─ fine  keywords go  → b   ● active at T1·I1 (fine)" in maps[0]
    assert "[bold red]x[/]" in maps[0] and "\x1b" not in maps[0] and "\x1b" not in passes[0]


@pytest.mark.anyio
async def test_the_app_s_skill_map_view_shows_the_tree() -> None:
    app = FpdebugApp(sample_path(SAMPLES, "decision-tree"))
    async with app.run_test(size=(140, 48)) as pilot:
        await loaded(pilot)
        await pilot.press("5")
        view = app.screen.query_one("#view-skill-map", SkillMapView)
        assert await wait_for(pilot, lambda: any("Decision trees" in line for line in view.text_lines()))
        text = "\n".join(view.text_lines())
    assert "tree support" in text and "└─ shipping  keywords parcel, delivery  → shipping" in text

"""The skill map view: the drawing, the outline of a big map, the cursor's path, refusals, hostile ids."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    ConflictParty,
    CursorMoveEvent,
    EdgeDecl,
    EntryDecl,
    GuardDecl,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillMapDecl,
    SkillRejectedEvent,
    TurnStartEvent,
    Witness,
)
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.widgets.map_layout import MAX_DRAWN_NODES, MapEdge, edge_tags, layout_map
from fpdebug.tui.widgets.skill_map import SkillMapView, cursor_path
from fpdebug.views.session import TraceSession
from tests.trace.samples import Script
from tests.tui.helpers import loaded, screen_segments, screen_text
from tests.tui.traces import CONTROLS, MARKUP, sample

pytestmark = pytest.mark.anyio

SIZE = (160, 48)
EVIL = f"evil{MARKUP}{CONTROLS}"


def draw(nodes: list[str], pairs: list[tuple[str, str]], entries: list[str]) -> list[str]:
    edges = [MapEdge(tag, a, b) for tag, (a, b) in zip(edge_tags(len(pairs)), pairs, strict=True)]
    diagram = layout_map(nodes, edges, entries=entries)
    assert diagram is not None
    return ["".join(row) for row in diagram.chars]


class TestDrawing:
    def test_a_chain_is_one_row_of_boxes_joined_by_tagged_arrows(self) -> None:
        pairs = [("triage", "billing"), ("billing", "refund")]
        rows = draw(["triage", "billing", "refund"], pairs, ["triage"])
        label_row = next(row for row in rows if "triage" in row)
        assert "billing" in label_row and "refund" in label_row
        assert label_row.index("triage") < label_row.index("billing") < label_row.index("refund")
        assert "a▶" in label_row and "b▶" in label_row and "▶ triage" in label_row

    def test_a_cycle_draws_its_back_edge_pointing_left(self) -> None:
        rows = draw(["triage", "billing"], [("triage", "billing"), ("billing", "triage")], ["triage"])
        forward = next(row for row in rows if "a▶" in row)
        back = next(row for row in rows if "◀b" in row)
        assert forward != back  # each edge has its own row at the boxes' sides

    def test_an_edge_skipping_a_column_passes_through_it(self) -> None:
        rows = draw(["a", "b", "c"], [("a", "b"), ("b", "c"), ("a", "c")], ["a"])
        text = "\n".join(rows)
        assert text.count("▶") == 4  # three edges, and the entry marker
        assert "c▶" in text

    def test_a_self_loop_is_marked_in_its_box(self) -> None:
        rows = draw(["a", "b"], [("a", "a"), ("a", "b")], ["a"])
        assert any("▶ a ↺" in row for row in rows)

    def test_a_big_map_is_not_drawn(self) -> None:
        nodes = [f"n{i}" for i in range(50)]
        pairs = [(nodes[i], nodes[(i * 7 + 1) % 50]) for i in range(50)]
        edges = [MapEdge(tag, a, b) for tag, (a, b) in zip(edge_tags(50), pairs, strict=True)]
        assert layout_map(nodes, edges, entries=["n0"]) is None

    def test_edges_to_unknown_nodes_are_left_out(self) -> None:
        rows = draw(["a", "b"], [("a", "b"), ("a", "ghost")], ["a"])
        assert "ghost" not in "\n".join(rows) and "a▶" in "\n".join(rows)

    def test_hostile_and_wide_ids_keep_the_grid_aligned(self) -> None:
        ids = ["\x1b[2J", "日本語", "e\u0301x"]
        rows = draw(ids, [(ids[0], ids[1]), (ids[1], ids[2])], [ids[0]])
        assert len({cell_len(row) for row in rows}) == 1
        assert "\\x1b[2J" in rows[1] and "\x1b" not in "".join(rows)
        assert "│ 日本語 ├" in rows[1] and "│ e\u0301x │" in rows[1]

    @settings(max_examples=60, deadline=None)
    @given(
        st.integers(min_value=1, max_value=MAX_DRAWN_NODES).flatmap(
            lambda n: st.tuples(
                st.just(n),
                st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
                st.sets(st.integers(0, n - 1), max_size=3),
            )
        )
    )
    def test_any_small_map_draws_every_node_once_on_a_rectangle(
        self, case: tuple[int, list[tuple[int, int]], set[int]]
    ) -> None:
        count, pairs, entries = case
        nodes = [f"node{i:02d}" for i in range(count)]
        edges = [
            MapEdge(tag, nodes[a], nodes[b]) for tag, (a, b) in zip(edge_tags(len(pairs)), pairs, strict=True)
        ]
        diagram = layout_map(nodes, edges, entries=[nodes[i] for i in entries])
        assert diagram is not None
        rows = ["".join(row) for row in diagram.chars]
        assert len({len(row) for row in rows}) == 1
        text = "\n".join(rows)
        for node in nodes:
            assert text.count(node) == 1
        drawn = {edge.tag for edge in edges if edge.source != edge.target}
        assert diagram.drawn_tags == drawn


def hand_built(path: Path, *, nodes: int = 0) -> Path:
    """A map with guards, a when, an open skill, a hostile id; a conflict, a refusal, a superseded pick.

    ``nodes`` > 0 replaces the map by a ring of that many nodes (one hop along it per iteration).
    """
    s = Script(run_id="hand")
    if nodes:
        ring = [f"step-{i:02d}" for i in range(nodes)]
        skill_map = SkillMapDecl(
            nodes=ring,
            entries=[EntryDecl(skill_id=ring[0], kind="unconditional")],
            edges=[
                EdgeDecl(from_skill=ring[i], to_skill=ring[(i + 1) % nodes], on_tool_return=f"next_{i}")
                for i in range(nodes)
            ],
        )
    else:
        skill_map = SkillMapDecl(
            nodes=["triage", "billing", "faq", EVIL],
            entries=[EntryDecl(skill_id="triage", kind="keywords", keywords=["help", "refund"])],
            edges=[
                EdgeDecl(from_skill="triage", to_skill="billing", on_tool_return="scan"),
                EdgeDecl(from_skill="triage", to_skill="faq", on_tool_return="look.*", tool_is_pattern=True),
                EdgeDecl(
                    from_skill="billing",
                    to_skill="triage",
                    when="the customer changes topic",
                    guards=[GuardDecl(field="amount", op="gt", value=10)],
                ),
                EdgeDecl(
                    from_skill="billing", to_skill=EVIL, on_tool_status=["denied"], on_tool_return="pay"
                ),
            ],
            open_skills=["helper"],
        )
    s.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=60, skill_map=skill_map)
    s.turn = 1
    s.add(TurnStartEvent, user_message="help")
    if nodes:
        ring = skill_map.nodes
        s.add(CursorMoveEvent, iteration=1, to_skill=ring[0], by="entry", strength="lexical")
        s.add(PassEvent, iteration=1, active_ids=[ring[0]], evaluated_total=nodes)
        for i in range(1, nodes):
            s.add(
                CursorMoveEvent,
                iteration=i + 1,
                from_skill=ring[i - 1],
                to_skill=ring[i],
                by="route",
                strength="structural",
            )
            s.add(PassEvent, iteration=i + 1, active_ids=[ring[i]], evaluated_total=nodes)
    else:
        s.add(
            CursorMoveEvent,
            iteration=1,
            to_skill="triage",
            by="entry",
            strength="lexical",
            witness=Witness(text="help me", keyword="help"),
        )
        s.add(PassEvent, iteration=1, active_ids=["triage"], evaluated_total=4)
        winner = ConflictParty(tool_call_id="c1", tool_name="scan", target="billing")
        loser = ConflictParty(tool_call_id="c2", tool_name="lookup", target="faq")
        s.add(RouteConflictEvent, iteration=1, from_skill_id="triage", winner=winner, losers=[loser])
        s.add(
            CursorMoveEvent,
            iteration=2,
            from_skill="triage",
            to_skill="billing",
            by="route",
            strength="structural",
            conflict={"winner": winner, "losers": [loser]},
        )
        s.add(PassEvent, iteration=2, active_ids=["billing"], evaluated_total=4)
        rejected = {"requested_id": "faq", "current_skill_id": "billing", "allowed": ["triage"]}
        s.add(SkillRejectedEvent, iteration=2, **rejected)
        superseded = {"volunteered_id": EVIL, "won_id": "billing", "from_skill_id": "billing"}
        s.add(RerouteSupersededEvent, iteration=2, **superseded)
        stay = {"from_skill": "billing", "to_skill": "billing", "by": "stay", "strength": "assumed"}
        s.add(CursorMoveEvent, iteration=3, **stay)
        s.add(PassEvent, iteration=3, active_ids=["billing"], evaluated_total=4)
    s.turn = None
    s.add(RunEndEvent, status="completed", turns=1)
    return s.write(path)


async def show_map(app: FpdebugApp, pilot, *keys: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Press ``keys`` on the timeline (``G`` selects the last iteration), then show the skill map."""
    await loaded(pilot)
    for key in (*keys, "5"):
        await pilot.press(key)
        await pilot.pause()
    view = app.screen.query_one("#view-skill-map", SkillMapView)
    return view.text_lines()


class TestTheView:
    async def test_a_run_without_a_map_says_so(self) -> None:
        app = FpdebugApp(sample("leases"))
        async with app.run_test(size=SIZE) as pilot:
            text = "\n".join(await show_map(app, pilot))
        assert "This run declares no skill map: there is no cursor to follow." in text

    async def test_the_path_by_and_witness_refusals_and_conflicts(self, tmp_path: Path) -> None:
        app = FpdebugApp(hand_built(tmp_path / "hand.fptrace.jsonl"))
        async with app.run_test(size=SIZE) as pilot:
            lines = await show_map(app, pilot, "G")
            text = "\n".join(lines)
            assert "cursor on billing since T1·I2 (route)" in text
            hops = [line for line in lines if line.lstrip().startswith("T1·I")]
            assert "· → triage" in hops[0] and "entry" in hops[0]
            assert "witness “help me” (keyword help)" in hops[0]
            assert "triage → billing" in hops[1] and "route" in hops[1] and "edge a" in hops[1]
            assert "⚡ conflict" in hops[1]
            assert "billing → billing" in hops[2] and "stay" in hops[2]
            assert "✕ read_skill(faq) refused on billing · allowed: triage" in text
            assert "⚡ conflict from triage: won scan → billing · lost lookup → faq" in text
            assert "not honoured: the cursor went to billing" in " ".join(text.split())  # a long id wraps
            # the edge list says what fires each edge
            assert "on tool return /look.*/" in text
            assert "when the customer changes topic · guard amount gt 10" in text
            assert "on status denied of pay" in text
            assert "keywords help, refund" in text and "helper" in text
            # the path is only ever up to the selected iteration
            await pilot.press("left_square_bracket", "left_square_bracket")
            await pilot.pause()
            earlier = "\n".join(app.screen.query_one("#view-skill-map", SkillMapView).text_lines())
            assert "cursor on triage since T1·I1 (entry)" in earlier
            assert "refused on billing" not in earlier and "triage → billing" in earlier  # the edge list

    async def test_hostile_ids_are_shown_literally(self, tmp_path: Path) -> None:
        app = FpdebugApp(hand_built(tmp_path / "hand.fptrace.jsonl"))
        async with app.run_test(size=SIZE) as pilot:
            await show_map(app, pilot, "G")
            segments = screen_segments(app)
            shown = screen_text(app)
        assert not any("\x1b" in segment or "\x9b" in segment or "\u202e" in segment for segment in segments)
        assert "[bold red]x[/]" in shown and "\\x1b[2J" in shown

    async def test_a_fifty_node_map_is_an_outline_that_scrolls(self, tmp_path: Path) -> None:
        app = FpdebugApp(hand_built(tmp_path / "ring.fptrace.jsonl", nodes=50))
        async with app.run_test(size=SIZE) as pilot:
            started = time.perf_counter()
            lines = await show_map(app, pilot, "G")
            assert time.perf_counter() - started < 20  # well under a second when idle; CI is loaded
            text = "\n".join(lines)
            assert "Outline  50 nodes: listed, too many to draw" in text
            for i in range(50):
                assert f"step-{i:02d}" in text
            assert "━▶ step-49  ← the cursor" in text
            view = app.screen.query_one("#view-skill-map", SkillMapView)
            await pilot.press("G")  # the view has the focus: scroll to the end of the document
            await pilot.pause()
            assert view.scroll_offset.y > 0
            assert "step-48 → step-49" in screen_text(app)

    async def test_a_view_too_narrow_for_the_drawing_says_so_and_keeps_the_lists(self) -> None:
        app = FpdebugApp(sample("support"))
        async with app.run_test(size=(40, 40)) as pilot:
            text = "\n".join(await show_map(app, pilot))
        assert "the drawing needs" in text and "Edges" in text and "┌" not in text


def test_the_path_is_read_backwards_and_bounded() -> None:
    with TraceReader(sample("zone-trap")) as reader:
        session = TraceSession(reader)
        session.poll()
        path = cursor_path(session, len(session.iterations) - 1, limit=3)
        assert [hop.label for hop in path.hops] == ["T1·I3", "T1·I4", "T1·I5"]
        assert path.truncated
        full = cursor_path(session, len(session.iterations) - 1)
        assert len(full.hops) == 5 and not full.truncated and full.current == "zone-audit"


_IDS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(_IDS, min_size=1, max_size=24, unique=True),
    data=st.data(),
)
def test_any_declared_map_and_any_path_render_at_any_width(  # type: ignore[no-untyped-def]
    tmp_path_factory, nodes: list[str], data
) -> None:
    from rich.console import Console

    from fpdebug.tui.text import Palette
    from fpdebug.tui.widgets.skill_map import skill_map_document

    known = st.sampled_from(nodes)
    anyone = st.one_of(known, _IDS)
    edges = data.draw(
        st.lists(
            st.builds(
                EdgeDecl,
                from_skill=anyone,
                to_skill=anyone,
                on_tool_return=st.one_of(st.none(), _IDS),
                tool_is_pattern=st.booleans(),
                when=st.one_of(st.none(), _IDS),
                deterministic=st.booleans(),
            ),
            max_size=50,
        )
    )
    entry = st.builds(EntryDecl, skill_id=anyone, kind=st.just("unconditional"))
    entries = data.draw(st.lists(entry, max_size=3))
    end = st.one_of(st.none(), anyone)
    moves = data.draw(st.lists(st.tuples(end, end), max_size=8))
    s = Script(run_id="fuzz")
    s.add(
        RunStartEvent,
        turn=None,
        provider="p",
        model="m",
        max_iterations=9,
        skill_map=SkillMapDecl(nodes=nodes, entries=entries, edges=edges),
    )
    s.turn = 1
    for iteration, (source, target) in enumerate(moves, 1):
        move = {"from_skill": source, "to_skill": target, "by": "route", "strength": "lexical"}
        s.add(CursorMoveEvent, iteration=iteration, **move)
        s.add(SkillRejectedEvent, iteration=iteration, requested_id=target or "x", allowed=nodes[:2])
    path = s.write(tmp_path_factory.mktemp("fuzz") / "fuzz.fptrace.jsonl")
    console = Console(width=200)
    with TraceReader(path) as reader:
        session = TraceSession(reader)
        session.poll()
        for row in [None, *range(len(session.iterations))]:
            blocks = skill_map_document(session, row, Palette())
            for width in (30, 160):
                for block in blocks:
                    for y in range(block.height(console, width, False)):
                        text = block.row(console, width, False, y)
                        assert "\x1b" not in text.plain and "\x9b" not in text.plain

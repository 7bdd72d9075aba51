"""Continuity across turns (docs/context-model.md §5.1): a carried cursor holds the next turn's start,
``by: continuity``, a structural move (issue 19 item 8, the continuity tier of the turn-start cascade)."""

from __future__ import annotations

from pathlib import Path

from fpdebug.demo import continuity
from fpdebug.engine.providers.scripted import ScriptedProvider
from fpdebug.engine.sink import MemorySink
from fpdebug.trace.schema import CursorMoveEvent, TurnEndEvent
from tests.demo.helpers import run_events


def moves_by_turn(events: list) -> list[list[CursorMoveEvent]]:  # type: ignore[type-arg]
    turns: dict[int, list[CursorMoveEvent]] = {}
    for event in events:
        if isinstance(event, CursorMoveEvent) and event.turn is not None:
            turns.setdefault(event.turn, []).append(event)
    return [turns[t] for t in sorted(turns)]


def test_the_second_turn_starts_where_the_first_left_by_continuity(tmp_path: Path) -> None:
    events = run_events("continuity", tmp_path)
    moves = moves_by_turn(events)
    assert [[m.to_skill for m in turn] for turn in moves] == continuity.EXPECTED["cursor"]
    assert [[m.by for m in turn] for turn in moves] == continuity.EXPECTED["cursor_by"]
    first = moves[1][0]
    assert (first.from_skill, first.strength) == ("billing", "structural")
    ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert [e.final_content for e in ends] == continuity.EXPECTED["answers"]
    assert ends[0].end_state is not None and ends[0].end_state.cursor == first.to_skill


def test_without_conversation_continuity_each_turn_starts_afresh() -> None:
    agent = continuity.build_agent().continuity("turn")
    sink = MemorySink()
    agent.run(list(continuity.USER_MESSAGES), provider=continuity.scripted_provider(), sink=sink)
    starts = [turn[0] for turn in moves_by_turn(list(sink.events))]
    assert [(m.to_skill, m.by) for m in starts] == [("triage", "entry"), ("triage", "entry")]
    assert isinstance(continuity.scripted_provider(), ScriptedProvider)

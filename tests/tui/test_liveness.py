"""The debugger stays live: fast keys settle on the last row, followed events show before the whole-file check."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import orjson
import pytest
from textual.pilot import Pilot

from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.events import EventList
from fpdebug.views.session import CHECK_SLICE, TraceSession
from tests.tui.helpers import opened, screen_text, wait_for
from tests.tui.test_app import type_at_once
from tests.tui.traces import grow, sample, write_runs

pytestmark = pytest.mark.anyio

QUIET = 0.5
"""Seconds a settled screen is watched for further selection changes."""


@pytest.fixture
def selections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every row ``TraceScreen.watch_selected`` is called with, in order."""
    seen: list[int] = []
    original = TraceScreen.watch_selected

    def spy(self: TraceScreen, row: int) -> None:
        seen.append(row)
        original(self, row)

    monkeypatch.setattr(TraceScreen, "watch_selected", spy)
    return seen


async def settled(pilot: Pilot[object], screen: TraceScreen, selections: list[int], row: int) -> None:
    """Wait until ``row`` is selected under the timeline's cursor, then assert nothing changes for a while."""
    assert await wait_for(pilot, lambda: screen.selected == row and screen.timeline.cursor == row)
    before = len(selections)
    await pilot.pause(QUIET)
    assert selections[before:] == [], "the selection keeps changing after the last move"
    assert screen.selected == row and screen.timeline.cursor == row


class TestFastMoves:
    @pytest.mark.parametrize("moves", [2, 5])
    async def test_moves_in_one_tick_settle_on_the_last_row(
        self, tmp_path: Path, selections: list[int], moves: int
    ) -> None:
        path = tmp_path / "runs.fptrace.jsonl"
        write_runs(path, [("r", 1, iteration) for iteration in range(1, 9)])
        async with opened(path) as (pilot, screen):
            assert screen.timeline.total == 8 and screen.selected == 0
            for _ in range(moves):  # no await in between: every notice is still queued
                screen.timeline.action_cursor_down()
            await settled(pilot, screen, selections, moves)

    async def test_keys_queued_at_once_select_the_row_they_lead_to(self, selections: list[int]) -> None:
        async with opened(sample("support")) as (pilot, screen):
            assert screen.timeline.total == 5
            type_at_once(pilot.app, *"jjjjk")  # four down to the last row, one back up
            await settled(pilot, screen, selections, 3)

    async def test_event_moves_in_one_tick_settle_on_the_last_event(self, selections: list[int]) -> None:
        async with opened(sample("support")) as (pilot, screen):
            await pilot.press("4")
            events = screen.query_one("#events", EventList)
            session = screen.session
            # Lines of three different iterations, moved to one after the other before any notice is handled.
            lines = [session.iterations[row].first_line for row in (1, 3, 2)]
            for line in lines:
                assert events.move_to_row(line)
            await settled(pilot, screen, selections, 2)
            assert events.cursor == lines[-1]


class TestFollowBeforeTheCheck:
    async def test_an_appended_iteration_shows_while_the_check_is_slow_and_is_checked_after(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = tmp_path / "leases.fptrace.jsonl"
        raw = sample("leases").read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(raw[:-2]))  # no turn_end / run_end yet
        slow = threading.Event()
        slow.set()
        original = TraceSession.check_step

        def slow_check(self: TraceSession, *, limit: int = CHECK_SLICE) -> int:
            # One line per 0.3 s: the whole-file check of this small file takes seconds, as a big one's does.
            if slow.is_set():
                time.sleep(0.3)
                limit = 1
            return original(self, limit=limit)

        monkeypatch.setattr(TraceSession, "check_step", slow_check)
        async with opened(path, follow=True) as (pilot, screen):
            session = screen.session
            rows = screen.timeline.total
            run_id = session.model.runs[0].run_id
            # The appended iteration's call carries a field the schema forbids: only the full check finds it.
            scratch = tmp_path / "scratch.fptrace.jsonl"
            shutil.copy(path, scratch)
            grow(scratch, run_id=run_id, first_seq=session.lines, iteration=1, turn=2)
            pass_line, call_line = scratch.read_bytes().splitlines()[-2:]
            call = orjson.loads(call_line)
            assert call["kind"] == "llm_call"
            call["surprise"] = "an extra field"
            appended = session.lines + 1  # the call's line number, once indexed
            with path.open("ab") as handle:
                handle.write(pass_line + b"\n" + orjson.dumps(call) + b"\n")
            assert await wait_for(pilot, lambda: screen.timeline.total == rows + 1, timeout=2.0)
            assert not session.check_done  # the row came before the check of the file
            assert session.checked < appended
            slow.clear()
            assert await wait_for(pilot, lambda: session.check_done)
            assert session.found_invalid == [appended]  # the appended lines were checked too
            assert await wait_for(pilot, lambda: "1 invalid" in screen_text(pilot.app))

"""A line that is valid JSON of a known kind but breaks the schema: every display agrees it is invalid.

The model reads each line's facts only, so such a line first counts as an event; the session's
check step (and any full read of the line) finds it, and the status bar, the timeline badge, the
``kind:`` / ``badge:`` filters and the Calls view then all say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.trace.records import InvalidRecord
from fpdebug.tui.widgets.calls import CallView
from fpdebug.tui.widgets.events import EventList
from fpdebug.tui.widgets.timeline import IterationTimeline
from tests.tui.helpers import load_session, opened, screen_text, wait_for
from tests.tui.traces import write_schema_break

pytestmark = pytest.mark.anyio


@pytest.fixture
def schema_break(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "break.fptrace.jsonl"
    return path, write_schema_break(path)


class TestSession:
    def test_the_check_step_finds_a_line_the_facts_took_for_an_event(
        self, schema_break: tuple[Path, int]
    ) -> None:
        path, line = schema_break
        session = load_session(path)
        assert session.model.counts["llm_call"] == 5  # the facts path counted it as a call
        assert session.invalid_count == 0 and not session.check_done
        while session.check_step(limit=4):
            pass
        assert session.check_done
        assert session.found_invalid == [line]
        assert session.invalid_count == 1 and session.is_invalid(line)
        assert session.line_kind(line) == "invalid"
        row = session.row_at_line(line)
        assert row is not None and "invalid" in session.badges(row)

    def test_the_check_agrees_with_the_reader_on_a_lone_surrogate_escape(self, tmp_path: Path) -> None:
        # The reader reads "\ud800" leniently (as U+FFFD); the check must not call the line invalid.
        path = tmp_path / "surrogate.fptrace.jsonl"
        write_schema_break(path)
        lines = path.read_bytes().splitlines(keepends=True)
        target = next(i for i, raw in enumerate(lines) if b'"kind":"tool_result"' in raw)
        lines[target] = lines[target].replace(b'"result":"', b'"result":"\\ud800', 1)
        path.write_bytes(b"".join(lines))
        session = load_session(path)
        assert b"\\ud800" in session.reader.raw(target)
        assert not isinstance(session.record(target), InvalidRecord)
        while session.check_step():
            pass
        assert not session.is_invalid(target)

    def test_reading_the_line_notes_it_before_the_check_reaches_it(
        self, schema_break: tuple[Path, int]
    ) -> None:
        path, line = schema_break
        session = load_session(path)
        session.record(line)
        assert session.found_invalid == [line]
        while session.check_step():
            pass
        assert session.found_invalid == [line]  # noted once


class TestScreen:
    async def test_status_badge_and_filters_agree(self, schema_break: tuple[Path, int]) -> None:
        path, line = schema_break
        async with opened(path) as (pilot, screen):
            text = screen_text(pilot.app)
            assert "1 invalid" in text
            row = screen.session.row_at_line(line)
            assert row is not None
            timeline_rows = [row_text for row_text in text.splitlines() if "T1·I2 " in row_text]
            assert timeline_rows and "invalid" in timeline_rows[0]
            await pilot.press("slash", *"badge:invalid", "enter")
            timeline = screen.query_one("#timeline", IterationTimeline)
            assert await wait_for(pilot, lambda: timeline.row_filter is not None and timeline.row_filter.done)
            assert list(timeline.row_filter.rows) == [row]
            await pilot.press("4", "slash", *"kind:invalid", "enter")
            events = screen.query_one("#events", EventList)
            assert await wait_for(pilot, lambda: events.row_filter is not None and events.row_filter.done)
            assert list(events.row_filter.rows) == [line]

    async def test_the_calls_view_says_the_call_is_an_invalid_record(
        self, schema_break: tuple[Path, int]
    ) -> None:
        path, line = schema_break
        async with opened(path) as (pilot, screen):
            await pilot.press("j", "3")
            calls = screen.query_one(CallView)
            assert await wait_for(pilot, lambda: bool(calls.text_lines()))
            shown = " ".join(" ".join(calls.text_lines()).split())
            assert f"the llm_call on line {line} is an invalid record" in shown
            assert "surprise" in shown
            assert "made no LLM call" not in shown

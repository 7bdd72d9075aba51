"""Following a file says what is known: a quiet writer is not "running", a torn tail has a row,
a file not written yet is waited for (issue 20: workflows that leave no mess, small lies)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.app import FpdebugApp, TraceSource
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.views import liveness
from tests.tui.helpers import SIZE, opened, screen_text, trace_screen, wait_for
from tests.tui.traces import grow, sample

pytestmark = pytest.mark.anyio

needs_proc_locks = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks (not Linux)")


def _unfinished(tmp_path: Path, name: str = "leases") -> Path:
    """A copy of a sample without its turn_end and run_end: a run its writer has not finished."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.fptrace.jsonl"
    shutil.copy(sample(name), path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))
    return path


class TestAQuietWriter:
    @needs_proc_locks
    async def test_running_turns_into_paused_or_gone_once_the_file_is_quiet(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = _unfinished(tmp_path)
        async with opened(path, follow=True) as (pilot, _screen):
            assert await wait_for(pilot, lambda: "● running" in screen_text(pilot.app))
            assert "run in progress" in screen_text(pilot.app)
            # The file stays quiet past the threshold (lowered, not waited for); nothing is written, so
            # the header must change by itself: no record arrives to redraw it.
            monkeypatch.setattr(liveness, "QUIET_AFTER", 0.5)
            assert await wait_for(pilot, lambda: "paused or gone?" in screen_text(pilot.app))
            drawn = screen_text(pilot.app)
            assert "● running" not in drawn and "run in progress" not in drawn
            assert "and no writer holds the file: paused or gone?" in drawn
            assert "no run_end, no new records for" in drawn  # the status line agrees

    @needs_proc_locks
    async def test_a_quiet_file_whose_writer_holds_it_is_running_and_says_how_long(
        self, tmp_path: Path
    ) -> None:
        path = _unfinished(tmp_path)
        with TraceWriter.resume(path, durability="none"):
            past = time.time() - 180
            os.utime(path, (past, past))
            async with opened(path, follow=True) as (pilot, _screen):
                want = "● running · no new records for 3m; its writer still holds the file"
                assert await wait_for(pilot, lambda: want in screen_text(pilot.app))


def _events_row(drawn: str, line: int) -> str:
    """The Events view's row of ``line`` as drawn (``""`` when it is not on screen)."""
    for row in drawn.splitlines():
        cells = row.strip("│ ").split()
        if cells and cells[0] == str(line):
            return row
    return ""


class TestATornTail:
    async def test_a_saved_trace_ending_mid_record_has_a_row_and_a_detail(self, tmp_path: Path) -> None:
        path = tmp_path / "torn.fptrace.jsonl"
        shutil.copy(sample("support"), path)
        lines = len(path.read_bytes().splitlines())
        with path.open("ab") as handle:
            handle.write(b'{"seq":29,"kind":"pa\x1b[2J')  # cut mid-record, an escape sequence in it
        async with opened(path) as (pilot, _screen):
            await pilot.press("4", "G")
            assert await wait_for(pilot, lambda: "TORN TAIL" in screen_text(pilot.app))
            drawn = screen_text(pilot.app)
            row = _events_row(drawn, lines)
            assert "TORN TAIL" in row and "torn tail: 24 bytes at line 29, not yet a record" in row
            # The cursor is on it (G): the detail says what it is and shows the bytes, escapes inert.
            assert "Line 29 · torn tail   byte" in drawn
            assert '{"seq":29,"kind":"pa' in drawn and "\x1b" not in drawn
            assert "torn tail (24 bytes after the last newline)" in drawn  # the status line

    async def test_a_followed_tail_turns_into_its_record_once_completed(self, tmp_path: Path) -> None:
        path = _unfinished(tmp_path)
        async with opened(path, follow=True) as (pilot, screen):
            session = screen.session
            line = session.lines
            run_id = session.model.runs[0].run_id
            scratch = tmp_path / "scratch.fptrace.jsonl"
            shutil.copy(path, scratch)
            grow(scratch, run_id=run_id, first_seq=line, iteration=1, turn=2)
            record = scratch.read_bytes().splitlines()[line]
            await pilot.press("4")
            with path.open("ab") as handle:
                handle.write(record[:30])
            want = f"torn tail: 30 bytes at line {line}, not yet a record"
            assert await wait_for(pilot, lambda: want in _events_row(screen_text(pilot.app), line))
            with path.open("ab") as handle:
                handle.write(record[30:] + b"\n")

            def completed() -> bool:
                row = _events_row(screen_text(pilot.app), line)
                return "pass" in row and "TORN" not in row

            assert await wait_for(pilot, completed)
            assert "torn tail" not in screen_text(pilot.app)


class TestWaitingForTheWriter:
    async def test_a_file_that_does_not_exist_yet_is_waited_for_then_followed(self, tmp_path: Path) -> None:
        path = tmp_path / "later.fptrace.jsonl"
        unfinished = _unfinished(tmp_path / "source")
        app = FpdebugApp(TraceSource(path, "follow"))
        async with app.run_test(size=SIZE) as pilot:
            want = f"waiting for the writer: {path} (the file does not exist yet)"
            assert await wait_for(pilot, lambda: want in screen_text(app))
            assert "q or ctrl+c quits" in screen_text(app)
            # The writer creates the file and writes it in two goes (as a real one does).
            data = unfinished.read_bytes()
            with path.open("wb") as handle:
                handle.write(data[:40])  # part of the header line
                handle.flush()
                await pilot.pause(0.2)
                handle.write(data[40:])
            assert await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen) and app.screen.loaded)
            screen = trace_screen(app)
            assert await wait_for(pilot, lambda: "● running" in screen_text(app))
            assert "waiting for the writer" not in screen_text(app)
            # And it is followed from there: a new iteration shows.
            rows = screen.timeline.total
            grow(
                path,
                run_id=screen.session.model.runs[0].run_id,
                first_seq=screen.session.lines,
                iteration=1,
                turn=2,
            )
            assert await wait_for(pilot, lambda: screen.timeline.total == rows + 1)

    @pytest.mark.parametrize("key", ["q", "ctrl+c"])
    async def test_q_and_ctrl_c_quit_while_waiting(self, tmp_path: Path, key: str) -> None:
        app = FpdebugApp(TraceSource(tmp_path / "never.fptrace.jsonl", "follow"))
        async with app.run_test(size=SIZE) as pilot:
            assert await wait_for(pilot, lambda: "waiting for the writer" in screen_text(app))
            await pilot.press(key)
            assert await wait_for(pilot, lambda: app._exit)
        assert not (tmp_path / "never.fptrace.jsonl").exists()  # waiting never creates the file

    async def test_an_empty_file_says_it_waits_for_the_writer(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.fptrace.jsonl"
        path.touch()
        async with opened(path, follow=True) as (pilot, screen):
            want = "waiting for the writer: empty.fptrace.jsonl (nothing written yet)"
            assert await wait_for(pilot, lambda: want in screen_text(pilot.app))
            path.write_bytes(_unfinished(tmp_path / "source").read_bytes())
            assert await wait_for(pilot, lambda: screen.timeline.total > 0)
            assert await wait_for(pilot, lambda: "waiting for the writer" not in screen_text(pilot.app))


def test_view_follow_on_a_missing_file_runs_the_waiting_app_and_without_follow_it_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.fptrace.jsonl"
    started: list[bool] = []
    monkeypatch.setattr(FpdebugApp, "run", lambda self, **kwargs: started.append(self.waiting))
    assert main(["view", "--follow", str(missing)]) == 0
    assert started == [True]  # the app ran, waiting (no "no such file")
    assert main(["view", str(missing)]) == 2
    assert "no such file" in capsys.readouterr().err and started == [True]

"""Following a file says what is known: a quiet writer is not "running", a torn tail has a row,
a file not written yet is waited for (issue 20: workflows that leave no mess, small lies)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from fpdebug.trace.writer import TraceWriter
from fpdebug.views import liveness
from tests.tui.helpers import opened, screen_text, wait_for
from tests.tui.traces import sample

pytestmark = pytest.mark.anyio

needs_proc_locks = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks (not Linux)")


def _unfinished(tmp_path: Path, name: str = "leases") -> Path:
    """A copy of a sample without its turn_end and run_end: a run its writer has not finished."""
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

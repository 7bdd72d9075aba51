"""What a reader can tell of a trace's writer: the lock it holds, how long the file has been quiet."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fpdebug.trace.liveness import writer_holds
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.writer import TraceWriter
from fpdebug.views import liveness
from fpdebug.views.liveness import WriterState, WriterWatch, ago

needs_proc_locks = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks (not Linux)")


@needs_proc_locks
def test_the_lock_of_a_live_writer_is_seen_and_its_release_too(tmp_path: Path) -> None:
    path = tmp_path / "live.fptrace.jsonl"
    writer = TraceWriter.create(path, durability="none")
    inode = path.stat().st_ino
    try:
        assert writer_holds(inode) is True
    finally:
        writer.close()
    assert writer_holds(inode) is False


@needs_proc_locks
def test_looking_does_not_stop_a_writer_from_starting(tmp_path: Path) -> None:
    path = tmp_path / "t.fptrace.jsonl"
    TraceWriter.create(path, durability="none").close()
    for _ in range(50):
        writer_holds(path.stat().st_ino)
    with TraceWriter.resume(path, durability="none"):  # no TraceLockedError
        pass


def test_an_unreadable_lock_table_says_unknown(tmp_path: Path) -> None:
    assert writer_holds(1, table=tmp_path / "no-such-table") is None


def test_the_lock_table_is_matched_by_inode_only_for_exclusive_flocks(tmp_path: Path) -> None:
    table = tmp_path / "locks"
    table.write_text(
        "1: POSIX  ADVISORY  WRITE 10 fe:00:77 0 EOF\n"
        "2: FLOCK  ADVISORY  READ 11 fe:00:77 0 EOF\n"
        "3: -> FLOCK  ADVISORY  WRITE 12 fe:00:77 0 EOF\n"
        "4: FLOCK  ADVISORY  WRITE 13 00:2a:1077 0 EOF\n"
    )
    assert writer_holds(77, table=table) is False  # a record lock, a shared one, a waiter, another inode
    assert writer_holds(1077, table=table) is True


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(5, "5s"), (59.9, "59s"), (120, "2m"), (3600, "1h"), (3900, "1h 5m"), (90000, "1d 1h")],
)
def test_quiet_spells_read_to_the_unit_that_matters(seconds: float, words: str) -> None:
    assert ago(seconds) == words


class TestWords:
    def test_records_came_lately_running(self) -> None:
        state = WriterState(quiet=3, holds=None)
        assert state.state == "running" and state.header_words() == "● running"
        assert state.status_words() == "run in progress"

    def test_a_quiet_file_whose_writer_holds_it_is_running_and_says_how_long(self) -> None:
        state = WriterState(quiet=150, holds=True)
        assert state.header_words() == "● running · no new records for 2m; its writer still holds the file"

    def test_a_quiet_file_nobody_holds_is_not_called_running(self) -> None:
        state = WriterState(quiet=150, holds=False)
        assert state.state == "gone"
        assert state.header_words() == "‖ no new records for 2m and no writer holds the file: paused or gone?"
        assert state.status_words() == "no run_end, no new records for 2m"

    def test_without_a_lock_table_it_says_what_it_cannot_know(self) -> None:
        state = WriterState(quiet=150, holds=None)
        assert state.state == "quiet" and "running" not in state.header_words()
        assert state.header_words() == "‖ no new records for 2m: writer paused or gone?"


def test_the_watch_reads_the_file_mtime_and_reuses_a_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "quiet.fptrace.jsonl"
    TraceWriter.create(path, durability="none").close()
    past = time.time() - 600
    os.utime(path, (past, past))
    lookups: list[int] = []
    monkeypatch.setattr(liveness, "writer_holds", lambda inode: lookups.append(inode) or False)
    with TraceReader(path) as reader:
        watch = WriterWatch(reader)
        first = watch.state()
        second = watch.state()
    assert 590 < first.quiet < 700 and first.holds is False and first.state == "gone"
    assert second.holds is False and len(lookups) == 1  # within PROBE_EVERY: one lookup

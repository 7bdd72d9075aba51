"""The append-only writer: header, mode, lock, dense seq, durability, failed and short writes."""

from __future__ import annotations

import errno
import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from fpdebug.errors import TraceError, TraceFormatError, TraceLockedError, TraceWriteError
from fpdebug.trace import writer as writer_module
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord
from fpdebug.trace.schema import SCHEMA_VERSION, TraceHeader, TurnStartEvent
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0


def turn_start(seq: int, text: str = "hello") -> TurnStartEvent:
    return TurnStartEvent(seq=seq, ts=T0 + timedelta(seconds=seq), run_id="r", turn=1, user_message=text)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "run.fptrace.jsonl"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def test_create_writes_the_header_as_line_zero(path: Path) -> None:
    with TraceWriter.create(path, producer="test 1", clock=FixedClock(T0)) as writer:
        assert writer.next_seq == 1
    (header, end) = lines_of(path)
    assert end == b""
    assert TraceHeader.model_validate_json(header) == TraceHeader(producer="test 1", created=T0)
    assert orjson.loads(header)["schema_version"] == SCHEMA_VERSION


def test_each_record_is_one_line_with_kind_first(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        writer.append(turn_start(1, "line one\nline two"))
        writer.append(turn_start(2))
    records = lines_of(path)[1:-1]
    assert len(records) == 2
    assert all(record.startswith(b'{"kind":"turn_start","seq":') for record in records)
    assert TurnStartEvent.model_validate_json(records[0]).user_message == "line one\nline two"


def test_files_are_created_private_whatever_the_umask(path: Path) -> None:
    old = os.umask(0)
    try:
        TraceWriter.create(path).close()
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600


def test_overwriting_keeps_the_owners_mode(path: Path) -> None:
    # fpdebug never changes the mode of a file it did not create (issue 18): only a new file is 0600.
    path.write_bytes(b"old content\n")
    path.chmod(0o644)
    TraceWriter.create(path, overwrite=True).close()
    assert path.stat().st_mode & 0o777 == 0o644
    assert b"old content" not in path.read_bytes()


def test_an_existing_non_empty_file_is_not_clobbered(path: Path) -> None:
    path.write_bytes(b"precious\n")
    with pytest.raises(TraceError, match="already exists and is not empty"):
        TraceWriter.create(path)
    assert path.read_bytes() == b"precious\n"


def test_an_existing_empty_file_is_used(path: Path) -> None:
    path.touch()
    TraceWriter.create(path).close()
    assert lines_of(path)[0].startswith(b'{"kind":"trace_header"')


def test_a_second_writer_in_the_same_process_is_refused(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        writer.append(turn_start(1))
        with pytest.raises(TraceLockedError, match=str(path)):
            TraceWriter.create(path, overwrite=True)
        with pytest.raises(TraceLockedError):
            TraceWriter.resume(path)
        writer.append(turn_start(2))  # the first writer is unharmed
    with TraceWriter.resume(path) as again:  # the lock is released on close
        assert again.next_seq == 3


def test_a_second_writer_in_another_process_is_refused_at_once(path: Path) -> None:
    code = (
        "import sys\n"
        "from fpdebug.errors import TraceLockedError\n"
        "from fpdebug.trace.writer import TraceWriter\n"
        "try:\n"
        "    TraceWriter.resume(sys.argv[1])\n"
        "except TraceLockedError as error:\n"
        "    print('locked:', error)\n"
    )
    with TraceWriter.create(path):
        result = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
        )
    assert result.stdout.startswith("locked: ") and str(path) in result.stdout, result.stderr


def test_seq_must_be_dense_and_nothing_is_written_otherwise(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        writer.append(turn_start(1))
        size = path.stat().st_size
        with pytest.raises(TraceFormatError, match="seq 3.*must be seq 2"):
            writer.append(turn_start(3))
        with pytest.raises(TraceFormatError, match="seq 1"):
            writer.append(turn_start(1))
        assert path.stat().st_size == size
        writer.append(turn_start(2))
        assert writer.next_seq == 3


def test_only_events_can_be_appended(path: Path) -> None:
    with TraceWriter.create(path) as writer, pytest.raises(TraceFormatError, match="only trace events"):
        writer.append(TraceHeader(producer="x", created=T0))  # type: ignore[arg-type]


def test_append_many_is_all_or_nothing(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        assert writer.append_many([turn_start(1), turn_start(2)]) == 2
        size = path.stat().st_size
        with pytest.raises(TraceFormatError):
            writer.append_many([turn_start(3), turn_start(5)])
        assert path.stat().st_size == size and writer.next_seq == 3
        assert writer.append_many([]) == 0
    assert [TurnStartEvent.model_validate_json(line).seq for line in lines_of(path)[1:-1]] == [1, 2]


def test_a_closed_writer_refuses_to_write(path: Path) -> None:
    writer = TraceWriter.create(path)
    writer.close()
    writer.close()  # idempotent
    assert writer.closed
    with pytest.raises(TraceWriteError, match="closed"):
        writer.append(turn_start(1))


def test_bad_paths_get_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="is a directory"):
        TraceWriter.create(tmp_path)
    with pytest.raises(TraceError, match="directory does not exist"):
        TraceWriter.create(tmp_path / "missing" / "run.jsonl")
    with pytest.raises(TraceError, match="does not exist"):
        TraceWriter.resume(tmp_path / "nothing.jsonl")


def test_resume_continues_seq_after_the_last_record(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        writer.append_many([turn_start(1), turn_start(2), turn_start(3)])
    with TraceWriter.resume(path) as writer:
        assert writer.next_seq == 4
        writer.append(turn_start(4))
    with TraceReader(path) as reader:
        assert [reader[i].seq for i in range(1, len(reader))] == [1, 2, 3, 4]  # type: ignore[union-attr]
        assert reader.problems() == []


def test_resume_of_a_header_only_trace_starts_at_one(path: Path) -> None:
    TraceWriter.create(path).close()
    with TraceWriter.resume(path) as writer:
        assert writer.next_seq == 1


def test_resume_after_a_torn_record_starts_a_fresh_line(path: Path) -> None:
    with TraceWriter.create(path) as writer:
        writer.append_many([turn_start(1), turn_start(2)])
    with path.open("ab") as handle:
        handle.write(b'{"kind":"turn_start","seq":3,"ts":"20')  # a writer killed mid-record
    with TraceWriter.resume(path) as writer:
        assert writer.next_seq == 3
        writer.append(turn_start(3))
    with TraceReader(path) as reader:
        assert isinstance(reader[3], InvalidRecord)
        assert reader[4] == turn_start(3)
        # The fragment never completed, so seq 3 on the next line is no gap.
        assert [problem.code for problem in reader.problems()] == ["invalid"]


def test_resume_refuses_files_that_are_not_traces(path: Path) -> None:
    path.touch()
    with pytest.raises(TraceFormatError, match="empty"):
        TraceWriter.resume(path)
    path.write_bytes(b'{"kind":"run_start","seq":1}\n')
    with pytest.raises(TraceFormatError, match="not an fpdebug trace header"):
        TraceWriter.resume(path)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(writer_module, "_sync", calls.append)
    return calls


def test_durability_none_never_fsyncs(path: Path, fsyncs: list[int]) -> None:
    with TraceWriter.create(path, durability="none") as writer:
        writer.append_many([turn_start(1), turn_start(2)])
    assert fsyncs == []


def test_durability_every_fsyncs_each_record(path: Path, fsyncs: list[int]) -> None:
    with TraceWriter.create(path, durability="every") as writer:
        assert len(fsyncs) == 1  # the header
        writer.append(turn_start(1))
        writer.append(turn_start(2))
        assert len(fsyncs) == 3
    assert len(fsyncs) == 3  # nothing left to sync on close


def test_durability_batch_acknowledges_with_fewer_than_a_batch_unsynced(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The promise: when append returns, at most batch_size - 1 records are not yet on disk. Each
    # fake fdatasync notes how many lines the file held when it ran (all of them are then durable).
    synced_lines: list[int] = []

    def counting_sync(fd: int) -> None:
        synced_lines.append(path.read_bytes().count(b"\n"))  # the writer's descriptor is write-only

    monkeypatch.setattr(writer_module, "_sync", counting_sync)
    with TraceWriter.create(path, durability="batch", batch_size=4) as writer:
        for seq in range(1, 30):
            writer.append(turn_start(seq))
            written = seq + 1  # the header is a record too
            assert written - max(synced_lines, default=0) < 4
    assert max(synced_lines) == 30  # close synced the rest


def test_durability_batch_syncs_off_the_callers_thread_until_a_whole_batch_is_pending(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    sync_threads: list[str] = []

    def slow_sync(fd: int) -> None:
        sync_threads.append(threading.current_thread().name)
        release.wait(10)  # a disk that takes its time

    monkeypatch.setattr(writer_module, "_sync", slow_sync)
    writer = TraceWriter.create(path, durability="batch", batch_size=8)
    for seq in range(1, 7):  # header + 6 = 7 pending: the disk is stuck, yet none of these waits
        writer.append(turn_start(seq))
    started = threading.Event()
    for _ in range(1000):  # the sync thread picks up its request on its own schedule
        if sync_threads:
            started.set()
            break
        started.wait(0.01)
    assert sync_threads and threading.current_thread().name not in sync_threads
    done = threading.Event()
    appender = threading.Thread(target=lambda: (writer.append(turn_start(7)), done.set()))
    appender.start()  # the 8th pending record must wait for the sync in flight
    assert not done.wait(0.3)
    release.set()
    assert done.wait(10)
    appender.join()
    writer.close()
    assert len(lines_of(path)) == 9  # header + 7 records + the empty tail after the last newline


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_records_written_during_a_background_sync_wait_for_the_next_batch(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asking again for every record written while a sync runs would chain fdatasyncs back to back.
    release = threading.Event()
    syncs: list[int] = []

    def slow_sync(fd: int) -> None:
        syncs.append(1)
        release.wait(10)

    monkeypatch.setattr(writer_module, "_sync", slow_sync)
    writer = TraceWriter.create(path, durability="batch", batch_size=8)
    for seq in range(1, 6):  # header + 5 = 6 pending: three quarters of 8, the sync is asked
        writer.append(turn_start(seq))
    wait_until(lambda: bool(syncs))  # the sync thread is in its fdatasync, covering 6 records
    writer.append(turn_start(6))  # written while that sync runs: not worth one of its own
    release.set()
    wait_until(lambda: writer._state.durable == 6)
    time.sleep(0.2)  # time enough for a chained sync to start, were one asked
    assert writer._state.durable == 6 and len(syncs) == 1
    writer.close()
    assert len(syncs) == 2  # close synced the seventh record


def test_a_dropped_batch_writer_with_its_sync_thread_frees_the_file(path: Path) -> None:
    writer = TraceWriter.create(path, durability="batch", batch_size=4)
    for seq in range(1, 10):
        writer.append(turn_start(seq))
    state = writer._state
    wait_until(lambda: state.thread is not None and not state.in_flight)
    del writer
    gc.collect()
    with TraceWriter.resume(path) as again:  # the lock went with the collected writer, at once
        assert again.next_seq == 10
    assert state.thread is not None
    state.thread.join(5)
    assert not state.thread.is_alive()


def test_a_forked_child_keeps_the_batch_promise_without_the_parents_sync_thread(path: Path) -> None:
    writer = TraceWriter.create(path, durability="batch", batch_size=4)
    for seq in range(1, 10):
        writer.append(turn_start(seq))
    writer.flush()
    pid = os.fork()
    if pid == 0:  # the child: the parent's sync thread does not exist here
        signal.alarm(10)  # a hang would otherwise outlive the test
        try:
            for seq in range(10, 30):
                writer.append(turn_start(seq))
            writer.close()
        finally:
            os._exit(0 if writer.closed else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # neither hung nor failed
    with writer._lock:  # the parent lets its copy go without syncing what the child wrote
        thread = writer._state.stop_thread()
    assert thread is not None
    thread.join(5)
    assert writer._fd is not None
    os.close(writer._fd)
    writer._fd = None
    assert len(lines_of(path)) == 31  # header + 29 records + the empty tail


def test_a_failed_background_fsync_is_raised_by_the_next_append(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writer_module, "_sync", failing_sync)
    writer = TraceWriter.create(path, durability="batch", batch_size=4)
    with pytest.raises(TraceWriteError, match="fsync failed: Input/output error"):
        for seq in range(1, 10):
            writer.append(turn_start(seq))
    with pytest.raises(TraceWriteError, match="fsync failed"):
        writer.close()
    assert writer.closed


def test_policies_are_checked(path: Path) -> None:
    with pytest.raises(ValueError, match="durability"):
        TraceWriter.create(path, durability="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        TraceWriter.create(path, batch_size=0)


def test_a_failed_fsync_is_a_write_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = TraceWriter.create(path, durability="none")

    def failing_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writer_module, "_sync", failing_sync)
    with pytest.raises(TraceWriteError, match="fsync failed: Input/output error"):
        writer.flush()
    writer.close()


def patch_os_write(
    monkeypatch: pytest.MonkeyPatch, writer: TraceWriter, behave: Callable[[int, memoryview], int]
) -> None:
    real = os.write

    def fake(fd: int, data: bytes | memoryview) -> int:
        if fd != writer._fd:
            return real(fd, data)
        return behave(fd, memoryview(data))

    monkeypatch.setattr(os, "write", fake)


def test_short_writes_are_continued_to_a_whole_record(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = TraceWriter.create(path)
    patch_os_write(monkeypatch, writer, lambda fd, data: os.pwrite(fd, data[:7], os.fstat(fd).st_size))
    writer.append(turn_start(1, "a record that needs many seven-byte writes"))
    monkeypatch.undo()
    writer.close()
    with TraceReader(path) as reader:
        assert reader[1] == turn_start(1, "a record that needs many seven-byte writes")


def test_a_disk_full_midway_loses_nothing_and_leaves_no_torn_record(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = TraceWriter.create(path)
    writer.append(turn_start(1))
    before = path.read_bytes()
    calls = iter(range(100))

    def half_then_full(fd: int, data: memoryview) -> int:
        if next(calls) == 0:
            return os.pwrite(fd, data[:10], os.fstat(fd).st_size)
        raise OSError(errno.ENOSPC, "No space left on device")

    patch_os_write(monkeypatch, writer, half_then_full)
    with pytest.raises(TraceWriteError, match="No space left on device.*earlier record is intact"):
        writer.append(turn_start(2))
    monkeypatch.undo()
    assert path.read_bytes() == before  # the 10 bytes that made it were removed
    assert writer.next_seq == 2  # the failed seq is not consumed: retry it
    writer.append(turn_start(2))
    writer.close()
    with TraceReader(path) as reader:
        assert [reader[i] for i in (1, 2)] == [turn_start(1), turn_start(2)]
        assert reader.problems() == []


def test_a_fragment_that_cannot_be_removed_never_fuses_with_the_next_record(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = TraceWriter.create(path)
    writer.append(turn_start(1))
    calls = iter(range(100))

    def half_then_eio(fd: int, data: memoryview) -> int:
        if next(calls) == 0:
            return os.pwrite(fd, data[:10], os.fstat(fd).st_size)
        raise OSError(errno.EIO, "Input/output error")

    def no_truncate(fd: int, length: int) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    patch_os_write(monkeypatch, writer, half_then_eio)
    monkeypatch.setattr(os, "ftruncate", no_truncate)
    with pytest.raises(TraceWriteError, match="10 byte\\(s\\) of it remain"):
        writer.append(turn_start(2))
    monkeypatch.undo()
    writer.append(turn_start(2))
    writer.close()
    with TraceReader(path) as reader:
        assert reader[1] == turn_start(1)
        assert isinstance(reader[2], InvalidRecord) and reader[2].length == 10
        assert reader[3] == turn_start(2)


def test_a_fork_while_another_thread_holds_the_writers_lock_leaves_the_child_a_free_lock(path: Path) -> None:
    # The sync thread holds the lock for a moment around each fdatasync; a fork in that moment must
    # not hand the child a lock held by a thread it does not have.
    writer = TraceWriter.create(path, durability="batch", batch_size=4)
    writer.append(turn_start(1))
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with writer._state.cond:
            holding.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(5)
    threading.Timer(0.3, release.set).start()  # the fork waits for the lock, then both sides go on
    pid = os.fork()
    if pid == 0:
        signal.alarm(10)  # a child stuck on the inherited lock is killed, and the test fails
        try:
            writer.append(turn_start(2))
            writer.close()
        finally:
            os._exit(0 if writer.closed else 1)
    _, status = os.waitpid(pid, 0)
    holder.join(5)
    assert os.waitstatus_to_exitcode(status) == 0
    writer.close()

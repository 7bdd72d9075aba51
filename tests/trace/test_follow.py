"""Another process writes while we read: follow it live, and survive it being killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord
from fpdebug.trace.schema import RunEndEvent, ToolResultEvent
from fpdebug.trace.writer import TraceWriter
from tests.trace._child_writer import event

ROOT = Path(__file__).resolve().parents[2]


def start_writer(mode: str, path: Path, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.trace._child_writer", mode, str(path), str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_header(path: Path, child: subprocess.Popen[str]) -> TraceReader:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if path.exists():
            return TraceReader(path, index=False, wait_for_header=True)
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        time.sleep(0.005)
    raise AssertionError("the writer never created the trace")


def test_a_follower_sees_every_event_once_in_order_while_another_process_appends(tmp_path: Path) -> None:
    """The TUI pattern: a worker thread refreshes, the reading thread reads records as they appear."""
    path = tmp_path / "live.jsonl"
    count = 1500
    child = start_writer("steady", path, count)
    reader = wait_for_header(path, child)
    stop = threading.Event()
    errors: list[BaseException] = []
    growths: list[int] = []

    def tail() -> None:
        try:
            while not stop.is_set():
                if added := reader.refresh():
                    growths.append(added)
                time.sleep(0.001)
        except BaseException as error:  # surfaced by the assertion below
            errors.append(error)

    worker = threading.Thread(target=tail, name="tail")
    worker.start()
    seen: list[int] = []
    next_line = 1
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            while next_line < len(reader):
                record = reader[next_line]
                assert not isinstance(record, (InvalidRecord, OpaqueRecord)), record
                seen.append(record.seq)  # type: ignore[union-attr]
                next_line += 1
            if seen and seen[-1] == count + 1:
                break
            time.sleep(0.001)
    finally:
        stop.set()
        worker.join(10)
        child.wait(30)
    assert errors == []
    assert len(growths) >= 3, growths  # it really followed a growing file, not a finished one
    assert child.returncode == 0, child.stderr.read() if child.stderr else ""
    assert seen == list(range(1, count + 2))
    assert isinstance(reader[count + 1], RunEndEvent)
    first = reader[10]
    assert isinstance(first, ToolResultEvent) and first.result.startswith("#10:")
    assert reader.problems() == [] and reader.torn_tail() is None
    reader.close()


def test_a_writer_killed_mid_record_loses_only_that_record(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    child = start_writer("torn", path, 40)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        with TraceReader(path) as reader:  # while the writer still lives, the half record is ignored
            assert len(reader) == 41
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    with TraceReader(path) as reader:
        records = [record for _, record in reader.iter_records(1)]
        assert [record.seq for record in records] == list(range(1, 41))  # type: ignore[union-attr]
        assert all(isinstance(record, ToolResultEvent) for record in records)
        torn = reader.torn_tail()
        assert torn is not None and torn.line == 41 and torn.offset + torn.length == path.stat().st_size
        assert [(p.line, p.code) for p in reader.problems()] == [(41, "torn-tail")]


def test_a_writer_killed_at_an_arbitrary_moment_leaves_a_dense_prefix(tmp_path: Path) -> None:
    path = tmp_path / "flood.jsonl"
    child = start_writer("flood", path, 20)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    with TraceReader(path) as reader:
        seqs = [record.seq for _, record in reader.iter_records(1)]  # type: ignore[union-attr]
        assert len(seqs) >= 20 and seqs == list(range(1, len(seqs) + 1))
        assert [p.code for p in reader.problems()] in ([], ["torn-tail"])


def test_the_killed_trace_can_be_resumed(tmp_path: Path) -> None:
    path = tmp_path / "resumed.jsonl"
    child = start_writer("torn", path, 5)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    finally:
        child.kill()
        child.wait(30)
    with TraceWriter.resume(path) as writer:
        assert writer.next_seq == 6
        writer.append(event(6, size=10))
    with TraceReader(path) as reader:
        assert isinstance(reader[6], InvalidRecord)  # the fragment, closed off by a newline
        assert reader[7] == event(6, size=10)
        assert [p.code for p in reader.problems()] == ["invalid"]

"""A maximum line size: a longer line is reported (``line-too-long``) and skipped, never read.

On the old code a single huge line was read whole (and copied while parsing): a 2 GB line took
``validate`` to 6.2 GB of RSS, and under an address-space limit the commands died with a
MemoryError traceback, even though the line is invalid anyway.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord
from fpdebug.trace.schema import TurnStartEvent
from fpdebug.trace.writer import TraceWriter, dump_record
from tests.conftest import T0

ROOT = Path(__file__).resolve().parents[2]


def trace_with_a_long_line(path: Path, length: int, *, sparse: bool = False) -> None:
    """seq 1, then a line of ``length`` bytes, then the next record."""
    with TraceWriter.create(path) as writer:
        writer.append(TurnStartEvent(seq=1, ts=T0, run_id="r", turn=1, user_message="before"))
    with path.open("r+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        if sparse:
            handle.seek(end + length)  # a hole: NUL bytes that take no disk space
        else:
            handle.write(b"x" * length)
        handle.write(b"\n")
        # Not TraceWriter.resume: it would read the long line back to find the last seq.
        handle.write(dump_record(TurnStartEvent(seq=2, ts=T0, run_id="r", turn=2, user_message="after")))


def test_a_line_over_the_limit_is_reported_and_never_read(tmp_path: Path) -> None:
    path = tmp_path / "long.fptrace.jsonl"
    trace_with_a_long_line(path, 5000)
    with TraceReader(path, max_line_bytes=1000) as reader:
        record = reader[2]
        assert isinstance(record, InvalidRecord) and record.too_long and record.length == 5000
        assert "maximum line size" in record.error
        assert reader.raw(2) == b""
        assert [type(r).__name__ for _, r in reader.iter_records(1)] == [
            "TurnStartEvent",
            "InvalidRecord",
            "TurnStartEvent",
        ]
        assert [(p.line, p.code) for p in reader.problems()] == [(2, "line-too-long")]
    with TraceReader(path) as reader:  # under the default limit it is an ordinary invalid line
        assert [(p.line, p.code) for p in reader.problems()] == [(2, "invalid")]


def test_the_limit_is_configured_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.fptrace.jsonl"
    trace_with_a_long_line(path, 5000)
    monkeypatch.setenv("FPDEBUG_MAX_LINE_BYTES", "1000")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert ":2: offset" in out and "over the maximum line size (1000 bytes" in out
    monkeypatch.setenv("FPDEBUG_MAX_LINE_BYTES", "lots")
    assert main(["validate", str(path)]) == 2
    assert "FPDEBUG_MAX_LINE_BYTES" in capsys.readouterr().err


LIMITED = """
import resource, sys
limit = 1536 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from fpdebug.cli import main
code = main(sys.argv[1:])
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec.
status = open("/proc/self/status").read()
peak = int(status.partition("VmHWM:")[2].split()[0])
import os
os.write(2, f"\\npeak-rss-kb={peak}\\n".encode())
sys.exit(code)
"""
PEAK_RSS_KB = 400 * 1024
"""Far below the line's 300 MB: the line is never read (about 100 MB is the interpreter and its imports)."""


@pytest.mark.parametrize("command", ["validate", "summary"])
def test_a_300_mb_line_runs_under_a_1_5_gb_address_space_limit(command: str, tmp_path: Path) -> None:
    path = tmp_path / "huge.fptrace.jsonl"
    trace_with_a_long_line(path, 300 * 1024 * 1024, sparse=True)
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, command, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 1), done.stderr[-2000:]
    peak = int(done.stderr.rpartition("peak-rss-kb=")[2].split()[0])
    assert peak < PEAK_RSS_KB, f"peak RSS {peak} kB"
    if command == "validate":
        assert "over the maximum line size" in done.stdout

"""Faults during a real agent run: SIGKILL, a full disk, a second writer, a fast follower (issue 9 §1).

What the trace layer alone already proves is not repeated here (see ``tests/trace``): a bare writer
killed mid-record (``test_follow.py``), a second writer refused in this and another process, a
failed write rolled back and a fragment that cannot be removed (``test_writer.py``), a resumed
trace after a kill (``test_follow.py``). Provider failures and failing tools are in
``test_provider_faults.py``.
"""

from __future__ import annotations

import errno
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink, TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import TraceLockedError, TraceWriteError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord
from fpdebug.trace.schema import LlmRequest, RunEndEvent, ToolResultEvent, TraceEvent
from fpdebug.tui.app import FpdebugApp
from tests.conftest import T0
from tests.tui.helpers import loaded, screen_text

ROOT = Path(__file__).resolve().parents[2]


def start_child(mode: str, path: Path, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._child_agent", mode, str(path), str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(child: subprocess.Popen[str]) -> None:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    assert line == "ready", child.stderr.read() if child.stderr else line


def events_of(path: Path) -> tuple[list[TraceEvent], list[str]]:
    """Every record of the trace (asserting each is a valid event) and the problem codes."""
    with TraceReader(path) as reader:
        records = [record for _, record in reader.iter_records(1)]
        problems = [problem.code for problem in reader.problems()]
    assert not [r for r in records if isinstance(r, InvalidRecord | OpaqueRecord)]
    return records, problems  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------
# SIGKILL


@pytest.fixture(scope="module")
def killed_mid_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent killed halfway through the tool_result of its 30th step (the 10th of its 2nd run)."""
    path = tmp_path_factory.mktemp("killed") / "agent.fptrace.jsonl"
    child = start_child("torn", path, 30)
    try:
        wait_ready(child)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    return path


def test_an_agent_killed_mid_record_keeps_every_completed_record(killed_mid_record: Path) -> None:
    records, problems = events_of(killed_mid_record)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert problems == ["torn-tail"]
    first = [r for r in records if r.run_id == "r1"]
    second = [r for r in records if r.run_id == "r2"]
    assert first[-1].kind == "run_end" and first[-1].status == "completed"  # type: ignore[union-attr]
    steps = [r for r in second if isinstance(r, ToolResultEvent)]
    assert [s.args["n"] for s in steps] == list(range(1, 10))  # the 10th is the torn one
    assert second[-1].kind == "llm_call" and second[-1].iteration == 10
    with TraceReader(killed_mid_record) as reader:
        torn = reader.torn_tail()
        assert torn is not None and torn.offset + torn.length == killed_mid_record.stat().st_size
        model = RunModel.build(reader)
    assert [(run.run_id, run.status) for run in model.runs] == [("r1", "completed"), ("r2", "running")]


def test_validate_reports_the_torn_tail_and_summary_still_summarises(
    killed_mid_record: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(killed_mid_record)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "torn tail" in out
    assert main(["summary", str(killed_mid_record)]) == 0
    out = capsys.readouterr().out
    assert "1 problem (1 torn-tail" in out
    assert "run r1: completed" in out and "run r2: running" in out


@pytest.mark.anyio
async def test_the_debugger_opens_a_killed_run_and_says_it_was_cut_short(killed_mid_record: Path) -> None:
    app = FpdebugApp(killed_mid_record)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot)
        await pilot.press("G")  # the last iteration: the killed run's
        await pilot.pause()
        text = screen_text(app)
    # 1 header + 66 records of the finished run + 31 of the killed one; the torn tail is no line.
    # The status line names the torn tail (the Events view's last row), then the missing run_end.
    assert re.search(
        r"98 lines · 31 iterations · torn tail \(\d+ bytes after the last newline\)  "
        r"no run_end: the run was cut short",
        text,
    ), text
    header = text.splitlines()[1]  # the selected run's line: unfinished, in either wording
    assert "run r2 (2 of 2)" in text and ("no run_end" in header or "running" in header), header
    assert "invalid" not in text


def test_an_agent_killed_at_an_arbitrary_moment_leaves_a_readable_dense_prefix(tmp_path: Path) -> None:
    path = tmp_path / "flood.fptrace.jsonl"
    child = start_child("flood", path, 25)
    try:
        wait_ready(child)
        time.sleep(random.uniform(0.0, 0.2))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    records, problems = events_of(path)
    assert len(records) > 25 and [r.seq for r in records] == list(range(1, len(records) + 1))
    assert problems in ([], ["torn-tail"])
    assert main(["validate", str(path)]) == (1 if problems else 0)
    assert main(["summary", str(path)]) == 0


# ----------------------------------------------------------------------------------------------
# A full disk


def _chunky_agent(result_size: int) -> tuple[Agent, Callable[[], ScriptedProvider]]:
    """Eight steps whose results are ``result_size`` bytes each, then an answer."""

    def fetch(n: int) -> str:
        """Fetch one page.

        Args:
            n: The page.
        """
        return f"page {n}: " + "p" * result_size

    def respond(request: LlmRequest) -> ScriptedReply | str:
        done = sum(1 for m in request.messages if m.role == "tool")
        return ScriptedReply.tool_call("fetch", {"n": done + 1}) if done < 8 else "all pages read"

    agent = Agent("pages").tools(tool(fetch, timeout=None)).max_iterations(12)
    return agent, lambda: ScriptedProvider(respond=respond)


def _reference(agent: Agent, provider: ScriptedProvider) -> list[TraceEvent]:
    result = agent.run("read", provider=provider, sink=MemorySink(), clock=FixedClock(T0), run_id="disk")
    assert result.events is not None and result.status == "completed"
    return list(result.events)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted for the test (needs root; the ENOSPC simulation below needs nothing)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the simulated variant still runs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_run_on_a_disk_that_fills_up_fails_clearly_and_loses_nothing(tiny_disk: Path) -> None:
    agent, provider = _chunky_agent(6000)
    expected = _reference(agent, provider())
    path = tiny_disk / "run.fptrace.jsonl"
    sink = TraceFileSink.create(path, clock=FixedClock(T0), durability="every")
    with pytest.raises(TraceWriteError, match="No space left on device.*every earlier record is intact"):
        agent.run("read", provider=provider(), sink=sink, clock=FixedClock(T0), run_id="disk")
    sink.close()
    records, problems = events_of(path)
    assert problems == []  # the record that did not fit left nothing behind
    last = records[-1]
    if isinstance(last, RunEndEvent):  # the disk still had room for the small run_end
        assert last.status == "failed" and last.error is not None and last.error.type == "TraceWriteError"
        records = records[:-1]
    assert 3 < len(records) < len(expected)
    assert records == expected[: len(records)]  # every record before the failure, exactly


def test_the_cli_on_a_full_disk_exits_2_with_the_reason(
    tiny_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "pages.py"
    module.write_text(
        "from fpdebug.engine.agent import Agent\n"
        "from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply\n"
        "def fetch(n: int) -> str:\n"
        '    """Fetch.\n\n    Args:\n        n: page\n    """\n'
        "    return 'p' * 9000\n"
        "def build_agent():\n"
        "    return Agent('pages').tools(fetch).max_iterations(30)\n"
        "def scripted_provider():\n"
        "    return ScriptedProvider(respond=lambda r: ScriptedReply.tool_call('fetch', {'n': 1}))\n"
    )
    assert main(["run", str(module), "--trace", str(tiny_disk / "cli.jsonl"), "--message", "go"]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    records, problems = events_of(tiny_disk / "cli.jsonl")
    assert problems == [] and records[0].kind == "run_start"


class _DiskFiller:
    """Makes the trace writer's ``os.write`` fail with ENOSPC from its ``after``-th record on.

    With ``once``, only that record fails (space was freed meanwhile); otherwise every later one too.
    """

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, sink: TraceFileSink, *, after: int, once: bool
    ) -> None:
        self.fd = sink.writer._fd
        self.count = 0
        self.failed = 0
        self.after, self.once = after, once
        real = os.write

        def write(fd: int, data: bytes | memoryview) -> int:
            if fd != self.fd:
                return real(fd, data)
            self.count += 1
            if self.count >= self.after and not (self.once and self.failed):
                self.failed += 1
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(fd, data)

        monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("once", [False, True], ids=["disk-stays-full", "space-freed"])
def test_enospc_after_n_records_is_a_clear_error_and_run_end_failed_when_it_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, once: bool
) -> None:
    agent, provider = _chunky_agent(100)
    expected = _reference(agent, provider())
    path = tmp_path / "enospc.fptrace.jsonl"
    sink = TraceFileSink.create(path, clock=FixedClock(T0))
    filler = _DiskFiller(monkeypatch, sink, after=12, once=once)
    # Either way the failing record ends the run with a clear error; when the space came back,
    # run_end (taking the failed record's seq) says why.
    with pytest.raises(TraceWriteError, match="could not append record seq 12: No space left on device"):
        agent.run("read", provider=provider(), sink=sink, clock=FixedClock(T0), run_id="disk")
    monkeypatch.undo()
    sink.close()
    assert filler.failed == (1 if once else 2)  # the record, then the run_end attempt
    records, problems = events_of(path)
    assert problems == []
    if once:
        *before, end = records
        assert isinstance(end, RunEndEvent) and end.seq == 12 and end.status == "failed"
        assert end.error is not None and end.error.type == "TraceWriteError"
        assert "No space left on device" in end.error.message
    else:
        before = records
    assert before == expected[:11]
    if once:
        assert main(["summary", str(path)]) == 0


# ----------------------------------------------------------------------------------------------
# Two writers


def test_a_second_run_on_a_trace_being_written_is_refused_and_the_first_is_unharmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "shared.fptrace.jsonl"
    agent = Agent("first")
    with TraceFileSink.create(path) as sink:
        chat = agent.conversation(provider=ScriptedProvider(["one", "two"]), sink=sink, run_id="first")
        chat.send("hello")
        assert main(["demo", "leases", "--trace", str(path), "--overwrite"]) == 2
        assert "another writer holds this trace" in capsys.readouterr().err
        with pytest.raises(TraceLockedError):
            TraceFileSink.create(tmp_path / "shared.fptrace.jsonl", overwrite=True)
        chat.send("again")
        chat.close()
    records, problems = events_of(path)
    assert problems == [] and {r.run_id for r in records} == {"first"}
    assert records[-1].kind == "run_end" and records[-1].status == "completed"  # type: ignore[union-attr]


# ----------------------------------------------------------------------------------------------
# A fast writer and a follower


def test_a_follower_keeps_up_with_a_writer_appending_as_fast_as_it_can(tmp_path: Path) -> None:
    """Thousands of events with no pause between them: every one seen once, in order, none missing."""
    path = tmp_path / "fast.fptrace.jsonl"
    count = 6000
    child = start_child("fast", path, count)
    deadline = time.monotonic() + 60
    while not path.exists():
        alive = child.poll() is None and time.monotonic() < deadline
        assert alive, child.stderr.read() if child.stderr else ""
        time.sleep(0.001)
    reader = TraceReader(path, index=False, wait_for_header=True)
    model = RunModel(reader)
    stop = threading.Event()
    errors: list[BaseException] = []
    refreshes: list[int] = []

    def tail() -> None:
        try:
            while not stop.is_set():
                added = reader.refresh()
                if added:
                    refreshes.append(added)
        except BaseException as error:  # surfaced by the assertion below
            errors.append(error)

    worker = threading.Thread(target=tail, name="tail")
    worker.start()
    seen: list[int] = []
    try:
        next_line = 1
        while time.monotonic() < deadline and (not seen or seen[-1] != count + 2):
            while next_line < len(reader):
                record = reader[next_line]
                assert not isinstance(record, InvalidRecord | OpaqueRecord), record
                seen.append(record.seq)  # type: ignore[union-attr]
                next_line += 1
            model.update()
    finally:
        stop.set()
        worker.join(10)
        child.wait(30)
    assert errors == [] and child.returncode == 0, child.stderr.read() if child.stderr else errors
    assert seen == list(range(1, count + 3))  # no gap, no duplicate, in order
    assert len(refreshes) >= 3, refreshes  # it followed a growing file
    model.update()
    assert model.counts["tool_result"] == count and model.runs[0].status == "completed"
    assert reader.problems() == []
    reader.close()

"""SIGTERM and SIGHUP end a run cleanly (issue 7: "Quitting mid-run ends the run cleanly and loses nothing").

A driven demo (``fpdebug demo support`` in a pseudo-terminal) stepped to its second pass, then sent
SIGTERM, or hung up on (the terminal closed, then SIGHUP): the trace ends with ``run_end
{interrupted}`` and validates, the terminal is given back (the app leaves its alternate screen) and
the exit code is the conventional 143 / 129. A plain ``fpdebug run`` of a module whose tool is
working when SIGTERM arrives ends the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pytest

from fpdebug.cli import main

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
"""Seconds a step may take on two loaded cores (a right answer returns at once)."""

LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"


def kinds(trace: Path) -> list[tuple[str, str | None]]:
    """``(kind, status)`` of every complete line of ``trace``."""
    lines = [line for line in trace.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]
    records = [orjson.loads(line) for line in lines]
    return [(record["kind"], record.get("status")) for record in records]


def wait_until(condition, what: str, *, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened in {timeout:.0f} s: {what}")
        time.sleep(0.05)


class Terminal:
    """``python -m fpdebug ARGS`` on the slave side of a pseudo-terminal; the master side is drained."""

    def __init__(
        self, *args: str, cwd: Path, controlling: bool = False, env: dict[str, str] | None = None
    ) -> None:
        """``controlling``: the terminal becomes the app's controlling terminal, as in a tmux pane or an
        ssh session, so closing it (:meth:`hang_up`) makes the kernel send SIGHUP itself. ``env``:
        variables added to the child's environment."""
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        extra = env or {}
        env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
        env.update(TERM="xterm-256color", LANG="C.UTF-8", PYTHONPATH=str(ROOT), **extra)

        def take_the_terminal() -> None:  # in the child, after its setsid
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            [sys.executable, "-m", "fpdebug", *args],
            stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True,
            preexec_fn=take_the_terminal if controlling else None,
        )  # fmt: skip
        os.close(slave)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return  # the slave side closed, or we hung up
            if not chunk:
                return
            self.output += chunk

    def text(self) -> str:
        """What the app wrote so far, its escape sequences removed (cells styled apart read as one)."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", bytes(self.output).decode("utf-8", "replace"))

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def hang_up(self) -> None:
        """Close the terminal: every later write of the app fails, as when its window is closed."""
        os.close(self.master)
        self.master = -1

    def wait(self) -> int:
        try:
            return self.process.wait(timeout=WAIT)
        finally:
            self._reader.join(timeout=5)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=WAIT)
        if self.master >= 0:
            os.close(self.master)


def drive_to_the_second_pass(tmp_path: Path) -> tuple[Terminal, Path]:
    terminal = Terminal("demo", "support", "--trace", "run.fptrace.jsonl", cwd=tmp_path)
    trace = tmp_path / "run.fptrace.jsonl"
    passes = lambda: [kind for kind, _ in kinds(trace)].count("pass") if trace.exists() else 0
    try:
        wait_until(lambda: passes() == 1, "the demo paused at its first pass")
        wait_until(lambda: "paused at T1·I1" in terminal.text(), "the screen shows the paused run")
        terminal.type("s")
        wait_until(lambda: passes() == 2, "s stepped to the second pass")
    except BaseException:
        terminal.kill()  # never leave the app running behind a failed test
        raise
    return terminal, trace


def assert_ended_interrupted(trace: Path) -> None:
    records = kinds(trace)
    assert records[-1] == ("run_end", "interrupted")
    assert [kind for kind, _ in records].count("run_end") == 1
    assert main(["validate", str(trace)]) == 0


def test_sigterm_ends_a_driven_run_with_run_end_interrupted_and_gives_the_terminal_back(
    tmp_path: Path,
) -> None:
    terminal, trace = drive_to_the_second_pass(tmp_path)
    try:
        seen = len(kinds(trace))
        terminal.process.send_signal(signal.SIGTERM)
        assert terminal.wait() == 128 + signal.SIGTERM
    finally:
        terminal.kill()
    assert_ended_interrupted(trace)
    assert len(kinds(trace)) > seen  # nothing written before the signal was lost
    output = bytes(terminal.output)
    assert LEAVE_ALTERNATE_SCREEN in output  # Textual restored the terminal
    after = output[output.rindex(LEAVE_ALTERNATE_SCREEN) :]
    assert b"SIGTERM: the debugger quit and stopped the run (run_end interrupted)" in after
    assert b"run.fptrace.jsonl" in after and b"interrupted" in after


def test_a_hang_up_ends_a_driven_run_with_run_end_interrupted(tmp_path: Path) -> None:
    terminal, trace = drive_to_the_second_pass(tmp_path)
    try:
        terminal.hang_up()  # the window is gone: what the app writes now fails
        terminal.process.send_signal(signal.SIGHUP)
        assert terminal.wait() == 128 + signal.SIGHUP
    finally:
        terminal.kill()
    assert_ended_interrupted(trace)


EXIT_LIMIT = 5.0
"""Seconds a process may take to go once its terminal is closed (it takes about one)."""


def process_gone(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether ``process`` exited (and was reaped: its pid is gone) within ``timeout`` seconds."""
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return not Path(f"/proc/{process.pid}").exists()


@pytest.mark.parametrize(
    "command", [("run", "zone-trap", "--tui"), ("demo", "zone-trap")], ids=["run-tui", "demo"]
)
def test_closing_the_terminal_ends_the_process(tmp_path: Path, command: tuple[str, ...]) -> None:
    # Issue 18, item 10: a killed tmux pane left the process alive for hours, its trace ended but
    # its event loop blocked on the output of a terminal that no longer existed.
    terminal = Terminal(*command, "--trace", "run.fptrace.jsonl", cwd=tmp_path, controlling=True)
    trace = tmp_path / "run.fptrace.jsonl"
    try:
        wait_until(lambda: trace.exists() and ("pass", None) in kinds(trace), "the run paused at a pass")
        wait_until(lambda: "paused at T1·I1" in terminal.text(), "the screen shows the paused run")
        terminal.hang_up()  # the kernel hangs up: SIGHUP, and every later write fails
        gone = process_gone(terminal.process, EXIT_LIMIT)
        threads = "" if gone else str(os.listdir(f"/proc/{terminal.process.pid}/task"))
        assert gone, f"the process outlived its terminal by {EXIT_LIMIT:.0f} s (threads {threads})"
    finally:
        terminal.kill()
    assert terminal.process.returncode == 128 + signal.SIGHUP
    assert_ended_interrupted(trace)


@pytest.mark.anyio
async def test_the_debugger_keeps_drawing_into_a_closed_terminal_without_blocking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The deterministic form of the hang above. Textual's Linux driver writes through a thread and
    # a queue of 30; the first write to a closed terminal (EIO) ended that thread, so the 31st write
    # blocked the app's event loop for good, and with it every signal's clean exit.
    from textual.drivers._writer_thread import WriterThread

    from fpdebug.tui.app import FpdebugApp

    master, slave = pty.openpty()
    os.close(master)  # the terminal is gone: every write to its slave side fails with EIO
    gone = os.fdopen(slave, "w", encoding="utf-8")
    monkeypatch.setattr(sys, "__stderr__", gone)  # where Textual's driver writes the screen
    try:
        app = FpdebugApp(ROOT / "sample_traces" / "support.fptrace.jsonl")
        driver = app.driver_class(app)
        writer = WriterThread(driver._file)  # what the driver's start_application_mode makes
        writer.start()
        frames = threading.Thread(
            target=lambda: [writer.write("\x1b[H frame\n") for _ in range(200)], daemon=True
        )
        frames.start()
        frames.join(timeout=10)
        assert not frames.is_alive(), "drawing into a closed terminal blocked"
        writer.stop()
    finally:
        with contextlib.suppress(OSError):
            gone.close()


def test_sigterm_twice_still_ends_a_driven_run_once(tmp_path: Path) -> None:
    terminal, trace = drive_to_the_second_pass(tmp_path)
    try:
        terminal.process.send_signal(signal.SIGTERM)
        terminal.process.send_signal(signal.SIGTERM)
        assert terminal.wait() == 128 + signal.SIGTERM
    finally:
        terminal.kill()
    assert_ended_interrupted(trace)


SLOW_AGENT = textwrap.dedent(
    '''
    """A module for ``fpdebug run``: its one tool says ``working`` and then takes a minute."""

    import math
    import sys
    import time

    from fpdebug.engine.agent import Agent
    from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
    from fpdebug.engine.tools import tool

    USER_MESSAGES = ["do the slow job"]


    def slow(n: int) -> str:
        """Do the slow job.

        Args:
            n: Which job.
        """
        print("working", flush=True)
        time.sleep(60)
        return "done"


    def build_agent():
        return Agent("slow").system_prompt("Do the job.").tools(tool(slow, timeout=math.inf))


    def scripted_provider():
        def respond(request):
            if any(message.role == "tool" for message in request.messages):
                return "all done"
            return ScriptedReply.tool_call("slow", {"n": 1})

        return ScriptedProvider(respond=respond)
    '''
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_plain_run_as_ctrl_c_does(tmp_path: Path, signum: int) -> None:
    module = tmp_path / "slow_agent.py"
    module.write_text(SLOW_AGENT)
    trace = tmp_path / "slow.fptrace.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-m", "fpdebug", "run", str(module), "--trace", str(trace)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "working"  # the tool is running: the model call is written
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=WAIT)
    assert child.returncode == 128 + signum
    assert "fpdebug run: interrupted" in stderr and "Traceback" not in stderr
    assert_ended_interrupted(trace)
    assert ("llm_call", None) in kinds(trace)  # the billed call that asked for the tool is kept


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_a_demo_without_the_debugger_as_ctrl_c_does(
    tmp_path: Path, signum: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.engine.providers.scripted import ScriptedProvider

    complete = ScriptedProvider.complete
    calls: list[int] = []

    def signalled_on_the_second_call(self: ScriptedProvider, request):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signum)  # delivered to this (main) thread at once
        return complete(self, request)

    monkeypatch.setattr(ScriptedProvider, "complete", signalled_on_the_second_call)
    trace = tmp_path / "demo.fptrace.jsonl"
    before = signal.getsignal(signum)
    assert main(["demo", "support", "--no-tui", "--trace", str(trace)]) == 128 + signum
    assert "interrupted" in capsys.readouterr().err
    assert_ended_interrupted(trace)
    assert len(calls) == 2  # the run stopped at the signal: no third call
    assert signal.getsignal(signum) == before  # the demo's handlers are gone again


def test_ending_signals_restores_the_previous_handlers_and_keeps_an_ignored_hang_up_ignored() -> None:
    from fpdebug.commands.run import ending_signals

    def mine(_signum: int, _frame: object) -> None:
        raise AssertionError("not called")

    before = signal.signal(signal.SIGTERM, mine), signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        seen: list[int] = []
        with ending_signals(seen.append):
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN  # as under nohup
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)
            wait_until(lambda: seen == [signal.SIGTERM], "the SIGTERM reached the block's handler", timeout=5)
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGHUP, before[1])


def drive_app(tmp_path: Path):
    from fpdebug.demo.registry import load_scenario
    from fpdebug.tui.app import TraceSource
    from fpdebug.tui.drive import DriveApp, RunDriver

    path = tmp_path / "driven.fptrace.jsonl"
    driver = RunDriver(load_scenario("support"), trace_path=path, durability="none")
    return DriveApp(TraceSource(path, "drive"), controller=driver), driver


async def exited(app) -> None:
    """Wait until ``app`` has been told to exit (``q``'s ``exit()``), as the signal asks."""
    import asyncio

    deadline = time.monotonic() + WAIT
    while app.return_code is None:
        assert time.monotonic() < deadline, "the app never exited"
        await asyncio.sleep(0.05)


@pytest.mark.anyio
async def test_a_signal_while_the_app_runs_quits_it_as_q_does(tmp_path: Path) -> None:
    app, driver = drive_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        while driver.gate.status.state != "paused":  # paused on the first pass
            await pilot.pause(0.05)
        app.quit_from_signal()  # what the handler does, on the app's own thread
        await exited(app)
    assert driver.wait(WAIT)
    assert driver.result is not None and driver.result.result.status == "interrupted"
    assert_ended_interrupted(driver.trace_path)


@pytest.mark.anyio
async def test_a_signal_before_the_app_is_up_quits_it_once_mounted(tmp_path: Path) -> None:
    app, driver = drive_app(tmp_path)
    app.quit_from_signal()  # no loop yet: remembered for the mount
    async with app.run_test(size=(160, 48)):
        await exited(app)
    assert driver.wait(WAIT)
    assert driver.result is not None and driver.result.result.status == "interrupted"
    assert_ended_interrupted(driver.trace_path)

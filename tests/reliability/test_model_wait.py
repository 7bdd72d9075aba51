"""Leaving the debugger while its run waits on a model that never answers takes a moment, not the timeout.

Issue 18, item 7: "every way out ends the process … while paused, running or waiting on the model".
Quitting stopped the run at its next event, and a model call is not one: the run's thread sat in the
provider's HTTP request until the reply or the SDK's timeout (ten minutes by default), and the
process with it. Here the OpenAI provider's real SDK talks to a local server that accepts the
connection, reads the request and never answers; the debugger (``fpdebug run zone-trap --tui
--start running``) is left with ``q`` or a closed terminal (SIGHUP) while it waits (SIGTERM and
``ctrl+q`` take the paths of these two). ``test_model_call.py`` holds the wrapper's unit tests.
The process must be gone within :data:`EXIT_LIMIT`, and its trace end ``run_end {interrupted}``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability.test_signals import (
    ROOT,
    WAIT,
    Terminal,
    assert_ended_interrupted,
    kinds,
    process_gone,
    wait_until,
)

EXIT_LIMIT = 10.0
"""Seconds the process may take to go. It goes as fast as quitting a paused run with no call in
flight (3.5 s against 4.5 s, both measured at a load average of 13 on two cores, most of it the
app's own shutdown); the slack is for that load. The provider's timeout is the SDK's default,
600 s: a process that waited for it fails by far."""


class SilentServer:
    """Accepts connections on loopback, reads what arrives, and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = 0
        self._held: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self._held.append(connection)
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        seen = b""
        try:
            while b"\r\n\r\n" not in seen:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                seen += chunk
        except OSError:
            return
        self.requests += 1  # a whole request head: the model call is under way; it gets no answer

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        for connection in self._held:
            connection.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def waiting_on_the_model(
    tmp_path: Path, silent: SilentServer, *, controlling: bool = False
) -> tuple[Terminal, Path]:
    trace = tmp_path / "run.fptrace.jsonl"
    terminal = Terminal(
        "run", "zone-trap", "--tui", "--start", "running", "--trace", trace.name,
        "--provider", "openai", "--model", "gpt-test", "--base-url", f"http://127.0.0.1:{silent.port}/v1",
        cwd=tmp_path, controlling=controlling,
        env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0123456789"},
    )  # fmt: skip
    try:
        wait_until(lambda: silent.requests >= 1, "the run's first model call reached the server")
        wait_until(
            lambda: trace.exists() and ("pass", None) in kinds(trace), "the pass before the call is written"
        )
    except BaseException:
        terminal.kill()
        raise
    return terminal, trace


def exits_promptly(terminal: Terminal, act: Callable[[], object]) -> float:
    began = time.monotonic()
    act()
    gone = process_gone(terminal.process, EXIT_LIMIT)
    took = time.monotonic() - began
    threads = "" if gone else str(os.listdir(f"/proc/{terminal.process.pid}/task"))
    assert gone, (
        f"the process still waited on the model {EXIT_LIMIT:.0f} s after it was told to go ({threads})"
    )
    return took


def test_quitting_while_the_model_is_silent_ends_the_process_at_once(
    tmp_path: Path, silent: SilentServer
) -> None:
    terminal, trace = waiting_on_the_model(tmp_path, silent)
    try:
        exits_promptly(terminal, lambda: terminal.type("q"))
    finally:
        terminal.kill()
    assert terminal.process.returncode == 130  # interrupted, as for a quit before the end
    assert_ended_interrupted(trace)
    assert ("llm_call", None) not in kinds(trace)  # the call had no reply: nothing is invented for it
    assert "interrupted" in terminal.text()


def test_closing_the_terminal_while_the_model_is_silent_ends_the_process_at_once(
    tmp_path: Path, silent: SilentServer
) -> None:
    terminal, trace = waiting_on_the_model(tmp_path, silent, controlling=True)
    try:
        exits_promptly(terminal, terminal.hang_up)  # the kernel sends SIGHUP
    finally:
        terminal.kill()
    assert terminal.process.returncode == 128 + signal.SIGHUP
    assert_ended_interrupted(trace)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl+c", "SIGHUP"])
def test_a_plain_run_waiting_on_a_silent_model_ends_at_the_signal(
    tmp_path: Path, silent: SilentServer, signum: int
) -> None:
    # Without the debugger the run is on the main thread, where the signal lands: the blocked read
    # is interrupted and the run ends as Ctrl-C ends it.
    trace = tmp_path / "plain.fptrace.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test-not-a-real-key-0123456789")
    child = subprocess.Popen(
        [sys.executable, "-m", "fpdebug", "run", "zone-trap", "--trace", str(trace), "--provider", "openai",
         "--model", "gpt-test", "--base-url", f"http://127.0.0.1:{silent.port}/v1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: silent.requests >= 1, "the run's first model call reached the server")
        began = time.monotonic()
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=EXIT_LIMIT)
        took = time.monotonic() - began
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=WAIT)
    assert took < EXIT_LIMIT
    assert child.returncode == 128 + signum
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert_ended_interrupted(trace)

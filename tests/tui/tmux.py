"""A real terminal for the TUI tests: the app runs in tmux and the screen is read as a person reads it.

Every tmux server is private (its own ``-L`` socket, unique per test), every wait polls the screen
against a deadline (never a fixed sleep), every tmux call has a timeout, and the fixture kills the
server *and* whatever its panes still run when the test ends, passed or failed. CI runs the suite
on two loaded cores, so the deadlines are generous: a screen that is right returns at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (``python -m fpdebug`` runs from here)."""

WAIT = 60.0
"""Seconds a screen may take to show what a step expects."""

CALL_TIMEOUT = 30.0
"""Seconds one tmux command may take."""

READY = "lines ·"
"""In the status bar once the first load is done (``N lines · M iterations``): keys can go."""


class Tmux:
    """One detached tmux session on a private server."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def run(self, *args: str) -> str:
        """Run a tmux command on this server; its stdout."""
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT,
        ).stdout

    def start(self, command: str, *, size: tuple[int, int] = (160, 48), cwd: Path = ROOT) -> None:
        """Start ``command`` (a shell line) in the session's only pane, in a UTF-8 xterm of ``size``.

        ``sleep`` keeps the pane (and what the command printed last) on screen after it exits.
        """
        # COLUMNS / LINES inherited from the test runner would override the pane's real size.
        line = f"cd {cwd} && env -u COLUMNS -u LINES {command}; sleep 120"
        self.run(
            "new-session", "-d", "-s", self.session, "-x", str(size[0]), "-y", str(size[1]),
            "-e", "LANG=C.UTF-8", "-e", "TERM=xterm-256color", line,
        )  # fmt: skip

    def fpdebug(self, *args: str, size: tuple[int, int] = (160, 48), cwd: Path = ROOT) -> None:
        """Start ``python -m fpdebug ARGS…``, then print its exit code as ``EXIT=<code>``."""
        self.start(f"{sys.executable} -m fpdebug {' '.join(args)}; echo EXIT=$?", size=size, cwd=cwd)

    def keys(self, *keys: str, literal: bool = False) -> None:
        """Type ``keys`` (tmux key names, or text with ``literal``)."""
        self.run("send-keys", "-t", self.session, *(["-l"] if literal else []), *keys)

    def screen(self) -> str:
        """What the pane shows now."""
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, condition: Callable[[str], bool], *, timeout: float = WAIT) -> str:
        """Poll the screen until ``condition`` holds; return that screen (fail with what it shows)."""
        deadline = time.monotonic() + timeout
        text = self.screen()
        while not condition(text):
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never matched in {timeout:.0f} s; it shows:\n{text}")
            time.sleep(0.05)
            text = self.screen()
        return text

    def kill(self) -> None:
        """Kill the server and every process its panes run (a killed pane's program could outlive it)."""
        try:
            listed = self.run("list-panes", "-a", "-F", "#{pane_pid}")
        except (subprocess.SubprocessError, OSError):
            listed = ""
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], check=False, capture_output=True, timeout=CALL_TIMEOUT
        )
        for pid in (int(word) for word in listed.split() if word.isdigit()):
            try:
                os.killpg(pid, signal.SIGKILL)  # a pane's program leads its own process group
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A tmux server of our own; it and everything it runs are killed at the end, whatever happened."""
    assert shutil.which("tmux"), "tmux is required for this test (apt-get install -y tmux)"
    terminal = Tmux(f"fpdebug-test-{os.getpid()}-{uuid.uuid4().hex[:8]}", "fpdebug")
    try:
        yield terminal
    finally:
        terminal.kill()


def rows(screen: str, marker: str = "│T1·I") -> list[str]:
    """The first cell of every timeline row on ``screen`` (``T1·I3``…)."""
    return [line.split()[0].strip("│") for line in screen.splitlines() if marker in line]

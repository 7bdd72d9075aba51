"""Drive the real ``fpdebug view`` in a real terminal (tmux) and read the screen as a person would.

Open a sample trace, move to the iteration whose pass prunes a lease, open the leases view, then
search and filter; each step is checked on ``tmux capture-pane`` text. tmux runs on a private
socket, so the test never touches another tmux server. CI installs tmux (``.ci/run``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.tui.traces import sample

pytestmark = pytest.mark.tmux

ROOT = Path(__file__).resolve().parents[2]


class Tmux:
    """One detached tmux session on a private server."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True, timeout=20
        ).stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", self.session, *(["-l"] if literal else []), *keys)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, condition: Callable[[str], bool], *, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        text = self.screen()
        while not condition(text):
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never matched; it shows:\n{text}")
            time.sleep(0.05)
            text = self.screen()
        return text


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A tmux server of our own; it is killed at the end."""
    assert shutil.which("tmux"), "tmux is required for this test (apt-get install -y tmux)"
    socket = f"fpdebug-test-{os.getpid()}"
    yield Tmux(socket, "fpdebug")
    subprocess.run(["tmux", "-L", socket, "kill-server"], check=False, capture_output=True, timeout=20)


def test_open_move_to_a_prune_open_leases_search_and_filter(tmux: Tmux) -> None:
    trace = sample("support")
    # COLUMNS / LINES inherited from the test runner would override the pane's real size.
    command = f"cd {ROOT} && env -u COLUMNS -u LINES {sys.executable} -m fpdebug view {trace}; sleep 30"
    tmux.run(
        "new-session",
        "-d",
        "-s",
        tmux.session,
        "-x",
        "160",
        "-y",
        "48",
        "-e",
        "LANG=C.UTF-8",
        "-e",
        "TERM=xterm-256color",
        command,
    )

    # open: the header, the timeline and the first iteration's inspector
    screen = tmux.wait_for(lambda s: "Iteration 1 · turn 1" in s and "T1·I5" in s)
    assert "run sample-support" in screen and "■ completed" in screen

    # move to the iteration whose pass prunes a lease (next-call wire-format, spent)
    tmux.keys("]", "]", literal=True)
    screen = tmux.wait_for(lambda s: "Iteration 3 · turn 1" in s)
    assert "pruned  at evaluate" in screen
    assert "spent  wire-format next-call" in screen

    # the leases view: one row per lease, the selected iteration's column, how each ended
    tmux.keys("2", literal=True)
    screen = tmux.wait_for(lambda s: "granted by" in s and "tenure-ended T1·I4" in s)
    assert "spent T1·I3" in screen
    assert "refund-policy" in screen and "wire-format" in screen

    # search and filter the leases: only the one whose tenure ended stays
    tmux.keys("/", literal=True)
    tmux.wait_for(lambda s: "esc Close" in s)  # the prompt has the focus
    tmux.keys("tenure", literal=True)
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "filter tenure 1 match" in s)
    rows = [line for line in screen.splitlines() if "granted by" not in line and "@I2" in line]
    assert len(rows) == 1 and "refund-policy" in rows[0]

    # filter the timeline by kind: the two pruning iterations remain, n walks them
    tmux.keys("1", literal=True)
    tmux.wait_for(lambda s: "act  ls  pk" in s)
    tmux.keys("/", literal=True)
    tmux.wait_for(lambda s: "esc Close" in s)
    tmux.keys("kind:lease_prune", literal=True)
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "filter kind:lease_prune 2 matches" in s)
    timeline_rows = [line for line in screen.splitlines() if "│T1·I" in line]
    assert [row.split()[0].strip("│") for row in timeline_rows] == ["T1·I3", "T1·I4"]
    tmux.keys("n", literal=True)
    tmux.wait_for(lambda s: "Iteration 4 · turn 1" in s)

    tmux.keys("q", literal=True)
    tmux.wait_for(lambda s: "Iteration" not in s)

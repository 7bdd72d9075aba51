"""A path that is not a regular file is refused at once, never waited on.

Opening a FIFO blocks until its other end appears, so a check made after ``open()`` never runs:
every command hung for ever on one. Each command here runs in a child with a deadline; on the old
code the child was still blocked in ``open()`` when the deadline came.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DEADLINE = 30.0
"""Seconds a refusal may take on a loaded machine (it takes well under one on an idle one)."""

COMMANDS = [
    ["validate", "{fifo}"],
    ["summary", "{fifo}"],
    ["report", "{fifo}"],
    ["export", "{fifo}"],
    ["backtrack", "{fifo}"],
    ["view", "{fifo}"],
    ["diff", "{fifo}", "{fifo}"],
    ["view", "--follow", "{fifo}"],
    ["run", "support", "--trace", "{fifo}"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda words: " ".join(words[:-1] or words))
def test_every_command_refuses_a_fifo_without_waiting(command: list[str], tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fptrace.jsonl"
    os.mkfifo(fifo)
    argv = [word.format(fifo=fifo) for word in command]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "fpdebug", *argv],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"fpdebug {' '.join(argv)} was still waiting on the FIFO after {DEADLINE} s")
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_character_device_is_refused_too(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fpdebug", "validate", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "not a regular file" in done.stderr

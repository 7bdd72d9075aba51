"""The terminal is not an attack surface: every command's raw output, and the debugger's (issue 9 §4).

A hostile trace is recorded by a real agent run whose user message, replies, tool calls, tool results,
run id and injection id carry Rich markup, ANSI CSI/OSC sequences (clear screen, an OSC 52 clipboard
write, an OSC 8 hyperlink, a title change), an 8-bit C1 CSI and a bidi override; bad lines carrying
the same are appended, and the file itself has a hostile name. Then the raw bytes each command
writes to the terminal (file descriptors 1 and 2) are searched, and ``fpdebug view`` runs under a
pseudo-terminal (raw bytes) and under tmux (the screen a person sees).

Per-view checks of the debugger's own rendering are in ``tests/tui/test_app.py::TestUntrusted``;
``validate``/``summary``/``run``/``report`` each have a focused inert test in ``tests/cli`` and
``tests/export``; the rendering fuzz is in ``test_fuzz.py``. Here: all of them on one hostile
trace, at the byte level.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from bench.fuzz import unsafe_characters
from fpdebug.cli import main
from tests.tui.test_tmux import Tmux, tmux  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]

PAYLOAD = (
    "[bold red]RED[/] [link=https://evil.example]LINK[/link] "
    "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]8;;https://evil.example\x1b\\X\x1b]8;;\x1b\\"
    "\x1b]0;pwned\x07\x9b31m\u202eevil"
)
"""Markup, clear screen, OSC 52 clipboard write, OSC 8 link, title change, 8-bit CSI, bidi override."""

NAME_PAYLOAD = "\x1b]0;pwned\x07\x1b[2J\u202e[bold red]N"
"""What a file name can hold (no slash)."""

MODULE = f'''
"""A scenario whose every string is hostile."""
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_steering
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply

PAYLOAD = {PAYLOAD!r}
USER_MESSAGES = ["hello " + PAYLOAD]


def fetch(what: str) -> str:
    """Fetch something.

    Args:
        what: What to fetch.
    """
    return "fetched " + what + " " + PAYLOAD


def build_agent() -> Agent:
    steering = define_steering("tone" + PAYLOAD, prompt="Be brief. " + PAYLOAD)
    return Agent("hostile").system_prompt(PAYLOAD).injections(steering).tools(fetch).max_iterations(4)


def scripted_provider() -> ScriptedProvider:
    return ScriptedProvider([
        ScriptedReply.batch(ScriptedCall("fetch", {{"what": PAYLOAD}}, id="call" + PAYLOAD), content=PAYLOAD),
        "answer " + PAYLOAD,
    ])
'''

# What must never reach a terminal from the payload (Textual's own drawing codes are checked apart).
FORBIDDEN = [b"\x1b]52;", b"\x1b]8;", b"\x1b]0;", b"\x1b[2J", "\u202e".encode(), "\x9b".encode()]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hostile trace: a real run of the module above, then bad lines, under a hostile name."""
    directory = tmp_path_factory.mktemp("hostile")
    module = directory / "hostile_scenario.py"
    module.write_text(MODULE)
    trace = directory / f"trace{NAME_PAYLOAD}.jsonl"
    assert main(["run", str(module), "--trace", str(trace), "--run-id", "run" + PAYLOAD]) == 0
    with trace.open("ab") as handle:
        handle.write(b'{"kind":"pass","seq":99,"oops ' + PAYLOAD.encode() + b"\n")  # not JSON
        handle.write(json.dumps({"kind": "x" + PAYLOAD, "seq": 100, "note": PAYLOAD}).encode() + b"\n")
        wrong = {"kind": "tool_result", "seq": 101, "ts": PAYLOAD, "run_id": PAYLOAD, "tool_name": 5}
        handle.write(json.dumps(wrong, ensure_ascii=False).encode() + b"\n")
    return trace


def _check(raw: bytes, *, command: str) -> str:
    """The raw bytes decoded (strictly), asserting nothing in them would be obeyed."""
    text = raw.decode("utf-8")
    for needle in FORBIDDEN:
        assert needle not in raw, (command, needle)
    assert b"\x1b" not in raw and b"\x07" not in raw, command
    assert not unsafe_characters(text), (command, unsafe_characters(text))
    return text


COMMANDS = {
    "validate": (["validate", "{trace}"], 1),
    "summary": (["summary", "{trace}"], 0),
    "summary --json": (["summary", "--json", "{trace}"], 0),
    "backtrack": (["backtrack", "{trace}", "--no-save"], 0),
    "backtrack --json": (["backtrack", "{trace}", "--json", "--no-save"], 0),
    "report": (["report", "{trace}"], 0),
    "report --format json": (["report", "{trace}", "--format", "json"], 0),
    "export": (["export", "{trace}", "--include-content"], 0),
    "runs": (["runs", "{trace}", "--no-cache"], 0),
    "runs --json": (["runs", "{trace}", "--json", "--no-cache"], 0),
    "summary of a missing hostile path": (["summary", "{trace}.missing"], 2),
    "view of a missing hostile path": (["view", "{trace}.missing"], 2),
    "diff --partial": (["diff", "--partial", "{trace}", "{trace}"], 0),
    "diff of a missing hostile path": (["diff", "{trace}", "{trace}.missing"], 2),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_command_writes_anything_a_terminal_would_obey(
    hostile: Path, capfdbinary: pytest.CaptureFixture[bytes], name: str
) -> None:
    argv, expected = COMMANDS[name]
    assert main([arg.format(trace=hostile) for arg in argv]) == expected
    out, err = capfdbinary.readouterr()
    shown = _check(out, command=name) + _check(err, command=name)
    # The payload was there to be shown, and was shown escaped (or JSON-escaped): not dropped.
    assert "\\x1b" in shown or "\\u001b" in shown, name


def test_the_run_and_demo_printouts_show_the_payload_literally(
    hostile: Path, tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    module = hostile.parent / "hostile_scenario.py"
    trace = tmp_path / f"again{NAME_PAYLOAD}.jsonl"
    assert main(["run", str(module), "--trace", str(trace), "--run-id", "r" + PAYLOAD]) == 0
    out, err = capfdbinary.readouterr()
    text = _check(out, command="run") + _check(err, command="run")
    assert "Final answer: answer [bold red]RED[/] [link=https://evil.example]LINK[/link]" in text
    assert "\\x1b]52;c;ZXZpbA==\\x07" in text and "\\u202eevil" in text
    assert main(["demo", "leases", "--trace", str(tmp_path / f"demo{NAME_PAYLOAD}.jsonl")]) == 0
    out, err = capfdbinary.readouterr()
    text = _check(out, command="demo") + _check(err, command="demo")
    assert "\\x1b]0;pwned\\x07" in text  # the hostile file name, shown


# ----------------------------------------------------------------------------------------------
# The debugger, in a real terminal


def _view_under_pty(trace: Path, keys: list[bytes]) -> bytes:
    """Run ``fpdebug view`` on a pseudo-terminal, press ``keys``, quit; return every byte it wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", LANG="C.UTF-8")
    child = subprocess.Popen(
        [sys.executable, "-m", "fpdebug", "view", str(trace)],
        cwd=ROOT,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    out = bytearray()

    def pump(seconds: float, until: bytes | None = None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    out.extend(os.read(master, 1 << 16))
                except OSError:
                    return
            if until is not None and until in out:
                return

    try:
        pump(30, until="lines ·".encode())  # the first screen has been drawn
        pump(0.5)
        for key in keys:
            os.write(master, key)
            pump(0.6)
        os.write(master, b"q")
        # The keys were sent blindly; the app works through them in order and quits at the q. On a
        # loaded machine that backlog takes tens of seconds of wall time (the view switches are
        # CPU-bound in Textual's style updates; schema 1 and 2 traces cost the same CPU), so wait
        # for the exit, not a fixed time: pump returns as soon as the child closes the terminal.
        pump(90)
        assert child.wait(10) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        os.close(master)
    return bytes(out)


def test_the_debugger_sends_no_payload_sequence_to_the_terminal(hostile: Path) -> None:
    # Every view: passes, calls (expanded), events (to the bad lines at the end), leases, help.
    raw = _view_under_pty(hostile, [b"3", b"e", b"4", b"G", b"k", b"k", b"2", b"1", b"]", b"?", b"\x1b"])
    for needle in FORBIDDEN:
        assert needle not in raw, needle
    # Textual's own OSC is the mouse-pointer shape (OSC 22): any other OSC would be the payload's.
    assert set(re.findall(rb"\x1b\](\d+);", raw)) <= {b"22"}
    text = raw.decode("utf-8")
    assert not {c for c in text if 0x80 <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E}
    assert "\\x1b]52;c;ZXZpbA==" in text  # the payload was on screen, escaped


@pytest.mark.tmux
def test_the_debugger_shows_markup_and_escapes_literally_on_screen(
    hostile: Path,
    tmux: Tmux,
    tmp_path: Path,
) -> None:
    assert shutil.which("tmux"), "tmux is required (apt-get install -y tmux)"
    plain_name = tmp_path / "hostile.fptrace.jsonl"  # the hostile file name is the pty test's
    plain_name.symlink_to(hostile)
    command = f"cd {ROOT} && env -u COLUMNS -u LINES {sys.executable} -m fpdebug view {plain_name}; sleep 30"
    tmux.run(
        "new-session",
        "-d",
        "-s",
        tmux.session,
        "-x",
        "200",
        "-y",
        "50",
        "-e",
        "LANG=C.UTF-8",
        "-e",
        "TERM=xterm-256color",
        command,
    )
    # The inspector is drawn a frame after the rows (the first screen paints the timeline first):
    # wait for its escaped text, which fails with the screen shown if it never comes.
    screen = tmux.wait_for(lambda s: "lines ·" in s and "\\u202eevil" in s)
    assert "[bold red]RED[/]" in screen and "[link=https://evil.example]LINK[/link]" in screen
    assert "\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07" in screen and "\\u202eevil" in screen
    tmux.keys("3", literal=True)  # the call view: the system prompt, the reply, the tool call id
    screen = tmux.wait_for(lambda s: "SYSTEM PROMPT" in s)
    assert "[bold red]RED[/]" in screen and "\\x9b31m" in screen
    tmux.keys("4", literal=True)
    tmux.keys("G", literal=True)  # the events view at the bad lines
    screen = tmux.wait_for(lambda s: "INVALID" in s)
    assert "\u202e" not in screen and "\x1b" not in screen
    tmux.keys("q", literal=True)
    tmux.wait_for(lambda s: "lines ·" not in s)

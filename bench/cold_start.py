"""Cold start of the debugger: process start to the first full screen of ``fpdebug view`` on a small trace.

Usage::

    .venv/bin/python -m bench.cold_start                  # sample_traces/support.fptrace.jsonl, 10 runs
    .venv/bin/python -m bench.cold_start --repeat 20 --trace PATH

Each run starts ``fpdebug view TRACE`` in a child process on a pseudo-terminal of 120×35 (the real
Linux driver, as a user's terminal would run it) and times it from just before the process is
spawned to the moment the trace screen signals its first paint (the ``first_paint`` event the
screen sets once its first rows have been rendered and refreshed); the child then exits at once.
The baseline is ``python -c pass`` spawned the same way, one run of it alternated with each run of
the viewer so that a noisy neighbour on a shared machine hits both alike. Medians and their ratio
are printed; the target (issue 20) is under 0.5 s.

The child is ``python -c BOOTSTRAP``: it wraps the loader so the first paint writes a
``time.monotonic()`` stamp (``CLOCK_MONOTONIC``, comparable between processes of one machine) to
a pipe, then runs :func:`fpdebug.cli.main` with ``view TRACE``, the same code path as the command.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run import Figure

__all__ = ["TARGET_S", "ColdStart", "figure", "main", "measure"]

ROOT = Path(__file__).resolve().parent.parent
SMALL_TRACE = ROOT / "sample_traces" / "support.fptrace.jsonl"
TARGET_S = 0.5
"""Issue 20's target for the first full screen of a small trace."""
SIZE = (120, 35)
"""The pseudo-terminal (columns, rows)."""
TIMEOUT_S = 60.0

BOOTSTRAP = r"""
import os, sys, time
fd, trace = int(sys.argv[1]), sys.argv[2]
from fpdebug.tui.screens.loader import TraceLoader  # `fpdebug view` imports it too
_init = TraceLoader.__init__
def _noting_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    def painted():
        os.write(fd, repr(time.monotonic()).encode() + b"\n")
        os._exit(0)
    self.first_paint.set = painted
TraceLoader.__init__ = _noting_init
from fpdebug.cli import main
raise SystemExit(main(["view", trace]))
"""


@dataclass(frozen=True)
class ColdStart:
    """The runs of one measurement, in seconds."""

    view_s: list[float]
    """Process start to first full screen of ``fpdebug view``, each run (wall)."""
    python_s: list[float]
    """Process start to exit of ``python -c pass``, each run (wall)."""
    view_cpu_s: list[float]
    """CPU time (user + system) the viewer's process used up to its first full screen, each run."""
    python_cpu_s: list[float]
    """CPU time of ``python -c pass``, each run."""

    @property
    def view(self) -> float:
        """Median of :attr:`view_s`."""
        return statistics.median(self.view_s)

    @property
    def python(self) -> float:
        """Median of :attr:`python_s`."""
        return statistics.median(self.python_s)

    @property
    def ratio(self) -> float:
        """The viewer's median over the bare interpreter's."""
        return self.view / self.python

    @property
    def view_cpu(self) -> float:
        """Median of :attr:`view_cpu_s`."""
        return statistics.median(self.view_cpu_s)

    @property
    def python_cpu(self) -> float:
        """Median of :attr:`python_cpu_s`."""
        return statistics.median(self.python_cpu_s)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    env["TERM"] = env.get("TERM") or "xterm-256color"
    if env["TERM"] == "dumb":
        env["TERM"] = "xterm-256color"
    env.pop("TEXTUAL_DRIVER", None)
    return env


def _drain(fd: int) -> None:
    """Read the pty until it closes, so the child never blocks writing its screen."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass  # EIO: the child side closed


def _reap(child: subprocess.Popen[bytes]) -> float:
    """Wait for ``child`` to exit; return the CPU time (user + system) it used."""
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _view_once(trace: Path, env: dict[str, str]) -> tuple[float, float]:
    """One run: spawn the viewer on a fresh pty, wait for its first-paint stamp; (wall, CPU)."""
    master, slave = pty.openpty()
    columns, rows = SIZE
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    stamp_read, stamp_write = os.pipe()
    drainer = threading.Thread(target=_drain, args=(master,), daemon=True)
    drainer.start()
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", BOOTSTRAP, str(stamp_write), str(trace)],
        cwd=ROOT,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        pass_fds=(stamp_write,),
        start_new_session=True,
    )
    os.close(slave)
    os.close(stamp_write)
    try:
        ready, _, _ = select.select([stamp_read], [], [], TIMEOUT_S)
        stamp = os.read(stamp_read, 64) if ready else b""
        if not stamp.strip():
            os.killpg(child.pid, signal.SIGKILL)
            raise RuntimeError("fpdebug view gave no first paint")
        wall = float(stamp) - started
        return wall, _reap(child)  # the child exits right after its stamp
    finally:
        os.close(stamp_read)
        if child.returncode is None:
            os.killpg(child.pid, signal.SIGKILL)
            _reap(child)
        os.close(master)
        drainer.join(timeout=5)


def _python_once(env: dict[str, str]) -> tuple[float, float]:
    """One run of the baseline: ``python -c pass``, spawn to exit; (wall, CPU)."""
    started = time.monotonic()
    cpu = _reap(subprocess.Popen([sys.executable, "-c", "pass"], cwd=ROOT, env=env))
    return time.monotonic() - started, cpu


def measure(trace: Path = SMALL_TRACE, *, repeat: int = 10) -> ColdStart:
    """Alternate ``repeat`` runs of the viewer with ``repeat`` runs of ``python -c pass``."""
    env = _env()
    _view_once(trace, env)  # warm the page cache and the bytecode caches; not counted
    python: list[tuple[float, float]] = []
    view: list[tuple[float, float]] = []
    for _ in range(repeat):
        python.append(_python_once(env))
        view.append(_view_once(trace, env))
    return ColdStart(
        [wall for wall, _ in view],
        [wall for wall, _ in python],
        [cpu for _, cpu in view],
        [cpu for _, cpu in python],
    )


def figure(trace: Path = SMALL_TRACE, *, repeat: int = 10) -> Figure:
    """The row of ``python -m bench``'s table."""
    from bench.run import Figure  # at run time: bench.run imports the trace generators

    result = measure(trace, repeat=repeat)
    return Figure(
        "2c",
        f"cold start: process start -> first full screen, fpdebug view {trace.name}",
        f"{result.view * 1000:.0f} ms (median of {repeat})",
        f"python -c pass {result.python * 1000:.0f} ms",
        f"{result.ratio:.1f}x",
        f"< {TARGET_S * 1000:.0f} ms",
        result.view < TARGET_S,
        raw={
            "view_s": result.view_s,
            "python_s": result.python_s,
            "view_cpu_s": result.view_cpu_s,
            "python_cpu_s": result.python_cpu_s,
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.cold_start [--trace PATH] [--repeat N]``: measure and print the medians."""
    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trace", type=Path, default=SMALL_TRACE, help="the trace to open (default: support)"
    )
    parser.add_argument("--repeat", type=int, default=10, help="runs of each, alternated (default 10)")
    args = parser.parse_args(argv)
    result = measure(args.trace, repeat=args.repeat)
    print(f"fpdebug view {args.trace.name} ({SIZE[0]}x{SIZE[1]} pty), process start -> first full screen")
    print("  view runs (ms):   " + " ".join(f"{s * 1000:.0f}" for s in result.view_s))
    print("  python runs (ms): " + " ".join(f"{s * 1000:.0f}" for s in result.python_s))
    print("  view CPU (ms):     " + " ".join(f"{s * 1000:.0f}" for s in result.view_cpu_s))
    print(f"  median fpdebug view     {result.view * 1000:6.0f} ms (CPU {result.view_cpu * 1000:.0f} ms)")
    print(f"  median python -c pass   {result.python * 1000:6.0f} ms (CPU {result.python_cpu * 1000:.0f} ms)")
    verdict = "met" if result.view < TARGET_S else "NOT met"
    print(f"  ratio {result.ratio:.1f}x; target < {TARGET_S * 1000:.0f} ms: {verdict}")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

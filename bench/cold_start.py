"""Cold start of the debugger: process start to the first full screen of ``fpdebug view`` on a small trace.

Usage::

    .venv/bin/python -m bench.cold_start                  # sample_traces/support.fptrace.jsonl, 10 runs
    .venv/bin/python -m bench.cold_start --repeat 20 --trace PATH

Each run starts ``fpdebug view TRACE`` in a child process on a pseudo-terminal of 120×35 (the real
Linux driver, as a user's terminal would run it) and times it from just before the process is
spawned to the moment the trace screen signals its first full screen: the ``first_paint`` event,
which the screen sets after the refresh that drew its first rows, its bars *and* its key bar (the
footer composes its keys a frame or more after the rows); the child then exits at once. Everything
the child wrote to the terminal up to then is kept (:attr:`ColdStart.screen`), so a test can check
that the screen was complete at the stamp.

Three baselines are spawned the same way, in the same run, one run of each alternated with each run
of the viewer (in a rotating order) so that a noisy neighbour on a shared machine hits all alike:

- ``python -c pass``: the interpreter alone (spawn to exit);
- ``python -c "import textual.app"``: the interpreter and the import of Textual (spawn to exit);
- a minimal Textual app (one ``Static``) up to its own first paint: what any Textual program pays
  before it can show anything, the floor under the viewer.

Wall time and CPU time (user + system, from ``wait4``) of each run are kept; medians are printed.
CPU time is the steadier figure on a loaded machine (it does not count time waiting for a core).

The children compile to a bytecode cache of their own (``PYTHONPYCACHEPREFIX``, a temporary
directory; ``PYTHONDONTWRITEBYTECODE`` is dropped), warmed by one uncounted run of each: an
installed fpdebug has its ``.pyc`` files, and a child that compiled every module from source on
each run (as it would with ``PYTHONDONTWRITEBYTECODE=1`` set in a development shell) measured
about 0.3 s of CPU more.

The viewer's child is ``python -c BOOTSTRAP``: it runs :func:`fpdebug.cli.main` with ``view TRACE``,
the same code path as the command, in the same order (an import hook wraps the trace loader when
the command imports it), so that the first full screen writes a ``time.monotonic()`` stamp
(``CLOCK_MONOTONIC``, comparable between processes of one machine) to a pipe.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run import Figure

__all__ = ["BASELINES", "TARGET_S", "ColdStart", "figure", "main", "measure", "screen_text"]

ROOT = Path(__file__).resolve().parent.parent
SMALL_TRACE = ROOT / "sample_traces" / "support.fptrace.jsonl"
TARGET_S = 0.5
"""Issue 20's target for the first full screen of a small trace."""
SIZE = (120, 35)
"""The pseudo-terminal (columns, rows)."""
TIMEOUT_S = 60.0

BOOTSTRAP = r"""
import os, sys, time
from importlib.machinery import PathFinder
fd, trace = int(sys.argv[1]), sys.argv[2]
def painted():
    os.write(fd, repr(time.monotonic()).encode() + b"\n")
    os._exit(0)
def probe(loader_class):
    init = loader_class.__init__
    def noting_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.first_paint.set = painted
    loader_class.__init__ = noting_init
class Hook:  # patches the loader when `fpdebug view` imports it, not before (the command's order)
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "fpdebug.tui.screens.loader":
            return None
        sys.meta_path.remove(Hook)
        spec = PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            probe(module.TraceLoader)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Hook)
from fpdebug.cli import main
raise SystemExit(main(["view", trace]))
"""

TEXTUAL_FLOOR = r"""
import os, sys, time
fd = int(sys.argv[1])
from textual.app import App
from textual.widgets import Static
class Floor(App):
    def compose(self):
        yield Static("the smallest Textual screen")
    def on_mount(self):
        self.call_after_refresh(self.painted)
    def painted(self):
        os.write(fd, repr(time.monotonic()).encode() + b"\n")
        os._exit(0)
Floor().run()
"""

BASELINES: dict[str, list[str]] = {
    "python": ["-c", "pass"],
    "textual_import": ["-c", "import textual.app"],
}
"""The baselines timed from spawn to exit, by name: the arguments of ``python``."""


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
    textual_import_s: list[float] = field(default_factory=list)
    """Process start to exit of ``python -c "import textual.app"``, each run (wall)."""
    textual_import_cpu_s: list[float] = field(default_factory=list)
    """CPU time of ``python -c "import textual.app"``, each run."""
    textual_floor_s: list[float] = field(default_factory=list)
    """Process start to first paint of a one-widget Textual app, each run (wall)."""
    textual_floor_cpu_s: list[float] = field(default_factory=list)
    """CPU time of that app up to its first paint, each run."""
    screen: str = ""
    """What the last run of the viewer drew up to its stamp, as text (escape sequences removed)."""

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

    @property
    def textual_import(self) -> float:
        """Median of :attr:`textual_import_s`."""
        return statistics.median(self.textual_import_s)

    @property
    def textual_floor(self) -> float:
        """Median of :attr:`textual_floor_s`."""
        return statistics.median(self.textual_floor_s)


def _env(cache: str) -> dict[str, str]:
    """The children's environment: this checkout first on the path, a terminal, a bytecode cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    env["TERM"] = env.get("TERM") or "xterm-256color"
    if env["TERM"] == "dumb":
        env["TERM"] = "xterm-256color"
    env.pop("TEXTUAL_DRIVER", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _drain(fd: int, into: bytearray) -> None:
    """Read the pty until it closes, so the child never blocks writing its screen; keep what it wrote."""
    try:
        while chunk := os.read(fd, 65536):
            into.extend(chunk)
    except OSError:
        pass  # EIO: the child side closed


def _reap(child: subprocess.Popen[bytes]) -> float:
    """Wait for ``child`` to exit; return the CPU time (user + system) it used."""
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _painted_once(args: Sequence[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Spawn ``python -c CODE STAMP_FD ...`` on a fresh pty and wait for its stamp; (wall, CPU, output).

    ``args`` is ``[CODE, *rest]``; the child gets the write end of a pipe as its first argument and
    writes a ``time.monotonic()`` stamp there when its screen is up, then exits.
    """
    code, *rest = args
    master, slave = pty.openpty()
    columns, rows = SIZE
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    stamp_read, stamp_write = os.pipe()
    output = bytearray()
    drainer = threading.Thread(target=_drain, args=(master, output), daemon=True)
    drainer.start()
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(stamp_write), *rest],
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
            raise RuntimeError("the child gave no first-paint stamp")
        wall = float(stamp) - started
        cpu = _reap(child)  # the child exits right after its stamp
        drainer.join(timeout=5)  # then the pty reads EIO: everything it wrote is in `output`
        return wall, cpu, bytes(output)
    finally:
        os.close(stamp_read)
        if child.returncode is None:
            os.killpg(child.pid, signal.SIGKILL)
            _reap(child)
        drainer.join(timeout=5)
        os.close(master)


def _exit_once(args: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """One run of a baseline timed to its exit: ``python ARGS``; (wall, CPU)."""
    started = time.monotonic()
    cpu = _reap(subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env))
    return time.monotonic() - started, cpu


_ESCAPE = re.compile(r"\x1b(?:\[[0-9;?<=>$]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|.)")


def screen_text(output: bytes) -> str:
    """What a terminal program wrote, as text: escape sequences become line breaks, blank lines go."""
    text = _ESCAPE.sub("\n", output.decode("utf-8", "replace"))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def measure(trace: Path = SMALL_TRACE, *, repeat: int = 10) -> ColdStart:
    """Alternate ``repeat`` runs of the viewer with ``repeat`` runs of each baseline."""
    with tempfile.TemporaryDirectory(prefix="fpdebug-cold-start-") as cache:
        env = _env(cache)
        view_args = [BOOTSTRAP, str(trace)]
        # Uncounted: fill the bytecode cache and the page cache.
        _painted_once(view_args, env)
        _painted_once([TEXTUAL_FLOOR], env)
        for args in BASELINES.values():
            _exit_once(args, env)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in (*BASELINES, "floor", "view")}
        screen = b""
        for round_ in range(repeat):
            order = list(runs)
            order = order[round_ % len(order) :] + order[: round_ % len(order)]  # rotate who goes first
            for name in order:
                if name == "view":
                    wall, cpu, screen = _painted_once(view_args, env)
                    runs[name].append((wall, cpu))
                elif name == "floor":
                    runs[name].append(_painted_once([TEXTUAL_FLOOR], env)[:2])
                else:
                    runs[name].append(_exit_once(BASELINES[name], env))

    def walls(name: str) -> list[float]:
        return [wall for wall, _ in runs[name]]

    def cpus(name: str) -> list[float]:
        return [cpu for _, cpu in runs[name]]

    return ColdStart(
        walls("view"),
        walls("python"),
        cpus("view"),
        cpus("python"),
        walls("textual_import"),
        cpus("textual_import"),
        walls("floor"),
        cpus("floor"),
        screen_text(screen),
    )


def figure(trace: Path = SMALL_TRACE, *, repeat: int = 10) -> Figure:
    """The row of ``python -m bench``'s table."""
    from bench.run import Figure  # at run time: bench.run imports the trace generators

    result = measure(trace, repeat=repeat)
    return Figure(
        "2c",
        f"cold start: process start -> first full screen, fpdebug view {trace.name}",
        f"{result.view * 1000:.0f} ms (median of {repeat}; CPU {result.view_cpu * 1000:.0f} ms)",
        f"python -c pass {result.python * 1000:.0f} ms; import textual.app "
        f"{result.textual_import * 1000:.0f} ms; minimal Textual app {result.textual_floor * 1000:.0f} ms",
        f"{result.ratio:.1f}x",
        f"< {TARGET_S * 1000:.0f} ms",
        result.view < TARGET_S,
        raw={
            "view_s": result.view_s,
            "python_s": result.python_s,
            "view_cpu_s": result.view_cpu_s,
            "python_cpu_s": result.python_cpu_s,
            "textual_import_s": result.textual_import_s,
            "textual_import_cpu_s": result.textual_import_cpu_s,
            "textual_floor_s": result.textual_floor_s,
            "textual_floor_cpu_s": result.textual_floor_cpu_s,
        },
    )


def _ms(values: Sequence[float]) -> str:
    return " ".join(f"{value * 1000:.0f}" for value in values)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.cold_start [--trace PATH] [--repeat N]``: measure and print the medians."""
    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trace", type=Path, default=SMALL_TRACE, help="the trace to open (default: support)"
    )
    parser.add_argument("--repeat", type=int, default=10, help="runs of each, alternated (default 10)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    result = measure(args.trace, repeat=args.repeat)
    rows = (
        ("fpdebug view (first full screen)", result.view_s, result.view_cpu_s),
        ("minimal Textual app (first paint)", result.textual_floor_s, result.textual_floor_cpu_s),
        ('python -c "import textual.app"', result.textual_import_s, result.textual_import_cpu_s),
        ("python -c pass", result.python_s, result.python_cpu_s),
    )
    print(f"fpdebug view {args.trace.name} ({SIZE[0]}x{SIZE[1]} pty), process start -> first full screen")
    for name, walls, _cpus in rows:
        print(f"  {name:36} runs (ms): {_ms(walls)}")
    print(f"  {'':36} median wall    CPU")
    for name, walls, cpus in rows:
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"  {name:36} {wall * 1000:7.0f} ms {cpu * 1000:6.0f} ms")
    verdict = "met" if result.view < TARGET_S else "NOT met"
    print(
        f"  view / python -c pass {result.ratio:.1f}x; view - minimal Textual app "
        f"{(result.view - result.textual_floor) * 1000:.0f} ms wall, "
        f"{(result.view_cpu - statistics.median(result.textual_floor_cpu_s)) * 1000:.0f} ms CPU"
    )
    print(f"  target < {TARGET_S * 1000:.0f} ms: {verdict}")
    print(f"  load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

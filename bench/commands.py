"""The whole-file commands against an orjson parse of every line, alternated in the same run (issue 22).

For each shape (the synthetic trace of :mod:`bench.gen_trace`, the demo-shaped trace of
:mod:`bench.demo_trace`) and each size, every command runs in a fresh interpreter started with a
clean ``exec`` and is followed at once by the baseline: a fresh interpreter that reads the same
file in blocks and ``orjson.loads`` every line. Each pair is repeated and the medians taken.

What each child reports about itself, after its imports (the modules the command uses are imported
before the clock starts, so a figure is the command's work, not Python's start):

- **CPU**: user + system seconds of the child and of the worker processes it waited for
  (``RUSAGE_SELF`` + ``RUSAGE_CHILDREN``), the figure that does not move when other jobs share the
  cores;
- **wall** seconds;
- **peak RSS**: its own ``VmHWM`` from ``/proc/self/status`` (a fresh process's peak since ``exec``;
  ``ru_maxrss`` would carry the parent's), as a share of the file. A command that starts processes
  (``validate``'s forked workers; any other that forks) is counted as its whole tree: the peak of
  the summed PSS of the process and its descendants, sampled every 0.1 s from the bench's process
  (PSS splits a page between the processes that share it, so what a forked worker inherited counts
  once), and the judged figure is the larger of that and the process's own ``VmHWM``. The upper
  bound, each worker's ``ru_maxrss`` in full on top (which counts what it inherited again), is kept
  beside it (``bound_mb``).

Usage::

    .venv/bin/python -m bench.commands --sizes 10000 100000 --repeat 3
    .venv/bin/python -m bench.commands --commands validate report --shapes demo
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from bench.demo_trace import ensure_demo_trace
from bench.gen_trace import OUT_DIR, ensure_trace

__all__ = ["COMMANDS", "COMMAND_ROWS", "Stopped", "main", "measure", "memory", "run_child"]

ROOT = Path(__file__).resolve().parent.parent

COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    # name: (fpdebug arguments before TRACE, modules imported before the clock starts)
    "validate": (["validate"], ["fpdebug.commands.validate", "fpdebug.trace.reader"]),
    "summary": (["summary", "--json"], ["fpdebug.commands.summary", "fpdebug.trace.model"]),
    "report": (
        ["report"],
        ["fpdebug.commands.report", "fpdebug.export.report", "fpdebug.export.report_stream"],
    ),
    "report-json": (
        ["report", "--format", "json"],
        ["fpdebug.commands.report", "fpdebug.export.report", "fpdebug.export.report_stream"],
    ),
    "export": (["export"], ["fpdebug.commands.export", "fpdebug.export.saved", "fpdebug.export.otlp"]),
    # backtrack imports its package (every rerun module with it), the model and the demo loader
    # inside the command: imported here, as export's SDK is, so its row is the work, not the imports.
    "backtrack": (
        ["backtrack", "--json", "--no-save"],
        ["fpdebug.commands.backtrack", "fpdebug.backtrack.session", "fpdebug.demo", "fpdebug.trace.model"],
    ),
    "model": ([], ["fpdebug.trace.model", "fpdebug.trace.reader"]),
}
"""What ``--commands`` can name; ``model`` is ``RunModel.build`` over the whole file."""
COMMAND_ROWS = ("validate", "summary", "report", "export", "backtrack", "model")
"""The whole-file commands of ``python -m bench``'s table (issue 22)."""

_CHILD = r"""
import os, sys, time, resource, importlib
kind, trace, modules = sys.argv[1], sys.argv[2], sys.argv[3]
args = sys.argv[4:]
for name in filter(None, modules.split(",")):
    importlib.import_module(name)
if kind == "parse":
    import orjson
from fpdebug import cli
# The command's output goes to /dev/null at the descriptor, so print() costs what writing costs.
null = os.open(os.devnull, os.O_WRONLY)
saved = os.dup(1)
started = time.perf_counter()
cpu0 = resource.getrusage(resource.RUSAGE_SELF)
lines = 0
if kind == "parse":
    with open(trace, "rb") as handle:
        tail = b""
        while block := handle.read(4 << 20):
            parts = (tail + block).split(b"\n")
            tail = parts.pop()
            for raw in parts:
                orjson.loads(raw)
            lines += len(parts)
    code = 0
elif kind == "model":
    from fpdebug.trace.model import RunModel
    from fpdebug.trace.reader import TraceReader
    with TraceReader(trace) as reader:
        model = RunModel.build(reader)
        lines = len(reader)
    code = 0
else:
    os.dup2(null, 1)
    try:
        code = cli.main([*args, trace])
    except SystemExit as stop:
        code = stop.code
    sys.stdout.flush()
    os.dup2(saved, 1)
wall = time.perf_counter() - started
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime - cpu0.ru_utime - cpu0.ru_stime + kids.ru_utime + kids.ru_stime
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
import json
print(json.dumps({"code": code, "wall": wall, "cpu": cpu, "peak_kb": peak, "workers_kb": kids.ru_maxrss,
                  "lines": lines}))
"""


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (every thread's ``children`` list; empty once it is gone)."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as listing:
                kids.extend(int(kid) for kid in listing.read().split())
        except OSError:
            continue
    return kids


def _pss_kb(pid: int) -> int:
    """``pid``'s proportional set size in KB (a page shared by n processes counts 1/n); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            return next((int(line.split()[1]) for line in rollup if line.startswith("Pss:")), 0)
    except (OSError, ValueError):
        return 0


def tree_pss_kb(pid: int) -> tuple[int, set[int]]:
    """The summed PSS of ``pid`` and all its live descendants, and the descendants' ids.

    PSS splits each shared page between the processes that map it, so the sum counts a page a
    forked worker inherited once, not once per process as adding their RSS would.
    """
    seen: set[int] = set()
    total = _pss_kb(pid)
    pending = _children(pid)
    while pending:
        kid = pending.pop()
        if kid in seen:
            continue
        seen.add(kid)
        total += _pss_kb(kid)
        pending.extend(_children(kid))
    return total, seen


class TreeSampler:
    """Samples a process tree's summed PSS from outside it (the bench's process), every ``interval``.

    Sampling from the parent keeps its cost out of the measured child's CPU figures. It can miss
    a peak shorter than ``interval``; the child's own ``VmHWM`` is exact for the child itself.
    """

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid, self.interval = pid, interval
        self.peak_kb = 0
        self.descendants: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total, kids = tree_pss_kb(self.pid)
            self.peak_kb = max(self.peak_kb, total)
            self.descendants |= kids
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def run_child(
    kind: str,
    trace: Path,
    modules: Sequence[str],
    args: Sequence[str],
    tree: Path = ROOT,
    timeout: float | None = None,
) -> dict:
    """Run one child (``kind``: ``parse``, ``model`` or ``command``); return what it reported.

    Besides what the child reports about itself, ``tree_pss_kb`` is the peak of its process tree's
    summed PSS, sampled from here, and ``descendants`` how many processes it started (workers).
    """
    env = dict(os.environ, PYTHONPATH=str(tree), PYDANTIC_DISABLE_PLUGINS="__all__")
    process = subprocess.Popen(
        [sys.executable, "-c", _CHILD, kind, str(trace), ",".join(modules), *args],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own: a stop ends its workers too
    )
    with process, TreeSampler(process.pid) as sampler:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    try:
        result = dict(json.loads(stdout.strip().splitlines()[-1]))
    except (IndexError, ValueError):
        raise SystemExit(f"{kind} {' '.join(args)} failed:\n{stderr[-2000:]}") from None
    if result["code"] not in (0, 1):
        raise SystemExit(f"{' '.join(args)} exited {result['code']}:\n{stderr[-2000:]}")
    result["tree_pss_kb"] = sampler.peak_kb
    result["descendants"] = len(sampler.descendants)
    return result


class Stopped(Exception):
    """A command stopped for running past ``ratio`` times the wall of the parse measured just before it."""

    def __init__(self, name: str, ratio: float, parse_wall: float, limit: float) -> None:
        super().__init__(
            f"{name} stopped after {limit:.0f} s: over {ratio:g}x the parse's wall ({parse_wall:.1f} s)"
        )
        self.name, self.ratio, self.parse_wall, self.limit = name, ratio, parse_wall, limit


START_SLACK = 5.0
"""Seconds a stopped command gets on top of ``ratio`` x the parse: its interpreter start and imports,
which the parse's in-child wall does not include."""


def measure(
    name: str,
    trace: Path,
    repeat: int,
    tree: Path = ROOT,
    *,
    stop_ratio: float | None = None,
    slack: float = START_SLACK,
) -> dict[str, float]:
    """Medians of ``repeat`` alternated pairs: the orjson parse of the file, then the command.

    Args:
        name: A name of :data:`COMMANDS`.
        trace: The trace.
        repeat: How many pairs.
        tree: The checkout whose fpdebug is measured.
        stop_ratio: Stop the command once it has run ``stop_ratio`` times the wall of the parse just
            measured (plus ``slack`` seconds for its start), and raise :class:`Stopped`: a command
            that far over the 3x target cannot meet it, and on a big trace it would spend the
            bench's time budget on a figure whose verdict is already known.
        slack: See ``stop_ratio`` (:data:`START_SLACK` by default).
    """
    args, modules = COMMANDS[name]
    kind = "model" if name == "model" else "command"
    runs, parses = [], []
    for _ in range(repeat):
        parses.append(run_child("parse", trace, [], [], tree))
        limit = None if stop_ratio is None else stop_ratio * parses[-1]["wall"] + slack
        try:
            runs.append(run_child(kind, trace, modules, args, tree, timeout=limit))
        except subprocess.TimeoutExpired:
            assert stop_ratio is not None and limit is not None
            raise Stopped(name, stop_ratio, parses[-1]["wall"], limit) from None
    size = trace.stat().st_size
    events = int(parses[0]["lines"]) - 1  # the parse counted every line; the header is not an event
    cpu = statistics.median(r["cpu"] for r in runs)
    wall = statistics.median(r["wall"] for r in runs)
    parse_cpu = statistics.median(p["cpu"] for p in parses)
    parse_wall = statistics.median(p["wall"] for p in parses)
    return {
        "events": events,
        "mb": size / 1e6,
        "cpu": cpu,
        "wall": wall,
        "parse_cpu": parse_cpu,
        "parse_wall": parse_wall,
        "ratio_cpu": cpu / parse_cpu,
        "ratio_wall": wall / parse_wall,
        # The median of each pair's own ratio: a neighbour's load lands on a pair, not on a side.
        "pair_ratio_cpu": statistics.median(r["cpu"] / p["cpu"] for r, p in zip(runs, parses, strict=True)),
        "pair_ratio_wall": statistics.median(
            r["wall"] / p["wall"] for r, p in zip(runs, parses, strict=True)
        ),
        "parse_peak_mb": statistics.median(p["peak_kb"] for p in parses) / 1024,
        "pairs": len(runs),
        "us_per_event": cpu / events * 1e6,
        **memory(runs),
    }


def memory(runs: Sequence[dict]) -> dict[str, float]:
    """The peak memory of a command's runs (medians), its workers counted once (see the module's doc).

    - ``own_peak_mb``: the command's process's own ``VmHWM`` (exact, a fresh ``exec``);
    - ``tree_peak_mb``: the peak of the summed PSS of the process and its descendants (forked workers,
      a ``git`` it runs), sampled every 0.1 s from the bench's process: a page a forked worker
      inherited counts once;
    - ``bound_mb``: the process's ``VmHWM`` plus, for each descendant, the largest descendant's
      ``ru_maxrss`` (a forked worker's includes every page it inherited, so this counts the
      parent's imports again per worker): an upper bound;
    - ``peak_mb``, the judged figure: the larger of ``own_peak_mb`` and ``tree_peak_mb``.
    """
    own = statistics.median(r["peak_kb"] for r in runs) / 1024
    tree = statistics.median(r.get("tree_pss_kb", 0) for r in runs) / 1024
    workers = max(int(r.get("descendants", 0)) for r in runs)
    bound = own + workers * max(r["workers_kb"] for r in runs) / 1024 if workers else own
    return {
        "peak_mb": max(own, tree),
        "own_peak_mb": own,
        "tree_peak_mb": tree,
        "bound_mb": bound,
        "workers": workers,
    }


def _trace(shape: str, size: int, out_dir: Path = OUT_DIR) -> Path:
    return (
        ensure_demo_trace(size, out_dir=out_dir) if shape == "demo" else ensure_trace(size, out_dir=out_dir)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print one row per shape, size and command; the raw numbers go to ``bench/out/commands.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.commands", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--shapes", nargs="+", choices=("synthetic", "demo"), default=["synthetic", "demo"])
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=ROOT, help="measure the fpdebug of this checkout")
    parser.add_argument(
        "--out", type=Path, default=OUT_DIR, help="where the traces are built (default bench/out)"
    )
    args = parser.parse_args(argv)
    rows = []
    print(
        f"{'shape':<10}{'events':>9}{'MB':>7} {'command':<12}{'CPU s':>8}{'wall s':>8}{'parse CPU':>10}"
        f"{'x CPU':>7}{'x wall':>7}{'us/ev':>7}{'RSS MB':>8}{'RSS %':>7}",
        flush=True,
    )
    for shape in args.shapes:
        for size in args.sizes:
            trace = _trace(shape, size, args.out)
            for name in args.commands:
                row = {
                    "shape": shape,
                    "command": name,
                    **measure(name, trace, args.repeat, args.tree.resolve()),
                }
                rows.append(row)
                share = row["peak_mb"] * 1024 * 1024 / (row["mb"] * 1e6) * 100
                print(
                    f"{shape:<10}{row['events']:>9}{row['mb']:>7.0f} {name:<12}{row['cpu']:>8.2f}"
                    f"{row['wall']:>8.2f}{row['parse_cpu']:>10.2f}{row['ratio_cpu']:>7.2f}"
                    f"{row['ratio_wall']:>7.2f}{row['us_per_event']:>7.0f}{row['peak_mb']:>8.0f}{share:>6.1f}%",
                    flush=True,
                )
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "commands.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Peak RSS of ``fpdebug export`` (or ``report``) on traces of many one-record runs, each in a fresh process.

Issue 18 found ``export`` of a file of 100,000 one-record runs taking 2.4 GB (533 MB at 20,000 runs,
measured here before the fix): every span of every run was built before the first byte was written,
then held again as SDK spans, a protobuf request, a dict and one JSON string. Export now streams run
by run (:mod:`fpdebug.export.saved`), so its peak should stay flat as runs are added.

``report`` had the same trouble: one model of the whole file and every run's report were built
before the first byte was written, then the Markdown held as one string and again redacted (90 MB
at 10,000 runs, 262 MB at 50,000). It now writes run by run (:mod:`fpdebug.export.report_stream`).

Each figure is the child's own ``VmHWM`` (its peak resident set since ``exec``), read by the child
from ``/proc/self/status`` just before it exits. ``ru_maxrss`` from ``wait4`` is not used: on Linux
it carries over the forking parent's high-water mark, so it would report the benchmark, not export.

Usage::

    .venv/bin/python -m bench.export_memory                      # 10k, 50k and 100k runs
    .venv/bin/python -m bench.export_memory --runs 2000 8000     # quicker
    .venv/bin/python -m bench.export_memory --against /path/to/older/checkout   # a live baseline
    .venv/bin/python -m bench.export_memory --command report --runs 10000 50000  # the Markdown report

Traces are generated under ``bench/out/`` (about 215 bytes a run) and reused.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = [
    "BASELINE_MB",
    "COMMANDS",
    "OUT_DIR",
    "REPORT_BASELINE_MB",
    "generate",
    "measure",
    "one_record_runs",
]

OUT_DIR = Path(__file__).resolve().parent / "out"
"""Where the generated traces are kept (gitignored)."""

ROOT = Path(__file__).resolve().parent.parent

BASELINE_MB: dict[int, float] = {10_000: 290.0, 20_000: 533.8, 100_000: 2400.0}
"""Peak RSS (MB) of export before it streamed: 10k measured by ``--against`` a checkout of the pre-fix
tree (47 s), 20k with ``/usr/bin/time`` on it (52 s, a loaded 2-core machine); 100k as issue 18
reports it. ``--against`` measures a live baseline instead."""

REPORT_BASELINE_MB: dict[int, float] = {1_000: 46.5, 10_000: 90.0, 50_000: 262.0}
"""Peak RSS (MB) of ``report`` (Markdown, to a file) before it streamed: ``--against`` a checkout of the
pre-fix tree (1,000 runs: the same child by hand)."""

COMMANDS = ("export", "report")
"""The commands measured."""

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def one_record_runs(runs: int) -> Path:
    """A valid trace of ``runs`` runs of one ``run_start`` record each (generated once, then reused)."""
    path = OUT_DIR / f"one-record-runs-{runs}.fptrace.jsonl"
    if not path.exists():
        generate(path, runs)
    return path


def generate(path: Path, runs: int) -> None:
    """Write the trace: a header, then one ``run_start`` per run, as the writer lays it out."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="ascii") as handle:
        handle.write(
            '{"kind":"trace_header","format":"fpdebug.trace","schema_version":1,'
            '"producer":"bench.export_memory","created":"2026-01-01T00:00:00Z"}\n'
        )
        for index in range(runs):
            ts = (_T0 + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")
            handle.write(
                f'{{"kind":"run_start","seq":{index + 1},"ts":"{ts}","run_id":"run-{index:07d}",'
                '"agent_name":"agent","provider":"scripted","model":"m","max_iterations":5,'
                '"system_prompt":"","injections":[],"tools":[],"options":{}}\n'
            )
    partial.replace(path)


_CHILD = """
import sys
import fpdebug
from fpdebug.cli import main
if not fpdebug.__file__.startswith(sys.argv[3]):
    raise SystemExit(f"imported {fpdebug.__file__}, not the tree under test")
code = main([sys.argv[4], sys.argv[1], "-o", sys.argv[2]])
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(code, peak)
"""


def measure(trace: Path, *, tree: Path = ROOT, command: str = "export") -> tuple[float, float]:
    """Run ``command`` (export or report) on ``trace`` in a fresh interpreter running the code in
    ``tree``; return (peak MB, seconds)."""
    tree = tree.resolve()
    env = dict(os.environ, PYTHONPATH=str(tree))
    began = time.perf_counter()
    done = subprocess.run(  # cwd: ``-c`` puts the working directory first on sys.path
        [sys.executable, "-c", _CHILD, str(trace.resolve()), os.devnull, str(tree) + os.sep, command],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - began
    try:
        code, peak_kb = done.stdout.split()[-2:]
    except ValueError:
        raise SystemExit(f"the {command} child failed:\n{done.stderr[-2000:]}") from None
    if code != "0":
        raise SystemExit(f"{command} exited {code}:\n{done.stderr[-2000:]}")
    return int(peak_kb) / 1024, seconds


def main(argv: list[str] | None = None) -> int:
    """Print one row per size: runs, file size, peak RSS, seconds, and the baseline."""
    parser = argparse.ArgumentParser(prog="python -m bench.export_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--against", type=Path, help="also measure the command in this checkout (a baseline)")
    parser.add_argument(
        "--command", choices=COMMANDS, default="export", help="what to measure (default export)"
    )
    args = parser.parse_args(argv)
    baselines = BASELINE_MB if args.command == "export" else REPORT_BASELINE_MB
    print(f"{args.command}:")
    print(f"{'runs':>8} {'file MB':>8} {'peak RSS MB':>12} {'seconds':>8} {'baseline MB':>12}")
    for runs in args.runs:
        trace = one_record_runs(runs)
        peak, seconds = measure(trace, command=args.command)
        if args.against is not None:
            baseline = f"{measure(trace, tree=args.against, command=args.command)[0]:.0f}"
        else:
            baseline = f"{baselines[runs]:.0f}" if runs in baselines else "-"
        size = trace.stat().st_size / 1e6
        print(f"{runs:>8} {size:>8.1f} {peak:>12.0f} {seconds:>8.1f} {baseline:>12}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

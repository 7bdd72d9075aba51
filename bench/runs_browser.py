"""The runs browser on a folder of many traces: ``fpdebug runs DIR`` cold and warm, against ``wc -l``.

Usage::

    .venv/bin/python -m bench.runs_browser                    # 1,000 traces, 0.1 GB in all, 5 rounds
    .venv/bin/python -m bench.runs_browser --gb 1 --repeat 3  # 1,000 traces of about 1 MB each
    .venv/bin/python -m bench.runs_browser --gb 10 --keep DIR # the issue's target size, kept in DIR

The traces come from :mod:`bench.gen_trace` (valid, realistic support-desk runs, one seed per
file), written into a scratch folder (``--dir``; deleted afterwards unless ``--keep``). Each round
runs, in this order and each in a fresh process:

- ``wc -l`` over the same files (the baseline: reading every byte once and counting lines);
- ``fpdebug runs DIR --json`` with an empty cache (cold: DuckDB scans every trace, the cache is
  written);
- the same again (warm: every trace's rows come from the cache).

Each is timed from spawn to exit, its output sent to ``/dev/null`` (so the time is "to the first
table"). The three alternate round after round so a noisy neighbour on a shared machine hits
them alike; medians and the ratios to ``wc -l`` are printed. The files are in the page cache for
all three (they were just written), so this measures the scan, not the disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.gen_trace import generate

ROOT = Path(__file__).resolve().parents[1]


def _events_per_trace(gb: float, traces: int, folder: Path) -> int:
    """How many events one trace needs for the total size asked (measured on a sample trace)."""
    probe = folder / ".probe.jsonl"
    stats = generate(probe, 2000, seed=999_999, check_every=0)
    probe.unlink()
    per_event = stats.bytes / max(stats.events, 1)
    return max(int(gb * 1e9 / traces / per_event), 20)


def build_folder(folder: Path, traces: int, gb: float) -> tuple[int, int]:
    """Write ``traces`` synthetic traces of about ``gb`` GB in all; return (files, bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    events = _events_per_trace(gb, traces, folder)
    total = 0
    started = time.perf_counter()
    for seed in range(traces):
        stats = generate(folder / f"run-{seed:05d}.fptrace.jsonl", events, seed=seed, check_every=0)
        total += stats.bytes
    print(
        f"generated {traces} traces, {events} events each, {total / 1e9:.2f} GB in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return traces, total


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(folder: Path, repeat: int) -> dict[str, list[float]]:
    """Alternate ``wc -l``, a cold ``fpdebug runs`` and a warm one, ``repeat`` times; the seconds of each."""
    files = sorted(str(path) for path in folder.iterdir() if path.name.endswith(".jsonl"))
    runs = [sys.executable, "-m", "fpdebug", "runs", str(folder), "--json"]
    times: dict[str, list[float]] = {"wc -l": [], "runs cold": [], "runs warm": []}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="fpdebug-runs-cache-") as cache:
            env["XDG_CACHE_HOME"] = cache
            times["wc -l"].append(_timed(["wc", "-l", *files], env))
            times["runs cold"].append(_timed(runs, env))
            times["runs warm"].append(_timed(runs, env))
    return times


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, measure, print the medians, clean up."""
    parser = argparse.ArgumentParser(prog="python -m bench.runs_browser", description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000, help="how many trace files (default 1000)")
    parser.add_argument("--gb", type=float, default=0.1, help="their total size in GB (default 0.1)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--dir", type=Path, help="where to write them (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    args = parser.parse_args(argv)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="fpdebug-runs-bench-"))
    try:
        files, size = build_folder(folder, args.traces, args.gb)
        times = measure(folder, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    baseline = statistics.median(times["wc -l"])
    print(f"{files} traces, {size / 1e9:.2f} GB, {os.cpu_count()} cores, {args.repeat} rounds (medians)")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:<10} {median:7.2f} s  {size / 1e6 / median:8.0f} MB/s  "
            f"{median / baseline:6.1f}× wc -l  (min {min(values):.2f}, max {max(values):.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

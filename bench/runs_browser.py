"""The runs browser on a folder of many traces: ``fpdebug runs DIR`` cold and warm, against ``wc -l``.

Usage::

    .venv/bin/python -m bench.runs_browser                    # 1,000 traces, 0.1 GB in all, 5 rounds
    .venv/bin/python -m bench.runs_browser --gb 1 --repeat 3  # 1,000 traces of about 1 MB each
    .venv/bin/python -m bench.runs_browser --target           # the issue's target: 1,000 traces, 10 GB
    .venv/bin/python -m bench.runs_browser --target --dir DIR --keep   # ... kept in DIR (and reused)

The traces come from :mod:`bench.gen_trace` (valid, realistic support-desk runs, one seed per
file), written into a scratch folder (``--dir``; deleted afterwards unless ``--keep``). Each round
runs, in this order and each in a fresh process:

- ``wc -l`` over the same files (the baseline: reading every byte once and counting lines);
- ``fpdebug runs DIR --json`` with an empty cache (cold: DuckDB scans every trace, the cache is
  written);
- the same again (warm: every trace's rows come from the cache).

Each is timed from spawn to exit, its output sent to ``/dev/null`` (so the time is "to the first
table"), in wall time and in CPU time (user + system of the child: on a shared machine the wall
time grows with the neighbours' load, the CPU time much less). The three alternate round after round so a noisy neighbour on a shared machine hits
them alike; medians and the ratios to ``wc -l`` are printed. The files are in the page cache for
all three (they were just written), so this measures the scan, not the disk.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def build_folder(folder: Path, traces: int, gb: float, distinct: int | None = None) -> tuple[int, int]:
    """Write ``traces`` synthetic traces of about ``gb`` GB in all; return (files, bytes).

    Only the first ``distinct`` traces are generated (one seed each); the others are byte copies of
    them, round robin (the scan does the same work on a copy: each file's runs are its own rows).
    A trace file already there is kept: the generator writes each atomically and a seed always
    gives the same bytes, so an interrupted ``--keep`` folder resumes.
    """
    folder.mkdir(parents=True, exist_ok=True)
    distinct = min(distinct or traces, traces)
    events = _events_per_trace(gb, traces, folder)
    total = 0
    started = time.perf_counter()
    for number in range(traces):
        path = folder / f"run-{number:05d}.fptrace.jsonl"
        if not path.exists():
            if number < distinct:
                generate(path, events, seed=number, check_every=0)
            else:
                shutil.copyfile(folder / f"run-{number % distinct:05d}.fptrace.jsonl", path)
        total += path.stat().st_size
    print(
        f"{traces} traces ({distinct} generated, {events} events each), {total / 1e9:.2f} GB "
        f"in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    return traces, total


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process, from spawn to exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(folder: Path, repeat: int) -> dict[str, list[tuple[float, float]]]:
    """Alternate ``wc -l``, a cold ``fpdebug runs`` and a warm one, ``repeat`` times; (wall, CPU) of each."""
    files = sorted(str(path) for path in folder.iterdir() if path.name.endswith(".jsonl"))
    runs = [sys.executable, "-m", "fpdebug", "runs", str(folder), "--json"]
    times: dict[str, list[tuple[float, float]]] = {"wc -l": [], "runs cold": [], "runs warm": []}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for number in range(repeat):
        with tempfile.TemporaryDirectory(prefix="fpdebug-runs-cache-") as cache:
            env["XDG_CACHE_HOME"] = cache
            for name, argv in (("wc -l", ["wc", "-l", *files]), ("runs cold", runs), ("runs warm", runs)):
                times[name].append(_timed(argv, env))
                wall, cpu = times[name][-1]
                print(
                    f"  round {number + 1}: {name:<10} {wall:7.2f} s wall {cpu:7.2f} s CPU", file=sys.stderr
                )
    return times


def main(argv: Sequence[str] | None = None) -> int:
    """Generate, measure, print the medians, clean up."""
    parser = argparse.ArgumentParser(prog="python -m bench.runs_browser", description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000, help="how many trace files (default 1000)")
    parser.add_argument("--gb", type=float, default=0.1, help="their total size in GB (default 0.1)")
    parser.add_argument(
        "--target",
        action="store_true",
        help="the issue's target size: 1,000 traces, 10 GB (needs ~11 GB of disk)",
    )
    parser.add_argument(
        "--distinct", type=int, help="generate only this many traces, the rest are copies (default: all)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--dir", type=Path, help="where to write them (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    args = parser.parse_args(argv)
    if args.target:
        args.traces, args.gb = 1000, 10.0
    folder = args.dir or Path(tempfile.mkdtemp(prefix="fpdebug-runs-bench-"))
    try:
        files, size = build_folder(folder, args.traces, args.gb, args.distinct)
        times = measure(folder, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    baseline = statistics.median(wall for wall, _ in times["wc -l"])
    baseline_cpu = statistics.median(cpu for _, cpu in times["wc -l"])
    load = os.getloadavg()[0]
    print(
        f"{files} traces, {size / 1e9:.2f} GB, {os.cpu_count()} cores, {args.repeat} rounds (medians), "
        f"load average {load:.1f} at the end"
    )
    for name, values in times.items():
        wall = statistics.median(value[0] for value in values)
        cpu = statistics.median(value[1] for value in values)
        print(
            f"  {name:<10} {wall:7.2f} s  {size / 1e6 / wall:7.0f} MB/s  {wall / baseline:6.1f}x wc -l"
            f"  (min {min(v[0] for v in values):.2f}, max {max(v[0] for v in values):.2f})"
            f"  CPU {cpu:7.2f} s  {cpu / max(baseline_cpu, 1e-3):6.1f}x wc -l"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

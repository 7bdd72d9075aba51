"""Every performance figure of fpdebug in one table, each beside a baseline measured in the same run.

Usage::

    .venv/bin/python -m bench            # 10k, 100k and 1M-event traces (under 10 minutes on 2 cores)
    .venv/bin/python -m bench --quick    # 10k and 100k only (the "big" trace is the 100k one)

The synthetic traces are generated on first use and cached under ``bench/out/`` (see
:mod:`bench.gen_trace`). Each figure runs in child processes (:mod:`bench.probes`,
:mod:`bench.tui_probes`, :mod:`bench.cold_start`) so that memory and caches of one do not leak into the next; the file is
read once first so that every figure, the baselines included, reads it from the page cache. A
fixed piece of work is timed as the best of several runs (other processes on a shared machine
only ever add time); latencies are medians and 95th percentiles of many samples. The table goes
to stdout, the raw numbers to ``bench/out/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.gen_trace import OUT_DIR, ensure_trace

__all__ = ["Figure", "main", "measure"]

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Figure:
    """One row of the table."""

    number: str
    """The item of issue 8 it answers (``1``…``8``, with a letter for sub-rows)."""
    name: str
    """What is measured, on what."""
    measured: str
    """The figure, formatted."""
    baseline: str
    """The baseline it is compared with, measured in the same run, formatted."""
    ratio: str = ""
    """measured / baseline (or the ratio the target is about)."""
    target: str = ""
    """The target of issue 8, if it sets one."""
    met: bool | None = None
    """Whether the target is met (``None``: no target, or not measured)."""
    raw: dict[str, object] = field(default_factory=dict)
    """The numbers behind the row (written to ``results.json``)."""


def _child(module: str, *args: str, timeout: float = 600) -> dict[str, object]:
    """Run ``python -m module args`` and return the JSON object on its last stdout line."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        command = " ".join((module, *args))
        raise RuntimeError(f"{command} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return dict(json.loads(lines[-1]))


def _num(result: dict[str, object], key: str) -> float:
    """A number of a probe's result."""
    value = result[key]
    if not isinstance(value, int | float):
        raise TypeError(f"{key} is {value!r}, not a number")
    return float(value)


def _wall(command: Sequence[str]) -> float:
    """Wall time of a command (stdout discarded), process start included."""
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _mb(size: float) -> str:
    return f"{size / 1e6:,.0f} MB"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _rate(count: float, seconds: float, unit: str) -> str:
    per = count / seconds
    return f"{per / 1e6:.2f} M{unit}/s" if per >= 1e6 else f"{per / 1e3:.0f} k{unit}/s"


# ----------------------------------------------------------------------------------------------
# The figures


def figure_index(path: Path, repeat: int) -> Figure:
    """1. Index build (open a reader: header check + line index) vs ``wc -l`` on the same file."""
    size = path.stat().st_size
    wc = shutil.which("wc") or "wc"
    script = (
        "import sys, time\nfrom fpdebug.trace.reader import TraceReader\n"
        "t = time.perf_counter(); r = TraceReader(sys.argv[1]); d = time.perf_counter() - t\n"
        "print(d, len(r))"
    )
    ours: list[float] = []
    theirs: list[float] = []
    lines = 0
    for _ in range(repeat):  # alternate, so that a noisy neighbour hits both alike
        theirs.append(_wall([wc, "-l", str(path)]))
        out = subprocess.run(
            [sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        ours.append(float(out[0]))
        lines = int(out[1])
    index, count = min(ours), min(theirs)  # best of N: the cost of the work, not of a neighbour
    ratio = index / count
    return Figure(
        "1",
        f"index build, {_mb(size)} / {lines:,} lines",
        f"{_seconds(index)} ({size / index / 1e9:.1f} GB/s)",
        f"wc -l {_seconds(count)} ({size / count / 1e9:.1f} GB/s)",
        f"{ratio:.1f}x",
        "<= 3x wc -l",
        ratio <= 3,
        raw={"index_s": ours, "wc_s": theirs, "bytes": size, "lines": lines},
    )


def figure_model(path: Path) -> list[Figure]:
    """7. RunModel build (time, memory held) from line facts vs the same build with full validation."""
    size = path.stat().st_size
    fast = _child("bench.probes", "model", str(path))
    full = _child("bench.probes", "model", str(path), "--validate")
    fast_s, full_s = _num(fast, "seconds"), _num(full, "seconds")
    held = _num(fast, "held_mb")
    events = int(_num(fast, "events"))
    return [
        Figure(
            "7",
            f"RunModel build, {events:,} events / {fast['iterations']:,} iterations",
            f"{_seconds(fast_s)} ({_rate(events, fast_s, 'ev')})",
            f"full validation {_seconds(full_s)}",
            f"{fast_s / full_s:.2f}x",
            raw={"facts": fast, "full": full},
        ),
        Figure(
            "7b",
            "RunModel memory (model + line index)",
            f"{held:,.0f} MB ({held * 1e6 / size:.1%} of file)",
            f"full validation {_num(full, 'held_mb'):,.0f} MB",
            raw={},
        ),
    ]


def figure_validate_summary(path: Path, repeat: int) -> list[Figure]:
    """8. ``fpdebug validate`` and ``fpdebug summary`` (process start included) vs parsing every line."""
    size = path.stat().st_size
    parses = [_child("bench.probes", "parse", str(path)) for _ in range(repeat)]
    parse = [_num(result, "seconds") for result in parses]
    floor = min(parse)
    rows: list[Figure] = []
    events = int(_num(parses[0], "events"))
    for number, command in (("8", "validate"), ("8b", "summary")):
        walls = [_wall([sys.executable, "-m", "fpdebug", command, str(path)]) for _ in range(repeat)]
        wall = min(walls)
        rows.append(
            Figure(
                number,
                f"fpdebug {command}, {events:,} events",
                f"{_seconds(wall)} ({_rate(events, wall, 'ev')}, {size / wall / 1e6:,.0f} MB/s)",
                f"orjson.loads every line {_seconds(floor)}",
                f"{wall / floor:.1f}x",
                raw={"wall_s": walls, "parse_s": parse, "events": events, "bytes": size},
            )
        )
    return rows


def figure_recording(iterations: int, out_dir: Path) -> list[Figure]:
    """5. A scripted run writing its trace vs the same run into the null sink, per durability policy.

    Rounds alternate the null sink and the three policies (:mod:`bench.recording`); each ratio is
    the median over the rounds of that round's policy / null-sink time, for wall and CPU time.
    """
    rounds = 7
    result = _child(
        "bench.recording",
        "record",
        "--per-round",
        str(max(iterations // rounds, 20)),
        "--rounds",
        str(rounds),
        "--out",
        str(out_dir / "record.fptrace"),
    )
    events = int(_num(result, "events"))
    figures = []
    for policy, number in (("batch", "5"), ("none", "5b"), ("every", "5e")):
        wall, cpu = _num(result, f"{policy}_wall_x"), _num(result, f"{policy}_cpu_x")
        figures.append(
            Figure(
                number,
                f"recording, {int(_num(result, 'iterations')):,}-iteration scripted run ({events:,} events), "
                f'durability="{policy}"'
                if policy == "batch"
                else f'  same, durability="{policy}"',
                f"median wall {wall:.2f}x, CPU {cpu:.2f}x",
                f"null sink, same {rounds} rounds",
                f"{wall:.2f}x",
                "<= 1.15x" if policy == "batch" else "",
                wall <= 1.15 if policy == "batch" else None,
                raw=result if policy == "batch" else {},
            )
        )
    return [*figures, figure_bytes_per_iteration(), figure_record_costs(min(iterations, 2_000), out_dir)]


def figure_bytes_per_iteration() -> Figure:
    """5f. Trace bytes per iteration of one run of 10, 100 and 1,000 iterations: flat, or growing."""
    result = _child("bench.recording", "bytes-per-iteration", timeout=1800)
    per = {
        count: _num(dict(row), "bytes_per_iteration")
        for count, row in result.items()
        if isinstance(row, dict)
    }
    first, last = per["10"], per[max(per, key=int)]
    return Figure(
        "5f",
        "  bytes per iteration, one run of " + " / ".join(f"{int(count):,}" for count in per) + " iterations",
        " / ".join(f"{value / 1e3:,.1f} KB" for value in per.values()),
        "the 10-iteration run",
        f"{last / first:.2f}x",
        "flat (<= 1.10x)",
        last / first <= 1.10,
        raw=result,
    )


def figure_record_costs(iterations: int, out_dir: Path) -> Figure:
    """5d. What one recorded event costs: serialising, writing, its share of fsyncs; vs the engine."""
    costs = _child(
        "bench.probes",
        "record-costs",
        "--iterations",
        str(iterations),
        "--out",
        str(out_dir / "costs.fptrace.jsonl"),
    )
    dump, redact = _num(costs, "dump_us"), _num(costs, "redact_us")
    write, sync = _num(costs, "write_us"), _num(costs, "fsync_us")
    engine = _num(costs, "engine_us")
    average = _num(costs, "bytes") / _num(costs, "events")
    return Figure(
        "5d",
        f"  per event ({average / 1e3:.1f} KB average): what recording adds",
        f"dump {dump:.1f} + redact {redact:.1f} + write {write:.1f} + fsync {sync:.1f} us "
        f"({_num(costs, 'fsync_ms_each'):.2f} ms / 64 events)",
        f"the engine's own work {engine:.0f} us",
        f"{1 + (dump + redact + write + sync) / engine:.2f}x",
        raw=costs,
    )


def figure_writer(path: Path, out_dir: Path) -> Figure:
    """5c. TraceWriter.append throughput on the events of a generated trace vs serialising them only."""
    result = _child("bench.probes", "writer", str(path), "--out", str(out_dir / "writer.fptrace.jsonl"))
    events, size = int(_num(result, "events")), int(_num(result, "bytes"))
    batch, none = _num(result, "batch_seconds"), _num(result, "none_seconds")
    dump = _num(result, "dump_seconds")
    return Figure(
        "5c",
        f"writer throughput, {events:,} events of the 10k trace",
        f"batch {_rate(events, batch, 'ev')} ({size / batch / 1e6:,.0f} MB/s); "
        f"none {_rate(events, none, 'ev')} ({size / none / 1e6:,.0f} MB/s)",
        f"dump_record only {_rate(events, dump, 'ev')}",
        f"{batch / dump:.1f}x, {none / dump:.1f}x",
        raw=result,
    )


def measure(*, quick: bool, seed: int, repeat: int, log: Callable[[str], None]) -> list[Figure]:
    """Run every figure; return the rows in table order."""
    sizes = {"small": 10_000, "big": 100_000 if quick else 1_000_000}
    traces = {label: ensure_trace(n, seed=seed, log=log) for label, n in sizes.items()}
    for trace in traces.values():  # into the page cache, for every figure alike
        with open(trace, "rb") as handle:
            while handle.read(64 << 20):
                pass
    big = traces["big"]
    figures: list[Figure] = []
    steps: list[tuple[str, Callable[[], list[Figure]]]] = [
        ("index", lambda: [figure_index(big, repeat=max(repeat, 5))]),
        ("tui", lambda: _tui_figures(traces["small"], big, repeat)),
        ("cold start", lambda: [_cold_start_figure(max(repeat, 10))]),
        (
            "recording",
            lambda: [
                *figure_recording(2_000 if quick else 10_000, OUT_DIR),
                figure_writer(traces["small"], OUT_DIR),
            ],
        ),
        ("model", lambda: figure_model(big)),
        # Seconds each on the 1M trace: two runs (the faster one counts) keep the total in budget.
        ("validate", lambda: figure_validate_summary(big, repeat if quick else min(repeat, 2))),
    ]
    for name, step in steps:
        started = time.perf_counter()
        try:
            figures.extend(step())
        except Exception as error:
            figures.append(Figure("!", f"{name}: failed", f"{type(error).__name__}: {error}"[:200], ""))
        log(f"{name}: {time.perf_counter() - started:.1f} s")
    return sorted(figures, key=lambda f: (f.number.rstrip("abc"), f.number))


def _cold_start_figure(repeat: int) -> Figure:
    from bench import cold_start

    return cold_start.figure(repeat=repeat)


def _tui_figures(small: Path, big: Path, repeat: int) -> list[Figure]:
    from bench import tui_probes

    return tui_probes.figures(small, big, repeat=repeat, child=_child)


def render(figures: Sequence[Figure]) -> str:
    """The table, as Markdown (it reads as plain text too)."""
    header = ("#", "figure", "measured", "baseline (same run)", "ratio", "target", "met")
    rows = [
        (
            f.number,
            f.name,
            f.measured,
            f.baseline,
            f.ratio,
            f.target,
            "" if f.met is None else ("yes" if f.met else "NO"),
        )
        for f in figures
    ]
    widths = [max(len(str(row[k])) for row in (header, *rows)) for k in range(len(header))]
    out = [
        "| " + " | ".join(str(cell).ljust(w) for cell, w in zip(header, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out += ["| " + " | ".join(str(cell).ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench [--quick] [--seed N] [--repeat N]``: measure, print the table and the wall time."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k traces only (fast iteration)")
    parser.add_argument("--seed", type=int, default=0, help="the traces' seed (default 0)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each timing (median or best)")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr, flush=True)

    figures = measure(quick=args.quick, seed=args.seed, repeat=args.repeat, log=log)
    total = time.perf_counter() - started
    machine = f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"
    print(render(figures))
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, seed {args.seed}, {machine}: total wall time {total:.0f} s")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "results.json").write_text(
        json.dumps(
            {
                "quick": args.quick,
                "seed": args.seed,
                "total_s": total,
                "machine": machine,
                "figures": [asdict(f) for f in figures],
            },
            indent=2,
        )
    )
    return 0

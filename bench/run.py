"""Every performance figure of fpdebug, on two trace shapes, each beside a baseline alternated with it.

Usage::

    .venv/bin/python -m bench                   # 10k, 100k, 1M on both shapes, then 10M (~24 min, 2 idle cores)
    .venv/bin/python -m bench --quick --no-10m  # 2k and 10k, 2 pairs per figure, no 10M
    .venv/bin/python -m bench --sizes 200 --repeat 1 --steps index commands --commands model
    .venv/bin/python -m bench --estimate        # each step's estimated duration (bench.budget), nothing measured
    .venv/bin/python -m bench --markdown bench/out/results.json   # a run's tables in Markdown (bench.report_md)

Issue 22 asked for a bench that cannot flatter itself. So:

- every trace figure is measured on both shapes, the synthetic trace of :mod:`bench.gen_trace`
  and the demo-shaped trace of :mod:`bench.demo_trace`, at every size of ``--sizes``;
- every figure runs in fresh interpreters (fork + exec), and every RSS figure is the child's own
  ``VmHWM`` (:func:`bench.probes.peak_rss_mb`), never ``ru_maxrss``, which Linux carries over
  ``exec`` from a forked parent; a command that forks is counted as its process tree's summed PSS
  (:func:`bench.commands.memory`), so what a forked worker inherited counts once;
- the whole-file commands are judged on their wall ratio to the orjson parse (issue 22's "on 2
  cores"), with the CPU ratio beside it, and their linearity on the marginal per-event cost
  between sizes (:func:`bench.figures.linearity_figures`);
- the run fits its 25 minutes where a figure could run away: from 1M events a command past
  ``--stop-ratio`` times the parse is stopped (and not met), the 10M full load is capped
  (``--10m-load-timeout``); each step logs its estimate and the run's ETA;
- every figure alternates with its baseline pair by pair in the same run; a row shows the medians
  and the median of the per-pair ratios (:mod:`bench.figures`, :mod:`bench.commands`);
- the index and the first screen are measured with an empty cache directory (cold) and with the
  one an earlier open filled (reopen, the persisted index); the whole run gets a cache directory
  of its own;
- the 10M-event traces are generated into a directory of their own and removed, even on failure.

The table goes to stdout (with ``shape`` and ``size`` columns), the raw numbers of every pair to
``results.json`` under ``--out-dir`` (``bench/out/`` by default).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.commands import COMMAND_ROWS, COMMANDS
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
    shape: str = ""
    """``synthetic`` or ``demo`` (the trace it was measured on); ``scripted`` for the recording rows."""
    size: int = 0
    """The trace's size in events (0: no trace)."""


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
        f"writer throughput, {events:,} events of the trace",
        f"batch {_rate(events, batch, 'ev')} ({size / batch / 1e6:,.0f} MB/s); "
        f"none {_rate(events, none, 'ev')} ({size / none / 1e6:,.0f} MB/s)",
        f"dump_record only {_rate(events, dump, 'ev')}",
        f"{batch / dump:.1f}x, {none / dump:.1f}x",
        raw=result,
    )


SHAPES = ("synthetic", "demo")
"""The two shapes: :mod:`bench.gen_trace`'s long runs of ~2 KB events, :mod:`bench.demo_trace`'s real demo runs."""
FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (2_000, 10_000)
STEPS = ("index", "commands", "tui", "cold-start", "recording", "10m")
"""What ``--steps`` can name (all by default)."""
TEN_M = 10_000_000


def ensure_shape(shape: str, events: int, *, seed: int = 0, out_dir: Path = OUT_DIR) -> Path:
    """The trace of ``shape`` with about ``events`` events (generated into ``out_dir`` when missing)."""
    from bench.demo_trace import ensure_demo_trace

    if shape == "demo":
        return ensure_demo_trace(events, out_dir=out_dir)
    return ensure_trace(events, seed=seed, out_dir=out_dir)


def _warm(path: Path) -> None:
    """Read the file once, so every figure and every baseline reads it from the page cache alike."""
    with open(path, "rb") as handle:
        while handle.read(64 << 20):
            pass


MID = 100_000
LARGE = 1_000_000
"""From this size on, a figure takes ``Plan.large_repeat`` pairs and commands may be stopped."""


@dataclass
class Plan:
    """What one run of the bench measures."""

    sizes: Sequence[int]
    repeat: int
    steps: Sequence[str]
    shapes: Sequence[str] = SHAPES
    ten_m_shapes: Sequence[str] = SHAPES
    seed: int = 0
    out_dir: Path = OUT_DIR
    quick: bool = False
    commands: Sequence[str] = ()
    """The whole-file commands (names of :data:`bench.commands.COMMANDS`; all of the table's by default)."""
    large_repeat: int = 1
    """Pairs per figure at :data:`LARGE` events and more (one 1M pair of a command is minutes)."""
    stop_ratio: float | None = 4.0
    """From :data:`LARGE` events on, stop a command past this many times the parse (see
    :func:`bench.commands.measure`): its row says so and is not met."""
    ten_m_commands: Sequence[str] = ()
    """The commands measured at 10M events too (their linearity then runs to 10M)... None by default:
    even ``RunModel.build``, the cheapest, is about 2.5 minutes at 10M, which a 25-minute run has
    no room for while the commands cost what they do (``--10m-commands model``)."""
    ten_m_command_shapes: Sequence[str] = ("demo",)
    """...on these shapes (the demo shape: issue 22's 10M targets are about demo-shaped traces)."""
    load_timeout_10m: float = 90.0
    """Seconds the app's full load of 10M events may take (1.5 times issue 22's 60 s: past them its
    verdict is known)."""

    def pairs(self, size: int) -> int:
        """Alternated pairs per figure at ``size`` events: ``repeat`` below 100k, at most 2 from 100k,
        ``large_repeat`` from :data:`LARGE` (the budget of a full run, see :mod:`bench.budget`)."""
        if size >= LARGE:
            return min(self.repeat, self.large_repeat)
        return min(self.repeat, 2) if size >= MID else self.repeat

    def stop(self, size: int) -> float | None:
        """The stop ratio of the commands at ``size`` events (none below :data:`LARGE`)."""
        return self.stop_ratio if size >= LARGE else None


@dataclass
class Step:
    """One step of the run: its name, its estimated seconds (idle, 2 cores), and what it does."""

    name: str
    estimate: float
    run: Callable[[], list[Figure]]


def _tagged(rows: list[Figure], shape: str, size: int) -> list[Figure]:
    for row in rows:
        row.shape, row.size = shape, size
    return rows


class _Traces(dict[int, Path]):
    """The traces of one shape, generated (when missing) and read into the page cache on first use."""

    def __init__(self, plan: Plan, shape: str) -> None:
        super().__init__()
        self.plan, self.shape = plan, shape

    def __missing__(self, size: int) -> Path:
        trace = ensure_shape(self.shape, size, seed=self.plan.seed, out_dir=self.plan.out_dir)
        _warm(trace)
        self[size] = trace
        return trace


@dataclass
class _Lazy:
    """The trace of one size, resolved when a step runs (so planning alone generates nothing)."""

    traces: _Traces
    size: int

    def __call__(self) -> Path:
        return self.traces[self.size]


def _shape_steps(plan: Plan, shape: str) -> Iterator[Step]:
    """The steps of one shape, each returning its rows (already tagged)."""
    from bench import figures as fig
    from bench.budget import duration

    traces = _Traces(plan, shape)
    smallest, largest = min(plan.sizes), max(plan.sizes)
    for size in plan.sizes:
        trace = _Lazy(traces, size)
        pairs = plan.pairs(size)
        if "index" in plan.steps:
            yield Step(
                f"{shape} {label(size)} index",
                duration("index", shape, size, pairs),
                lambda t=trace, n=size, k=pairs: _tagged(fig.index_figures(t(), k), shape, n),
            )
        if "commands" in plan.steps:
            yield Step(
                f"{shape} {label(size)} commands",
                duration("commands", shape, size, pairs, names=plan.commands, stop_ratio=plan.stop(size)),
                lambda t=trace, n=size, k=pairs: _tagged(
                    fig.command_figures(t(), k, plan.commands, stop_ratio=plan.stop(n)), shape, n
                ),
            )
        if "tui" in plan.steps:
            yield Step(
                f"{shape} {label(size)} first screen + RSS",
                duration("tui", shape, size, pairs),
                lambda t=trace, n=size, k=pairs: _tagged(
                    [*fig.first_screen_figures(t(), traces[smallest], k), *fig.rss_figures(t(), k)], shape, n
                ),
            )
    if "tui" in plan.steps:
        yield Step(
            f"{shape} jump",
            duration("jump", shape, largest, 1),
            lambda: _tagged([fig.jump_figure(traces[largest])], shape, largest),
        )
        yield Step(
            f"{shape} follow",
            duration("follow", shape, smallest, 1),
            lambda: _tagged([fig.follow_figure(traces[smallest])], shape, smallest),
        )
    if "cold-start" in plan.steps:
        yield Step(
            f"{shape} cold start",
            duration("cold-start", shape, smallest, plan.repeat),
            lambda: _tagged([fig.cold_start_figure(traces[smallest], max(plan.repeat, 3))], shape, smallest),
        )
    if "recording" in plan.steps:
        yield Step(
            f"{shape} writer",
            duration("writer", shape, smallest, 1),
            lambda: _tagged([figure_writer(traces[smallest], plan.out_dir)], shape, smallest),
        )


def _ten_million(plan: Plan, shape: str, log: Callable[[str], None]) -> list[Figure]:
    """10M events of ``shape``: generated into a directory of its own, measured, and removed, even on failure."""
    from bench import figures as fig

    work = Path(tempfile.mkdtemp(prefix="fpdebug-bench-10m-", dir=plan.out_dir))
    try:
        started = time.perf_counter()
        trace = ensure_shape(shape, TEN_M, seed=plan.seed, out_dir=work)
        log(
            f"{shape} 10M: generated {trace.stat().st_size / 1e9:.1f} GB in {time.perf_counter() - started:.0f} s"
        )
        _warm(trace)
        smallest = ensure_shape(shape, min(plan.sizes), seed=plan.seed, out_dir=plan.out_dir)
        pairs = plan.pairs(TEN_M)
        rows = [
            *fig.index_figures(trace, pairs),
            *fig.first_screen_figures(trace, smallest, pairs),
            *fig.rss_figures(trace, 1, load_timeout=plan.load_timeout_10m),
        ]
        if plan.ten_m_commands and shape in plan.ten_m_command_shapes:
            rows += fig.command_figures(trace, pairs, plan.ten_m_commands, stop_ratio=plan.stop(TEN_M))
            _renumber(rows, plan.commands)
        return _tagged(rows, shape, TEN_M)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _renumber(rows: list[Figure], table: Sequence[str]) -> None:
    """Give the 10M command rows the letter their command has in the smaller sizes' rows (8a…8f)."""
    for row in rows:
        name = row.raw.get("command", row.raw.get("stopped_command"))
        if isinstance(name, str) and name in table:
            row.number = f"8{chr(ord('a') + list(table).index(name))}"


def _ten_million_estimate(plan: Plan, shape: str) -> float:
    from bench.budget import duration

    pairs = plan.pairs(TEN_M)
    return (
        duration("generate", shape, TEN_M, 1)
        + duration("index", shape, TEN_M, pairs)
        + duration("tui", shape, TEN_M, 1, load_timeout=plan.load_timeout_10m)
        + 2 * duration("tui", shape, 0, pairs - 1 if pairs > 1 else 0)  # the other first screens
        + duration(
            "commands",
            shape,
            TEN_M,
            pairs,
            names=plan.ten_m_commands if shape in plan.ten_m_command_shapes else (),
            stop_ratio=plan.stop(TEN_M),
        )
    )


def _recording_steps(plan: Plan) -> Iterator[Step]:
    from bench.budget import duration

    if "recording" in plan.steps:
        iterations = 2_000 if plan.quick else 10_000
        yield Step(
            "recording",
            duration("recording", "", 0, 1) * (0.4 if plan.quick else 1),
            lambda: _tagged(figure_recording(iterations, plan.out_dir), "scripted", 0),
        )


def plan_steps(plan: Plan, log: Callable[[str], None]) -> list[Step]:
    """Every step of ``plan``, in the order they run, each with its estimate."""
    steps: list[Step] = []
    for shape in plan.shapes:
        steps.extend(_shape_steps(plan, shape))
    steps.extend(_recording_steps(plan))
    if "10m" in plan.steps:
        steps.extend(
            Step(
                f"{shape} 10M", _ten_million_estimate(plan, shape), lambda s=shape: _ten_million(plan, s, log)
            )
            for shape in plan.ten_m_shapes
        )
    return steps


def measure(plan: Plan, log: Callable[[str], None]) -> list[Figure]:
    """Run every step of ``plan``; a step that fails becomes a row saying so. Rows in table order.

    Before the first step it logs the estimated duration of each and of the whole run (on an idle
    2-core machine, :mod:`bench.budget`); after each, a progress line with the ETA.
    """
    from bench import figures as fig
    from bench.budget import Eta

    steps = plan_steps(plan, log)
    eta = Eta([step.estimate for step in steps])
    log(f"{len(steps)} steps, estimated {eta.total / 60:.1f} min on an idle 2-core machine:")
    for number, step in enumerate(steps, 1):
        log(f"  [{number}/{len(steps)}] {step.name}: ~{step.estimate:.0f} s")
    rows: list[Figure] = []
    for step in steps:
        started = time.perf_counter()
        try:
            done = step.run()
        except Exception as error:  # one broken figure must not lose the others
            done = [Figure("!", f"{step.name}: failed", f"{type(error).__name__}: {error}"[:300], "")]
        rows.extend(done)
        eta.step_done()
        log(eta.line(step.name, time.perf_counter() - started))
        for row in done:  # as they come: a run stopped early still says what it measured
            log(f"  {row.number} {row.name.strip()}: {row.measured} | {row.baseline} | {row.ratio}")
    rows.extend(fig.linearity_figures(rows))
    order = {shape: k for k, shape in enumerate((*SHAPES, "scripted", ""))}
    return sorted(rows, key=lambda f: (order.get(f.shape, 9), f.number.rstrip("abcdefz"), f.number, f.size))


def label(events: int) -> str:
    """``10000`` -> ``10k``, ``1000000`` -> ``1M``."""
    if events >= 1_000_000 and events % 1_000_000 == 0:
        return f"{events // 1_000_000}M"
    if events >= 1_000 and events % 1_000 == 0:
        return f"{events // 1_000}k"
    return str(events)


def render(figures: Sequence[Figure]) -> str:
    """The table, as Markdown (it reads as plain text too)."""
    from bench.figures import label

    header = ("shape", "size", "#", "figure", "measured", "baseline (same run)", "ratio", "target", "met")
    rows = [
        (
            f.shape or "-",
            label(f.size) if f.size else "-",
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
        "| " + " | ".join(str(cell).ljust(w) for cell, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out += [
        "| " + " | ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k and 10k traces, 2 pairs per figure")
    parser.add_argument("--sizes", type=int, nargs="+", help="trace sizes in events (default 10k 100k 1M)")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS), help="what to measure")
    parser.add_argument(
        "--commands", nargs="+", choices=sorted(COMMANDS), help="whole-file commands (default: all six)"
    )
    parser.add_argument("--no-10m", action="store_true", help="skip the 10M-event traces")
    parser.add_argument(
        "--10m-shapes",
        dest="ten_m_shapes",
        nargs="+",
        choices=SHAPES,
        default=list(SHAPES),
        help="the shapes measured at 10M events (default both)",
    )
    parser.add_argument(
        "--10m-commands",
        dest="ten_m_commands",
        nargs="*",
        choices=sorted(COMMANDS),
        default=list(Plan.ten_m_commands),
        help="the commands measured at 10M events too (default none; `model` adds about 2.5 min)",
    )
    parser.add_argument(
        "--10m-command-shapes",
        dest="ten_m_command_shapes",
        nargs="+",
        choices=SHAPES,
        default=list(Plan.ten_m_command_shapes),
        help="the shapes the --10m-commands run on (default demo)",
    )
    parser.add_argument(
        "--10m-load-timeout",
        dest="load_timeout_10m",
        type=float,
        default=Plan.load_timeout_10m,
        help="seconds the app's full load of 10M events may take (default 90: 1.5x the target)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the synthetic traces' seed (default 0)")
    parser.add_argument("--repeat", type=int, help="alternated pairs per figure (default 3; 2 with --quick)")
    parser.add_argument(
        "--large-repeat",
        type=int,
        default=Plan.large_repeat,
        help=f"pairs per figure from {LARGE:,} events on (default {Plan.large_repeat})",
    )
    parser.add_argument(
        "--stop-ratio",
        type=float,
        default=Plan.stop_ratio,
        help=f"from {LARGE:,} events on, stop a command past this many times the parse's wall "
        f"(default {Plan.stop_ratio:g}; 0: never)",
    )
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="traces and results.json (bench/out)")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print each step's estimated duration and exit (measures nothing)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="RESULTS",
        help="print the Markdown tables of a results.json (bench/report_md.py) and exit",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench [--quick] [--sizes N…] [--no-10m] [--repeat N]``: measure, print, write results.json."""
    args = _parser().parse_args(argv)
    if args.markdown is not None:
        from bench import report_md

        return report_md.main([str(args.markdown)])
    repeat = args.repeat or (2 if args.quick else 3)
    steps = [step for step in args.steps if not (step == "10m" and args.no_10m)]
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    plan = Plan(
        sizes,
        repeat,
        steps,
        args.shapes,
        args.ten_m_shapes,
        args.seed,
        args.out_dir,
        args.quick,
        args.commands or COMMAND_ROWS,
        large_repeat=args.large_repeat,
        stop_ratio=args.stop_ratio or None,
        ten_m_commands=args.ten_m_commands,
        ten_m_command_shapes=args.ten_m_command_shapes,
        load_timeout_10m=args.load_timeout_10m,
    )
    started = time.perf_counter()

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr, flush=True)

    if args.estimate:
        planned = plan_steps(plan, log)
        for step in planned:
            print(f"{step.estimate:7.0f} s  {step.name}")
        print(f"{sum(step.estimate for step in planned) / 60:7.1f} min in all (idle 2-core machine)")
        return 0
    args.out_dir.mkdir(parents=True, exist_ok=True)
    # Every child gets a cache directory of the bench's own: the user's persisted indexes must not
    # make a "cold" figure warm, and backtrack's sidecars must not land in the user's cache.
    cache = tempfile.mkdtemp(prefix="fpdebug-bench-xdg-")
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = cache
    try:
        figures = measure(plan, log)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if previous is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = previous
    total = time.perf_counter() - started
    machine = f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"
    print(render(figures))
    mode = "quick" if args.quick else "full"
    print(
        f"\n{mode} run, alternated pairs per figure: "
        + ", ".join(f"{plan.pairs(size)} at {label(size)}" for size in sorted(sizes))
        + f", seed {args.seed}, {machine}: total wall time {total:.0f} s ({total / 60:.1f} min)"
    )
    log(f"done: total wall time {total:.0f} s ({total / 60:.1f} min)")
    (args.out_dir / "results.json").write_text(
        json.dumps(
            {
                "quick": args.quick,
                "sizes": list(sizes),
                "repeat": repeat,
                "large_repeat": plan.pairs(LARGE),
                "pairs": {
                    str(size): plan.pairs(size)
                    for size in sorted({*sizes, *([TEN_M] if "10m" in steps else [])})
                },
                "stop_ratio": plan.stop_ratio,
                "ten_m_commands": list(plan.ten_m_commands),
                "ten_m_command_shapes": list(plan.ten_m_command_shapes),
                "steps": steps,
                "seed": args.seed,
                "total_s": total,
                "machine": machine,
                "load": os.getloadavg(),
                "figures": [asdict(f) for f in figures],
            },
            indent=2,
        )
    )
    return 0

"""The figures of ``python -m bench`` that are measured on a trace: one set per shape and size (issue 22).

Every figure here is measured in fresh interpreters (``subprocess``: fork + exec, so each child's
``VmHWM`` is its own peak since its ``exec``, never its parent's) and alternated with its baseline
in the same run: baseline, figure, baseline, figure… The row gives the median of each side and the
median of the per-pair ratios (a neighbour's load lands on one pair, not on one side).

The persisted index (a cache under ``$XDG_CACHE_HOME/fpdebug``) is measured both ways: *cold*, each
child with an empty cache directory of its own, and *reopen*, each child with a cache directory an
earlier open of the same file has filled.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench import commands
from bench.commands import COMMAND_ROWS
from bench.run import Figure

__all__ = [
    "COMMAND_ROWS",
    "child",
    "command_figures",
    "first_screen_figures",
    "index_figures",
    "jump_figure",
    "label",
    "linearity_figures",
    "rss_figure",
]

ROOT = Path(__file__).resolve().parent.parent
WARM_UP = ROOT / "sample_traces" / "support.fptrace.jsonl"
"""A small trace each index child opens first, outside the clock."""
PARSE_TARGET = 3.0
"""Issue 22: every whole-file command at most 3x an orjson parse of every line."""
RSS_TARGET = 0.25
"""Issue 22: peak RSS at most 25 % of the file."""
LINEAR_TARGET = 1.10
"""Issue 22: per-event cost flat within 10 % across sizes."""


def label(events: int) -> str:
    """``10000`` -> ``10k``, ``1000000`` -> ``1M``."""
    if events >= 1_000_000 and events % 1_000_000 == 0:
        return f"{events // 1_000_000}M"
    if events >= 1_000 and events % 1_000 == 0:
        return f"{events // 1_000}k"
    return str(events)


def child(module: str, *args: str, cache: Path | None = None, timeout: float = 1800) -> dict[str, object]:
    """Run ``python -m module args`` in a fresh interpreter; the JSON object on its last stdout line.

    Args:
        module: The probe module.
        args: Its arguments.
        cache: ``XDG_CACHE_HOME`` of the child (the bench's own by default).
        timeout: Seconds before the child is killed.
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{module} {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-800:]}"
        )
    return dict(json.loads(lines[-1]))


@contextmanager
def _cache_dir() -> Iterator[Path]:
    """A fresh, empty cache directory, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="fpdebug-bench-cache-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _num(result: dict[str, object], key: str) -> float:
    value = result[key]
    if not isinstance(value, int | float):
        raise TypeError(f"{key} is {value!r}, not a number")
    return float(value)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


def _s(seconds: float) -> str:
    return _ms(seconds) if seconds < 1 else f"{seconds:.2f} s"


def _pairs(baseline: Sequence[float], measured: Sequence[float]) -> tuple[float, float, float]:
    """Median of the baselines, of the figures, and of the per-pair ratios."""
    ratios = [m / b for b, m in zip(baseline, measured, strict=True) if b > 0]
    return statistics.median(baseline), statistics.median(measured), statistics.median(ratios or [0.0])


# ----------------------------------------------------------------------------------------------
# Index build


# The reader imports parts of itself on first use (a third of a second): one open of another,
# small file pays them before the clock, so the figure is the index build, not Python's imports.
_OPEN = (
    "import sys, time\nfrom fpdebug.trace.reader import TraceReader\n"
    "TraceReader(sys.argv[2]).close()\n"
    "i = time.perf_counter()\nr = TraceReader(sys.argv[1]); n = len(r)\nd = time.perf_counter() - i\n"
    "hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "import json; print(json.dumps({'seconds': d, 'lines': n, 'peak_kb': hwm}))"
)


def _open(path: Path, cache: Path) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", _OPEN, str(path), str(WARM_UP)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _wc(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run([shutil.which("wc") or "wc", "-l", str(path)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def index_figures(path: Path, repeat: int) -> list[Figure]:
    """Index build, cold (empty cache) and on reopen (the persisted index), each vs ``wc -l``.

    Each round: ``wc -l``, a cold open in an empty cache directory, then a reopen in the directory
    that open filled. The ``wc -l`` walls include its process start; the opens are timed inside
    their child, after the import.
    """
    wcs: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    lines = 0
    for _ in range(repeat):
        with _cache_dir() as cache:
            wcs.append(_wc(path))
            first = _open(path, cache)
            cold.append(_num(first, "seconds"))
            warm.append(_num(_open(path, cache), "seconds"))
            lines = int(_num(first, "lines"))
    size = path.stat().st_size
    base, ours, ratio = _pairs(wcs, cold)
    _, again, again_ratio = _pairs(wcs, warm)
    return [
        Figure(
            "1",
            f"index build, cold cache ({size / 1e6:,.0f} MB, {lines:,} lines)",
            f"{_s(ours)} ({size / ours / 1e9:.1f} GB/s)",
            f"wc -l {_s(base)}",
            f"{ratio:.1f}x",
            "<= 3x wc -l",
            ratio <= 3,
            raw={"cold_s": cold, "wc_s": wcs, "bytes": size, "lines": lines},
        ),
        Figure(
            "1b",
            "  index on reopen (persisted index in the cache dir)",
            _s(again),
            f"wc -l {_s(base)}; cold {_s(ours)}",
            f"{again_ratio:.2f}x",
            raw={"reopen_s": warm, "wc_s": wcs},
        ),
    ]


# ----------------------------------------------------------------------------------------------
# Whole-file commands against the orjson parse anchor


def command_figures(path: Path, repeat: int, names: Sequence[str] = COMMAND_ROWS) -> list[Figure]:
    """Each whole-file command vs an orjson parse of every line, alternated (:func:`bench.commands.measure`)."""
    rows: list[Figure] = []
    for number, name in enumerate(names):
        result = commands.measure(name, path, repeat)
        share = result["peak_mb"] * 1024 * 1024 / (result["mb"] * 1e6)
        ratio = result["pair_ratio_cpu"]
        met = ratio <= PARSE_TARGET and share <= RSS_TARGET
        shown = "RunModel.build" if name == "model" else f"fpdebug {' '.join(commands.COMMANDS[name][0])}"
        rows.append(
            Figure(
                f"8{chr(ord('a') + number)}",
                shown,
                f"CPU {_s(result['cpu'])} ({result['us_per_event']:.1f} us/ev), "
                f"RSS {result['peak_mb']:,.0f} MB = {share:.1%}",
                f"orjson parse CPU {_s(result['parse_cpu'])}, RSS {result['parse_peak_mb']:,.0f} MB",
                f"{ratio:.2f}x (wall {result['pair_ratio_wall']:.2f}x)",
                "<= 3x parse, RSS <= 25 %",
                met,
                raw={"command": name, **result},
            )
        )
    return rows


def linearity_figures(rows: Sequence[Figure]) -> list[Figure]:
    """Per shape and command, the per-event CPU cost at the largest size against the smallest."""
    out: list[Figure] = []
    groups: dict[tuple[str, str], list[Figure]] = {}
    for row in rows:
        name = row.raw.get("command")
        if isinstance(name, str):
            groups.setdefault((row.shape, name), []).append(row)
    for (shape, _name), group in groups.items():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda f: f.size)
        costs = [float(f.raw["us_per_event"]) for f in ordered]  # type: ignore[arg-type]
        ratio = costs[-1] / costs[0] if costs[0] else 0.0
        sizes = " / ".join(label(f.size) for f in ordered)
        out.append(
            Figure(
                "8z",
                f"  linearity of {ordered[0].name}: us/event at {sizes}",
                " / ".join(f"{cost:.1f}" for cost in costs),
                f"the {label(ordered[0].size)} run",
                f"{ratio:.2f}x",
                "flat within 10 %",
                abs(ratio - 1) <= LINEAR_TARGET - 1,
                raw={"us_per_event": costs, "sizes": [f.size for f in ordered]},
                shape=shape,
                size=ordered[-1].size,
            )
        )
    return out


# ----------------------------------------------------------------------------------------------
# The viewer (probes of bench.tui_probes)


def first_screen_figures(path: Path, smallest: Path, repeat: int) -> list[Figure]:
    """First screen of ``path`` (cold cache, then reopened) alternated with that of the shape's smallest trace."""
    module = "bench.tui_probes"
    small: list[float] = []
    cold: list[float] = []
    warm: list[float] = []
    for _ in range(repeat):
        with _cache_dir() as cache:
            with _cache_dir() as other:
                small.append(_num(child(module, "first-screen", str(smallest), cache=other), "seconds"))
            cold.append(_num(child(module, "first-screen", str(path), cache=cache), "seconds"))
            warm.append(_num(child(module, "first-screen", str(path), cache=cache), "seconds"))
    base, ours, ratio = _pairs(small, cold)
    cold_median, again, again_ratio = _pairs(cold, warm)
    return [
        Figure(
            "2",
            "first screen, cold cache (app built -> first timeline rows)",
            _ms(ours),
            f"{label(int(smallest.name.split('-')[1]))} trace, same shape {_ms(base)}",
            f"{ratio:.2f}x",
            "< 0.5 s",
            ours < 0.5,
            raw={"cold_s": cold, "small_s": small},
        ),
        Figure(
            "2b",
            "  first screen on reopen (persisted index)",
            _ms(again),
            f"cold {_ms(cold_median)}",
            f"{again_ratio:.2f}x",
            "< 0.3 s",
            again < 0.3,
            raw={"reopen_s": warm, "cold_s": cold},
        ),
    ]


def rss_figure(path: Path, repeat: int, *, timeout: float = 1800) -> Figure:
    """Peak RSS viewing ``path`` (loaded, jumped around) minus a fresh child that only imports the app."""
    module = "bench.tui_probes"
    bases: list[float] = []
    views: list[float] = []
    for _ in range(repeat):
        with _cache_dir() as cache:
            bases.append(_num(child(module, "rss-baseline", cache=cache), "peak_mb"))
            views.append(_num(child(module, "rss", str(path), cache=cache, timeout=timeout), "peak_mb"))
    size = path.stat().st_size
    base, view = statistics.median(bases), statistics.median(views)
    held = statistics.median(v - b for b, v in zip(bases, views, strict=True))
    share = held * 1e6 / size
    return Figure(
        "4",
        "peak RSS while viewing (VmHWM of a fresh process), minus imports",
        f"{held:,.0f} MB = {share:.1%} of {size / 1e6:,.0f} MB",
        f"imports only {base:,.0f} MB (viewing {view:,.0f} MB)",
        f"{share:.1%}",
        "< 25 % of the file",
        share < RSS_TARGET,
        raw={"viewing_mb": views, "baseline_mb": bases, "bytes": size},
    )


def jump_figure(path: Path) -> Figure:
    """Jumps to random iterations; baseline: reading the same records cold, in the same child."""
    result = child("bench.tui_probes", "jump", str(path))
    times = [float(v) for v in result["jump_s"]]  # type: ignore[union-attr]
    data = [float(v) for v in result["data_s"]]  # type: ignore[union-attr]
    median, base = statistics.median(times), statistics.median(data)
    return Figure(
        "3",
        f"jump to a random iteration + inspector rendered ({len(times)} jumps)",
        f"median {_ms(median)}",
        f"its records read cold: median {_ms(base)}",
        f"{median / base:.1f}x" if base else "",
        "median < 50 ms",
        median < 0.05,
        raw=result,
    )


def follow_figure(path: Path) -> Figure:
    """Append by another process -> row rendered; baseline: a bare reader polling the same file."""
    result = child("bench.tui_probes", "follow", str(path))
    app = [float(v) for v in result["app_s"]]  # type: ignore[union-attr]
    reader = [float(v) for v in result["reader_s"]]  # type: ignore[union-attr]
    median, base = statistics.median(app), statistics.median(reader)
    return Figure(
        "6",
        f"follow latency, append -> row rendered ({len(app)} appends)",
        f"median {_ms(median)}",
        f"bare reader polling: median {_ms(base)}",
        f"{median / base:.1f}x" if base else "",
        "median < 100 ms",
        median < 0.1,
        raw=result,
    )


def cold_start_figure(path: Path, repeat: int) -> Figure:
    """Process start to first full screen of ``fpdebug view`` vs ``python -c pass``, alternated."""
    from bench import cold_start

    return cold_start.figure(path, repeat=repeat)


StepResult = Callable[[], list[Figure]]
"""A step of the bench: it returns its rows."""

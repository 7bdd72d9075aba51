"""Figures that need the Textual app: first screen, jump + pass inspector, RSS while viewing, follow latency.

Each probe runs the real :class:`~fpdebug.tui.app.FpdebugApp` headless (``App.run_test``) in a child
process of its own (``python -m bench.tui_probes NAME ARGS…``, one JSON object on the last stdout
line). "Rendered" means what the terminal would show: the probes wrap ``render_line`` of the
timeline and of the pass inspector (in the child only; the app's code is untouched) and note when
a line of the awaited row or iteration is first produced for a frame.

- ``first-screen PATH``: from constructing the app (the reader opens the file) to the first
  timeline row rendered; Python start and imports are measured apart (``imports``).
- ``jump PATH``: once the trace is fully loaded, select N random iterations (what ``go: iteration``
  does) and time each until the pass inspector has rendered it; the baseline reads the same
  iterations' records from a fresh reader (``pread`` + validation, no cache): the data floor.
- ``rss PATH`` / ``rss-baseline``: peak RSS of a child that loads the whole trace in the app and
  jumps around, and of a child that only imports the app. ``rss`` also reports how long the full
  load took (``load_s``); past ``--load-timeout`` it stops waiting and reports the peak so far with
  ``loaded: false``.
- ``follow PATH``: the app follows a copy of the trace while another process appends ``pass``
  events (each a new iteration); the latency runs from just before the ``write()`` to the new row
  rendered. The baseline is a bare ``TraceReader.refresh()`` loop polling at the app's interval.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.probes import Probe, current_rss_mb, peak_rss_mb
from bench.probes import main as probes_main
from bench.run import Figure

__all__ = ["TUI_PROBES", "figures"]

SIZE = (160, 48)
"""The headless terminal (columns, rows)."""

_monotonic = time.monotonic  # CLOCK_MONOTONIC: comparable between processes of one machine


class _Marks:
    """First-render times noted by the wrapped ``render_line`` methods."""

    def __init__(self) -> None:
        self.timeline_rows: float | None = None
        self.inspector_row: int | None = None
        self.inspector_at: float | None = None
        self.timeline_target: int | None = None
        self.timeline_target_at: float | None = None


MARKS = _Marks()


def _instrument() -> None:
    """Wrap the timeline's and the inspector's ``render_line`` to note first renders."""
    from fpdebug.tui.widgets.inspector import PassInspector
    from fpdebug.tui.widgets.timeline import IterationTimeline

    timeline_render = IterationTimeline.render_line
    inspector_render = PassInspector.render_line

    def timeline_line(self: IterationTimeline, y: int):  # type: ignore[no-untyped-def]
        strip = timeline_render(self, y)
        row = int(self.scroll_offset.y) + y
        if MARKS.timeline_rows is None and row < self.total:
            MARKS.timeline_rows = _monotonic()
        if MARKS.timeline_target_at is None and row == MARKS.timeline_target:
            MARKS.timeline_target_at = _monotonic()
        return strip

    def inspector_line(self: PassInspector, y: int):  # type: ignore[no-untyped-def]
        strip = inspector_render(self, y)
        if MARKS.inspector_row is not None and self.row == MARKS.inspector_row and MARKS.inspector_at is None:
            MARKS.inspector_at = _monotonic()
        return strip

    IterationTimeline.render_line = timeline_line  # type: ignore[method-assign]
    PassInspector.render_line = inspector_line  # type: ignore[method-assign]


async def _until(condition: Callable[[], bool], *, timeout: float, step: float = 0.001) -> None:
    deadline = _monotonic() + timeout
    while not condition():
        if _monotonic() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(step)


def _app(path: str, *, follow: bool = False):  # type: ignore[no-untyped-def]
    from fpdebug.tui.app import FpdebugApp

    return FpdebugApp(path, follow=follow)


# ----------------------------------------------------------------------------------------------
# Probes (each runs in its own child)


def _first_screen(args: argparse.Namespace) -> dict[str, object]:
    _instrument()

    async def go() -> dict[str, object]:
        started = _monotonic()
        app = _app(args.path)
        async with app.run_test(size=SIZE) as pilot:
            ready = _monotonic()
            await _until(lambda: MARKS.timeline_rows is not None, timeout=60)
            first = MARKS.timeline_rows
            assert first is not None
            rows = app.screen.timeline.total
            await pilot.pause()
            return {"seconds": first - started, "ready_s": ready - started, "rows": rows}

    return asyncio.run(go())


def _wait_loaded(app) -> Callable[[], bool]:  # type: ignore[no-untyped-def]
    return lambda: bool(getattr(app.screen, "loaded", False))


def _jump(args: argparse.Namespace) -> dict[str, object]:
    _instrument()
    from fpdebug.trace.reader import TraceReader

    async def go() -> dict[str, object]:
        app = _app(args.path)
        async with app.run_test(size=SIZE) as pilot:
            started = _monotonic()
            await _until(_wait_loaded(app), timeout=600, step=0.05)
            load = _monotonic() - started
            screen = app.screen
            session = screen.session
            rng = random.Random(args.seed)
            rows = [rng.randrange(len(session.iterations)) for _ in range(args.jumps)]
            times: list[float] = []
            for row in rows:
                MARKS.inspector_row, MARKS.inspector_at = row, None
                began = _monotonic()
                screen.select_row(row)
                await _until(lambda: MARKS.inspector_at is not None, timeout=30)
                times.append(MARKS.inspector_at - began)  # type: ignore[operator]
                await pilot.pause()
            lines = [list(session.iterations[row].lines) for row in rows]
        data: list[float] = []
        with TraceReader(args.path, cache_size=0) as reader:
            for iteration_lines in lines:
                began = _monotonic()
                for line in iteration_lines:
                    reader[line]
                data.append(_monotonic() - began)
        return {"jump_s": times, "data_s": data, "load_s": load, "iterations": len(session.iterations)}

    return asyncio.run(go())


def _rss(args: argparse.Namespace) -> dict[str, object]:
    _instrument()

    async def go() -> dict[str, object]:
        app = _app(args.path)
        async with app.run_test(size=SIZE) as pilot:
            started = _monotonic()
            try:
                await _until(_wait_loaded(app), timeout=args.load_timeout, step=0.05)
            except TimeoutError:  # the figure is then the peak so far, and the load says it did not end
                return {
                    "peak_mb": peak_rss_mb(),
                    "now_mb": current_rss_mb(),
                    "bytes": os.path.getsize(args.path),
                    "loaded": False,
                    "load_s": _monotonic() - started,
                }
            load = _monotonic() - started
            screen = app.screen
            rng = random.Random(1)
            for _ in range(20):  # view: jump around, show the calls and events of some iterations
                MARKS.inspector_row, MARKS.inspector_at = None, None
                screen.select_row(rng.randrange(len(screen.session.iterations)))
                await pilot.pause()
            for view in ("calls", "events", "leases", "passes"):
                screen.action_show_view(view)
                await pilot.pause()
            return {
                "peak_mb": peak_rss_mb(),
                "now_mb": current_rss_mb(),
                "bytes": os.path.getsize(args.path),
                "loaded": True,
                "load_s": load,
            }

    return asyncio.run(go())


def _rss_baseline(args: argparse.Namespace) -> dict[str, object]:
    import fpdebug.tui.app  # noqa: F401 - what the baseline measures

    return {"peak_mb": peak_rss_mb()}


def _imports(args: argparse.Namespace) -> dict[str, object]:
    """Python start + ``import fpdebug.tui.app``, against Python start alone (walls, in children)."""

    def wall(code: str) -> float:
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - began

    bare = [wall("pass") for _ in range(3)]
    app = [wall("import fpdebug.tui.app") for _ in range(3)]
    return {"python_s": min(bare), "app_s": min(app)}


_APPENDER = """
import sys, time
from datetime import UTC, datetime
from fpdebug.trace.schema import PassEvent, RunStartEvent, TurnStartEvent
from fpdebug.trace.writer import TraceWriter
writer = TraceWriter.resume(sys.argv[1], durability="none")
def now(): return datetime.now(UTC)
writer.append(RunStartEvent(seq=writer.next_seq, ts=now(), run_id="follow", provider="scripted",
                            model="bench", max_iterations=100000))
writer.append(TurnStartEvent(seq=writer.next_seq, ts=now(), run_id="follow", turn=1, user_message="go"))
print("ready", flush=True)
for k, _ in enumerate(sys.stdin, 1):
    event = PassEvent(seq=writer.next_seq, ts=now(), run_id="follow", turn=1, iteration=k,
                      active_ids=["tone"], evaluated_total=20)
    began = time.monotonic()
    writer.append(event)
    print(began, flush=True)
writer.close()
"""


def _follow(args: argparse.Namespace) -> dict[str, object]:
    _instrument()
    from fpdebug.trace.reader import TraceReader
    from fpdebug.tui.screens.loader import FOLLOW_INTERVAL

    work = Path(tempfile.mkdtemp(prefix="fpdebug-follow-"))
    path = work / "followed.fptrace.jsonl"
    shutil.copyfile(args.path, path)
    rng = random.Random(args.seed)

    def appender() -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the appending process did not start")
        return child

    def append(child: subprocess.Popen[str]) -> float:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("\n")
        child.stdin.flush()
        return float(child.stdout.readline())

    async def app_latencies() -> list[float]:
        app = _app(str(path), follow=True)
        async with app.run_test(size=SIZE) as pilot:
            await _until(_wait_loaded(app), timeout=600, step=0.05)
            screen = app.screen
            writer = appender()
            try:
                runs = screen.session.model.runs
                await _until(lambda: any(run.run_id == "follow" for run in runs), timeout=10)
                await pilot.pause()
                screen.timeline.action_cursor_last()
                latencies: list[float] = []
                for _ in range(args.samples):
                    await asyncio.sleep(rng.uniform(0.02, 0.12))  # land anywhere in the poll cycle
                    MARKS.timeline_target, MARKS.timeline_target_at = screen.timeline.total, None
                    began = append(writer)
                    await _until(lambda: MARKS.timeline_target_at is not None, timeout=10)
                    latencies.append(MARKS.timeline_target_at - began)  # type: ignore[operator]
                return latencies
            finally:
                writer.stdin.close()  # type: ignore[union-attr]
                writer.wait(timeout=10)

    try:
        latencies = asyncio.run(app_latencies())
        # The floor: a bare reader polled every FOLLOW_INTERVAL by a thread, as the app's tail
        # worker polls, sees the same appends.
        baseline: list[float] = []
        with TraceReader(path) as reader:
            seen: list[tuple[int, float]] = []
            stop = threading.Event()

            def poll() -> None:
                while not stop.is_set():
                    if reader.refresh():
                        seen.append((len(reader), _monotonic()))
                    stop.wait(FOLLOW_INTERVAL)

            writer = appender()
            poller = threading.Thread(target=poll, daemon=True)
            try:
                reader.refresh()
                poller.start()
                for _ in range(args.samples):
                    time.sleep(rng.uniform(0.02, 0.12))
                    expected = len(reader) + 1
                    began = append(writer)
                    while not seen or seen[-1][0] < expected:
                        time.sleep(0.001)
                    baseline.append(seen[-1][1] - began)
            finally:
                stop.set()
                poller.join()
                writer.stdin.close()  # type: ignore[union-attr]
                writer.wait(timeout=10)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"app_s": latencies, "reader_s": baseline, "interval_s": FOLLOW_INTERVAL}


TUI_PROBES: dict[str, Probe] = {
    "first-screen": (_first_screen, lambda p: p.add_argument("path")),
    "jump": (
        _jump,
        lambda p: (
            p.add_argument("path"),
            p.add_argument("--jumps", type=int, default=50),
            p.add_argument("--seed", type=int, default=0),
        ),
    ),
    "rss": (
        _rss,
        lambda p: (
            p.add_argument("path"),
            p.add_argument("--load-timeout", type=float, default=600, help="seconds the full load may take"),
        ),
    ),
    "rss-baseline": (_rss_baseline, lambda p: None),
    "imports": (_imports, lambda p: None),
    "follow": (
        _follow,
        lambda p: (
            p.add_argument("path"),
            p.add_argument("--samples", type=int, default=30),
            p.add_argument("--seed", type=int, default=0),
        ),
    ),
}
"""The app probes."""


# ----------------------------------------------------------------------------------------------
# The figures (run in the parent)


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


def figures(small: Path, big: Path, *, repeat: int, child: Callable[..., dict[str, object]]) -> list[Figure]:
    """Items 2, 3, 4 and 6 of issue 8.

    Args:
        small: The 10k-event trace.
        big: The 1M-event trace (100k with ``--quick``).
        repeat: Repetitions of the first-screen timing (median).
        child: Runs a probe in a child process and returns its JSON result.
    """
    module = "bench.tui_probes"
    rows: list[Figure] = []

    def number(result: dict[str, object], key: str) -> float:
        value = result[key]
        assert isinstance(value, int | float)
        return float(value)

    def series(result: dict[str, object], key: str) -> list[float]:
        value = result[key]
        assert isinstance(value, list)
        return [float(v) for v in value]

    # 2. first screen
    firsts = {
        label: [child(module, "first-screen", str(path)) for _ in range(repeat)]
        for label, path in (("small", small), ("big", big))
    }
    first = {
        label: statistics.median(number(r, "seconds") for r in results) for label, results in firsts.items()
    }
    ratio = first["big"] / first["small"]
    imports = child(module, "imports")
    big_label = "1M" if "1000000" in big.name else "100k"
    rows.append(
        Figure(
            "2",
            f"first screen, {big_label} trace (app built -> first timeline rows rendered)",
            _ms(first["big"]),
            f"10k trace {_ms(first['small'])}",
            f"{ratio:.2f}x",
            f"< 0.5 s; {big_label}/10k <= 1.5",
            first["big"] < 0.5 and ratio <= 1.5,
            raw={"runs": firsts},
        )
    )
    rows.append(
        Figure(
            "2b",
            "  + Python start and imports of the app (any trace)",
            _ms(number(imports, "app_s")),
            f"bare Python {_ms(number(imports, 'python_s'))}",
            raw=imports,
        )
    )

    # 3. jump
    jump = child(module, "jump", str(big))
    times, data = series(jump, "jump_s"), series(jump, "data_s")
    median = statistics.median(times)
    rows.append(
        Figure(
            "3",
            f"jump to a random iteration + pass inspector rendered ({len(times)} jumps)",
            f"median {_ms(median)}, p95 {_ms(_p95(times))}",
            f"its records read cold: median {_ms(statistics.median(data))}, p95 {_ms(_p95(data))}",
            "",
            "median < 50 ms",
            median < 0.05,
            raw=jump,
        )
    )

    # 4. RSS while viewing
    viewing = child(module, "rss", str(big))
    baseline = child(module, "rss-baseline")
    size = number(viewing, "bytes")
    held = number(viewing, "peak_mb") - number(baseline, "peak_mb")
    share = held * 1e6 / size
    rows.append(
        Figure(
            "4",
            f"peak RSS viewing the {big_label} trace, minus the app's imports",
            f"{held:,.0f} MB = {share:.1%} of {size / 1e6:,.0f} MB",
            f"imports only {number(baseline, 'peak_mb'):,.0f} MB (viewing: {number(viewing, 'peak_mb'):,.0f} MB)",
            "",
            "< 25 % of the file",
            share < 0.25,
            raw={"viewing": viewing, "baseline": baseline},
        )
    )

    # 6. follow latency
    follow = child(module, "follow", str(small))
    app, reader = series(follow, "app_s"), series(follow, "reader_s")
    median = statistics.median(app)
    rows.append(
        Figure(
            "6",
            f"follow latency, append -> row rendered ({len(app)} appends by another process)",
            f"median {_ms(median)}, p95 {_ms(_p95(app))}",
            f"bare reader polled every {_ms(number(follow, 'interval_s'))}: "
            f"median {_ms(statistics.median(reader))}",
            f"{median / statistics.median(reader):.1f}x",
            "median < 100 ms",
            median < 0.1,
            raw=follow,
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(probes_main(probes=TUI_PROBES))

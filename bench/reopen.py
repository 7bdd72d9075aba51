"""Opening and reopening a big trace in the app: first screen, index complete, with and without the persisted index.

Issue 22 item 3: "10M events: first screen under 0.5 s, and reopening under 0.3 s". Each figure is
taken in a child process of its own (``python -m bench.reopen probe …``) with ``$XDG_CACHE_HOME``
pointed at a scratch directory, so the first open finds no saved index and the next ones find the
one it saved. Definitions, the same as :mod:`bench.tui_probes`' first screen:

- **first screen**: from constructing the app (the reader opens the file) to the first timeline
  row rendered; Python start and imports are not in it (``python -c pass`` and the imports are
  printed beside it);
- **index complete**: from constructing the app to every line of the file indexed (the status bar
  stops saying "indexing", ``G`` reaches the last line): the scan of the file on a first open, the
  persisted index on a reopen;
- **quit during the load**: the full load is running; ``q`` is pressed; until the app has exited.

Baselines in the same run: ``wc -l`` of the file, ``python -c pass``. The trace is generated
(demo-shaped by default, :mod:`bench.demo_trace`) and deleted afterwards unless ``--keep``.

Usage::

    .venv/bin/python -m bench.reopen --events 10000000          # about 8 GB for a while
    .venv/bin/python -m bench.reopen --events 1000000 --full    # also the full load and its RSS
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.probes import peak_rss_mb

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
_monotonic = time.monotonic


def _probe(path: str, *, full: bool, quit_early: bool) -> dict[str, object]:
    """In the child: open the app on ``path`` and time the first screen, the index, the load or a quit."""
    from bench.tui_probes import MARKS, SIZE, _instrument, _until
    from fpdebug.trace.index_cache import MIN_BYTES, cache_path
    from fpdebug.tui.app import FpdebugApp

    _instrument()

    async def go() -> dict[str, object]:
        started, cpu = _monotonic(), time.process_time()
        app = FpdebugApp(path)
        result: dict[str, object] = {}
        async with app.run_test(size=SIZE) as pilot:
            await _until(lambda: MARKS.timeline_rows is not None, timeout=120)
            result["first_s"] = MARKS.timeline_rows - started  # type: ignore[operator]
            result["first_cpu_s"] = time.process_time() - cpu  # every thread; slightly past the render
            session = app.screen.session  # type: ignore[attr-defined]
            if quit_early:
                await asyncio.sleep(1.0)  # well into the load
                pressed = _monotonic()
                await pilot.press("q")
            else:
                await _until(lambda: session.index_done, timeout=600, step=0.002)
                result["index_s"] = _monotonic() - started
                result["index_cpu_s"] = time.process_time() - cpu
                result["restored"] = session.restored > 0
                result["lines"] = session.lines
                # Let the loader write the index (the next open's cache), then stop or load on.
                if os.path.getsize(path) >= MIN_BYTES:
                    await _until(lambda: cache_path(Path(path)).exists(), timeout=120, step=0.01)
                if full:
                    await _until(lambda: bool(getattr(app.screen, "loaded", False)), timeout=1800, step=0.05)
                    result["load_s"] = _monotonic() - started
                    result["peak_mb"] = peak_rss_mb()
        if quit_early:
            result["quit_s"] = _monotonic() - pressed
        return result

    return asyncio.run(go())


def _child(*args: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.reopen", "probe", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"probe {args} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return dict(json.loads(lines[-1]))


def _wall(command: Sequence[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _figures(path: Path, small: Path, *, repeat: int, full: bool) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="fpdebug-reopen-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch), "PYTHONPATH": str(ROOT)}
    try:
        size = path.stat().st_size
        _wall(["cat", str(path)])  # into the page cache: every figure reads it from memory
        first_open = _child(str(path), *(["--full"] if full else []), env=env)
        reopens, smalls, passes, counts = [], [], [], []
        for _ in range(repeat):  # each alternated with its baselines
            reopens.append(_child(str(path), env=env))
            smalls.append(_child(str(small), env=env))
            passes.append(_wall([sys.executable, "-c", "pass"]))
            counts.append(_wall(["wc", "-l", str(path)]))
        imports = min(_wall([sys.executable, "-c", "import fpdebug.tui.app"]) for _ in range(3))
        quits = _child(str(path), "--quit", env={**env, "FPDEBUG_INDEX_CACHE": "off"})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def median(results: list[dict[str, object]], key: str) -> float:
        return statistics.median(float(result[key]) for result in results)  # type: ignore[arg-type]

    wc = statistics.median(counts)
    print(f"trace {path.name}: {size / 1e6:,.0f} MB, {first_open['lines']:,} lines; medians of {repeat}")
    print(f"  baselines: wc -l {_ms(wc)}; python -c pass {_ms(statistics.median(passes))}; ", end="")
    print(f"python -c 'import fpdebug.tui.app' {_ms(imports)} (best of 3)")
    print("  (wall; CPU of the app's process, all threads, in brackets: the machine may be shared)")
    print(f"  first open : first screen {_ms(float(first_open['first_s']))} ", end="")
    print(f"[{_ms(float(first_open['first_cpu_s']))}] (target < 500 ms), ", end="")
    print(
        f"index complete {_ms(float(first_open['index_s']))} [{_ms(float(first_open['index_cpu_s']))}] ",
        end="",
    )
    print(f"= {float(first_open['index_s']) / wc:.2f}x wc -l")
    small_first = median(smalls, "first_s")
    print(f"  10k-event trace: first screen {_ms(small_first)} [{_ms(median(smalls, 'first_cpu_s'))}]")
    restored = all(bool(result["restored"]) for result in reopens)
    print(f"  reopen     : first screen {_ms(median(reopens, 'first_s'))} ", end="")
    print(f"[{_ms(median(reopens, 'first_cpu_s'))}] (target < 300 ms), ", end="")
    print(
        f"index complete {_ms(median(reopens, 'index_s'))} [{_ms(median(reopens, 'index_cpu_s'))}] ", end=""
    )
    print(
        f"(from the cache: {restored}); first screen / 10k's = {median(reopens, 'first_s') / small_first:.2f}"
    )
    print(f"  quit during the full load: {_ms(float(quits['quit_s']))}")
    if full:
        held = float(first_open["peak_mb"])
        print(f"  full load {float(first_open['load_s']):,.1f} s (target < 60 s); ", end="")
        print(f"peak RSS {held:,.0f} MB = {held * 1e6 / size:.1%} of the file (imports included)")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.reopen``: the figures; ``python -m bench.reopen probe PATH``: one child's measurement."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["probe"]:
        parser = argparse.ArgumentParser(prog="python -m bench.reopen probe")
        parser.add_argument("path")
        parser.add_argument("--full", action="store_true")
        parser.add_argument("--quit", action="store_true")
        args = parser.parse_args(argv[1:])
        print(json.dumps(_probe(args.path, full=args.full, quit_early=args.quit)))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.reopen", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events (default 10M; 0: skip)")
    parser.add_argument("--shape", choices=("demo", "synthetic"), default="demo")
    parser.add_argument("--repeat", type=int, default=3, help="reopens (median)")
    parser.add_argument("--full", action="store_true", help="also time the full load and its peak RSS")
    parser.add_argument("--trace", type=Path, help="use this trace instead of generating one (kept)")
    parser.add_argument("--keep", action="store_true", help="keep the generated trace")
    args = parser.parse_args(argv)
    if args.events <= 0 and args.trace is None:
        return 0
    from bench.demo_trace import ensure_demo_trace

    out = Path(tempfile.mkdtemp(prefix="fpdebug-reopen-trace-", dir=os.environ.get("FPDEBUG_BENCH_TMP")))
    if args.trace is not None:
        path = args.trace
    elif args.shape == "demo":
        path = ensure_demo_trace(args.events, out_dir=out)
    else:
        from bench.gen_trace import ensure_trace

        path = ensure_trace(args.events, out_dir=out)
    try:
        small = ensure_demo_trace(10_000, out_dir=out)
        _figures(path, small, repeat=args.repeat, full=args.full)
    finally:
        if not args.keep:  # a --trace of the caller's lies elsewhere: only what was generated goes
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

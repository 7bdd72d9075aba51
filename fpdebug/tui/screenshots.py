"""``python -m fpdebug.tui.screenshots``: SVG screenshots of every view, taken by the app itself.

Runs the debugger headless on the committed sample traces, presses the keys a person would, and
saves what the app renders (``App.export_screenshot``) to ``docs/screenshots/`` (160×48). The
README and the guide (``docs/guide/``) show these files; re-run this after a visible change.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot

from fpdebug.tui.app import FpdebugApp

__all__ = ["SHOTS", "Shot", "main", "take"]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Shot:
    """One screenshot: which sample, which keys, which file."""

    name: str
    """The file name (without ``.svg``)."""
    sample: str
    """The sample trace (``sample_traces/<sample>.fptrace.jsonl``)."""
    keys: tuple[str, ...] = ()
    """Keys pressed once the trace is loaded."""
    search: str | None = None
    """A query typed after ``/`` (the prompt stays open)."""
    title: str = ""
    """The window title in the SVG."""
    drive: tuple[str, ...] | None = None
    """Drive the sample's scenario instead of opening the file: run to the first of these breakpoints
    (``Breakpoint.parse`` forms), on the sample's clock and run id, then press :attr:`keys`."""
    copy: bool = False
    """Open a copy of the sample in a scratch directory (a backtrack's reruns write a sidecar beside
    the trace, never beside a committed sample); every key waits for the workers it started."""
    quiet: bool = False
    """Dismiss the notifications (a "marked as A" toast) before the screenshot."""


SHOTS: tuple[Shot, ...] = (
    Shot("passes", "support", ("j", "j"), title="Passes: timeline and pass inspector"),
    Shot("engagement", "zone-trap", ("j", "j", "j"), title="Passes: a map parks (the zone trap)"),
    Shot("leases", "support", ("j", "j", "2"), title="Leases: lifetimes over iterations"),
    Shot("calls", "support", ("j", "j", "3"), title="Calls: the exact prompt by slot"),
    Shot("events", "support", ("j", "j", "4"), title="Events: the raw trace"),
    Shot("search", "support", search="kind:lease_prune", title="Search: a filtered timeline"),
    Shot("document-search", "support", ("j", "3"), search="refund", title="Search: a word in the Calls view"),
    Shot("help", "leases", ("question_mark",), title="Keys"),
    Shot("skill-map", "support", ("]", "]", "]", "5"), title="Skill map: the cursor's path over the map"),
    Shot("drive", "support", drive=("lease_prune",), title="Drive: a breakpoint on lease_prune hit"),
    Shot("diff", "support", ("j", "m", "j", "j", "6"), quiet=True, title="Diff: T1·I2 against T1·I4"),
    Shot("backtrack", "planted-fact", ("7", "a"), copy=True, title="Backtrack: the planted fact confirmed"),
    Shot("assessment", "unsupported-amount", ("7",), copy=True, title="Backtrack: the answer assessment"),
    Shot("provenance", "traced-argument", ("j", "3", "G"), title="Calls: where each argument came from"),
)
"""The screenshots the README and the guide show."""


SETTLE_TIMEOUT = 300.0
"""Seconds a shot waits for the app's workers (a backtrack's reruns included) before it gives up."""


async def _settle(pilot: Pilot[object]) -> None:
    await asyncio.wait_for(pilot.app.workers.wait_for_complete(), SETTLE_TIMEOUT)
    await pilot.pause()
    for _ in range(500):
        if getattr(pilot.app.screen, "loaded", True):
            break
        await pilot.pause(0.01)
    await pilot.pause()


def take(shot: Shot, *, samples: Path, out: Path, size: tuple[int, int] = (160, 48)) -> Path:
    """Run the app headless for one shot and save its SVG.

    Returns:
        The written file.
    """
    if shot.drive is not None:
        with tempfile.TemporaryDirectory() as scratch:
            return _take(shot, out=out, size=size, app=_driven(shot, Path(scratch)))
    if shot.copy:
        with tempfile.TemporaryDirectory() as scratch:
            name = f"{shot.sample}.fptrace.jsonl"
            trace = Path(scratch) / name
            trace.write_bytes((samples / name).read_bytes())
            return _take(shot, out=out, size=size, app=FpdebugApp(trace))
    return _take(shot, out=out, size=size, app=FpdebugApp(samples / f"{shot.sample}.fptrace.jsonl"))


def _driven(shot: Shot, scratch: Path) -> FpdebugApp:
    from fpdebug.demo.registry import SAMPLE_RUN_PREFIX, SAMPLE_START, load_scenario
    from fpdebug.trace.clock import FixedClock
    from fpdebug.tui.app import TraceSource
    from fpdebug.tui.drive import Breakpoint, DriveApp, RunDriver

    path = scratch / f"{shot.sample}.fptrace.jsonl"
    driver = RunDriver(
        load_scenario(shot.sample),
        trace_path=path,
        clock=FixedClock(SAMPLE_START),
        run_id=f"{SAMPLE_RUN_PREFIX}{shot.sample}",
        durability="none",
        start="running",
        breakpoints=[Breakpoint.parse(spec) for spec in shot.drive or ()],
    )
    return DriveApp(TraceSource(path, "drive"), controller=driver)


async def _paused_on_screen(pilot: Pilot[object]) -> None:
    from fpdebug.tui.drive import RunDriver

    driver = getattr(pilot.app, "controller", None)
    if not isinstance(driver, RunDriver):
        return
    screen = pilot.app.screen_stack[0]
    for _ in range(1000):
        point = driver.status.paused_at
        session = getattr(screen, "session", None)
        if point is not None and session is not None and session.lines > point.seq:
            selected = getattr(screen, "selected", -1)
            rows = session.iterations
            if 0 <= selected < len(rows) and rows[selected].number == point.iteration:
                break
        await pilot.pause(0.01)
    await pilot.pause()


def _take(shot: Shot, *, out: Path, size: tuple[int, int], app: FpdebugApp) -> Path:
    path = out / f"{shot.name}.svg"

    async def settle(pilot: Pilot[object]) -> None:
        # A driven run's workers (the run, the tail) never complete while it is paused.
        if shot.drive is None:
            await _settle(pilot)
        else:
            await _paused_on_screen(pilot)

    async def pilot_script(pilot: Pilot[object]) -> None:
        app.animation_level = "none"
        await settle(pilot)
        for key in shot.keys:
            await pilot.press(key)
            await pilot.pause()
            if shot.copy:
                await asyncio.wait_for(pilot.app.workers.wait_for_complete(), SETTLE_TIMEOUT)
                await pilot.pause()
        if shot.search is not None:
            await pilot.press("slash", *shot.search)
            await pilot.pause(0.2)
        await settle(pilot)
        if shot.quiet:
            app.clear_notifications()
            await pilot.pause()
        path.write_text(app.export_screenshot(title=shot.title or "fpdebug"), encoding="utf-8")
        app.exit()

    app.run(headless=True, size=size, auto_pilot=pilot_script)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Write every screenshot; print the files."""
    parser = argparse.ArgumentParser(prog="python -m fpdebug.tui.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--samples", type=Path, default=ROOT / "sample_traces")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for shot in SHOTS:
        print(take(shot, samples=args.samples, out=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""SVG snapshots of the runs table and the run diff at 80x24 and 120x35. Regenerate with ``--snapshot-update``.

The folder is tests/tui/runs_folder.py's, opened by a relative path (the snapshots must not show
a temporary folder's name) and without the table's cache (its "read / from the cache" counts
would depend on the test before).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from fpdebug.tui.runs_app import RunsApp
from fpdebug.tui.screens.run_diff_screen import RunDiffScreen
from fpdebug.tui.screens.runs_screen import RunsScreen
from fpdebug.tui.widgets.runs_list import RunsList
from fpdebug.views.runs import RunRow
from tests.tui.helpers import WAIT, wait_for
from tests.tui.runs_folder import write_runs_folder

SIZES = [(80, 24), (120, 35)]


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding ``runs/`` (built once)."""
    base = tmp_path_factory.mktemp("snap")
    write_runs_folder(base / "runs")
    return base


async def _table(pilot: Pilot[object]) -> None:
    pilot.app.animation_level = "none"
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    assert await wait_for(pilot, lambda: screen.loaded)
    await pilot.pause()


async def _marked_row(pilot: Pilot[object]) -> None:
    """The table with the cursor on the second row, the first marked."""
    await _table(pilot)
    await pilot.press("m", "j")
    await pilot.pause()


async def _diff(pilot: Pilot[object]) -> None:
    """Mark the support demo, diff it with the demo without tone; wait for the diff."""
    await _table(pilot)
    runs = pilot.app.screen.query_one(RunsList)

    def index(name: str) -> int:
        return next(
            i
            for i, row in enumerate(runs.items)
            if isinstance(row, RunRow) and row.trace.endswith(name) and row.status == "completed"
        )

    await pilot.press("g", *["j"] * index("/support.fptrace.jsonl"), "m")
    await pilot.press("g", *["j"] * index("/without-tone.fptrace.jsonl"), "d")
    screen = pilot.app.screen
    assert await wait_for(pilot, lambda: isinstance(screen, RunDiffScreen) and screen.loaded is not None)
    await asyncio.wait_for(pilot.app.workers.wait_for_complete(), WAIT)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_runs_table(
    snap_compare: Callable[..., bool], parent: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.chdir(parent)
    app = RunsApp(["runs"], use_cache=False)
    assert snap_compare(app, run_before=_marked_row, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_diff(
    snap_compare: Callable[..., bool], parent: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.chdir(parent)
    app = RunsApp(["runs"], use_cache=False)
    assert snap_compare(app, run_before=_diff, terminal_size=size)

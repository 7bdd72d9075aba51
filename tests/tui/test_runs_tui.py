"""``fpdebug view DIR``: the runs table and the run diff, read from the drawn screen (issue 21).

One folder (tests/tui/runs_folder.py) serves every test: the support demo and the same demo without
its ``tone`` steering (the pair ``fpdebug diff`` is tested on), a run still being written, a
hostile trace, a foreign recording and a broken file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from fpdebug.cli import main
from fpdebug.tui.runs_app import RunsApp
from fpdebug.tui.screens.opened_trace import OpenedTraceScreen
from fpdebug.tui.screens.run_diff_screen import RunDiffScreen
from fpdebug.tui.screens.runs_screen import RunsScreen
from fpdebug.tui.widgets.runs_list import RunsList
from fpdebug.views.runs import RunRow, build_table
from tests.tui.helpers import record_notices, screen_text, wait_for
from tests.tui.runs_folder import write_runs_folder
from tests.tui.traces import MARKUP

pytestmark = pytest.mark.anyio

SIZE = (140, 30)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of runs (built once: the demo runs take a while)."""
    return write_runs_folder(tmp_path_factory.mktemp("runs"))


async def _table(pilot: Pilot[object]) -> RunsScreen:
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    assert await wait_for(pilot, lambda: screen.loaded), "the table never loaded"
    await pilot.pause()
    return screen


async def _cursor_to(pilot: Pilot[object], trace: Path, status: str = "completed") -> None:
    """Move the cursor with g and j to the run of ``trace``."""
    runs = pilot.app.screen.query_one(RunsList)
    index = next(
        i
        for i, item in enumerate(runs.items)
        if isinstance(item, RunRow) and item.trace == str(trace) and item.status == status
    )
    await pilot.press("g", *["j"] * index)
    assert await wait_for(pilot, lambda: runs.cursor == index)


async def test_the_table_lists_the_runs_of_fpdebug_runs_and_says_what_each_bad_file_is(folder: Path) -> None:
    expected = build_table([str(folder)], use_cache=False)
    app = RunsApp([str(folder)], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await _table(pilot)
        text = screen_text(app)
        assert f"{len(expected.rows)} runs · 2 other file(s)" in text
        rows = [line for line in text.splitlines() if "2026-01-01 12:00" in line]
        assert len(rows) == len(expected.rows) == 5
        assert sum("completed" in row for row in rows) == 3 and sum("running" in row for row in rows) == 2
        assert any("support" in row and "1/5" in row and "1,994" in row for row in rows)
        assert "⚠ foreign" in text and "import with `fpdebug import`" in text
        assert "⚠ not-a-trace" in text and "broken.fptrace.jsonl" in text
        # Trace text is drawn as it is written: markup stays literal, control sequences are inert.
        assert MARKUP[:15] in text and "\x1b" not in text
        # Opening a file that has no run is a notice; the table stays.
        notices = record_notices(app)
        await pilot.press("G", "enter")
        assert await wait_for(pilot, lambda: bool(notices))
        assert "foreign" in notices[-1] and "otel.json" in notices[-1]
        assert isinstance(app.screen, RunsScreen)
        # A file of two runs opens on the run of the row: here the second one, "r".
        await _cursor_to(pilot, folder / "hostile.fptrace.jsonl", status="running")
        await pilot.press("enter")
        assert await wait_for(pilot, lambda: isinstance(app.screen, OpenedTraceScreen) and app.screen.loaded)
        assert await wait_for(pilot, lambda: "Iteration 2 · turn 1 · run r " in screen_text(app))


async def test_filter_order_open_and_come_back(folder: Path) -> None:
    app = RunsApp([str(folder)], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _table(pilot)
        await pilot.press("slash", *"status:running", "enter")
        assert await wait_for(pilot, lambda: "2 of 5 runs" in screen_text(app))
        text = screen_text(app)
        assert "completed" not in text and "⚠ foreign" not in text
        assert "filter: status:running" in text
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: "5 runs ·" in screen_text(app))
        await pilot.press("slash", *"tool:nothing-like-it", "enter")
        assert await wait_for(pilot, lambda: "0 of 5 runs" in screen_text(app))
        await pilot.press("escape")
        # An unbalanced quote is said once, on enter; the table keeps the filter it had (none).
        notices = record_notices(app)
        await pilot.press("slash", '"', "l", "a", "enter")
        assert await wait_for(pilot, lambda: bool(notices))
        assert notices == ["cannot read the filter: No closing quotation"]
        assert "5 runs ·" in screen_text(app)
        await pilot.press("escape", "escape", "o")  # close the prompt; started → agent
        assert await wait_for(pilot, lambda: "agent↑" in screen_text(app))
        agents = [line.split()[2] for line in screen_text(app).splitlines() if "2026-01-01 12:00" in line]
        assert agents == sorted(agents, key=str.lower)
        # enter opens the trace in the debugger; escape comes back to the table as it was.
        await _cursor_to(pilot, folder / "without-tone.fptrace.jsonl")
        await pilot.press("enter")
        assert await wait_for(pilot, lambda: isinstance(app.screen, OpenedTraceScreen) and app.screen.loaded)
        assert await wait_for(
            pilot, lambda: "Passes" in screen_text(app) and "run-no-tone" in screen_text(app)
        )
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is screen)
        assert "agent↑" in screen_text(app)


async def test_mark_two_runs_and_diff_them_to_the_first_divergence_of_the_cli(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = folder / "support.fptrace.jsonl", folder / "without-tone.fptrace.jsonl"
    assert main(["diff", str(a), str(b)]) == 1
    cli = capsys.readouterr().out
    assert "first divergence: T1·I1, context pass\n  injection tone\n" in cli
    app = RunsApp([str(folder)], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await _table(pilot)
        notices = record_notices(app)
        await pilot.press("d")  # nothing marked: a notice, no diff
        assert await wait_for(pilot, lambda: bool(notices)) and "mark two runs" in notices[-1]
        await _cursor_to(pilot, a)
        await pilot.press("m")
        assert await wait_for(pilot, lambda: "marked: 1" in screen_text(app))
        assert any(line.lstrip().startswith("● 2026") for line in screen_text(app).splitlines())
        await _cursor_to(pilot, b)
        await pilot.press("d")  # the marked run (A) against the one under the cursor (B)
        assert await wait_for(
            pilot, lambda: isinstance(app.screen, RunDiffScreen) and app.screen.loaded is not None
        )
        diff_screen = app.screen
        assert await wait_for(pilot, lambda: "First divergence" in screen_text(app))
        text = screen_text(app)
        assert "different: first divergence at T1·I1" in text
        assert "First divergence T1·I1, context pass" in text
        assert "injection tone" in text and "B does not declare it: its run left it out" in text
        assert "Consequences, pass by pass" in text and "T1·I2" in text
        # enter on the divergence opens A's trace at that pass; escape comes back; l opens B's.
        await pilot.press("enter")
        assert await wait_for(pilot, lambda: isinstance(app.screen, OpenedTraceScreen) and app.screen.loaded)
        opened = app.screen
        assert isinstance(opened, OpenedTraceScreen)
        assert await wait_for(pilot, lambda: "Iteration 1 · turn 1 · run run-support" in screen_text(app))
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: app.screen is diff_screen)
        await pilot.press("j", "l")  # the first consequence, T1·I2, in B
        assert await wait_for(pilot, lambda: "Iteration 2 · turn 1 · run run-no-tone" in screen_text(app))


async def test_a_diff_with_a_file_that_is_not_a_trace_says_why(folder: Path) -> None:
    app = RunsApp([str(folder)], use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await _table(pilot)
        app.push_screen(RunDiffScreen(folder / "support.fptrace.jsonl", folder / "otel.json"))
        assert await wait_for(pilot, lambda: "cannot compare the two runs" in screen_text(app))
        assert "cannot compare" in screen_text(app).splitlines()[1]
        await pilot.press("enter")  # no link: nothing opens
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        assert "5 runs ·" in screen_text(app)


def test_fpdebug_view_of_a_folder_or_several_files_opens_the_runs_table(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[RunsApp] = []
    monkeypatch.setattr(RunsApp, "run", lambda self, *args, **kwargs: ran.append(self))
    a, b = str(folder / "support.fptrace.jsonl"), str(folder / "without-tone.fptrace.jsonl")
    assert main(["view", str(folder)]) == 0
    assert main(["view", a, b]) == 0
    assert [app.paths for app in ran] == [[str(folder)], [a, b]]
    assert main(["view", str(folder), "--follow"]) == 2
    assert "--follow is about one trace" in capsys.readouterr().err
    assert len(ran) == 2

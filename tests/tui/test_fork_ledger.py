"""The fork edit screen (``F`` on a pass) and the Ledger view (``L``), read from the drawn screen.

``F`` → an edit chosen from what the run declared → Run fork → the diff against the parent opens at
the fork's first divergence, pass N; a bad edit is refused in the status line; ``L`` shows the
ledger of the trace's folder as ``fpdebug ledger DIR`` prints it. Snapshots of both screens at
80x24 and 120x35.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from fpdebug.backtrack.ledger import build_ledger
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import PassEvent, RunStartEvent
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.screens.fork_screen import ForkScreen
from fpdebug.tui.screens.run_diff_screen import RunDiffScreen
from fpdebug.tui.screens.text_screen import TextScreen
from fpdebug.views.ledger_text import ledger_lines
from tests.tui.helpers import opened, screen_text, snapshot_keys, wait_for
from tests.tui.traces import SAMPLES, sample


@pytest.fixture(autouse=True)
def _never_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")


def _fork_screen(pilot: Pilot[object]) -> ForkScreen | None:
    screen = pilot.app.screen
    return screen if isinstance(screen, ForkScreen) and screen.point is not None else None


async def _pick(pilot: Pilot[object], option: str, options: list[str], *, now: int = -1) -> None:
    """Open the focused select and choose ``option`` with the arrows, from the row highlighted ``now``
    (``-1``: the prompt row of a select with nothing chosen)."""
    await pilot.press("enter")
    for _ in range(options.index(option) - now):
        await pilot.press("down")
    await pilot.press("enter")
    await pilot.pause()


@pytest.mark.anyio
async def test_f_edits_runs_and_opens_the_diff_at_the_forks_pass(tmp_path: Path) -> None:
    parent = tmp_path / "planted-fact.fptrace.jsonl"
    shutil.copy(sample("planted-fact"), parent)
    async with opened(parent, size=(120, 35)) as (pilot, _screen):
        await pilot.press("j", "F")  # pass 2
        assert await wait_for(pilot, lambda: _fork_screen(pilot) is not None)
        fork = _fork_screen(pilot)
        assert fork is not None
        text = screen_text(pilot.app)
        assert "Fork run sample-planted-fact at pass 2 of turn 1" in text
        assert "1 call replays before pass 2" in text
        # The target: chosen among the injections active at pass 2.
        choices = fork.point.choices()["drop-injection"] if fork.point else []
        await pilot.press("tab")
        await _pick(pilot, "vip-override", choices)
        await pilot.press("tab", "enter")  # Add
        assert await wait_for(pilot, lambda: "1. drop-injection vip-override" in screen_text(pilot.app))
        # The same edit twice is refused, with the reason on screen. Textual ignores a press within
        # the button's 0.2 s press effect, as a user's double press would be: wait it out first.
        add = pilot.app.screen.query_one("#fork-add")
        assert await wait_for(pilot, lambda: not add.has_class("-active"))
        await pilot.click("#fork-add")
        assert await wait_for(pilot, lambda: "given twice" in screen_text(pilot.app))
        # A live provider needs the box ticked: refused before anything runs.
        await pilot.press("tab")
        await _pick(pilot, "anthropic", ["replay", "scripted", "anthropic"], now=0)
        assert await wait_for(pilot, lambda: "anthropic is live, it costs money" in screen_text(pilot.app))
        await pilot.click("#fork-run")
        assert await wait_for(pilot, lambda: "anthropic needs a model" in screen_text(pilot.app))
        assert isinstance(pilot.app.screen, ForkScreen)
        # Scripted, then run: the diff replaces the edit screen.
        await pilot.click("#fork-provider")
        await pilot.press("up", "enter")  # anthropic → scripted
        assert await wait_for(
            pilot, lambda: "scripted: the scenario's scripted model" in screen_text(pilot.app)
        )
        await pilot.click("#fork-run")
        assert await wait_for(
            pilot,
            # The screen is pushed before its document is mounted: ask for the diff only once it is.
            lambda: (
                isinstance(pilot.app.screen, RunDiffScreen)
                and bool(pilot.app.screen.query("RunDiffDocument"))
                and pilot.app.screen.loaded is not None
            ),
        ), screen_text(pilot.app)
        assert await wait_for(pilot, lambda: "first divergence at T1·I2" in screen_text(pilot.app))
        text = screen_text(pilot.app)
        assert "A planted-fact.fptrace.jsonl  ·  B planted-fact.fork-pass2.fptrace.jsonl" in text
        assert "injection vip-override" in text
        assert "fork-edit (fork edit drop-injection at pass 2 of turn 1)" in text
        await pilot.press("escape")  # back to the parent's trace
        assert await wait_for(pilot, lambda: pilot.app.screen is _screen)
    # The fork's trace sits beside its parent, names it, and records the drop in its pass.
    forked = tmp_path / "planted-fact.fork-pass2.fptrace.jsonl"
    with TraceReader(forked) as reader:
        assert reader.problems() == []
        records = list(reader)
    start = next(r for r in records if isinstance(r, RunStartEvent))
    assert start.fork_of is not None and start.fork_of.at_pass == 2 and start.fork_of.provider == "scripted"
    second = [r for r in records if isinstance(r, PassEvent)][1]
    assert [s.reason for s in second.skipped if s.id == "vip-override"] == ["fork-edit"]


@pytest.mark.anyio
async def test_l_shows_the_ledger_of_the_traces_folder() -> None:
    async with opened(sample("planted-fact"), size=(120, 35)) as (pilot, _screen):
        await pilot.press("L")
        assert await wait_for(
            pilot, lambda: isinstance(pilot.app.screen, TextScreen) and pilot.app.screen.done
        )
        text = screen_text(pilot.app)
        expected = ledger_lines(build_ledger([str(SAMPLES.resolve())]))
        assert expected[0] in text  # "context ledger: N runs metered, M rows (worst earn rate first)"
        rows = [line for line in text.splitlines() if "no price" in line or "never used" in line]
        # Worst first, as `fpdebug ledger DIR` prints them.
        assert rows and expected[2].strip().split()[:2] == rows[0].strip(" │").split()[:2]
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: not isinstance(pilot.app.screen, TextScreen))


class TestForkAndLedgerSnapshots:
    @pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=["80x24", "120x35"])
    def test_the_fork_edit_screen(self, snap_compare: Callable[..., bool], size: tuple[int, int]) -> None:
        keys = snapshot_keys("j", "F", quiet=True)
        assert snap_compare(FpdebugApp(sample("planted-fact")), run_before=keys, terminal_size=size)

    @pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=["80x24", "120x35"])
    def test_the_ledger_view(
        self, snap_compare: Callable[..., bool], size: tuple[int, int], tmp_path: Path
    ) -> None:
        # A folder of its own: the ledger reads every trace beside the opened one, and sample_traces/
        # grows with each new demo.
        folder = tmp_path / "ledger-runs"
        folder.mkdir()
        for name in ("planted-fact", "support", "leases", "zone-trap"):
            shutil.copy(sample(name), folder / sample(name).name)
        keys = snapshot_keys("L", quiet=True)
        app = FpdebugApp(folder / sample("planted-fact").name)
        assert snap_compare(app, run_before=keys, terminal_size=size)

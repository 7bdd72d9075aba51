"""What must stay readable at common terminal sizes: the run header's two lines, the timeline's
labels and badges, the skill map's note, the help's columns; and the words the bars use."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text

from fpdebug.trace.reader import TraceReader
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.bars import header_text
from fpdebug.tui.widgets.leases import LeaseGantt
from fpdebug.views.session import TraceSession
from tests.tui.helpers import load_session, opened, screen_text
from tests.tui.traces import sample, write_runs

pytestmark = pytest.mark.anyio


def _rows(text: str) -> list[str]:
    return text.splitlines()


@pytest.fixture
def many_runs(tmp_path: Path) -> Path:
    """Twelve runs, each with T1·I1, T1·I2, T1·I10, T3·I1, T3·I2, T3·I10 (labels up to ``12:T3·I10``)."""
    path = tmp_path / "runs.fptrace.jsonl"
    write_runs(path, [(f"run-{r}", t, i) for r in range(1, 13) for t in (1, 3) for i in (1, 2, 10)])
    return path


class TestRunHeader:
    async def test_the_second_line_survives_a_long_first_line_at_120_columns(self) -> None:
        async with opened(sample("unsupported-amount"), size=(120, 30)) as (pilot, _screen):
            first, second = _rows(screen_text(pilot.app))[:2]
            assert "turn" in second and "iteration" in second and "■ completed" in second
            # Words that repeat another give way before the file name: the agent's name is in the
            # run id, the provider starts the model's name.
            assert "run sample-unsupported-amount · scripted-unsupported-amount" in first
            assert "unsupported-amount.fptrace.jsonl" in first and "…" not in first
            assert "scripted /" not in first and "· unsupported-amount ·" not in first

    def test_the_file_name_gives_way_only_after_the_repeated_names(self) -> None:
        session = load_session(sample("unsupported-amount"))
        run = session.model.runs[0]
        name = "unsupported-amount.fptrace.jsonl"
        wide = header_text(session, run, name, Palette(), width=140).plain.split("\n")[0]
        assert "· unsupported-amount · scripted / scripted-unsupported-amount" in wide and name in wide
        narrow = header_text(session, run, name, Palette(), width=90).plain.split("\n")[0]
        assert len(narrow) <= 90 and name not in narrow and "…" in narrow
        assert narrow.endswith("run sample-unsupported-amount · scripted-unsupported-amount")

    def test_a_long_name_and_a_gate_state_both_fit(self) -> None:
        session = load_session(sample("support"))
        run = session.model.runs[0]
        name = "a-very-long-demo-trace-name-written-by-the-drive-mode.fptrace.jsonl"
        state = Text("‖ paused at T1·I4")
        text = header_text(session, run, name, Palette(), state=state, width=98)
        first, second = text.plain.split("\n")
        assert len(first) <= 98 and len(second) <= 98
        assert "run sample-support" in first and first.startswith("fpdebug a-very-long")
        # A completed run: the state is for a running one. The price comes last, after the status.
        assert second.endswith("■ completed · no price: scripted") and "paused" not in second
        run.status = "running"
        second = header_text(session, run, name, Palette(), state=state, width=98).plain.split("\n")[1]
        assert second.endswith("‖ paused at T1·I4 · no price: scripted")

    def test_a_run_not_read_to_its_end_is_still_loading(self, many_runs: Path) -> None:
        early = TraceSession(TraceReader(many_runs, index=False))
        while not early.index_done:
            early.index_step()
        early.model_step(limit=5)  # the first run's start and a few passes, no run_end anywhere yet
        assert not early.model_done
        line = header_text(early, early.model.runs[0], "runs", Palette()).plain.split("\n")[1]
        assert "still loading" in line and "cut short" not in line
        done = load_session(many_runs)  # read to the end: these runs really have no run_end
        line = header_text(done, done.model.runs[0], "runs", Palette()).plain.split("\n")[1]
        assert "no run_end (cut short?)" in line


class TestTimelineColumns:
    async def test_badges_show_at_80_columns(self) -> None:
        async with opened(sample("zone-trap"), size=(80, 24)) as (pilot, _screen):
            rows = _rows(screen_text(pilot.app))
            assert any("bdg" in row for row in rows if "iter" in row)
            parked = [row for row in rows if "T1·I4 " in row]
            assert parked and parked[0].split("││")[0].rstrip(" │").endswith("P")

    @pytest.mark.parametrize(("turn", "iteration"), [(1, 10), (12, 10), (12, 100), (123, 100)])
    async def test_badges_show_at_80_columns_beside_long_labels(
        self, tmp_path: Path, turn: int, iteration: int
    ) -> None:
        """Labels of 9 to 12 characters (``12:T123·I100``): the columns give way, the badges stay."""
        path = tmp_path / "long.fptrace.jsonl"
        write_runs(path, [(f"run-{r}", t, i) for r in range(1, 13) for t, i in ((1, 1), (turn, iteration))])
        longest = f"12:T{turn}·I{iteration}"
        async with opened(path, size=(80, 24)) as (pilot, screen):
            await pilot.press("G")
            await pilot.pause()
            assert screen.session.label_width == len(longest)
            timeline = [row.split("││")[0].strip("│ ▁▂▃▄▅▆▇█") for row in _rows(screen_text(pilot.app))]
            assert any(row.startswith("iter") and row.endswith("bdg") for row in timeline)
            rows = [row for row in timeline if "·I" in row]
            assert any(row.startswith(f"{longest} ") for row in rows)
            assert len(rows) > 6 and all(row.endswith(" g") for row in rows), (
                rows
            )  # every pass granted a lease

    @pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
    async def test_labels_of_many_runs_are_never_cut(self, many_runs: Path, size: tuple[int, int]) -> None:
        async with opened(many_runs, size=size) as (pilot, screen):
            await pilot.press("G")
            await pilot.pause()
            timeline_rows = [row.split("││")[0] for row in _rows(screen_text(pilot.app))]
            for label in ("12:T1·I10", "12:T3·I1", "12:T3·I10", "11:T3·I10"):
                assert any(f"│{label} " in row for row in timeline_rows), (label, size)
            assert not any("…" in row[:12] for row in timeline_rows if "·I" in row)
            assert screen.session.label_width == len("12:T3·I10")


class TestFooter:
    @pytest.mark.parametrize("size", [(80, 24), (60, 20)])
    async def test_the_help_key_stays_in_sight_in_every_view(self, size: tuple[int, int]) -> None:
        async with opened(sample("support"), size=size) as (pilot, screen):
            for view in screen.VIEWS:
                await pilot.press(view.key)
                await pilot.pause()
                footer = _rows(screen_text(pilot.app))[-1]
                assert "? Keys" in footer, (view.id, footer)
                assert footer.rstrip().endswith("^p Palette"), (view.id, footer)


class TestWrapping:
    async def test_the_skill_map_note_wraps_at_40_columns(self) -> None:
        async with opened(sample("zone-trap"), size=(40, 24)) as (pilot, _screen):
            await pilot.press("5")
            await pilot.pause()
            words = " ".join(screen_text(pilot.app).replace("│", " ").split())
            assert "(the drawing needs" in words and "the lists below say it all)" in words

    async def test_help_descriptions_wrap_under_themselves(self) -> None:
        async with opened(sample("support"), size=(120, 40)) as (pilot, _screen):
            await pilot.press("question_mark")
            await pilot.pause()
            rows = _rows(screen_text(pilot.app))
            at = next(i for i, row in enumerate(rows) if "view-backtrack" in row)
            column = rows[at].index("Show the Backtrack view")
            continued = rows[at + 1]
            assert continued[:column].replace("│", " ").strip() == ""
            assert continued[column:].strip(" │▇▁▂▃▄▅▆█")


class TestWords:
    async def test_one_iteration_is_not_iterations(self, tmp_path: Path) -> None:
        path = tmp_path / "one.fptrace.jsonl"
        write_runs(path, [("solo", 1, 1)])
        async with opened(path) as (pilot, _screen):
            status = _rows(screen_text(pilot.app))[-2]
            assert "· 1 iteration" in status and "1 iterations" not in status

    async def test_a_lease_spent_on_the_pass_it_served_shows_the_prune_mark(self) -> None:
        async with opened(sample("support")) as (pilot, screen):
            await pilot.press("2")
            await pilot.pause()
            gantt = screen.query_one(LeaseGantt)
            row = next(
                i for i, lease in enumerate(screen.session.leases) if lease.instruction_id == "wire-format"
            )
            lease = screen.session.leases[row]
            assert lease.delivery_lease == "next-call" and lease.prune_reason == "spent"
            drawn = gantt.render_row(row, 150).plain
            assert "█✕" in drawn

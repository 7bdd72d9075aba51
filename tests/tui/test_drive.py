"""Drive a demo run from the debugger: step pass by pass, breakpoints on the right pass, quit mid-run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot

from fpdebug.cli import main
from fpdebug.demo.registry import SAMPLE_START, load_scenario, run_target
from fpdebug.engine.providers.base import Provider
from fpdebug.errors import ProviderError, TraceError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.migrate import migrate
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmRequest, LlmResponse, RunEndEvent
from fpdebug.tui.app import TraceSource, binding_ids
from fpdebug.tui.commands import fixed_commands
from fpdebug.tui.drive import (
    Breakpoint,
    DriveApp,
    DriveScreen,
    GateStatus,
    PausePoint,
    RunDriver,
    RunStateChanged,
)
from fpdebug.tui.drive.screen import gate_header_text, gate_text
from fpdebug.tui.screens.help_screen import HelpScreen
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.backtrack_pane import BacktrackPane
from fpdebug.tui.widgets.inspector import PassInspector
from fpdebug.tui.widgets.skill_map import SkillMapView
from tests.tui.helpers import run_palette, screen_text, wait_for
from tests.tui.traces import sample

pytestmark = pytest.mark.anyio

SIZE = (160, 48)

LONG = 60.0
"""Seconds a whole demo run may take on a loaded machine (a fraction of a second on an idle one)."""


def make_app(
    tmp_path: Path,
    scenario: str,
    *,
    run_id: str | None = None,
    provider: Provider | None = None,
    **options: object,
) -> tuple[DriveApp, RunDriver]:
    """A driven run of a demo scenario on the sample clock; the trace goes to ``tmp_path``."""
    path = tmp_path / f"{scenario}.fptrace.jsonl"
    driver = RunDriver(
        load_scenario(scenario),
        trace_path=path,
        provider=provider,
        clock=FixedClock(SAMPLE_START),
        run_id=run_id or f"drive-{scenario}",
        durability="none",
        **options,  # type: ignore[arg-type]
    )
    return DriveApp(TraceSource(path, "drive"), controller=driver), driver


def screen_of(app: DriveApp) -> DriveScreen:
    screen = app.screen_stack[0]
    assert isinstance(screen, DriveScreen)
    return screen


def status_line(app: DriveApp) -> str:
    return screen_text(app).splitlines()[-2]


def header_line(app: DriveApp) -> str:
    """The run header's second row: turns, iterations, tokens, how the run stands."""
    return screen_text(app).splitlines()[1]


async def paused_at(
    pilot: Pilot[object], app: DriveApp, driver: RunDriver, condition: Callable[[str, int | None], bool]
) -> None:
    """Wait until the gate is paused where ``condition(kind, iteration)`` holds and the screen shows it."""

    def there() -> bool:
        point = driver.status.paused_at
        if driver.status.state != "paused" or point is None or not condition(point.kind, point.iteration):
            return False
        screen = screen_of(app)
        selected = screen.selected
        return (
            screen.session.lines > point.seq
            and 0 <= selected < len(screen.session.iterations)
            and screen.session.iterations[selected].number == point.iteration
        )

    assert await wait_for(pilot, there, timeout=LONG), f"never paused there: {driver.status}"
    await pilot.pause()


class TestStepping:
    async def test_it_opens_paused_on_pass_1_and_s_steps_one_pass_at_a_time(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "support")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            assert await wait_for(pilot, lambda: "paused at T1·I1 pass" in status_line(app))
            assert "Iteration 1 · turn 1" in screen_text(app)
            # the header agrees with the status line: paused, not running
            assert await wait_for(pilot, lambda: "‖ paused at T1·I1" in header_line(app))
            assert "running" not in header_line(app)
            for iteration in (2, 3):
                await pilot.press("s")
                await paused_at(pilot, app, driver, lambda kind, it, n=iteration: (kind, it) == ("pass", n))
                screen = screen_of(app)
                assert screen.timeline.total == iteration
                status = f"paused at T1·I{iteration} pass"
                assert await wait_for(pilot, lambda status=status: status in status_line(app))
                header = f"‖ paused at T1·I{iteration}"
                assert await wait_for(pilot, lambda header=header: header in header_line(app))
                inspector = screen.query_one("#inspector", PassInspector)
                assert inspector.text_lines()[0].startswith(f"Iteration {iteration} · turn 1")

    async def test_space_continues_to_the_end(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "support")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await pilot.press("space")
            assert await wait_for(pilot, lambda: "run ended: completed" in status_line(app), timeout=LONG)
            screen = screen_of(app)
            assert await wait_for(pilot, lambda: screen.timeline.total == 5)
            assert await wait_for(pilot, lambda: "■ completed" in header_line(app))
            assert "paused" not in header_line(app)
        assert driver.wait(LONG) and driver.result is not None
        assert driver.result.result.status == "completed"


class TestBreakpoints:
    async def test_lease_prune_from_the_palette_pauses_on_iteration_3s_prune(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "support")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await run_palette(pilot, "run: break on lease_prune")
            assert [bp.label for bp in driver.gate.breakpoints] == ["lease_prune"]
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "lease_prune")
            point = driver.status.paused_at
            assert point is not None and point.iteration == 3 and point.hits == ("lease_prune",)
            hit = "breakpoint lease_prune hit at T1·I3 lease_prune (line 15) · at evaluate"
            assert await wait_for(pilot, lambda: hit in status_line(app))
            assert await wait_for(pilot, lambda: "● breakpoint hit at T1·I3" in header_line(app))
            # what the screen shows is the file: the prune is the last line, nothing after it
            screen = screen_of(app)
            assert screen.session.lines == point.seq + 1
            inspector = screen.query_one("#inspector", PassInspector)
            assert "pruned  at evaluate" in "\n".join(inspector.text_lines())
            # continue: the next prune (iteration 4), then the end
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "lease_prune" and it == 4)
            await pilot.press("space")
            assert await wait_for(pilot, lambda: "run ended: completed" in status_line(app), timeout=LONG)
        assert main(["validate", str(driver.trace_path)]) == 0

    async def test_a_breakpoint_hit_before_the_screen_is_up_is_shown_once_it_is(self, tmp_path: Path) -> None:
        # --start running --break lease_prune: the run pauses within milliseconds, before the
        # screen's first load is done; the screen must still end up on the paused iteration.
        app, _driver = make_app(
            tmp_path, "support", start="running", breakpoints=[Breakpoint.on_kind("lease_prune")]
        )
        async with app.run_test(size=SIZE) as pilot:
            screen = screen_of(app)
            inspector = screen.query_one("#inspector", PassInspector)

            def shown() -> bool:
                lines = inspector.text_lines()
                return bool(lines) and lines[0].startswith("Iteration 3 · turn 1")

            assert await wait_for(pilot, shown, timeout=LONG)
            assert screen.session.iterations[screen.selected].number == 3
            assert "+1 new" not in status_line(app)

    async def test_park_from_the_menu_pauses_on_pass_4_of_the_zone_trap(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "zone-trap")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await pilot.press("b")
            assert await wait_for(pilot, lambda: "Breakpoints · 0 set" in screen_text(app))
            await pilot.press("down", "space")  # the second entry: a map parks
            assert await wait_for(pilot, lambda: "Breakpoints · 1 set" in screen_text(app))
            await pilot.press("escape")
            await pilot.pause()
            assert [bp.label for bp in driver.gate.breakpoints] == ["park"]
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "engagement")
            assert driver.status.paused_at.iteration == 4
            hit = "breakpoint park hit at T1·I4 engagement (line 19) · skill-map parked"
            assert await wait_for(pilot, lambda hit=hit: hit in status_line(app))
            # the skill map view says the map parked on this very pass
            await pilot.press("5")

            def text() -> str:
                return "\n".join(screen_of(app).query_one("#view-skill-map", SkillMapView).text_lines())

            assert await wait_for(pilot, lambda: "map skill-map parked since I4" in text()), text()
            assert "parked on this pass" in text()

    async def test_cursor_into_a_skill_and_a_tool_from_the_palette(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "support")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            texts = [command.text for command in fixed_commands(screen_of(app))]
            # one command per declared node and per tool the run can call
            for node in ("triage", "billing", "refund"):
                assert f"run: break on cursor into {node}" in texts
            for tool in ("lookup_order", "check_policy", "fetch_invoice", "issue_refund", "read_skill"):
                assert f"run: break on tool {tool}" in texts
            assert "view: skill map" in texts and "run: clear breakpoints" in texts
            await run_palette(pilot, "run: break on cursor into refund")
            await run_palette(pilot, "run: break on tool issue_refund")
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "cursor_move")
            hit = "breakpoint cursor into refund hit at T1·I4 cursor_move (line 19) · billing → refund"
            assert await wait_for(pilot, lambda hit=hit: hit in status_line(app))
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "llm_call")
            hit = "breakpoint tool issue_refund hit at T1·I4 llm_call (line 22) · asks for issue_refund"
            assert await wait_for(pilot, lambda hit=hit: hit in status_line(app))
            await run_palette(pilot, "run: clear breakpoints")
            assert driver.gate.breakpoints == ()


def backtrack_text(app: DriveApp) -> str:
    """The backtrack pane's document as one line of words."""
    pane = screen_of(app).query_one(BacktrackPane)
    return " ".join(" ".join(pane.document_view.text_lines()).split())


class TestBacktrackFollowsTheRun:
    async def test_a_pane_opened_before_the_answer_shows_it_once_the_run_ends(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "planted-fact")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            await pilot.press("7")
            pane = screen_of(app).query_one(BacktrackPane)
            assert await wait_for(pilot, lambda: pane.state.error is not None)
            assert "no llm_call with a reply" in backtrack_text(app)
            await pilot.press("space")
            assert await wait_for(pilot, lambda: "■ completed" in header_line(app), timeout=LONG)
            assert await wait_for(
                pilot, lambda: pane.report is not None and pane.report.call_seq == 7, timeout=LONG
            )
            await pilot.pause()
            text = backtrack_text(app)
            assert "no llm_call with a reply" not in text
            assert "ANSWER 'APPROVED: refund of $250.00 for ORD-7 issued.'" in text
            assert "← BORN fact 'vip-override' declared in run_start" in text

    async def test_a_hidden_pane_traces_the_new_answer_when_shown_again(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "planted-fact")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            await pilot.press("7")
            pane = screen_of(app).query_one(BacktrackPane)
            assert await wait_for(pilot, lambda: pane.state.error is not None)
            await pilot.press("1", "space")
            assert await wait_for(pilot, lambda: "■ completed" in header_line(app), timeout=LONG)
            await pilot.pause()
            assert pane.report is None  # hidden: nothing traced in the background
            await pilot.press("7")
            assert await wait_for(pilot, lambda: pane.report is not None and pane.report.call_seq == 7)

    async def test_a_chosen_call_stays_while_the_run_goes_on(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "planted-fact", breakpoints=(Breakpoint.tool("lookup_order"),))
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            await pilot.press("space")
            await paused_at(pilot, app, driver, lambda kind, it: kind == "llm_call")
            await pilot.press("B")  # this iteration's call, the one asking for lookup_order
            pane = screen_of(app).query_one(BacktrackPane)
            assert await wait_for(pilot, lambda: pane.report is not None and pane.report.call_seq == 4)
            await pilot.press("space")
            assert await wait_for(pilot, lambda: "■ completed" in header_line(app), timeout=LONG)
            await pilot.pause()
            assert pane.report is not None and pane.report.call_seq == 4
            assert pane.report.answer.startswith("→ lookup_order(")


class TestHeader:
    PAUSE = PausePoint(seq=8, kind="pass", run_id="r", turn=1, iteration=2, reason="step")
    HIT = PausePoint(
        seq=15, kind="lease_prune", run_id="r", turn=1, iteration=3, reason="breakpoint",
        hits=("lease_prune",),
    )  # fmt: skip

    @pytest.mark.parametrize(
        ("status", "header", "symbol"),
        [
            (GateStatus(state="running"), "▶ running", "▶"),
            (GateStatus(state="running", target="pass"), "▶ running", "▶"),
            (GateStatus(state="paused", paused_at=PAUSE), "‖ paused at T1·I2", "‖"),
            (GateStatus(state="paused", paused_at=HIT), "● breakpoint hit at T1·I3", "●"),
            (GateStatus(state="stopping"), "■ stopping", "■"),
            (GateStatus(state="ended", outcome="completed"), "■ completed", "■"),
            (GateStatus(state="ended", outcome="interrupted"), "■ interrupted", "■"),
            (GateStatus(state="ended", outcome="failed", error="ProviderError: 503"), "✕ failed", "✕"),
        ],
    )
    def test_the_header_says_what_the_status_line_says_in_a_few_words(
        self, status: GateStatus, header: str, symbol: str
    ) -> None:
        palette = Palette()
        assert gate_header_text(status, palette).plain == header
        assert gate_text(status, palette).plain.strip().startswith(symbol)


class TestEnding:
    async def test_quitting_mid_run_ends_it_interrupted_and_loses_nothing(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "support", run_id="sample-support")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await pilot.press("s")
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 2))
            await pilot.press("q")
        assert driver.wait(LONG)
        assert driver.result is not None and driver.result.result.status == "interrupted"
        assert main(["validate", str(driver.trace_path)]) == 0
        lines = driver.trace_path.read_bytes().splitlines()
        with TraceReader(driver.trace_path) as reader:
            last = reader[len(reader) - 1]
        assert isinstance(last, RunEndEvent) and last.status == "interrupted"
        # every record before run_end is the very record an undisturbed run writes there
        full = (
            run_target(
                "support",
                trace_path=tmp_path / "full.fptrace.jsonl",
                clock=FixedClock(SAMPLE_START),
                run_id="sample-support",
                durability="none",
            )
            .trace_path.read_bytes()
            .splitlines()
        )
        assert lines[:-1] == full[: len(lines) - 1]
        assert len(lines) - 1 == 9  # header, 8 events up to pass 2, then run_end

    async def test_quitting_while_paused_makes_no_further_model_call(self, tmp_path: Path) -> None:
        scenario = load_scenario("support")
        inner = scenario.scripted_provider()
        calls: list[LlmRequest] = []

        class CountingModel:
            name, model = inner.name, inner.model

            def complete(self, request: LlmRequest) -> LlmResponse:
                calls.append(request)
                return inner.complete(request)

        app, driver = make_app(
            tmp_path, "support", provider=CountingModel(), breakpoints=(Breakpoint.tool("nonexistent"),)
        )
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            await pilot.press("q")
        assert driver.wait(LONG)
        assert calls == []  # a live provider would have billed a request the trace never shows
        with TraceReader(driver.trace_path) as reader:
            events = [reader[index] for index in range(len(reader))]
        assert [event.kind for event in events[-2:]] == ["pass", "run_end"]
        end = events[-1]
        assert isinstance(end, RunEndEvent) and end.status == "interrupted"
        assert (end.input_tokens, end.output_tokens) == (0, 0)

    async def test_a_run_driven_to_the_end_is_the_sample_byte_for_byte(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "zone-trap", run_id="sample-zone-trap", start="running")
        async with app.run_test(size=SIZE) as pilot:
            assert await wait_for(pilot, lambda: driver.status.state == "ended", timeout=LONG)
        # The driver writes the current schema (2); the samples stay version 1, and migrating back
        # to 1 gives identical bytes only if every record the drive wrote is the sample's.
        assert b'"schema_version":2' in driver.trace_path.read_bytes().split(b"\n", 1)[0]
        as_v1 = tmp_path / "as-v1.jsonl"
        migrate(driver.trace_path, as_v1, to=1)
        assert as_v1.read_bytes() == sample("zone-trap").read_bytes()

    async def test_a_failing_provider_shows_failed(self, tmp_path: Path) -> None:
        class Down:
            name, model = "scripted", "down"

            def complete(self, request: LlmRequest) -> LlmResponse:
                raise ProviderError("503 from upstream", provider="scripted", status=503)

        down: Provider = Down()  # type: ignore[assignment]
        app, driver = make_app(tmp_path, "support", provider=down, start="running")
        async with app.run_test(size=SIZE) as pilot:
            failed = "run failed: ProviderError: 503 from upstream"
            assert await wait_for(pilot, lambda: failed in status_line(app), timeout=LONG)
            assert await wait_for(pilot, lambda: "■ failed" in header_line(app))
        with TraceReader(driver.trace_path) as reader:
            last = reader[len(reader) - 1]
        assert isinstance(last, RunEndEvent) and last.status == "failed"

    async def test_controls_after_the_end_say_the_run_has_ended(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "leases", start="running")
        seen: list[Message] = []
        async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
            assert await wait_for(pilot, lambda: driver.status.state == "ended", timeout=LONG)
            await pilot.press("s")

            def told() -> bool:
                said = "Cannot step: the run has ended (completed)"
                return any(isinstance(m, Notify) and said in m.notification.message for m in seen)

            assert await wait_for(pilot, told)

    async def test_a_state_change_arriving_while_the_app_closes_is_ignored(self, tmp_path: Path) -> None:
        # The run thread posts its last RunStateChanged from a `finally`: it can reach the app after
        # the app began exiting, when the screen is still mounted but its widgets are gone. That
        # used to raise NoMatches('#timeline') out of the app.
        app, driver = make_app(tmp_path, "leases", start="running")
        async with app.run_test(size=SIZE) as pilot:
            assert await wait_for(pilot, lambda: driver.status.state == "ended", timeout=LONG)
            screen = screen_of(app)
            await screen.query_one("#timeline").remove()  # what the app's teardown does first
            app.post_message(RunStateChanged(driver.status))
            screen.run_state_changed(GateStatus(state="paused", paused_at=None))
            await pilot.pause()
        # Leaving run_test re-raises any exception a handler raised (the NoMatches of the bug).


class TestKeys:
    async def test_the_help_lists_the_drive_keys_with_their_ids(self, tmp_path: Path) -> None:
        app, _driver = make_app(tmp_path, "leases")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = "\n".join(app.screen.query_one("HelpDocument").text_lines())  # type: ignore[attr-defined]
            assert "Drive a run" in text
            for binding_id in ("run-toggle", "run-step", "run-breakpoints", "breakpoints-close"):
                assert binding_id in text
            assert "run: step" in text and "run: break on lease_prune" in text

    def test_drive_ids_are_remappable(self) -> None:
        assert {"run-toggle", "run-step", "run-breakpoints"} <= binding_ids(DriveApp)

    async def test_a_remapped_step_key_steps(self, tmp_path: Path) -> None:
        path = tmp_path / "support.fptrace.jsonl"
        driver = RunDriver(load_scenario("support"), trace_path=path, clock=FixedClock(SAMPLE_START))
        app = DriveApp(TraceSource(path, "drive"), controller=driver, keymap={"run-step": "x"})
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 1))
            await pilot.press("x")
            await paused_at(pilot, app, driver, lambda kind, it: (kind, it) == ("pass", 2))


class TestTheCommandLine:
    def test_demo_off_a_terminal_runs_without_the_debugger(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        trace = tmp_path / "demo.fptrace.jsonl"
        assert main(["demo", "leases", "--trace", str(trace)]) == 0
        captured = capsys.readouterr()
        assert "not a terminal" in captured.err and f"trace: {trace}" in captured.out
        assert main(["validate", str(trace)]) == 0

    def test_run_tui_off_a_terminal_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        trace = tmp_path / "run.fptrace.jsonl"
        assert main(["run", "support", "--tui", "--trace", str(trace)]) == 2
        assert "--tui needs a terminal" in capsys.readouterr().err
        assert not trace.exists()

    def test_an_existing_trace_is_not_clobbered(self, tmp_path: Path) -> None:
        trace = tmp_path / "taken.fptrace.jsonl"
        trace.write_text("keep me\n", encoding="utf-8")
        with pytest.raises(TraceError, match="already exists"):
            RunDriver(load_scenario("support"), trace_path=trace)
        assert trace.read_text(encoding="utf-8") == "keep me\n"

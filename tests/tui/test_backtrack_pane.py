"""The backtrack pane: choose an answer, see its chain, rerun it in a worker, see verdicts arrive, reopen.

Every test that reruns works on a COPY of a sample in ``tmp_path``: a backtrack appends to a sidecar
beside the trace, and none may ever be written beside a committed sample.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import ProgressBar

from fpdebug.backtrack import load_sidecar, sidecar_path_for
from fpdebug.trace.schema import PassEvent, RunEndEvent, RunStartEvent, TurnEndEvent, TurnStartEvent
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets import backtrack_pane
from fpdebug.tui.widgets.backtrack_pane import BacktrackPane
from fpdebug.tui.widgets.events import EventList
from tests.trace.samples import Script
from tests.tui.helpers import loaded, record_notices, run_checks, run_palette, screen_text, wait_for
from tests.tui.traces import sample

pytestmark = pytest.mark.anyio

SIZE = (160, 48)

RERUNS = 180.0
"""Seconds a backtrack's reruns may take on a loaded machine (about 2 s on an idle one)."""


def copy_sample(name: str, directory: Path) -> Path:
    """A copy of a committed sample (same file name), so its sidecar lands in ``directory``."""
    target = directory / f"{name}.fptrace.jsonl"
    shutil.copyfile(sample(name), target)
    return target


def _pane(app: FpdebugApp) -> BacktrackPane:
    screen = app.screen
    assert isinstance(screen, TraceScreen)
    return screen.query_one(BacktrackPane)


def pane_text(app: FpdebugApp) -> str:
    """The pane's document as one line of words (wrapping does not split phrases)."""
    return " ".join(" ".join(_pane(app).document_view.text_lines()).split())


async def open_pane(pilot: Pilot[object]) -> BacktrackPane:
    """Load, show the Backtrack view (the final answer by default), wait for its report."""
    await loaded(pilot)
    await pilot.press("7")
    pane = _pane(pilot.app)  # type: ignore[arg-type]
    assert await wait_for(pilot, lambda: pane.report is not None or pane.state.error is not None)
    await pilot.pause()
    return pane


async def _jump(pilot: Pilot[object], pane: BacktrackPane, starts: str) -> None:
    document = pane.document_view
    target = next(i for i, text in enumerate(document.link_texts()) if text.strip().startswith(starts))
    document.focus()
    document.link = target  # j/k walking the links is covered by the diff view's tests
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()


class TestFullFlow:
    async def test_planted_fact_chain_reruns_confirmed_culprit_then_reopened(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        seen: list[Message] = []
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
            pane = await open_pane(pilot)
            # the default answer: the final one of the last turn, correlational until rerun
            report = pane.report
            assert report is not None and report.call_seq == 7 and report.mode == "correlational"
            text = pane_text(app)
            assert "ANSWER 'APPROVED: refund of $250.00 for ORD-7 issued.'" in text
            assert "← READ llm_call #2 (seq 7, turn 1, iteration 2) seq 7" in text
            assert "← LANDED system-prompt segment 4 (fact 'vip-override') seq 7" in text
            assert "← BORN fact 'vip-override' declared in run_start (fact, trigger always) seq 1" in text
            assert 'CORRELATIONAL: aligned with the answer, never "because"' in text

            await pilot.press("a")
            assert await wait_for(pilot, lambda: not pane.running, timeout=RERUNS)
            await pilot.pause()

            names = [type(message).__name__ for message in seen]
            assert "Progressed" in names and "VerdictArrived" in names
            assert names.index("VerdictArrived") < names.index("Finished")
            arrived = [m for m in seen if isinstance(m, BacktrackPane.VerdictArrived)]
            counts = [len(m.report.verdicts) for m in arrived]
            assert counts == sorted(counts)
            last = [m for m in seen if isinstance(m, BacktrackPane.Progressed)][-1]
            assert last.done == last.total == 18  # baseline + five suspects, three seeded reruns each

            report = pane.report
            assert report is not None and report.status == "complete"
            assert report.mode == "causal" and report.baseline_flips == 0 and report.baseline_samples == 3
            stamps = {card.name: card.verdict for card in report.cards}
            culprit = stamps.pop("vip-override")
            assert culprit is not None
            assert (culprit.kind, culprit.flips, culprit.samples) == ("confirmed", 3, 3)
            assert stamps and all(s is not None and s.kind == "not-confirmed" for s in stamps.values())
            text = pane_text(app)
            assert "#3 injection 'vip-override' (fact) score 0.323 CONFIRMED · CAUSAL 3/3" in text
            assert "baseline 0/3 flipped with no ablation (stable)" in text
            assert "CONFIRMED injection 'vip-override' ablating 3/3 flipped" in text
            assert "not confirmed injection 'refund-limits' ablating 0/3 flipped" in text
            headline = "complete in this session · 18 reruns · saved beside the trace · CONFIRMED: "
            assert headline + "injection 'vip-override' 3/3" in text
            assert "complete: 18 reruns" in screen_text(app)

        # the verdicts were saved beside the COPY, never beside the committed sample
        sidecar = sidecar_path_for(trace)
        assert sidecar.exists() and not sidecar_path_for(sample("planted-fact")).exists()
        saved = load_sidecar(sidecar).latest(call_seq=7)
        assert saved is not None and saved.status == "complete"

        # quit and reopen: the saved verdicts show at once, labelled with their date and status
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            assert pane.state.origin == "saved" and pane.state.saved_status == "complete"
            report = pane.report
            assert report is not None and report.mode == "causal"
            assert {c.name: c.verdict.kind for c in report.cards if c.verdict}["vip-override"] == "confirmed"
            text = pane_text(app)
            when = saved.created.strftime("%Y-%m-%d %H:%M UTC")
            assert f"SAVED beside the trace on {when} · complete · 18 reruns" in text
            assert "CONFIRMED injection 'vip-override' ablating 3/3 flipped" in text
            assert "saved verdicts (complete)" in screen_text(app)

    async def test_cancel_mid_run_keeps_the_finished_verdicts(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        reached, release = threading.Event(), threading.Event()
        real = backtrack_pane.backtrack

        def gated(*args: Any, progress: Any, **kwargs: Any) -> Any:
            def hook(done: int, total: int) -> None:
                progress(done, total)
                if done == 6:  # the baseline (3 reruns) and the first suspect's probe (3 more)
                    reached.set()
                    release.wait(10)

            return real(*args, progress=hook, **kwargs)

        monkeypatch.setattr(backtrack_pane, "backtrack", gated)
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            try:
                pane = await open_pane(pilot)
                await pilot.press("a")
                assert await wait_for(pilot, lambda: reached.is_set() and pane.state.done == 6)
                bar = pane.query_one(ProgressBar)
                assert pane.running and pane.has_class("-running") and bar.display
                assert bar.progress == 6 and bar.total == 18
                assert await wait_for(pilot, lambda: "running 6/18 reruns" in screen_text(app))
                await pilot.press("escape")  # esc cancels while reruns run
                assert "cancelling" in pane_text(app)
            finally:
                release.set()  # never leave the rerun thread waiting, whatever failed above
            assert await wait_for(pilot, lambda: not pane.running, timeout=RERUNS)
            await pilot.pause()
            report = pane.report
            assert report is not None and report.status == "cancelled"
            assert [v.label for v in report.verdicts] == ["tool 'lookup_order'"]
            assert report.baseline == "0/3 flipped with no ablation"
            assert not pane.has_class("-running")
            text = pane_text(app)
            assert "cancelled: the verdicts that finished are kept" in text
            assert "not confirmed tool 'lookup_order' ablating 0/3 flipped" in text
        saved = load_sidecar(sidecar_path_for(trace)).latest(call_seq=7)
        assert saved is not None and saved.status == "cancelled" and len(saved.report.verdicts) == 1

    async def test_palette_final_answer_then_bisect(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot)
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            await run_palette(pilot, "backtrack: final answer")
            pane = _pane(app)
            assert screen.view == "backtrack"
            assert await wait_for(pilot, lambda: pane.report is not None)
            await run_palette(pilot, "backtrack: bisect")
            assert await wait_for(
                pilot,
                lambda: pane.report is not None and pane.report.bisect is not None and not pane.running,
                timeout=RERUNS,
            )
            bisect = pane.report.bisect  # type: ignore[union-attr]
            assert bisect is not None and bisect.verdict == "confirmed"
            assert bisect.culprits == [["injection 'vip-override'"]]
            assert "bisect confirmed (causal) — culprit sets: [injection 'vip-override']" in pane_text(app)


class TestChoosingAndJumping:
    async def test_b_chooses_a_call_then_a_chain_hop_jumps_to_its_iteration_or_line(self) -> None:
        """Two checks in one session of the sample (read only: nothing is rerun here): ``B`` on a
        timeline row backtracks that call; then, on the final answer, each chain hop jumps."""
        app = FpdebugApp(sample("planted-fact"))
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot)
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            await run_checks(
                pilot,
                screen,
                b_on_a_timeline_row_backtracks_that_call,  # first: from launch, on the first row
                a_chain_hop_jumps_to_its_iteration_or_line,  # it starts on the final answer B chose last
            )


async def b_on_a_timeline_row_backtracks_that_call(pilot: Pilot[object], screen: TraceScreen) -> None:
    app = pilot.app
    await pilot.press("B")  # the first iteration's call: it asked for lookup_order
    pane = _pane(app)  # type: ignore[arg-type]
    assert await wait_for(pilot, lambda: pane.report is not None)
    assert screen.view == "backtrack"
    assert pane.report is not None and pane.report.call_seq == 4
    assert pane.report.answer.startswith("→ lookup_order(")
    await pilot.press("1", "G", "B")
    assert await wait_for(pilot, lambda: pane.report is not None and pane.report.call_seq == 7)


async def a_chain_hop_jumps_to_its_iteration_or_line(pilot: Pilot[object], screen: TraceScreen) -> None:
    pane = await open_pane(pilot)
    assert pane.report is not None and pane.report.call_seq == 7  # the final answer, as by default
    await _jump(pilot, pane, "← RETURNED")
    assert screen.view == "passes" and screen.selected == 0  # the tool_result of iteration 1
    await pilot.press("7")
    await _jump(pilot, pane, "← READ")
    assert screen.view == "calls" and screen.selected == 1
    await pilot.press("7")
    await _jump(pilot, pane, "← BORN")
    assert screen.view == "events"  # run_start is a run-level line: shown raw
    assert screen.query_one("#events", EventList).cursor == 1


class TestAnswerAssessment:
    async def test_unsupported_and_supported_values_with_jumps(self) -> None:
        app = FpdebugApp(sample("unsupported-amount"))
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            text = pane_text(app)
            assert "3 of 4 value(s) supported" in text
            assert "✗ $75.00 amount UNSUPPORTED" in text
            supported = "✓ $1,250.00 amount supported by tool:call_1 get_invoice result (call_1) at T1·I1"
            assert supported in text
            assert "user the user's message (turn 1)" in text
            assert "standing 3 of 4 values in this answer are backed by tool results" in text
            assert pane.report is not None and [u.text for u in pane.report.unsupported] == ["$75.00"]
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            await _jump(pilot, pane, "tool:call_1")
            assert screen.view == "passes" and screen.selected == 0
            await pilot.press("7")
            await _jump(pilot, pane, "user ")
            assert screen.view == "events"
            assert screen.query_one("#events", EventList).cursor == 2  # the turn_start

    async def test_traced_argument_answer_values_are_all_supported(self) -> None:
        app = FpdebugApp(sample("traced-argument"))
        async with app.run_test(size=SIZE) as pilot:
            await open_pane(pilot)
            text = pane_text(app)
            assert "4 of 4 value(s) supported" in text and "UNSUPPORTED" not in text
            assert "tool:call_2 refund_order result (call_2) at T1·I2" in text


class TestRefusalsAndBadTraces:
    async def test_a_live_provider_trace_is_refused_with_the_flag_to_pass(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        lines = trace.read_bytes().splitlines(keepends=True)
        start = orjson.loads(lines[1])
        assert start["kind"] == "run_start"
        start["provider"] = "anthropic"
        lines[1] = orjson.dumps(start) + b"\n"
        trace.write_bytes(b"".join(lines))
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            await pilot.press("a")
            assert await wait_for(pilot, lambda: bool(pane.state.error) and not pane.running, timeout=RERUNS)
            await pilot.pause()
            text = pane_text(app)
            assert "answered by the anthropic provider" in text and "--provider anthropic" in text
            assert "fpdebug backtrack planted-fact.fptrace.jsonl --call 7 --ablate --provider" in text
            assert "nothing rerun: see below" in screen_text(app)
        assert not sidecar_path_for(trace).exists()  # refused before anything was written

    async def test_a_trace_without_llm_calls_says_so(self, tmp_path: Path) -> None:
        script = Script("no-calls")
        script.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=2)
        script.turn = 1
        script.add(TurnStartEvent, user_message="hi")
        script.add(PassEvent, iteration=1, active_ids=[], evaluated_total=0)
        script.add(TurnEndEvent, iteration=None, final_content="", iteration_count=1)
        script.turn = None
        script.add(RunEndEvent, status="completed", turns=1)
        app = FpdebugApp(script.write(tmp_path / "no-calls.fptrace.jsonl"))
        said = record_notices(app)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            assert pane.report is None and "no llm_call" in (pane.state.error or "")
            assert "no llm_call" in pane_text(app)
            await pilot.press("a")  # nothing to rerun: a notice, no worker, no crash
            await pilot.pause()
            assert not pane.running
            await pilot.press("1", "B")
            # The key reaches the passes view only once the view switch has drawn; wait for it.
            assert await wait_for(pilot, lambda: any("made no LLM call" in notice for notice in said))

    async def test_a_hostile_trace_never_reaches_the_terminal_raw(
        self, hostile_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, _ = hostile_trace
        app = FpdebugApp(path)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            await pilot.press(*"jjjj")
            text = screen_text(app)
            assert "\x1b" not in text and "\u202e" not in text
            assert pane.report is not None or pane.state.error is not None


def test_the_readme_screenshot_reruns_on_a_copy(tmp_path: Path) -> None:
    from fpdebug.tui.screenshots import SHOTS, take
    from tests.tui.traces import SAMPLES

    shot = next(shot for shot in SHOTS if shot.name == "backtrack")
    svg = take(shot, samples=SAMPLES, out=tmp_path).read_text(encoding="utf-8")
    assert "CAUSAL:&#160;ablating&#160;injection&#160;&#x27;vip-override&#x27;&#160;flipped" in svg
    assert not sidecar_path_for(sample("planted-fact")).exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "backtrack.svg"]


class TestAuditA59:
    """A trace never makes the pane import code; damaged and extreme traces are said, not crashed on."""

    @staticmethod
    def _naming(tmp_path: Path, module: str) -> Path:
        trace = copy_sample("planted-fact", tmp_path)
        lines = trace.read_bytes().splitlines(keepends=True)
        start = orjson.loads(lines[1])
        start["options"] = {"module": module}
        lines[1] = orjson.dumps(start) + b"\n"
        trace.write_bytes(b"".join(lines))
        return trace

    async def test_a_module_the_trace_names_is_not_imported_the_pane_says_what_to_pass(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        trace = self._naming(tmp_path, "helper.py")
        (tmp_path / "helper.py").write_text(
            'from pathlib import Path\nPath(__file__).with_name("PWNED").write_text("code ran at import")\n'
        )
        monkeypatch.chdir(tmp_path)
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            for key in ("a", "i", "r"):
                await pilot.press(key)
                stopped = await wait_for(
                    pilot, lambda: bool(pane.state.error) and not pane.running, timeout=RERUNS
                )
                assert stopped
                await pilot.pause()
                text = pane_text(app)
                assert "built from the module 'helper.py'" in text
                assert f"fpdebug view {trace} --module helper.py" in text
                assert not (tmp_path / "PWNED").exists()
        assert not sidecar_path_for(trace).exists()  # refused before anything was written

    async def test_a_refused_rerun_claims_no_verdicts(self, tmp_path: Path) -> None:
        trace = self._naming(tmp_path, "my_planted.py")
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            await pilot.press("a")
            assert await wait_for(pilot, lambda: bool(pane.state.error) and not pane.running, timeout=RERUNS)
            await pilot.pause()
            text = pane_text(app)
            assert "built from the module 'my_planted.py'" in text
            assert pane.state.origin == "explained"
            assert "verdicts none yet (chains and rankings only; nothing was rerun)" in text
            assert "in this session" not in text and "saved beside the trace" not in text
            assert "note nothing was rerun (the verdicts above are as they were)" in text
            assert "nothing rerun: see below" in screen_text(app)
        assert not sidecar_path_for(trace).exists()

    async def test_a_refused_rerun_leaves_the_saved_verdicts_saved(self, tmp_path: Path) -> None:
        from fpdebug.backtrack import backtrack
        from fpdebug.demo import recorded_module_loader

        agent = tmp_path / "my_planted.py"
        agent.write_text(
            "from fpdebug.demo.planted_fact import USER_MESSAGES, build_agent, scripted_provider\n"
        )
        trace = self._naming(tmp_path, "my_planted.py")
        backtrack(
            trace,
            ablate=True,
            samples=backtrack_pane.SAMPLES,
            load_module=recorded_module_loader(trace, module=str(agent)),
        )
        saved = load_sidecar(sidecar_path_for(trace)).latest(call_seq=7)
        assert saved is not None and saved.status == "complete"
        when = saved.created.strftime("%Y-%m-%d %H:%M UTC")
        sidecar = sidecar_path_for(trace).read_bytes()
        app = FpdebugApp(trace)  # no --module this time: the reruns are refused
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            assert pane.state.origin == "saved"
            await pilot.press("a")
            assert await wait_for(pilot, lambda: bool(pane.state.error) and not pane.running, timeout=RERUNS)
            await pilot.pause()
            text = pane_text(app)
            assert "built from the module 'my_planted.py'" in text
            assert (pane.state.origin, pane.state.saved_at, pane.state.saved_status) == (
                "saved",
                saved.created,
                "complete",
            )
            assert f"SAVED beside the trace on {when} · complete · 18 reruns" in text
            assert "in this session" not in text
            assert "note nothing was rerun" in text
            assert "nothing rerun: see below" in screen_text(app)
        assert sidecar_path_for(trace).read_bytes() == sidecar  # nothing was added

    async def test_the_module_the_user_named_reruns(self, tmp_path: Path) -> None:
        from fpdebug.tui.app import TraceSource

        agent = tmp_path / "my_planted.py"
        agent.write_text(
            "from fpdebug.demo.planted_fact import USER_MESSAGES, build_agent, scripted_provider\n"
        )
        trace = self._naming(tmp_path, "my_planted.py")
        app = FpdebugApp(TraceSource(trace, rerun_module=str(agent)))
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            await pilot.press("a")
            assert await wait_for(
                pilot,
                lambda: pane.report is not None and pane.report.status == "complete" and not pane.running,
                timeout=RERUNS,
            )
            assert pane.state.error is None
            assert any(
                v.verdict.kind == "confirmed" and v.source == "injection:vip-override"
                for v in pane.report.verdicts
            )

    async def test_integers_beyond_64_bits_do_not_stop_the_reruns(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        lines = trace.read_bytes().splitlines(keepends=True)
        result = orjson.loads(lines[5])
        assert result["kind"] == "tool_result"
        lines[5] = lines[5].replace(b'"iteration":1,', b'"iteration":%d,' % 2**70, 1)
        assert b"%d" % 2**70 in lines[5]
        trace.write_bytes(b"".join(lines))
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            await pilot.press("a")
            assert await wait_for(
                pilot,
                lambda: not pane.running and pane.report is not None and pane.report.status == "complete",
                timeout=RERUNS,
            )
            assert pane.state.error is None and "TypeError" not in pane_text(app)
        assert load_sidecar(sidecar_path_for(trace)).backtracks[-1].status == "complete"

    async def test_an_unreadable_final_call_is_said_first(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        lines = trace.read_bytes().splitlines(keepends=True)
        final = orjson.loads(lines[7])
        assert final["kind"] == "llm_call" and final["route"] == "final"
        final["iteration"] = "two"
        lines[7] = orjson.dumps(final) + b"\n"
        trace.write_bytes(b"".join(lines))
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            assert pane.report is not None and pane.report.call_seq == 4
            text = pane_text(app)
            assert "⚠ target this is not the last answer the trace recorded" in text
            assert "the llm_call record at line 7 is unreadable" in text
            assert text.index("⚠ target") < text.index("claim")
            assert "trace 1 problem (1 invalid" in text


class TestWalk:
    async def test_w_walks_to_the_root_and_the_pane_lists_the_hops(self, tmp_path: Path) -> None:
        trace = copy_sample("unsupported-amount", tmp_path)
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pane(pilot)
            assert "Walk to the root" not in pane_text(app)
            await pilot.press("W")
            assert await wait_for(pilot, lambda: pane.state.walk is not None, timeout=RERUNS)
            assert await wait_for(pilot, lambda: "Walk to the root" in pane_text(app))
            text = pane_text(app)
            assert "1. seq 9 iteration 2 wrote Invoice INV-204 has $1,250.00 due" in text
            assert "confirmed injection 'late-fee-reminder' 3/3 flipped" in text
            assert "root none convicted" in text
            assert "stop unseparated-siblings more than one beam member is convicted" in text
            assert "reruns 3 probes, 9 reruns" in text
            assert not pane.running and pane.state.error is None

    async def test_the_palette_walks_and_the_default_beam_says_it_missed(self, tmp_path: Path) -> None:
        trace = copy_sample("planted-fact", tmp_path)
        app = FpdebugApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot)
            await run_palette(pilot, "backtrack: final answer")
            pane = _pane(app)
            assert await wait_for(pilot, lambda: pane.report is not None)
            await run_palette(pilot, "backtrack: walk")
            assert await wait_for(pilot, lambda: pane.state.walk is not None, timeout=RERUNS)
            assert await wait_for(pilot, lambda: "Walk to the root" in pane_text(app))
            text = pane_text(app)
            assert "not-confirmed injection 'refund-limits' 0/3 flipped" in text
            assert "stop overdetermined-or-incomplete removing each beam member alone changed nothing" in text

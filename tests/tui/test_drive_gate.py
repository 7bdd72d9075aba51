"""The step gate on real demo runs, without the app: write first then pause, step, breakpoints, stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import SCENARIOS
from fpdebug.demo.registry import SAMPLE_START, load_scenario
from fpdebug.engine.agent import RunResult, TurnLoop
from fpdebug.engine.providers.base import Provider
from fpdebug.engine.sink import MemorySink, TraceFileSink
from fpdebug.errors import ConfigError, FpdebugError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    EngagementEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    PassEvent,
    RunEndEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
)
from fpdebug.tui.drive.gate import Breakpoint, GateStatus, StepGate

WAIT = 30.0
"""Seconds a gated run may take to get somewhere (CI runs two workers on two loaded cores)."""


class Watcher:
    """Collects the gate's status changes; waits on a condition (never a bare sleep)."""

    def __init__(self) -> None:
        self.statuses: list[GateStatus] = []
        self._cond = threading.Condition()

    def __call__(self, status: GateStatus) -> None:
        with self._cond:
            self.statuses.append(status)
            self._cond.notify_all()

    def wait(self, predicate: Callable[[GateStatus], bool], *, timeout: float = WAIT) -> GateStatus:
        with self._cond:
            found = self._cond.wait_for(
                lambda: bool(self.statuses) and predicate(self.statuses[-1]), timeout=timeout
            )
            assert found, f"the gate never got there; last status: {self.statuses[-1:]}"
            return self.statuses[-1]


@dataclass
class GatedRun:
    """A demo run on its scripted model, in a thread, behind a gate, into memory."""

    gate: StepGate
    watcher: Watcher
    sink: MemorySink
    thread: threading.Thread
    holder: dict[str, RunResult] = field(default_factory=dict)

    def paused(self) -> GateStatus:
        return self.watcher.wait(lambda s: s.state == "paused")

    def finish(self) -> RunResult:
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        return self.holder["result"]


def plain_run(name: str) -> list[dict[str, object]]:
    """The same run with no gate: what a gated run must write, event for event."""
    scenario = load_scenario(name)
    sink = MemorySink()
    scenario.build_agent().run(
        list(scenario.user_messages),
        provider=scenario.scripted_provider(),
        sink=sink,
        clock=FixedClock(SAMPLE_START),
        run_id="gated",
        answer=scenario.answer_ask,  # a demo that asks the user has its scripted user
    )
    return [event.model_dump() for event in sink.events]


@pytest.fixture
def gated() -> Iterator[Callable[..., GatedRun]]:
    runs: list[GatedRun] = []

    def start(
        name: str,
        *,
        start: str = "paused",
        breakpoints: tuple[Breakpoint, ...] = (),
        provider: Provider | None = None,
        before: Callable[[StepGate], None] | None = None,
    ) -> GatedRun:
        scenario = load_scenario(name)
        watcher = Watcher()
        gate = StepGate(start=start, breakpoints=breakpoints, on_change=watcher)  # type: ignore[arg-type]
        if before is not None:
            before(gate)
        sink = MemorySink()
        holder: dict[str, RunResult] = {}

        def work() -> None:
            holder["result"] = scenario.build_agent().run(
                list(scenario.user_messages),
                provider=provider or scenario.scripted_provider(),
                sink=gate.attach(sink),
                clock=FixedClock(SAMPLE_START),
                run_id="gated",
                answer=scenario.answer_ask,
            )

        thread = threading.Thread(target=work, daemon=True)
        run = GatedRun(gate, watcher, sink, thread, holder)
        runs.append(run)
        thread.start()
        return run

    yield start
    for run in runs:  # never leave a run blocked in its gate
        run.gate.stop()
        run.thread.join(WAIT)


class TestStepping:
    def test_it_starts_paused_on_the_first_pass_which_is_already_written(self, gated) -> None:
        run = gated("support")
        status = run.paused()
        assert status.paused_at is not None
        point = status.paused_at
        assert (point.kind, point.iteration, point.reason) == ("pass", 1, "step")
        # write first, then block: the pass is the last event the sink has, and nothing follows it
        assert isinstance(run.sink.events[-1], PassEvent)
        assert run.sink.events[-1].seq == status.paused_at.seq
        assert run.thread.is_alive()

    def test_step_runs_until_the_next_pass_is_written(self, gated) -> None:
        run = gated("support")
        run.paused()
        assert run.gate.step()
        status = run.watcher.wait(lambda s: s.state == "paused" and s.paused_at.iteration == 2)
        last = run.sink.events[-1]
        assert isinstance(last, PassEvent) and last.iteration == 2 and last.seq == status.paused_at.seq
        # one whole iteration ran in between: its call and its tool result are written
        kinds = [event.kind for event in run.sink.events]
        assert kinds.count("pass") == 2 and "llm_call" in kinds and "tool_result" in kinds

    def test_continue_runs_to_the_end_and_writes_exactly_what_an_ungated_run_writes(self, gated) -> None:
        run = gated("support")
        run.paused()
        assert run.gate.resume()
        assert run.finish().status == "completed"
        status = run.watcher.wait(lambda s: s.state == "ended")
        assert status.outcome == "completed"
        assert [event.model_dump() for event in run.sink.events] == plain_run("support")

    def test_pause_while_running_stops_at_the_next_event(self, gated) -> None:
        scenario = load_scenario("support")
        inner = scenario.scripted_provider()
        asked, release = threading.Event(), threading.Event()

        class SlowModel:
            name, model = inner.name, inner.model

            def complete(self, request: LlmRequest) -> LlmResponse:
                asked.set()
                release.wait(WAIT)
                return inner.complete(request)

        run = gated("support", start="running", provider=SlowModel())  # type: ignore[arg-type]
        assert asked.wait(WAIT)  # the run is inside its first model call
        assert run.gate.pause()
        release.set()
        status = run.paused()
        assert status.paused_at.reason == "pause" and status.paused_at.kind == "llm_call"
        assert isinstance(run.sink.events[-1], LlmCallEvent)

    def test_controls_that_do_nothing_say_so(self, gated) -> None:
        run = gated("support")
        run.paused()
        assert not run.gate.pause()  # already paused
        run.gate.resume()
        run.finish()
        run.watcher.wait(lambda s: s.state == "ended")
        assert not run.gate.step() and not run.gate.resume() and not run.gate.pause()


class TestBreakpoints:
    def test_lease_prune_pauses_on_iteration_3s_evaluate_prune(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.on_kind("lease_prune"),))
        status = run.paused()
        last = run.sink.events[-1]
        assert isinstance(last, LeasePruneEvent)
        assert (last.iteration, last.site) == (3, "evaluate")
        assert status.paused_at.reason == "breakpoint" and status.paused_at.hits == ("lease_prune",)
        assert status.paused_at.seq == last.seq and status.paused_at.where == "T1·I3"

    def test_park_pauses_on_pass_4_of_the_zone_trap(self, gated) -> None:
        run = gated("zone-trap", start="running", breakpoints=(Breakpoint.park(),))
        status = run.paused()
        last = run.sink.events[-1]
        assert isinstance(last, EngagementEvent) and last.iteration == 4
        assert [change.kind for change in last.changes] == ["parked"]
        assert status.paused_at.hits == ("park",)
        # the engaging change of pass 1 did not stop it: pass 4's is the first park
        assert [e.iteration for e in run.sink.events if isinstance(e, EngagementEvent)] == [1, 2, 3, 4]

    def test_cursor_into_a_skill_pauses_on_the_move_into_it(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.cursor_into("refund"),))
        run.paused()
        last = run.sink.events[-1]
        assert last.kind == "cursor_move" and (last.from_skill, last.to_skill) == ("billing", "refund")
        run.gate.resume()
        assert run.finish().status == "completed"  # staying on refund afterwards does not hit it again
        assert not [s for s in run.watcher.statuses if s.state == "paused" and s.paused_at.seq != last.seq]

    def test_a_tool_pauses_on_the_call_that_asks_for_it_before_it_runs(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.tool("issue_refund"),))
        run.paused()
        last = run.sink.events[-1]
        assert isinstance(last, LlmCallEvent)
        assert [call.name for call in last.response.tool_calls] == ["issue_refund"]

        def refunded() -> bool:
            events = run.sink.events
            return any(isinstance(e, ToolResultEvent) and e.tool_name == "issue_refund" for e in events)

        assert not refunded()
        run.gate.resume()
        run.finish()
        assert refunded()

    def test_breakpoints_set_while_paused_apply_to_the_rest_of_the_run(self, gated) -> None:
        run = gated("support")
        run.paused()
        assert run.gate.add_breakpoint(Breakpoint.on_kind("lease_grant"))
        assert not run.gate.add_breakpoint(Breakpoint.on_kind("lease_grant"))
        run.gate.resume()
        status = run.watcher.wait(lambda s: s.state == "paused" and s.paused_at.kind == "lease_grant")
        assert status.paused_at.iteration == 2
        assert run.gate.clear_breakpoints() == 1 and run.gate.breakpoints == ()
        run.gate.resume()
        assert run.finish().status == "completed"

    def test_a_breakpoint_wins_over_a_step(self, gated) -> None:
        run = gated("support", breakpoints=(Breakpoint.on_kind("tool_result"),))
        run.paused()
        run.gate.step()
        status = run.watcher.wait(lambda s: s.state == "paused" and s.paused_at.seq > 4)
        assert status.paused_at.kind == "tool_result" and status.paused_at.reason == "breakpoint"

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("lease_prune", Breakpoint.on_kind("lease_prune")),
            ("kind:pass", Breakpoint.on_kind("pass")),
            ("park", Breakpoint.park()),
            ("cursor:billing", Breakpoint.cursor_into("billing")),
            ("tool: issue_refund", Breakpoint.tool("issue_refund")),
        ],
    )
    def test_command_line_forms(self, spec: str, expected: Breakpoint) -> None:
        assert Breakpoint.parse(spec) == expected

    @pytest.mark.parametrize("spec", ["warp", "kind:nope", "cursor:", "run_end", "run_start", "tool"])
    def test_bad_forms_are_refused_with_the_forms_named(self, spec: str) -> None:
        with pytest.raises(ConfigError, match="cursor:SKILL or tool:NAME"):
            Breakpoint.parse(spec)


class TestStopping:
    def test_stop_while_paused_ends_the_run_interrupted_and_loses_nothing(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.on_kind("lease_prune"),))
        run.paused()
        written = len(run.sink.events)
        run.gate.stop()
        result = run.finish()
        assert result.status == "interrupted"
        events = run.sink.events
        assert isinstance(events[-1], RunEndEvent) and events[-1].status == "interrupted"
        assert [event.seq for event in events] == list(range(1, len(events) + 1))  # dense
        assert len(events) == written + 1  # only run_end after the pause
        full = plain_run("support")
        assert [event.model_dump() for event in events[:-1]] == full[: len(events) - 1]
        assert run.watcher.wait(lambda s: s.state == "ended").outcome == "interrupted"

    def test_stop_while_paused_on_a_pass_makes_no_model_call(self, gated) -> None:
        scenario = load_scenario("support")
        inner = scenario.scripted_provider()
        calls: list[LlmRequest] = []

        class CountingModel:
            name, model = inner.name, inner.model

            def complete(self, request: LlmRequest) -> LlmResponse:
                calls.append(request)
                return inner.complete(request)

        run = gated("support", provider=CountingModel())  # type: ignore[arg-type]
        run.paused()
        assert calls == []  # paused on pass 1, before the first call
        run.gate.stop()
        result = run.finish()
        assert result.status == "interrupted"
        assert calls == []  # a billed request the trace would never record
        events = run.sink.events
        assert [event.kind for event in events[-2:]] == ["pass", "run_end"]
        assert [event.seq for event in events] == list(range(1, len(events) + 1))  # dense
        end = events[-1]
        assert isinstance(end, RunEndEvent) and end.status == "interrupted"
        assert (end.input_tokens, end.output_tokens) == (0, 0)
        assert (result.input_tokens, result.output_tokens) == (0, 0)

    def test_stop_while_paused_on_a_tool_call_does_not_run_the_tool(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.tool("issue_refund"),))
        run.paused()
        run.gate.stop()
        assert run.finish().status == "interrupted"
        events = run.sink.events
        assert [event.kind for event in events[-2:]] == ["llm_call", "run_end"]
        assert not any(isinstance(e, ToolResultEvent) and e.tool_name == "issue_refund" for e in events)
        assert [event.seq for event in events] == list(range(1, len(events) + 1))
        # run_end counts exactly the calls the trace records
        recorded = [e for e in events if isinstance(e, LlmCallEvent)]
        end = events[-1]
        assert isinstance(end, RunEndEvent)
        assert end.input_tokens == sum(e.response.usage.input_tokens for e in recorded)
        assert end.output_tokens == sum(e.response.usage.output_tokens for e in recorded)

    def test_stop_before_the_run_starts_still_opens_and_closes_the_trace(self, gated) -> None:
        run = gated("support", before=lambda gate: gate.stop())
        assert run.finish().status == "interrupted"
        # run_start always goes through; the run stops at the event after it, written
        assert [event.kind for event in run.sink.events] == ["run_start", "turn_start", "run_end"]
        assert [event.seq for event in run.sink.events] == [1, 2, 3]

    def test_a_pause_before_the_run_starts_pauses_after_run_start_and_quitting_there_closes_the_trace(
        self, gated
    ) -> None:
        run = gated("support", start="running", before=lambda gate: gate.pause())
        status = run.paused()
        assert status.paused_at is not None and status.paused_at.kind == "turn_start"
        run.gate.stop()
        assert run.finish().status == "interrupted"
        assert [event.kind for event in run.sink.events] == ["run_start", "turn_start", "run_end"]

    def test_a_run_start_breakpoint_never_pauses(self, gated) -> None:
        run = gated("support", start="running", breakpoints=(Breakpoint.on_kind("run_start"),))
        assert run.finish().status == "completed"
        assert all(status.state != "paused" for status in run.watcher.statuses)

    def test_quitting_while_a_model_call_is_in_flight_keeps_that_call(self, gated) -> None:
        scenario = load_scenario("support")
        inner = scenario.scripted_provider()
        asked, release = threading.Event(), threading.Event()
        made: list[LlmRequest] = []

        class SlowSecondCall:
            name, model = inner.name, inner.model

            def complete(self, request: LlmRequest) -> LlmResponse:
                made.append(request)
                if len(made) == 2:
                    asked.set()
                    release.wait(WAIT)
                return inner.complete(request)

        run = gated("support", start="running", provider=SlowSecondCall())  # type: ignore[arg-type]
        assert asked.wait(WAIT)  # the second call is billed and in flight: the user quits now
        run.gate.stop()
        release.set()
        assert run.finish().status == "interrupted"
        events = run.sink.events
        assert [event.kind for event in events[-2:]] == ["llm_call", "run_end"]
        calls = [e for e in events if isinstance(e, LlmCallEvent)]
        assert len(calls) == len(made) == 2
        end = events[-1]
        assert isinstance(end, RunEndEvent) and end.status == "interrupted"
        assert end.input_tokens == sum(e.response.usage.input_tokens for e in calls if e.response)
        assert end.output_tokens == sum(e.response.usage.output_tokens for e in calls if e.response)


class StopOnArrival:
    """The trace file with a hand on the gate: it quits (``gate.stop()``) as the ``at``-th event
    arrives, that is while the run was still working towards it (a model call, a tool, a pass),
    never while the gate is paused."""

    def __init__(self, inner: TraceFileSink, gate: StepGate, *, at: int) -> None:
        self.inner, self.gate, self.at = inner, gate, at

    @property
    def next_seq(self) -> int:
        return self.inner.next_seq

    def emit(self, event: TraceEvent) -> None:
        if event.seq == self.at:
            assert self.gate.status.state == "running"
            self.gate.stop()
        self.inner.emit(event)

    def close(self) -> None:
        self.inner.close()


class TestStopWhileRunning:
    @pytest.mark.parametrize("name", SCENARIOS)
    def test_quitting_at_any_event_of_a_running_run_keeps_every_record(
        self, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        entered: list[str] = []  # the tool calls the loop began to run (their handlers may have run)
        run_tool = TurnLoop._run_tool

        def recording_run_tool(
            loop: TurnLoop, call: ToolCallRecord, *args: object, **kwargs: object
        ) -> object:
            entered.append(call.id)
            return run_tool(loop, call, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(TurnLoop, "_run_tool", recording_run_tool)
        full = plain_run(name)
        assert full[-1]["kind"] == "run_end" and full[-1]["status"] == "completed"
        for at in range(1, len(full) + 1):
            entered.clear()
            scenario = load_scenario(name)
            inner_model = scenario.scripted_provider()
            made: list[LlmRequest] = []

            class CountingModel:
                name, model = inner_model.name, inner_model.model

                def complete(self, request: LlmRequest) -> LlmResponse:
                    made.append(request)
                    return inner_model.complete(request)

            path = tmp_path / f"{name}-{at}.jsonl"
            gate = StepGate(start="running")
            with TraceFileSink.create(path, clock=FixedClock(SAMPLE_START)) as file:
                result = scenario.build_agent().run(
                    list(scenario.user_messages),
                    provider=CountingModel(),  # type: ignore[arg-type]
                    sink=gate.attach(StopOnArrival(file, gate, at=at)),
                    clock=FixedClock(SAMPLE_START),
                    run_id="gated",
                    answer=scenario.answer_ask,
                )
            where = f"{name}: quit as event {at} arrived"
            with TraceReader(path) as reader:
                events = [reader[i] for i in range(1, len(reader))]
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), where  # dense
            end = events[-1]
            assert isinstance(end, RunEndEvent), where
            if at == len(full):  # the quit came as run_end was written: nothing left to stop
                assert result.status == end.status == "completed", where
                assert [e.model_dump() for e in events] == full, where
            else:
                # the event the quit came during is written (run_start always goes through, so a
                # quit as it arrives stops at turn_start), and run_end follows it at once
                last = max(at, 2)
                assert result.status == end.status == "interrupted", where
                assert gate.status.state == "ended" and gate.status.outcome == "interrupted", where
                assert [e.model_dump() for e in events[:-1]] == full[:last], where
            calls = [e for e in events if isinstance(e, LlmCallEvent)]
            assert len(calls) == len(made), where  # every billed request is recorded
            usage = [e.response.usage for e in calls if e.response is not None]
            assert end.input_tokens == sum(u.input_tokens for u in usage), where  # tokens match the trace
            assert end.output_tokens == sum(u.output_tokens for u in usage), where
            recorded = {e.tool_call_id for e in events if isinstance(e, ToolResultEvent)}
            assert set(entered) <= recorded, where  # every tool that ran has its tool_result
            assert main(["validate", str(path)]) == 0, where

    def test_emit_without_a_sink_is_an_error(self) -> None:
        with pytest.raises(FpdebugError, match="attach"):
            StepGate().emit(RunEndEvent(seq=1, ts=SAMPLE_START, run_id="r", status="completed"))

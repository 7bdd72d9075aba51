"""The time layer (docs/honesty.md §12.6): ``time.appZone``, the clock and call-window rows, and
``time_of_batch`` given this turn's clock, asserted on the trace each run wrote and on the replay.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from fpdebug.demo import SCENARIOS, load_scenario
from fpdebug.engine.agent import Agent
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.honesty.timelayer import call_windows, clock_row
from fpdebug.engine.providers.scripted import ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import (
    ArgumentRow,
    CallWindowRow,
    ClockRow,
    FindingEvent,
    LlmCallEvent,
    ResultRow,
    ToolCallRecord,
    ToolPeriod,
    TraceEvent,
)
from tests.conftest import T0
from tests.engine.test_honesty_interrupted import StopAt, armed, read
from tests.engine.test_honesty_loop import assert_equality_law, record, scripted

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)  # the time layer's own clock: 10:30 in Paris


def sales(date_from: str, date_to: str) -> str:
    """Sales over a period.

    Args:
        date_from: The first day.
        date_to: The last day.
    """
    return f"sales {date_from}..{date_to}: 42 orders"


PERIOD = ToolPeriod(start="date_from", end="date_to")


def time_agent(clock: FixedClock | None = None) -> Agent:
    return (
        Agent("shop")
        .system_prompt("You report sales.")
        .tools(tool(sales, period=PERIOD))
        .findings()
        .time("Europe/Paris", clock=clock or FixedClock(NOW, step=timedelta(0)))
    )


def script(first: dict[str, str], second: dict[str, str] | None = None) -> list[ScriptedReply]:
    replies = [ScriptedReply.tool_call("sales", first)]
    if second is not None:
        replies.append(ScriptedReply.tool_call("sales", second))
    return [*replies, ScriptedReply.text("42 orders.")]


# ----------------------------------------------------------------------------------------------
# The pure rows


def call(args: dict[str, object], name: str = "sales") -> ToolCallRecord:
    return ToolCallRecord(id="c1", name=name, args=args)


def test_a_date_form_covers_whole_days_in_the_apps_zone() -> None:
    (row,) = call_windows(
        [call({"date_from": "2026-03-01", "date_to": "2026-03-10"})], {"sales": PERIOD}, "Europe/Paris"
    )
    assert row.start == datetime(2026, 3, 1, tzinfo=PARIS)
    assert row.end == datetime(2026, 3, 11, tzinfo=PARIS)  # the last day is in the window
    assert row.zone == "Europe/Paris"


def test_a_wall_time_is_read_in_its_forms_zone_and_an_offset_is_kept() -> None:
    periods = {"sales": ToolPeriod(start="date_from", end="date_to", wall_zone="utc")}
    args = {"date_from": "2026-03-01T08:00", "date_to": "2026-03-01T10:00+01:00"}
    (row,) = call_windows([call(args)], periods, "Europe/Paris")
    assert (row.start, row.end, row.zone) == (
        datetime(2026, 3, 1, 8, tzinfo=UTC),
        datetime(2026, 3, 1, 9, tzinfo=UTC),
        "UTC",
    )


@pytest.mark.parametrize(
    "args",
    [
        {"date_from": "last week", "date_to": "2026-03-01"},  # not an ISO form
        {"date_from": "2026-03-01"},  # a form missing
        {"date_from": "2026-03-05", "date_to": "2026-03-01"},  # ends before it starts
        {"date_from": 20260301, "date_to": "2026-03-02"},  # not a text
    ],
)
def test_a_window_the_forms_do_not_give_is_never_invented(args: dict[str, object]) -> None:
    assert call_windows([call(args)], {"sales": PERIOD}, "Europe/Paris") == []


def test_a_call_to_a_tool_without_a_period_files_no_window() -> None:
    assert (
        call_windows(
            [call({"date_from": "2026-03-01", "date_to": "2026-03-02"}, "other")], {"sales": PERIOD}, "UTC"
        )
        == []
    )


def test_the_clock_row_reads_now_in_the_apps_zone() -> None:
    row = clock_row(2, NOW, "Europe/Paris")
    assert (row.turn, row.now, row.now.utcoffset()) == (2, NOW, timedelta(hours=1))


# ----------------------------------------------------------------------------------------------
# The builder


def test_the_time_layer_arms_the_inputs_layer_and_records_the_zone_and_periods(tmp_path: Path) -> None:
    agent = Agent("shop").tools(tool(sales, period=PERIOD), tool(sales, name="plain")).time("Europe/Paris")
    run = record(agent, "sales?", scripted(ScriptedReply.text("none.")), tmp_path)
    arms = run.start().honesty
    assert arms is not None and arms.inputs and not arms.results
    assert arms.app_zone == "Europe/Paris"
    assert arms.periods == {"sales": PERIOD}  # only the tool that declares one


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", 3])
def test_an_unknown_zone_is_refused_at_build_time(zone: object) -> None:
    with pytest.raises(DefinitionError, match="zone"):
        Agent("shop").time(zone)  # type: ignore[arg-type]


def test_a_clock_without_now_is_refused_and_so_is_a_period_that_is_not_one() -> None:
    with pytest.raises(DefinitionError, match="clock"):
        Agent("shop").time("UTC", clock=object())  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="period"):
        tool(sales, period=("date_from", "date_to"))  # type: ignore[arg-type]


def test_without_the_time_layer_no_time_row_is_filed(tmp_path: Path) -> None:
    agent = Agent("shop").tools(tool(sales, period=PERIOD)).findings()
    run = record(
        agent, "sales?", scripted(*script({"date_from": "2026-03-01", "date_to": "2026-03-02"})), tmp_path
    )
    rows = [row for f in run.of("finding") for row in f.rows]
    assert not any(isinstance(r, ClockRow | CallWindowRow) for r in rows)
    assert all(r.beyond_now is None for r in rows if isinstance(r, ResultRow))
    start = run.start().honesty
    assert start is not None and start.app_zone is None and start.periods is None


# ----------------------------------------------------------------------------------------------
# In a run


def test_the_inputs_visit_files_the_clock_and_the_window_in_its_one_write(tmp_path: Path) -> None:
    run = record(
        time_agent(),
        "sales this month?",
        scripted(
            *script(
                {"date_from": "2026-03-01", "date_to": "2026-03-31"},
                {"date_from": "2026-02-01", "date_to": "2026-02-28"},
            )
        ),
        tmp_path,
    )
    first, second = run.findings("inputs")
    kinds = [type(r) for r in first.rows]
    assert kinds == [ClockRow, ArgumentRow, ArgumentRow, CallWindowRow]  # clock first, window beside the args
    clock = first.rows[0]
    assert isinstance(clock, ClockRow) and clock.now == NOW and clock.turn == 1
    # The clock is read once a turn: the second visit files only its arguments and its window.
    assert [type(r) for r in second.rows] == [ArgumentRow, ArgumentRow, CallWindowRow]
    # time_of_batch, given this turn's clock: March runs past 10 March, February does not.
    verdicts = [r.beyond_now for f in run.findings("results") for r in f.rows if isinstance(r, ResultRow)]
    assert verdicts == [True, False]
    assert_equality_law(run)


def test_each_turn_has_its_own_clock_and_an_earlier_one_never_judges(tmp_path: Path) -> None:
    clock = FixedClock(NOW, step=timedelta(days=30))  # the second turn's now is 9 April
    march = {"date_from": "2026-03-01", "date_to": "2026-03-31"}
    run = record(
        time_agent(clock), ["march?", "march again?"], scripted(*script(march), *script(march)), tmp_path
    )
    clocks = [r for f in run.findings("inputs") for r in f.rows if isinstance(r, ClockRow)]
    assert [(c.turn, c.now) for c in clocks] == [(1, NOW), (2, NOW + timedelta(days=30))]
    verdicts = [r.beyond_now for f in run.findings("results") for r in f.rows if isinstance(r, ResultRow)]
    assert verdicts == [True, False]  # judged by each turn's own clock
    assert_equality_law(run)


def test_the_layer_reads_the_runs_clock_when_given_none(tmp_path: Path) -> None:
    agent = Agent("shop").tools(tool(sales, period=PERIOD)).findings().time("UTC")
    run = record(
        agent, "sales?", scripted(*script({"date_from": "2026-01-01", "date_to": "2026-01-01"})), tmp_path
    )
    (clock,) = [r for f in run.findings("inputs") for r in f.rows if isinstance(r, ClockRow)]
    assert T0 <= clock.now < T0 + timedelta(seconds=1)  # the run's FixedClock, read by the loop
    assert_equality_law(run)


def test_stopped_at_any_event_the_time_rows_recompute_to_exactly_what_was_written(tmp_path: Path) -> None:
    replies = script(
        {"date_from": "2026-03-01", "date_to": "2026-03-31"},
        {"date_from": "2026-02-01", "date_to": "2026-02-02"},
    )
    total = len(record(time_agent(), "sales?", scripted(*replies), tmp_path, name="whole").events)
    for at in range(1, total):
        path = tmp_path / f"stop{at}.jsonl"
        clock = FixedClock(T0)
        with TraceFileSink.create(path, clock=clock) as sink:
            time_agent().run(
                "sales?", provider=scripted(*replies), sink=StopAt(sink, at=at), clock=clock, run_id="t"
            )
        events = read(path)
        assert recompute_findings(events) == recorded_findings(events), f"stopped at event {at}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_demo_with_the_time_layer_stopped_at_any_event_keeps_the_equality_law(
    name: str, tmp_path: Path
) -> None:
    # The demos' tools declare no period, so this pins the clock row: read once a turn, filed on the
    # turn's first dispatching visit, through nudges, wrap-ups, the gate's revision and a second turn.
    scenario = load_scenario(name)

    def run(path: Path, at: int | None = None) -> list[TraceEvent]:
        clock = FixedClock(T0)
        with TraceFileSink.create(path, clock=clock) as sink:
            armed(name).time("Europe/Paris").run(
                list(scenario.user_messages),
                provider=scenario.scripted_provider(),
                sink=StopAt(sink, at=at),
                clock=clock,
                run_id="t",
            )
        return read(path)

    complete = run(tmp_path / "complete.jsonl")
    written = recorded_findings(complete)
    turns = {e.turn for e in complete if isinstance(e, LlmCallEvent) and e.route == "tool-calls"}
    assert {r.turn for f in written for r in f.rows if isinstance(r, ClockRow)} == turns
    assert recompute_findings(complete) == written
    for at in range(1, len(complete) - 1):
        events = run(tmp_path / f"stop-{at}.jsonl", at)
        assert recompute_findings(events) == recorded_findings(events), f"{name} stopped at its event {at}"


def test_the_time_window_demo_records_the_clock_and_a_window_beyond_it(tmp_path: Path) -> None:
    from fpdebug.demo import time_window
    from tests.demo.helpers import run_events

    events = run_events("time-window", tmp_path)
    rows = [row for e in events if isinstance(e, FindingEvent) for row in e.rows]
    (clock,) = [r for r in rows if isinstance(r, ClockRow)]
    (window,) = [r for r in rows if isinstance(r, CallWindowRow)]
    assert clock.now.isoformat() == time_window.EXPECTED["clock"]
    assert (window.start.isoformat(), window.end.isoformat()) == time_window.EXPECTED["window"]
    (result,) = [r for r in rows if isinstance(r, ResultRow)]
    assert result.beyond_now is time_window.EXPECTED["beyond_now"]  # the month ends after the clock
    assert [e.route for e in events if isinstance(e, LlmCallEvent)] == time_window.EXPECTED["routes"]
    assert recompute_findings(events) == recorded_findings(events)

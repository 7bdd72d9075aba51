"""The honesty layers' pinned functions and the results layer (docs/honesty.md §12.3, §12.4)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest

from fpdebug.engine.honesty import (
    RESULT_VALUES_LIMIT,
    BatchTime,
    CallWindow,
    Finding,
    RanCall,
    TurnClock,
    answer_fold_reads,
    batch_to_judge,
    file_finding,
    judge_results,
    results_at_loop_head,
    time_of_batch,
)
from fpdebug.trace.schema import EVENT_ADAPTER, ResultRow
from tests.conftest import T0

# ----------------------------------------------------------------------------------------------
# batch_to_judge


@pytest.mark.parametrize(("iteration", "stamp"), [(2, 1), (3, 2), (7, 6), (1, 0)])
def test_batch_is_judged_on_the_visit_right_after_its_dispatch(iteration: int, stamp: int) -> None:
    assert batch_to_judge(iteration, stamp) == stamp


@pytest.mark.parametrize(("iteration", "stamp"), [(2, 2), (1, 1), (4, 2), (3, 1)])
def test_a_stale_batch_is_not_judged_again(iteration: int, stamp: int) -> None:
    # A re-ask, step nudge or wrap-up advanced the iteration again without running a tool.
    assert batch_to_judge(iteration, stamp) is None


@pytest.mark.parametrize(("iteration", "stamp"), [(2, 3), (1, 2), (5, 5)])
def test_off_by_one_the_other_way_is_not_judged(iteration: int, stamp: int) -> None:
    assert batch_to_judge(iteration, stamp) is None


def test_no_stamp_means_no_batch() -> None:
    # A resumed leg starts with no stamp: nothing to judge whatever the iteration.
    assert batch_to_judge(1, None) is None
    assert batch_to_judge(2, None) is None


@pytest.mark.parametrize("stamp", [True, False])
def test_a_bool_is_not_a_stamp(stamp: bool) -> None:
    # True == 1 and False == 0 in Python; a bool must still not pass for an int stamp.
    assert batch_to_judge(int(stamp) + 1, stamp) is None


@pytest.mark.parametrize("stamp", [1.0, "1", [1], 1 + 0j])
def test_other_non_int_stamps_are_no_stamp(stamp: object) -> None:
    assert batch_to_judge(2, stamp) is None


def test_the_stamp_itself_is_returned() -> None:
    stamp = 41
    assert batch_to_judge(42, stamp) is stamp


# ----------------------------------------------------------------------------------------------
# answer_fold_reads: every combination of the five arms, expected lists built from the rules


ALWAYS = ["history", "turnNumber", "pausedToolCallId", "findingsLedger", "stoppedEarly"]


def expected_reads(
    tools: bool, evidence_gate: bool, answer_validation: bool, inputs: bool, tool_middleware: bool
) -> list[str]:
    """docs/honesty.md §12.4 written out: the always group, then one key per arm, in this order."""
    keys = list(ALWAYS)
    keys += ["coverageDeclared"] if tools else []
    keys += ["unsupportedValues"] if evidence_gate else []
    keys += ["answerValidation"] if answer_validation else []
    keys += ["argumentAsk"] if inputs else []
    keys += ["middlewareDecisions"] if inputs and tool_middleware else []
    return keys


ARMS = list(itertools.product([False, True], repeat=5))


@pytest.mark.parametrize(("tools", "evidence_gate", "answer_validation", "inputs", "tool_middleware"), ARMS)
def test_answer_fold_reads_every_combination(
    tools: bool, evidence_gate: bool, answer_validation: bool, inputs: bool, tool_middleware: bool
) -> None:
    reads = answer_fold_reads(
        tools=tools,
        evidence_gate=evidence_gate,
        answer_validation=answer_validation,
        inputs=inputs,
        tool_middleware=tool_middleware,
    )
    assert reads == expected_reads(tools, evidence_gate, answer_validation, inputs, tool_middleware)
    assert len(reads) == len(set(reads))


def test_all_32_combinations_are_covered() -> None:
    assert len(set(ARMS)) == 32


def test_seed_example_tools_only() -> None:
    reads = answer_fold_reads(
        tools=True, evidence_gate=False, answer_validation=False, inputs=False, tool_middleware=False
    )
    assert reads == [
        "history",
        "turnNumber",
        "pausedToolCallId",
        "findingsLedger",
        "stoppedEarly",
        "coverageDeclared",
    ]


def test_middleware_without_inputs_layer_is_never_read() -> None:
    reads = answer_fold_reads(
        tools=True, evidence_gate=True, answer_validation=True, inputs=False, tool_middleware=True
    )
    assert "middlewareDecisions" not in reads
    assert "argumentAsk" not in reads


def test_stopped_early_is_read_even_without_tools() -> None:
    reads = answer_fold_reads(
        tools=False, evidence_gate=False, answer_validation=False, inputs=False, tool_middleware=False
    )
    assert reads == ALWAYS


def test_arms_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        answer_fold_reads(True, False, False, False, False)  # type: ignore[misc]


# ----------------------------------------------------------------------------------------------
# time_of_batch


T = datetime(2026, 1, 1, 12, 0, 0)


def windowed(call_id: str) -> RanCall:
    return RanCall(call_id, "t", "ok", window=CallWindow(call_id, T, T + timedelta(seconds=1)))


def test_no_clock_means_no_times() -> None:
    # An agent without the time layer files no clock row: the batch gets no times.
    assert time_of_batch(None, [windowed("c1")], turn=1) == BatchTime()


def test_a_clock_from_an_earlier_turn_does_not_judge_this_turn() -> None:
    assert time_of_batch(TurnClock(1, T), [windowed("c1")], turn=2) == BatchTime()


def test_this_turns_clock_hands_now_and_the_calls_windows() -> None:
    calls = [windowed("c1"), RanCall("c2", "t", "ok"), windowed("c3")]
    times = time_of_batch(TurnClock(2, T), calls, turn=2)
    assert times.now == T
    assert [w.tool_call_id for w in times.windows] == ["c1", "c3"]


def test_a_result_is_beyond_now_only_by_this_turns_clock() -> None:
    calls = [windowed("c1"), RanCall("c2", "t", "ok")]

    def verdicts(clock: TurnClock | None) -> list[bool | None]:
        return [r.beyond_now for r in results_at_loop_head(2, 1, calls, clock=clock, turn=2)]

    assert verdicts(TurnClock(2, T)) == [True, None]  # the window ends after now; c2 has none
    assert verdicts(TurnClock(2, T + timedelta(seconds=1))) == [False, None]  # ends exactly at now
    assert verdicts(TurnClock(1, T)) == [None, None]  # an earlier turn's clock judges nothing
    assert verdicts(None) == [None, None]


# ----------------------------------------------------------------------------------------------
# Results layer


def test_result_rows_carry_status_coverage_and_values() -> None:
    calls = [
        RanCall(
            "c1",
            "lookup_order",
            '{"id": "ORD-1234", "total": 1250.00, "placed": "2024-05-01"}',
            status="success",
            coverage="first 50 of 300",
        ),
        RanCall("c2", "notes", "Customer called on May 2, 2024 about $20", status="partial"),
        RanCall("c3", "ping", "pong"),
    ]
    rows = judge_results(3, calls)
    assert rows == [
        ResultRow(
            batch_iteration=3,
            tool_call_id="c1",
            tool_name="lookup_order",
            status="success",
            coverage="first 50 of 300",
            values=["ORD-1234", "1250.00", "2024-05-01"],
        ),
        ResultRow(
            batch_iteration=3,
            tool_call_id="c2",
            tool_name="notes",
            status="partial",
            values=["May 2, 2024", "$20"],
        ),
        ResultRow(batch_iteration=3, tool_call_id="c3", tool_name="ping"),
    ]


def test_result_values_are_bounded_and_the_rest_counted() -> None:
    result = " ".join(str(n) for n in range(RESULT_VALUES_LIMIT + 7))
    (row,) = judge_results(1, [RanCall("c1", "big", result)])
    assert len(row.values) == RESULT_VALUES_LIMIT
    assert row.values[0] == "0"
    assert row.values_omitted == 7


def test_results_at_loop_head_files_only_a_new_batch() -> None:
    calls = [RanCall("c1", "lookup_order", "ORD-1")]
    assert [r.batch_iteration for r in results_at_loop_head(3, 2, calls)] == [2]
    assert results_at_loop_head(4, 2, calls) == []  # the same batch, after a re-ask: judged already
    assert results_at_loop_head(1, None, calls) == []


def test_file_finding_writes_nothing_for_an_empty_visit() -> None:
    assert file_finding("results", [], turn=1, iteration=2) is None
    rows = judge_results(1, [RanCall("c1", "t", "1")])
    finding = file_finding("results", rows, turn=1, iteration=2)
    assert finding is not None
    assert (finding.layer, finding.turn, finding.iteration, finding.rows) == ("results", 1, 2, tuple(rows))


def test_a_finding_round_trips_through_its_event() -> None:
    finding = Finding("results", 2, 3, tuple(judge_results(2, [RanCall("c1", "t", '{"total": 1250.5}')])))
    event = finding.to_event(seq=7, ts=T0, run_id="r1")
    reloaded = EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event, exclude_none=True))
    assert Finding.of_event(reloaded) == finding  # type: ignore[arg-type]

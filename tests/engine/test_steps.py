"""The step pointer's tool-calls half (DOMAIN §5.6): each result boundary advances or skips it.

DOMAIN's words pinned here: the pointer is ``[{skillId, step (1-based), total, skipped}]`` or ``[]``;
``step == total + 1`` means the steps are done; the tool-calls stage advances or skips it at every
result boundary; the pointer can never move the cursor (it has no cursor to move: these functions
see only the pointer).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.engine.injections import StepPointer, define_skill, define_steering
from fpdebug.engine.steps import (
    advance_step_pointer,
    skip_policies,
    skip_step_pointer,
    step_boundary,
    step_pointer_records,
)
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import StepChange, ToolResultStatus

STATUSES: tuple[ToolResultStatus, ...] = (
    "success", "failure", "denied", "invalid", "partial", "pending", "absent",
)
NOT_DONE = tuple(s for s in STATUSES if s != "success")


def at(step: int, total: int = 3, skipped: tuple[int, ...] = ()) -> tuple[StepPointer, ...]:
    return (StepPointer("refund", step, total, skipped),)


class TestAdvance:
    def test_a_done_step_moves_the_pointer_to_the_next_and_keeps_the_skips(self) -> None:
        assert advance_step_pointer(at(1)) == at(2)
        assert advance_step_pointer(at(2, skipped=(1,))) == at(3, skipped=(1,))

    def test_the_last_step_done_leaves_the_pointer_at_total_plus_one(self) -> None:
        assert advance_step_pointer(at(3)) == at(4)

    def test_a_finished_or_empty_pointer_does_not_move(self) -> None:
        assert advance_step_pointer(at(4)) == at(4)
        assert advance_step_pointer(()) == ()
        assert advance_step_pointer(None) == ()


class TestSkip:
    def test_a_skipped_step_is_recorded_and_passed(self) -> None:
        assert skip_step_pointer(at(1)) == at(2, skipped=(1,))
        assert skip_step_pointer(at(2, skipped=(1,))) == at(3, skipped=(1, 2))

    def test_skipping_the_last_step_finishes_the_procedure(self) -> None:
        assert skip_step_pointer(at(3)) == at(4, skipped=(3,))

    def test_hold_keeps_the_step_current_and_records_nothing_on_the_pointer(self) -> None:
        assert skip_step_pointer(at(2), on_skip="hold") == at(2)

    def test_a_finished_or_empty_pointer_does_not_move(self) -> None:
        assert skip_step_pointer(at(4, skipped=(2,))) == at(4, skipped=(2,))
        assert skip_step_pointer(()) == ()


class TestBoundary:
    @pytest.mark.parametrize("status", [None, "success"])
    def test_a_result_that_succeeded_advances(self, status: ToolResultStatus | None) -> None:
        change = step_boundary(at(2), status)
        assert change is not None
        assert (change.outcome, change.skill_id, change.step, change.total, change.held) == (
            "step_advanced", "refund", 2, 3, False,
        )
        assert change.next == at(3)

    @pytest.mark.parametrize("status", NOT_DONE)
    def test_any_other_status_skips(self, status: ToolResultStatus) -> None:
        change = step_boundary(at(2), status)
        assert change is not None and change.outcome == "step_skipped" and change.step == 2
        assert change.next == at(3, skipped=(2,)) and not change.held

    @pytest.mark.parametrize("status", NOT_DONE)
    def test_under_hold_a_skip_is_reported_but_the_pointer_stays(self, status: ToolResultStatus) -> None:
        change = step_boundary(at(2), status, on_skip="hold")
        assert change is not None and change.outcome == "step_skipped" and change.held
        assert change.next == at(2)

    def test_hold_does_not_stop_a_success_from_advancing(self) -> None:
        change = step_boundary(at(2), "success", on_skip="hold")
        assert change is not None and change.outcome == "step_advanced" and change.next == at(3)

    @pytest.mark.parametrize("pointer", [None, (), at(4), at(4, skipped=(1, 3))])
    def test_nothing_happens_without_a_procedure_in_progress(
        self, pointer: tuple[StepPointer, ...] | None
    ) -> None:
        assert step_boundary(pointer, "success") is None
        assert step_boundary(pointer, "failure") is None

    def test_the_record_carries_the_pointer_after_the_result(self) -> None:
        change = step_boundary(at(3, skipped=(1,)), "denied")
        assert change is not None
        record = change.record()
        assert isinstance(record, StepChange)
        assert record.model_dump() == {
            "outcome": "step_skipped",
            "skill_id": "refund",
            "step": 3,
            "total": 3,
            "held": False,
            "step_pointer": {"skill_id": "refund", "step": 4, "total": 3, "skipped": [1, 3]},
        }


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(min_value=1, max_value=6),
    statuses=st.lists(st.sampled_from((None, *STATUSES)), max_size=12),
    hold=st.booleans(),
)
def test_a_procedure_walked_result_by_result_keeps_its_shape(
    total: int, statuses: list[ToolResultStatus | None], hold: bool
) -> None:
    pointer: tuple[StepPointer, ...] = (StepPointer("s", 1, total),)
    moved = 0
    for status in statuses:
        before = pointer[0]
        change = step_boundary(pointer, status, on_skip="hold" if hold else "advance")
        if before.step == total + 1:
            assert change is None  # done is done: no boundary moves a finished procedure
            continue
        assert change is not None and change.step == before.step
        pointer = change.next
        moved += pointer[0].step - before.step
    (final,) = pointer
    assert (final.skill_id, final.total) == ("s", total)
    assert 1 <= final.step <= total + 1  # total + 1 (done) is as far as it goes
    assert final.step == 1 + moved
    # Each step passed was either done or skipped: the skips are passed steps, ascending, once each.
    assert list(final.skipped) == sorted(set(final.skipped))
    assert all(1 <= s < final.step for s in final.skipped)
    done = [s in (None, "success") for s in statuses]
    if hold:
        # A held skip never moves the pointer: only done steps do, up to total + 1.
        assert final.skipped == ()
        assert final.step == 1 + min(sum(done), total)
    else:
        # Every boundary passes one step until the procedure is done; the not-done ones are skips.
        passed = min(len(statuses), total)
        assert final.step == 1 + passed
        assert final.skipped == tuple(i + 1 for i in range(passed) if not done[i])


class TestPolicies:
    def test_each_stepped_skill_advances_unless_it_declares_hold(self) -> None:
        catalog = [
            define_skill("refund", body="r", steps=["a", "b"]),
            define_skill("audit", body="a", steps=["a"], on_skip="hold"),
            define_skill("plain", body="p"),
            define_steering("tone", prompt="Brief."),
        ]
        assert skip_policies(catalog) == {"refund": "advance", "audit": "hold"}

    def test_an_unknown_policy_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="on_skip 'later' is not a policy"):
            skip_policies([define_skill("refund", body="r", steps=["a"], on_skip="later")])

    def test_on_skip_without_steps_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="on_skip applies only beside steps"):
            skip_policies([define_skill("refund", body="r", on_skip="hold")])


def test_the_pointer_records_as_the_trace_shape() -> None:
    assert step_pointer_records(()) == []
    (record,) = step_pointer_records(at(2, skipped=(1,)))
    assert record.model_dump() == {"skill_id": "refund", "step": 2, "total": 3, "skipped": [1]}

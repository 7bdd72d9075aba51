"""The Events view's one-line summaries: a fact the record leaves out is said in words, never as ``None``."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.trace.schema import (
    LeaseGrantEvent,
    LeasePruneEvent,
    LeaseRecord,
    PrunedLease,
    RerouteSupersededEvent,
    SkillRejectedEvent,
)
from fpdebug.tui.widgets.events import summarize
from tests.conftest import T0
from tests.tui.helpers import opened, screen_text
from tests.tui.traces import write_runs

pytestmark = pytest.mark.anyio

_AT = {"seq": 3, "ts": T0, "run_id": "r", "turn": 1, "iteration": 2}


def _lease(**fields: object) -> dict[str, object]:
    return {
        "instruction_id": "wire-format",
        "delivery_lease": "next-call",
        "tool_name": "fetch",
        "iteration": 2,
        **fields,
    }


class TestNoTenant:
    def test_a_lease_granted_without_a_tenant_says_so(self) -> None:
        text = summarize(LeaseGrantEvent(**_AT, lease=LeaseRecord(**_lease())))
        assert text == "wire-format next-call granted by fetch (no tenant)"
        text = summarize(LeaseGrantEvent(**_AT, lease=LeaseRecord(**_lease(skill_id="billing"))))
        assert text == "wire-format next-call granted by fetch (tenant billing)"

    def test_a_sweep_without_a_tenant_says_so(self) -> None:
        pruned = [PrunedLease(**_lease(), reason="tenure-ended")]
        text = summarize(LeasePruneEvent(**_AT, site="evaluate", pruned=pruned))
        assert text == "evaluate sweep, no tenant: wire-format tenure-ended"
        text = summarize(LeasePruneEvent(**_AT, site="evaluate", tenant="refund", pruned=pruned))
        assert text == "evaluate sweep, tenant refund: wire-format tenure-ended"

    def test_no_cursor_is_never_printed_as_none(self) -> None:
        rejected = SkillRejectedEvent(**_AT, requested_id="refund", allowed=["billing"])
        assert summarize(rejected) == "read_skill refund rejected (no cursor)"
        superseded = RerouteSupersededEvent(**_AT, volunteered_id="refund")
        assert "None" not in summarize(superseded)

    async def test_the_events_view_shows_no_tenant(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.fptrace.jsonl"
        write_runs(path, [("solo", 1, 1), ("solo", 1, 2)])  # its grants name no skill
        async with opened(path, size=(120, 30)) as (pilot, _screen):
            await pilot.press("4")
            await pilot.pause()
            text = screen_text(pilot.app)
            assert "granted by fetch (no tenant)" in text
            assert "None" not in text


class TestEndState:
    def test_turn_end_says_what_the_turn_left(self) -> None:
        from fpdebug.trace.schema import EndState, StepPointerRecord, TurnEndEvent

        state = EndState(
            cursor="billing",
            leases=[LeaseRecord(**_lease())],
            step_pointer=[StepPointerRecord(skill_id="refund", step=2, total=3)],
        )
        record = TurnEndEvent(
            **{**_AT, "iteration": None}, final_content="ok", iteration_count=3, end_state=state
        )
        assert summarize(record) == "answer: ok · left: cursor billing, 1 lease(s), step 2/3 of refund"

    def test_a_run_without_carriers_says_nothing_more(self) -> None:
        from fpdebug.trace.schema import RunEndEvent

        record = RunEndEvent(seq=9, ts=T0, run_id="r", status="completed", turns=1)
        assert summarize(record) == "completed · 1 turn(s)"

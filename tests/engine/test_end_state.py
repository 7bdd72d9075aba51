"""End-of-run state (issue 19 item 10): the carriers a turn and a run leave are recorded, not rebuilt."""

from __future__ import annotations

from pathlib import Path

from fpdebug.trace.schema import LeaseGrantEvent, LeasePruneEvent, PassEvent, RunEndEvent, TurnEndEvent
from tests.demo.helpers import run_events


def test_every_pass_records_the_leases_it_keeps(tmp_path: Path) -> None:
    events = run_events("leases-cyclic", tmp_path)
    held: list[str] = []
    for event in events:
        # Rebuild the record from grants and prunes; each pass's survivors must equal it.
        if isinstance(event, LeaseGrantEvent):
            held.append(event.lease.instruction_id)
        elif isinstance(event, LeasePruneEvent):
            held = [lease.instruction_id for lease in event.survivors]
        elif isinstance(event, PassEvent) and event.lease_survivors is not None:
            assert [lease.instruction_id for lease in event.lease_survivors] == held
    kept = [e for e in events if isinstance(e, PassEvent) and e.lease_survivors]
    swept_nothing = {e.iteration for e in events if isinstance(e, LeasePruneEvent) and e.site == "evaluate"}
    # A pass that pruned nothing and kept a lease says so (the gap the issue names).
    assert any(e.iteration not in swept_nothing for e in kept)


def test_turn_end_and_run_end_record_what_the_turn_left(tmp_path: Path) -> None:
    events = run_events("leases-cyclic", tmp_path)
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    (run_end,) = [e for e in events if isinstance(e, RunEndEvent)]
    last_pass = [e for e in events if isinstance(e, PassEvent)][-1]
    assert end.end_state is not None and run_end.end_state == end.end_state
    assert end.end_state.leases == last_pass.lease_survivors
    cursors = [e for e in events if e.kind == "cursor_move"]
    assert end.end_state.cursor == cursors[-1].to_skill  # type: ignore[union-attr]


def test_an_agent_without_carriers_writes_no_end_state(tmp_path: Path) -> None:
    from fpdebug.engine import Agent
    from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
    from fpdebug.engine.sink import MemorySink

    sink = MemorySink()
    Agent("plain").run("hi", provider=ScriptedProvider([ScriptedReply.text("hello")]), sink=sink)
    ends = [e for e in sink.events if isinstance(e, TurnEndEvent | RunEndEvent)]
    assert len(ends) == 2 and all(e.end_state is None for e in ends)
    passes = [e for e in sink.events if isinstance(e, PassEvent)]
    assert passes and all(p.lease_survivors is None for p in passes)

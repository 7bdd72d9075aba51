"""RunModel on a hand-built trace: iterations, lease lifetimes, engagement timeline, conflicts, following."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    CursorMoveEvent,
    ErrorInfo,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    PassEvent,
    PromptSegment,
    PrunedLease,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    ToolResultEvent,
    TraceHeader,
    TurnStartEvent,
    Usage,
)
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0
from tests.trace.samples import L1, L2, Script, support_run


@pytest.fixture
def model(tmp_path: Path) -> tuple[RunModel, dict[str, int]]:
    script, at = support_run()
    reader = TraceReader(script.write(tmp_path / "support.jsonl"))
    return RunModel.build(reader), at


def test_runs_turns_and_iterations(model: tuple[RunModel, dict[str, int]]) -> None:
    m, at = model
    (run,) = m.runs
    assert (run.run_id, run.status, run.provider, run.model, run.max_iterations) == (
        "r1",
        "completed",
        "scripted",
        "m-1",
        6,
    )
    assert (run.start_line, run.end_line) == (at["run_start"], at["run_end"])
    (turn,) = run.turns
    assert (turn.number, turn.start_line, turn.end_line, turn.iteration_count) == (
        1,
        at["turn_start"],
        at["turn_end"],
        4,
    )
    assert [it.number for it in turn.iterations] == [1, 2, 3, 4] == [it.number for it in run.iterations()]
    assert list(turn.lines) == [at["turn_start"], at["finding"], at["turn_end"]]  # turn-level records
    assert [it.pass_line for it in turn.iterations] == [at["pass1"], at["pass2"], at["pass3"], at["pass4"]]
    assert [(it.cursor_from, it.cursor_to, it.cursor_by) for it in turn.iterations] == [
        (None, "triage", "entry"),
        ("triage", "triage", "stay"),
        ("triage", "billing", "route"),
        ("billing", "billing", "stay"),
    ]
    assert [it.route for it in turn.iterations] == ["tool-calls", "tool-calls", "tool-calls", "final"]
    assert [it.lease_served for it in turn.iterations] == [(), ("wire-format", "style"), (), ("style",)]
    assert [len(it.tool_result_lines) for it in turn.iterations] == [1, 2, 1, 0]
    assert turn.iterations[3].llm_lines == [at["final_llm"]]
    assert (run.input_tokens, run.output_tokens) == (490, 49) == (turn.input_tokens, turn.output_tokens)
    assert next((it.input_tokens, it.output_tokens) for it in turn.iterations) == (100, 10)
    # every record of the run sits in exactly one place
    placed = sorted(
        [*turn.lines, *(line for it in turn.iterations for line in it.lines), at["run_start"], at["run_end"]]
    )
    assert placed == list(range(1, len(m.reader) if m.reader else 0))


def test_conflicts_rejections_and_supersessions_are_located(model: tuple[RunModel, dict[str, int]]) -> None:
    m, at = model
    run = m.runs[0]
    assert run.iteration(1, 2).route_conflict_lines == [at["conflict"]]  # type: ignore[union-attr]
    assert run.iteration(1, 3).skill_rejected_lines == [at["rejected"]]  # type: ignore[union-attr]
    assert run.iteration(1, 4).has("reroute_superseded")  # type: ignore[union-attr]
    assert not run.iteration(1, 1).has("route_conflict")  # type: ignore[union-attr]
    conflict = m.record(at["conflict"])
    assert isinstance(conflict, RouteConflictEvent) and conflict.winner.target == "billing"
    assert m.counts["route_conflict"] == 1 and m.counts["pass"] == 4 and run.counts["llm_call"] == 4


def test_lease_lifetimes(model: tuple[RunModel, dict[str, int]]) -> None:
    m, at = model
    wire, style_triage, style_billing = m.runs[0].leases
    assert (wire.instruction_id, wire.delivery_lease, wire.tenant, wire.tool_name, wire.tool_call_id) == (
        "wire-format",
        "next-call",
        "triage",
        "fetch",
        "c1",
    )
    assert (wire.grant_line, wire.granted_iteration) == (at["grant1"], 1)
    assert wire.served == [(1, 2)] and wire.served_lines == [at["pass2"]]
    assert (wire.state, wire.prune_line, wire.pruned_iteration, wire.prune_site) == (
        "spent",
        at["prune_spent"],
        2,
        "evaluate",
    )

    assert style_triage.served == [(1, 2)]  # not pass 3: its tenant (triage) had been left
    assert (style_triage.state, style_triage.prune_line, style_triage.prune_tenant) == (
        "tenure-ended",
        at["prune_tenure"],
        "billing",
    )

    assert (style_billing.tenant, style_billing.grant_line, style_billing.served) == (
        "billing",
        at["grant3"],
        [(1, 4)],
    )
    assert style_billing.alive and style_billing.state == "alive"
    assert m.runs[0].leases_of("style") == [style_triage, style_billing]


def test_lease_lifetimes_do_not_depend_on_the_order_of_a_pass_and_its_sweep() -> None:
    header = TraceHeader(producer="t", created=T0)

    def build(pass_first: bool) -> RunModel:
        s = Script()
        s.turn = 1
        s.add(LeaseGrantEvent, iteration=1, lease=L2)
        other = L2.model_copy(update={"skill_id": "billing", "tool_call_id": "c9"})
        s.add(LeaseGrantEvent, iteration=1, lease=other)
        pass_ = (
            PassEvent,
            {"iteration": 2, "active_ids": ["style"], "evaluated_total": 1, "lease_active_ids": ["style"]},
        )
        prune = (
            LeasePruneEvent,
            {
                "iteration": 2,
                "site": "evaluate",
                "tenant": "billing",
                "pruned": [PrunedLease(**L2.model_dump(), reason="tenure-ended")],
            },
        )
        for cls, fields in [pass_, prune] if pass_first else [prune, pass_]:
            s.add(cls, **fields)
        return RunModel.build([header, *s.events])

    for model in (build(pass_first=True), build(pass_first=False)):
        ended, live = model.runs[0].leases
        assert (ended.state, ended.served) == ("tenure-ended", [])
        assert (live.state, live.served) == ("alive", [(1, 2)])


def test_a_prune_of_a_lease_never_granted_in_the_trace_is_kept() -> None:
    s = Script()
    s.turn = 1
    s.add(
        LeasePruneEvent,
        iteration=5,
        site="tool-calls",
        tenant=None,
        pruned=[PrunedLease(**L1.model_dump(), reason="spent")],
    )
    (lease,) = RunModel.build([TraceHeader(producer="t", created=T0), *s.events]).runs[0].leases
    assert (lease.grant_line, lease.prune_line, lease.prune_site, lease.state) == (
        None,
        1,
        "tool-calls",
        "spent",
    )


def test_engagement_timeline(model: tuple[RunModel, dict[str, int]]) -> None:
    m, at = model
    run = m.runs[0]
    timeline = run.maps["skill-map"]
    assert [(p.iteration, p.standing, p.by, p.idle, p.change) for p in timeline.points] == [
        (1, "engaged", "lexical", 0, "founded"),
        (2, "engaged", "lexical", 1, None),
        (3, "parked", "lexical", 3, "parked"),
        (4, "engaged", "explicit", 0, "reengaged"),
    ]
    first = run.iteration(1, 1)
    assert first is not None
    assert [p.line for p in timeline.changes] == [first.engagement_line, at["park"], at["reengage"]]
    assert (timeline.parks, timeline.reengagements, timeline.standing) == (1, 1, "engaged")
    assert (run.parks, run.reengagements) == (1, 1)
    assert [it.engagement_changes for it in run.iterations()][2:] == [
        (("skill-map", "parked"),),
        (("skill-map", "reengaged"),),
    ]


def test_following_a_growing_trace_gives_the_same_model(tmp_path: Path) -> None:
    script, _at = support_run()
    path = tmp_path / "growing.jsonl"
    whole = RunModel.build(TraceReader(script.write(tmp_path / "whole.jsonl")))
    writer = TraceWriter.create(path, durability="none")
    reader = TraceReader(path)
    model = RunModel.build(reader)
    for event in script.events:
        writer.append(event)
        reader.refresh()
        assert model.update() == 1
    writer.close()

    def facts(m: RunModel) -> object:
        run = m.runs[0]
        return (
            run.status,
            run.input_tokens,
            m.counts,
            [(it.number, list(it.lines), it.lease_served, it.route) for it in run.iterations()],
            [(lease.served, lease.state, lease.prune_line) for lease in run.leases],
            [(p.line, p.change) for p in run.maps["skill-map"].points],
        )

    assert facts(model) == facts(whole)
    assert model.runs[0].status == "completed" and model.lines_fed == len(reader)


def test_a_run_still_going_and_a_second_run(tmp_path: Path) -> None:
    first, _ = support_run()
    second = Script("r2")
    second.add(RunStartEvent, provider="replay", model="m-2", max_iterations=3)
    second.turn = 1
    second.add(TurnStartEvent, user_message="again")
    second.add(PassEvent, iteration=1, active_ids=[], evaluated_total=0)
    shift = len(first.events)
    events = [*first.events, *(e.model_copy(update={"seq": e.seq + shift}) for e in second.events)]
    model = RunModel.build([TraceHeader(producer="t", created=T0), *events])
    assert [run.run_id for run in model.runs] == ["r1", "r2"]
    later = model.run("r2")
    assert later is not None and (later.status, later.provider, later.ended) == ("running", "replay", False)
    assert later.turns[0].ended is False and later.iteration_count == 1


def test_failed_runs_keep_their_error() -> None:
    s = Script()
    s.add(RunStartEvent, provider="scripted", model="m", max_iterations=1)
    s.add(RunEndEvent, status="failed", error=ErrorInfo(type="ProviderError", message="HTTP 500"))
    run = RunModel.build([TraceHeader(producer="t", created=T0), *s.events]).runs[0]
    assert (run.status, run.error) == ("failed", "ProviderError: HTTP 500")


def test_bad_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    script, _ = support_run()
    path = tmp_path / "bad.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append_many(script.events[:5])
    with path.open("ab") as handle:
        handle.write(b'{"kind":"pass",\n{"kind":"teleport","seq":6}\n')
    with TraceWriter.resume(path) as writer:
        for event in script.events[5:]:
            writer.append(event.model_copy(update={"seq": writer.next_seq}))
    model = RunModel.build(TraceReader(path))
    assert (model.invalid_lines, model.opaque_lines) == ([6], [7])
    assert model.runs[0].status == "completed" and model.events == len(script.events)


def test_feeding_out_of_order_is_refused() -> None:
    model = RunModel()
    model.feed(0, TraceHeader(producer="t", created=T0))
    with pytest.raises(ValueError, match="already fed"):
        model.feed(0, TraceHeader(producer="t", created=T0))
    with pytest.raises(LookupError):
        model.record(0)


def test_the_model_holds_far_less_than_the_file(tmp_path: Path) -> None:
    """Memory matters: the model keeps lines and small facts, never whole records."""
    s = Script()
    s.add(RunStartEvent, provider="scripted", model="m", max_iterations=10_000)
    s.turn = 1
    prompt = "You are a careful assistant. " * 40  # about 1 KB, as real system prompts are
    for iteration in range(1, 1501):
        s.add(
            PassEvent,
            iteration=iteration,
            active_ids=["tone", "triage"],
            evaluated_total=5,
            lease_active_ids=["wire-format"],
        )
        s.add(
            CursorMoveEvent,
            iteration=iteration,
            from_skill="triage",
            to_skill="triage",
            by="stay",
            strength="assumed",
        )
        s.add(
            LlmCallEvent,
            iteration=iteration,
            call_index=iteration,
            provider="scripted",
            model="m",
            request=LlmRequest(system_prompt=[PromptSegment(source="base", text=prompt)]),
            response=LlmResponse(content="ok", usage=Usage(input_tokens=300, output_tokens=20)),
            route="tool-calls",
        )
        s.add(
            ToolResultEvent,
            iteration=iteration,
            tool_call_id=f"c{iteration}",
            tool_name="fetch",
            result="r" * 200,
        )
    # Version 1: every request in full, the file as big as its content (version 2 stores the repeated
    # prompt once, and the model holds the same whatever the file's version).
    path = s.write(tmp_path / "big.jsonl", schema_version=1)
    reader = TraceReader(path, cache_size=0)
    tracemalloc.start()
    try:
        model = RunModel.build(reader)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model.events == 6001
    assert held < path.stat().st_size / 5, (held, path.stat().st_size)


def test_locating_the_iteration_of_a_line_and_the_leases_serving_a_pass(
    model: tuple[RunModel, dict[str, int]],
) -> None:
    m, at = model
    run = m.runs[0]
    located = m.iteration_at(at["conflict"])
    assert located is run.iteration(1, 2)
    assert m.iteration_at(at["turn_start"]) is None and m.iteration_at(at["run_end"]) is None
    assert [lease.instruction_id for lease in run.leases_serving(1, 2)] == ["wire-format", "style"]
    assert [lease.tenant for lease in run.leases_serving(1, 4)] == ["billing"]
    assert run.leases_serving(1, 3) == []

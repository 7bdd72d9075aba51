"""The agentfootprint importer against the two real recordings (facts from their SCENARIOS.md).

``support-refund``: a skill map triage → billing → refund, two leases granted by ``check_charges``
(``billing-etiquette`` until-skill-exit, ``dispute-checklist`` next-call), both served on pass 3,
``dispute-checklist`` pruned (spent) by pass 3's sweep and ``billing-etiquette`` (tenure ended) by
pass 4's when a ``propose-transition`` moves the cursor to refund.

``engagement-park``: the ``.maps()`` kernel; engaged by a keyword entry at pass 1, parked at pass 3
(park card, the skill's tool withheld), re-engaged explicitly at pass 5 after ``read_skill``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fpdebug.cli import main
from fpdebug.ingest.agentfootprint import ImportSummary, import_agentfootprint, looks_like_agentfootprint
from fpdebug.trace.model import Run, RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    PassEvent,
    RunStartEvent,
    ToolResultEvent,
    TraceHeader,
    TurnEndEvent,
)

FIXTURES = Path(__file__).parent / "fixtures" / "agentfootprint"
PARK_CARD = "agentfootprint:map-status"


def load(name: str) -> dict[str, Any]:
    """The parsed fixture recording."""
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.recording.json").read_text(encoding="utf-8"))
    return data


class Imported:
    """One imported fixture: the summary, the records by kind, and the model."""

    def __init__(self, path: Path, summary: ImportSummary) -> None:
        self.path = path
        self.summary = summary
        with TraceReader(path) as reader:
            self.problems = reader.problems()
            self.records = [reader[line] for line in range(len(reader))]
            self.model = RunModel.build(reader, validate=True)

    def of(self, kind: type) -> list[Any]:
        return [record for record in self.records if isinstance(record, kind)]

    @property
    def header(self) -> TraceHeader:
        header = self.records[0]
        assert isinstance(header, TraceHeader)
        return header

    @property
    def run(self) -> Run:
        assert len(self.model.runs) == 1
        return self.model.runs[0]

    def pass_of(self, iteration: int) -> PassEvent:
        return next(p for p in self.of(PassEvent) if p.iteration == iteration)


@pytest.fixture(scope="module")
def refund(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    out = tmp_path_factory.mktemp("af") / "support-refund.fptrace.jsonl"
    summary = import_agentfootprint(load("support-refund"), out, source_name="support-refund.recording.json")
    return Imported(out, summary)


@pytest.fixture(scope="module")
def park(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    out = tmp_path_factory.mktemp("af") / "engagement-park.fptrace.jsonl"
    summary = import_agentfootprint(
        load("engagement-park"), out, source_name="engagement-park.recording.json"
    )
    return Imported(out, summary)


# ----------------------------------------------------------------------------------------------
# Both recordings


@pytest.mark.parametrize("name", ["support-refund", "engagement-park"])
def test_the_import_validates_and_summarises(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"{name}.fptrace.jsonl"
    summary = import_agentfootprint(load(name), out, source_name=f"{name}.recording.json")
    assert summary.runs == 1 and summary.gaps == () and summary.warnings == ()
    assert main(["validate", str(out)]) == 0
    assert main(["summary", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "0 problems" in printed and "completed" in printed
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary file left


@pytest.mark.parametrize("name", ["support-refund", "engagement-park"])
def test_the_import_is_deterministic(name: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    import_agentfootprint(load(name), first, source_name="x.json")
    import_agentfootprint(load(name), second, source_name="x.json")
    assert first.read_bytes() == second.read_bytes()


def test_looks_like_an_envelope_or_a_bare_recording() -> None:
    envelope = load("support-refund")
    assert looks_like_agentfootprint(envelope)
    assert looks_like_agentfootprint(envelope["recording"])
    assert looks_like_agentfootprint({**envelope, "format": "agentfootprint.recording.v2"})
    assert not looks_like_agentfootprint({"resourceSpans": []})
    assert not looks_like_agentfootprint([envelope])
    assert not looks_like_agentfootprint({"format": "fpdebug.trace"})
    assert not looks_like_agentfootprint({"events": [], "snapshot": {}})  # no structure: not a Recording


# ----------------------------------------------------------------------------------------------
# support-refund


def test_refund_header_names_the_source(refund: Imported) -> None:
    source = refund.header.source
    assert source is not None
    assert source.format == "agentfootprint.recording.v1"
    assert source.path == "support-refund.recording.json"
    assert source.producer == "agentfootprint 9.62.0 (footprintjs 9.24.0)"
    assert source.gaps == ()
    assert "finding" in source.not_recorded


def test_refund_run_start_holds_the_declared_configuration(refund: Imported) -> None:
    (start,) = refund.of(RunStartEvent)
    assert (start.run_id, start.agent_name, start.provider, start.model) == (
        "run-1796148354440-1",
        "agent",
        "mock",
        "mock-support",
    )
    assert start.max_iterations == 8
    assert start.system_prompt == "You are Acme support."
    assert [tool.name for tool in start.tools] == [
        "read_skill",
        "lookup_customer",
        "check_charges",
        "open_refund_case",
        "issue_refund",
    ]
    assert start.skill_map is not None
    assert start.skill_map.nodes == ["triage", "billing", "refund"]
    assert [entry.skill_id for entry in start.skill_map.entries] == ["triage"]
    assert [(e.from_skill, e.to_skill, e.deterministic) for e in start.skill_map.edges] == [
        ("triage", "billing", True),
        ("billing", "refund", False),
    ]
    flavors = {decl.id: decl.flavor for decl in start.injections}
    assert flavors == {
        "tone": "steering",
        "customer-profile": "fact",
        "triage": "skill",
        "billing": "skill",
        "billing-etiquette": "instructions",
        "dispute-checklist": "instructions",
        "refund": "skill",
        "refund-confirmation": "instructions",
    }


def test_refund_calls_tool_results_answer_and_tokens(refund: Imported) -> None:
    calls = refund.of(LlmCallEvent)
    assert [call.call_index for call in calls] == [1, 2, 3, 4, 5]
    assert [call.iteration for call in calls] == [1, 2, 3, 4, 5]
    assert {(call.provider, call.model) for call in calls} == {("mock", "mock-support")}
    assert [call.route for call in calls] == ["tool-calls"] * 4 + ["final"]
    assert [call.response.stop_reason for call in calls if call.response] == ["tool_use"] * 4 + ["stop"]
    assert [call.response.usage.input_tokens for call in calls if call.response] == [76, 119, 173, 143, 169]
    assert [len(call.request.messages) for call in calls] == [1, 3, 5, 7, 9]
    answer = "I found a duplicate $42.00 charge (CH-2) and refunded it: refund R-1. It will appear in 3-5 business days."
    assert calls[-1].response is not None and calls[-1].response.content == answer
    assert [[c.id for c in call.response.tool_calls] for call in calls if call.response] == [
        ["t1"],
        ["t2"],
        ["t3"],
        ["t4"],
        [],
    ]

    results = refund.of(ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.iteration) for r in results] == [
        ("t1", "lookup_customer", 1),
        ("t2", "check_charges", 2),
        ("t3", "open_refund_case", 3),
        ("t4", "issue_refund", 4),
    ]
    assert results[0].args == {"email": "maya@example.com"}
    assert (
        results[0].result == '{"customerId":"C-88","email":"maya@example.com","plan":"Pro","status":"active"}'
    )
    assert results[2].status == "success" and results[2].result == "refund case RC-7 opened for CH-2"
    assert results[3].args == {"chargeId": "CH-2", "amount": 42}
    assert results[3].result == "refund R-1 issued: CH-2 $42"
    assert all(r.error is None for r in results)

    (end,) = refund.of(TurnEndEvent)
    assert (end.final_content, end.input_tokens, end.output_tokens, end.iteration_count) == (
        answer,
        680,
        27,
        5,
    )
    assert (refund.run.status, refund.run.input_tokens, refund.run.output_tokens) == ("completed", 680, 27)
    assert refund.summary.llm_calls == 5 and refund.summary.tool_results == 4 and refund.summary.passes == 5


def test_refund_requests_are_the_injected_context_in_order(refund: Imported) -> None:
    recorded = [
        e["payload"]["systemPromptText"]
        for e in load("support-refund")["recording"]["events"]
        if e["type"].endswith("llm_start")
    ]
    calls = refund.of(LlmCallEvent)
    for call, text in zip(calls, recorded, strict=True):
        assert "\n\n".join(segment.text for segment in call.request.system_prompt) == text
    third = calls[2].request
    assert [(s.source, s.injection_id) for s in third.system_prompt] == [
        ("base", None),
        ("steering", "tone"),
        ("fact", "customer-profile"),
        ("skill", "triage"),
        ("skill", "billing"),
        ("instructions", "billing-etiquette"),
        ("instructions", "dispute-checklist"),
    ]
    assert [(m.role, m.tool_call_id) for m in third.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "t1"),
        ("assistant", None),
        ("tool", "t2"),
    ]
    assert [[c.name for c in m.tool_calls or []] for m in third.messages if m.role == "assistant"] == [
        ["lookup_customer"],
        ["check_charges"],
    ]
    assert [(t.name, t.injection_id) for t in third.tools] == [
        ("read_skill", None),
        ("lookup_customer", "triage"),
        ("check_charges", "billing"),
        ("open_refund_case", "billing"),
        ("issue_refund", None),
    ]
    assert third.tools[1].parameters == {
        "type": "object",
        "properties": {"email": {"type": "string"}},
    }  # as kept


def test_refund_passes_and_cursor_moves(refund: Imported) -> None:
    active = {p.iteration: p.active_ids for p in refund.of(PassEvent)}
    assert active == {
        1: ["tone", "customer-profile", "triage"],
        2: ["tone", "customer-profile", "triage", "billing"],
        3: ["tone", "customer-profile", "triage", "billing", "billing-etiquette", "dispute-checklist"],
        4: ["tone", "customer-profile", "triage", "refund"],
        5: ["tone", "customer-profile", "triage", "refund", "refund-confirmation"],
    }
    moves = [(m.iteration, m.from_skill, m.to_skill, m.by) for m in refund.of(CursorMoveEvent)]
    assert moves == [
        (1, None, "triage", "entry"),
        (2, "triage", "billing", "route"),
        (3, "billing", "billing", "stay"),
        (4, "billing", "refund", "tool-proposal"),
        (5, "refund", "refund", "stay"),
    ]
    assert [(i.number, i.cursor_to, i.cursor_by) for i in refund.run.iterations()] == [
        (n, to, by) for n, _, to, by in moves
    ]
    proposal = next(r for r in refund.of(ToolResultEvent) if r.tool_call_id == "t3")
    assert [(e.kind, e.outcome, e.target_skill_id) for e in proposal.effects] == [
        ("propose-transition", "accepted", "refund")
    ]


def test_refund_leases_granted_served_and_pruned_at_the_right_pass(refund: Imported) -> None:
    grants = refund.of(LeaseGrantEvent)
    assert [
        (g.iteration, g.lease.instruction_id, g.lease.delivery_lease, g.lease.skill_id) for g in grants
    ] == [
        (2, "billing-etiquette", "until-skill-exit", "billing"),
        (2, "dispute-checklist", "next-call", "billing"),
    ]
    assert all(g.lease.tool_name == "check_charges" and g.lease.tool_call_id == "t2" for g in grants)
    prunes = refund.of(LeasePruneEvent)
    assert [
        (p.iteration, p.site, p.tenant, [(x.instruction_id, x.reason) for x in p.pruned]) for p in prunes
    ] == [
        (3, "evaluate", "billing", [("dispute-checklist", "spent")]),
        (4, "evaluate", "refund", [("billing-etiquette", "tenure-ended")]),
    ]
    # No lease record before the grant; then the ids a lease served, pass by pass.
    assert {p.iteration: p.lease_active_ids for p in refund.of(PassEvent)} == {
        1: None,
        2: None,
        3: ["billing-etiquette", "dispute-checklist"],
        4: [],
        5: [],
    }

    leases = {lease.instruction_id: lease for lease in refund.run.leases}
    assert set(leases) == {"billing-etiquette", "dispute-checklist"}
    assert leases["dispute-checklist"].served == [(1, 3)]
    assert (leases["dispute-checklist"].pruned_iteration, leases["dispute-checklist"].state) == (3, "spent")
    assert leases["billing-etiquette"].served == [(1, 3)]
    assert (leases["billing-etiquette"].pruned_iteration, leases["billing-etiquette"].state) == (
        4,
        "tenure-ended",
    )
    assert refund.summary.leases_granted == 2 and refund.summary.lease_prunes == 2


def test_refund_a_lease_served_instruction_rides_by_its_lease_not_a_rule(refund: Imported) -> None:
    reasons = {r.id: r for r in refund.pass_of(3).reasons}
    for id_, delivery in (("billing-etiquette", "until-skill-exit"), ("dispute-checklist", "next-call")):
        reason = reasons[id_]
        assert (reason.via, reason.delivery_lease, reason.tenant) == ("lease", delivery, "billing")
        assert (reason.tool_name, reason.tool_call_id, reason.at_iteration) == ("check_charges", "t2", 2)
    assert reasons["tone"].via == "always" and reasons["billing"].via == "cursor"
    # refund-confirmation is an on-tool-return instruction: no lease served it, and its trigger is not
    # in the recording, so no reason is invented for it.
    assert "refund-confirmation" not in {r.id for r in refund.pass_of(5).reasons}


# ----------------------------------------------------------------------------------------------
# engagement-park


def test_park_calls_tools_answer_and_tokens(park: Imported) -> None:
    calls = park.of(LlmCallEvent)
    assert len(calls) == 6 and {(c.provider, c.model) for c in calls} == {("mock", "mock-maps")}
    assert [call.route for call in calls] == ["tool-calls"] * 5 + ["final"]
    results = park.of(ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.iteration) for r in results] == [
        ("e1", "screen_open", 1),
        ("e2", "screen_open", 2),
        ("e3", "screen_open", 3),
        ("e4", "read_skill", 4),
        ("e5", "get_zone_info", 5),
    ]
    assert results[3].args == {"id": "zone-audit"}
    assert results[3].result == "Skill 'zone-audit' activated for the next iteration."
    assert results[4].result == "zones: fab-a ok, fab-b ok"
    answer = "The most recent zone redundancy run is run-42; a fresh audit shows fab-a and fab-b both ok."
    (end,) = park.of(TurnEndEvent)
    assert (end.final_content, end.input_tokens, end.output_tokens, end.iteration_count) == (
        answer,
        666,
        23,
        6,
    )
    assert (park.run.input_tokens, park.run.output_tokens) == (666, 23)
    assert park.of(LeaseGrantEvent) == [] and park.of(LeasePruneEvent) == []
    assert all(p.lease_active_ids is None for p in park.of(PassEvent))  # no lease record ever existed


def test_park_passes_park_the_map_and_serve_the_park_card(park: Imported) -> None:
    active = {p.iteration: p.active_ids for p in park.of(PassEvent)}
    assert active == {
        1: ["zone-audit"],
        2: ["zone-audit"],
        3: [],
        4: [],
        5: ["zone-audit"],
        6: ["zone-audit"],
    }
    for iteration in (3, 4):
        record = park.pass_of(iteration)
        assert [(s.id, s.reason) for s in record.skipped] == [
            ("zone-audit", "parked"),
            ("run-finder", "parked"),
        ]
        assert record.parked_ids == ["zone-audit", "run-finder"]
        assert record.served_ids == [PARK_CARD]
        assert [r.via for r in record.reasons] == ["park-card"]
    assert park.pass_of(5).served_ids == ["zone-audit"] and park.pass_of(5).parked_ids is None
    calls = {c.iteration: c for c in park.of(LlmCallEvent)}
    assert [s.injection_id for s in calls[3].request.system_prompt] == [None, PARK_CARD]
    assert [t.name for t in calls[3].request.tools] == ["screen_open", "read_skill"]  # its tool withheld
    assert [t.name for t in calls[5].request.tools] == ["screen_open", "read_skill", "get_zone_info"]


def test_park_cursor_never_moves_after_entry(park: Imported) -> None:
    moves = park.of(CursorMoveEvent)
    assert [(m.from_skill, m.to_skill, m.by) for m in moves] == [(None, "zone-audit", "entry")] + [
        ("zone-audit", "zone-audit", "stay")
    ] * 5
    assert moves[0].witness is not None and moves[0].witness.keyword == "zone"
    (start,) = park.of(RunStartEvent)
    assert start.skill_map is not None
    assert [(e.skill_id, e.kind, e.keywords) for e in start.skill_map.entries] == [
        ("zone-audit", "keywords", ["zone"])
    ]


def test_park_engagement_parks_and_reengages(park: Imported) -> None:
    engagements = park.of(EngagementEvent)
    assert [
        (e.iteration, [(c.kind, c.by, c.witness, c.reengaged, c.idle_calls) for c in e.changes])
        for e in engagements
    ] == [
        (1, [("engaged", "lexical", "zone", None, None)]),
        (3, [("parked", "lexical", "zone", None, 2)]),
        (5, [("engaged", "explicit", None, True, None)]),
    ]
    parked = engagements[1]
    assert parked.parked_injection_ids == ["zone-audit", "run-finder"]
    assert parked.parked_tool_names == ["get_zone_info"]  # zone-audit's tool, not offered while parked
    assert parked.park_card is not None and "PARKED" in parked.park_card
    # The recording holds the changes, not each pass's standing: no records are invented.
    assert all(e.records == [] for e in engagements)

    timeline = park.run.maps["skill-map"]
    assert (timeline.parks, timeline.reengagements, timeline.standing) == (1, 1, "engaged")
    assert [(p.iteration, p.change) for p in timeline.changes] == [
        (1, "engaged"),
        (3, "parked"),
        (5, "reengaged"),
    ]
    assert [(i.number, [n.change for n in i.engagement_changes]) for i in park.run.iterations()] == [
        (1, ["engaged"]),
        (2, []),
        (3, ["parked"]),
        (4, []),
        (5, ["reengaged"]),
        (6, []),
    ]

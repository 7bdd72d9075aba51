"""Hand-made variants of a real recording for what the two fixtures do not show: a thrown tool, a
refused effect, a denied status, a commit log whose grant prunes (site tool-calls), every route of
the reference and a cost-budget stop."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fpdebug.ingest.agentfootprint import import_agentfootprint
from fpdebug.ingest.agentfootprint_leases import read_lease_ledger
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    CursorMoveEvent,
    LeaseGrantEvent,
    LlmCallEvent,
    PassEvent,
    ToolResultEvent,
    TurnEndEvent,
)

REFUND = Path(__file__).parent / "fixtures" / "agentfootprint" / "support-refund.recording.json"
PARK = REFUND.with_name("engagement-park.recording.json")


@pytest.fixture(scope="module")
def envelope() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFUND.read_text(encoding="utf-8"))
    return data


def events_of(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = envelope["recording"]["events"]
    return events


def payload_of(envelope: dict[str, Any], kind: str, **match: object) -> dict[str, Any]:
    for event in events_of(envelope):
        payload: dict[str, Any] = event["payload"]
        if event["type"] == f"agentfootprint.{kind}" and all(payload.get(k) == v for k, v in match.items()):
            return payload
    raise AssertionError(f"no {kind} {match}")


def imported(envelope: dict[str, Any], tmp_path: Path) -> list[Any]:
    out = tmp_path / "variant.jsonl"
    import_agentfootprint(envelope, out)
    with TraceReader(out) as reader:
        assert reader.problems() == []
        return [reader[line] for line in range(1, len(reader))]


def test_a_thrown_tool_is_a_failed_result(envelope: dict[str, Any], tmp_path: Path) -> None:
    variant = copy.deepcopy(envelope)
    end = payload_of(variant, "stream.tool_end", toolCallId="t4")
    end.update(result="refund service unavailable", error=True)
    (result,) = [
        r for r in imported(variant, tmp_path) if isinstance(r, ToolResultEvent) and r.tool_call_id == "t4"
    ]
    assert (result.status, result.result) == ("failure", "refund service unavailable")
    assert result.error is not None and result.error.message == "refund service unavailable"


def test_a_declared_status_is_kept(envelope: dict[str, Any], tmp_path: Path) -> None:
    variant = copy.deepcopy(envelope)
    payload_of(variant, "stream.tool_end", toolCallId="t4")["status"] = "denied"
    (result,) = [
        r for r in imported(variant, tmp_path) if isinstance(r, ToolResultEvent) and r.tool_call_id == "t4"
    ]
    assert (result.status, result.error) == ("denied", None)


def test_a_refused_effect_grants_no_lease(envelope: dict[str, Any], tmp_path: Path) -> None:
    variant = copy.deepcopy(envelope)
    effect = payload_of(variant, "tools.effect", instructionId="dispute-checklist")
    reason = "require-instruction 'dispute-checklist' was refused: no registered injection carries that id"
    effect.update(outcome="refused", refusalReason=reason)
    found = imported(variant, tmp_path)
    (result,) = [r for r in found if isinstance(r, ToolResultEvent) and r.tool_call_id == "t2"]
    assert [(e.instruction_id, e.outcome, e.refusal_reason) for e in result.effects] == [
        ("billing-etiquette", "accepted", None),
        ("dispute-checklist", "refused", reason),
    ]
    assert [g.lease.instruction_id for g in found if isinstance(g, LeaseGrantEvent)] == ["billing-etiquette"]


def _lease(instruction: str, delivery: str, iteration: int, skill: str | None = "billing") -> dict[str, Any]:
    return {
        "instructionId": instruction,
        "deliveryLease": delivery,
        "skillId": skill,
        "toolName": "t",
        "toolCallId": f"c{iteration}",
        "iteration": iteration,
    }


def test_the_commit_log_decides_grants_sweeps_and_grant_time_prunes() -> None:
    note = _lease("note", "until-skill-exit", 1, "triage")
    once = _lease("once", "next-call", 1)
    later = _lease("later", "next-call", 2, "billing")
    snapshot = {
        "commitLog": [
            {"idx": 0, "stage": "Initialize", "stageId": "seed", "overwrite": {"iteration": 1}},
            {
                "idx": 1,
                "stage": "Injection Engine",
                "stageId": "sf-injection-engine",
                "overwrite": {"currentSkillId": "triage"},
            },
            {
                "idx": 2,
                "stage": "ToolCalls",
                "stageId": "tool-calls",
                "overwrite": {"instructionLeases": [note, once], "iteration": 2},
            },
            # pass 2 on triage: both served; the sweep removes the spent next-call lease
            {
                "idx": 3,
                "stage": "Injection Engine.1",
                "stageId": "sf-injection-engine",
                "overwrite": {"instructionLeases": [note]},
            },
            # a grant at iteration 2 under tenant billing: granting prunes too, and the triage
            # lease's tenure has ended (docs/context-model.md §4.2)
            {
                "idx": 4,
                "stage": "ToolCalls",
                "stageId": "tool-calls",
                "overwrite": {"instructionLeases": [later], "iteration": 3},
            },
        ]
    }
    ledger = read_lease_ledger(snapshot)
    assert [(iteration, lease.instruction_id) for iteration, lease in ledger.grants] == [
        (1, "note"),
        (1, "once"),
        (2, "later"),
    ]
    assert [
        (p.site, p.iteration, p.tenant, [(x.instruction_id, x.reason) for x in p.pruned])
        for p in ledger.prunes
    ] == [
        ("evaluate", 2, "triage", [("once", "spent")]),
        ("tool-calls", 2, "billing", [("note", "tenure-ended")]),
    ]
    assert ledger.record_before(1) is None  # no lease record before the first grant
    assert ledger.served_on(2, ["note", "once", "other"]) == ["note", "once"]
    assert ledger.served_on(3, ["later"]) == ["later"]
    assert ledger.grant_prune_of(2) is not None and ledger.sweep_of(3) is None


def test_no_commit_log_means_no_lease_record() -> None:
    ledger = read_lease_ledger({})
    assert (ledger.used, ledger.grants, ledger.prunes, ledger.record_before(3)) == (False, [], [], None)


def test_a_tree_routing_row_keeps_its_path_and_label(envelope: dict[str, Any], tmp_path: Path) -> None:
    # agentfootprint's routing row for a decision-tree leaf (docs/context-model.md §5.2): via tree, path, label.
    variant = copy.deepcopy(envelope)
    evaluated = payload_of(variant, "context.evaluated", iteration=1)
    evaluated["routing"] = [
        {
            "injectionId": "triage",
            "flavor": "skill",
            "via": "tree",
            "path": ["contact", "new customer"],
            "label": "intake",
            "tools": ["lookup_customer"],
        }
    ]
    passes = [r for r in imported(variant, tmp_path) if isinstance(r, PassEvent)]
    (reason,) = [r for r in passes[0].reasons if r.id == "triage"]
    assert (reason.via, reason.path, reason.label) == ("tree", ["contact", "new customer"], "intake")
    # The untouched recording's entry row stays a cursor admission.
    (plain,) = [r for r in imported(envelope, tmp_path) if isinstance(r, PassEvent)][:1]
    assert [(r.id, r.via) for r in plain.reasons if r.id == "triage"] == [("triage", "cursor")]


def test_turn_start_evidence_on_a_cursor_move_imports_losslessly(
    envelope: dict[str, Any], tmp_path: Path
) -> None:
    # The reference's cascade writes by: entry / intent, and a model pick that resolved an
    # outstanding menu carries offered and declinedOffer (docs/context-model.md §5.1).
    variant = copy.deepcopy(envelope)
    evaluated = [e["payload"] for e in events_of(variant) if e["type"] == "agentfootprint.context.evaluated"]
    evaluated[0]["cursorMove"] = {
        "to": "billing",
        "by": "intent",
        "score": 0.82,
        "witness": {"text": "charged   twice"},
    }
    evaluated[1]["cursorMove"] = {
        "from": "billing",
        "to": "refund",
        "by": "model-pick",
        "offered": ["triage", "billing"],
        "declinedOffer": True,
        "reachable": ["billing"],
    }
    moves = [r for r in imported(variant, tmp_path) if isinstance(r, CursorMoveEvent)]
    first, second = moves[0], moves[1]
    assert (first.by, first.strength, first.score) == ("intent", "semantic", 0.82)
    assert first.witness is not None and first.witness.text == "charged twice"
    assert (second.by, second.offered, second.declined_offer) == ("model-pick", ["triage", "billing"], True)
    assert (first.offered, first.declined_offer) == (None, None)


def test_every_route_of_the_reference_and_a_cost_budget_stop_are_imported(tmp_path: Path) -> None:
    # The park fixture's turn decides Route six times (tool-calls five times, then final): the variant
    # names each of the reference's six routes once, in the order of docs/context-model.md §7.1.
    variant: dict[str, Any] = json.loads(PARK.read_text(encoding="utf-8"))
    decided = [e["payload"] for e in events_of(variant) if e["type"] == "agentfootprint.agent.route_decided"]
    chosen = ["tool-calls", "output-retry", "step-nudge", "evidence-recheck", "wrap-up", "final"]
    assert len(decided) == len(chosen)
    for payload, route in zip(decided, chosen, strict=True):
        payload["chosen"] = route
    payload_of(variant, "agent.turn_end")["stoppedEarly"] = {
        "reason": "cost-budget",
        "iteration": 5,
        "pendingToolCalls": 2,
        "answerWasEmpty": False,
        "wrappedUp": True,
    }
    out = tmp_path / "variant.jsonl"
    summary = import_agentfootprint(variant, out)
    assert not [w for w in summary.warnings if "route" in w or "stoppedEarly" in w]
    with TraceReader(out) as reader:
        found = [reader[line] for line in range(1, len(reader))]
    assert [c.route for c in found if isinstance(c, LlmCallEvent)] == chosen
    (end,) = [e for e in found if isinstance(e, TurnEndEvent)]
    assert end.stopped_early is not None
    assert end.stopped_early.model_dump(exclude_none=True) == {
        "reason": "cost-budget",
        "iteration": 5,
        "pending_tool_calls": 2,
        "answer_was_empty": False,
        "wrapped_up": True,
    }


def test_an_unknown_route_or_stop_is_dropped_with_a_warning(envelope: dict[str, Any], tmp_path: Path) -> None:
    variant = copy.deepcopy(envelope)
    decided = [e["payload"] for e in events_of(variant) if e["type"] == "agentfootprint.agent.route_decided"]
    decided[0]["chosen"] = "teleport"
    payload_of(variant, "agent.turn_end")["stoppedEarly"] = {"reason": "boredom", "iteration": 1}
    out = tmp_path / "variant.jsonl"
    summary = import_agentfootprint(variant, out)
    assert any("route 'teleport' is not one of the reference's routes" in w for w in summary.warnings)
    assert any("stoppedEarly" in w and "boredom" in w for w in summary.warnings)
    with TraceReader(out) as reader:
        found = [reader[line] for line in range(1, len(reader))]
    assert next(c.route for c in found if isinstance(c, LlmCallEvent)) is None
    (end,) = [e for e in found if isinstance(e, TurnEndEvent)]
    assert end.stopped_early is None

"""Envelope recognition and effect judging (docs/context-model.md §4.1–§4.2)."""

from __future__ import annotations

import warnings

import pytest

from fpdebug.engine.effects import (
    EffectScope,
    EffectState,
    Envelope,
    EnvelopeNearMissWarning,
    ProposeTransition,
    RequireInstruction,
    envelope,
    judge_effects,
    near_miss_warning,
    parse_envelope,
    proposal_conflict,
    propose_transition,
    require_instruction,
    text_of,
    warn_near_miss,
)
from fpdebug.engine.injections import define_instruction, define_skill
from fpdebug.engine.leases import InstructionLease, PendingToolTransition
from fpdebug.engine.skillmap import SkillMap, SkillMapBuilder
from fpdebug.trace.schema import ConflictParty, LeasePruneEvent, RouteConflictEvent

from ..conftest import T0

PT = {"kind": "propose-transition", "targetSkillId": "billing", "reason": "invoice question"}
RI = {"kind": "require-instruction", "instructionId": "wire-format", "deliveryLease": "next-call"}


class TestRecognition:
    @pytest.mark.parametrize(
        "value",
        [
            None,
            "text",
            [PT],
            {"content": "x"},  # content alone
            {"content": "x", "effects": []},  # no effects and no status
            {"content": "x", "effects": [PT], "extra": 1},  # an extra key
            {"effects": [PT]},  # no content
            {"content": "x", "effects": (PT,)},  # effects not a list
            {"content": "x", "effects": PT},
            {"content": "x", "effects": [PT, "nope"]},  # an element that is not a dict
            {"content": "x", "effects": [{"kind": "launch-missiles"}]},  # an unknown kind
            {"content": "x", "effects": [{"targetSkillId": "b"}]},  # no kind
            {"content": "x", "effects": [], "status": "ok"},  # an unknown status
            {"content": "x", "effects": [], "status": None},
            {"content": "x", "status": "success"},  # the near-miss
            # Unhashable values where a string belongs: still an unknown kind or status, so data.
            {"content": "x", "effects": [], "status": ["success"]},
            {"content": "x", "effects": [], "status": {"s": "success"}},
            {"content": "x", "effects": [{"kind": {"k": 1}}]},
            {"content": "x", "effects": [{"kind": ["propose-transition"]}]},
            {"content": "x", "effects": [PT, {"kind": {"k": 1}}]},
        ],
    )
    def test_every_near_miss_stays_plain_data(self, value: object) -> None:
        assert parse_envelope(value) is None

    def test_status_only_envelope(self) -> None:
        env = parse_envelope({"content": {"rows": 3}, "effects": [], "status": "partial"})
        assert env == Envelope(content={"rows": 3}, effects=(), malformed=(), status="partial")

    def test_effects_in_order_and_status_absent(self) -> None:
        env = parse_envelope({"content": "done", "effects": [PT, RI]})
        assert env is not None
        assert env.effects == (
            ProposeTransition("billing", "invoice question"),
            RequireInstruction("wire-format", "next-call"),
        )
        assert env.status is None and env.content == "done"

    def test_valid_values_are_kept_untrimmed(self) -> None:
        env = parse_envelope({"content": "", "effects": [{**PT, "targetSkillId": " billing "}]})
        assert env is not None and env.effects == (ProposeTransition(" billing ", "invoice question"),)

    @pytest.mark.parametrize(
        ("effect", "sentence"),
        [
            ({"kind": "propose-transition"}, "names no targetSkillId"),
            ({"kind": "propose-transition", "targetSkillId": "", "reason": "r"}, "names no targetSkillId"),
            ({"kind": "propose-transition", "targetSkillId": "   ", "reason": "r"}, "names no targetSkillId"),
            ({"kind": "propose-transition", "targetSkillId": 7, "reason": "r"}, "names no targetSkillId"),
            ({"kind": "propose-transition", "targetSkillId": "b"}, "carries no reason"),
            ({"kind": "propose-transition", "targetSkillId": "b", "reason": " "}, "carries no reason"),
            ({"kind": "require-instruction", "deliveryLease": "bogus"}, "names no instructionId"),
            (
                {"kind": "require-instruction", "instructionId": "i", "deliveryLease": "forever"},
                "has deliveryLease 'forever', which is not a lease this library has",
            ),
            ({"kind": "require-instruction", "instructionId": "i"}, "which is not a lease this library has"),
        ],
    )
    def test_malformed_effects_carry_the_first_failing_check(
        self, effect: dict[str, object], sentence: str
    ) -> None:
        env = parse_envelope({"content": "c", "effects": [PT, effect]})
        assert env is not None
        assert env.effects == (ProposeTransition("billing", "invoice question"),)  # never half-applied
        (bad,) = env.malformed
        assert bad.kind == effect["kind"]
        assert sentence in bad.refusal_reason

    def test_near_miss_warning(self) -> None:
        assert "effects" in (near_miss_warning({"content": "x", "status": "success"}) or "")
        assert near_miss_warning({"content": "x", "effects": [], "status": "success"}) is None
        assert near_miss_warning({"content": "x"}) is None

    @pytest.mark.parametrize("status", [["success"], {"s": "success"}, 7, None])
    def test_a_status_that_is_not_one_of_the_seven_is_no_near_miss(self, status: object) -> None:
        assert near_miss_warning({"content": "x", "status": status}) is None

    def test_a_mistyped_delivery_lease_is_malformed_not_a_crash(self) -> None:
        env = parse_envelope({"content": "c", "effects": [{**RI, "deliveryLease": ["next-call"]}]})
        assert env is not None and env.effects == ()
        (bad,) = env.malformed
        assert "which is not a lease this library has" in bad.refusal_reason

    def test_warn_near_miss_names_the_tool(self) -> None:
        with pytest.warns(EnvelopeNearMissWarning, match=r"tool 'lookup'.*add \"effects\": \[\]"):
            warn_near_miss({"content": "x", "status": "partial"}, tool_name="lookup")

    @pytest.mark.parametrize(
        "value",
        [
            {"content": "x", "effects": [], "status": "partial"},  # an envelope
            {"content": "x"},
            {"content": "x", "status": ["partial"]},
            "plain",
        ],
    )
    def test_warn_near_miss_is_silent_for_anything_else(self, value: object) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warn_near_miss(value, tool_name="lookup")

    def test_builders_round_trip(self) -> None:
        value = envelope(
            "ok",
            propose_transition("billing", "why"),
            require_instruction("w", "until-skill-exit"),
            status="success",
        )
        env = parse_envelope(value)
        assert env is not None and env.status == "success" and len(env.effects) == 2

    def test_text_of(self) -> None:
        assert text_of("plain") == "plain"
        assert text_of({"a": 1}) == '{"a": 1}'


def graph() -> SkillMap:
    return (
        SkillMapBuilder()
        .skill(define_skill("triage", body="t"))
        .skill(define_skill("billing", body="b"))
        .skill(define_skill("refund", body="r"))
        .skill(define_skill("admin", body="a"))
        .entry("triage")
        .route("triage", "billing", on_tool_return="lookup")
        .route("triage", "admin")
        .route("billing", "refund", on_tool_return="x")
        .open_skill(define_skill("helper", body="h"))
        .build()
    )


CATALOG = {
    inj.id: inj
    for inj in [
        define_instruction("wire-format", prompt="Use wire format."),
        define_instruction("policy", prompt="Policy."),
        define_skill("quiet", body="q", surface_mode="tool-only"),
    ]
}


def scope(
    cur: str | None = "triage", *, skill_map: SkillMap | None = None, iteration: int = 3
) -> EffectScope:
    return EffectScope(
        iteration=iteration, current_skill_id=cur, skill_map=skill_map or graph(), lease_targets=CATALOG
    )


def judge(
    effects: list[dict[str, object]],
    sc: EffectScope,
    state: EffectState,
    *,
    tool: str = "tool",
    call: str = "c1",
):  # type: ignore[no-untyped-def]
    env = parse_envelope({"content": "body", "effects": effects})
    assert env is not None
    return judge_effects(env, tool_name=tool, tool_call_id=call, scope=sc, state=state)


class TestProposals:
    def test_no_graph_is_refused(self) -> None:
        sc = EffectScope(iteration=3, current_skill_id=None, skill_map=None, lease_targets=CATALOG)
        out = judge([PT], sc, EffectState())
        (j,) = out.judgments
        assert (j.outcome, j.kind) == ("refused", "propose-transition")
        assert "needs a mounted skill graph" in (j.refusal_reason or "")
        assert out.suffix == f" [tool effect refused: {j.refusal_reason}]"
        assert out.state.pending_tool_transition is None

    def test_an_unreachable_target_is_refused_and_open_skills_are_not_eligible(self) -> None:
        for target in ("refund", "helper"):
            out = judge([{**PT, "targetSkillId": target}], scope("triage"), EffectState())
            (j,) = out.judgments
            assert j.outcome == "refused"
            assert "is not reachable from" in (j.refusal_reason or "")

    def test_first_acceptance_writes_the_pending_transition_and_activates(self) -> None:
        out = judge(
            [PT],
            scope("triage", iteration=4),
            EffectState(activated_injection_ids=("x",)),
            tool="lookup",
            call="c9",
        )
        (j,) = out.judgments
        assert (j.outcome, j.target_skill_id, j.reason) == ("accepted", "billing", "invoice question")
        assert out.state.pending_tool_transition == PendingToolTransition(
            "billing", "lookup", "invoice question", 4, "c9"
        )
        assert out.state.activated_injection_ids == ("x", "billing")
        assert [(sid, a.tool_name, a.iteration, a.tool_call_id) for sid, a in out.activations] == [
            ("billing", "lookup", 4, "c9")
        ]
        assert out.suffix == ""

    def test_a_different_target_after_an_acceptance_is_superseded(self) -> None:
        state = EffectState().start_of_batch()
        first = judge([PT], scope(), state, tool="a", call="1")
        second = judge([{**PT, "targetSkillId": "admin"}, PT], scope(), first.state, tool="b", call="2")
        superseded, repeat = second.judgments
        assert (superseded.outcome, superseded.superseded_by) == ("superseded", "earlier-proposal")
        assert repeat.outcome == "accepted"
        assert second.state.pending_tool_transition == first.state.pending_tool_transition
        assert second.suffix == ""  # superseded is not a refusal
        report = proposal_conflict(second.state, from_skill_id="triage")
        assert report is not None
        assert report.source == "tool-proposal"
        assert report.conflict.winner == ConflictParty(tool_call_id="1", tool_name="a", target="billing")
        assert report.conflict.losers == [ConflictParty(tool_call_id="2", tool_name="b", target="admin")]
        RouteConflictEvent(seq=1, ts=T0, run_id="r", iteration=3, **report.fields())  # type: ignore[arg-type]

    def test_no_conflict_without_a_loser(self) -> None:
        out = judge([PT, PT], scope(), EffectState())
        assert proposal_conflict(out.state, from_skill_id="triage") is None

    def test_the_next_batch_starts_fresh(self) -> None:
        first = judge([PT], scope(iteration=3), EffectState())
        fresh = first.state.start_of_batch()
        out = judge([{**PT, "targetSkillId": "admin"}], scope(iteration=4), fresh)
        assert out.judgments[0].outcome == "accepted"
        assert out.state.pending_tool_transition is not None
        assert out.state.pending_tool_transition.target_skill_id == "admin"


class TestRequireInstruction:
    def test_an_unknown_id_is_refused(self) -> None:
        out = judge([{**RI, "instructionId": "ghost"}], scope(), EffectState())
        (j,) = out.judgments
        assert j.outcome == "refused"
        assert "no registered injection carries that id" in (j.refusal_reason or "")
        assert out.state.instruction_leases is None  # no key was created
        assert "[tool effect refused: " in out.suffix

    def test_a_tool_only_skill_is_refused(self) -> None:
        out = judge([{**RI, "instructionId": "quiet"}], scope(), EffectState())
        assert "surfaceMode 'tool-only'" in (out.judgments[0].refusal_reason or "")

    def test_the_tenant_is_the_cursor(self) -> None:
        out = judge(
            [RI],
            scope("billing", iteration=5),
            EffectState(activated_injection_ids=("helper",)),
            tool="fetch",
            call="c2",
        )
        (lease,) = out.grants
        assert lease == InstructionLease(
            "wire-format", "next-call", "fetch", 5, skill_id="billing", tool_call_id="c2"
        )
        assert out.state.instruction_leases == (lease,)
        assert out.judgments[0].outcome == "accepted"

    def test_without_cursor_the_activation_tail_or_nobody(self) -> None:
        sc = EffectScope(iteration=2, current_skill_id=None, skill_map=None, lease_targets=CATALOG)
        tail = judge([RI], sc, EffectState(activated_injection_ids=("a", "b")))
        assert tail.grants[0].skill_id == "b"
        nobody = judge([RI], sc, EffectState())
        assert nobody.grants[0].skill_id is None
        assert nobody.grants[0].record().skill_id is None

    def test_grant_prunes_while_writing(self) -> None:
        stale = InstructionLease("policy", "next-call", "fetch", 4)
        keep = InstructionLease("policy", "next-call", "fetch", 5)
        other_tenant = InstructionLease("policy", "until-skill-exit", "p", 2, skill_id="triage")
        same_tenant = InstructionLease("policy", "until-skill-exit", "p", 2, skill_id="billing")
        state = EffectState(instruction_leases=(stale, keep, other_tenant, same_tenant))
        out = judge([RI], scope("billing", iteration=5), state)
        (new,) = out.grants
        assert out.state.instruction_leases == (keep, same_tenant, new)
        (prune,) = out.prunes
        assert (prune.site, prune.tenant) == ("tool-calls", "billing")
        assert [(p.lease, p.reason) for p in prune.pruned] == [
            (stale, "spent"),
            (other_tenant, "tenure-ended"),
        ]
        LeasePruneEvent(seq=1, ts=T0, run_id="r", iteration=5, **prune.fields())  # type: ignore[arg-type]

    def test_a_grant_that_prunes_nothing_reports_no_prune(self) -> None:
        out = judge([RI, RI], scope("billing"), EffectState())
        assert len(out.state.instruction_leases or ()) == 2
        assert out.prunes == ()

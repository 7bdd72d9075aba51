"""Provenance of a call, from the trace alone: pieces, why each rode, the chain back, missing context.

The final answer of every demo scenario is explained here. Expected hops are checked against the
trace's own records (read as plain JSON, not through the code under test): a GRANTED hop must point
at the ``lease_grant`` line that granted that lease, a RETURNED hop at the ``tool_result`` of that
call, an ASKED hop at the ``llm_call`` whose reply asked for it.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fpdebug.backtrack.provenance import (
    ContextPiece,
    Provenance,
    default_call_line,
    render_answer,
)
from fpdebug.backtrack.suspects import rank_pieces
from fpdebug.demo import scenario_names
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_fact
from fpdebug.engine.providers.scripted import ScriptedProvider
from fpdebug.engine.sink import TraceFileSink
from fpdebug.errors import BacktrackError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    FindingEvent,
    LlmResponse,
    StatedValue,
    ToolCallRecord,
)
from fpdebug.trace.writer import dump_record
from tests.backtrack.traces import event, events, provenance_of, records, sample
from tests.conftest import T0


def piece(provenance: Provenance, injection_id: str, slot: str = "system-prompt") -> ContextPiece:
    return next(p for p in provenance.pieces if p.injection_id == injection_id and p.slot == slot)


def verbs(p: ContextPiece) -> list[str]:
    return [hop.verb for hop in p.chain]


def hop(p: ContextPiece, verb: str):  # type: ignore[no-untyped-def]
    return next(h for h in p.chain if h.verb == verb)


def final_llm_seq(path: Path) -> int:
    """The seq of the llm_call that routed final in the last turn (read from the raw records)."""
    return [r for r in events(path, "llm_call") if r.get("route") == "final"][-1]["seq"]


def asked_seq(path: Path, call_id: str) -> int:
    return next(
        r["seq"]
        for r in events(path, "llm_call")
        if any(c["id"] == call_id for c in r["response"]["tool_calls"])
    )


def result_seq(path: Path, call_id: str) -> int:
    return next(r["seq"] for r in events(path, "tool_result") if r["tool_call_id"] == call_id)


# ----------------------------------------------------------------------------------------------
# Every piece of the request, in order


@pytest.mark.parametrize("name", scenario_names())
def test_every_piece_of_the_final_call_is_listed_in_request_order(name: str) -> None:
    path = sample(name)
    provenance = provenance_of(path)
    call = event(path, final_llm_seq(path))
    assert provenance.call_seq == call["seq"] and provenance.final
    assert provenance.answer == events(path, "turn_end")[-1]["final_content"]
    request = call["request"]
    expected = (
        [("system-prompt", s["text"]) for s in request["system_prompt"]]
        + [("messages", m.get("content", "")) for m in request["messages"] if m["role"] != "assistant"]
        + [("tools", t["name"]) for t in request["tools"]]
    )
    got = (
        [(p.slot, p.text) for p in provenance.pieces if p.slot == "system-prompt"]
        + [(p.slot, p.text) for p in provenance.pieces if p.slot == "messages" and p.kind != "assistant"]
        + [(p.slot, p.tool_name) for p in provenance.pieces if p.slot == "tools"]
    )
    assert got == expected
    for p in provenance.pieces:  # every chain starts at the call that read it and ends where it was born
        assert p.chain[0].verb == "READ" and p.chain[0].seq == call["seq"]
        assert p.chain[1].verb == "LANDED"
        assert p.chain[-1].verb == "BORN"
    assert provenance.flags == []  # the demo traces record everything the chains need


def test_baseline_pieces_are_not_suspects_and_earlier_replies_point_at_their_call() -> None:
    path = sample("support")
    provenance = provenance_of(path)
    baseline = [p for p in provenance.pieces if p.kind in ("base", "user", "assistant")]
    assert baseline and all(p.suspect_id is None for p in baseline)
    user = next(p for p in provenance.pieces if p.kind == "user")
    assert hop(user, "BORN").seq == events(path, "turn_start")[0]["seq"]
    replies = [p for p in provenance.pieces if p.kind == "assistant"]
    earlier_calls = [r["seq"] for r in events(path, "llm_call")][:-1]
    assert [hop(p, "BORN").seq for p in replies] == earlier_calls


# ----------------------------------------------------------------------------------------------
# planted-fact: always-on facts


def test_planted_fact_final_answer_chain() -> None:
    path = sample("planted-fact")
    provenance = provenance_of(path)
    override = piece(provenance, "vip-override")
    assert override.reason == "rode because its trigger is always"
    assert verbs(override) == ["READ", "LANDED", "ALLOWED", "BORN"]
    assert hop(override, "ALLOWED").seq == next(r["seq"] for r in events(path, "pass") if r["iteration"] == 2)
    born = hop(override, "BORN")
    assert born.seq == events(path, "run_start")[0]["seq"] and "fact 'vip-override'" in born.text
    assert "trigger always" in born.text
    assert [s.id for s in provenance.suspects] == [
        "injection:tone",
        "injection:refund-limits",
        "injection:vip-override",
        "injection:format-answer",
        "tool:lookup_order",
    ]
    assert provenance.missing == []


def test_a_tool_piece_carries_the_output_of_the_call_that_asked_for_it() -> None:
    path = sample("planted-fact")
    provenance = provenance_of(path)
    tool = next(s for s in provenance.suspects if s.id == "tool:lookup_order")
    asking = event(path, asked_seq(path, "call_1"))
    assert tool.iteration == event(path, result_seq(path, "call_1"))["iteration"]
    assert tool.text == event(path, result_seq(path, "call_1"))["result"]
    assert tool.ancestor_texts == [render_answer(LlmResponse.model_validate(asking["response"]))]
    injections = [s for s in provenance.suspects if s.kind == "injection"]
    assert all(s.ancestor_texts == [] and s.iteration == 2 for s in injections)


# ----------------------------------------------------------------------------------------------
# support: lease, cursor by route, model pick, lease expiry


def test_support_lease_served_refund_policy_on_iteration_3() -> None:
    path = sample("support")
    pass_3 = next(r for r in events(path, "pass") if r["iteration"] == 3)
    call = next(r for r in events(path, "llm_call") if r["iteration"] == 3)
    provenance = provenance_of(path, call["seq"])
    policy = piece(provenance, "refund-policy")
    grant = next(r for r in events(path, "lease_grant") if r["lease"]["instruction_id"] == "refund-policy")
    call_id = grant["lease"]["tool_call_id"]
    assert (
        "rode because lease (until-skill-exit) granted by `check_policy` call call_2 at iteration 2, "
        "tenant billing"
    ) in policy.reason
    assert verbs(policy) == ["READ", "LANDED", "ALLOWED", "GRANTED", "RETURNED", "ASKED", "OFFERED", "BORN"]
    assert hop(policy, "ALLOWED").seq == pass_3["seq"]
    assert hop(policy, "GRANTED").seq == grant["seq"]
    assert hop(policy, "RETURNED").seq == result_seq(path, call_id)
    assert hop(policy, "ASKED").seq == asked_seq(path, call_id)
    assert hop(policy, "OFFERED").ref == "billing"  # check_policy rode that call as billing's tool
    lease = policy.admission.lease  # type: ignore[union-attr]
    assert (lease.delivery_lease, lease.tenant, lease.granted_by.tool_name, lease.granted_by.iteration) == (
        "until-skill-exit",
        "billing",
        "check_policy",
        2,
    )
    wire = piece(provenance, "wire-format")
    assert (
        "lease (next-call) granted by `fetch_invoice` call call_3 at iteration 2, tenant billing"
        in wire.reason
    )


def test_support_billing_rides_on_a_cursor_moved_by_a_route_edge() -> None:
    path = sample("support")
    call = next(r for r in events(path, "llm_call") if r["iteration"] == 3)
    billing = piece(provenance_of(path, call["seq"]), "billing")
    cursor = billing.admission.cursor  # type: ignore[union-attr]
    move = next(r for r in events(path, "cursor_move") if r["to_skill"] == "billing" and r["by"] == "route")
    assert (cursor.by, cursor.edge, cursor.iteration, cursor.stays) == (
        "route",
        "triage→billing",
        move["iteration"],
        1,
    )
    assert cursor.fired_by.tool_name == "lookup_order"
    assert cursor.fired_by.result_line == result_seq(path, "call_1")
    assert billing.reason.startswith(
        "rode because cursor on billing by route (edge triage→billing fired by "
        "`lookup_order` call call_1 at iteration 1)"
    )
    assert hop(billing, "MOVED").seq == move["seq"]


def test_support_final_answer_refund_skill_and_expired_leases() -> None:
    path = sample("support")
    provenance = provenance_of(path)
    refund = piece(provenance, "refund")
    assert refund.admission.via == "llm-activated"  # type: ignore[union-attr]
    assert "rode because `read_skill` call call_4 at iteration 3 activated it" in refund.reason
    assert "cursor on refund by model-pick via `read_skill` call call_4 at iteration 3" in refund.reason
    cursor = refund.admission.cursor  # type: ignore[union-attr]
    pick = next(r for r in events(path, "cursor_move") if r["by"] == "model-pick")
    assert (cursor.iteration, cursor.picked_by.tool_call_id) == (pick["iteration"], "call_4")
    chain = [(h.verb, h.seq) for h in refund.chain]
    assert ("MOVED", pick["seq"]) in chain
    assert len(chain) == len(set(chain))  # the pick that activated it and moved the cursor is told once
    missing = {m.injection_id: m for m in provenance.missing}
    assert set(missing) == {"refund-policy", "wire-format", "billing"}
    prunes = {
        p["instruction_id"]: (r["seq"], r["iteration"], p["reason"])
        for r in events(path, "lease_prune")
        for p in r["pruned"]
    }
    assert missing["refund-policy"].reason == "lease-ended"
    assert missing["refund-policy"].line == prunes["refund-policy"][0]
    assert "ended its tenure at iteration 4" in missing["refund-policy"].detail
    assert "spent at iteration 3" in missing["wire-format"].detail
    assert missing["billing"].reason == "not-triggered"
    assert "the cursor was on refund" in missing["billing"].detail
    assert all(m.restorable for m in missing.values())
    assert [s.id for s in provenance.suspects if s.missing] == [
        "missing:injection:refund-policy",
        "missing:injection:wire-format",
        "missing:injection:billing",
    ]


# ----------------------------------------------------------------------------------------------
# zone-trap: entry with witness, engagement, the park card


def test_zone_trap_final_answer_cursor_entry_and_reengaged_map() -> None:
    path = sample("zone-trap")
    provenance = provenance_of(path)
    audit = piece(provenance, "zone-audit")
    cursor = audit.admission.cursor  # type: ignore[union-attr]
    entry = events(path, "cursor_move")[0]
    assert (cursor.by, cursor.entry_kind, cursor.witness, cursor.keyword) == (
        "entry",
        "keywords",
        "zone",
        "zone",
    )
    assert cursor.iteration == entry["iteration"] and cursor.move_line == entry["seq"]
    assert cursor.stays == len(events(path, "cursor_move")) - 1
    standing = audit.admission.engagement  # type: ignore[union-attr]
    last = events(path, "engagement")[-1]["records"][0]
    fields = ("standing", "by", "since", "founded_by", "founded_at", "founded_on", "idle")
    assert [getattr(standing, name) for name in fields] == [last[name] for name in fields]
    assert standing.change == "reengaged"
    assert standing.reengaged_by.tool_call_id == "call_4"  # type: ignore[union-attr]
    assert (
        "map skill-map engaged by explicit since iteration 5 (re-engaged this pass by `read_skill` call "
        "call_4 at iteration 4)" in audit.reason
    )
    assert "founded by lexical at iteration 1 on zone-audit" in audit.reason


def test_zone_trap_parked_call_rides_the_park_card_and_misses_the_map() -> None:
    path = sample("zone-trap")
    parked = next(r for r in events(path, "pass") if r.get("parked_ids"))
    call = next(r for r in events(path, "llm_call") if r["iteration"] == parked["iteration"])
    provenance = provenance_of(path, call["seq"])
    card = next(p for p in provenance.pieces if p.kind == "park-card")
    engagement = next(r for r in events(path, "engagement") if r["iteration"] == parked["iteration"])
    assert card.reason == f"rode because map skill-map is parked (idle {engagement['records'][0]['idle']})"
    assert hop(card, "ENGAGED").seq == engagement["seq"] and hop(card, "BORN").seq == engagement["seq"]
    missing = {(m.reason, m.injection_id or m.tool_name) for m in provenance.missing}
    assert missing == {("parked", "zone-audit"), ("parked", "billing"), ("tool-parked", "get_zone_info")}
    tool = next(m for m in provenance.missing if m.kind == "tool")
    assert tool.restorable and tool.text is not None and tool.text.startswith("get_zone_info: ")


# ----------------------------------------------------------------------------------------------
# leases: next-call lease, and the cyclic graph's tenure


def test_leases_next_call_lease_and_its_expiry() -> None:
    path = sample("leases")
    served = next(r for r in events(path, "pass") if r.get("lease_active_ids"))
    call = next(r for r in events(path, "llm_call") if r["iteration"] == served["iteration"])
    wire = piece(provenance_of(path, call["seq"]), "wire-format")
    assert "lease (next-call) granted by `fetch` call call_1 at iteration 1, tenant none" in wire.reason
    assert hop(wire, "GRANTED").seq == events(path, "lease_grant")[0]["seq"]
    assert hop(wire, "OFFERED").text == "'fetch' is an agent tool, offered on every call"
    final = provenance_of(path)
    assert [(m.injection_id, m.reason) for m in final.missing] == [("wire-format", "lease-ended")]
    assert "spent at iteration 2" in final.missing[0].detail
    assert [s.id for s in final.suspects if not s.missing] == ["injection:tone", "tool:fetch", "tool:calc"]


def test_leases_cyclic_tenure_lease_then_route_back_to_triage() -> None:
    path = sample("leases-cyclic")
    grant = events(path, "lease_grant")[0]
    served = next(r for r in events(path, "pass") if r.get("lease_active_ids"))
    call = next(r for r in events(path, "llm_call") if r["iteration"] == served["iteration"])
    notes = piece(provenance_of(path, call["seq"]), "triage-notes")
    assert (
        "lease (until-skill-exit) granted by `hold` call call_1 at iteration 1, tenant triage" in notes.reason
    )
    assert hop(notes, "GRANTED").seq == grant["seq"]
    final = provenance_of(path)
    triage = piece(final, "triage")
    assert triage.admission.via == "always"  # type: ignore[union-attr]  # as the pass recorded it
    assert (
        "cursor on triage by route (edge billing→triage fired by `back` call call_3 at iteration 3)"
        in triage.reason
    )
    ended = next(m for m in final.missing if m.injection_id == "triage-notes")
    assert ended.reason == "lease-ended" and "ended its tenure at iteration 3" in ended.detail


# ----------------------------------------------------------------------------------------------
# unsupported-amount and traced-argument: the honesty layers' demos


def test_unsupported_amount_final_answer_and_its_unsupported_value() -> None:
    path = sample("unsupported-amount")
    provenance = provenance_of(path)
    reminder = piece(provenance, "late-fee-reminder")
    assert reminder.reason == "rode because its trigger is always"
    assert hop(reminder, "BORN").seq == events(path, "run_start")[0]["seq"]
    invoice = next(p for p in provenance.pieces if p.kind == "tool-result")
    call_id = invoice.tool_call_id
    assert call_id is not None
    assert (hop(invoice, "RETURNED").seq, hop(invoice, "ASKED").seq) == (
        result_seq(path, call_id),
        asked_seq(path, call_id),
    )
    assessment = next(r for r in events(path, "finding") if r["layer"] == "answer")
    unsupported = [v["text"] for row in assessment["rows"] for v in row["values"] if not v["supported"]]
    assert provenance.assessed and [v.text for v in provenance.unsupported] == unsupported
    assert all(v.line == assessment["seq"] for v in provenance.unsupported)


def test_traced_argument_final_answer_reads_two_tool_results() -> None:
    path = sample("traced-argument")
    provenance = provenance_of(path)
    results = [p for p in provenance.pieces if p.kind == "tool-result"]
    recorded = events(path, "tool_result")
    assert [(p.tool_name, p.tool_call_id) for p in results] == [
        (r["tool_name"], r["tool_call_id"]) for r in recorded
    ]
    for p, record in zip(results, recorded, strict=True):
        assert hop(p, "RETURNED").seq == record["seq"]
        assert hop(p, "ASKED").seq == asked_seq(path, record["tool_call_id"])
        assert hop(p, "BORN").text == f"agent tool {record['tool_name']!r} declared in run_start"
    assert [s.id for s in provenance.suspects] == [f"tool:{r['tool_name']}" for r in recorded]
    assert provenance.assessed and provenance.unsupported == []


# ----------------------------------------------------------------------------------------------
# Choosing the call, and what cannot be explained


def test_the_default_call_is_the_final_answer_of_the_last_turn(tmp_path: Path) -> None:
    path = tmp_path / "two-turns.jsonl"
    agent = Agent("two").system_prompt("Answer.").injections(define_fact("f", data="The sky is blue."))
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        agent.run(["first?", "second?"], provider=ScriptedProvider(["one", "two"]), sink=sink, clock=clock)
    provenance = provenance_of(path)
    assert (provenance.turn, provenance.answer) == (2, "two")
    assert provenance.call_seq == events(path, "llm_call")[-1]["seq"]
    with TraceReader(path) as reader:
        model = RunModel.build(reader)
        assert default_call_line(model) == provenance.call_line
    users = [p.text for p in provenance.pieces if p.kind == "user"]
    assert users == ["first?", "second?"]  # the conversation carries the first turn


def test_an_unknown_call_lists_the_llm_call_seqs() -> None:
    path = sample("planted-fact")
    seqs = [str(r["seq"]) for r in events(path, "llm_call")]
    message = rf"seq 3 is a pass record, not an llm_call; the llm_call seqs are: {', '.join(seqs)}"
    with pytest.raises(BacktrackError, match=message):
        provenance_of(path, 3)
    with pytest.raises(BacktrackError, match="seq 999 is not in the trace"):
        provenance_of(path, 999)


def test_a_trace_without_llm_calls_and_a_failed_call_are_clear_errors(tmp_path: Path) -> None:
    lines = sample("planted-fact").read_bytes().splitlines(keepends=True)
    no_calls = tmp_path / "no-calls.jsonl"
    no_calls.write_bytes(b"".join(line for line in lines if b'"kind":"llm_call"' not in line))
    with pytest.raises(BacktrackError, match="no llm_call with a reply"):
        provenance_of(no_calls)
    with pytest.raises(BacktrackError, match="no llm_call record"):
        provenance_of(no_calls, 4)
    failed = tmp_path / "failed.jsonl"
    with TraceFileSink.create(failed, clock=FixedClock(T0)) as sink:
        Agent("f").run("hi", provider=ScriptedProvider([]), sink=sink)
    seq = events(failed, "llm_call")[0]["seq"]
    with pytest.raises(BacktrackError, match=rf"the llm_call at seq {seq} failed \(ScriptExhaustedError"):
        provenance_of(failed, seq)


def test_provenance_is_deterministic() -> None:
    path = sample("support")
    assert provenance_of(path) == provenance_of(path)


def test_a_pass_without_reasons_is_an_untracked_source(tmp_path: Path) -> None:
    lines = []
    for raw in sample("planted-fact").read_bytes().splitlines():
        record = orjson.loads(raw)
        if record.get("kind") == "pass":
            record.pop("reasons", None)
        lines.append(orjson.dumps(record))
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    provenance = provenance_of(path)
    override = piece(provenance, "vip-override")
    assert override.admission.via == "unknown"  # type: ignore[union-attr]
    assert override.reason == "rode because the trace does not say (an untracked source)"
    assert [f.flag for f in provenance.flags] == ["untracked-sources"]


def test_a_chain_longer_than_max_hops_is_cut_and_flagged() -> None:
    path = sample("support")
    call = next(r for r in events(path, "llm_call") if r["iteration"] == 3)
    provenance = provenance_of(path, call["seq"], max_hops=5)
    policy = piece(provenance, "refund-policy")
    assert len(policy.chain) == 5 and verbs(policy)[-2:] == ["TRUNCATED", "BORN"]
    assert [f.flag for f in provenance.flags] == ["slice-truncated"]
    with pytest.raises(BacktrackError, match="max_hops must be at least 3"):
        provenance_of(path, max_hops=2)


def test_unsupported_values_come_from_the_answer_layer(tmp_path: Path) -> None:
    path = tmp_path / "assessed.jsonl"
    data = sample("planted-fact").read_bytes()
    last = records(sample("planted-fact"))[-1]
    answer = events(sample("planted-fact"), "turn_end")[0]["final_content"]
    finding = FindingEvent(
        seq=last["seq"] + 1,
        ts=T0,
        run_id=last["run_id"],
        turn=1,
        iteration=2,
        layer="answer",
        rows=[
            AnswerAssessmentRow(
                reads=["finalContent"],
                values=[
                    StatedValue(
                        text="$250.00",
                        kind="amount",
                        supported=False,
                        start=answer.index("$250.00"),
                        end=answer.index("$250.00") + 7,
                    ),
                    StatedValue(text="ORD-7", kind="id", supported=True, supported_by=["user"]),
                ],
            )
        ],
    )
    path.write_bytes(data + dump_record(finding))
    provenance = provenance_of(path)
    assert provenance.assessed
    found = [(v.text, v.value_kind, v.line) for v in provenance.unsupported]
    assert found == [("$250.00", "amount", finding.seq)]
    assert provenance_of(sample("planted-fact")).assessed is False


def test_render_answer_shows_calls_without_their_ids() -> None:
    reply = LlmResponse(
        content="Checking. ",
        tool_calls=[
            ToolCallRecord(id="call_9", name="lookup", args={"b": 2, "a": 1}),
            ToolCallRecord(id="call_10", name="raw", raw_args="{not json"),
        ],
    )
    assert render_answer(reply) == 'Checking.\n→ lookup({"a": 1, "b": 2}); raw({not json)'
    assert render_answer(LlmResponse(content="  plain  ")) == "  plain  "


def test_the_pieces_feed_the_ranking_in_chain_order() -> None:
    provenance = provenance_of(sample("support"))
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    sent = [s for s in provenance.suspects if not s.missing]
    assert {s.source for s in ranking.suspects} == {p.id for p in sent}
    assert {s.source for s in ranking.missing} == {p.id for p in provenance.suspects if p.missing}
    assert all(s.ablation is not None for s in [*ranking.suspects, *ranking.missing])
    for origin in provenance.origins:
        assert origin.reason.startswith(("rode because", "not sent:"))
        assert origin.born is not None and origin.born.verb == "BORN"


def test_the_evidence_gates_ask_is_born_at_the_draft_it_sent_back() -> None:
    # revised-amount: the final answer's context is the revision turn's request, which holds the
    # draft and the gate's ask; the ask's writer is the call routed evidence-recheck.
    path = sample("revised-amount")
    provenance = provenance_of(path)
    draft = next(r for r in events(path, "llm_call") if r["route"] == "evidence-recheck")
    ask = next(p for p in provenance.pieces if p.source == "evidence-gate")
    assert hop(ask, "BORN").seq == draft["seq"] and "$75.00" in ask.text
    assert provenance.call_seq > draft["seq"] and ask.suspect_id is None

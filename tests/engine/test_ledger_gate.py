"""The context ledger's gate (docs/backtracking.md §9.10): the policy, parole, ``ledger_gated``, the trace."""

from __future__ import annotations

import re

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import (
    Always,
    InjectionContext,
    LlmActivated,
    OnToolReturn,
    Rule,
    define_injection,
    define_instruction,
    define_skill,
    define_steering,
)
from fpdebug.engine.ledger_gate import LedgerGate, LedgerPolicy, ledger_gated
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LlmCallEvent, PassEvent


def _row(kind: str, piece: str, offered: int, earn_rate: float) -> dict[str, object]:
    return {"kind": kind, "id": piece, "offered": offered, "earn_rate": earn_rate}


def test_the_policy_in_order() -> None:
    gate = LedgerGate(
        [
            _row("injection", "new", 4, 0.0),
            _row("injection", "earns", 50, 0.05),
            _row("injection", "dead", 50, 0.049),
            _row("skill", "dead", 50, 0.9),
        ]
    )
    assert gate.decide("injection", "unknown").why == "unknown"
    assert (gate.decide("injection", "new").verdict, gate.decide("injection", "new").why) == (
        "included",
        "few-offers",
    )
    assert gate.decide("injection", "earns").why == "earning"  # at the floor is enough
    dead = gate.decide("injection", "dead")
    assert (dead.verdict, dead.why, dead.demotions, dead.offered) == ("demoted", "below-floor", 1, 50)
    assert gate.decide("skill", "dead").verdict == "included"  # rows are per kind


def test_parole_lets_every_tenth_demotion_through() -> None:
    gate = LedgerGate([_row("injection", "dead", 10, 0.0)])
    verdicts = [gate.decide("injection", "dead").verdict for _ in range(20)]
    paroled = [n for n, verdict in enumerate(verdicts, 1) if verdict == "paroled"]
    assert paroled == [10, 20]
    assert verdicts.count("demoted") == 18
    # Counters are per piece: another piece starts its own count.
    other = LedgerGate([_row("injection", "a", 10, 0.0), _row("injection", "b", 10, 0.0)])
    for _ in range(9):
        other.decide("injection", "a")
    assert other.decide("injection", "b").demotions == 1
    assert other.decide("injection", "a").verdict == "paroled"


def test_no_parole_when_refresh_every_is_none() -> None:
    gate = LedgerGate([_row("injection", "dead", 10, 0.0)], LedgerPolicy(refresh_every=None))
    assert {gate.decide("injection", "dead").verdict for _ in range(30)} == {"demoted"}


def test_bad_rows_and_knobs_are_refused() -> None:
    with pytest.raises(DefinitionError, match="offered"):
        LedgerGate([{"kind": "tool", "id": "x", "offered": -1, "earn_rate": 0}])
    with pytest.raises(DefinitionError, match="earn_rate"):
        LedgerGate([{"kind": "tool", "id": "x", "offered": 1, "earn_rate": "high"}])
    with pytest.raises(DefinitionError, match="earn_rate_floor"):
        LedgerPolicy(earn_rate_floor=2)
    with pytest.raises(DefinitionError, match="refresh_every"):
        LedgerPolicy(refresh_every=0)


def _ctx(iteration: int = 1) -> InjectionContext:
    return InjectionContext(iteration)


def test_ledger_gated_rewrites_always_and_rule_only() -> None:
    gate = LedgerGate([_row("injection", "always-on", 50, 0.0), _row("injection", "ruled", 50, 0.0)])
    always = ledger_gated(define_steering("always-on", prompt="x"), gate)
    assert isinstance(always.trigger, Rule) and always.trigger.ledger is not None
    assert always.trigger.active_when(_ctx()) is True  # the verdict is the gate's: the rule itself admits
    calls: list[int] = []

    def second_pass(ctx: InjectionContext) -> bool:
        calls.append(ctx.iteration)
        return ctx.iteration >= 2

    ruled = ledger_gated(define_instruction("ruled", prompt="y", active_when=second_pass), gate)
    assert isinstance(ruled.trigger, Rule) and ruled.trigger.active_when is second_pass
    assert ruled.trigger.description is not None and ruled.trigger.description.endswith(
        "AND the context ledger's verdict"
    )
    on_tool = define_injection("on-tool", trigger=OnToolReturn("ping"), flavor="fact", system_prompt="z")
    skill = define_skill("a-skill", description="d", body="b")
    assert ledger_gated(on_tool, gate) is on_tool
    assert ledger_gated(skill, gate) is skill
    assert isinstance(skill.trigger, LlmActivated)
    assert isinstance(define_steering("s", prompt="p").trigger, Always)


def _agent(gate_policy: LedgerPolicy) -> Agent:
    def pong() -> str:
        """Answer pong."""
        return "pong"

    def from_pass_two(ctx: InjectionContext) -> bool:
        return ctx.iteration >= 2

    return (
        Agent("gated")
        .injections(
            define_steering("tone", prompt="Be brief."),
            define_steering("dead", prompt="Legalese nobody reads."),
            define_instruction("ruled", prompt="Late rule.", active_when=from_pass_two),
            define_injection(
                "on-tool", trigger=OnToolReturn("pong"), flavor="fact", system_prompt="Pong seen."
            ),
        )
        .tools(pong)
        .ledger_gate(
            [
                _row("injection", "tone", 40, 0.5),
                _row("injection", "dead", 40, 0.0),
                _row("injection", "ruled", 40, 0.0),
                _row("injection", "on-tool", 40, 0.0),
            ],
            policy=gate_policy,
        )
    )


def test_a_gated_run_records_every_decision_in_the_trace() -> None:
    replies = [ScriptedReply.tool_call("pong", {}) for _ in range(3)] + [ScriptedReply.text("done")]
    sink = MemorySink()
    _agent(LedgerPolicy(refresh_every=2)).run("go", provider=ScriptedProvider(replies), sink=sink)
    passes = [e for e in sink.events if isinstance(e, PassEvent)]
    calls = [e for e in sink.events if isinstance(e, LlmCallEvent)]
    assert len(passes) == len(calls) == 4
    decisions = [{d.id: (d.verdict, d.demotions) for d in p.ledger or []} for p in passes]
    assert decisions == [
        {"tone": ("included", 0), "dead": ("demoted", 1)},  # `ruled` is off on pass 1: not asked
        {"tone": ("included", 0), "dead": ("paroled", 2), "ruled": ("demoted", 1)},
        {"tone": ("included", 0), "dead": ("demoted", 3), "ruled": ("paroled", 2)},
        {"tone": ("included", 0), "dead": ("paroled", 4), "ruled": ("demoted", 3)},
    ]
    # The demoted ones are skipped with the reason and the numbers; the others ride the call.
    first = passes[0]
    assert [(s.id, s.reason) for s in first.skipped] == [("dead", "ledger-demoted")]
    assert first.skipped[0].error is not None
    assert re.search(
        r"earn rate 0\.00 over 40 offers is below the floor 0\.05 \(demotion 1", first.skipped[0].error
    )
    sent = [[seg.injection_id for seg in call.request.system_prompt if seg.injection_id] for call in calls]
    assert sent == [
        ["tone"],
        ["tone", "dead", "on-tool"],
        ["tone", "ruled", "on-tool"],
        ["tone", "dead", "on-tool"],
    ]
    # on-tool-return is untouched: never asked, whatever its row says.
    assert all("on-tool" not in {d.id for d in p.ledger or []} for p in passes)


def test_an_ungated_run_writes_no_ledger_field() -> None:
    sink = MemorySink()
    Agent("plain").injections(define_steering("tone", prompt="x")).run(
        "go", provider=ScriptedProvider([ScriptedReply.text("ok")]), sink=sink
    )
    (only,) = [e for e in sink.events if isinstance(e, PassEvent)]
    assert only.ledger is None
    assert '"ledger"' not in only.model_dump_json(exclude_none=True)


def test_ledger_gate_refuses_an_undeclared_id() -> None:
    agent = Agent("a").injections(define_steering("tone", prompt="x"))
    with pytest.raises(DefinitionError, match="'nope'"):
        agent.ledger_gate([], injection_ids=["nope"])
    only = agent.injections(define_steering("dead", prompt="y")).ledger_gate([], injection_ids=["dead"])
    triggers = {i.id: type(i.trigger).__name__ for i in only.spec.injections}
    assert triggers == {"tone": "Always", "dead": "Rule"}

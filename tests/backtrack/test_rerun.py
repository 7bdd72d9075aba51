"""Reruns of a recorded call: specs applied to the exact request, fresh seeded providers, causal verdicts.

The causal tests run the planted-fact demo's own scripted model (a function of what it can see) on
the recorded call: its culprits are declared by the demo (``EXPECTED["culprits"]``), not derived
from the code under test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from fpdebug.backtrack.ablation import (
    bisect_culprits,
    normalized_changed,
    probe_suspects,
    verdict_for,
)
from fpdebug.backtrack.provenance import Provenance
from fpdebug.backtrack.rerun import (
    RecordedCallRunner,
    RerunProvider,
    apply_specs,
    rerun_provider_for,
    runner_for,
    scripted_rerun_provider,
)
from fpdebug.backtrack.suspects import (
    ArgSpec,
    InjectionSpec,
    MemorySpec,
    RestoreSpec,
    SuspectRanking,
    ToolSpec,
    rank_pieces,
    suspect_label,
)
from fpdebug.demo import planted_fact
from fpdebug.engine.providers.base import allow_live_calls, check_live_call
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.errors import BacktrackError, LiveCallRefusedError, ScenarioError
from fpdebug.trace.schema import LlmRequest, LlmResponse, RunStartEvent
from tests.backtrack.traces import demo_loader, event, events, planted_trace, provenance_of, sample


def well_formed(request: LlmRequest) -> bool:
    """Every tool message answers a call of an earlier assistant message, and every call is answered."""
    asked: list[str] = []
    answered: list[str] = []
    for message in request.messages:
        if message.role == "assistant":
            asked.extend(call.id for call in message.tool_calls or [])
        elif message.role == "tool":
            if message.tool_call_id not in asked:
                return False
            answered.append(message.tool_call_id)
    return sorted(asked) == sorted(answered)


def run_start(path: Path) -> RunStartEvent:
    return RunStartEvent.model_validate(events(path, "run_start")[0])


def call_at(path: Path, iteration: int) -> int:
    return next(r["seq"] for r in events(path, "llm_call") if r["iteration"] == iteration)


# ----------------------------------------------------------------------------------------------
# apply_specs


def test_the_baseline_is_the_recorded_request_unchanged() -> None:
    provenance = provenance_of(sample("support"))
    assert apply_specs(provenance.request, [], declared=provenance.declared) == provenance.request


def test_removing_an_injection_drops_its_segment_and_its_tools_but_not_the_history() -> None:
    path = sample("support")
    provenance = provenance_of(path, call_at(path, 3))
    request = apply_specs(provenance.request, [InjectionSpec(exclude_injection_ids=["billing"])])
    assert "billing" not in [s.injection_id for s in request.system_prompt]
    assert {t.name for t in request.tools} == {t.name for t in provenance.request.tools} - {
        "check_policy",
        "fetch_invoice",
    }
    assert request.messages == provenance.request.messages  # earlier results stay as recorded
    kept = [s for s in provenance.request.system_prompt if s.injection_id != "billing"]
    assert request.system_prompt == kept


def test_removing_an_injection_drops_the_messages_it_delivered() -> None:
    provenance = provenance_of(sample("planted-fact"))
    delivered = provenance.request.model_copy(
        update={
            "messages": [
                *provenance.request.messages,
                provenance.request.messages[0].model_copy(update={"content": "memo", "injection_id": "memo"}),
            ]
        }
    )
    request = apply_specs(delivered, [MemorySpec(exclude_memory_ids=["memo"])])
    assert request.messages == provenance.request.messages


def test_removing_a_tool_keeps_the_conversation_well_formed() -> None:
    path = sample("support")
    provenance = provenance_of(path)
    assert well_formed(provenance.request)
    request = apply_specs(provenance.request, [ToolSpec(ignored_tools=["lookup_order", "check_policy"])])
    assert well_formed(request)
    assert "lookup_order" not in {t.name for t in request.tools}
    assert not [m for m in request.messages if m.tool_name in ("lookup_order", "check_policy")]
    # The batch that asked for check_policy and fetch_invoice keeps its words and its other call.
    batch = next(m for m in request.messages if m.role == "assistant" and m.content)
    assert [c.name for c in batch.tool_calls or []] == ["fetch_invoice"]
    # The message that only asked for lookup_order is gone; the user message still opens the turn.
    assert request.messages[0].role == "user" and request.messages[1] == batch
    assert provenance.request == provenance_of(path).request  # the recorded request was not touched


def test_restoring_an_injection_puts_it_back_in_declaration_order() -> None:
    path = sample("support")
    provenance = provenance_of(path)
    declared = [d.id for d in run_start(path).injections]
    request = apply_specs(
        provenance.request,
        [
            RestoreSpec(unit_kind="injection", unit_id="wire-format"),
            RestoreSpec(unit_kind="injection", unit_id="refund-policy"),
        ],
        declared=provenance.declared,
    )
    ids = [s.injection_id for s in request.system_prompt if s.injection_id is not None]
    assert ids == sorted(ids, key=declared.index)
    assert {"wire-format", "refund-policy"} <= set(ids)
    restored = next(s for s in request.system_prompt if s.injection_id == "refund-policy")
    decl = next(d for d in run_start(path).injections if d.id == "refund-policy")
    assert (restored.text, restored.source) == (decl.system_prompt, decl.flavor)


def test_restoring_a_skill_brings_its_tools_back_before_read_skill() -> None:
    path = sample("support")
    provenance = provenance_of(path)
    request = apply_specs(
        provenance.request,
        [RestoreSpec(unit_kind="injection", unit_id="billing")],
        declared=provenance.declared,
        known_tools=provenance.known_tools,
    )
    names = [t.name for t in request.tools]
    assert names[-1] == "read_skill" and {"check_policy", "fetch_invoice"} <= set(names)
    restored = [t for t in request.tools if t.name in ("check_policy", "fetch_invoice")]
    assert all(t.injection_id == "billing" for t in restored)


def test_restoring_a_parked_tool_and_what_cannot_be_restored() -> None:
    path = sample("zone-trap")
    parked = next(r for r in events(path, "pass") if r.get("parked_ids"))
    provenance = provenance_of(path, call_at(path, parked["iteration"]))
    request = apply_specs(
        provenance.request,
        [RestoreSpec(unit_kind="tool", unit_id="get_zone_info")],
        known_tools=provenance.known_tools,
    )
    assert [t.name for t in request.tools][-2:] == ["get_zone_info", "read_skill"]
    with pytest.raises(BacktrackError, match="cannot restore tool 'nope'"):
        apply_specs(provenance.request, [RestoreSpec(unit_kind="tool", unit_id="nope")])
    with pytest.raises(BacktrackError, match="cannot restore injection 'ghost': it is not declared"):
        apply_specs(
            provenance.request,
            [RestoreSpec(unit_kind="injection", unit_id="ghost")],
            declared=provenance.declared,
        )
    templated = provenance.declared[0].model_copy(update={"templated": True})
    with pytest.raises(BacktrackError, match="template that only a pass can render"):
        apply_specs(
            provenance.request,
            [RestoreSpec(unit_kind="injection", unit_id=templated.id)],
            declared=[templated],
        )
    with pytest.raises(BacktrackError, match="cannot rerun with arg 'x' overridden"):
        apply_specs(provenance.request, [ArgSpec(source="x", note="untracked")])


# ----------------------------------------------------------------------------------------------
# The runner


def counting(respond: Callable[[LlmRequest], ScriptedReply]) -> tuple[RerunProvider, list[LlmRequest]]:
    seen: list[LlmRequest] = []

    def make() -> ScriptedProvider:
        def answer(request: LlmRequest) -> ScriptedReply:
            seen.append(request)
            return respond(request)

        return ScriptedProvider(respond=answer)

    return RerunProvider(factory=make, live=False, description="test"), seen


def test_the_runner_sends_the_recorded_request_seeded_to_a_fresh_provider() -> None:
    provenance = provenance_of(sample("planted-fact"))
    built: list[int] = []

    def make() -> ScriptedProvider:
        built.append(1)
        return ScriptedProvider(reply="fine")

    runner = RecordedCallRunner(provenance.request, RerunProvider(factory=make, live=False, description="t"))
    outputs = [runner([], seed=seed) for seed in range(3)]
    assert [o.output for o in outputs] == ["fine"] * 3 and len(built) == 3 and runner.calls == 3
    assert runner.last_request == provenance.request.model_copy(update={"seed": 2})
    assert all(o.cost is not None and o.cost.tokens for o in outputs)


def test_a_rerun_that_asks_for_a_tool_answers_with_the_call() -> None:
    provenance = provenance_of(sample("planted-fact"))
    rerun, _ = counting(lambda request: ScriptedReply.tool_call("lookup_order", {"order_id": "ORD-7"}))
    assert runner_for(provenance, rerun)([], seed=0).output == '→ lookup_order({"order_id": "ORD-7"})'


def test_scripted_reruns_never_reach_a_live_model() -> None:
    provenance = provenance_of(sample("planted-fact"))

    class Sneaky:
        name, model = "sneaky", "m"

        def complete(self, request: LlmRequest) -> LlmResponse:
            check_live_call(self.name, self.model)  # what every live provider does first
            return LlmResponse(content="reached the network")

    runner = runner_for(provenance, RerunProvider(factory=Sneaky, live=False, description="scripted"))
    with allow_live_calls(True), pytest.raises(LiveCallRefusedError):
        runner([], seed=0)


def test_an_explicit_live_provider_is_still_refused_when_the_process_blocks_live_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FPDEBUG_BLOCK_LIVE_CALLS", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    provenance = provenance_of(sample("planted-fact"))
    rerun = rerun_provider_for(run_start(sample("planted-fact")), provider="anthropic", model="claude-test")
    assert rerun.live
    with pytest.raises(LiveCallRefusedError, match="FPDEBUG_BLOCK_LIVE_CALLS=1 is set"):
        runner_for(provenance, rerun)([], seed=0)


# ----------------------------------------------------------------------------------------------
# Where the provider comes from


def test_the_scenario_and_its_variant_are_rebuilt_from_run_start(tmp_path: Path) -> None:
    path = planted_trace(tmp_path, "joint")
    rerun = rerun_provider_for(run_start(path), load_module=demo_loader)
    assert not rerun.live and "variant='joint'" in rerun.description
    first, second = rerun.factory(), rerun.factory()
    assert first is not second  # fresh per rerun


def test_no_way_to_rebuild_a_provider_names_the_flag_to_pass() -> None:
    bare = run_start(sample("planted-fact")).model_copy(update={"options": {}})
    with pytest.raises(BacktrackError, match=r"pass --provider anthropic\|openai --model M"):
        rerun_provider_for(bare, load_module=demo_loader)
    live = bare.model_copy(update={"provider": "anthropic", "model": "claude-x"})
    with pytest.raises(BacktrackError, match="rerun it live with --provider anthropic --model claude-x"):
        rerun_provider_for(live, load_module=demo_loader)
    with pytest.raises(BacktrackError, match=r"--provider openai needs the model"):
        rerun_provider_for(bare, provider="openai")
    with pytest.raises(BacktrackError, match="replay provider replays the recorded answer"):
        rerun_provider_for(bare, provider="replay")
    with pytest.raises(ScenarioError):
        unknown = bare.model_copy(update={"options": {"scenario": "no-such"}})
        rerun_provider_for(unknown, load_module=demo_loader)


def test_a_user_module_without_scripted_provider_is_a_clear_error() -> None:
    module = ModuleType("mine")
    with pytest.raises(BacktrackError, match="mine has no scripted_provider"):
        scripted_rerun_provider(module, options={}, source="mine")
    broken = SimpleNamespace(scripted_provider=lambda: 1 / 0)
    rerun = scripted_rerun_provider(broken, options={}, source="broken")  # type: ignore[arg-type]
    with pytest.raises(BacktrackError, match=r"broken: scripted_provider\(\) raised ZeroDivisionError"):
        rerun.factory()


# ----------------------------------------------------------------------------------------------
# Causal verdicts on the planted-fact demo (docs/backtracking.md §9.6–§9.7)


def setup(path: Path) -> tuple[Provenance, SuspectRanking, RecordedCallRunner]:
    provenance = provenance_of(path)
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    rerun = rerun_provider_for(run_start(path), load_module=demo_loader)
    return provenance, ranking, runner_for(provenance, rerun)


def names(groups: list[list[object]]) -> list[list[str]]:
    return [
        sorted(s.detail.injection_id or s.detail.tool_name for s in group)  # type: ignore[attr-defined]
        for group in groups
    ]


def test_the_planted_fact_is_confirmed_causal_and_the_innocent_pieces_are_not(tmp_path: Path) -> None:
    provenance, ranking, runner = setup(planted_trace(tmp_path))
    assert provenance.answer == planted_fact.APPROVED
    probes = probe_suspects(
        ranking.suspects, runner, original=provenance.answer, samples=3, answer_changed=normalized_changed
    )
    assert probes.baseline_stable and probes.baseline.flips == 0
    verdicts = {p.suspect.detail.injection_id or p.suspect.detail.tool_name: p.verdict for p in probes.probes}
    assert set(verdicts) == {"vip-override", "refund-limits", "tone", "format-answer", "lookup_order"}
    culprit = verdicts["vip-override"]
    assert (culprit.kind, culprit.flips, culprit.samples) == ("confirmed", 3, 3)
    assert verdicts["vip-override"].tier == "causal"
    assert verdicts["vip-override"].claim.startswith(
        "CAUSAL: ablating injection 'vip-override' flipped the outcome in 3/3 seeded reruns"
    )
    for innocent in ("refund-limits", "tone", "format-answer", "lookup_order"):
        assert verdicts[innocent].kind == "not-confirmed" and verdicts[innocent].flips == 0
    flipped = next(p for p in probes.probes if p.suspect.detail.injection_id == "vip-override")
    assert set(flipped.stats.outputs) == {planted_fact.EXPECTED["answer_without_culprit"]}


@pytest.mark.parametrize("variant", ["single", "joint", "independent"])
def test_bisect_finds_the_declared_culprit_sets_within_budget(tmp_path: Path, variant: str) -> None:
    provenance, ranking, runner = setup(planted_trace(tmp_path, variant))
    result = bisect_culprits(
        ranking.suspects, runner, original=provenance.answer, samples=3, answer_changed=normalized_changed
    )
    expected = [sorted(group) for group in planted_fact.EXPECTED["culprits"][variant]]  # type: ignore[index]
    assert result.verdict == "confirmed" and result.tier == "causal"
    assert sorted(names(result.culprits)) == sorted(expected)
    assert len(result.probes) <= 24 and result.runs_used == len(result.probes) * 3
    assert result.baseline is not None and result.baseline.flips == 0


def test_the_joint_culprit_is_one_set_of_two_and_the_independent_ones_two_sets(tmp_path: Path) -> None:
    joint = setup(planted_trace(tmp_path, "joint"))
    independent = setup(planted_trace(tmp_path, "independent"))
    results = [
        bisect_culprits(r.suspects, run, original=p.answer, answer_changed=normalized_changed)
        for p, r, run in (joint, independent)
    ]
    assert [len(group) for group in results[0].culprits] == [2]
    assert [len(group) for group in results[1].culprits] == [1, 1]


def test_an_answer_no_context_changes_is_not_reproducible(tmp_path: Path) -> None:
    provenance, ranking, runner = setup(planted_trace(tmp_path, "unchanged"))
    assert provenance.answer == planted_fact.DECLINED
    result = bisect_culprits(
        ranking.suspects, runner, original=provenance.answer, answer_changed=normalized_changed
    )
    assert result.verdict == "not-reproducible" and result.culprits == [] and result.tier == "correlational"
    probes = probe_suspects(
        ranking.suspects, runner, original=provenance.answer, answer_changed=normalized_changed
    )
    assert {p.verdict.kind for p in probes.probes} == {"not-confirmed"}


def test_an_unstable_baseline_is_inconclusive_never_causal(tmp_path: Path) -> None:
    provenance, ranking, _ = setup(planted_trace(tmp_path))
    respond = planted_fact.responder("single")

    def by_seed(request: LlmRequest) -> ScriptedReply:
        # A model whose answer varies with the seed even with nothing removed.
        if (request.seed or 0) % 2:
            return ScriptedReply.text("maybe")
        return respond(request)

    rerun, _ = counting(by_seed)
    runner = runner_for(provenance, rerun)
    probes = probe_suspects(
        ranking.suspects, runner, original=provenance.answer, answer_changed=normalized_changed
    )
    assert not probes.baseline_stable and probes.baseline.flips == 1
    assert {p.verdict.kind for p in probes.probes} == {"inconclusive"}
    assert {p.verdict.tier for p in probes.probes} == {"correlational"}
    result = bisect_culprits(
        ranking.suspects, runner, original=provenance.answer, answer_changed=normalized_changed
    )
    assert result.verdict == "inconclusive" and result.culprits == [] and len(result.probes) == 1
    label = suspect_label(next(s for s in ranking.suspects if s.detail.injection_id == "vip-override"))
    assert verdict_for(label, probes.probes[0].stats, False).kind == "inconclusive"


def test_restoring_a_missing_lease_is_probed_in_the_restoring_direction() -> None:
    path = sample("leases")
    provenance = provenance_of(path)
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    runner = runner_for(provenance, rerun_provider_for(run_start(path), load_module=demo_loader))
    probes = probe_suspects(
        ranking.missing, runner, original=provenance.answer, answer_changed=normalized_changed
    )
    assert [(p.suspect.detail.injection_id, p.verdict.action) for p in probes.probes] == [
        ("wire-format", "restoring")
    ]
    # The leases demo's model does not read the format rule: putting it back changes nothing.
    assert probes.probes[0].verdict.kind == "not-confirmed"
    assert runner.last_request is not None
    assert "wire-format" in [s.injection_id for s in runner.last_request.system_prompt]
    recorded = event(path, provenance.call_seq)["request"]
    assert recorded == provenance.request.model_dump(mode="json", exclude_none=True)

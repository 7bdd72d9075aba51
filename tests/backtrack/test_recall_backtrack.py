"""A recalled memory entry is a ``memory`` suspect the seeded rerun can ablate (docs/backtracking.md
§9.4, §9.6), on the recalled-fact demo."""

from __future__ import annotations

import pytest

from fpdebug.backtrack.ablation import normalized_changed, probe_suspects, rerun_without
from fpdebug.backtrack.rerun import rerun_provider_for, runner_for
from fpdebug.backtrack.suspects import MemorySpec, rank_pieces
from fpdebug.cli import main
from fpdebug.demo import recalled_fact
from tests.backtrack.test_rerun import run_start
from tests.backtrack.traces import demo_loader, provenance_of, sample


def answer(*, without: tuple[str, ...] = ()) -> str:
    agent = recalled_fact.build_agent().without(memory_ids=without)
    return agent.run(list(recalled_fact.USER_MESSAGES), provider=recalled_fact.scripted_provider()).content


def test_the_stale_memory_causes_the_wrong_answer_and_only_it() -> None:
    assert answer() == recalled_fact.APPROVED
    assert answer(without=("mem-2025-vip",)) == recalled_fact.DECLINED
    assert answer(without=("mem-address",)) == recalled_fact.APPROVED


def test_the_recalled_entries_are_memory_suspects_with_their_recall_as_origin() -> None:
    provenance = provenance_of(sample("recalled-fact"))
    memory = {p.injection_id: p for p in provenance.pieces if p.kind == "memory"}
    assert set(memory) == {"mem-2025-vip", "mem-address"}
    stale = memory["mem-2025-vip"]
    assert stale.admission is not None and stale.admission.via == "recall"
    assert stale.reason.startswith(
        "rode because 'customer-memory' recalled it for the turn's message (score "
    )
    assert [hop.verb for hop in stale.chain] == ["READ", "LANDED", "ALLOWED", "BORN"]
    assert stale.chain[-1].seq == 3  # the recall record, before the first pass
    assert "untracked-sources" not in [flag.flag for flag in provenance.flags]


def test_the_seeded_rerun_without_the_memory_entry_flips_the_answer() -> None:
    path = sample("recalled-fact")
    provenance = provenance_of(path)
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    runner = runner_for(provenance, rerun_provider_for(run_start(path), load_module=demo_loader))
    suspects = {s.detail.injection_id: s for s in ranking.suspects if s.kind == "memory"}
    assert suspects["mem-2025-vip"].ablation == MemorySpec(exclude_memory_ids=["mem-2025-vip"])
    probes = probe_suspects(
        ranking.suspects, runner, original=provenance.answer, samples=3, answer_changed=normalized_changed
    )
    verdicts = {p.suspect.detail.injection_id: p.verdict for p in probes.probes}
    assert verdicts["mem-2025-vip"].kind == "confirmed"
    assert verdicts["mem-2025-vip"].claim.startswith("CAUSAL: ablating memory 'mem-2025-vip' flipped")
    for innocent in ("mem-address", "refund-limits", "format-answer"):
        assert verdicts[innocent].kind == "not-confirmed"
    rerun = rerun_without(
        ranking.suspects,
        ["mem-2025-vip"],
        runner,
        original=provenance.answer,
        answer_changed=normalized_changed,
    )
    assert rerun.answer == recalled_fact.DECLINED and rerun.what_changed.answer_flipped


def test_fpdebug_backtrack_names_the_memory_entry_and_its_rerun_declines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["backtrack", "--ablate", "--no-save", str(sample("recalled-fact"))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "memory 'mem-2025-vip' (memory)" in out
    assert "CAUSAL: ablating memory 'mem-2025-vip' flipped the outcome in 3/3 seeded reruns" in out
    assert f"reruns answered: {recalled_fact.DECLINED}" in out
    assert "NOT CONFIRMED: ablating memory 'mem-address'" in out

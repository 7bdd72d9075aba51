"""The backtrack report (cards, folding, notes, verdict stamps, honesty) and its sidecar beside the trace."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import orjson
import pytest

from fpdebug.backtrack.ablation import ProbeStats, SimilarityStats, SuspectProbe, verdict_for
from fpdebug.backtrack.report import CLAIM_DISCIPLINE, BacktrackReport, build_report
from fpdebug.backtrack.rerun import RerunProvider
from fpdebug.backtrack.session import backtrack, explain, flip_test_for
from fpdebug.backtrack.sidecar import SIDECAR_SUFFIX, SidecarWriter, load_sidecar, sidecar_path_for
from fpdebug.backtrack.suspects import Piece, rank_pieces, suspect_label
from fpdebug.demo import planted_fact
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.errors import BacktrackError
from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmRequest, StatedValue
from fpdebug.trace.writer import dump_record
from tests.backtrack.traces import (
    copy_sample,
    demo_loader,
    events,
    planted_trace,
    provenance_of,
    records,
    sample,
)
from tests.conftest import T0


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stats(flips: int, samples: int = 3) -> ProbeStats:
    similarity = SimilarityStats(mean=0.5, min=0.0, max=1.0, stdev=0.1)
    return ProbeStats(
        samples=samples,
        flips=flips,
        similarity=similarity,
        outputs=["x"] * samples,
        changed=[i < flips for i in range(samples)],
    )


# ----------------------------------------------------------------------------------------------
# Cards, folding, notes


def test_the_correlational_report_of_the_support_answer() -> None:
    provenance = provenance_of(sample("support"))
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    report = build_report(provenance, ranking)
    assert report.claim == f"Why did the model answer this at iteration {provenance.iteration}?"
    assert report.mode == "correlational" and report.baseline is None and report.verdicts == []
    assert report.decided_at.id == f"llm_call#{provenance.call_index}"
    sent = [p for p in provenance.suspects if not p.missing]
    assert len(report.cards) == 6 and report.folded_count == len(sent) - 6
    assert [c.rank for c in report.cards] == sorted(c.rank for c in report.cards)  # shown in rank order
    shown = {c.source for c in report.cards}
    folded = [s for s in ranking.suspects if s.source not in shown]
    assert report.folded == (
        f"{len(folded)} more suspect(s) folded — " + " · ".join(f"#{s.rank} {s.source}" for s in folded)
    )
    for card in report.cards:
        origin = provenance.origin(card.source)
        assert origin is not None and card.reason == origin.reason and card.chain == origin.chain
        assert card.chain[-1].verb == "BORN" and card.born_at.id == "run_start"
        assert card.born_at.via == ("tool-result" if card.kind == "tool" else "always")
    assert [m.source for m in report.missing] == [s.source for s in ranking.missing]
    assert report.honesty == list(CLAIM_DISCIPLINE)


def test_a_card_shows_the_hop_next_to_the_suspect_and_the_path_when_there_are_more() -> None:
    path = sample("support")
    seq = next(r["seq"] for r in events(path, "llm_call") if r["iteration"] == 3)
    provenance = provenance_of(path, seq)
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    report = build_report(provenance, ranking, card_limit=len(ranking.suspects))
    cards = {c.source: c for c in report.cards}
    leased = cards["injection:refund-policy"]
    assert leased.edge is not None and (leased.edge.kind, leased.edge.key) == ("data", "system-prompt")
    assert [(h.kind, h.key) for h in leased.path] == [("control", "lease"), ("data", "system-prompt")]
    assert leased.path[0].from_id == f"llm_call#{provenance.call_index}"
    always = cards["injection:tone"]
    assert always.edge is not None and always.edge.key == "system-prompt" and always.path == []
    tool = cards["tool:check_policy"]
    assert tool.edge is not None and tool.edge.key == "messages"


def test_cards_with_content_evidence_come_first_and_a_close_race_gets_a_note() -> None:
    provenance = provenance_of(sample("planted-fact"))
    pieces = [Piece(id=f"injection:blank{i}", kind="injection", injection_id=f"blank{i}") for i in range(4)]
    pieces += [
        Piece(id=f"injection:text{i}", kind="injection", injection_id=f"text{i}", text="approved refund")
        for i in range(4)
    ]
    ranking = rank_pieces(pieces, "APPROVED refund", at_iteration=2)
    # Text-less pieces score their upper bound (1.0) and rank first; the cards prefer measurements.
    assert [s.source for s in ranking.suspects[:4]] == [f"injection:blank{i}" for i in range(4)]
    report = build_report(provenance, ranking)
    assert [c.source for c in report.cards] == [
        "injection:blank0",
        "injection:blank1",
        *[f"injection:text{i}" for i in range(4)],
    ]
    assert [c.upper_bound for c in report.cards] == [True, True, False, False, False, False]
    assert report.folded == "2 more suspect(s) folded — #3 injection:blank2 · #4 injection:blank3"
    assert report.score_note is not None and "within 0.000" in report.score_note


def test_verdict_stamps_and_the_mode_follow_the_probes() -> None:
    provenance = provenance_of(sample("planted-fact"))
    ranking = rank_pieces(provenance.suspects, provenance.answer, at_iteration=provenance.iteration)
    report = build_report(provenance, ranking)
    by_name = {s.detail.injection_id or s.detail.tool_name: s for s in ranking.suspects}
    stable = report.with_baseline(stats(0))
    assert stable.mode == "causal" and stable.baseline == "0/3 flipped with no ablation"
    outcomes = {"vip-override": 3, "tone": 0, "format-answer": 1}
    for name, flips in outcomes.items():
        suspect = by_name[name]
        probe = SuspectProbe(
            suspect=suspect,
            stats=stats(flips),
            verdict=verdict_for(suspect_label(suspect), stats(flips), True),
        )
        stable = stable.with_probe(probe)
    cards = {c.name: c for c in stable.cards}
    assert cards["vip-override"].verdict is not None and cards["vip-override"].verdict.kind == "confirmed"
    assert cards["tone"].verdict is not None and cards["tone"].verdict.kind == "not-confirmed"
    assert cards["format-answer"].verdict is None  # inconclusive: no stamp
    probe = cards["format-answer"].probe
    assert probe is not None and probe.verdict.kind == "inconclusive"
    assert [v.label for v in stable.verdicts] == [suspect_label(by_name[n]) for n in outcomes]
    assert stable.runs_used == 12
    unstable = report.with_baseline(stats(1))
    assert unstable.mode == "correlational" and "baseline changed outcome" in unstable.mode_label
    assert unstable.honesty[0].startswith("⚠ baseline-unstable: 1/3 reruns changed the answer")
    assert unstable.honesty[-2:] == list(CLAIM_DISCIPLINE)


def test_unsupported_values_become_suspects_of_their_own_kind(tmp_path: Path) -> None:
    path = copy_sample("planted-fact", tmp_path)
    last = records(path)[-1]
    finding = FindingEvent(
        seq=last["seq"] + 1,
        ts=T0,
        run_id=last["run_id"],
        turn=1,
        iteration=2,
        layer="answer",
        rows=[
            AnswerAssessmentRow(
                reads=[], values=[StatedValue(text="$250.00", kind="amount", supported=False)]
            )
        ],
    )
    with path.open("ab") as file:
        file.write(dump_record(finding))
    report = explain(path).report
    assert report.assessed
    assert [(u.kind, u.text, u.value_kind, u.seq) for u in report.unsupported] == [
        ("unsupported-value", "$250.00", "amount", finding.seq)
    ]
    assert "not ablatable" in report.unsupported[0].note
    assert all(c.kind != "unsupported-value" for c in report.cards)  # never handed to a rerun


# ----------------------------------------------------------------------------------------------
# The session and its sidecar


def test_an_existing_sidecar_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    # Issue 18 item 2: fpdebug never chmods a file it did not create (this test used to assert
    # that an existing 0644 sidecar was tightened to 0600). A new sidecar is still created 0600.
    path = planted_trace(tmp_path)
    sidecar = sidecar_path_for(path)
    sidecar.touch()
    sidecar.chmod(0o644)  # made by `touch`: the owner's choice
    backtrack(path, load_module=demo_loader)
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o644
    assert records(sidecar)[0]["record"] == "report"


def test_a_full_backtrack_saves_every_record_beside_an_untouched_trace(tmp_path: Path) -> None:
    path = planted_trace(tmp_path)
    before, mtime = digest(path), path.stat().st_mtime_ns
    seen: list[tuple[int, int]] = []
    result = backtrack(
        path,
        ablate=True,
        restore=True,
        bisect=True,
        load_module=demo_loader,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert digest(path) == before and path.stat().st_mtime_ns == mtime
    sidecar = Path(str(path) + SIDECAR_SUFFIX)
    assert result.sidecar == sidecar == sidecar_path_for(path) and sidecar.is_file()
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    lines = records(sidecar)
    kinds = [line["record"] for line in lines]
    assert kinds == ["report", "baseline", *["verdict"] * len(result.probes), "bisect", "end"]
    assert {line["id"] for line in lines} == {lines[0]["id"]}
    assert all(line["call_seq"] == result.report.call_seq for line in lines)
    assert lines[0]["report"]["mode"] == "correlational"
    assert lines[-1]["status"] == "complete" and lines[-1]["runs_used"] == result.report.runs_used
    verdicts = [line["verdict"] for line in lines if line["record"] == "verdict"]
    confirmed = [v for v in verdicts if v["kind"] == "confirmed"]
    assert [(v["label"], v["tier"], v["flips"], v["samples"]) for v in confirmed] == [
        ("injection 'vip-override'", "causal", 3, 3)
    ]
    report = result.report
    assert report.mode == "causal" and report.status == "complete" and report.baseline_flips == 0
    assert report.bisect is not None and report.bisect.culprits == [["injection 'vip-override'"]]
    assert seen[-1] == (report.runs_used, report.runs_used)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert all(done <= total for done, total in seen)
    reopened = load_sidecar(sidecar)
    assert (reopened.unreadable_lines, reopened.torn_tail) == (0, False)
    assert len(reopened.backtracks) == 1 and reopened.backtracks[0].status == "complete"
    assert reopened.backtracks[0].report == report


def test_explain_reads_only_and_no_save_writes_nothing(tmp_path: Path) -> None:
    path = copy_sample("support", tmp_path)
    before = digest(path)
    assert explain(path).report.mode == "correlational"
    result = backtrack(path, save=False)
    assert result.sidecar is None and not sidecar_path_for(path).exists() and digest(path) == before
    saved = backtrack(path)
    assert [line["record"] for line in records(saved.sidecar)] == ["report", "end"]  # type: ignore[arg-type]


def test_restore_with_nothing_missing_reruns_nothing(tmp_path: Path) -> None:
    path = planted_trace(tmp_path)
    counted: list[int] = []
    result = backtrack(path, restore=True, load_module=demo_loader, progress=lambda d, _: counted.append(d))
    assert result.provenance.missing == [] and counted == [0] and result.baseline is None
    assert result.report.mode == "correlational" and result.report.runs_used == 0
    assert [line["record"] for line in records(result.sidecar)] == ["report", "end"]  # type: ignore[arg-type]


def test_a_cancelled_backtrack_keeps_what_finished(tmp_path: Path) -> None:
    path = planted_trace(tmp_path)
    done: list[int] = []
    # Stop after the baseline and two suspects: 3 probes of 3 reruns.
    result = backtrack(
        path,
        ablate=True,
        load_module=demo_loader,
        progress=lambda d, _: done.append(d),
        cancelled=lambda: len(done) >= 9,
    )
    assert result.report.status == "cancelled" and len(result.report.verdicts) == 2
    lines = records(result.sidecar)  # type: ignore[arg-type]
    assert [line["record"] for line in lines] == ["report", "baseline", "verdict", "verdict", "end"]
    assert lines[-1]["status"] == "cancelled" and lines[-1]["runs_used"] == 9
    saved = load_sidecar(result.sidecar)  # type: ignore[arg-type]
    assert saved.backtracks[0].status == "cancelled"
    assert saved.backtracks[0].report.verdicts == result.report.verdicts
    assert saved.backtracks[0].report.status == "cancelled"


def test_the_sidecar_reader_tolerates_a_torn_tail_and_junk(tmp_path: Path) -> None:
    path = planted_trace(tmp_path)
    first = backtrack(path, ablate=True, load_module=demo_loader, max_probed=1)
    sidecar = first.sidecar
    assert sidecar is not None
    with sidecar.open("ab") as file:
        file.write(b'not json\n{"record": "verdict", "id": "nobody"}\n{"record": "verd')
    torn = load_sidecar(sidecar)
    assert torn.torn_tail and torn.unreadable_lines == 2
    assert torn.backtracks[0].report == first.report
    second = backtrack(path, load_module=demo_loader)  # appends after the torn line, on a fresh line
    reopened = load_sidecar(sidecar)
    assert not reopened.torn_tail and reopened.unreadable_lines == 3
    assert len(reopened.backtracks) == 2 and reopened.backtracks[0].report == first.report
    assert reopened.backtracks[0].id != reopened.backtracks[1].id
    latest = reopened.latest()
    assert latest is not None and latest.report == second.report
    of_call = reopened.latest(call_seq=first.report.call_seq)
    assert of_call is not None and of_call.report.call_seq == first.report.call_seq
    assert reopened.latest(call_seq=-1) is None


def test_an_unfinished_backtrack_reopens_as_running(tmp_path: Path) -> None:
    path = copy_sample("planted-fact", tmp_path)
    report = explain(path).report
    writer = SidecarWriter(path, report)
    writer.baseline(stats(0))
    saved = load_sidecar(writer.path).backtracks[0]
    assert saved.status == "unfinished" and saved.report.status == "running"
    assert saved.report.baseline == "0/3 flipped with no ablation"


def test_the_sidecar_is_never_the_trace_and_bad_paths_are_clear(tmp_path: Path) -> None:
    path = copy_sample("planted-fact", tmp_path)
    report = explain(path).report
    with pytest.raises(BacktrackError, match="refusing to write backtrack records into the trace itself"):
        SidecarWriter(path, report, path=path)
    with pytest.raises(BacktrackError, match="cannot write the backtrack sidecar"):
        SidecarWriter(path, report, path=tmp_path / "missing-dir" / "x.jsonl")
    with pytest.raises(BacktrackError, match="no backtrack sidecar at"):
        load_sidecar(tmp_path / "nothing.jsonl")


def test_an_unstable_provider_makes_every_verdict_inconclusive(tmp_path: Path) -> None:
    path = planted_trace(tmp_path)
    respond = planted_fact.responder("single")

    def make() -> ScriptedProvider:
        def answer(request: LlmRequest) -> ScriptedReply:
            return ScriptedReply.text("maybe") if (request.seed or 0) == 1 else respond(request)

        return ScriptedProvider(respond=answer)

    rerun = RerunProvider(factory=make, live=False, description="a seed-dependent model")
    result = backtrack(path, ablate=True, bisect=True, rerun=rerun)
    report = result.report
    assert report.mode == "correlational" and report.baseline == "1/3 flipped with no ablation"
    assert {v.verdict.kind for v in report.verdicts} == {"inconclusive"}
    assert all(c.verdict is None for c in report.cards)
    assert report.bisect is not None
    assert report.bisect.verdict == "inconclusive" and report.bisect.culprits == []
    assert [f.flag for f in report.flags] == ["baseline-unstable"]
    assert not any(line.startswith("CAUSAL") for line in (v.verdict.claim for v in report.verdicts))


def test_the_flip_test_defaults_to_normalized_text_for_short_answers() -> None:
    short, words = flip_test_for("APPROVED: refund of $250.00 for ORD-7 issued.")
    assert words.startswith("normalized") and short("APPROVED", "approved.") is False
    assert short("APPROVED", "NOT APPROVED") is True
    long_answer = " ".join(f"word{i}" for i in range(30))
    test, words = flip_test_for(long_answer)
    assert words.startswith("lexical similarity < 0.8") and test(long_answer, long_answer + " extra") is False
    with pytest.raises(BacktrackError, match="unknown flip test"):
        flip_test_for("x", "fuzzy")  # type: ignore[arg-type]


def test_reruns_without_a_provider_source_fail_before_anything_is_written(tmp_path: Path) -> None:
    path = copy_sample("planted-fact", tmp_path)
    with pytest.raises(BacktrackError, match="no module loader was given"):
        backtrack(path, ablate=True)
    assert not sidecar_path_for(path).exists()


def test_a_report_round_trips_through_json() -> None:
    report = explain(sample("zone-trap")).report
    again = BacktrackReport.model_validate(orjson.loads(orjson.dumps(report.model_dump(mode="json"))))
    assert again == report
    assert os.fspath(sample("zone-trap")) == report.trace

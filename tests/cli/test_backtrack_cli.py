"""``fpdebug backtrack``: the chain, the suspects, the verdicts, the sidecar, exit codes, inert printing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import define_fact
from fpdebug.engine.providers.scripted import ScriptedProvider
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.clock import FixedClock
from tests.backtrack.traces import copy_sample, events, planted_trace, records
from tests.conftest import T0


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtrack", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_default_prints_the_chain_and_the_correlational_suspects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_sample("support", tmp_path)
    code, out, err = run(capsys, str(path))
    assert (code, err) == (0, "")
    final = [r for r in events(path, "llm_call") if r.get("route") == "final"][-1]
    label = f"llm_call #{final['call_index']} (seq {final['seq']}, turn 1, iteration {final['iteration']})"
    assert f"answer: {label} answered" in out
    assert "tier:   correlational: chains and rankings only, no reruns" in out
    assert "suspects (correlational: aligned with the answer, never \"because\")" in out
    assert "ANSWER   'I refunded the duplicate charge" in out
    assert "← READ     llm_call #5" in out and "← BORN" in out
    assert ("rode because `read_skill` call call_4 at iteration 3 activated it; cursor on refund by "
            "model-pick") in out
    assert ("injection 'refund-policy' — lease-ended: its until-skill-exit lease (granted by "
            "`check_policy`") in out
    assert "verdicts (causal tier" not in out  # no reruns were asked for
    sidecar = Path(str(path) + ".backtrack.jsonl")
    assert f"saved to {sidecar}" in out and [r["record"] for r in records(sidecar)] == ["report", "end"]


def test_a_lease_call_shows_who_granted_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("support", tmp_path)
    seq = next(r["seq"] for r in events(path, "llm_call") if r["iteration"] == 3)
    code, out, _ = run(capsys, str(path), "--call", str(seq), "--no-save")
    assert code == 0
    assert ("rode because lease (until-skill-exit) granted by `check_policy` call call_2 at iteration 2, "
            "tenant billing") in out
    grant = next(r for r in events(path, "lease_grant") if r["lease"]["instruction_id"] == "refund-policy")
    granted = "until-skill-exit lease on 'refund-policy' granted to tenant billing"
    assert f"← GRANTED  {granted}  [seq {grant['seq']}]" in out
    assert not Path(str(path) + ".backtrack.jsonl").exists()


def test_ablate_and_bisect_confirm_the_planted_fact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = planted_trace(tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    code, out, err = run(capsys, str(path), "--ablate", "--bisect", "--samples", "3")
    assert (code, err) == (0, "")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert "tier:   causal: seeded reruns against a stable baseline (0/3 flipped with no ablation)" in out
    assert "baseline: 0/3 flipped with no ablation (stable)" in out
    assert "CAUSAL: ablating injection 'vip-override' flipped the outcome in 3/3 seeded reruns" in out
    for innocent in ("injection 'refund-limits'", "injection 'tone'", "injection 'format-answer'",
                     "tool 'lookup_order'"):
        assert f"NOT CONFIRMED: ablating {innocent} changed the outcome in 0/3 seeded reruns" in out
    assert "#3 injection 'vip-override' (fact)" in out and "[CAUSAL 3/3]" in out
    assert "bisect: confirmed (causal) — culprit sets: [injection 'vip-override']" in out
    assert "reruns: the scripted model of planted-fact (variant='single'), fresh for every rerun" in out
    kinds = [r["record"] for r in records(Path(str(path) + ".backtrack.jsonl"))]
    assert kinds[0] == "report" and kinds[-2:] == ["bisect", "end"]


def test_restore_probes_the_missing_context(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("zone-trap", tmp_path)
    parked = next(r for r in events(path, "pass") if r.get("parked_ids"))
    seq = next(r["seq"] for r in events(path, "llm_call") if r["iteration"] == parked["iteration"])
    code, out, _ = run(capsys, str(path), "--call", str(seq), "--restore", "--no-save")
    assert code == 0
    assert "injection 'zone-audit' — parked: parked: its map is parked" in out
    assert "tool 'get_zone_info' — tool-parked" in out
    assert "restoring injection 'zone-audit'" in out and "restoring tool 'get_zone_info'" in out


def test_reruns_with_nothing_to_probe_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("planted-fact", tmp_path)
    code, out, _ = run(capsys, str(path), "--restore", "--no-save")
    assert code == 0 and "verdicts: nothing to rerun" in out and "baseline:" not in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = planted_trace(tmp_path, "joint")
    code, out, _ = run(capsys, str(path), "--bisect", "--json")
    assert code == 0
    data = json.loads(out)
    report = data["report"]
    assert report["mode"] == "causal" and report["bisect"]["verdict"] == "confirmed"
    assert [sorted(group) for group in report["bisect"]["sources"]] == [
        ["injection:legacy-policy", "injection:vip-override"]]
    assert report["honesty"][-1].startswith("Only a seeded ablation verdict is causal")
    assert [piece["id"] for piece in data["context"]][:2] == ["system-prompt[0]", "system-prompt[1]"]
    assert data["sidecar"] == str(path) + ".backtrack.jsonl"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--call", "3"], "seq 3 is a pass record, not an llm_call"),
        (["--call", "999"], "seq 999 is not in the trace"),
        (["--samples", "1", "--ablate"], "--samples must be at least 2"),
        (["--model", "claude-x"], "--model names a live model"),
        (["--provider", "openai", "--ablate"], "--provider openai needs the model"),
        (["--max-probes", "0", "--bisect"], "--max-probes must be at least 1"),
    ],
)
def test_bad_requests_exit_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    path = copy_sample("planted-fact", tmp_path)
    code, out, err = run(capsys, str(path), *argv)
    assert code == 2 and out == ""
    assert err.startswith("fpdebug backtrack: error: ") and message in err
    assert "Traceback" not in err


def test_a_missing_trace_and_a_trace_without_calls_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope.jsonl"))
    assert code == 2 and "nope.jsonl" in err
    path = tmp_path / "no-calls.jsonl"
    lines = copy_sample("planted-fact", tmp_path).read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for line in lines if b'"kind":"llm_call"' not in line))
    code, _, err = run(capsys, str(path))
    assert code == 2 and "no llm_call with a reply" in err


def test_reruns_of_a_trace_without_a_scenario_name_the_flag_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.jsonl"
    with TraceFileSink.create(path, clock=FixedClock(T0)) as sink:
        agent = Agent("bare").injections(define_fact("f", data="x"))
        agent.run("hi", provider=ScriptedProvider(["ok"]), sink=sink)
    code, _, err = run(capsys, str(path), "--ablate")
    assert code == 2 and "pass --provider anthropic|openai --model M" in err
    assert not Path(str(path) + ".backtrack.jsonl").exists()  # refused before anything was written


def test_a_live_rerun_happens_only_when_asked_and_the_block_still_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FPDEBUG_BLOCK_LIVE_CALLS", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    path = copy_sample("planted-fact", tmp_path)
    code, out, err = run(capsys, str(path), "--ablate", "--provider", "anthropic", "--model", "claude-test")
    assert code == 2 and out == "" and "refused a live call to model 'claude-test'" in err
    lines = records(Path(str(path) + ".backtrack.jsonl"))
    assert lines[-1]["record"] == "end" and lines[-1]["status"] == "failed"


def test_trace_text_is_printed_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hostile.jsonl"
    agent = Agent("hostile").system_prompt("base").injections(
        define_fact("f\x1b[31m", data="\x1b]52;c;c3RlYWw=\x07 clipboard \u202e reversed"))
    reply = "done \x1b[2J\r overwritten \u202e"
    with TraceFileSink.create(path, clock=FixedClock(T0)) as sink:
        agent.run("hi \x1b[1m", provider=ScriptedProvider([reply]), sink=sink)
    code, out, _ = run(capsys, str(path), "--no-save")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out and "\x07" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out

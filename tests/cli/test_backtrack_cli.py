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
from fpdebug.errors import FpdebugError
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
    assert 'suspects (correlational: aligned with the answer, never "because")' in out
    assert "ANSWER   'I refunded the duplicate charge" in out
    assert "← READ     llm_call #5" in out and "← BORN" in out
    assert (
        "rode because `read_skill` call call_4 at iteration 3 activated it; cursor on refund by model-pick"
    ) in out
    assert (
        "injection 'refund-policy' — lease-ended: its until-skill-exit lease (granted by `check_policy`"
    ) in out
    assert "verdicts (causal tier" not in out  # no reruns were asked for
    sidecar = Path(str(path) + ".backtrack.jsonl")
    assert f"saved to {sidecar}" in out and [r["record"] for r in records(sidecar)] == ["report", "end"]


def test_a_lease_call_shows_who_granted_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("support", tmp_path)
    seq = next(r["seq"] for r in events(path, "llm_call") if r["iteration"] == 3)
    code, out, _ = run(capsys, str(path), "--call", str(seq), "--no-save")
    assert code == 0
    assert (
        "rode because lease (until-skill-exit) granted by `check_policy` call call_2 at iteration 2, "
        "tenant billing"
    ) in out
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
    for innocent in (
        "injection 'refund-limits'",
        "injection 'tone'",
        "injection 'format-answer'",
        "tool 'lookup_order'",
    ):
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
    assert "injection 'zone-audit' — parked: its map is parked" in out and "parked: parked" not in out
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
        ["injection:legacy-policy", "injection:vip-override"]
    ]
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
    agent = (
        Agent("hostile")
        .system_prompt("base")
        .injections(define_fact("f\x1b[31m", data="\x1b]52;c;c3RlYWw=\x07 clipboard \u202e reversed"))
    )
    reply = "done \x1b[2J\r overwritten \u202e"
    with TraceFileSink.create(path, clock=FixedClock(T0)) as sink:
        agent.run("hi \x1b[1m", provider=ScriptedProvider([reply]), sink=sink)
    code, out, _ = run(capsys, str(path), "--no-save")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out and "\x07" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out


# ----------------------------------------------------------------------------------------------
# A trace names code: never imported unless the user names it (audit a59)


def _naming(tmp_path: Path, module: str) -> Path:
    """The planted-fact sample, its run_start claiming it was built from ``module``."""
    path = tmp_path / "report-from-customer.fptrace.jsonl"
    lines = copy_sample("planted-fact", tmp_path).read_bytes().splitlines(keepends=True)
    start = json.loads(lines[1])
    start["options"] = {"module": module}
    lines[1] = (json.dumps(start) + "\n").encode()
    path.write_bytes(b"".join(lines))
    return path


def test_a_module_the_trace_names_is_not_imported_by_ablate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _naming(tmp_path, "helper.py")
    (tmp_path / "helper.py").write_text(
        'from pathlib import Path\nPath(__file__).with_name("PWNED").write_text("code ran at import")\n'
    )
    monkeypatch.chdir(tmp_path)
    for argv in (["--ablate"], ["--bisect"], ["--restore"], ["--ablate", "--provider", "scripted"]):
        code, out, err = run(capsys, str(path), *argv)
        assert code == 2 and out == "" and "Traceback" not in err
        assert "built from the module 'helper.py'" in err and "--module helper.py" in err
        assert not (tmp_path / "PWNED").exists()
    assert not Path(str(path) + ".backtrack.jsonl").exists()  # refused before anything was written
    code, out, _ = run(capsys, str(path), "--no-save")  # explaining alone never needs the module
    assert code == 0 and "suspects" in out and not (tmp_path / "PWNED").exists()


def test_a_user_module_reruns_when_named_with_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.demo import run_target

    agent = tmp_path / "my_planted.py"
    agent.write_text("from fpdebug.demo.planted_fact import USER_MESSAGES, build_agent, scripted_provider\n")
    trace = tmp_path / "mine.fptrace.jsonl"
    run_target(str(agent), trace_path=trace, clock=FixedClock(T0))
    code, _, err = run(capsys, str(trace), "--ablate", "--no-save")
    assert code == 2 and f"--module {agent}" in err
    code, out, err = run(capsys, str(trace), "--ablate", "--no-save", "--module", str(agent))
    assert (code, err) == (0, "")
    assert "CAUSAL: ablating injection 'vip-override' flipped the outcome in 3/3 seeded reruns" in out
    other = tmp_path / "other_agent.py"
    other.write_text(agent.read_text())
    code, _, err = run(capsys, str(trace), "--ablate", "--no-save", "--module", str(other))
    assert code == 2 and "--force-module" in err
    code, out, _ = run(capsys, str(trace), "--ablate", "--no-save", "--module", str(other), "--force-module")
    assert code == 0 and "[CAUSAL 3/3]" in out
    code, _, err = run(capsys, str(trace), "--ablate", "--force-module")
    assert code == 2 and "--force-module needs the module" in err


def _with_options(tmp_path: Path, options: dict[str, object]) -> Path:
    """The planted-fact sample, its run_start recording ``options`` instead of its own."""
    path = _naming(tmp_path, "unused.py")
    lines = path.read_bytes().splitlines(keepends=True)
    start = json.loads(lines[1])
    start["options"] = options
    lines[1] = (json.dumps(start) + "\n").encode()
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize(
    "options",
    [
        {"scenario": ["planted-fact"]},
        {"scenario": {"name": "planted-fact"}},
        {"module": ["helper.py"]},
        {"scenario": [], "module": {"a": 1}},
    ],
    ids=["scenario-list", "scenario-dict", "module-list", "empty-list-then-dict"],
)
def test_a_recorded_name_that_is_not_a_string_is_refused_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: dict[str, object]
) -> None:
    path = _with_options(tmp_path, options)
    code, out, err = run(capsys, str(path), "--ablate")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "not a name (a string)" in err and "--provider anthropic|openai" in err
    assert "built from the module" not in err and "planted-fact'" not in err  # never stringified into a name
    assert not Path(str(path) + ".backtrack.jsonl").exists()


@pytest.mark.parametrize("variant", [{"x": [1]}, "../../evil", ["single"], 3])
def test_a_recorded_option_the_scripted_model_does_not_take_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], variant: object
) -> None:
    path = _with_options(tmp_path, {"scenario": "planted-fact", "variant": variant})
    code, out, err = run(capsys, str(path), "--ablate")
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"variant={variant!r}" in err
    assert "one of 'single', 'joint', 'independent', 'unchanged'" in err
    assert not Path(str(path) + ".backtrack.jsonl").exists()
    # A variant it takes reruns that variant's model: 'unchanged' never approves, so nothing flips.
    path = _with_options(tmp_path, {"scenario": "planted-fact", "variant": "unchanged"})
    code, out, err = run(capsys, str(path), "--ablate", "--no-save")
    assert (code, err) == (0, "") and "variant='unchanged'" in out and "CAUSAL" not in out


def test_the_module_help_says_how_names_match(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["backtrack", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(same file or dotted name)" not in text
    assert "a file's name without .py, a dotted module's last part" in text


# ----------------------------------------------------------------------------------------------
# Damaged and extreme traces (audit a59)


def _damaged(tmp_path: Path, how: str) -> Path:
    """The planted-fact sample with its final llm_call (line 7) unreadable or torn."""
    lines = copy_sample("planted-fact", tmp_path).read_bytes().splitlines(keepends=True)
    assert json.loads(lines[7])["kind"] == "llm_call" and json.loads(lines[7])["route"] == "final"
    if how == "wrong-type":
        final = json.loads(lines[7])
        final["iteration"] = "two"
        lines[7] = (json.dumps(final) + "\n").encode()
    else:  # torn: the writer died in the middle of the final call
        lines = [*lines[:7], lines[7][:200]]
    path = tmp_path / f"{how}.fptrace.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("wrong-type", "the llm_call record at line 7 is unreadable"),
        ("torn", "the trace ends in a torn record at line 7"),
    ],
)
def test_an_unreadable_final_call_is_never_silently_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, problem: str
) -> None:
    path = _damaged(tmp_path, how)
    code, out, err = run(capsys, str(path), "--no-save")
    assert code == 1 and err == ""
    head = out.splitlines()[:4]
    assert head[1].startswith("⚠ target: this is not the last answer the trace recorded: ")
    assert problem in head[1]
    assert "Explaining llm_call #1 (seq 4)" in head[1] and "--call SEQ" in head[1]
    counted = "1 invalid" if how == "wrong-type" else "1 torn-tail at line 7"
    assert head[2].startswith("trace:  1 problem (") and counted in head[2]
    assert "  ⚠ target: this is not the last answer" in out.split("\nhonesty\n")[1]
    code, out, _ = run(capsys, str(path), "--no-save", "--json")
    report = json.loads(out)["report"]
    assert code == 1 and problem in report["target_note"] and report["honesty"][0].startswith("⚠ target: ")
    expected = {"invalid": 1} if how == "wrong-type" else {"torn_tail_line": 7, "torn_tail_bytes": 200}
    assert expected.items() <= report["read_problems"].items()
    code, out, _ = run(capsys, str(path), "--no-save", "--call", "4")  # asked for: no warning
    assert code == 0 and "⚠ target" not in out and "trace:  1 problem" in out


def test_a_healthy_trace_has_no_target_or_trace_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, str(copy_sample("planted-fact", tmp_path)), "--no-save")
    assert code == 0 and "⚠ target" not in out and "\ntrace:" not in out


def test_integers_beyond_64_bits_are_saved_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.backtrack import load_sidecar

    lines = copy_sample("planted-fact", tmp_path).read_bytes().splitlines(keepends=True)
    result = json.loads(lines[5])
    assert result["kind"] == "tool_result"
    result["iteration"] = 2**70  # valid JSON, a valid record: the chain shows it as a hop's iteration
    result["args"] = {"order_id": "ORD-7", "n": 2**70}
    lines[5] = (json.dumps(result) + "\n").encode()
    path = tmp_path / "big.fptrace.jsonl"
    path.write_bytes(b"".join(lines))
    code, out, err = run(capsys, str(path))
    assert (code, err) == (0, "") and "Traceback" not in out
    sidecar = load_sidecar(Path(str(path) + ".backtrack.jsonl"))
    saved = sidecar.backtracks[-1]
    assert saved.status == "complete" and sidecar.unreadable_lines == 0
    hops = [hop for card in saved.report.cards for hop in card.chain]
    assert any(hop.iteration == 2**70 for hop in hops)


def test_a_huge_answer_is_bounded_in_the_text_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.jsonl"
    answer = "A" * 50_000 + "THE END"
    with TraceFileSink.create(path, clock=FixedClock(T0)) as sink:
        Agent("long").injections(define_fact("f", data="x")).run(
            "hi", provider=ScriptedProvider([answer]), sink=sink
        )
    code, out, _ = run(capsys, str(path), "--no-save")
    assert code == 0 and "THE END" not in out and max(map(len, out.splitlines())) < 2_100
    assert f"… ({len(answer) - 2000} more characters)" in out
    code, out, _ = run(capsys, str(path), "--no-save", "--json")
    assert json.loads(out)["report"]["answer"] == answer  # the JSON keeps it whole


# ----------------------------------------------------------------------------------------------
# The debugger's pane gets the module only from the command line


class _Stop(FpdebugError):
    """Ends a command at the moment the debugger would take the screen."""


def test_view_hands_the_named_module_to_the_debugger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fpdebug.tui.app import FpdebugApp

    seen: list[object] = []

    def run_app(app: FpdebugApp) -> None:
        seen.append(app.source)

    monkeypatch.setattr(FpdebugApp, "run", run_app)
    path = copy_sample("planted-fact", tmp_path)
    assert main(["view", str(path)]) == 0
    assert main(["view", str(path), "--module", "agents/mine.py", "--force-module"]) == 0
    assert [(s.rerun_module, s.force_module) for s in seen] == [(None, False), ("agents/mine.py", True)]
    assert main(["view", str(path), "--force-module"]) == 2


def test_run_tui_lets_the_pane_rerun_the_module_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.commands import run as run_command
    from fpdebug.trace.writer import TraceWriter
    from fpdebug.tui import drive

    seen: list[object] = []

    class Driver:
        def __init__(self, scenario: object, *, trace_path: Path, **_: object) -> None:
            TraceWriter.create(trace_path).close()  # the header the debugger waits for

        def stop(self) -> None:
            pass

        def wait(self, timeout: float | None = None) -> bool:
            return True

    class App:
        def __init__(self, source: object, **_: object) -> None:
            seen.append(source)

        def run(self) -> None:
            raise _Stop("the screen would be taken here")

    monkeypatch.setattr(run_command, "is_terminal", lambda: True)
    monkeypatch.setattr(drive, "RunDriver", Driver)
    monkeypatch.setattr(drive, "DriveApp", App)
    agent = tmp_path / "my_planted.py"
    agent.write_text("from fpdebug.demo.planted_fact import USER_MESSAGES, build_agent, scripted_provider\n")
    assert main(["run", str(agent), "--tui", "--trace", str(tmp_path / "a.jsonl")]) == 2
    assert main(["run", "planted-fact", "--tui", "--trace", str(tmp_path / "b.jsonl")]) == 2
    assert "the screen would be taken here" in capsys.readouterr().err
    assert [getattr(s, "rerun_module", None) for s in seen] == [str(agent), None]

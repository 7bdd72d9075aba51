"""``fpdebug diff A B``: exit codes as diff(1), the text and JSON forms, bad input, untrusted text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import leases
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.clock import FixedClock
from tests.conftest import T0
from tests.views.run_diff_helpers import leases_other_rate, run, support_without_tone

ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7" * 30


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """The support demo, and the same demo with its ``tone`` steering left out."""
    return run("support", tmp_path / "a.jsonl"), run(support_without_tone(), tmp_path / "b.jsonl")


def test_identical_runs_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run("support", tmp_path / "a.jsonl", "one"), run("support", tmp_path / "b.jsonl", "two")
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"A: {a} run 1 of 1 (one): completed, 1 turn(s), 5 iteration(s)"
    assert out[-1] == "identical: the two runs agree at every point (8 compared)"
    assert main(["diff", str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identical"] is True


def test_different_runs_exit_1_with_the_first_divergence(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", *map(str, pair)]) == 1
    out = capsys.readouterr().out
    assert "first divergence: T1·I1, context pass\n  injection tone\n" in out
    assert "B does not declare it: its run left it out (run_start.options.without)" in out
    assert "  T1·I2    context pass: injection tone; request: segment steering tone\n" in out


def test_the_json_form_is_byte_identical_and_documented(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", *map(str, pair), "--json"]) == 1
    first = capsys.readouterr().out
    assert main(["diff", *map(str, pair), "--json"]) == 1
    assert capsys.readouterr().out == first
    document = json.loads(first)
    assert list(document) == sorted(document)
    assert (document["schema"], document["version"], document["identical"]) == ("fpdebug.run-diff", 1, False)
    divergence = document["first_divergence"]
    assert (divergence["point"], divergence["stage"]) == ("T1·I1", "context")
    assert divergence["differences"][0]["subject"] == "tone"
    assert str(pair[0]) not in first  # no paths in the compared content


def test_runs_are_chosen_by_number_or_id(pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = map(str, pair)
    assert main(["diff", a, b, "--run-a", "1", "--run-b", "run-a"]) == 1
    capsys.readouterr()
    assert main(["diff", a, b, "--run-b", "3"]) == 2
    assert "has no run '3'; its runs are: 1 (run-a)" in capsys.readouterr().err


def test_a_file_of_several_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.jsonl"
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        for run_id, agent in (("r1", leases.build_agent()), ("r2", leases.build_agent().max_iterations(2))):
            agent.run(
                leases.USER_MESSAGES,
                provider=leases.scripted_provider(),
                sink=sink,
                clock=clock,
                run_id=run_id,
            )
    assert main(["diff", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "note: A's file holds 2 runs: run 1 is compared (--run-a chooses another)" in out
    assert main(["diff", str(path), str(path), "--run-b", "r2", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["b"] == {
        "iterations": 2,
        "run": 2,
        "runs_in_file": 2,
        "source": "fpdebug",
        "status": "completed",
        "turns": 1,
    }
    declared = [(d["kind"], d["a"], d["b"]) for d in document["declared"]]
    assert declared == [("max-iterations", "6", "2")]
    assert document["first_divergence"]["point"] == "T1·I2"  # the last pass B was allowed
    lone = [p["point"] for p in document["points"] if p["present"] != "both"]
    assert lone == ["T1·I3"]


def _without_last_line(path: Path) -> Path:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))
    return path


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.unlink(), "no such file"),
        (lambda p: p.write_bytes(b""), "the file is empty, not an fpdebug trace"),
        (lambda p: p.write_bytes(b"hello, world\n"), "not an fpdebug trace header"),
        (
            lambda p: p.write_bytes(p.read_bytes() + b'{"kind":"pass","seq":\n'),
            "has 1 invalid line(s) (line 29)",
        ),
        (lambda p: p.write_bytes(p.read_bytes() + b'{"kind":"tu'), "an unfinished last line"),
        (
            lambda p: p.write_bytes(p.read_bytes().replace(b'"active_ids":', b'"active_idz":', 1)),
            "has 1 invalid line(s) (line 4)",
        ),
        (
            lambda p: p.write_bytes(p.read_bytes().replace(b'"by":"entry"', b'"by":7', 1)),
            "has 1 invalid line(s) (line 3)",
        ),
        (_without_last_line, "has no run_end: it is still being written"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    pair: tuple[Path, Path], damage: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    damage(b)  # type: ignore[operator]
    assert main(["diff", str(a), str(b)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("fpdebug diff: error: ") and message in captured.err
    assert "Traceback" not in captured.err


def test_partial_compares_a_run_still_being_written(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    _without_last_line(b)
    assert main(["diff", str(a), str(b), "--partial"]) == 1
    out = capsys.readouterr().out
    assert "B: " in out and ": running, 1 turn(s)" in out
    assert "  run end  end: status" in out


def test_trace_text_is_escaped_and_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = run("leases", tmp_path / "a.jsonl")
    b = run(leases_other_rate(), tmp_path / "b.jsonl")
    hostile = f"\\u001b[2J\\u001b]0;owned\\u0007 key {ANTHROPIC_KEY}"
    b.write_bytes(b.read_bytes().replace(b"EUR/USD 1.0900", hostile.encode()))
    for extra in ([], ["--json"]):
        assert main(["diff", str(a), str(b), *extra]) == 1
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out
        assert ANTHROPIC_KEY not in out
        assert "[redacted]" in out or "[REDACTED" in out


def test_a_foreign_file_is_imported_on_the_fly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    otlp = Path(__file__).resolve().parents[1] / "ingest" / "fixtures" / "otlp"
    openai, anthropic = otlp / "openai_v2_latest.otlp.json", otlp / "anthropic_sdk.otlp.pb"
    assert main(["diff", str(openai), str(openai)]) == 0
    out = capsys.readouterr().out
    assert ", imported from otlp" in out.splitlines()[0]
    assert "note: A has no context passes (not recorded by otlp): only what it recorded is compared" in out
    assert main(["diff", str(openai), str(anthropic), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["a"]["source"] == "otlp"
    first = document["first_divergence"]
    assert (first["point"], first["stage"]) == ("T1·I1", "request")
    assert [(d["kind"], d["a"], d["b"]) for d in first["differences"][:2]] == [
        ("provider", "openai", "anthropic"),
        ("model", "gpt-4o-mini", "claude-sonnet-4-5"),
    ]

"""``fpdebug run`` and ``fpdebug demo``: traces that ``fpdebug validate`` accepts, summaries, clear errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import SCENARIOS, load_scenario
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    LlmCallEvent,
    RunEndEvent,
    RunStartEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
)


def events_of(path: Path) -> list[TraceEvent]:
    with TraceReader(path) as reader:
        return [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_run_writes_a_trace_validate_accepts(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / f"{name}.jsonl"
    assert main(["run", name, "--trace", str(trace)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"trace: {trace}"
    turns = len(load_scenario(name).user_messages)
    assert f"of {name} completed: {turns} turn{'s' if turns > 1 else ''}," in out[1]
    final = [e for e in events_of(trace) if isinstance(e, TurnEndEvent)][-1].final_content
    assert out[1].endswith(f"Final answer: {final}")
    assert main(["validate", str(trace)]) == 0


def test_demo_lists_the_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert lines[0].endswith(load_scenario("support").description)


def test_demo_runs_the_default_scenario_into_a_fresh_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    assert main(["demo"]) == 0  # a second run never clobbers the first
    traces = sorted(tmp_path.glob("support-*.fptrace.jsonl"))
    assert len(traces) == 2
    for trace in traces:
        assert main(["validate", str(trace)]) == 0
    assert "Run " in capsys.readouterr().out


def test_demo_write_samples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--write-samples", str(tmp_path / "samples")]) == 0
    assert sorted(p.name for p in (tmp_path / "samples").iterdir()) == sorted(
        f"{n}.fptrace.jsonl" for n in SCENARIOS
    )
    assert main(["demo", "support", "--write-samples", str(tmp_path / "x")]) == 2
    assert "name none" in capsys.readouterr().err


def test_run_with_messages_and_an_iteration_limit(tmp_path: Path) -> None:
    trace = tmp_path / "short.jsonl"
    code = main(
        [
            "run",
            "support",
            "--trace",
            str(trace),
            "--max-iterations",
            "2",
            "--message",
            "Refund B-2 please",
            "Thanks",
        ]
    )
    assert code == 0
    events = events_of(trace)
    assert [e.user_message for e in events if isinstance(e, TurnStartEvent)] == [
        "Refund B-2 please",
        "Thanks",
    ]
    (start,) = [e for e in events if isinstance(e, RunStartEvent)]
    assert start.max_iterations == 2
    ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert ends[0].stopped_early is not None and ends[0].stopped_early.iteration == 2


def test_replay_through_the_cli_reproduces_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded, replayed = tmp_path / "rec.jsonl", tmp_path / "rep.jsonl"
    assert main(["run", "support", "--trace", str(recorded), "--run-id", "orig"]) == 0
    assert (
        main(
            [
                "run",
                "support",
                "--provider",
                "replay",
                "--replay-from",
                str(recorded),
                "--trace",
                str(replayed),
            ]
        )
        == 0
    )
    first, second = events_of(recorded), events_of(replayed)
    assert [e.kind for e in first] == [e.kind for e in second]
    assert second[0].run_id == "orig"  # a replay keeps the recorded run id
    assert {e.provider for e in second if isinstance(e, LlmCallEvent)} == {"replay"}
    out = capsys.readouterr().out
    assert out.count("Final answer: I refunded the duplicate charge of $42.00") == 2


def test_a_diverging_replay_fails_with_exit_2_and_keeps_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded, replayed = tmp_path / "rec.jsonl", tmp_path / "rep.jsonl"
    assert main(["run", "leases", "--trace", str(recorded)]) == 0
    code = main(
        ["run", "support", "--provider", "replay", "--replay-from", str(recorded), "--trace", str(replayed)]
    )
    assert code == 2
    captured = capsys.readouterr()
    assert "diverged: system_prompt" in captured.err
    assert f"trace: {replayed}" in captured.out and "failed" in captured.out
    end = events_of(replayed)[-1]
    assert isinstance(end, RunEndEvent) and end.status == "failed"
    assert main(["validate", str(replayed)]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "nowhere"], "is neither a scenario"),
        (["run", "./nowhere.py"], "no such file"),
        (["run", "support", "--provider", "replay"], "needs the trace to replay (--replay-from TRACE)"),
        (["run", "support", "--provider", "openai"], "needs a model (--model NAME)"),
        (["demo", "nowhere"], "no scenario named 'nowhere'"),
    ],
)
def test_bad_requests_are_clear_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_existing_trace_is_not_overwritten_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("precious\n")
    for command in ("run", "demo"):
        extra = ["--no-tui"] if command == "demo" else []
        assert main([command, "leases", *extra, "--trace", str(trace)]) == 2
        err = capsys.readouterr().err
        assert "already exists" in err and trace.read_text() == "precious\n"
        # Advice in the command line's words, not the Python API's (overwrite=True).
        assert "pass --overwrite to replace it" in err and "overwrite=True" not in err
    assert main(["run", "leases", "--trace", str(trace), "--overwrite"]) == 0


def test_a_users_module_runs_and_its_output_is_printed_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "shouty.py"
    module.write_text(
        textwrap.dedent(
            """
            from fpdebug.engine.agent import Agent
            from fpdebug.engine.providers.scripted import ScriptedProvider

            USER_MESSAGES = ["hi"]

            def build_agent():
                return Agent("shouty")

            def scripted_provider():
                return ScriptedProvider(reply="\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07gotcha")
            """
        )
    )
    trace = tmp_path / "shouty.jsonl"
    assert main(["run", str(module), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "Final answer: \\x1b[2J\\x1b]52;c;ZXZpbA==\\x07gotcha" in out
    (start,) = [e for e in events_of(trace) if isinstance(e, RunStartEvent)]
    assert start.options["module"] == str(module)


def test_a_failing_user_model_is_recorded_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "short_script.py"
    module.write_text(
        textwrap.dedent(
            '''
            from fpdebug.engine.agent import Agent
            from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply

            USER_MESSAGES = ["hi"]

            def echo(text: str) -> str:
                """Echo."""
                return text

            def build_agent():
                return Agent("short").tools(echo)

            def scripted_provider():
                return ScriptedProvider([ScriptedReply.tool_call("echo", {"text": "x"})])
            '''
        )
    )
    trace = tmp_path / "short.jsonl"
    assert main(["run", str(module), "--trace", str(trace)]) == 2
    assert "scripted 1 reply but received request #2" in capsys.readouterr().err
    end = events_of(trace)[-1]
    assert isinstance(end, RunEndEvent) and end.error is not None and end.error.type == "ScriptExhaustedError"

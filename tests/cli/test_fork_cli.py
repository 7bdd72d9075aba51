"""``fpdebug fork``: the fork's summary and linked trace, exit codes, and every refusal as exit 2 (in-process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import run_target
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from fpdebug.ingest.agentfootprint import import_agentfootprint_file
from fpdebug.trace.clock import FixedClock
from tests.conftest import T0
from tests.fakeservers import FakeResponse, FakeServer, openai_completion

FIXTURES = Path(__file__).parent.parent / "ingest" / "fixtures"
_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _never_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    path = tmp_path / "support.fptrace.jsonl"
    run_target("support", trace_path=path, clock=FixedClock(T0), run_id="parent-support")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["fork", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_fork_prints_its_parent_answers_and_first_difference(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "fork.fptrace.jsonl"
    code, out, err = run(
        capsys,
        str(parent),
        "--pass",
        "3",
        "--drop-injection",
        "refund-policy",
        "--provider",
        "scripted",
        "-o",
        str(out_path),
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"fork: {out_path}"
    assert lines[1] == (
        f"parent: {parent} run parent-support, forked at pass 3 of turn 1 (2 calls replayed); "
        "edits: drop-injection refund-policy; provider = 'scripted'"
    )
    assert lines[2].startswith("continued on scripted: run ") and "completed, 5 call(s)" in lines[2]
    assert "parent's final answer: I refunded the duplicate charge of $42.00" in out
    assert "first difference: call 3 (turn 1, pass 3): system_prompt" in out
    assert lines[-1] == f"see `fpdebug diff {parent} {out_path}`"
    assert main(["validate", str(out_path)]) == 0
    start = json.loads(out_path.read_text().splitlines()[1])
    assert start["kind"] == "run_start"
    assert start["fork_of"] == {
        "trace": parent.name,
        "run_id": "parent-support",
        "turn": 1,
        "at_pass": 3,
        "edits": [
            {"kind": "drop-injection", "target": "refund-policy"},
            {"kind": "provider", "value": "scripted"},
        ],
        "provider": "scripted",
    }


def test_a_replay_that_diverges_exits_1_and_says_where(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        str(parent),
        "--pass",
        "3",
        "--tool-result",
        "call_2=refused",
        "-o",
        str(tmp_path / "f.fptrace.jsonl"),
    )
    assert (code, err) == (1, "")
    assert "continued on replay: run " in out and " failed, 3 call(s)" in out
    assert "ReplayDivergenceError: diverged at call 3: the recording has no answer for this request" in out
    assert "fork's final answer:   (no final answer)" in out


def test_the_default_output_goes_beside_the_parent(parent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(parent), "--pass", "2", "--provider", "scripted")
    expected = parent.with_name("support.fork-pass2.fptrace.jsonl")
    assert code == 0 and out.startswith(f"fork: {expected}\n") and expected.is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pass", "3", "--drop-injection", "refund-polcy"], "did you mean 'refund-policy'?"),
        (
            ["--pass", "9", "--drop-injection", "tone"],
            "pass 9 is out of range: turn 1 of run 'parent-support' has passes 1..5",
        ),
        (["--pass", "3", "--tool-result", "call_2"], "write it CALL_ID=TEXT"),
        (["--pass", "3"], "a fork needs at least one edit"),
        (["--pass", "3", "--provider", "openai", "--model", "gpt-test"], "pass --live to allow it"),
        (["--pass", "2", "--turn", "2", "--provider", "scripted"], "turn 2 is out of range"),
    ],
)
def test_bad_input_exits_2_with_the_message(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out_path = tmp_path / "f.fptrace.jsonl"
    code, out, err = run(capsys, str(parent), *argv, "-o", str(out_path))
    assert code == 2 and out == ""
    assert err.startswith("fpdebug fork: error: ") and message in err
    assert not out_path.exists()


def test_an_imported_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "imported.fptrace.jsonl"
    import_agentfootprint_file(FIXTURES / "agentfootprint" / "support-refund.recording.json", trace)
    code, out, err = run(capsys, str(trace), "--pass", "1", "--provider", "scripted")
    assert code == 2 and out == ""
    assert "was imported from agentfootprint" in err and "cannot be forked" in err


def test_an_existing_output_is_kept_without_overwrite(
    parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "f.fptrace.jsonl"
    out_path.write_text("keep me\n")
    code, _, err = run(capsys, str(parent), "--pass", "2", "--provider", "scripted", "-o", str(out_path))
    assert code == 2 and "pass --overwrite" in err and out_path.read_text() == "keep me\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A fake OpenAI API on 127.0.0.1, with nothing in the environment to send traffic elsewhere."""
    for name in (*_PROXIES, "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", BLOCK_ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with FakeServer() as fake:
        yield fake


def test_a_live_continuation_answers_from_the_pass_and_prints_its_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    parent = tmp_path / "planted.fptrace.jsonl"
    run_target("planted-fact", trace_path=parent, clock=FixedClock(T0), run_id="parent-planted")
    server.handler = lambda request: FakeResponse(
        200,
        openai_completion(
            content="DECLINED: live.", prompt_tokens=100, completion_tokens=10, model="gpt-4o-mini"
        ),
    )
    out_path = tmp_path / "live.fptrace.jsonl"
    argv = [str(parent), "--pass", "2", "--drop-injection", "vip-override", "--provider", "openai"]
    argv += ["--model", "gpt-4o-mini", "--base-url", f"{server.url}/v1", "-o", str(out_path)]
    code, out, err = run(capsys, *argv)
    assert server.requests == []  # refused without --live: nothing was sent
    assert code == 2 and "pass --live to allow it" in err
    code, out, err = run(capsys, *argv, "--live")
    assert (code, err) == (0, "")
    # Pass 1 replayed from the recording; only pass 2 went to the model, without the planted text.
    assert len(server.requests) == 1
    assert "VIP override" not in server.requests[0].body.decode()
    assert "fork's final answer:   DECLINED: live." in out
    assert "cost of the live calls: $" in out and "over 1 call(s), 110 tokens" in out
    assert main(["validate", str(out_path)]) == 0

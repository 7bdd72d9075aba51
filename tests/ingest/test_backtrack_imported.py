"""Backtracking an imported run: correlational provenance from the recorded segments, and live
ablation reruns only with a provider the user names, through the real SDKs against a local fake server.

The fake server answers the recorded answer while the Tokyo weather result is in the request, and
something else once it is gone: the verdict must convict ``get_weather`` and acquit ``calculate``.
Nothing here reaches the network (the servers listen on 127.0.0.1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from fpdebug.ingest.agentfootprint import import_agentfootprint_file
from fpdebug.ingest.otlp import import_otlp
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_message,
    openai_completion,
)

FIXTURES = Path(__file__).parent / "fixtures"
OTHER_ANSWER = "I cannot tell without the weather in both cities."
_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", BLOCK_ENV_VAR)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtrack", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _final_answer(trace: Path) -> str:
    with TraceReader(trace) as reader:
        calls = [record for _, record in reader.iter_records() if isinstance(record, LlmCallEvent)]
    reply = calls[-1].response
    assert reply is not None
    return reply.content


def _otlp(tmp_path: Path, fixture: str) -> Path:
    trace = tmp_path / "run.fptrace.jsonl"
    import_otlp([FIXTURES / "otlp" / fixture], trace)
    return trace


def _knows_tokyo(request: RecordedRequest) -> bool:
    # The tool result with Tokyo's temperature (JSON inside JSON: its quotes are escaped).
    return '\\"temp_c\\": 22' in request.body.decode()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A fake model API on 127.0.0.1, with nothing in the environment to send its traffic elsewhere."""
    for name in (*_ENV, "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    with FakeServer() as fake:
        yield fake


@pytest.mark.parametrize("fixture", ["openai_v2_latest.otlp.pb", "anthropic_sdk.otlp.json"])
def test_an_imported_otlp_run_backtracks_correlationally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture: str
) -> None:
    trace = _otlp(tmp_path, fixture)
    code, out, err = run(capsys, str(trace), "--no-save")
    assert (code, err) == (0, "")
    assert "tier:   correlational: chains and rankings only, no reruns" in out
    assert "result of `get_weather`" in out and "← RETURNED `get_weather`" in out
    assert "⚠ imported from otlp: pass, cursor_move, lease_grant" in out
    assert "not recorded by otlp; chains rest on the recorded segments only (correlational)" in out
    code, out, _ = run(capsys, str(trace), "--no-save", "--json")
    report = json.loads(out)["report"]
    assert report["mode"] == "correlational"
    assert report["honesty"][0].startswith("⚠ imported from otlp")


def test_an_imported_agentfootprint_run_backtracks_correlationally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.fptrace.jsonl"
    import_agentfootprint_file(FIXTURES / "agentfootprint" / "support-refund.recording.json", trace)
    code, out, err = run(capsys, str(trace), "--no-save")
    assert (code, err) == (0, "")
    assert "tier:   correlational" in out
    assert "⚠ imported from agentfootprint: finding not recorded by agentfootprint" in out


def test_no_live_call_without_the_provider_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even with the SDKs' own endpoint variables pointing at a server that would answer, nothing
    # is sent unless --provider names a live model.
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.handler = lambda request: FakeResponse(200, openai_completion(content="x"))
    trace = _otlp(tmp_path, "openai_v2_latest.otlp.pb")
    for flags in (["--ablate"], ["--bisect"], ["--restore"], ["--ablate", "--model", "gpt-4o-mini"]):
        code, out, err = run(capsys, str(trace), *flags)
        assert code == 2 and out == "", flags
        assert "--provider" in err
    assert server.requests == []
    assert not Path(f"{trace}.backtrack.jsonl").exists()


def test_a_live_openai_ablation_convicts_the_segment_the_answer_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    trace = _otlp(tmp_path, "openai_v2_latest.otlp.pb")
    answer = _final_answer(trace)

    def handler(request: RecordedRequest) -> FakeResponse:
        text = answer if _knows_tokyo(request) else OTHER_ANSWER
        return FakeResponse(200, openai_completion(content=text, prompt_tokens=100, completion_tokens=10))

    server.handler = handler
    code, out, err = run(
        capsys, str(trace), "--ablate", "--samples", "2", "--no-save",
        "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", f"{server.url}/v1",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert "reruns: openai model gpt-4o-mini (live, as asked)" in out
    assert "baseline: 0/2 flipped with no ablation (stable)" in out
    assert "CAUSAL: ablating tool 'get_weather' flipped the outcome in 2/2 seeded reruns" in out
    assert "NOT CONFIRMED: ablating tool 'calculate'" in out
    # Baseline, then one probe per suspect: 2 reruns each, each a live call with its tokens.
    assert len(server.requests) == 6
    assert "live calls (sent to openai model gpt-4o-mini (live, as asked))" in out
    assert "6 live calls · 660 tokens in all (600 in / 60 out) · 110 per rerun" in out
    bodies = [request.json() for request in server.requests]
    assert len({body["seed"] for body in bodies[:2]}) == 2  # each of a probe's reruns has its own seed
    assert all(body["model"] == "gpt-4o-mini" for body in bodies)
    # The baseline resends the recorded request: its messages are the recorded ones, nothing added.
    baseline = bodies[0]["messages"]
    roles = ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [message["role"] for message in baseline] == roles
    assert sum(_knows_tokyo(request) for request in server.requests) == 4  # all but get_weather's probe
    code, out, _ = run(
        capsys, str(trace), "--ablate", "--samples", "2", "--no-save", "--json",
        "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", f"{server.url}/v1",
    )  # fmt: skip
    live = json.loads(out)["live_calls"]
    assert (live["calls"], live["tokens"], live["tokens_per_rerun"]) == (6, 660, 110.0)


def test_a_live_anthropic_ablation_convicts_the_segment_the_answer_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    trace = _otlp(tmp_path, "anthropic_sdk.otlp.json")
    answer = _final_answer(trace)

    def handler(request: RecordedRequest) -> FakeResponse:
        text = answer if _knows_tokyo(request) else OTHER_ANSWER
        body = anthropic_message([{"type": "text", "text": text}], input_tokens=300, output_tokens=20)
        return FakeResponse(200, body)

    server.handler = handler
    code, out, err = run(
        capsys, str(trace), "--ablate", "--samples", "2",
        "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--base-url", server.url,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert "CAUSAL: ablating tool 'get_weather' flipped the outcome in 2/2 seeded reruns" in out
    assert "live calls (sent to anthropic model claude-sonnet-4-5 (live, as asked))" in out
    assert "6 live calls · 1920 tokens in all (1800 in / 120 out) · 320 per rerun" in out
    assert all(request.path == "/v1/messages" for request in server.requests)
    assert Path(f"{trace}.backtrack.jsonl").exists()  # the verdicts are saved beside the trace


def test_the_block_still_wins_over_the_provider_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")
    trace = _otlp(tmp_path, "openai_v2_latest.otlp.pb")
    code, _, err = run(
        capsys, str(trace), "--ablate", "--no-save",
        "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", f"{server.url}/v1",
    )  # fmt: skip
    assert code == 2 and "refused a live call" in err
    assert server.requests == []

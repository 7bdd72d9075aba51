"""Issue 17: a refusal is flagged in ``fpdebug summary`` and as a timeline badge, never a silent answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.views.facts import badges_of, row_facts
from tests.engine.conftest import fake_server  # noqa: F401  (the fake API server fixture)
from tests.engine.test_agent import record
from tests.fakeservers import FakeResponse, FakeServer, anthropic_message


def claude(server: FakeServer) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key="k", base_url=server.url, max_retries=0)


def test_a_refusal_shows_in_summary_and_the_tui_timeline(
    fake_server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_server.handler = lambda request: FakeResponse(body=anthropic_message([], stop_reason="refusal"))
    run = record(Agent("a"), "help me with something bad", claude(fake_server), tmp_path)
    assert main(["summary", str(run.path)]) == 0
    assert "refused: turn 1 (refusal)" in capsys.readouterr().out
    assert main(["summary", "--json", str(run.path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["refusals"] == ["turn 1 (refusal)"]
    reader = TraceReader(run.path)
    model = RunModel(reader)
    model.update()
    (iteration,) = model.iterations()
    assert "refused" in badges_of(model, iteration, row_facts(reader, iteration))


def test_an_old_anthropic_calls_input_tokens_include_the_cache_in_the_tui() -> None:
    # Written before Usage.input_includes_cache: the TUI shows the same number as summary and export.
    from datetime import UTC, datetime

    from fpdebug.trace.schema import LlmCallEvent, LlmRequest, LlmResponse, Usage
    from fpdebug.tui.widgets.events import summarize

    usage = Usage(input_tokens=20, output_tokens=5, cache_read_tokens=1000, cache_write_tokens=300)
    call = LlmCallEvent(
        seq=2,
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        run_id="r",
        call_index=1,
        provider="anthropic",
        model="claude",
        request=LlmRequest(),
        response=LlmResponse(usage=usage),
    )
    assert "1,320 in / 5 out" in summarize(call) or "1320 in / 5 out" in summarize(call)

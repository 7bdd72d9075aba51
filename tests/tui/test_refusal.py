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
from fpdebug.tui.facts import badges_of, row_facts
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

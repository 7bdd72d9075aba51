"""recorded_module_loader: what reruns load for a run (the backtrack command and the TUI's pane share it)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from fpdebug.demo import recorded_module_loader
from fpdebug.errors import ScenarioError

MODULE = textwrap.dedent(
    """
    from fpdebug.engine.agent import Agent

    MARK = "beside the trace"

    def build_agent():
        return Agent("mine")
    """
)


def test_a_scenario_loads_by_name(tmp_path: Path) -> None:
    module = recorded_module_loader(tmp_path / "t.fptrace.jsonl")("support")
    assert module.__name__ == "fpdebug.demo.support"


def test_a_relative_path_that_is_not_here_loads_from_beside_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "my_agent.py").write_text(MODULE, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the run recorded "my_agent.py" from the folder of its trace
    assert not Path("my_agent.py").exists() and os.getcwd() == str(elsewhere)
    module = recorded_module_loader(traces / "run.fptrace.jsonl")("my_agent.py")
    assert module.MARK == "beside the trace"


def test_what_loads_nowhere_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        recorded_module_loader(tmp_path / "t.fptrace.jsonl")("missing_agent.py")

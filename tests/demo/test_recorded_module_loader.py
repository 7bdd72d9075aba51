"""recorded_module_loader: what reruns load for a run (the backtrack command and the TUI's pane share it).

A trace is untrusted: the module its ``run_start.options`` names is never imported because the trace
names it. Built-in scenarios load by name; a user's module loads only when the user names it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from fpdebug.demo import recorded_module_loader
from fpdebug.errors import ScenarioError

MODULE = textwrap.dedent(
    """
    from fpdebug.engine.agent import Agent

    MARK = "the user's module"

    def build_agent():
        return Agent("mine")
    """
)

HOSTILE = 'from pathlib import Path\nPath(__file__).with_name("PWNED").write_text("code ran at import")\n'
"""The auditor's PoC: a module that writes a file the moment it is imported."""


def _hostile(folder: Path, name: str = "helper.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(HOSTILE, encoding="utf-8")
    return folder / "report-from-customer.fptrace.jsonl"


def test_a_scenario_loads_by_name(tmp_path: Path) -> None:
    module = recorded_module_loader(tmp_path / "t.fptrace.jsonl")("support")
    assert module.__name__ == "fpdebug.demo.support"


@pytest.mark.parametrize("cwd", ["the trace's folder", "elsewhere"])
def test_a_module_the_trace_names_is_never_imported_without_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cwd: str
) -> None:
    trace = _hostile(tmp_path / "ticket")
    where = trace.parent if cwd == "the trace's folder" else tmp_path / "elsewhere"
    where.mkdir(exist_ok=True)
    monkeypatch.chdir(where)  # the old loader tried the cwd first, then beside the trace
    load = recorded_module_loader(trace)
    with pytest.raises(ScenarioError) as refused:
        load("helper.py")
    message = str(refused.value)
    assert "'helper.py'" in message and "never imports code because a trace names it" in message
    assert f"fpdebug backtrack {trace} --ablate --module helper.py" in message
    assert not (trace.parent / "PWNED").exists()
    with pytest.raises(ScenarioError, match="--module"):
        load(str(trace.parent / "helper.py"))  # an absolute path the trace recorded: refused too
    assert not (trace.parent / "PWNED").exists()


def test_a_dotted_module_the_trace_names_is_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "evil_pkg_for_fpdebug"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(HOSTILE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ScenarioError, match="--module evil_pkg_for_fpdebug.agent"):
        recorded_module_loader(tmp_path / "t.jsonl")("evil_pkg_for_fpdebug.agent")
    assert "evil_pkg_for_fpdebug.agent" not in sys.modules and not (package / "PWNED").exists()


def test_the_refusal_names_the_command_it_was_given_and_quotes_for_the_shell(tmp_path: Path) -> None:
    load = recorded_module_loader(tmp_path / "t.jsonl", command="fpdebug view TRACE")
    with pytest.raises(ScenarioError) as refused:
        load("my agent; rm -rf ~.py")
    assert f"fpdebug view {tmp_path / 't.jsonl'} --module 'my agent; rm -rf ~.py'" in str(refused.value)


def test_the_module_the_user_names_loads_when_it_is_the_recorded_one(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "my_agent.py").write_text(MODULE, encoding="utf-8")
    named = str(agents / "my_agent.py")
    # Recorded from another folder (a relative path): the same file name is the same module.
    module = recorded_module_loader(tmp_path / "t.jsonl", module=named)("agents/my_agent.py")
    assert module.MARK == "the user's module"


def test_another_module_than_the_recorded_one_needs_force(tmp_path: Path) -> None:
    trace = _hostile(tmp_path / "ticket")
    mine = tmp_path / "mine" / "other_agent.py"
    mine.parent.mkdir()
    mine.write_text(MODULE, encoding="utf-8")
    with pytest.raises(ScenarioError, match="not the module this trace's run recorded .*--force-module"):
        recorded_module_loader(trace, module=str(mine))("helper.py")
    with pytest.raises(ScenarioError, match="--force-module"):
        recorded_module_loader(trace, module=str(mine))("support")  # a built-in run, another module named
    forced = recorded_module_loader(trace, module=str(mine), force=True)("helper.py")
    assert forced.MARK == "the user's module"
    assert not (trace.parent / "PWNED").exists()


def test_a_named_module_that_does_not_exist_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        recorded_module_loader(tmp_path / "t.jsonl", module="missing_agent.py")("missing_agent.py")


def test_names_match_by_module_name_alone(tmp_path: Path) -> None:
    """The check is the module's name (a file's stem, a dotted name's last part), as --module's help says:
    it catches a wrong module named by mistake, it is not where trust comes from (naming it is)."""
    mine = tmp_path / "elsewhere" / "login.py"
    mine.parent.mkdir()
    mine.write_text(MODULE, encoding="utf-8")
    for recorded in ("agents/login.py", "agents.login", "login"):
        loaded = recorded_module_loader(tmp_path / "t.jsonl", module=str(mine))(recorded)
        assert loaded.MARK == "the user's module"
    with pytest.raises(ScenarioError, match="--force-module"):
        recorded_module_loader(tmp_path / "t.jsonl", module=str(mine))("agents.logout")


@pytest.mark.parametrize("name", [["planted-fact"], {"module": "helper.py"}, 7])
def test_a_recorded_name_that_is_not_a_string_loads_nothing(tmp_path: Path, name: object) -> None:
    for module in (None, "helper.py"):
        load = recorded_module_loader(tmp_path / "t.jsonl", module=module, force=True)
        with pytest.raises(ScenarioError, match="not a name") as refused:
            load(name)  # type: ignore[arg-type]
        assert "built from the module" not in str(refused.value)


@pytest.mark.parametrize("variant", [{"x": [1]}, "../../evil", None])
def test_the_planted_fact_model_refuses_a_variant_it_does_not_know(variant: object) -> None:
    from fpdebug.demo.planted_fact import scripted_provider
    from fpdebug.errors import DefinitionError

    with pytest.raises(DefinitionError, match="unknown planted-fact variant .*use one of single, joint"):
        scripted_provider(variant=variant)  # type: ignore[arg-type]

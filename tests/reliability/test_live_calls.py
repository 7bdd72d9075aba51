"""Never a silent live call, and no code execution from trace content (issue 9 §5).

With ``FPDEBUG_BLOCK_LIVE_CALLS=1`` and both live providers made impossible to construct, a replay
and backtrack reruns of a demo trace still complete: nothing needed the network. A live model is
reached only when named (and the block switch still refuses it). Already covered elsewhere:
``tests/engine/test_replay.py::TestLoading::test_replay_never_asks_the_live_call_switch`` (the
replay provider on its own), ``tests/engine/test_provider_*.py::test_a_blocked_provider_never_
reaches_the_server``. Then a static scan: no module of fpdebug deserialises or evaluates code.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.providers import anthropic as anthropic_module
from fpdebug.engine.providers import openai as openai_module
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from tests.tui.traces import sample

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_live_provider(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Block live calls for the process, and record any attempt to build a live provider."""
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")
    built: list[str] = []

    def refuse(name: str):  # type: ignore[no-untyped-def]
        def init(self: object, *args: object, **kwargs: object) -> None:
            built.append(name)
            raise AssertionError(f"a live {name} provider was constructed without being asked for")

        return init

    monkeypatch.setattr(anthropic_module.AnthropicProvider, "__init__", refuse("anthropic"))
    monkeypatch.setattr(openai_module.OpenAIProvider, "__init__", refuse("openai"))
    return built


@pytest.fixture
def demo_trace(tmp_path: Path) -> Path:
    copy = tmp_path / "support.fptrace.jsonl"
    shutil.copy(sample("support"), copy)
    return copy


def test_a_replay_and_every_kind_of_backtrack_rerun_need_no_live_model(
    no_live_provider: list[str], demo_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replayed = tmp_path / "replayed.fptrace.jsonl"
    assert (
        main(
            [
                "run",
                "support",
                "--provider",
                "replay",
                "--replay-from",
                str(demo_trace),
                "--trace",
                str(replayed),
            ]
        )
        == 0
    )
    assert main(["backtrack", str(demo_trace), "--ablate", "--restore", "--bisect", "--samples", "2"]) == 0
    capsys.readouterr()
    sidecar = demo_trace.with_name(demo_trace.name + ".backtrack.jsonl")
    records = [json.loads(line) for line in sidecar.read_text().splitlines()]
    kinds = [record["record"] for record in records]
    assert kinds[0] == "report" and "baseline" in kinds and "verdict" in kinds and "bisect" in kinds
    assert records[-1]["record"] == "end" and records[-1]["status"] == "complete"
    assert records[-1]["runs_used"] >= 4  # seeded reruns really ran, on the run's scripted model
    assert no_live_provider == []


def test_a_live_recording_is_not_rerun_live_unless_named(
    no_live_provider: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A trace whose run_start says a live model answered: the scripted model cannot stand in for it.
    live = tmp_path / "live.fptrace.jsonl"
    text = sample("support").read_text().replace('"provider":"scripted"', '"provider":"openai"', 1)
    live.write_text(text)
    assert main(["backtrack", str(live), "--ablate", "--samples", "2", "--no-save"]) == 2
    err = capsys.readouterr().err
    assert "rerun it live with --provider openai" in err
    assert no_live_provider == []


def test_a_named_live_provider_is_still_refused_by_the_block_switch(
    demo_trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0123456789")
    code = main(
        [
            "backtrack",
            str(demo_trace),
            "--ablate",
            "--samples",
            "2",
            "--no-save",
            "--provider",
            "openai",
            "--model",
            "gpt-test",
        ]
    )
    assert code == 2
    assert f"{BLOCK_ENV_VAR}=1 is set" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# No deserialisation or evaluation of code, anywhere in the package

FORBIDDEN_MODULES = {
    "pickle",
    "cPickle",
    "_pickle",
    "marshal",
    "shelve",
    "dill",
    "jsonpickle",
    "cloudpickle",
}
FORBIDDEN_CALLS = {"eval", "exec"}
FORBIDDEN_ATTRIBUTES = {("yaml", name) for name in ("load", "unsafe_load", "full_load", "load_all")}


def dangerous_uses(source: str, filename: str) -> list[str]:
    """Every import of a deserialiser, call of eval/exec, or unsafe yaml loader in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [
                f"{where}: import {a.name}" for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
            found.append(f"{where}: from {node.module} import …")
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml":
            found += [
                f"{where}: from yaml import {a.name}"
                for a in node.names
                if ("yaml", a.name) in FORBIDDEN_ATTRIBUTES
            ]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in FORBIDDEN_CALLS | {"__import__"}:
                found.append(f"{where}: {func.id}(…)")
            elif isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else None
                if (owner, func.attr) in FORBIDDEN_ATTRIBUTES or (
                    owner == "builtins" and func.attr in FORBIDDEN_CALLS
                ):
                    found.append(f"{where}: {owner}.{func.attr}(…)")
    return found


def test_the_scan_finds_what_it_looks_for() -> None:
    source = (
        "import pickle\nfrom marshal import loads\nimport yaml\nimport builtins\n"
        "eval('1')\nexec('x = 1')\nyaml.load(s)\nyaml.safe_load(s)\nbuiltins.exec('y')\n"
    )
    found = dangerous_uses(source, "bad.py")
    assert [line.split(": ", 1)[1] for line in found] == [
        "import pickle",
        "from marshal import …",
        "eval(…)",
        "exec(…)",
        "yaml.load(…)",
        "builtins.exec(…)",
    ]


def test_no_module_of_fpdebug_unpickles_evaluates_or_executes_anything() -> None:
    modules = sorted((ROOT / "fpdebug").rglob("*.py"))
    assert len(modules) > 50
    found = [use for path in modules for use in dangerous_uses(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []

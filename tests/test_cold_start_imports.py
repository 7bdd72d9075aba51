"""Viewing a trace imports neither the engine, the providers, the OTel SDK nor the backtracker (issue 20).

They cost the viewer's first screen most of its start-up time and no view of the first screen uses
them: the Backtrack view (which needs the backtracker, and through its reruns the engine) is
mounted after the first load, or when first shown; the OTLP importer only for a foreign file. The
hidden Calls, Skill map and Diff views are mounted after the first full screen too, and their
modules (the pass diff, the map layout) imported then.
``python -m bench.cold_start`` measures what this buys.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "anthropic",
    "openai",
    "opentelemetry",
    "google.protobuf",
    "fpdebug.engine",
    "fpdebug.backtrack",
    # The hidden views mounted after the first screen (Calls, Skill map, Diff) and what only they use.
    "fpdebug.tui.widgets.calls",
    "fpdebug.tui.widgets.skill_map",
    "fpdebug.tui.widgets.map_layout",
    "fpdebug.tui.widgets.diff",
    "fpdebug.views.pass_diff",
)
"""Module prefixes the viewer's first screen must not import."""

_LIST_HEAVY = f"import sys; print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))"


def _python(code: str, *args: str, env: dict[str, str] | None = None, lines: int = 1) -> Any:
    environment = dict(env or os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), environment.get("PYTHONPATH"))))
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-lines:]
    return last[0] if lines == 1 else last


def test_the_view_command_and_the_app_import_nothing_heavy() -> None:
    code = f"import fpdebug.cli, fpdebug.commands.view, fpdebug.tui.app; {_LIST_HEAVY}"
    assert _python(code) == "[]"


# The first screen of `fpdebug view` itself, up to its first paint (the bench's stamp), headless:
# the heavy modules it imported, then the validators it built (the event union, and the event models).
_FIRST_SCREEN = f"""
import os, sys
from fpdebug.tui.screens.loader import TraceLoader
_init = TraceLoader.__init__
def _noting_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    def painted():
        {_LIST_HEAVY.replace("; ", chr(10) + " " * 8)}
        from fpdebug.trace.schema import EVENT_ADAPTER, EVENT_MODELS
        built = [kind for kind, model in EVENT_MODELS.items() if model.__pydantic_complete__]
        print(EVENT_ADAPTER.pydantic_complete, sorted(built), os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
        sys.stdout.flush()
        os._exit(0)
    self.first_paint.set = painted
TraceLoader.__init__ = _noting_init
from fpdebug.cli import main
main(["view", sys.argv[1]])
"""


@pytest.mark.slow
def test_fpdebug_view_reaches_its_first_screen_without_them() -> None:
    env = dict(os.environ, TEXTUAL_DRIVER="textual.drivers.headless_driver:HeadlessDriver")
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    trace = ROOT / "sample_traces" / "support.fptrace.jsonl"
    heavy, built = _python(_FIRST_SCREEN, str(trace), env=env, lines=2)
    assert heavy == "[]"
    # The schema's validators are built as lines are read, each kind's own: the first screen reads
    # its calls (for the header's tokens; the background check, if it ran already, reads the rest),
    # never the union of every kind (only a line that does not validate is read through it). Nor
    # does it look for pydantic plugins (a walk over every installed package's metadata).
    union, kinds, plugins = (
        built.split(" ", 1)[0],
        built[built.index("[") : built.index("]") + 1],
        built.split()[-1],
    )
    assert union == "False"
    assert "'llm_call'" in kinds
    assert plugins == "__all__"

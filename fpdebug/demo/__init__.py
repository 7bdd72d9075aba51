"""Built-in demo scenarios, runnable offline on the scripted provider (and live when asked).

Every scenario is a module of this package with the same contract as a user's own module for
``fpdebug run path/to/module.py``:

- ``build_agent() -> Agent`` (required): the declared agent;
- ``scripted_provider() -> ScriptedProvider`` (optional): a FRESH scripted model per call, whose
  answers are a function of the request, so a rerun with a piece of context removed can answer
  differently;
- ``NAME``, ``DESCRIPTION`` (one line) and ``USER_MESSAGES`` (the turns it runs by default);
- ``EXPECTED`` (optional): facts the tests check.

:func:`run_scenario` runs one into a trace file; :func:`write_samples` regenerates ``sample_traces/``.
"""

from __future__ import annotations

from fpdebug.demo.registry import (
    DEFAULT_SCENARIO,
    SAMPLE_RUN_PREFIX,
    SAMPLE_START,
    SCENARIOS,
    Scenario,
    ScenarioRun,
    load_scenario,
    load_target,
    make_provider,
    recorded_module_loader,
    run_scenario,
    run_target,
    sample_path,
    scenario_names,
    write_samples,
)

__all__ = [
    "DEFAULT_SCENARIO",
    "SAMPLE_RUN_PREFIX",
    "SAMPLE_START",
    "SCENARIOS",
    "Scenario",
    "ScenarioRun",
    "load_scenario",
    "load_target",
    "make_provider",
    "recorded_module_loader",
    "run_scenario",
    "run_target",
    "sample_path",
    "scenario_names",
    "write_samples",
]

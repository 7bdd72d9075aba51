"""Pairs of demo runs for the run diff tests: a scenario run as it is, and with one thing changed.

Each variant is the demo's own module with one change (an injection left out, a tool that returns
another result or grants no lease, another model name), run on the scenario's scripted model.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

from fpdebug.demo import leases, support
from fpdebug.demo.registry import Scenario, load_scenario, run_target
from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope, require_instruction
from fpdebug.engine.injections import define_steering
from fpdebug.engine.providers.scripted import ScriptedProvider
from fpdebug.engine.tools import tool
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.views.run_diff import RunDiff, choose_run, run_diff
from fpdebug.views.run_diff.reading import load_all
from fpdebug.views.session import TraceSession
from tests.conftest import T0


def run(scenario: str | Scenario, path: Path, run_id: str = "run-a") -> Path:
    """Run a scenario (a name or a variant) on its scripted model into ``path``."""
    target = load_scenario(scenario) if isinstance(scenario, str) else scenario
    return run_target(target, trace_path=path, clock=FixedClock(T0), run_id=run_id, overwrite=True).trace_path


def variant(
    base: types.ModuleType,
    build_agent: Callable[[], Agent],
    provider: Callable[[], ScriptedProvider] | None = None,
) -> Scenario:
    """The built-in scenario ``base`` with another ``build_agent`` (and scripted model)."""
    module = types.ModuleType(f"{base.__name__}_variant")
    module.build_agent = build_agent  # type: ignore[attr-defined]
    module.scripted_provider = provider or base.scripted_provider  # type: ignore[attr-defined]
    module.USER_MESSAGES = base.USER_MESSAGES  # type: ignore[attr-defined]
    return Scenario(
        name=base.NAME,
        description="variant",
        user_messages=tuple(base.USER_MESSAGES),
        module=module,
        source=base.NAME,
        builtin=True,
    )


def support_without_tone() -> Scenario:
    """The support demo with its ``tone`` steering left out."""
    return variant(support, lambda: support.build_agent().without(injection_ids=["tone"]))


def support_on_another_model() -> Scenario:
    """The support demo whose scripted model calls itself ``scripted-other``."""
    return variant(
        support,
        support.build_agent,
        lambda: ScriptedProvider(respond=support.respond, model="scripted-other"),
    )


def _leases_agent(fetch: Callable[[str], object]) -> Agent:
    return (
        Agent(leases.NAME)
        .system_prompt("You convert currencies using the day's published rate.")
        .injections(define_steering("tone", prompt="Answer in one sentence."), leases.wire_format())
        .tools(tool(fetch, name="fetch"), leases.calc)
        .max_iterations(6)
    )


def _fetch_other_rate(url: str) -> dict[str, object]:
    """Fetch a page and return its text.

    Args:
        url: The page's address.
    """
    return envelope(
        {"url": url, "text": "EUR/USD 1.0900 (fixing of the day)"},
        require_instruction("wire-format", "next-call"),
    )


def _fetch_without_lease(url: str) -> dict[str, object]:
    """Fetch a page and return its text.

    Args:
        url: The page's address.
    """
    return {"url": url, "text": "EUR/USD 1.0800 (fixing of the day)"}


def leases_other_rate() -> Scenario:
    """The leases demo whose ``fetch`` returns another rate (and still grants its lease)."""
    return variant(leases, lambda: _leases_agent(_fetch_other_rate))


def leases_without_grant() -> Scenario:
    """The leases demo whose ``fetch`` grants no lease."""
    return variant(leases, lambda: _leases_agent(_fetch_without_lease))


def diff_of(a: Path, b: Path) -> RunDiff:
    """The diff of the first runs of two traces."""
    sa = load_all(TraceSession(TraceReader(a, index=False)))
    sb = load_all(TraceSession(TraceReader(b, index=False)))
    try:
        return run_diff(
            (sa, choose_run(sa, None, "A"), str(a)),
            (sb, choose_run(sb, None, "B"), str(b)),
        )
    finally:
        sa.reader.close()
        sb.reader.close()

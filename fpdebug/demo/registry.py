"""The scenario registry: find a scenario (built-in, a user's file or module), pick its provider, run it.

``fpdebug run`` and ``fpdebug demo`` are thin shells over :func:`run_target`; the debugger opens the
path :func:`run_scenario` returns; ``fpdebug demo --write-samples`` is :func:`write_samples`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from fpdebug.engine.agent import Agent, RunResult
from fpdebug.engine.providers import LIVE_PROVIDERS, live_provider
from fpdebug.engine.providers.base import Provider, check_provider
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.engine.sink import EventSink, TraceFileSink
from fpdebug.errors import DefinitionError, FpdebugError, ProviderError, ScenarioError
from fpdebug.trace.clock import Clock, FixedClock, SystemClock
from fpdebug.trace.schema import AskRow
from fpdebug.trace.writer import Durability

__all__ = [
    "DEFAULT_SCENARIO",
    "PROVIDERS",
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

SCENARIOS: Mapping[str, str] = {
    "support": "fpdebug.demo.support",
    "zone-trap": "fpdebug.demo.zone_trap",
    "planted-fact": "fpdebug.demo.planted_fact",
    "leases": "fpdebug.demo.leases",
    "leases-cyclic": "fpdebug.demo.leases_cyclic",
    "unsupported-amount": "fpdebug.demo.unsupported_amount",
    "traced-argument": "fpdebug.demo.traced_argument",
    "revised-amount": "fpdebug.demo.revised_amount",
    "step-nudge": "fpdebug.demo.step_nudge",
    "wrap-up": "fpdebug.demo.wrap_up",
    "cost-budget": "fpdebug.demo.cost_budget",
    "output-retry": "fpdebug.demo.output_retry",
    "time-window": "fpdebug.demo.time_window",
    "continuity": "fpdebug.demo.continuity",
    "cascade": "fpdebug.demo.cascade",
    "decision-tree": "fpdebug.demo.decision_tree",
    "entry-rules": "fpdebug.demo.entry_rules",
    "argument-ask": "fpdebug.demo.argument_ask",
    "recalled-fact": "fpdebug.demo.recalled_fact",
    "windowed": "fpdebug.demo.windowed",
}
"""Built-in scenario name → module, in the order ``fpdebug demo --list`` shows them."""

DEFAULT_SCENARIO = "support"
"""What ``fpdebug demo`` runs when no scenario is named."""

PROVIDERS: tuple[str, ...] = ("scripted", "replay", *LIVE_PROVIDERS)
"""The provider kinds :func:`make_provider` builds."""

SAMPLE_START = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The fixed clock start of the committed sample traces."""

SAMPLE_RUN_PREFIX = "sample-"
"""A sample trace's run id is this prefix plus the scenario name."""


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario: a built-in one, or a user's module that follows the same contract."""

    name: str
    """The registry name, or the module's ``NAME`` (its file stem or dotted name by default)."""
    description: str
    """One line."""
    user_messages: tuple[str, ...]
    """The turns it runs when no message is given."""
    module: ModuleType
    """The module itself."""
    source: str
    """What the user named: a registry name, a file path or a dotted module."""
    builtin: bool
    """Whether it comes from the registry."""

    def build_agent(self) -> Agent:
        """A fresh agent from the module's ``build_agent()``.

        Raises:
            DefinitionError: The declaration is invalid.
            ScenarioError: ``build_agent`` failed otherwise or did not return an :class:`Agent`.
        """
        try:
            agent = self.module.build_agent()
        except FpdebugError:
            raise
        except Exception as exc:
            raise ScenarioError(f"{self.source}: build_agent() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(agent, Agent):
            raise ScenarioError(f"{self.source}: build_agent() returned {type(agent).__name__}, not an Agent")
        return agent.check()

    def scripted_provider(self) -> Provider:
        """A fresh scripted model from the module's ``scripted_provider()``.

        Raises:
            ScenarioError: The module has none, or it failed.
        """
        factory = getattr(self.module, "scripted_provider", None)
        if not callable(factory):
            raise ScenarioError(
                f"{self.source} has no scripted_provider(); run it with --provider anthropic|openai "
                "(and --model), or --provider replay --replay-from TRACE"
            )
        try:
            provider = factory()
        except Exception as exc:
            raise ScenarioError(
                f"{self.source}: scripted_provider() raised {type(exc).__name__}: {exc}"
            ) from exc
        try:
            return check_provider(provider)
        except DefinitionError as exc:
            raise ScenarioError(f"{self.source}: scripted_provider() returned no provider: {exc}") from exc

    @property
    def answer_ask(self) -> Callable[[AskRow], object] | None:
        """The module's scripted user for an argument ask (``answer_ask(ask)``), if it declares one."""
        answer = getattr(self.module, "answer_ask", None)
        return answer if callable(answer) else None

    @property
    def expected(self) -> Mapping[str, object]:
        """The module's ``EXPECTED`` facts (empty when it declares none)."""
        return getattr(self.module, "EXPECTED", {}) or {}

    @property
    def options(self) -> dict[str, object]:
        """What ``run_start.options`` records so a rerun can rebuild the scenario."""
        return {"scenario": self.name} if self.builtin else {"module": self.source}


@dataclass(frozen=True)
class ScenarioRun:
    """A scenario run into a trace file."""

    scenario: Scenario
    """What ran."""
    trace_path: Path
    """Where the trace went."""
    result: RunResult
    """How the run ended."""


def scenario_names() -> tuple[str, ...]:
    """The built-in scenario names, in listing order."""
    return tuple(SCENARIOS)


def _scenario_of(module: ModuleType, source: str, *, builtin: bool, default_name: str) -> Scenario:
    if not callable(getattr(module, "build_agent", None)):
        raise ScenarioError(f"{source} defines no build_agent() function (it must return an Agent)")
    messages = getattr(module, "USER_MESSAGES", ())
    if isinstance(messages, str):
        messages = (messages,)
    if not all(isinstance(m, str) for m in messages):
        raise ScenarioError(f"{source}: USER_MESSAGES must be a list of strings")
    doc_lines = (module.__doc__ or "").strip().splitlines()
    return Scenario(
        name=str(getattr(module, "NAME", default_name)),
        description=str(getattr(module, "DESCRIPTION", "") or (doc_lines[0] if doc_lines else "")),
        user_messages=tuple(messages),
        module=module,
        source=source,
        builtin=builtin,
    )


def load_scenario(name: str) -> Scenario:
    """Load a built-in scenario by name.

    Raises:
        ScenarioError: No scenario has that name.
    """
    if name not in SCENARIOS:
        raise ScenarioError(f"no scenario named {name!r}; the scenarios are: {', '.join(SCENARIOS)}")
    module = importlib.import_module(SCENARIOS[name])
    return _scenario_of(module, name, builtin=True, default_name=name)


def _load_file(path: Path, source: str) -> ModuleType:
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    module_name = f"fpdebug_user_{''.join(c if c.isalnum() else '_' for c in path.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ScenarioError(f"{source}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pydantic and dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
    except FpdebugError:
        sys.modules.pop(module_name, None)
        raise
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ScenarioError(f"{source}: importing it raised {type(exc).__name__}: {exc}") from exc
    return module


def load_target(target: str) -> Scenario:
    """Load what ``fpdebug run`` names: a built-in scenario, a ``.py`` file, or a dotted module.

    Args:
        target: ``support``, ``path/to/agent.py`` or ``my_package.my_agent``.

    Returns:
        The scenario.

    Raises:
        ScenarioError: Nothing by that name, the module fails to import, or it has no
            ``build_agent()``.
    """
    if target in SCENARIOS:
        return load_scenario(target)
    path = Path(target)
    looks_like_path = target.endswith(".py") or os.sep in target or (os.altsep or "\0") in target
    if looks_like_path or path.is_file():
        if not path.is_file():
            raise ScenarioError(f"no such file: {target}")
        return _scenario_of(_load_file(path, target), target, builtin=False, default_name=path.stem)
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and target.startswith(exc.name):
            raise ScenarioError(
                f"{target!r} is neither a scenario ({', '.join(SCENARIOS)}), nor a .py file, nor an "
                "importable module"
            ) from None
        raise ScenarioError(f"{target}: importing it raised ModuleNotFoundError: {exc}") from exc
    except FpdebugError:
        raise
    except Exception as exc:
        raise ScenarioError(f"{target}: importing it raised {type(exc).__name__}: {exc}") from exc
    return _scenario_of(module, target, builtin=False, default_name=target.rsplit(".", 1)[-1])


def _module_identity(name: str) -> str:
    """What two names of one module share: a file's name (``agents/login.py`` → ``login``) or a
    dotted module's last part (``agents.login`` → ``login``)."""
    looks_like_path = name.endswith(".py") or os.sep in name or (os.altsep or "\0") in name
    if looks_like_path:
        return Path(name).stem
    return name.rsplit(".", 1)[-1]


def _same_module(recorded: str, named: str) -> bool:
    if recorded == named:
        return True
    if recorded in SCENARIOS or named in SCENARIOS:
        return False
    return _module_identity(recorded) == _module_identity(named)


def recorded_module_loader(
    trace: str | os.PathLike[str],
    *,
    module: str | None = None,
    force: bool = False,
    command: str = "fpdebug backtrack TRACE --ablate",
) -> Callable[[str], ModuleType]:
    """A loader of the scenario or module a run of ``trace`` recorded, for reruns of that run.

    A trace is untrusted input, so the name its ``run_start.options`` records decides nothing by
    itself: a BUILT-IN scenario (``support``, ``planted-fact``…) is loaded from this package; any
    other name (a ``.py`` path, a dotted module) is loaded only when the user names the module
    explicitly (``module``, from ``--module`` on the command line), and then only when it is the
    same module as the recorded one (the same module name: a file's name without ``.py`` or a
    dotted module's last part, so ``~/agents/login.py`` matches ``agents/login.py`` and
    ``agents.login``; see :func:`_same_module`) or the user insists (``force``, from
    ``--force-module``). Nothing is imported before these checks pass, and nothing is ever looked
    up beside the trace.

    Args:
        trace: The trace the reruns belong to (named in messages only).
        module: The module the user named (a ``.py`` path or a dotted module), if any.
        force: Load ``module`` even when the trace recorded another name.
        command: The command line the refusal tells the user to run (``TRACE`` is replaced by the
            trace's path, and ``--module NAME`` appended).

    Returns:
        The loader the backtracker takes as its ``load_module`` (it may not import this package).
        It raises :class:`ScenarioError` when it refuses, naming the recorded module and the
        option to pass.
    """
    shown_trace = shlex.quote(str(trace))

    def load(name: str) -> ModuleType:
        if not isinstance(name, str):  # the trace is untrusted: a list or a dict names no module
            raise ScenarioError(
                f"this trace's run_start.options records its scenario or module as a {type(name).__name__}, "
                "not a name (a string): there is no module to load"
            )
        if module is None:
            if name in SCENARIOS:
                return load_scenario(name).module
            hint = command.replace("TRACE", shown_trace) + f" --module {shlex.quote(name)}"
            raise ScenarioError(
                f"this trace's run was built from the module {name!r} (run_start.options), not from a "
                "built-in scenario; fpdebug never imports code because a trace names it. If you trust "
                f"that module, name it yourself: {hint}"
            )
        if not (force or _same_module(name, module)):
            raise ScenarioError(
                f"--module {module!r} is not the module this trace's run recorded ({name!r}): its scripted "
                "model would not reproduce the run; name the recorded module, or pass --force-module to "
                "rerun with this one anyway"
            )
        return load_target(module).module

    return load


def make_provider(
    kind: str,
    *,
    scenario: Scenario | None = None,
    model: str | None = None,
    base_url: str | None = None,
    replay_from: str | os.PathLike[str] | None = None,
    replay_run_id: str | None = None,
) -> Provider:
    """Build the provider a run asked for.

    Args:
        kind: ``scripted``, ``replay``, ``anthropic`` or ``openai``.
        scenario: The scenario (its ``scripted_provider()`` for ``scripted``).
        model: The model (required for the live providers).
        base_url: Another endpoint for a live provider (an OpenAI-compatible server…).
        replay_from: The trace to replay (required for ``replay``).
        replay_run_id: The run of that trace, when it holds several.

    Returns:
        The provider. Live providers read their key from the environment.

    Raises:
        ScenarioError: ``scripted`` for a module without ``scripted_provider()``.
        ProviderError: A missing model or trace, an unknown kind, a missing API key.
    """
    if kind == "scripted":
        if scenario is None:
            raise ScenarioError("the scripted provider comes from a scenario; name one")
        return scenario.scripted_provider()
    if kind == "replay":
        if replay_from is None:
            raise ProviderError(
                "--provider replay needs the trace to replay (--replay-from TRACE)", provider=kind
            )
        return ReplayProvider.from_trace(replay_from, run_id=replay_run_id)
    if kind in LIVE_PROVIDERS:
        if not model:
            raise ProviderError(f"--provider {kind} needs a model (--model NAME)", provider=kind)
        return live_provider(kind, model, base_url=base_url)
    raise ProviderError(f"unknown provider {kind!r}; use one of {', '.join(PROVIDERS)}", provider=kind)


def run_target(
    target: str | Scenario,
    *,
    trace_path: str | os.PathLike[str],
    provider: Provider | None = None,
    clock: Clock | None = None,
    run_id: str | None = None,
    messages: Sequence[str] | None = None,
    max_iterations: int | None = None,
    overwrite: bool = False,
    durability: Durability = "batch",
    wrap_sink: Callable[[EventSink], EventSink] | None = None,
    schema_version: int | None = None,
) -> ScenarioRun:
    """Run a scenario (or a user's module) into a new trace file.

    Args:
        target: A scenario name, a ``.py`` path, a dotted module, or a loaded :class:`Scenario`.
        trace_path: Where the trace goes (missing parent directories are created).
        provider: The model; the scenario's scripted one by default. A
            :class:`~fpdebug.engine.providers.replay.ReplayProvider` also supplies the recorded
            user messages, iteration limit and run id when they are not given.
        clock: The run's clock (a ``FixedClock`` makes the file byte-for-byte reproducible).
        run_id: The run's id (random by default).
        messages: The user messages, one turn each; the scenario's ``USER_MESSAGES`` by default.
        max_iterations: Overrides the agent's per-turn limit.
        overwrite: Replace an existing trace file.
        durability: The trace writer's fsync policy.
        wrap_sink: Wraps the trace file's sink (e.g. an OTLP stream); the wrapper is closed after
            the run and must close the sink it wraps.
        schema_version: The trace's schema version (the newest by default).

    Returns:
        The :class:`ScenarioRun` (a failed run is a result with ``status == "failed"``, not an error).

    Raises:
        ScenarioError: The target cannot be loaded, or there is no user message to send.
        DefinitionError: The agent's declaration is invalid.
        TraceError: The trace file cannot be created or written.
    """
    scenario = target if isinstance(target, Scenario) else load_target(target)
    agent = scenario.build_agent()
    if provider is None:
        provider = scenario.scripted_provider()
    if isinstance(provider, ReplayProvider):
        messages = messages or provider.user_messages
        if max_iterations is None and provider.max_iterations is not None:
            max_iterations = provider.max_iterations
        run_id = run_id or provider.run_id
    if max_iterations is not None:
        agent = agent.max_iterations(max_iterations)
    turns = tuple(messages) if messages else scenario.user_messages
    if not turns:
        raise ScenarioError(f"{scenario.source} declares no USER_MESSAGES; give one with --message TEXT")
    # Mistakes in the declaration or the provider are refused before the trace file exists, so
    # none is left holding a header only.
    provider = check_provider(provider)
    agent.check()
    path = Path(trace_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = clock or SystemClock()
    with TraceFileSink.create(
        path, clock=clock, overwrite=overwrite, durability=durability, schema_version=schema_version
    ) as file_sink:
        sink: EventSink = wrap_sink(file_sink) if wrap_sink is not None else file_sink
        try:
            result = agent.run(
                turns,
                provider=provider,
                sink=sink,
                clock=clock,
                run_id=run_id,
                options=scenario.options,
                answer=scenario.answer_ask,
            )
        finally:
            if sink is not file_sink:
                sink.close()
    return ScenarioRun(scenario=scenario, trace_path=path, result=result)


def run_scenario(
    name: str,
    *,
    trace_path: str | os.PathLike[str],
    provider: Provider | None = None,
    clock: Clock | None = None,
    run_id: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Run a scenario into a trace file and return the file's path (what the debugger opens).

    Args:
        name: A scenario name (or a user's ``.py`` path / dotted module).
        trace_path: Where the trace goes.
        provider: The model; the scenario's scripted one by default.
        clock: The run's clock.
        run_id: The run's id.
        overwrite: Replace an existing trace file.

    Returns:
        The trace path.
    """
    return run_target(
        name, trace_path=trace_path, provider=provider, clock=clock, run_id=run_id, overwrite=overwrite
    ).trace_path


def sample_path(directory: str | os.PathLike[str], name: str) -> Path:
    """Where a scenario's sample trace lives in ``directory``."""
    return Path(directory) / f"{name}.fptrace.jsonl"


def write_samples(directory: str | os.PathLike[str]) -> list[Path]:
    """Regenerate one sample trace per built-in scenario (fixed clock and run ids: byte-identical).

    The samples are written in schema_version 1: they are the fixtures that prove version 1 traces
    still read (docs/trace-contract.md §8.7), and the bench's demo-shaped trace renumbers their
    records, which version 2's references (by ``seq``) would not survive.

    Args:
        directory: Where to write (created if missing); existing samples are replaced.

    Returns:
        The paths written, in registry order.
    """
    paths: list[Path] = []
    for name in SCENARIOS:
        run = run_target(
            name,
            trace_path=sample_path(directory, name),
            clock=FixedClock(SAMPLE_START),
            run_id=f"{SAMPLE_RUN_PREFIX}{name}",
            overwrite=True,
            durability="none",
            schema_version=1,
        )
        paths.append(run.trace_path)
    return paths

"""Reruns of one recorded LLM call, with pieces removed or restored: the runner of the causal tier.

:class:`RecordedCallRunner` satisfies :class:`~fpdebug.backtrack.probe.Runner`. It takes the
EXACT request the trace recorded for the explained call, applies the ablation specs to it
(:func:`apply_specs`), sets the rerun's ``seed``, and sends it to a FRESH provider, once per call:

- ``injection`` / ``memory`` → drop the injection's system-prompt segments, the messages it
  delivered and the tool schemas it contributed;
- ``tool`` → drop the tool's schema, the assistant's calls of that tool and their tool messages
  (an assistant message left with neither text nor calls is dropped too, so the conversation stays
  well formed);
- ``restore`` → put a missing injection back: its declared system prompt at its declaration-order
  position (and its declared messages and tools); or put a tool's schema back;
- ``arg`` → refused: fpdebug cannot override an untracked input.

Removing an injection removes what it contributed to THIS call only: replies and tool results
earlier iterations produced under it stay in the history, exactly as recorded (the rerun replays
one call, not the run).

The answer of a rerun is :func:`~fpdebug.backtrack.provenance.render_answer` of the reply: the
text, then ``→ tool(args)`` when the model asked for tools, so "asked for a tool instead of
answering" counts as a different answer.

**Where the provider comes from** (:func:`rerun_provider_for`): the scripted model the trace's run
was built from (``run_start.options``: ``scenario`` → the demo's ``scripted_provider()``,
``module`` → the user module's, only when the caller's loader allows it), rebuilt fresh for every
rerun; or a live Anthropic/OpenAI model ONLY when the caller names it. Scripted reruns run inside
``allow_live_calls(False)``, so nothing reaches the network unless asked; a live rerun is allowed
by the caller's explicit choice (and ``FPDEBUG_BLOCK_LIVE_CALLS=1`` still refuses it). The replay
provider cannot rerun: it replays the recorded answer and fails by design on any changed request.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pydantic import TypeAdapter, ValidationError

from fpdebug.backtrack.probe import RunCost, RunOutput
from fpdebug.backtrack.provenance import READ_SKILL, Provenance, render_answer
from fpdebug.backtrack.suspects import (
    AblationSpec,
    ArgSpec,
    InjectionSpec,
    MemorySpec,
    RestoreSpec,
    ToolSpec,
)
from fpdebug.engine.providers import LIVE_PROVIDERS, live_provider
from fpdebug.engine.providers.base import Provider, allow_live_calls
from fpdebug.errors import BacktrackError, FpdebugError
from fpdebug.trace.schema import InjectionDecl, LlmRequest, Message, PromptSegment, RunStartEvent, ToolSchema

__all__ = [
    "LIVE_PROVIDERS",
    "ModuleLoader",
    "ProviderFactory",
    "RecordedCallRunner",
    "RerunProvider",
    "apply_specs",
    "recorded_arguments",
    "recorded_name",
    "rerun_provider_for",
    "runner_for",
    "scripted_rerun_provider",
]

ProviderFactory = Callable[[], Provider]
"""Builds a fresh provider (scripted providers are stateful: one per rerun)."""

ModuleLoader = Callable[[str], ModuleType]
"""Loads a scenario or user module by the name ``run_start.options`` recorded (``scenario`` or
``module``). The backtrack layer cannot import the demo package; the CLI and the TUI pass
:func:`fpdebug.demo.recorded_module_loader`, which loads built-in scenarios and imports a user's
module only when the user named it (a trace is untrusted: what it names is never imported as such)."""


@dataclass(frozen=True)
class RerunProvider:
    """Where reruns get their model, and whether that is a live one."""

    factory: ProviderFactory
    """Builds a fresh provider for one rerun."""
    live: bool
    """A live model: reruns allow live calls (only ever because the caller asked)."""
    description: str
    """One line for reports (``the scripted model of planted-fact``, ``anthropic model … (live)``)."""


# ----------------------------------------------------------------------------------------------
# Applying specs to a recorded request


def apply_specs(
    request: LlmRequest,
    specs: Sequence[AblationSpec],
    *,
    declared: Sequence[InjectionDecl] = (),
    known_tools: Sequence[ToolSchema] = (),
) -> LlmRequest:
    """The recorded request with ``specs`` applied (see the module docstring for each kind).

    Args:
        request: The recorded request.
        specs: What to remove or restore; empty for the baseline (the request unchanged).
        declared: The run's declared injections, in declaration order (for restorations).
        known_tools: Tool schemas the run offered or declared (for restorations).

    Returns:
        A new request; the recorded one is never modified.

    Raises:
        BacktrackError: An ``arg`` spec, or a restoration of something unknown, templated or empty.
    """
    drop_ids, drop_tools, restores = _sorted_specs(specs)
    segments = [s for s in request.system_prompt if s.injection_id is None or s.injection_id not in drop_ids]
    tools = [
        t
        for t in request.tools
        if t.name not in drop_tools and (t.injection_id is None or t.injection_id not in drop_ids)
    ]
    messages = _kept_messages(request.messages, drop_ids, drop_tools)
    order = {decl.id: index for index, decl in enumerate(declared)}
    for spec in restores:
        if spec.unit_kind == "tool":
            tools = _restore_tool(tools, spec.unit_id, known_tools)
        else:
            segments, messages, tools = _restore_injection(
                segments, messages, tools, spec.unit_id, declared, order, known_tools
            )
    return request.model_copy(update={"system_prompt": segments, "messages": messages, "tools": tools})


def _sorted_specs(specs: Sequence[AblationSpec]) -> tuple[set[str], set[str], list[RestoreSpec]]:
    """The injection ids and tool names to drop, and the restorations, of ``specs``."""
    drop_ids: set[str] = set()
    drop_tools: set[str] = set()
    restores: list[RestoreSpec] = []
    for spec in specs:
        match spec:
            case InjectionSpec():
                drop_ids.update(spec.exclude_injection_ids)
            case MemorySpec():
                drop_ids.update(spec.exclude_memory_ids)
            case ToolSpec():
                drop_tools.update(spec.ignored_tools)
            case RestoreSpec():
                restores.append(spec)
            case ArgSpec():
                raise BacktrackError(f"cannot rerun with arg '{spec.source}' overridden: {spec.note}")
            case _:
                raise BacktrackError(f"not an ablation spec: {spec!r}")
    return drop_ids, drop_tools, restores


def _kept_messages(messages: Sequence[Message], drop_ids: set[str], drop_tools: set[str]) -> list[Message]:
    """The messages without the dropped injections' deliveries and the dropped tools' calls and results.

    An assistant message loses its calls of a dropped tool (and goes when nothing else is left of it);
    the results of those calls go with them.
    """
    kept_messages: list[Message] = []
    dropped_calls: set[str] = set()
    for message in messages:
        if message.injection_id is not None and message.injection_id in drop_ids:
            continue
        if message.role == "assistant" and message.tool_calls and drop_tools:
            kept = [call for call in message.tool_calls if call.name not in drop_tools]
            if len(kept) != len(message.tool_calls):
                dropped_calls.update(call.id for call in message.tool_calls if call.name in drop_tools)
                if not kept and not message.content.strip():
                    continue
                message = message.model_copy(update={"tool_calls": kept or None})
        if message.role == "tool" and (
            message.tool_name in drop_tools or message.tool_call_id in dropped_calls
        ):
            continue
        kept_messages.append(message)
    return kept_messages


def _restore_tool(tools: list[ToolSchema], name: str, known: Sequence[ToolSchema]) -> list[ToolSchema]:
    if any(t.name == name for t in tools):
        return tools
    schema = next((t for t in known if t.name == name), None)
    if schema is None:
        raise BacktrackError(f"cannot restore tool {name!r}: its schema was never recorded in this run")
    return _insert_tool(tools, schema)


def _insert_tool(tools: list[ToolSchema], schema: ToolSchema) -> list[ToolSchema]:
    # read_skill closes the list when a skill map offers it: keep it last.
    at = next((i for i, t in enumerate(tools) if t.name == READ_SKILL and t.injection_id is None), len(tools))
    return [*tools[:at], schema, *tools[at:]]


def _restorable(injection_id: str, declared: Sequence[InjectionDecl]) -> InjectionDecl:
    """The declaration a restoration sends: declared, not templated, and with something to send."""
    decl = next((d for d in declared if d.id == injection_id), None)
    if decl is None:
        raise BacktrackError(f"cannot restore injection {injection_id!r}: it is not declared in run_start")
    if decl.templated:
        raise BacktrackError(
            f"cannot restore injection {injection_id!r}: its prompt is a template that only a pass can render"
        )
    if not decl.system_prompt and not decl.messages and not decl.tool_names:
        raise BacktrackError(f"cannot restore injection {injection_id!r}: it declares nothing to send")
    return decl


def _restore_injection(
    segments: list[PromptSegment],
    messages: list[Message],
    tools: list[ToolSchema],
    injection_id: str,
    declared: Sequence[InjectionDecl],
    order: Mapping[str, int],
    known: Sequence[ToolSchema],
) -> tuple[list[PromptSegment], list[Message], list[ToolSchema]]:
    decl = _restorable(injection_id, declared)
    target = order.get(injection_id, len(order))

    def after(other: str | None) -> bool:
        # Undeclared contributions (the park card) ride after every declared injection.
        return other is not None and order.get(other, math.inf) > target

    if decl.system_prompt and not any(s.injection_id == injection_id for s in segments):
        at = next((i for i, s in enumerate(segments) if after(s.injection_id)), len(segments))
        segment = PromptSegment(source=decl.flavor, injection_id=injection_id, text=decl.system_prompt)
        segments = [*segments[:at], segment, *segments[at:]]
    if decl.messages and not any(m.injection_id == injection_id for m in messages):
        at = next((i for i, m in enumerate(messages) if after(m.injection_id)), len(messages))
        added = [m.model_copy(update={"injection_id": injection_id}) for m in decl.messages]
        messages = [*messages[:at], *added, *messages[at:]]
    for name in decl.tool_names:
        if any(t.name == name for t in tools):
            continue
        schema = next((t for t in known if t.name == name), None)
        if schema is not None:
            tools = _insert_tool(tools, schema.model_copy(update={"injection_id": injection_id}))
    return segments, messages, tools


# ----------------------------------------------------------------------------------------------
# The runner


class RecordedCallRunner:
    """Reruns one recorded call with specs applied, through a fresh provider each time.

    Satisfies :class:`~fpdebug.backtrack.probe.Runner`. ``calls`` counts the reruns made, and
    ``requests`` keeps the last request sent (for inspection and tests).

    Args:
        request: The recorded request of the explained call.
        provider: Where the model comes from.
        declared: The run's declared injections (for restorations).
        known_tools: The run's tool schemas (for restorations).
    """

    def __init__(
        self,
        request: LlmRequest,
        provider: RerunProvider,
        *,
        declared: Sequence[InjectionDecl] = (),
        known_tools: Sequence[ToolSchema] = (),
    ) -> None:
        self.request = request
        """The recorded request (never modified)."""
        self.provider = provider
        """Where each rerun's model comes from."""
        self.declared = tuple(declared)
        """Declared injections, for restorations."""
        self.known_tools = tuple(known_tools)
        """Known tool schemas, for restorations."""
        self.calls = 0
        """Reruns made."""
        self.last_request: LlmRequest | None = None
        """The request of the latest rerun."""
        self.input_tokens = 0
        """Input tokens the reruns' replies reported, in all (what a live rerun costs)."""
        self.output_tokens = 0
        """Output tokens the reruns' replies reported, in all."""

    def __call__(self, specs: Sequence[AblationSpec], *, seed: int) -> RunOutput:
        """Rerun the call once with ``specs`` applied and ``seed`` set.

        Raises:
            BacktrackError: A spec cannot be applied, or the provider cannot be built.
            ProviderError: The model failed (``LiveCallRefusedError`` when a live call was not allowed).
        """
        request = apply_specs(self.request, specs, declared=self.declared, known_tools=self.known_tools)
        request = request.model_copy(update={"seed": seed})
        self.last_request = request
        provider = self.provider.factory()
        # A scripted rerun must never reach the network; a live one runs only because the caller
        # named it (and FPDEBUG_BLOCK_LIVE_CALLS=1 still wins over this).
        with allow_live_calls(self.provider.live):
            response = provider.complete(request)
        self.calls += 1
        usage = response.usage
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        return RunOutput(
            output=render_answer(response), cost=RunCost(tokens=usage.input_tokens + usage.output_tokens)
        )


def runner_for(provenance: Provenance, provider: RerunProvider) -> RecordedCallRunner:
    """The runner that reruns the call a provenance explains."""
    return RecordedCallRunner(
        provenance.request, provider, declared=provenance.declared, known_tools=provenance.known_tools
    )


# ----------------------------------------------------------------------------------------------
# Providers


def scripted_rerun_provider(
    module: ModuleType, *, options: Mapping[str, object], source: str
) -> RerunProvider:
    """Reruns through a scenario or user module's ``scripted_provider()``, fresh for each rerun.

    Keyword parameters of ``scripted_provider`` whose names appear in ``run_start.options`` are
    passed from there, so a variant the run recorded (the planted-fact demo's ``variant``) is
    rebuilt as it ran.

    Args:
        module: The loaded module.
        options: The run's ``run_start.options``.
        source: How the module was named (for messages).

    Raises:
        BacktrackError: The module has no ``scripted_provider()``.
    """
    factory = getattr(module, "scripted_provider", None)
    if not callable(factory):
        raise BacktrackError(
            f"{source} has no scripted_provider() to rerun with; pass --provider "
            "anthropic|openai --model M to rerun the call live"
        )
    kwargs = recorded_arguments(factory, options, source=source)

    def make() -> Provider:
        try:
            provider = factory(**kwargs)
        except FpdebugError:
            raise
        except Exception as exc:  # the user's module failed: say where, never a traceback
            raise BacktrackError(f"{source}: scripted_provider() raised {type(exc).__name__}: {exc}") from exc
        if not callable(getattr(provider, "complete", None)):
            raise BacktrackError(
                f"{source}: scripted_provider() returned {type(provider).__name__}, not a provider"
            )
        return provider

    shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return RerunProvider(
        factory=make,
        live=False,
        description=f"the scripted model of {source}{f' ({shown})' if shown else ''}, fresh for every rerun",
    )


def recorded_arguments(
    factory: Callable[..., object], options: Mapping[str, object], *, source: str
) -> dict[str, object]:
    """The keyword arguments of ``factory`` that ``run_start.options`` recorded (a demo's ``variant``).

    Used for a module's ``scripted_provider()`` and, by a fork, its ``build_agent()``: a variant the
    run recorded is rebuilt as it ran.

    Raises:
        BacktrackError: A recorded value does not fit the parameter's annotation.
    """
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    usable = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    kwargs = {
        name: options[name]
        for name, parameter in parameters.items()
        if name in options and parameter.kind in usable
    }
    _check_recorded_arguments(factory, kwargs, source=source)
    return kwargs


def _check_recorded_arguments(
    factory: Callable[..., object], kwargs: Mapping[str, object], *, source: str
) -> None:
    """Refuse a recorded option that does not fit ``scripted_provider``'s annotation of it.

    The options come from the trace (untrusted): a ``variant`` of ``{"x": [1]}`` or ``"../../evil"``
    would otherwise reach the factory, which may quietly fall back to its default and rerun another
    model than the one that ran. Parameters without a readable annotation are passed as recorded.

    Raises:
        BacktrackError: A recorded value is not one the annotation allows.
    """
    try:
        hints = typing.get_type_hints(factory)
    except Exception:
        return
    for name, value in kwargs.items():
        hint = hints.get(name)
        if hint is None or _fits(hint, value):
            continue
        if typing.get_origin(hint) is typing.Literal:
            allowed = "one of " + ", ".join(repr(choice) for choice in typing.get_args(hint))
        else:
            allowed = f"a {getattr(hint, '__name__', hint)}"
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:59] + "…"
        raise BacktrackError(
            f"this trace's run_start.options records {name}={shown} ({type(value).__name__}), but "
            f"scripted_provider() of {source} takes {allowed}: the recorded run cannot be rebuilt from it; "
            "pass --provider anthropic|openai --model M to rerun the call live"
        )


def _fits(hint: Any, value: object) -> bool:
    """Whether ``value`` is one ``hint`` allows, strictly (``True`` for a hint pydantic cannot check).

    ``hint`` is Any: it is a runtime annotation as ``typing.get_type_hints`` returns it (a class, a
    ``Literal[...]``, a union), which ``TypeAdapter`` takes but no static type describes.
    """
    try:
        TypeAdapter(hint).validate_python(value, strict=True)
    except ValidationError:
        return False
    except Exception:
        return True
    return True


def recorded_name(options: Mapping[str, object]) -> str | None:
    """The scenario or module ``run_start.options`` names, or ``None`` when it names neither.

    Raises:
        BacktrackError: The name recorded is not a string (a list, a dict…): it names nothing.
    """
    for key in ("scenario", "module"):
        value = options.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise BacktrackError(
                f"this trace's run_start.options records its {key} as a {type(value).__name__}, not a "
                "name (a string): it does not say which scripted model to rerun with; pass --provider "
                "anthropic|openai --model M to rerun the call live"
            )
        return value
    return None


def rerun_provider_for(
    run_start: RunStartEvent | None,
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    load_module: ModuleLoader | None = None,
) -> RerunProvider:
    """Where the reruns of a trace's call get their model.

    Args:
        run_start: The run's declaration (its ``options`` name the scenario or module).
        provider: ``None`` or ``scripted`` (the run's own scripted model), or ``anthropic`` /
            ``openai`` for a live model (the user's explicit choice; needs ``model``).
        model: The live model.
        base_url: Another endpoint for the live provider.
        load_module: Loads the recorded scenario or module (see :data:`ModuleLoader`).

    Returns:
        The provider source.

    Raises:
        BacktrackError: No way to rebuild a provider (the message names the flag to pass), a live
            provider without a model, an unknown provider, or a call recorded from a live model
            when no provider was named.
    """
    if provider in LIVE_PROVIDERS:
        if not model:
            raise BacktrackError(f"--provider {provider} needs the model to rerun with (--model NAME)")
        return _live(provider, model, base_url)
    if provider not in (None, "scripted"):
        raise BacktrackError(
            f"cannot rerun with provider {provider!r}: use scripted, anthropic or openai (a "
            "replay provider replays the recorded answer and cannot rerun a changed call)"
        )
    recorded = run_start.provider if run_start is not None else None
    if provider is None and recorded not in (None, "scripted"):
        assert run_start is not None
        hint = recorded if recorded in LIVE_PROVIDERS else "anthropic|openai"
        raise BacktrackError(
            f"the call was answered by the {recorded} provider (model {run_start.model!r}), which a scripted "
            f"model would not reproduce; rerun it live with --provider {hint} --model {run_start.model}, "
            "or force the run's scripted model with --provider scripted"
        )
    options = dict(run_start.options) if run_start is not None else {}
    name = recorded_name(options)
    if name is None:
        raise BacktrackError(
            "this trace records no scenario or module to rebuild its scripted model from (run_start.options "
            "has neither 'scenario' nor 'module'); pass --provider anthropic|openai --model M to rerun the "
            "call live"
        )
    if load_module is None:
        raise BacktrackError(
            f"cannot load {name!r} to rebuild its scripted model: no module loader was given"
        )
    return scripted_rerun_provider(load_module(name), options=options, source=name)


def _live(provider: str, model: str, base_url: str | None) -> RerunProvider:
    def make() -> Provider:
        # The SDK loads only now, for a live rerun the user asked for.
        return live_provider(provider, model, base_url=base_url)

    return RerunProvider(factory=make, live=True, description=f"{provider} model {model} (live, as asked)")

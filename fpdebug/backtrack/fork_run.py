"""Running a fork (docs/guide/fork.md): the rebuilt agent, the replaying provider, the linked trace.

See :mod:`fpdebug.backtrack.fork` for what a fork is and what each edit does; this module runs one
(:func:`run_fork`) and compares it with its parent (:class:`ForkOutcome`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fpdebug.backtrack.fork import ForkEdit, ForkPoint, check_edits, edit_request
from fpdebug.backtrack.fork_passes import edit_pass
from fpdebug.backtrack.rerun import (
    ModuleLoader,
    RerunProvider,
    recorded_arguments,
    recorded_name,
    rerun_provider_for,
)
from fpdebug.engine.agent import Agent, RunResult
from fpdebug.engine.providers import LIVE_PROVIDERS
from fpdebug.engine.providers.base import LlmResponse, Provider, allow_live_calls
from fpdebug.engine.providers.replay import ReplayProvider, request_difference
from fpdebug.engine.sink import EventSink, TraceFileSink
from fpdebug.errors import BacktrackError, FpdebugError, ReplayDivergenceError, RunInterrupted
from fpdebug.trace.clock import Clock, SystemClock
from fpdebug.trace.schema import (
    AskRow,
    ForkOrigin,
    LlmCallEvent,
    LlmRequest,
    PassEvent,
    RunStartEvent,
    SlotRouting,
    TraceEvent,
    TurnStartEvent,
)

__all__ = ["CONTINUATIONS", "FirstDifference", "ForkOutcome", "ForkProvider", "run_fork"]

CONTINUATIONS: tuple[str, ...] = ("replay", "scripted", *LIVE_PROVIDERS)
"""What a fork may continue on from its pass."""


class ForkProvider:
    """Answers the calls before the fork point from the recording, the rest from the continuation.

    Args:
        replay: The parent run's cassette (a fresh one).
        before: How many calls replay (the calls before the fork point).
        continuation: The model from the fork's pass on; ``None`` continues on ``replay`` itself,
            where a request that no longer matches the recording ends the run (``diverged at call K``).
    """

    def __init__(
        self,
        replay: ReplayProvider,
        before: int,
        continuation: Provider | None,
        stop: threading.Event | None = None,
    ) -> None:
        self.replay = replay
        self.stop = stop
        self.before = before
        self.continuation = continuation
        self.name = continuation.name if continuation is not None else replay.name
        self.model = continuation.model if continuation is not None else replay.model
        self.cache_prompt = getattr(continuation, "cache_prompt", False) is True
        self.run_options = getattr(continuation, "run_options", None)
        self.server = getattr(continuation, "server", None)
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer one call: from the recording before the fork point, then from the continuation.

        Raises:
            RunInterrupted: ``stop`` was set (the fork was cancelled).
            ReplayDivergenceError: A call before the fork point differs from the parent's (the rebuilt
                agent did not reproduce the run), or, continuing on replay, the recording has no
                answer for this request.
        """
        if self.stop is not None and self.stop.is_set():
            # The debugger's cancel: the run ends `interrupted`, its trace valid up to here.
            raise RunInterrupted("the fork was cancelled before its next model call")
        with self._lock:
            self.calls += 1
            number = self.calls
        if number <= self.before:
            try:
                return self.replay.complete(request)
            except ReplayDivergenceError as error:
                raise ReplayDivergenceError(
                    f"call {number}, before the fork's pass, differs from the parent's: the rebuilt agent "
                    f"did not reproduce the recorded run ({error})",
                    provider=self.name,
                ) from error
        if self.continuation is not None:
            return self.continuation.complete(request)
        try:
            return self.replay.complete(request)
        except ReplayDivergenceError as error:
            raise ReplayDivergenceError(
                f"diverged at call {number}: the recording has no answer for this request ({error}); "
                "continue with --provider scripted (or a live one) to let a model answer it",
                provider=self.name,
            ) from error


class _ForkSink:
    """Writes to the trace file, with ``run_start.fork_of`` set and the passes from the fork point on
    recording the edits (:func:`~fpdebug.backtrack.fork_passes.edit_pass`); keeps the fork's calls."""

    def __init__(
        self,
        inner: EventSink,
        origin: ForkOrigin,
        point: ForkPoint,
        edits: Sequence[ForkEdit],
        progress: Callable[[LlmCallEvent], None] | None = None,
    ) -> None:
        self.progress = progress
        self.inner = inner
        self.origin = origin
        self.point = point
        self.edits = tuple(edits)
        self.calls: list[LlmCallEvent] = []
        self._prior: SlotRouting | None = None  # the previous pass's routing, as recorded, this turn

    def emit(self, event: TraceEvent) -> None:
        if isinstance(event, RunStartEvent):
            event = event.model_copy(update={"fork_of": self.origin})
        elif isinstance(event, LlmCallEvent):
            self.calls.append(event)
        elif isinstance(event, TurnStartEvent):
            self._prior = None  # the evaluator's delta starts again each turn
        elif isinstance(event, PassEvent):
            event = self._pass(event)
        self.inner.emit(event)
        if isinstance(event, LlmCallEvent) and self.progress is not None:
            self.progress(event)

    def _pass(self, event: PassEvent) -> PassEvent:
        point = self.point
        where = (event.turn or 0, event.iteration or 0)
        if where >= (point.turn, point.at_pass):
            event = edit_pass(
                event,
                self.edits,
                declared=point.run_start.injections,
                at_pass=point.at_pass,
                turn=point.turn,
                at_fork_pass=where == (point.turn, point.at_pass),
                prior=self._prior,
            )
        self._prior = event.by_slot
        return event

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class FirstDifference:
    """The first call whose request differs between the parent and the fork."""

    call: int
    """The 1-based call number."""
    turn: int | None
    """Its turn (the fork's, or the parent's when the fork made fewer calls)."""
    iteration: int | None
    """Its iteration."""
    what: str
    """What differed, in one sentence."""


@dataclass(frozen=True)
class ForkOutcome:
    """A finished fork and its first difference against its parent."""

    point: ForkPoint
    """The parent's fork point."""
    edits: tuple[ForkEdit, ...]
    """The edits, as given."""
    path: Path
    """The fork's trace."""
    result: RunResult
    """How the fork ended."""
    calls: tuple[LlmCallEvent, ...]
    """The fork's calls."""
    continuation: str
    """The provider it continued on."""
    live: bool
    """Whether that provider was live."""

    @property
    def parent_answer(self) -> str:
        """The parent's final answer (its last turn's)."""
        return self.point.final_answers[-1] if self.point.final_answers else ""

    def first_difference(self) -> FirstDifference | None:
        """The first call whose request differs from the parent's, ``None`` when none does."""
        parent = self.point.calls
        for index in range(max(len(parent), len(self.calls))):
            number = index + 1
            if index >= len(self.calls):
                old = parent[index]
                return FirstDifference(number, old.turn, old.iteration, "the fork made no such call")
            new = self.calls[index]
            if index >= len(parent):
                return FirstDifference(number, new.turn, new.iteration, "the parent made no such call")
            difference = request_difference(parent[index].request, new.request)
            if difference is not None:
                return FirstDifference(number, new.turn, new.iteration, difference.describe())
        return None

    def live_calls(self) -> tuple[LlmCallEvent, ...]:
        """The calls a live continuation answered (from the fork point on)."""
        return self.calls[self.point.before :] if self.live else ()


def _build_agent(point: ForkPoint, load_module: ModuleLoader) -> Agent:
    options = dict(point.run_start.options)
    name = recorded_name(options)
    if name is None:
        raise BacktrackError(
            "this trace records no scenario or module to rebuild its agent from (run_start.options has "
            "neither 'scenario' nor 'module'): its configuration was not recorded in a rebuildable form"
        )
    module = load_module(name)
    factory = getattr(module, "build_agent", None)
    if not callable(factory):
        raise BacktrackError(f"{name} has no build_agent() to rebuild the run's agent from")
    kwargs = recorded_arguments(factory, options, source=name)
    try:
        agent = factory(**kwargs)
    except FpdebugError:
        raise
    except Exception as exc:  # the user's module failed: say where, never a traceback
        raise BacktrackError(f"{name}: build_agent() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(agent, Agent):
        raise BacktrackError(f"{name}: build_agent() returned {type(agent).__name__}, not an Agent")
    without = options.get("without")
    if isinstance(without, dict):
        # The parent was itself a rerun with context left out: leave the same out.
        agent = agent.without(
            injection_ids=[str(i) for i in without.get("injection_ids", ())],
            tool_names=[str(t) for t in without.get("tool_names", ())],
        )
    return agent.max_iterations(point.run_start.max_iterations).check()


def _parent_answers(point: ForkPoint) -> Callable[[AskRow], object] | None:
    """The user's side of the fork's argument asks: the parent's recorded answers, like its user
    messages (docs/honesty.md §12.7). Each is given once, to the ask on the same call and argument,
    else to the next ask on the same argument; an ask the parent never answered stops the fork."""
    recorded = list(point.user_answers)
    if not recorded:
        return None

    def answer(ask: AskRow) -> object:
        for same_call in (True, False):
            for index, given in enumerate(recorded):
                if given.path == ask.path and (given.tool_call_id == ask.tool_call_id or not same_call):
                    return recorded.pop(index).answer
        raise BacktrackError(
            f"the fork asked the user for {ask.path} of {ask.tool_name} ({ask.tool_call_id}), and the "
            "parent recorded no answer to give: the fork's trace ends paused there"
        )

    return answer


def _user_messages(point: ForkPoint, edits: Sequence[ForkEdit]) -> list[str]:
    """The turns to send: the parent's, with the fork turn's message replaced when the fork is at its
    first pass (its ``turn_start`` then records the new message; at a later pass the turn has begun,
    so the message is edited in the requests from the pass on)."""
    messages = list(point.user_messages)
    user = next((e.value for e in edits if e.kind == "user-message"), None)
    if user is not None and point.at_pass == 1:
        messages[point.turn - 1] = user
    return messages


def _continuation(
    point: ForkPoint, provider: str, model: str | None, base_url: str | None, load_module: ModuleLoader
) -> RerunProvider | None:
    if provider == "replay":
        if model is not None:
            raise BacktrackError(
                "--model needs a model to answer: continue with --provider scripted or a live one"
            )
        return None
    if provider not in CONTINUATIONS:
        raise BacktrackError(
            f"cannot continue on provider {provider!r}: use one of {', '.join(CONTINUATIONS)}"
        )
    return rerun_provider_for(
        point.run_start, provider=provider, model=model, base_url=base_url, load_module=load_module
    )


def run_fork(
    point: ForkPoint,
    edits: Sequence[ForkEdit],
    *,
    output: str | Path,
    load_module: ModuleLoader,
    provider: str = "replay",
    model: str | None = None,
    base_url: str | None = None,
    live: bool = False,
    clock: Clock | None = None,
    overwrite: bool = False,
    stop: threading.Event | None = None,
    progress: Callable[[LlmCallEvent], None] | None = None,
) -> ForkOutcome:
    """Fork the parent run at its pass with ``edits`` and write the new trace to ``output``.

    Args:
        point: The parent's fork point (:func:`~fpdebug.backtrack.fork.load_fork_point`).
        edits: The edits (checked here; ``model`` / ``provider`` edits are recorded, and ``provider``
            and ``model`` say what they choose).
        output: The new trace.
        load_module: Loads the recorded scenario or module (as reruns do).
        provider: The continuation: ``replay``, ``scripted`` or a live provider.
        model: The continuation's model (live providers need one).
        base_url: Another endpoint for a live provider.
        live: The caller allows a live continuation (the user passed ``--live``).
        clock: The fork's clock.
        overwrite: Replace ``output`` if it exists.
        stop: Set it to cancel the fork before its next model call (the run ends ``interrupted``).
        progress: Called (on the fork's thread) with each ``llm_call`` once it is written.

    Raises:
        BacktrackError: A bad edit, a run that cannot be rebuilt, a live provider without ``live``.
        TraceError: The new trace cannot be written.
    """
    check_edits(point, edits)
    if provider in LIVE_PROVIDERS and not live:
        raise BacktrackError(
            f"--provider {provider} answers from a live model, which costs money: pass --live to allow it"
        )
    agent = _build_agent(point, load_module)
    source = _continuation(point, provider, model, base_url, load_module)
    continuation = source.factory() if source is not None else None
    replay = ReplayProvider.from_trace(point.trace, run_id=point.run_id)
    fork_provider = ForkProvider(replay, point.before, continuation, stop)

    def edit(request: LlmRequest, turn: int, iteration: int) -> LlmRequest:
        if (turn, iteration) < (point.turn, point.at_pass):
            return request  # before the fork point: the parent's request, byte for byte
        return edit_request(
            request, edits, point=point, at_fork_pass=(turn, iteration) == (point.turn, point.at_pass)
        )

    origin = ForkOrigin(
        trace=point.trace.name,
        run_id=point.run_id,
        turn=point.turn,
        at_pass=point.at_pass,
        edits=[e.record() for e in edits],
        provider=provider,
    )
    path = Path(output)
    if path.exists() and path.samefile(point.trace):
        raise BacktrackError(f"refusing to write the fork over its parent trace: {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = clock or SystemClock()
    options = dict(point.run_start.options)
    with TraceFileSink.create(path, clock=clock, overwrite=overwrite) as file_sink:
        sink = _ForkSink(file_sink, origin, point, edits, progress)
        # Nothing reaches the network unless the user asked for a live continuation.
        with allow_live_calls(source is not None and source.live):
            result = agent.edit_requests(edit).run(
                _user_messages(point, edits),
                provider=fork_provider,
                sink=sink,
                clock=clock,
                options=options,
                answer=_parent_answers(point),
            )
    return ForkOutcome(
        point=point,
        edits=tuple(edits),
        path=path,
        result=result,
        calls=tuple(sink.calls),
        continuation=provider,
        live=source is not None and source.live,
    )

"""An open run: :class:`Conversation` writes ``run_start``, runs one :class:`~fpdebug.engine.agent.loop.TurnLoop` per user message, and writes ``run_end``."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, Self

from fpdebug.engine.agent.failures import RunFailed, error_info
from fpdebug.engine.agent.limits import SpendMeter
from fpdebug.engine.agent.loop import TurnLoop
from fpdebug.engine.agent.results import RunResult, RunStatus, TurnResult
from fpdebug.engine.providers.base import check_provider
from fpdebug.engine.sink import EventSink, MemorySink, Recorder
from fpdebug.errors import DefinitionError, FpdebugError, RunInterrupted
from fpdebug.trace.clock import Clock, SystemClock
from fpdebug.trace.records import well_formed_text
from fpdebug.trace.schema import AskRow, ErrorInfo, Message, RunEndEvent, RunStartEvent

if TYPE_CHECKING:
    from fpdebug.engine.agent.builder import Agent
    from fpdebug.engine.providers.base import Provider


class Conversation:
    """An open run: send user messages one turn at a time, then :meth:`close` it (writes ``run_end``).

    Use it as a context manager to close it even when the caller fails::

        with agent.conversation(provider=model, sink=sink) as chat:
            chat.send("Where is my order?")
            chat.send("And the refund?")
        result = chat.result
    """

    def __init__(
        self,
        agent: Agent,
        *,
        provider: Provider,
        sink: EventSink | None,
        clock: Clock | None,
        run_id: str | None,
        options: Mapping[str, object] | None,
    ) -> None:
        self.agent = agent
        """The agent."""
        self.provider = check_provider(provider)
        """The model."""
        self.caches_prompt: bool = getattr(provider, "cache_prompt", False) is True
        """The provider caches the stable prefix (``cache_prompt``): each request records where it ends."""
        self.compiled = agent._compile()
        self.sink: EventSink = sink if sink is not None else MemorySink()
        """Where the events go."""
        self.clock: Clock = clock or SystemClock()
        """The run's clock."""
        self.run_id: str = run_id or uuid.uuid4().hex[:12]
        """The run's id."""
        self.recorder = Recorder(self.sink, clock=self.clock, run_id=self.run_id)
        """Stamps and emits the events."""
        self.history: list[Message] = []
        """The conversation as the model sees it, across turns."""
        self.turns: list[TurnResult] = []
        """The turns run so far."""
        self.calls = 0
        """LLM calls made so far (the next ``llm_call``'s ``call_index`` is one more)."""
        self.spend: SpendMeter | None = None
        """The run's spend under the agent's cost budget (``None`` without one; set with ``run_start``)."""
        self.cursor: str | None = None
        """The cursor at the end of the last turn (carried only under ``continuity('conversation')``)."""
        self.status: RunStatus | Literal["running"] = "running"
        """``running`` until ``run_end`` is written."""
        self._result: RunResult | None = None
        self._last_loop: TurnLoop | None = None
        self._paused_loop: TurnLoop | None = None
        self._busy = threading.Lock()
        try:
            self._write_run_start(options)
        except RunInterrupted as stop:  # stopped as it opens: the conversation is born ended
            if stop.stored:
                self._end("interrupted")  # run_start is in the trace: close the run it opened
            else:
                # The sink refused run_start: nothing of the run is in the trace, and a run_end alone
                # would close a run the trace never opened.
                self.status = "interrupted"
                events = tuple(self.sink.events) if isinstance(self.sink, MemorySink) else None
                self._result = RunResult(run_id=self.run_id, status="interrupted", turns=(), events=events)

    def _write_run_start(self, options: Mapping[str, object] | None) -> None:
        """Write ``run_start``: the declaration as compiled, and the options recorded for this run."""
        spec, compiled = self.agent.spec, self.compiled
        address, port = self._server()
        started = self.recorder.emit(
            RunStartEvent,
            agent_name=spec.name,
            provider=self.provider.name,
            model=self.provider.model,
            max_iterations=spec.max_iterations,
            system_prompt=spec.system_prompt,
            injections=[i.declaration() for i in compiled.setup.injections],
            tools=list(compiled.agent_tools),
            skill_map=spec.skill_map.declaration() if spec.skill_map is not None else None,
            maps=compiled.plan.declaration() if compiled.plan is not None else None,
            honesty=spec.honesty.run_arms(self) if spec.honesty is not None else None,
            options=self._recorded_options(options),
            server_address=address,
            server_port=port,
        )
        if spec.cost_budget is not None:
            # Priced at the run's start, the instant run_start records: the replay prices the same.
            self.spend = SpendMeter(spec.cost_budget, started.ts)

    def _server(self) -> tuple[str | None, int | None]:
        """The host and port a live provider talks to (its ``server``), else ``(None, None)``."""
        server = getattr(self.provider, "server", None)
        if (
            isinstance(server, tuple)
            and len(server) == 2
            and isinstance(server[0], str)
            and server[0]
            and isinstance(server[1], int)
            and 0 <= server[1] <= 65535
        ):
            return server[0], server[1]
        return None, None

    def _recorded_options(self, options: Mapping[str, object] | None) -> dict[str, object]:
        """``run_start.options``: the loop's settings, what ``without()`` left out, then the agent's
        and this run's free-form options."""
        spec = self.agent.spec
        recorded: dict[str, object] = {"tool_timeout": spec.tool_timeout, "continuity": spec.continuity}
        if spec.temperature is not None:
            recorded["temperature"] = spec.temperature
        if spec.max_tokens is not None:
            recorded["max_tokens"] = spec.max_tokens
        if spec.excluded_injections or spec.ignored_tools or spec.excluded_memory:
            recorded["without"] = {
                "injection_ids": list(spec.excluded_injections),
                "tool_names": list(spec.ignored_tools),
            }
            if spec.excluded_memory:
                recorded["without"]["memory_ids"] = list(spec.excluded_memory)  # type: ignore[index]
        if spec.on_truncation != "reask":
            recorded["on_truncation"] = spec.on_truncation
        if spec.wrap_up:
            recorded["wrap_up"] = True
        if spec.window is not None:
            recorded["window"] = spec.window.declaration()
        if spec.cost_budget is not None:
            recorded["cost_budget"] = spec.cost_budget.declaration()
        if spec.output_schema is not None:
            recorded["output_schema"] = spec.output_schema.declaration()
        if not spec.step_nudge and self.compiled.step_plans:
            recorded["step_nudge"] = False
        provider_options = getattr(self.provider, "run_options", None)
        if isinstance(provider_options, Mapping) and provider_options:
            # Reasoning / thinking / caching settings shape every reply: recorded with the run.
            recorded["provider_options"] = dict(provider_options)
        recorded.update(spec.options)
        recorded.update(options or {})
        return recorded

    @property
    def result(self) -> RunResult | None:
        """The run's result once it ended (``None`` while it is open)."""
        return self._result

    def send(self, user_message: str, *, entry_scores: Mapping[str, float] | None = None) -> TurnResult:
        """Run one turn.

        Args:
            user_message: What the user says.
            entry_scores: The turn's precomputed entry scores (entry id → score, e.g. from an app's
                retriever): tier 2 of the turn-start cascade when no classifier or entry scorer is
                declared, and carried in every pass's context (docs/context-model.md §5.1).

        Returns:
            The turn's result. When the run ended during the turn (``failed`` or ``interrupted``), the
            conversation is closed and further sends raise.

        Raises:
            FpdebugError: The conversation has ended, or another turn is running.
            KeyboardInterrupt: Re-raised after ``run_end`` ``interrupted`` was recorded.
            Exception: A sink that cannot write (after trying to record ``run_end`` ``failed``).
        """
        if not isinstance(user_message, str):
            raise DefinitionError(f"a user message must be a string, got {user_message!r}")
        # A lone surrogate (a non-UTF-8 file name passed on through `--message "$(ls)"`) is sent as
        # U+FFFD: the trace can hold only that, and the model must read what the trace records.
        user_message = well_formed_text(user_message)
        if self.status != "running":
            raise FpdebugError(f"run {self.run_id} has ended ({self.status}); open a new conversation")
        if self._paused_loop is not None:
            raise FpdebugError(
                f"run {self.run_id} is paused on an argument ask ({self._paused_loop.paused_tool_call_id}): "
                "answer it with resume(value) before the next message"
            )
        if not self._busy.acquire(blocking=False):
            raise FpdebugError(f"run {self.run_id}: a turn is already running; send one message at a time")
        try:
            loop = TurnLoop(self, len(self.turns) + 1, user_message, entry_scores)
            self._last_loop = loop
            return self._drive(loop, loop.run)
        finally:
            self._busy.release()

    @property
    def paused(self) -> AskRow | None:
        """The argument ask the run waits on (docs/honesty.md §12.7), or ``None``.

        Its ``question`` is what to put to the user, ``guessed`` what the model supplied; answer it
        with :meth:`resume`.
        """
        return self._paused_loop.paused if self._paused_loop is not None else None

    def resume(self, answer: object) -> TurnResult:
        """Answer the argument ask the run waits on: the paused call runs with ``answer``, the turn goes on.

        Args:
            answer: The user's value (JSON data: a text, a number…).

        Returns:
            The turn's result (``paused`` again when the batch has another argument to ask about).

        Raises:
            FpdebugError: The run is not paused, has ended, or a turn is running.
            DefinitionError: The answer is not JSON data.
        """
        loop = self._paused_loop
        if self.status != "running" or loop is None:
            raise FpdebugError(f"run {self.run_id} is not paused on an argument ask: nothing to resume")
        try:  # a bad answer is refused before anything is recorded: the ask still waits
            answer = json.loads(json.dumps(answer, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise DefinitionError(
                f"an answer must be JSON data (str, number, bool, None, list, dict): {exc}"
            ) from None
        if not self._busy.acquire(blocking=False):
            raise FpdebugError(f"run {self.run_id}: a turn is already running; send one message at a time")
        try:
            self._paused_loop = None
            return self._drive(loop, lambda: loop.resume(answer))
        finally:
            self._busy.release()

    def _drive(self, loop: TurnLoop, step: Callable[[], TurnResult]) -> TurnResult:
        """Run a turn (or resume it) and record how the run ended if it ended during the turn."""
        try:
            turn = step()
        except RunFailed as failed:
            turn = loop.result("failed", error=failed.error)
            self.turns.append(turn)
            self._end("failed", error=failed.error, exception=failed.cause)
            return turn
        except RunInterrupted:
            turn = loop.result("interrupted")
            self.turns.append(turn)
            self._end("interrupted")
            return turn
        except KeyboardInterrupt:
            self.turns.append(loop.result("interrupted"))
            self._end_quietly("interrupted", None)
            raise
        except BaseException as exc:
            error = error_info(exc)
            self.turns.append(loop.result("failed", error=error))
            self._end_quietly("failed", error, exc)
            raise
        if turn.status == "paused":
            self._paused_loop = loop  # the turn is not over: resume() continues it
            return turn
        self.turns.append(turn)
        if self.agent.spec.continuity == "conversation":
            self.cursor = loop.cursor
        return turn

    def close(self) -> RunResult:
        """End the run (``run_end`` ``completed`` if nothing ended it before, ``paused`` while an
        argument ask waits) and return its result."""
        if self._result is None and self._paused_loop is not None:
            # Closed while a call waits for the user's answer: the turn and the run end paused.
            self.turns.append(self._paused_loop.result("paused"))
            self._paused_loop = None
            self._end("paused")
        if self._result is None:
            self._end("completed")
        assert self._result is not None
        return self._result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._result is not None:
            return
        if exc is None:
            self.close()
        elif isinstance(exc, KeyboardInterrupt | RunInterrupted):
            self._end_quietly("interrupted", None)
        else:
            self._end_quietly("failed", error_info(exc), exc)

    def _end(
        self, status: RunStatus, *, error: ErrorInfo | None = None, exception: BaseException | None = None
    ) -> None:
        inputs = sum(t.input_tokens for t in self.turns)
        outputs = sum(t.output_tokens for t in self.turns)
        self.status = status
        # The result exists before the write, so a sink that fails on run_end loses no answer.
        self._result = RunResult(
            run_id=self.run_id,
            status=status,
            turns=tuple(self.turns),
            error=error,
            exception=exception,
            input_tokens=inputs,
            output_tokens=outputs,
            events=tuple(self.sink.events) if isinstance(self.sink, MemorySink) else None,
        )
        try:
            self.recorder.emit(
                RunEndEvent,
                status=status,
                error=error,
                turns=len(self.turns),
                input_tokens=inputs,
                output_tokens=outputs,
                refused_turns=list(self._result.refused_turns) or None,
                end_state=self._last_loop.end_state() if self._last_loop is not None else None,
            )
        except RunInterrupted:
            pass  # a gate still stopping the run: it is ending anyway, and the gate chose to drop run_end
        if isinstance(self.sink, MemorySink):
            self._result = replace(self._result, events=tuple(self.sink.events))

    def _end_quietly(
        self, status: RunStatus, error: ErrorInfo | None, exception: BaseException | None = None
    ) -> None:
        # The run is already going down with another exception: record what we can, never mask it.
        try:
            self._end(status, error=error, exception=exception)
        except BaseException:
            pass

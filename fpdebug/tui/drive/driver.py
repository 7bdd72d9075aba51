"""RunDriver: the debugger's run controller — a scenario run in a worker thread behind a StepGate.

The driver prepares the trace file before the app opens it (so the app can follow it from its first
byte), starts :func:`~fpdebug.demo.registry.run_target` in a thread worker of the app with the gate
as its ``wrap_sink``, and tells the app of every change of the gate's state with a
:class:`RunStateChanged` message. The run writes its trace exactly as ``fpdebug run`` does: what is
seen live is what a replay of the file shows later. :meth:`RunDriver.stop` (the app calls it when it
exits) ends the run cleanly: ``run_end {interrupted}``, nothing lost; a model call in flight is not
waited for (:mod:`~fpdebug.tui.drive.model_call`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from textual.message import Message

from fpdebug.demo.registry import Scenario, ScenarioRun, run_target
from fpdebug.engine.providers.base import Provider, SdkProvider
from fpdebug.engine.sink import EventSink
from fpdebug.errors import TraceError
from fpdebug.trace.clock import Clock
from fpdebug.trace.inert import inert_line
from fpdebug.trace.model import KINDS
from fpdebug.trace.schema import RunStartEvent, TraceEvent
from fpdebug.trace.writer import Durability
from fpdebug.tui.commands import PaletteCommand
from fpdebug.tui.drive.declared import declared_nodes, declared_tools
from fpdebug.tui.drive.gate import Breakpoint, GateStatus, StepGate
from fpdebug.tui.drive.model_call import InterruptibleProvider, needs_interruption

if TYPE_CHECKING:
    from fpdebug.tui.app import FpdebugApp
    from fpdebug.views.session import TraceSession

__all__ = ["RunDriver", "RunStateChanged", "declared_nodes", "declared_tools"]

_NOT_BREAKABLE = frozenset({"run_start", "run_end", "trace_header"})


class RunStateChanged(Message):
    """The driven run paused, resumed, hit a breakpoint, is being stopped or ended (posted from any thread).

    Args:
        status: The gate's new status (the driver's view of it: a run that failed outside the
            trace is ``ended`` with outcome ``failed``).
    """

    def __init__(self, status: GateStatus) -> None:
        self.status = status
        """The new status."""
        super().__init__()


def prepare_trace_file(path: Path, *, overwrite: bool = False) -> None:
    """Make ``path`` an empty file the app can open before the run writes its header.

    Raises:
        TraceError: It exists, is not empty and ``overwrite`` is false; or it cannot be created.
    """
    try:
        if path.is_dir():
            raise TraceError(f"{path}: is a directory")
        if path.exists():
            size = path.stat().st_size
            if size and not overwrite:
                raise TraceError(f"{path}: already exists and is not empty ({size} bytes); pass --overwrite")
            os.truncate(path, 0)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        raise TraceError(f"{path}: cannot prepare the trace file: {error.strerror or error}") from None


class RunDriver:
    """Runs a scenario (or a user's module) behind a :class:`StepGate`, for the debugger to drive.

    Args:
        scenario: What to run (:func:`~fpdebug.demo.registry.load_target`).
        trace_path: Where the trace goes; the file is prepared here (empty) so the app can open it.
        provider: The model; the scenario's scripted one by default.
        clock: The run's clock (a ``FixedClock`` makes the trace reproducible).
        run_id: The run's id.
        messages: The user messages (the scenario's by default).
        max_iterations: Overrides the agent's per-turn limit.
        overwrite: Replace an existing trace file.
        durability: The trace writer's fsync policy.
        start: ``paused`` stops at the first ``pass``; ``running`` runs to a breakpoint or the end.
        breakpoints: Breakpoints set from the start.
        wrap_sink: Another wrapper of the trace file's sink (an OTLP stream); the gate wraps it.

    Raises:
        TraceError: The trace file cannot be prepared.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        trace_path: str | os.PathLike[str],
        provider: Provider | None = None,
        clock: Clock | None = None,
        run_id: str | None = None,
        messages: Sequence[str] | None = None,
        max_iterations: int | None = None,
        overwrite: bool = False,
        durability: Durability = "batch",
        start: Literal["paused", "running"] = "paused",
        breakpoints: Iterable[Breakpoint] = (),
        wrap_sink: Callable[[EventSink], EventSink] | None = None,
    ) -> None:
        self.scenario = scenario
        """What runs."""
        self.trace_path = Path(trace_path)
        """Where its trace goes."""
        self.gate = StepGate(start=start, breakpoints=breakpoints, on_change=self._changed)
        """The step gate the run's events pass through."""
        self.result: ScenarioRun | None = None
        """The run's result, once it has returned."""
        self.error: BaseException | None = None
        """What stopped the run outside the trace (a trace that cannot be written, a bad definition)."""
        self.finished = threading.Event()
        """Set when the run's thread is done."""
        self.stopped = threading.Event()
        """Set by :meth:`stop`: a model call in flight is walked away from (see ``model_call``)."""
        self._provider = provider
        self._clock = clock
        self._run_id = run_id
        self._messages = messages
        self._max_iterations = max_iterations
        self._durability: Durability = durability
        self._wrap_sink = wrap_sink
        self._app: FpdebugApp | None = None
        self.reply_so_far = ""
        """The tail of the reply the model is streaming (a live provider with ``on_delta``); emptied
        when the call's ``llm_call`` is written, so the status line shows the reply as it arrives."""
        self._last_stream_post = 0.0
        prepare_trace_file(self.trace_path, overwrite=overwrite)

    # ------------------------------------------------------------------------------------------
    # RunController

    def start(self, app: FpdebugApp) -> None:
        """Start the run in a thread worker of ``app`` (group ``run``)."""
        self._app = app
        app.run_worker(self._run, name="run", group="run", thread=True, exclusive=True, exit_on_error=False)

    def stop(self) -> None:
        """End the run cleanly (``run_end`` interrupted); never blocks, never waits on the model."""
        self.stopped.set()
        self.gate.stop()

    def commands(self) -> list[PaletteCommand]:
        """``run: step`` / ``pause`` / ``continue`` / ``break on …`` / ``clear breakpoints``."""
        gate = self.gate
        commands = [
            PaletteCommand("run: step", "Run until the next pass is written, then pause", self.step),
            PaletteCommand("run: pause", "Pause at the next event the run writes", self.pause),
            PaletteCommand("run: continue", "Run until a breakpoint hits or the run ends", self.resume),
            PaletteCommand(
                "run: break on lease_prune",
                "Pause when leases are pruned (at evaluate or tool-calls)",
                partial(self.add_breakpoint, Breakpoint.on_kind("lease_prune")),
            ),
            PaletteCommand(
                "run: break on park",
                "Pause when a map parks (an engagement event with a parked change)",
                partial(self.add_breakpoint, Breakpoint.park()),
            ),
        ]
        start = self._run_start()
        # Node and tool names come from the trace: shown inert; the breakpoint keeps the real name.
        for node in declared_nodes(start):
            commands.append(
                PaletteCommand(
                    f"run: break on cursor into {inert_line(node)}",
                    "Pause when the cursor moves into this skill",
                    partial(self.add_breakpoint, Breakpoint.cursor_into(node)),
                )
            )
        for tool in declared_tools(start):
            commands.append(
                PaletteCommand(
                    f"run: break on tool {inert_line(tool)}",
                    "Pause when the model asks for this tool (before it runs)",
                    partial(self.add_breakpoint, Breakpoint.tool(tool)),
                )
            )
        for kind in KINDS:
            if kind not in _NOT_BREAKABLE and kind != "lease_prune":
                commands.append(
                    PaletteCommand(
                        f"run: break on kind {kind}",
                        f"Pause after every {kind} event",
                        partial(self.add_breakpoint, Breakpoint.on_kind(kind)),
                    )
                )
        set_count = len(gate.breakpoints)
        commands.append(
            PaletteCommand(
                "run: clear breakpoints", f"Clear every breakpoint ({set_count} set)", self.clear_breakpoints
            )
        )
        return commands

    # ------------------------------------------------------------------------------------------
    # Controls (UI thread)

    @property
    def status(self) -> GateStatus:
        """The gate's status; a run that died outside the trace is ``ended`` with outcome ``failed``."""
        status = self.gate.status
        if self.error is not None and status.state != "ended":
            return replace(
                status, state="ended", paused_at=None, outcome="failed", error=_describe(self.error)
            )
        return status

    def step(self) -> None:
        """Run one pass (until the next ``pass`` event is written)."""
        if not self.gate.step():
            self._say_why_not("step")

    def pause(self) -> None:
        """Pause at the next event."""
        if not self.gate.pause():
            self._say_why_not("pause")

    def resume(self) -> None:
        """Continue to the next breakpoint or the end."""
        if not self.gate.resume():
            self._say_why_not("continue")

    def toggle(self) -> None:
        """Pause a running run, continue a paused one."""
        if self.status.state == "paused":
            self.resume()
        else:
            self.pause()

    def add_breakpoint(self, breakpoint: Breakpoint) -> None:
        """Set a breakpoint (and say so)."""
        added = self.gate.add_breakpoint(breakpoint)
        self._notify(f"Breakpoint {'set' if added else 'already set'}: {breakpoint.label}")

    def clear_breakpoints(self) -> None:
        """Clear every breakpoint (and say how many)."""
        count = self.gate.clear_breakpoints()
        self._notify(f"{count} breakpoint{'s' if count != 1 else ''} cleared")

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run's thread to finish; returns whether it did."""
        return self.finished.wait(timeout)

    # ------------------------------------------------------------------------------------------
    # The run (worker thread)

    def _run(self) -> None:
        provider = self._provider
        if isinstance(provider, SdkProvider) and provider.on_delta is None:
            provider.on_delta = self._on_delta  # a live provider streams its reply to the status line
        if provider is not None and needs_interruption(provider):
            provider = InterruptibleProvider(provider, self.stopped)  # quitting never waits on the model
        try:
            self.result = run_target(
                self.scenario,
                trace_path=self.trace_path,
                provider=provider,
                clock=self._clock,
                run_id=self._run_id,
                messages=self._messages,
                max_iterations=self._max_iterations,
                durability=self._durability,
                wrap_sink=self._wrap,
            )
        except BaseException as error:
            self.error = error
        finally:
            self.finished.set()
            self._changed(self.status)

    def _wrap(self, sink: EventSink) -> EventSink:
        return _ReplyDone(
            self, self.gate.attach(self._wrap_sink(sink) if self._wrap_sink is not None else sink)
        )

    def _on_delta(self, text: str) -> None:
        """A piece of the streamed reply (on the run's thread): keep the tail, repaint now and then."""
        self.reply_so_far = (self.reply_so_far + text)[-_REPLY_TAIL:]
        now = time.monotonic()
        if now - self._last_stream_post >= _STREAM_REPAINT:
            self._last_stream_post = now
            self._changed(self.status)

    def _changed(self, status: GateStatus) -> None:
        app = self._app
        if app is not None:
            app.post_message(RunStateChanged(self.status))

    def _run_start(self) -> RunStartEvent | None:
        app = self._app
        if app is None:
            return None
        session: TraceSession = app.session
        runs = session.model.runs
        return session.run_start(runs[0].run_id) if runs else None

    def _say_why_not(self, what: str) -> None:
        status = self.status
        if status.state == "ended":
            self._notify(f"Cannot {what}: the run has ended ({status.outcome}).")
        elif status.state == "stopping":
            self._notify(f"Cannot {what}: the run is being stopped.")
        elif status.state == "paused":
            self._notify("The run is already paused.")
        else:
            self._notify("The run is already doing that.")

    def _notify(self, text: str) -> None:
        if self._app is not None:
            self._app.notify(inert_line(text), markup=False, timeout=3)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


_REPLY_TAIL = 200
"""Characters of the streamed reply kept for the status line."""
_STREAM_REPAINT = 0.1
"""Seconds between two repaints while a reply streams."""


class _ReplyDone:
    """Passes events on; an ``llm_call`` ends the streamed reply the status line shows."""

    def __init__(self, driver: RunDriver, inner: EventSink) -> None:
        self._driver = driver
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)  # next_seq and the like

    def emit(self, event: TraceEvent) -> None:
        if event.kind == "llm_call":
            self._driver.reply_so_far = ""
        self._inner.emit(event)

    def close(self) -> None:
        self._inner.close()

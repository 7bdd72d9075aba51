"""BacktrackPane: walk back from an answer to the context that caused it, and prove it with reruns.

The pane explains one ``llm_call`` (by default the final answer of the last turn; ``B`` on a
timeline or calls row chooses that iteration's call). Opening it traces the call's provenance in a
worker (:func:`fpdebug.backtrack.explain`: nothing rerun, nothing written) and, when the sidecar
beside the trace holds a saved backtrack of that call, shows the saved verdicts at once, labelled
with their date and status. On a followed trace that still grows, a pane on the default call
follows it: :meth:`BacktrackPane.trace_grew` traces the new final answer again when a call with a
reply or an end arrives (never while reruns run, never over a call the user chose).

``a`` (ablate), ``i`` (ablate and bisect) and ``r`` (ablate and restore) start the causal reruns in a
``@work(thread=True, exclusive=True, group="backtrack", exit_on_error=False)`` worker that calls
:func:`fpdebug.backtrack.backtrack`. Its ``progress`` hook posts :class:`BacktrackPane.Progressed`
after every rerun and, whenever the sidecar gained a record (a verdict is appended to it as soon as
it completes), :class:`BacktrackPane.VerdictArrived` with the report as saved so far; ``x`` or
``esc`` sets the event its ``cancelled`` hook reads, and the backtracker stops before its next
rerun, keeping (and saving) every finished verdict. The thread never touches a widget. The reruns use
the run's scripted model only: a trace a live provider answered is refused by the backtracker, and
the pane shows its message with the command line that would rerun it live. A run built from the
user's own module is rerun only when the user named that module (``fpdebug view TRACE --module
PATH``, or the module ``fpdebug run … --tui`` ran: :attr:`~fpdebug.tui.app.TraceSource.rerun_module`);
otherwise the pane shows the refusal, naming the recorded module and the option, and reruns nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import ProgressBar
from textual.worker import get_current_worker

from fpdebug.backtrack import (
    BacktrackReport,
    SavedBacktrack,
    backtrack,
    default_call_line,
    explain,
    load_sidecar,
    sidecar_path_for,
    sidecar_where,
)
from fpdebug.backtrack.walk import Walk, walk_to_root
from fpdebug.errors import BacktrackError, FpdebugError
from fpdebug.tui.text import Palette, plain
from fpdebug.tui.widgets.backtrack_report import PaneState, VerdictBlock, backtrack_document, find_assessment
from fpdebug.tui.widgets.bars import TextBar
from fpdebug.tui.widgets.document import Block
from fpdebug.tui.widgets.link_document import LinkDocument
from fpdebug.views.session import TraceSession
from fpdebug.views.source import source_honesty

__all__ = ["BacktrackDocument", "BacktrackPane"]

SAMPLES = 3
"""Seeded reruns per probe (a causal verdict needs at least 2)."""


def _signature(report: BacktrackReport) -> tuple[int, int | None, bool]:
    return (len(report.verdicts), report.baseline_flips, report.bisect is not None)


_Growth = tuple[int, int, int, int]
"""What the default call depends on, counted cheaply: runs, ``llm_call``s, turn ends, run ends."""


class BacktrackDocument(LinkDocument):
    """The pane's scrollable report (links: the call, chain hops, supporting rows)."""

    DEFAULT_CSS = """
    BacktrackDocument {
        border: round $panel-lighten-2;
        &:focus { border: round $accent; }
    }
    """

    def __init__(self, pane: BacktrackPane, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pane = pane
        """The pane whose state is shown."""

    def build(self) -> list[Block]:
        return self.pane.document(self.palette)

    def set_blocks(self, blocks: list[Block], *, keep_scroll: bool = False) -> None:
        """Show ``blocks``; a report with a confirmed culprit opens with the cursor on its verdict."""
        super().set_blocks(blocks, keep_scroll=keep_scroll)
        if self.link < 0:
            pinned = [i for i, index in enumerate(self.links) if isinstance(self.blocks[index], VerdictBlock)]
            if pinned:
                self.link = pinned[0]


class BacktrackPane(Vertical):
    """The backtrack pane of one trace."""

    DEFAULT_CSS = """
    BacktrackPane {
        & > #backtrack-state { height: 1; padding: 0 1; background: $panel; color: $text-muted; }
        & > #backtrack-progress { height: 1; padding: 0 1; display: none; }
        &.-running > #backtrack-progress { display: block; }
        & > #backtrack-doc { height: 1fr; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "start(False, False)",
            "Ablate",
            id="backtrack-ablate",
            tooltip="Rerun the call without each top suspect (seeded, the run's scripted model).",
        ),
        # Not b: b opens the breakpoints menu of a driven run, and a key means one thing everywhere.
        Binding(
            "i",
            "start(True, False)",
            "Bisect",
            id="backtrack-bisect",
            tooltip="Ablate, then bisect the suspects into minimal culprit sets.",
        ),
        Binding(
            "r",
            "start(False, True)",
            "Restore",
            show=False,
            id="backtrack-restore",
            tooltip="Ablate, and rerun with each missing-context candidate put back.",
        ),
        Binding(
            "W",
            "walk",
            "Walk",
            show=False,
            id="backtrack-walk",
            tooltip="Walk back to the root: ablate a beam per call, hop to the call that wrote the convict.",
        ),
        # Not c: c opens the go-to-call prompt everywhere else (escape backs out, as it does anywhere).
        Binding(
            "x,escape",
            "cancel",
            "Cancel",
            id="backtrack-cancel",
            tooltip="Stop the reruns before the next one (finished verdicts are kept and saved).",
        ),
    ]

    class Explained(Message):
        """The provenance of the chosen call is traced (or could not be)."""

        def __init__(
            self,
            token: int,
            report: BacktrackReport | None,
            saved: SavedBacktrack | None,
            error: str | None,
            note: str | None = None,
            where: str = "beside the trace",
        ) -> None:
            self.token = token
            """Which request this answers (a newer choice makes it stale)."""
            self.report = report
            """The correlational report."""
            self.saved = saved
            """The latest saved backtrack of this call, if the sidecar has one."""
            self.error = error
            """Why there is no report."""
            self.note = note
            """A remark (an unreadable sidecar)."""
            self.where = where
            """Where the call's sidecar is (beside the trace, or in fpdebug's cache)."""
            super().__init__()

    class Progressed(Message):
        """Reruns made so far (coalesces: only the newest count matters)."""

        def __init__(self, token: int, done: int, total: int) -> None:
            self.token = token
            """The run it belongs to."""
            self.done = done
            """Reruns made."""
            self.total = total
            """Reruns planned (an upper bound during a bisection)."""
            super().__init__()

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, BacktrackPane.Progressed) and message.token == self.token

    class VerdictArrived(Message):
        """A verdict (or the baseline, or the bisection) completed and was saved."""

        def __init__(self, token: int, report: BacktrackReport) -> None:
            self.token = token
            """The run it belongs to."""
            self.report = report
            """The report with every record saved so far."""
            super().__init__()

    class Finished(Message):
        """The reruns ended: ``report.status`` is ``complete`` or ``cancelled``."""

        def __init__(self, token: int, report: BacktrackReport) -> None:
            self.token = token
            """The run it belongs to."""
            self.report = report
            """The final report."""
            super().__init__()

    class Walked(Message):
        """The walk to the root ended."""

        def __init__(self, token: int, walk: Walk) -> None:
            self.token = token
            """The run it belongs to."""
            self.walk = walk
            """The walk."""
            super().__init__()

    class Failed(Message):
        """The reruns could not start, or stopped on an error."""

        def __init__(self, token: int, error: str, hint: str | None) -> None:
            self.token = token
            """The run it belongs to."""
            self.error = error
            """The backtracker's message."""
            self.hint = hint
            """What to do about it."""
            super().__init__()

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.report: BacktrackReport | None = None
        """The report on show."""
        self.state = PaneState()
        """Where the report came from, and what runs."""
        self.call_line: int | None = None
        """The chosen ``llm_call`` (``None``: the default, the final answer)."""
        self.opened = False
        """A call has been chosen (or the default traced)."""
        self._token = 0
        self._cancel = threading.Event()
        self._growth: _Growth | None = None
        self._target: int | None = None
        self._stale = False
        self._reran = False  # the running (or last) backtrack saved a record: the report is its own

    @property
    def trace(self) -> Path:
        """The trace file."""
        return self.session.reader.path

    @property
    def running(self) -> bool:
        """Reruns are in progress."""
        return self.state.running

    @property
    def document_view(self) -> BacktrackDocument:
        """The scrollable report."""
        return self.query_one("#backtrack-doc", BacktrackDocument)

    def compose(self) -> ComposeResult:
        yield TextBar(id="backtrack-state")
        yield ProgressBar(id="backtrack-progress", show_eta=False)
        yield BacktrackDocument(self, id="backtrack-doc")

    def on_mount(self) -> None:
        self._refresh()

    # ------------------------------------------------------------------------------------------
    # Choosing the call

    def ensure_open(self) -> None:
        """Trace the default call (the final answer) the first time the pane is shown.

        Also when the trace grew a new final answer while the pane was hidden.
        """
        if not self.opened or (self._stale and self.call_line is None and not self.running):
            self.open(None)

    def trace_grew(self) -> None:
        """A followed trace has more rows: trace its new final answer, if that is what is on show.

        Only a pane opened on the default call follows: once a call is chosen (``B``), or while
        reruns run, what is on show stays. A hidden pane traces the new answer when shown again.
        The screen calls this once its first load is over (the model then keeps up with the file).
        """
        if not self.opened or self.call_line is not None or self.running:
            return
        growth = self._count_growth()
        if growth == self._growth:
            return
        self._growth = growth
        line = self._default_line()
        if line == self._target:
            return
        self._target = line
        if self.report is not None and self.report.call_line == line:
            return  # the report on show already explains it (explain read the file ahead of the model)
        if self.display:
            self.open(None)
        else:
            self._stale = True

    def _count_growth(self) -> _Growth:
        model = self.session.model
        with model.lock:
            runs = list(model.runs)
        calls = sum(run.counts.get("llm_call", 0) for run in runs)
        turn_ends = sum(run.counts.get("turn_end", 0) for run in runs)
        run_ends = sum(1 for run in runs if run.end_line is not None)
        return (len(runs), calls, turn_ends, run_ends)

    def _default_line(self) -> int | None:
        model = self.session.model
        with model.lock:
            try:
                return default_call_line(model)
            except FpdebugError:
                return None  # no call has a reply yet

    def open(self, call_line: int | None) -> None:
        """Explain the ``llm_call`` on ``call_line`` (``None``: the final answer of the last turn)."""
        report = self.report
        if self.opened and call_line is not None and report is not None and call_line == report.call_line:
            return
        if self.running:
            self._cancel.set()
            self.app.notify("The running backtrack was cancelled: another call was chosen.", timeout=4)
        self.opened = True
        self.call_line = call_line
        self._stale = False
        if call_line is None:
            self._growth = self._count_growth()
            self._target = self._default_line()
        self.report = None
        self.state = PaneState()
        self._reran = False
        self._token += 1
        self.set_class(False, "-running")
        self._refresh()
        self._explain(self._token, call_line)

    @work(thread=True, exclusive=True, group="backtrack-explain", exit_on_error=False)
    def _explain(self, token: int, call_line: int | None) -> None:
        """Trace the call's provenance and read its saved backtrack; post :class:`Explained`."""
        try:
            result = explain(self.trace, line=call_line)
        except FpdebugError as error:
            self.post_message(self.Explained(token, None, None, str(error)))
            return
        except Exception as error:
            self.post_message(self.Explained(token, None, None, f"{type(error).__name__}: {error}"))
            return
        saved = None
        note = None
        sidecar = sidecar_path_for(self.trace)
        if sidecar.exists():
            try:
                saved = load_sidecar(sidecar).latest(call_seq=result.report.call_seq)
            except BacktrackError as error:
                note = f"the saved backtracks could not be read: {error}"
        where = sidecar_where(self.trace, sidecar)
        self.post_message(self.Explained(token, result.report, saved, None, note, where))

    @on(Explained)
    def _explained(self, message: Explained) -> None:
        if message.token != self._token:
            return
        message.stop()
        if message.note:
            self.state.notes.append(message.note)
        self.state.saved_where = message.where
        if message.report is None:
            self.state.error = message.error
        elif message.saved is not None:
            self.report = message.saved.report
            self.state.origin = "saved"
            self.state.saved_at = message.saved.created
            self.state.saved_status = message.saved.status
        else:
            self.report = message.report
        self._refresh(keep_scroll=False)

    # ------------------------------------------------------------------------------------------
    # Reruns

    def action_start(self, bisect: bool, restore: bool) -> None:
        """Start the causal reruns of the call on show."""
        self.start(bisect=bisect, restore=restore)

    def start(self, *, bisect: bool = False, restore: bool = False) -> bool:
        """Start ablation reruns (and a bisection, and restorations); return whether they started."""
        if self.running:
            self.app.notify("Reruns are already running: x cancels them.", timeout=3)
            return False
        if self.report is None:
            self.app.notify("Nothing to rerun yet: the call's provenance is still being traced.", timeout=3)
            return False
        self._token += 1
        self._cancel.clear()
        self._reran = False
        # Where the report on show came from stays true until this run saves a verdict of its own:
        # reruns refused before the first one leave the saved (or traced) report as it was.
        before = self.state
        self.state = PaneState(
            origin=before.origin,
            saved_at=before.saved_at,
            saved_status=before.saved_status,
            saved_where=before.saved_where,
            running=True,
            walk=before.walk,
        )
        self.set_class(True, "-running")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._refresh()
        module, force = self.rerun_module
        self._rerun(self._token, self.report.call_line, bisect, restore, module, force)
        return True

    def action_walk(self) -> None:
        """Walk from the call on show back to its root (docs/backtracking.md §9.8)."""
        self.start_walk()

    def start_walk(self) -> bool:
        """Start the walk to the root in a worker; return whether it started."""
        if self.running or self.report is None:
            self.app.notify("Nothing to walk yet, or reruns are running (x cancels them).", timeout=3)
            return False
        self._token += 1
        self._cancel.clear()
        self.state.running, self.state.done, self.state.total = True, 0, 0
        self.state.error = self.state.hint = None
        self.state.notes = ["walking to the root: one recorded call rerun per frame"]
        self.set_class(True, "-running")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._refresh()
        module, force = self.rerun_module
        self._walk(self._token, self.report.call_seq, module, force)
        return True

    @work(thread=True, exclusive=True, group="backtrack", exit_on_error=False)
    def _walk(self, token: int, call_seq: int, module: str | None, force: bool) -> None:
        """Run the walk; report progress; never touch a widget."""
        from fpdebug.demo import recorded_module_loader  # the scenario registry: for reruns only

        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            self.post_message(self.Progressed(token, done, total))

        try:
            walk = walk_to_root(
                self.trace,
                seq=call_seq,
                samples=SAMPLES,
                load_module=recorded_module_loader(
                    self.trace, module=module, force=force, command="fpdebug view TRACE"
                ),
                progress=progress,
                cancelled=lambda: self._cancel.is_set() or worker.is_cancelled,
            )
        except FpdebugError as error:
            self.post_message(self.Failed(token, str(error), self._hint(str(error), call_seq)))
            return
        except Exception as error:
            self.post_message(self.Failed(token, f"{type(error).__name__}: {error}", None))
            return
        self.post_message(self.Walked(token, walk))

    @on(Walked)
    def _walked(self, message: Walked) -> None:
        message.stop()
        if message.token != self._token:
            return
        self.state.walk = message.walk
        self.state.running = False
        self.state.notes = []
        self.set_class(False, "-running")
        self._refresh()

    @property
    def rerun_module(self) -> tuple[str | None, bool]:
        """The agent module the user named for reruns (``--module``; never one a trace names), and
        whether the user insists on it (``--force-module``)."""
        source = getattr(self.app, "source", None)
        module = getattr(source, "rerun_module", None)
        return (module if isinstance(module, str) else None), getattr(source, "force_module", False) is True

    def action_cancel(self) -> None:
        """Stop the reruns before the next one (escape does its usual job when nothing runs)."""
        if not self.running:
            raise SkipAction()
        self.cancel()

    def cancel(self) -> None:
        """Ask the running backtrack to stop."""
        if self.running:
            self._cancel.set()
            self.state.notes = ["cancelling: the backtrack stops before its next rerun"]
            self._refresh()

    @work(thread=True, exclusive=True, group="backtrack", exit_on_error=False)
    def _rerun(
        self, token: int, call_line: int, bisect: bool, restore: bool, module: str | None, force: bool
    ) -> None:
        """Run the backtrack; report progress and each saved verdict; never touch a widget."""
        from fpdebug.demo import recorded_module_loader  # the scenario registry: for reruns only

        worker = get_current_worker()
        sidecar = sidecar_path_for(self.trace)
        known: set[str] = set()
        if sidecar.exists():
            try:
                known = {saved.id for saved in load_sidecar(sidecar).backtracks}
            except BacktrackError:
                known = set()
        seen = {"size": -1, "signature": (0, None, False)}

        def progress(done: int, total: int) -> None:
            self.post_message(self.Progressed(token, done, total))
            try:
                size = sidecar.stat().st_size
            except OSError:
                return
            if size == seen["size"]:
                return
            seen["size"] = size
            try:
                ours = [saved for saved in load_sidecar(sidecar).backtracks if saved.id not in known]
            except BacktrackError:
                return
            if ours:
                report = ours[-1].report
                signature = _signature(report)
                if signature != seen["signature"]:
                    seen["signature"] = signature
                    self.post_message(self.VerdictArrived(token, report))

        def cancelled() -> bool:
            return self._cancel.is_set() or worker.is_cancelled

        try:
            result = backtrack(
                self.trace,
                line=call_line,
                ablate=True,
                restore=restore,
                bisect=bisect,
                samples=SAMPLES,
                load_module=recorded_module_loader(
                    self.trace, module=module, force=force, command="fpdebug view TRACE"
                ),
                progress=progress,
                cancelled=cancelled,
            )
        except FpdebugError as error:
            self.post_message(self.Failed(token, str(error), self._hint(str(error), call_line)))
            return
        except Exception as error:
            self.post_message(self.Failed(token, f"{type(error).__name__}: {error}", None))
            return
        self.post_message(self.Finished(token, result.report))

    def _hint(self, error: str, call_line: int) -> str | None:
        if "--provider" not in error:
            return None
        seq = self.report.call_seq if self.report is not None else call_line
        return (
            "The debugger only reruns with the run's scripted model, never a live one. To rerun live, from a "
            f"shell: fpdebug backtrack {self.trace.name} --call {seq} --ablate --provider PROVIDER "
            "--model MODEL"
        )

    @on(Progressed)
    def _progressed(self, message: Progressed) -> None:
        message.stop()
        if message.token != self._token or not self.running:
            return
        self.state.done, self.state.total = message.done, message.total
        self.query_one(ProgressBar).update(total=max(message.total, 1), progress=message.done)
        self._refresh_state()

    @on(VerdictArrived)
    def _verdict_arrived(self, message: VerdictArrived) -> None:
        message.stop()
        if message.token != self._token:
            return
        self.report = message.report
        self._mark_live()
        self._refresh()

    def _mark_live(self) -> None:
        """The report on show is this session's reruns' own (saved to the sidecar as they ran)."""
        self._reran = True
        self.state.origin = "live"
        self.state.saved_at = None
        self.state.saved_status = None

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        message.stop()
        if message.token != self._token:
            return
        self.report = message.report
        self._mark_live()
        self.state.running = False
        self.state.notes = []
        if message.report.status == "cancelled":
            self.state.notes = [
                f"cancelled: the verdicts that finished are kept and saved {self.state.saved_where}"
            ]
        self.set_class(False, "-running")
        self._refresh()

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        message.stop()
        if message.token != self._token:
            return
        self.state.running = False
        self.state.error = message.error
        self.state.hint = message.hint
        self.state.notes = []
        if self._reran:
            if self.report is not None and self.report.status == "running":
                self.report = self.report.finished("failed")  # as the sidecar now records it
        elif self.state.done == 0:
            self.state.notes = ["nothing was rerun (the verdicts above are as they were)"]
        else:
            self.state.notes = [
                f"{self.state.done} reruns made, no verdict completed (the verdicts above are as they were)"
            ]
        self.set_class(False, "-running")
        self._refresh()

    # ------------------------------------------------------------------------------------------
    # Rendering

    def document(self, palette: Palette) -> list[Block]:
        """The report document (built by :func:`backtrack_document`)."""
        assessment = None
        if self.report is not None:
            try:
                assessment = find_assessment(self.session, self.report.call_line)
            except Exception:
                assessment = None
        return backtrack_document(
            self.report,
            self.state,
            assessment,
            palette,
            trace_name=self.trace.name,
            source_note=source_honesty(self.session.source),
        )

    def state_text(self) -> Text:
        """The one-line state bar."""
        palette = self.document_view.palette
        text = Text(no_wrap=True, end="")
        text.append("backtrack ", palette.heading)
        report = self.report
        if report is None:
            text.append("tracing…" if self.state.error is None else "no answer to explain", palette.dim)
            return text
        text.append_text(plain(report.decided_at.label, palette.accent))
        text.append("  ")
        if self.running:
            total = f"/{self.state.total}" if self.state.total else ""
            text.append(f"running {self.state.done}{total} reruns", palette.warn)
            text.append("  x cancel", palette.dim)
        elif self.state.error:
            stopped = "stopped" if self._reran or self.state.done else "nothing rerun"
            text.append(f"{stopped}: see below", palette.bad)
        elif self.state.origin == "saved":
            text.append(f"saved verdicts ({self.state.saved_status or report.status})", palette.accent)
        elif self.state.origin == "live":
            text.append(f"{report.status}: {report.runs_used} reruns", palette.good)
        else:
            text.append("correlational only: a ablate · i bisect", palette.dim)
        text.append(f"  · tier {report.mode}", palette.good if report.mode == "causal" else palette.dim)
        return text

    def _refresh_state(self) -> None:
        if self.is_mounted:
            self.query_one("#backtrack-state", TextBar).show(self.state_text())

    def _refresh(self, *, keep_scroll: bool = True) -> None:
        if not self.is_mounted:
            return
        self._refresh_state()
        self.document_view.rebuild(keep_scroll=keep_scroll)

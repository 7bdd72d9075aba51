"""ForkScreen: fork the run at the selected pass with edits, then open the diff against the parent.

``F`` on a pass of the trace screen opens it (docs/guide/fork.md, "In the debugger"). The screen is
the headless fork (:mod:`fpdebug.backtrack.fork`, :mod:`fpdebug.backtrack.fork_run`) with a form:

- an edit kind (drop or add an injection, a tool's result, grant or revoke a lease, the user
  message), its target chosen from what the run declared and recorded at the pass
  (:meth:`~fpdebug.backtrack.fork.ForkPoint.choices`) and, for a tool result or a user message, its
  text; each edit is checked when it is added (:func:`~fpdebug.backtrack.fork.check_edits`) and a
  refusal is shown in the status line;
- the provider to continue on: ``replay`` (default) or ``scripted`` run offline; a live one needs
  its model and the "allow a live model" box, and shows its cost estimate first.

The fork runs in a worker thread, its progress (each call written) in the status line; escape
cancels it before its next model call (the run ends ``interrupted``), and closes the screen when
nothing runs. The fork's trace is written beside the parent, or in fpdebug's cache when the
parent's folder is read-only or tracked by git (:func:`~fpdebug.backtrack.fork_place.fork_output_for`).
When the fork ends, the diff of the parent's run and the fork's
(:class:`~fpdebug.tui.screens.run_diff_screen.RunDiffScreen`) replaces this screen.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Input, Select, Static

from fpdebug.backtrack.fork import ForkEdit, ForkPoint, check_edits, load_fork_point
from fpdebug.backtrack.fork_run import CONTINUATIONS, ForkOutcome, run_fork
from fpdebug.engine.providers import LIVE_PROVIDERS
from fpdebug.errors import FpdebugError
from fpdebug.trace.inert import inert_line
from fpdebug.trace.schema import LlmCallEvent

__all__ = ["EDIT_CHOICES", "FORK_SCREEN_KEYS", "ForkScreen"]

EDIT_CHOICES: tuple[tuple[str, str], ...] = (
    ("drop-injection", "drop an injection active at the pass"),
    ("add-injection", "add a declared injection, from the pass on"),
    ("tool-result", "change the result of a tool call answered before the pass"),
    ("grant-lease", "serve a declared injection at the pass only"),
    ("revoke-lease", "end a lease granted before the pass"),
    ("user-message", "change the turn's user message"),
)
"""The edit kinds the form offers (model and provider are the continuation's row)."""

_TEXT_KINDS = ("tool-result", "user-message")

FORK_SCREEN_KEYS: list[BindingType] = [
    Binding(
        "escape",
        "back",
        "Back",
        id="fork-back",
        tooltip="Cancel the running fork (before its next model call), or close the fork screen.",
    ),
]
"""The fork screen's own key (its form is driven with tab, the arrows and enter)."""


class ForkScreen(Screen[None]):
    """The fork edit screen of one pass.

    Args:
        trace: The parent trace.
        at_pass: The pass (the iteration of the turn).
        turn: Its turn.
        run_id: Its run.
        module: The agent module the user named for reruns (never one the trace names).
        force_module: Use ``module`` even when the trace recorded another.
    """

    DEFAULT_CSS = """
    ForkScreen {
        layout: vertical;
        & #fork-title { height: 1; padding: 0 1; background: $accent 30%; }
        & .fork-row { height: 3; }
        & .fork-label { width: auto; padding: 1 1 0 1; }
        & #fork-kind { width: 28; }
        & #fork-target { width: 1fr; }
        & #fork-value { width: 1fr; }
        & #fork-provider { width: 22; }
        & #fork-model { width: 1fr; }
        & #fork-live { width: auto; }
        & #fork-edits { height: auto; min-height: 2; max-height: 6; padding: 0 1; }
        & #fork-cost { height: auto; padding: 0 1; color: $text-muted; }
        & #fork-status { height: auto; min-height: 1; padding: 0 1; }
        & #fork-status.-error { color: $error; }
        & Button { min-width: 10; margin: 0 1 0 0; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(FORK_SCREEN_KEYS)

    def __init__(
        self,
        trace: Path,
        *,
        at_pass: int,
        turn: int,
        run_id: str,
        module: str | None = None,
        force_module: bool = False,
    ) -> None:
        super().__init__()
        self.trace = trace
        self.at_pass = at_pass
        self.turn = turn
        self.run_id = run_id
        self.module = module
        self.force_module = force_module
        self.point: ForkPoint | None = None
        """The parent's fork point (read when the screen opens)."""
        self.edits: list[ForkEdit] = []
        """The edits added, in order."""
        self.stop = threading.Event()
        """Set to cancel the running fork."""
        self.running = False
        """A fork is running."""
        self.outcome: ForkOutcome | None = None
        """The finished fork."""
        self.calls_done = 0
        """Calls the running fork has written."""

    # ------------------------------------------------------------------------------------------
    # Composition

    def compose(self) -> ComposeResult:
        title = f"Fork run {self.run_id} at pass {self.at_pass} of turn {self.turn} · {self.trace.name}"
        yield Static(Text(inert_line(title)), id="fork-title")
        with Vertical(id="fork-form"):
            with Horizontal(classes="fork-row"):
                yield Static("Edit", classes="fork-label")
                yield Select(
                    [(kind, kind) for kind, _ in EDIT_CHOICES],
                    value="drop-injection",
                    allow_blank=False,
                    id="fork-kind",
                )
                yield Select([], prompt="target", id="fork-target")
                yield Input(placeholder="new text", id="fork-value")
                yield Button("Add", id="fork-add")
            yield Static(id="fork-edits")
            with Horizontal(classes="fork-row"):
                yield Static("Continue on", classes="fork-label")
                yield Select(
                    [(name, name) for name in CONTINUATIONS],
                    value="replay",
                    allow_blank=False,
                    id="fork-provider",
                )
                yield Input(placeholder="model (live providers)", id="fork-model")
                yield Checkbox("allow a live model (costs money)", id="fork-live")
            yield Static(id="fork-cost")
            with Horizontal(classes="fork-row"):
                yield Button("Run fork", id="fork-run", variant="primary")
        yield Static(Text("reading the parent…"), id="fork-status")

    def on_mount(self) -> None:
        self._show_edits()
        self.run_worker(self._load, thread=True, exclusive=True, group="fork-load")

    def _load(self) -> None:
        try:
            point = load_fork_point(self.trace, at_pass=self.at_pass, turn=self.turn, run_id=self.run_id)
        except (FpdebugError, OSError) as error:
            self.app.call_from_thread(self._say, f"cannot fork here: {error}", error=True)
            return
        self.app.call_from_thread(self._loaded, point)

    def _loaded(self, point: ForkPoint) -> None:
        if not self.is_mounted:
            return
        self.point = point
        self._kind_changed()
        self._continuation_changed()
        calls = "1 call replays" if point.before == 1 else f"{point.before} calls replay"
        self._say(
            f"{calls} before pass {point.at_pass} · add edits, then Run fork · tab moves · escape closes"
        )
        self.query_one("#fork-kind", Select).focus()

    # ------------------------------------------------------------------------------------------
    # The form

    def _say(self, message: str, *, error: bool = False) -> None:
        if not self.is_mounted:
            return
        status = self.query_one("#fork-status", Static)
        status.set_class(error, "-error")
        status.update(Text(inert_line(message)))

    def _show_edits(self) -> None:
        shown = Text("Edits: ", style="bold")
        if not self.edits:
            shown.append("none yet (add one, or switch the model/provider below)", style="dim")
        for number, edit in enumerate(self.edits, 1):
            shown.append(f"\n  {number}. {inert_line(edit.describe())}")
        self.query_one("#fork-edits", Static).update(shown)

    @on(Select.Changed, "#fork-kind")
    def _kind_changed(self) -> None:
        kind = self._kind()
        target = self.query_one("#fork-target", Select)
        value = self.query_one("#fork-value", Input)
        value.display = kind in _TEXT_KINDS
        choices = self.point.choices().get(kind, []) if self.point is not None else []
        target.display = kind != "user-message"
        target.set_options([(inert_line(choice), choice) for choice in choices])
        if kind != "user-message" and self.point is not None and not choices:
            self._say(f"{kind}: nothing to choose at pass {self.at_pass}", error=True)
        elif self.point is not None:
            self._say(dict(EDIT_CHOICES)[kind])

    def _kind(self) -> str:
        value = self.query_one("#fork-kind", Select).value
        return value if isinstance(value, str) else "drop-injection"

    def _new_edit(self) -> ForkEdit | None:
        """The edit the form describes, or ``None`` (with the reason shown)."""
        kind = self._kind()
        target = self.query_one("#fork-target", Select).value
        text = self.query_one("#fork-value", Input).value
        if kind == "user-message":
            return ForkEdit("user-message", value=text)
        if not isinstance(target, str):
            self._say(f"{kind}: choose its target first", error=True)
            return None
        if kind == "tool-result":
            return ForkEdit("tool-result", target, text)
        return ForkEdit(kind, target)  # type: ignore[arg-type]  # one of EDIT_CHOICES' kinds

    @on(Button.Pressed, "#fork-add")
    @on(Input.Submitted, "#fork-value")
    def action_add_edit(self) -> None:
        """Check the form's edit against the parent and add it."""
        if self.point is None or self.running:
            return
        edit = self._new_edit()
        if edit is None:
            return
        try:
            check_edits(self.point, [*self.edits, edit])
        except FpdebugError as error:
            self._say(str(error), error=True)
            return
        self.edits.append(edit)
        self._show_edits()
        self._say(f"added: {edit.describe()}")

    @on(Select.Changed, "#fork-provider")
    @on(Input.Changed, "#fork-model")
    def _continuation_changed(self) -> None:
        provider = self._provider()
        live = provider in LIVE_PROVIDERS
        self.query_one("#fork-model", Input).display = live
        self.query_one("#fork-live", Checkbox).display = live
        cost = self.query_one("#fork-cost", Static)
        if not live or self.point is None:
            words = {
                "replay": "replay: the recording answers while the requests match it (offline, free)",
                "scripted": "scripted: the scenario's scripted model answers from the pass on (offline, free)",
            }
            cost.update(Text(words.get(provider, "")))
            return
        from fpdebug.views.fork_summary import live_cost_estimate

        model = self.query_one("#fork-model", Input).value.strip()
        estimate = live_cost_estimate(self.point, provider, model)
        cost.update(Text(f"{provider} is live, it costs money: {inert_line(estimate)}"))

    def _provider(self) -> str:
        value = self.query_one("#fork-provider", Select).value
        return value if isinstance(value, str) else "replay"

    # ------------------------------------------------------------------------------------------
    # Running

    def _continuation_edits(self) -> tuple[list[ForkEdit], str, str | None] | None:
        provider = self._provider()
        model = self.query_one("#fork-model", Input).value.strip() or None
        if provider in LIVE_PROVIDERS:
            if model is None:
                self._say(f"{provider} needs a model: type it in the model box", error=True)
                return None
            if not self.query_one("#fork-live", Checkbox).value:
                self._say(
                    f"{provider} answers from a live model, which costs money: tick the box to allow it",
                    error=True,
                )
                return None
        else:
            model = None
        edits = list(self.edits)
        if provider != "replay":
            edits.append(ForkEdit("provider", value=provider))
        if model is not None:
            edits.append(ForkEdit("model", value=model))
        return edits, provider, model

    @on(Button.Pressed, "#fork-run")
    def action_run_fork(self) -> None:
        """Check everything, then run the fork in a worker thread."""
        if self.point is None or self.running:
            return
        chosen = self._continuation_edits()
        if chosen is None:
            return
        edits, provider, model = chosen
        try:
            check_edits(self.point, edits)
        except FpdebugError as error:
            self._say(str(error), error=True)
            return
        self.running = True
        self.calls_done = 0
        self.stop.clear()
        self.query_one("#fork-run", Button).disabled = True
        self._say(f"forking at pass {self.at_pass} on {provider}… (escape cancels)")
        self.run_worker(
            lambda: self._run(self.point, edits, provider, model),
            thread=True,
            exclusive=True,
            group="fork-run",
        )

    def _run(self, point: ForkPoint | None, edits: list[ForkEdit], provider: str, model: str | None) -> None:
        from fpdebug.backtrack.fork_place import fork_output_for
        from fpdebug.demo import recorded_module_loader  # the scenario registry: for forks only

        assert point is not None
        try:
            outcome = run_fork(
                point,
                edits,
                output=fork_output_for(self.trace, self.at_pass),
                load_module=recorded_module_loader(
                    self.trace, module=self.module, force=self.force_module, command="fpdebug view TRACE"
                ),
                provider=provider,
                model=model,
                live=provider in LIVE_PROVIDERS,
                stop=self.stop,
                progress=lambda call: self.app.call_from_thread(self._progress, call),
            )
        except (FpdebugError, OSError) as error:
            self.app.call_from_thread(self._failed, str(error))
            return
        self.app.call_from_thread(self._finished, outcome)

    def _progress(self, call: LlmCallEvent) -> None:
        point = self.point
        if point is None:
            return
        self.calls_done += 1
        replaying = (call.turn or 0, call.iteration or 0) < (point.turn, point.at_pass)
        how = "replayed from the parent" if replaying else "answered"
        self._say(f"call {self.calls_done} (turn {call.turn}, pass {call.iteration}) {how}… (escape cancels)")

    def _failed(self, message: str) -> None:
        self.running = False
        if self.is_mounted:
            self.query_one("#fork-run", Button).disabled = False
        self._say(f"the fork could not run: {message}", error=True)

    def _finished(self, outcome: ForkOutcome) -> None:
        self.running = False
        self.outcome = outcome
        if not self.is_mounted:
            return
        if self.stop.is_set():
            self.query_one("#fork-run", Button).disabled = False
            self._say(f"cancelled: the fork's trace ends interrupted ({outcome.path})", error=True)
            return
        from fpdebug.tui.screens.run_diff_screen import RunDiffScreen

        # The parent's run (A) against the fork's (B), first divergence first; escape comes back
        # to the parent's trace.
        self.app.switch_screen(RunDiffScreen(self.trace, outcome.path, run_left=self.run_id))

    def action_back(self) -> None:
        """Cancel the running fork, or close the screen."""
        if self.running:
            self.stop.set()
            self._say("cancelling before the next model call…")
            return
        self.dismiss(None)

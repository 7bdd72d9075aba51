"""``fpdebug run SCENARIO_OR_MODULE [--tui]``: run a demo scenario or your own agent module, write its trace.

With ``--tui`` the run happens inside the debugger, behind its step gate (pause, step one pass,
breakpoints); :func:`drive_in_debugger` is shared with ``fpdebug demo``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from types import FrameType

    from fpdebug.demo.registry import Scenario, ScenarioRun
    from fpdebug.engine.providers.base import Provider
    from fpdebug.engine.sink import EventSink
    from fpdebug.export.otlp import SdkLog
    from fpdebug.export.stream import OtlpStreamSink
    from fpdebug.tui.drive.gate import Breakpoint

HELP = "Run a demo scenario or your own agent module (build_agent()) and write its trace."

PROVIDER_CHOICES = ("scripted", "replay", "anthropic", "openai", "openai-responses")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_provider_arguments(parser: argparse.ArgumentParser) -> None:
    """``--provider``, ``--model``, ``--base-url`` (shared with ``fpdebug demo``)."""
    parser.add_argument(
        "--provider",
        choices=PROVIDER_CHOICES,
        default="scripted",
        help="the model: the scenario's scripted one (default), a replay of a trace, or a live one",
    )
    parser.add_argument("--model", metavar="M", help="the model name (required for anthropic and openai)")
    parser.add_argument(
        "--base-url", metavar="URL", help="another endpoint for a live provider (OpenAI-compatible servers)"
    )


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    """``--trace`` and ``--overwrite``: where the run's trace goes (shared with ``fpdebug demo``)."""
    parser.add_argument(
        "--trace", metavar="PATH", help="where to write the trace (default: NAME-TIMESTAMP.fptrace.jsonl)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the trace file if it exists")


def chosen_trace_path(args: argparse.Namespace, name: str) -> Path:
    """The ``--trace`` path, or a new :func:`default_trace_path` named after the scenario ``name``.

    Raises:
        ConfigError: ``--trace`` names a non-empty file and ``--overwrite`` was not given (said in
            the command line's words, before the provider or the run start).
    """
    if not args.trace:
        return default_trace_path(name)
    path = Path(args.trace)
    if not getattr(args, "overwrite", False) and path.is_file() and path.stat().st_size:
        from fpdebug.errors import ConfigError

        raise ConfigError(
            f"{path}: already exists and is not empty ({path.stat().st_size} bytes); pass --overwrite "
            "to replace it, or choose another --trace"
        )
    return path


def add_debugger_arguments(parser: argparse.ArgumentParser) -> None:
    """``--start``, ``--break`` and ``--keymap`` of a run driven in the debugger (shared with ``demo``)."""
    parser.add_argument(
        "--start",
        choices=("paused", "running"),
        default="paused",
        help="in the debugger: stop at the first pass (default) or run to the first breakpoint",
    )
    parser.add_argument(
        "--break",
        dest="breakpoints",
        metavar="WHAT",
        action="append",
        default=[],
        help="in the debugger: a breakpoint set from the start (repeatable): an event kind such as "
        "lease_prune, park, cursor:SKILL or tool:NAME",
    )
    parser.add_argument(
        "--keymap",
        metavar="FILE",
        help='in the debugger: a TOML keymap ([keys] binding-id = "keys"); default $FPDEBUG_KEYMAP or '
        "~/.config/fpdebug/keymap.toml",
    )


ENDING_SIGNALS = ("SIGTERM", "SIGHUP")
"""The signals that end a run cleanly (``run_end {interrupted}``) instead of killing it mid-trace."""


@contextmanager
def ending_signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    """Route SIGTERM and SIGHUP to ``on_signal(signum)`` while the block runs; restore the previous handlers.

    Only the main thread can set handlers: elsewhere the block runs without them. A signal that was
    ignored when the block began (``nohup`` ignores SIGHUP) stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # What signal.signal returned: a callable, SIG_DFL/SIG_IGN, or None (set from C).
    previous: dict[int, Callable[[int, FrameType | None], object] | int | signal.Handlers | None] = {}
    try:
        for name in ENDING_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None or signal.getsignal(signum) == signal.SIG_IGN:
                continue
            previous[signum] = signal.signal(signum, lambda number, _frame: on_signal(number))
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def terminate_once() -> Callable[[int], None]:
    """A handler that raises :class:`~fpdebug.errors.Terminated` once, as Ctrl-C raises KeyboardInterrupt.

    The agent loop records ``run_end {interrupted}`` for it; a second signal while it does so is
    ignored, so the run's last record is never torn by a second interruption.
    """
    from fpdebug.errors import Terminated

    fired: list[int] = []

    def raise_terminated(signum: int) -> None:
        if not fired:
            fired.append(signum)
            raise Terminated(signum)

    return raise_terminated


def _print_lines(lines: Sequence[str]) -> None:
    """Print ``lines``; after a hang-up (no terminal left) drop them instead of failing at exit."""
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except OSError:
        # The unwritten text stays buffered in the old stream, whose flush at exit would fail too
        # (exit status 120): the remaining output goes nowhere, as the terminal it was for.
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives until exit


EXIT_GRACE = 3.0
"""Seconds a signalled debugger may take to leave once its run has ended before the process ends anyway."""


def _exit_if_stuck(run_ended: threading.Event, left: threading.Event, status: int) -> None:
    """End the process with ``status`` if the app has not left :data:`EXIT_GRACE` s after its run ended.

    A signal must end the process (issue 18, item 10). The app normally leaves at once; this daemon
    thread is the backstop for an app whose terminal went away in a way it cannot recover from. It
    waits for the run's thread first, so the trace is always closed with its ``run_end`` before.
    """

    def watch() -> None:
        run_ended.wait()
        if not left.wait(EXIT_GRACE):
            os._exit(status)

    threading.Thread(target=watch, name="fpdebug-exit-watch", daemon=True).start()


WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The Textual driver textual-serve names in ``TEXTUAL_DRIVER`` for the process of each browser tab."""


def served_in_browser() -> bool:
    """Whether textual-serve runs this process for a browser tab (its web driver draws the screen)."""
    return os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER


def is_terminal() -> bool:
    """Whether the debugger has a screen: stdin and stdout are a terminal, or a browser tab serves it.

    textual-serve (``fpdebug serve``) runs each tab's command on pipes, with its web driver named in
    ``TEXTUAL_DRIVER``: that driver draws the app in the browser, so the pipes are no obstacle.
    """
    return (sys.stdin.isatty() and sys.stdout.isatty()) or served_in_browser()


def checked_breakpoints(scenario: Scenario, specs: Sequence[str]) -> list[Breakpoint]:
    """The ``--break`` forms, parsed and checked against the run's declared tools, skills and kinds.

    Raises:
        DefinitionError: The agent's declaration is invalid.
        ConfigError: A breakpoint that could never fire in this run (with a "did you mean").
    """
    from fpdebug.tui.drive.declared import Declared, parse_breakpoints

    declared = Declared.of_agent(scenario.build_agent())
    return parse_breakpoints(specs, declared)


def drive_in_debugger(
    scenario: Scenario,
    *,
    trace: Path,
    provider: Provider,
    args: argparse.Namespace,
    run_id: str | None = None,
    messages: Sequence[str] | None = None,
    max_iterations: int | None = None,
    wrap_sink: Callable[[EventSink], EventSink] | None = None,
) -> int:
    """Run ``scenario`` inside the debugger, behind its step gate; print the summary when it closes.

    Everything that can be refused (the agent's definition, the breakpoints, the keymap, the trace
    file) is checked before the screen is taken. Quitting the debugger ends a run still in progress
    with ``run_end {interrupted}`` (exit code 130, as for an interrupted ``fpdebug run``). SIGTERM and
    SIGHUP quit it the same way (the app restores the terminal, the trace is closed) and the exit
    code is then 143 or 129.

    Returns:
        The exit code of :func:`finish`, or ``128 + signum`` after SIGTERM / SIGHUP.

    Raises:
        FpdebugError: A bad definition, breakpoint, keymap or trace path; a run that failed.
    """
    from fpdebug.errors import FpdebugError
    from fpdebug.trace.reader import TraceReader
    from fpdebug.tui.app import READER_CACHE, TraceSource, keymap_ids
    from fpdebug.tui.drive import DriveApp, RunDriver
    from fpdebug.tui.keymap import find_keymap, load_keymap

    # A bad declaration, or a breakpoint that can never fire, is reported here, not on screen.
    breakpoints = checked_breakpoints(scenario, args.breakpoints)
    keymap_path = find_keymap(args.keymap)
    keymap = load_keymap(keymap_path, known_ids=keymap_ids()) if keymap_path is not None else {}
    driver = RunDriver(
        scenario,
        trace_path=trace,
        provider=provider,
        run_id=run_id,
        messages=messages,
        max_iterations=max_iterations,
        overwrite=args.overwrite,
        start=args.start,
        breakpoints=breakpoints,
        wrap_sink=wrap_sink,
    )
    with TraceReader(trace, index=False, cache_size=READER_CACHE, wait_for_header=True) as reader:
        # The user named this module to run it: the backtrack pane may import it again for reruns.
        module = None if scenario.builtin else scenario.source
        source = TraceSource(trace, "drive", rerun_module=module)
        app = DriveApp(source, reader=reader, keymap=keymap, controller=driver)
        signalled: list[int] = []
        left = threading.Event()

        def quit_on_signal(signum: int) -> None:
            # SIGTERM / SIGHUP: quit as `q` does (the gate writes the event in flight, the run ends
            # interrupted, Textual restores the terminal); a second signal changes nothing.
            if not signalled:
                signalled.append(signum)
                app.quit_from_signal()
                _exit_if_stuck(driver.finished, left, 128 + signum)

        with ending_signals(quit_on_signal):
            try:
                app.run()
            finally:
                left.set()
                driver.stop()  # the app stops it on exit; this covers an app that never started
                if not driver.wait(1.0):
                    _say_on_stderr("waiting for the run to end (a model or tool call is in flight)…")
                    driver.wait()
    if driver.error is not None:
        if isinstance(driver.error, FpdebugError):
            raise driver.error
        raise FpdebugError(f"the run stopped: {type(driver.error).__name__}: {driver.error}")
    assert driver.result is not None
    if signalled:
        # The trace is closed; the terminal may be gone (SIGHUP): say what we can, never fail on it.
        name = signal.Signals(signalled[0]).name
        lines = summary_lines(driver.result)
        if driver.result.result.status == "interrupted":
            lines.insert(0, f"{name}: the debugger quit and stopped the run (run_end interrupted)")
        _print_lines(lines)
        return 128 + signalled[0]
    if driver.result.result.status == "interrupted":
        print("you left the debugger before the run ended: it was stopped (run_end interrupted)")
    return finish(driver.result)


def _say_on_stderr(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except OSError:
        pass  # the terminal hung up


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the target, the provider options, the trace path and the run's inputs."""
    parser.add_argument(
        "target",
        metavar="SCENARIO_OR_MODULE",
        help="a demo scenario (see fpdebug demo --list), a .py file, or a dotted module with build_agent()",
    )
    add_provider_arguments(parser)
    parser.add_argument("--replay-from", metavar="TRACE", help="with --provider replay: the trace to replay")
    parser.add_argument("--replay-run", metavar="RUN_ID", help="the run to replay when TRACE holds several")
    add_trace_arguments(parser)
    parser.add_argument(
        "--message",
        dest="messages",
        metavar="TEXT",
        nargs="+",
        action="extend",
        help="the user message(s), one turn each (default: the scenario's USER_MESSAGES)",
    )
    parser.add_argument(
        "--max-iterations", type=positive_int, metavar="N", help="the per-turn iteration limit"
    )
    parser.add_argument(
        "--run-id", metavar="ID", help="the run's id (default: random; a replay keeps the recorded one)"
    )
    parser.add_argument(
        "--otlp",
        metavar="URL",
        help="also stream the run's spans over OTLP/HTTP to a collector (e.g. http://127.0.0.1:4318)",
    )
    parser.add_argument(
        "--tui",
        action="store_true",
        help="run inside the debugger: paused at the first pass; space continues, s steps one pass, "
        "b sets breakpoints; quitting ends the run (run_end interrupted)",
    )
    add_debugger_arguments(parser)
    parser.epilog = (
        "A module for `fpdebug run` defines build_agent() -> fpdebug.engine.agent.Agent and, to run "
        "offline, scripted_provider(); USER_MESSAGES gives its default turns. Live providers read "
        "ANTHROPIC_API_KEY / OPENAI_API_KEY. Exit codes: 0 the run completed, 2 it failed (the trace "
        "still records everything up to the failure), 130 interrupted (Ctrl-C, or q in the debugger), "
        "143 / 129 ended by SIGTERM / SIGHUP (the trace still ends with run_end interrupted)."
    )


def default_trace_path(name: str, directory: str | Path = ".") -> Path:
    """A new file name for a run's trace: ``NAME-YYYYmmddTHHMMSSZ.fptrace.jsonl``, never an existing file."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).stem if name.endswith(".py") else name).strip("-.")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path(directory) / f"{stem or 'run'}-{stamp}"
    path = base.with_name(base.name + ".fptrace.jsonl")
    counter = 2
    while path.exists():
        path = base.with_name(f"{base.name}-{counter}.fptrace.jsonl")
        counter += 1
    return path


def summary_lines(run: ScenarioRun) -> list[str]:
    """Where the trace went, then one paragraph: status, turns, iterations, tokens, the final answer."""
    from fpdebug.trace.inert import inert_line

    result = run.result
    turns, iterations = len(result.turns), result.iterations
    parts = [
        f"Run {inert_line(result.run_id)} of {inert_line(run.scenario.name)} {result.status}:",
        f"{turns} turn{'s' if turns != 1 else ''}, {iterations} iteration{'s' if iterations != 1 else ''},",
        f"{result.input_tokens} tokens in, {result.output_tokens} out.",
    ]
    stopped = [t.stopped_early for t in result.turns if t.stopped_early is not None]
    for reason, limit in (("max-iterations", "the iteration limit"), ("cost-budget", "the cost budget")):
        cut = sum(1 for s in stopped if s.reason == reason)
        if cut:
            parts.append(f"{cut} turn(s) stopped early at {limit}.")
    if result.error is not None:
        parts.append(f"Error: {inert_line(result.error.type)}: {inert_line(result.error.message)}.")
    answer = result.content
    parts.append(f"Final answer: {inert_line(answer)}" if answer else "No final answer.")
    return [f"trace: {inert_line(str(run.trace_path))}", " ".join(parts)]


def finish(run: ScenarioRun) -> int:
    """Print the summary; return the exit code, or raise the failure for ``cli.main`` to report."""
    from fpdebug.errors import FpdebugError

    for line in summary_lines(run):
        print(line)
    result = run.result
    if result.status == "completed":
        return 0
    if result.status == "interrupted":
        return 130
    if result.status == "paused":  # an argument ask (docs/honesty.md §12.7) that nothing answered
        raise FpdebugError(
            "the run ended paused on an argument ask nobody answered: give the scenario module an "
            "answer_ask(ask) function that returns the user's value"
        )
    if isinstance(result.exception, FpdebugError):
        raise result.exception
    error = result.error
    raise FpdebugError(f"the run failed: {error.type}: {error.message}" if error else "the run failed")


def run(args: argparse.Namespace) -> int:
    """Load the target, build the provider, run, write the trace, print the summary."""
    if args.otlp:
        from fpdebug.export.otlp import traces_endpoint

        traces_endpoint(args.otlp)  # a bad URL is refused before any trace file is created
    with _sdk_log_kept_for(args) as sdk_log:
        return _run(args, sdk_log)


@contextmanager
def _sdk_log_kept_for(args: argparse.Namespace) -> Iterator[SdkLog | None]:
    # With --otlp the SDK reports delivery failures by logging; keep its lines off the terminal
    # (and off the debugger's screen) and say why in the summary instead.
    if not args.otlp:
        yield None
        return
    from fpdebug.export.otlp import capture_sdk_log

    with capture_sdk_log() as log:
        yield log


def _otlp_summary(streams: Sequence[OtlpStreamSink], endpoint: str, sdk_log: SdkLog | None) -> None:
    from fpdebug.export.otlp import undelivered_reason
    from fpdebug.trace.inert import inert_line

    for stream in streams:
        line = f"otlp: {stream.exported} span(s) exported, {stream.failed} failed"
        reason = undelivered_reason(endpoint, sdk_log) if stream.failed and sdk_log else None
        if reason:
            line += f": {inert_line(reason)}"
        print(line)


def _run(args: argparse.Namespace, sdk_log: SdkLog | None) -> int:
    from fpdebug.demo.registry import load_target, make_provider, run_target

    scenario = load_target(args.target)
    provider = make_provider(
        args.provider,
        scenario=scenario,
        model=args.model,
        base_url=args.base_url,
        replay_from=args.replay_from,
        replay_run_id=args.replay_run,
    )
    trace = chosen_trace_path(args, scenario.name)
    streams: list[OtlpStreamSink] = []

    def stream_to_collector(sink: EventSink) -> EventSink:
        from fpdebug.export.stream import OtlpStreamSink

        streams.append(OtlpStreamSink(sink, args.otlp))
        return streams[-1]

    wrap = stream_to_collector if args.otlp else None
    if args.breakpoints and not args.tui:
        checked_breakpoints(scenario, args.breakpoints)  # never silently ignored: a typo is refused
    if args.tui:
        from fpdebug.errors import ConfigError

        if not is_terminal():
            raise ConfigError("--tui needs a terminal (stdin, stdout); without it, the run prints a summary")
        code = drive_in_debugger(
            scenario,
            trace=trace,
            provider=provider,
            args=args,
            run_id=args.run_id,
            messages=args.messages,
            max_iterations=args.max_iterations,
            wrap_sink=wrap,
        )
        _otlp_summary(streams, args.otlp, sdk_log)
        return code
    # SIGTERM / SIGHUP end the run as Ctrl-C does: run_end interrupted, then exit 143 / 129.
    with ending_signals(terminate_once()):
        result = run_target(
            scenario,
            trace_path=trace,
            provider=provider,
            run_id=args.run_id,
            messages=args.messages,
            max_iterations=args.max_iterations,
            overwrite=args.overwrite,
            wrap_sink=wrap,
        )
    _otlp_summary(streams, args.otlp, sdk_log)
    return finish(result)

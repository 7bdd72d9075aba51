"""``fpdebug view TRACE [--follow] [--keymap FILE]``: open a trace in the Textual debugger.

``fpdebug view DIR`` (or several files) opens the runs table instead: the rows ``fpdebug runs``
prints, from which a run opens in the debugger and two runs open in the run diff.

``TRACE`` may also be a foreign recording (OTLP, agentfootprint): it is imported on the fly, once,
into ``$XDG_CACHE_HOME/fpdebug/imports`` (keyed by the file's size, mtime and content), and that
import is opened.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

HELP = "Open a trace in the terminal debugger (passes, leases, calls, events, skill map, diff, backtrack)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, ``--follow`` and ``--keymap``."""
    parser.add_argument(
        "traces",
        nargs="+",
        metavar="TRACE",
        help="the trace file (*.fptrace.jsonl), or an OTLP / agentfootprint file (imported on the fly); "
        "a folder or several files open the runs table (as fpdebug runs lists them)",
    )
    parser.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="follow the file as another process writes it (new events show within 100 ms); a file that "
        "does not exist yet is waited for",
    )
    parser.add_argument(
        "--keymap",
        metavar="FILE",
        help='a TOML keymap ([keys] binding-id = "keys"); default $FPDEBUG_KEYMAP or '
        "~/.config/fpdebug/keymap.toml",
    )
    parser.add_argument(
        "--module",
        metavar="PATH_OR_MODULE",
        help="the agent module (a .py path or a dotted module) the backtrack pane's reruns may import, "
        "when the run came from your own module; a module the trace merely names is never imported",
    )
    parser.add_argument(
        "--force-module",
        action="store_true",
        help="let the pane rerun with --module even though the trace recorded another module",
    )


if TYPE_CHECKING:
    from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Open the trace (errors are raised before the screen is taken) and run the app.

    Returns:
        0 when the user quits.

    Raises:
        TraceError: The file is missing, unreadable, not a trace, or from a newer schema.
        ConfigError: The keymap file is invalid, or ``--force-module`` without ``--module``.
    """
    # pydantic looks for its plugins (entry points of the group "pydantic") the first time it builds
    # a validator: a walk over every installed distribution's metadata, about a tenth of the first
    # screen's start (issue 20). The viewer validates only trace records, which no plugin is for;
    # a PYDANTIC_DISABLE_PLUGINS the user set (empty: load them all) is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

    from fpdebug.tui import collector

    if len(args.traces) > 1 or os.path.isdir(args.traces[0]):
        return _open_runs(args)
    args.trace = args.traces[0]
    collector.pause()  # until the first screen is up (the trace loader resumes it)
    try:
        return _open(args)
    finally:
        collector.resume()


def _open_runs(args: argparse.Namespace) -> int:
    """The runs table of a folder or several files (each trace opens from it in the debugger).

    Raises:
        ConfigError: ``--follow``, ``--module`` or ``--force-module``, which are about one trace;
            or an invalid keymap.
    """
    from fpdebug.errors import ConfigError
    from fpdebug.tui.app import keymap_ids
    from fpdebug.tui.keymap import find_keymap, load_keymap
    from fpdebug.tui.runs_app import RunsApp

    for given, option in (
        (args.follow, "--follow"),
        (args.module, "--module"),
        (args.force_module, "--force-module"),
    ):
        if given:
            raise ConfigError(
                f"{option} is about one trace: give one trace file, not a folder or several files"
            )
    keymap_path = find_keymap(args.keymap)
    keymap = load_keymap(keymap_path, known_ids=keymap_ids()) if keymap_path is not None else {}
    RunsApp(args.traces, keymap=keymap).run()
    return 0


def _open(args: argparse.Namespace) -> int:
    from pathlib import Path

    from fpdebug.errors import ConfigError
    from fpdebug.trace.reader import TraceReader
    from fpdebug.tui.app import READER_CACHE, FpdebugApp, Mode, TraceSource, keymap_ids
    from fpdebug.tui.keymap import find_keymap, load_keymap

    if args.force_module and not args.module:
        raise ConfigError("--force-module needs the module to load (--module PATH_OR_MODULE)")
    keymap_path = find_keymap(args.keymap)
    keymap = load_keymap(keymap_path, known_ids=keymap_ids()) if keymap_path is not None else {}
    mode: Mode = "follow" if args.follow else "replay"
    trace = _trace_to_open(Path(args.trace), follow=args.follow)
    source = TraceSource(trace, mode, rerun_module=args.module, force_module=args.force_module)
    if args.follow and not os.path.lexists(trace):
        # Started before the writer: the app waits for the file ("waiting for the writer") and
        # opens it when it appears. Without --follow a missing file is the reader's clear error.
        app = FpdebugApp(source, keymap=keymap)
        try:
            app.run()
        finally:
            if not app.waiting:
                app.session.reader.close()
        return 0
    with TraceReader(trace, index=False, cache_size=READER_CACHE, wait_for_header=args.follow) as reader:
        app = FpdebugApp(source, reader=reader, keymap=keymap)
        app.run()
    return 0


def _trace_to_open(path: Path, *, follow: bool) -> Path:
    """``path``, or the cached import of a foreign file (a missing or empty file is left to the reader).

    Raises:
        FpdebugError: A foreign file that cannot be imported, or ``--follow`` on one.
    """
    from fpdebug.commands import terminal_text
    from fpdebug.errors import FpdebugError
    from fpdebug.ingest.detect import UnknownFormatError, detect

    try:
        if not path.is_file() or path.stat().st_size == 0 or detect(path) == "fpdebug":
            return path
    except UnknownFormatError:
        return path  # neither a trace nor a recording: the reader says what is wrong with it as a trace
    except OSError as error:
        raise FpdebugError(f"cannot open {terminal_text(str(path))}: {error.strerror or error}") from error
    if follow:
        raise FpdebugError(
            f"{terminal_text(str(path))}: --follow needs an fpdebug trace; for a live OTel run use "
            "fpdebug collect and follow the file it writes"
        )
    return _imported(path)


def _imported(path: Path) -> Path:
    """The cached import of the foreign file ``path`` (the importers load only for such a file).

    Raises:
        FpdebugError: A file that cannot be imported.
    """
    from fpdebug.commands import terminal_text
    from fpdebug.errors import FpdebugError
    from fpdebug.ingest.detect import UnknownFormatError, cached_import
    from fpdebug.ingest.otlp import OtlpDecodeError, looks_like_otlp_json

    try:
        trace, _kind = cached_import(path)
    except UnknownFormatError:
        return path  # neither a trace nor a recording: the reader says what is wrong with it as a trace
    except OtlpDecodeError:
        with path.open("rb") as handle:
            if looks_like_otlp_json(handle.read(4096)):
                raise  # an OTLP file that is damaged: its own error is the useful one
        return path  # binary that is not OTLP either: the reader's "not a trace" error
    except OSError as error:
        raise FpdebugError(f"cannot open {terminal_text(str(path))}: {error.strerror or error}") from error
    return trace

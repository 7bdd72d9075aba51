"""``fpdebug view TRACE [--follow] [--keymap FILE]``: open a trace in the Textual debugger."""

from __future__ import annotations

import argparse

HELP = "Open a trace in the terminal debugger (timeline, pass inspector, leases, calls, events)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``, ``--follow`` and ``--keymap``."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file (*.fptrace.jsonl)")
    parser.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="follow the file as another process writes it (new events show within 100 ms)",
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


def run(args: argparse.Namespace) -> int:
    """Open the trace (errors are raised before the screen is taken) and run the app.

    Returns:
        0 when the user quits.

    Raises:
        TraceError: The file is missing, unreadable, not a trace, or from a newer schema.
        ConfigError: The keymap file is invalid, or ``--force-module`` without ``--module``.
    """
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
    with TraceReader(args.trace, index=False, cache_size=READER_CACHE, wait_for_header=args.follow) as reader:
        source = TraceSource(Path(args.trace), mode, rerun_module=args.module, force_module=args.force_module)
        app = FpdebugApp(source, reader=reader, keymap=keymap)
        app.run()
    return 0

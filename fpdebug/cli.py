"""The ``fpdebug`` command line: one argparse sub-command per module of :mod:`fpdebug.commands`.

Each command module (``import`` lives in ``import_``, its name being a keyword) defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Command modules import only the standard library at module level; everything heavier (the trace
reader, the TUI, a model SDK) is imported inside ``run`` so ``fpdebug validate`` never pays for
Textual and ``fpdebug view`` never pays for the SDKs.
"""

from __future__ import annotations

import argparse
import importlib
import keyword
import sys
from collections.abc import Sequence
from types import ModuleType

from fpdebug import __version__
from fpdebug.errors import FpdebugError, Terminated

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: tuple[str, ...] = (
    "validate",
    "summary",
    "view",
    "diff",
    "runs",
    "run",
    "demo",
    "export",
    "backtrack",
    "fork",
    "ledger",
    "report",
    "serve",
    "import",
    "collect",
    "schema",
    "migrate",
)
"""Sub-command names, in the order ``fpdebug --help`` lists them; each is ``fpdebug.commands.<name>``."""

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def _command_module(name: str) -> ModuleType:
    module = name.replace("-", "_")
    if keyword.iskeyword(module):
        module += "_"  # `import` is a Python keyword: its module is `import_`
    return importlib.import_module(f"fpdebug.commands.{module}")


def build_parser() -> argparse.ArgumentParser:
    """Build the parser with every sub-command registered.

    Returns:
        The top-level parser; ``args.handler`` is the chosen command's ``run``.
    """
    parser = argparse.ArgumentParser(
        prog="fpdebug",
        description="An explainable agent engine and its terminal debugger.",
    )
    parser.add_argument("--version", action="version", version=f"fpdebug {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        module = _command_module(name)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the process exit code.

    Exit codes: 0 success, 1 the command found problems (e.g. ``validate``), 2 an error that
    stopped the command (a message on stderr, never a traceback), 130 interrupted (Ctrl-C),
    143 / 129 ended by SIGTERM / SIGHUP.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    from fpdebug.commands import RedactingStream

    # Everything a command prints passes the redactor, as everything it writes to a file does.
    outer = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    try:
        return _run(args)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # the reader went away or the terminal hung up: nothing left to show
        sys.stdout, sys.stderr = outer


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args) or 0)
    except FpdebugError as error:
        # Messages quote paths, servers and trace text: shown, never obeyed by the terminal.
        from fpdebug.commands import terminal_text

        print(f"fpdebug {args.command}: error: {terminal_text(str(error))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as interrupt:
        # SIGTERM / SIGHUP arrive as Terminated: the shell's convention, 128 + the signal's number.
        code = 128 + interrupt.signum if isinstance(interrupt, Terminated) else EXIT_INTERRUPTED
        try:
            print(f"fpdebug {args.command}: interrupted", file=sys.stderr)
        except OSError:
            pass  # the terminal hung up (SIGHUP): nobody is left to tell
        return code
    except BrokenPipeError:
        # The reader of our stdout went away (`fpdebug summary … | head`): not an error.
        sys.stderr.close()
        return EXIT_OK

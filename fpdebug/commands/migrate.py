"""``fpdebug migrate IN OUT``: rewrite a trace in another schema version, record for record."""

from __future__ import annotations

import argparse

HELP = "Rewrite a trace in schema_version 2 (or back to 1 with --to 1), losslessly."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``IN``, ``OUT``, ``--to``, ``--force`` and ``--drop-torn-tail``."""
    parser.add_argument("source", metavar="IN", help="the trace to read")
    parser.add_argument("target", metavar="OUT", help="where the migrated trace goes (a new file)")
    parser.add_argument(
        "--to", type=int, choices=(1, 2), default=2, help="the schema version to write (default: 2)"
    )
    parser.add_argument("--force", action="store_true", help="replace OUT when it exists")
    parser.add_argument(
        "--drop-torn-tail",
        action="store_true",
        help="leave out an unfinished last record (by default such a file is refused)",
    )
    parser.epilog = (
        "Version 2 stores each prompt segment, message and tool schema of a model call once and refers "
        "to it after; every other line is copied byte for byte, bad lines included, so line numbers and "
        "problems stay as they were. IN is left unchanged. Exit codes: 0 migrated, 2 nothing written "
        "(not a trace, already in that version, a torn tail, OUT exists)."
    )


def run(args: argparse.Namespace) -> int:
    """Migrate; print one line saying what was written."""
    from fpdebug.commands import collector_paused
    from fpdebug.trace.inert import inert_line
    from fpdebug.trace.migrate import migrate

    with collector_paused():
        done = migrate(
            args.source, args.target, to=args.to, overwrite=args.force, drop_torn_tail=args.drop_torn_tail
        )
    dropped = f"; a torn tail of {done.dropped_tail} byte(s) left out" if done.dropped_tail else ""
    print(
        f"{inert_line(args.target)}: schema_version {done.from_version} -> {done.to_version}, {done.lines} "
        f"lines, {done.llm_calls} llm_call record(s) rewritten, {done.source_bytes} -> {done.target_bytes} "
        f"bytes{dropped}"
    )
    return 0

"""``fpdebug validate TRACE``: check every line of a trace and list each problem by line and byte offset."""

from __future__ import annotations

import argparse
import sys

HELP = "Check a trace; print one line per problem (TRACE:LINE: offset BYTES: message), exit 1 if any."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``TRACE``."""
    parser.add_argument("trace", metavar="TRACE", help="the trace file (.jsonl) to check")
    parser.epilog = (
        "Lines count from 0 (the header), so line N holds seq N in a healthy trace. Problems: invalid "
        "lines (not UTF-8, not JSON, wrong fields), unknown kinds (kept, not dropped), seq gaps, and a torn "
        "tail (an unfinished last record). Exit codes: 0 clean, 1 problems found, 2 the file could not "
        "be read."
    )


def run(args: argparse.Namespace) -> int:
    """Validate the trace; return 0 when clean, 1 when problems were found.

    A missing, unreadable or newer-schema file raises (exit 2 through ``cli.main``); a file that is
    not a trace at all (empty, no header) is reported as a problem on line 0.
    """
    from fpdebug.errors import TraceFormatError, TraceVersionError
    from fpdebug.trace.inert import inert_line
    from fpdebug.trace.parallel import iter_problems
    from fpdebug.trace.reader import TraceReader

    path: str = args.trace
    shown = inert_line(path)
    try:
        reader = TraceReader(path, index=False)
    except TraceVersionError:
        raise  # this fpdebug cannot judge the file: an error, not a finding
    except TraceFormatError as error:
        message = str(error).removeprefix(f"{path}: ")
        print(f"{shown}:0: offset 0: {inert_line(message)}")
        print("1 problem", file=sys.stderr)
        return 1
    from fpdebug.commands import collector_paused

    with reader, collector_paused():
        count = 0
        # Line ranges on every core, the problems still in file order (issue 22).
        for problem in iter_problems(reader):
            print(f"{shown}:{problem.line}: offset {problem.offset}: {inert_line(problem.message)}")
            count += 1
        if count:
            print(f"{count} problem{'s' if count != 1 else ''}", file=sys.stderr)
            return 1
        lines = len(reader)
        print(
            f"{shown}: ok ({lines} line{'s' if lines != 1 else ''}, schema_version {reader.header.schema_version})"
        )
        return 0

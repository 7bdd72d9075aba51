"""``fpdebug diff A B [--json]``: the first divergence of two runs, and its consequences pass by pass.

Exit codes, as ``diff(1)``: 0 the runs are identical, 1 they differ, 2 bad input (a missing file,
not a trace, invalid lines, a run still being written, no such run). ``A`` or ``B`` may also be an
OTLP or agentfootprint file: it is imported on the fly into the cache, as ``fpdebug view`` does.
The JSON form is documented in docs/guide/diff.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.trace.model import Run
    from fpdebug.views.session import TraceSession

HELP = "Compare two runs: their first divergence and its consequences, pass by pass (exit 1 if they differ)."

EXIT_IDENTICAL = 0
EXIT_DIFFERENT = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``A``, ``B``, ``--run-a``, ``--run-b``, ``--partial`` and ``--json``."""
    parser.add_argument("a", metavar="A", help="the reference trace (yesterday's good run)")
    parser.add_argument("b", metavar="B", help="the trace compared with it")
    parser.add_argument(
        "--run-a", metavar="RUN", help="the run of A to compare, by id or 1-based number (default: the first)"
    )
    parser.add_argument(
        "--run-b", metavar="RUN", help="the run of B to compare, by id or 1-based number (default: the first)"
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="compare a run that has not ended (no run_end) or a trace with invalid lines, as far as it is readable",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (schema fpdebug.run-diff, sorted keys, for CI)",
    )
    parser.epilog = "Exit status: 0 identical, 1 different, 2 bad input (as diff(1))."


def run(args: argparse.Namespace) -> int:
    """Load both traces, compare the chosen runs, print the diff; 0 identical, 1 different.

    Raises:
        FpdebugError: A file is missing or not a trace, has invalid lines or an unfinished run
            (without ``--partial``), or has no such run (the message lists its runs).
    """
    import json

    from fpdebug.views.run_diff import choose_run, run_diff
    from fpdebug.views.run_diff.reading import validate_run
    from fpdebug.views.run_diff.text import render

    with _Opened(args.a, "A", partial=args.partial) as a, _Opened(args.b, "B", partial=args.partial) as b:
        run_a = _checked(a, choose_run(a.session, args.run_a, f"A ({args.a})"), partial=args.partial)
        run_b = _checked(b, choose_run(b.session, args.run_b, f"B ({args.b})"), partial=args.partial)
        diff = run_diff((a.session, run_a, args.a), (b.session, run_b, args.b))
        # Every record of the two runs is read in full: one found invalid is bad input too.
        validate_run(a.session, run_a)
        validate_run(b.session, run_b)
        a.check_lines()
        b.check_lines()
    for side, name, option in ((diff.a, "A", "--run-a"), (diff.b, "B", "--run-b")):
        if side.runs > 1:
            diff.notes.append(
                f"{name}'s file holds {side.runs} runs: run {side.number} is compared ({option} chooses another)"
            )
    if args.json:
        # One write: the redacting stream sees the whole document and redacts it as JSON.
        # ensure_ascii: every control or bidi character from a trace comes out escaped.
        sys.stdout.write(json.dumps(diff.as_json(), indent=2, sort_keys=True, ensure_ascii=True) + "\n")
    else:
        sys.stdout.write(render(diff) + "\n")
    return EXIT_IDENTICAL if diff.identical else EXIT_DIFFERENT


class _Opened:
    """One trace opened and fully loaded (a foreign file is imported first); closes its reader."""

    def __init__(self, path: str, name: str, *, partial: bool) -> None:
        self.path = path
        self.name = name
        self.partial = partial
        self.session: TraceSession

    def __enter__(self) -> _Opened:
        from pathlib import Path

        from fpdebug.commands.view import _trace_to_open
        from fpdebug.trace.reader import TraceReader
        from fpdebug.views.run_diff.reading import load_all
        from fpdebug.views.session import TraceSession

        trace = _trace_to_open(Path(self.path), follow=False)
        self.session = TraceSession(TraceReader(trace, index=False))
        try:
            load_all(self.session)
            self.check_lines()
        except BaseException:
            self.session.reader.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.reader.close()

    def check_lines(self) -> None:
        """Refuse (unless ``--partial``) a file with invalid lines known so far or a torn last line.

        Raises:
            FpdebugError: Naming the first invalid lines, and ``fpdebug validate`` to list them.
        """
        from fpdebug.commands import terminal_text
        from fpdebug.errors import FpdebugError

        session = self.session
        torn = session.reader.torn_tail()
        bad = sorted([*session.model.invalid_lines, *session.found_invalid])
        if self.partial or (not bad and torn is None):
            return
        shown = terminal_text(self.path)
        if bad:
            first = ", ".join(str(line) for line in bad[:5]) + (" …" if len(bad) > 5 else "")
            problem = f"{len(bad)} invalid line(s) (line {first})"
        else:
            problem = "an unfinished last line (torn or still being written)"
        raise FpdebugError(
            f"{self.name} ({shown}) has {problem}; `fpdebug validate {shown}` lists the problems, "
            "and --partial compares what is readable"
        )


def _checked(opened: _Opened, run: Run, *, partial: bool) -> Run:
    """``run``, unless it has not ended and ``--partial`` was not given."""
    from fpdebug.commands import terminal_text
    from fpdebug.errors import FpdebugError

    if run.end_line is None and not partial:
        raise FpdebugError(
            f"{opened.name} ({terminal_text(opened.path)}): run {terminal_text(run.run_id)} has no run_end: it is "
            "still being written, or its process died; compare it once it ends, or pass --partial"
        )
    return run

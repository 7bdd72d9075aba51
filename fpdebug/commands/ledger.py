"""``fpdebug ledger DIR_OR_FILES... [--json] [--kind K] [--outcomes FILE] [--export FILE] [--import FILE]``.

The context ledger over every run of the given traces (docs/backtracking.md §9.10): offered, tokens
spent, used and how, runs seen, outcomes, earn rate and dollars, worst first. A foreign file, a
broken trace or a run still being written is reported with its reason; the ledger never fails as a
whole.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.backtrack.ledger import Ledger

HELP = "The context ledger across runs: what each injection, skill and tool costs and earns, worst first."

_KINDS = ("injection", "skill", "tool")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the paths and the options."""
    parser.add_argument("paths", nargs="*", metavar="DIR_OR_FILE", help="trace files, or folders of them")
    parser.add_argument("--json", action="store_true", help="print the ledger as JSON (version 1)")
    parser.add_argument("--kind", choices=_KINDS, help="show only the rows of one kind")
    parser.add_argument(
        "--outcomes",
        metavar="FILE",
        help='a JSON object of run refs to outcome labels ({"RUN_ID": "resolved", …}; a list of labels too)',
    )
    parser.add_argument(
        "--import", dest="import_", metavar="FILE", help="add an exported ledger's counts first"
    )
    parser.add_argument("--export", metavar="FILE", help="write the ledger as JSON (version 1) to FILE")


def _load_json(path: str, what: str) -> object:
    import os
    import stat

    from fpdebug.errors import ConfigError

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open
            raise ConfigError(f"cannot read {what} {path}: not a regular file")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc


def _apply_outcomes(ledger: Ledger, data: object, source: str) -> None:
    if not isinstance(data, dict):
        ledger.warnings.append(f"{source}: not a JSON object of run refs to labels; ignored")
        return
    for ref, labels in data.items():
        for label in labels if isinstance(labels, list) else [labels]:
            if not isinstance(label, str) or not label:
                ledger.warnings.append(f"{source}: run {ref}: a label must be a non-empty string")
            elif not ledger.record_outcome(label, str(ref)):
                ledger.warnings.append(f"{source}: run {ref} is not among the runs metered; outcome ignored")


def run(args: argparse.Namespace) -> int:
    """Build the ledger, apply outcomes, print it (and export it when asked)."""
    from fpdebug.backtrack.ledger import Ledger, dumps, trace_files
    from fpdebug.errors import ConfigError

    if not args.paths and not args.import_:
        raise ConfigError("give trace files or folders, or a ledger to start from (--import FILE)")
    ledger = Ledger()
    if args.import_:
        ledger.import_json(_load_json(args.import_, "the ledger"), source=args.import_)
    files, missing = trace_files(args.paths)
    ledger.skipped.extend(missing)
    for path in files:
        ledger.add_trace(path)
    if args.outcomes:
        _apply_outcomes(ledger, _load_json(args.outcomes, "the outcomes"), args.outcomes)
    if args.export:
        try:
            with open(args.export, "w", encoding="utf-8") as handle:
                handle.write(dumps(ledger) + "\n")
        except OSError as exc:
            raise ConfigError(f"cannot write the ledger to {args.export}: {exc}") from exc
    if args.json:
        data = ledger.export_json()
        if args.kind:
            data["rows"] = [row.as_json() for row in ledger.rows() if row.kind == args.kind]
        data["refused_runs"] = [
            {"trace": r.trace, "run_id": r.run_id, "reason": r.reason} for r in ledger.refused
        ]
        data["skipped_files"] = [{"path": s.path, "reason": s.reason} for s in ledger.skipped]
        data["warnings"] = list(ledger.warnings)
        print(json.dumps(data, indent=2, ensure_ascii=True))
    else:
        print(render(ledger, kind=args.kind))
    return 0


def render(ledger: Ledger, *, kind: str | None = None) -> str:
    """The table :func:`fpdebug.views.ledger_text.ledger_lines` draws, as one text."""
    from fpdebug.views.ledger_text import ledger_lines

    return "\n".join(ledger_lines(ledger, kind=kind))

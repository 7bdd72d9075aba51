"""``fpdebug runs DIR_OR_FILES... [--json] [--filter EXPR ...] [--sort COL [--desc]] [--no-cache]``.

One row per run across many traces (:mod:`fpdebug.views.runs`): start time, scenario or agent,
status, turns and iterations, tokens and cost, leases, parks, unsupported values, the final
answer's first line and the source format. DuckDB reads the traces in place; each trace's rows are
cached by its size and mtime. A foreign, broken, empty, unreadable or non-regular file is listed
with what it is; the table never fails as a whole.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.views.runs import FileEntry, RunRow

HELP = "A table of runs across many traces (DuckDB over the files in place): sort, filter, --json."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the paths and the options."""
    parser.add_argument("paths", nargs="+", metavar="DIR_OR_FILE", help="trace files, or folders of them")
    parser.add_argument(
        "--json", action="store_true", help="print the table as JSON (sorted keys, version 1)"
    )
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="EXPR",
        help="status:S tool:T lease:L model:M agent:A source:S, or free text over the answers (all must hold)",
    )
    parser.add_argument(
        "--sort", default="started", metavar="COL", help="the column to sort by (default: started)"
    )
    parser.add_argument("--desc", action="store_true", help="sort in descending order")
    parser.add_argument("--no-cache", action="store_true", help="read every trace again (and write no cache)")


def run(args: argparse.Namespace) -> int:
    """Build the table, filter and sort it, print it."""
    from fpdebug.errors import ConfigError
    from fpdebug.views.runs import SORT_COLUMNS, TABLE_VERSION, RunsTable, build_table, parse_filters

    if args.sort not in SORT_COLUMNS:
        raise ConfigError(f"unknown sort column {args.sort!r}; one of: {', '.join(SORT_COLUMNS)}")
    try:
        parse_filters(args.filter)
    except ValueError as exc:
        raise ConfigError(f"cannot read the filter: {exc}") from exc
    table = build_table(args.paths, use_cache=not args.no_cache)
    rows = RunsTable.sorted_rows(table.filtered(args.filter), args.sort, descending=args.desc)
    if args.json:
        data = {
            "version": TABLE_VERSION,
            "filters": list(args.filter),
            "sort": {"column": args.sort, "descending": bool(args.desc)},
            "total_runs": len(table.rows),
            "runs": [row.as_json() for row in rows],
            "files": [entry.as_json() for entry in table.entries],
            "cache": {"cached_traces": table.cached_files, "scanned_traces": table.scanned_files},
        }
        # ensure_ascii: every control or bidi character from a trace comes out escaped.
        print(json.dumps(data, indent=2, ensure_ascii=True, sort_keys=True))
    else:
        print(render(rows, table.entries, total=len(table.rows)))
    return 0


_HEADERS = (
    "started",
    "agent",
    "status",
    "turns/iter",
    "tokens in/out",
    "cost",
    "leases",
    "parks",
    "unsup",
    "source",
)


def _clip(text: str, width: int) -> str:
    """Redacted and made inert *before* it is cut: a secret cut short would escape the stream's redactor."""
    from fpdebug.trace.inert import inert_line
    from fpdebug.trace.redact import default_redactor

    text = inert_line(default_redactor().redact(text))
    return text if len(text) <= width else text[: width - 1] + "…"


def _cells(row: RunRow) -> tuple[str, ...]:
    started = _clip((row.started or "?")[:19].replace("T", " "), 19)
    return (
        started,
        _clip(row.agent or "?", 24),
        row.status if row.status != "running" else "running (no run_end)",
        f"{row.turns}/{row.iterations}",
        f"{row.input_tokens}/{row.output_tokens}",
        # A run without calls cost nothing known; "$0.00" would claim a price.
        _clip(str(row.cost.get("text", "")), 40) if row.llm_calls else "no calls",
        str(row.leases),
        str(row.parks),
        str(row.unsupported_values),
        "native" if row.source == "native" else f"imported {row.source}",
    )


def render(rows: list[RunRow], entries: list[FileEntry], *, total: int) -> str:
    """The table, then each run's notes, then every file that yielded no run (trace text made inert)."""
    from fpdebug.trace.inert import inert_line as safe

    shown = (
        f"{len(rows)} of {total} run{'' if total == 1 else 's'}" if len(rows) != total else f"{total} runs"
    )
    lines = [shown]
    if rows:
        cells = [_cells(row) for row in rows]
        widths = [max(len(header), *(len(cell[i]) for cell in cells)) for i, header in enumerate(_HEADERS)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(_HEADERS, widths, strict=True)) + "  answer")
        for row, cell in zip(rows, cells, strict=True):
            answer = _clip(row.answer_first_line, 60)
            lines.append("  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + "  " + answer)
    for row in rows:
        notes = list(row.notes) + ([f"error: {row.error}"] if row.error else [])
        if notes:
            lines.append(f"note: run {safe(row.run_id)} in {safe(row.trace)}: {safe('; '.join(notes))}")
    for entry in entries:
        lines.append(f"{entry.what}: {safe(entry.path)}: {safe(entry.reason)}")
    return "\n".join(lines)

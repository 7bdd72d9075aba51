"""The runs table: one row per run over many traces, its filters and its sort (headless; the CLI prints it).

:func:`build_table` lists the paths, tells each file what it is (:mod:`.files`), takes the rows of
unchanged traces from the cache (:mod:`.cache`) and scans the rest in one DuckDB read
(:mod:`.scan`). A file that yields no run is an entry that says why; the table never fails as a
whole.

Filters (all must hold): ``status:S``, ``tool:T`` (a tool the run called), ``lease:L`` (an
instruction a lease served), ``model:M``, ``agent:A``, ``source:native|agentfootprint|otlp``;
any other word (or ``"a phrase"``) is free text over the final answers. Values match ASCII
case-insensitively as substrings, except ``status:`` and ``source:`` which match exactly.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fpdebug.views.runs import cache
from fpdebug.views.runs.files import FileEntry, TraceFile, classify, list_files
from fpdebug.views.runs.scan import ScannedFile, ScannedRun, scan_files

__all__ = [
    "FILTER_FIELDS",
    "SORT_COLUMNS",
    "TABLE_VERSION",
    "RunRow",
    "RunsTable",
    "build_table",
    "parse_filters",
]

TABLE_VERSION = 1
"""The version of ``fpdebug runs --json``."""

FILTER_FIELDS = ("status", "tool", "lease", "model", "agent", "source")
"""The ``field:`` prefixes a runs filter understands."""

RUNNING_NOTE = "no run_end: still being written, or its writer stopped"
NO_START_NOTE = (
    "no run_start in its trace: records of a run whose start is missing (or lines that only name it)"
)


@dataclass(slots=True)
class RunRow:
    """One run of the table."""

    trace: str
    run_id: str
    started: str | None
    agent: str | None
    provider: str | None
    model: str | None
    models: list[str]
    status: str
    error: str | None
    turns: int
    iterations: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost: dict[str, Any]
    """:meth:`fpdebug.trace.cost.CostTotal.as_json`: ``usd`` is ``None`` unless every call was priced."""
    leases: int
    lease_ids: list[str]
    tools: list[str]
    parks: int
    unsupported_values: int
    answer: str | None
    """The last turn's final answer, whole (free text filters search it)."""
    source: str
    """``native``, ``agentfootprint`` or ``otlp``."""
    bad_lines: int = 0
    """Lines of its trace that could not be read (the whole file's count)."""
    notes: list[str] = field(default_factory=list)

    @property
    def answer_first_line(self) -> str:
        """The final answer's first non-empty line ('' when there is none)."""
        for line in (self.answer or "").splitlines():
            if line.strip():
                return line.strip()
        return ""

    @property
    def tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens

    def as_json(self) -> dict[str, Any]:
        """Every field, plus ``answer_first_line`` and ``tokens``."""
        data = asdict(self)
        data["answer_first_line"] = self.answer_first_line
        data["tokens"] = self.tokens
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRow:
        """The row :meth:`as_json` wrote (the cache's form)."""
        names = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in names})


def _row(trace: TraceFile, scanned: ScannedFile, run: ScannedRun) -> RunRow:
    notes = []
    if not run.has_start:
        notes.append(NO_START_NOTE)
    if run.status == "running":
        notes.append(RUNNING_NOTE)
    bad = scanned.bad_lines
    if trace.torn_tail and bad:
        bad -= 1  # the scan counted the torn last line: a record being written, not a broken one
        notes.append("its last line is still being written")
    if bad:
        notes.append(f"{bad} unreadable line{'' if bad == 1 else 's'} in its trace")
    return RunRow(
        trace=trace.path,
        run_id=run.run_id,
        started=run.started,
        agent=run.agent_name,
        provider=run.provider,
        model=run.model,
        models=run.models,
        status=run.status,
        error=run.error,
        turns=run.turns,
        iterations=run.iterations,
        llm_calls=run.llm_calls,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost=run.cost.as_json(),
        leases=run.leases,
        lease_ids=run.lease_ids,
        tools=run.tools,
        parks=run.parks,
        unsupported_values=run.unsupported,
        answer=run.answer,
        source=trace.source,
        bad_lines=bad,
        notes=notes,
    )


@dataclass(slots=True)
class RunsTable:
    """Rows, the entries of files that yielded none, and how the rows were obtained."""

    rows: list[RunRow] = field(default_factory=list)
    entries: list[FileEntry] = field(default_factory=list)
    cached_files: int = 0
    """Traces whose rows came from the cache."""
    scanned_files: int = 0
    """Traces read by DuckDB on this call."""

    def filtered(self, filters: Sequence[str]) -> list[RunRow]:
        """The rows every filter keeps (:func:`parse_filters`)."""
        tests = parse_filters(filters)
        return [row for row in self.rows if all(test(row) for test in tests)]

    @staticmethod
    def sorted_rows(rows: Iterable[RunRow], column: str, *, descending: bool = False) -> list[RunRow]:
        """``rows`` by ``column`` (:data:`SORT_COLUMNS`); rows without a value go last either way."""
        key = SORT_COLUMNS.get(column)
        if key is None:
            raise ValueError(f"unknown sort column {column!r}; one of: {', '.join(SORT_COLUMNS)}")
        rows = list(rows)
        present = [row for row in rows if key(row) is not None]
        absent = [row for row in rows if key(row) is None]
        present.sort(key=lambda row: key(row), reverse=descending)
        return present + absent


SORT_COLUMNS: dict[str, Callable[[RunRow], Any]] = {
    "started": lambda row: row.started,
    "agent": lambda row: (row.agent or "").lower(),
    "status": lambda row: row.status,
    "turns": lambda row: row.turns,
    "iterations": lambda row: row.iterations,
    "tokens": lambda row: row.tokens,
    "input_tokens": lambda row: row.input_tokens,
    "output_tokens": lambda row: row.output_tokens,
    "cost": lambda row: row.cost.get("usd"),
    "leases": lambda row: row.leases,
    "parks": lambda row: row.parks,
    "unsupported": lambda row: row.unsupported_values,
    "source": lambda row: row.source,
    "answer": lambda row: row.answer_first_line.lower(),
    "trace": lambda row: row.trace,
    "run_id": lambda row: row.run_id,
}
"""The columns ``--sort`` accepts and the key each sorts by."""


def _contains(values: Iterable[str | None], needle: str) -> bool:
    return any(needle in (value or "").lower() for value in values)


def _term(term: str) -> Callable[[RunRow], bool]:
    """The test of one filter term."""
    name, colon, value = term.partition(":")
    field_name, needle = name.lower(), value.lower()
    if not colon or field_name not in FILTER_FIELDS:
        words = term.lower()
        return lambda row: words in (row.answer or "").lower()
    values: Callable[[RunRow], list[str | None]] = {
        "tool": lambda row: list(row.tools),
        "lease": lambda row: list(row.lease_ids),
        "model": lambda row: [row.model, *row.models],
        "agent": lambda row: [row.agent],
    }.get(field_name, lambda row: [])
    if field_name == "status":
        return lambda row: row.status == needle
    if field_name == "source":
        return lambda row: row.source == needle
    return lambda row: _contains(values(row), needle)


def parse_filters(filters: Sequence[str]) -> list[Callable[[RunRow], bool]]:
    """The tests of filter expressions (each may hold several terms; all terms must hold).

    Raises:
        ValueError: An unbalanced quote.
    """
    return [_term(term) for expression in filters for term in shlex.split(expression)]


def _entry_of(trace: TraceFile, scanned: ScannedFile) -> dict[str, Any]:
    return {
        "lines": scanned.lines,
        "bad_lines": scanned.bad_lines,
        "rows": [_row(trace, scanned, run).as_json() for run in scanned.runs],
    }


def build_table(paths: Sequence[str], *, use_cache: bool = True, threads: int | None = None) -> RunsTable:
    """The runs of every trace among ``paths`` (files or folders), and what every other file is.

    Args:
        paths: Trace files and folders (folders are listed, not searched recursively).
        use_cache: Read and write the per-trace cache (:mod:`fpdebug.views.runs.cache`).
        threads: DuckDB's worker threads (``None``: one per core).
    """
    table = RunsTable()
    files, table.entries = list_files(paths)
    traces: list[TraceFile] = []
    for path in files:
        found = classify(path)
        if isinstance(found, FileEntry):
            table.entries.append(found)
        else:
            traces.append(found)
    entries: dict[str, dict[str, Any]] = {}
    to_scan: list[TraceFile] = []
    for trace in traces:
        hit = cache.load(trace.path, trace.size, trace.mtime_ns) if use_cache else None
        if hit is not None:
            entries[trace.path] = hit
            table.cached_files += 1
        else:
            to_scan.append(trace)
    scanned = scan_files([trace.path for trace in to_scan], threads=threads)
    table.scanned_files = len(to_scan)
    for trace in to_scan:
        result = scanned.get(trace.path)
        if result is None or result.error is not None:
            reason = result.error if result is not None else "the scan returned nothing for it"
            table.entries.append(FileEntry(trace.path, "broken", f"could not be scanned: {reason}"))
            continue
        entry = _entry_of(trace, result)
        entries[trace.path] = entry
        # A trace still being written (a run without run_end) is read again next time.
        if use_cache and all(row["status"] != "running" for row in entry["rows"]):
            cache.store(trace.path, trace.size, trace.mtime_ns, entry)
    for trace in traces:
        cached = entries.get(trace.path)
        if cached is None:
            continue
        rows = [RunRow.from_json(data) for data in cached["rows"]]
        if not rows:
            table.entries.append(_no_run(trace, cached))
        table.rows.extend(rows)
    return table


def _no_run(trace: TraceFile, entry: dict[str, Any]) -> FileEntry:
    bad = int(entry.get("bad_lines", 0))
    if bad:
        return FileEntry(trace.path, "broken", f"no run could be read ({bad} unreadable lines)")
    return FileEntry(trace.path, "no-run", "no run recorded yet (a trace whose writer just started)")

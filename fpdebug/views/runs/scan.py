"""The scan behind the runs table: DuckDB's parallel JSON reader over the trace files, in place.

DuckDB reads every line of every file named, keeping only the fields the table needs (kind, run id,
times, turn and iteration numbers, status, usage, models, lease and tool names, parks and
unsupported values counted per record, the turns' final answers). Nothing is validated record by
record in Python: a line DuckDB cannot read as a record of that shape comes back as an empty row
and is counted as unreadable. The rows are aggregated in SQL to one row per run, plus the calls
grouped by what prices them, so pricing (:func:`fpdebug.trace.cost.price_tokens`) runs once per
distinct (provider, model, tokens, day), not once per call, and once per run for the calls that
have no price whatever their tokens.

A batch that DuckDB refuses as a whole is retried file by file, so one bad file names itself and
never empties the table.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fpdebug.trace.cost import CostTotal, TokenCounts, price_tokens

__all__ = ["ScannedFile", "ScannedRun", "scan_files"]

# The fields read; every other key of a record is skipped by the reader.
_COLUMNS: dict[str, str] = {
    "kind": "VARCHAR",
    "seq": "BIGINT",
    "ts": "VARCHAR",
    "run_id": "VARCHAR",
    "turn": "BIGINT",
    "iteration": "BIGINT",
    "agent_name": "VARCHAR",
    "provider": "VARCHAR",
    "model": "VARCHAR",
    "status": "VARCHAR",
    "error": "JSON",
    "final_content": "VARCHAR",
    "tool_name": "VARCHAR",
    "layer": "VARCHAR",
    "lease": "STRUCT(instruction_id VARCHAR)",
    "changes": "STRUCT(kind VARCHAR)[]",
    "rows": 'STRUCT("row" VARCHAR, "values" STRUCT(supported BOOLEAN)[])[]',
    "response": "STRUCT(model VARCHAR, usage STRUCT(input_tokens BIGINT, output_tokens BIGINT, "
    "cache_read_tokens BIGINT, cache_write_tokens BIGINT, input_includes_cache BOOLEAN))",
}

# One row per line: what each record contributes, computed while reading.
_RECORDS = """
CREATE OR REPLACE TEMP TABLE r AS
SELECT
    filename AS file, kind, seq, ts, run_id, turn, iteration,
    CASE WHEN kind = 'run_start' THEN agent_name END AS agent_name,
    provider, model,
    CASE WHEN kind = 'run_end' THEN status END AS status,
    CASE WHEN kind = 'run_end' THEN
        concat_ws(': ', json_extract_string(error, '$.type'), json_extract_string(error, '$.message')) END
        AS error,
    CASE WHEN kind = 'turn_end' THEN final_content END AS final_content,
    CASE WHEN kind = 'tool_result' THEN tool_name END AS tool_name,
    CASE WHEN kind = 'lease_grant' THEN lease.instruction_id END AS lease_id,
    CASE WHEN kind = 'engagement' THEN len(list_filter(changes, lambda c: c.kind = 'parked')) ELSE 0 END AS parks,
    CASE WHEN kind = 'finding' AND layer = 'answer' THEN coalesce(list_sum(list_transform(
        list_filter(rows, lambda x: x."row" = 'assessment'),
        lambda x: len(list_filter(x."values", lambda v: v.supported = false)))), 0) ELSE 0 END AS unsupported,
    response IS NOT NULL AS replied,
    response.model AS replied_model,
    coalesce(response.usage.input_tokens, 0) AS input_tokens,
    coalesce(response.usage.output_tokens, 0) AS output_tokens,
    coalesce(response.usage.cache_read_tokens, 0) AS cache_read,
    coalesce(response.usage.cache_write_tokens, 0) AS cache_write,
    coalesce(response.usage.input_includes_cache, false) AS includes_cache
FROM read_json($files, format = 'newline_delimited', columns = $columns, ignore_errors = true,
               filename = true, maximum_object_size = 268435456)
"""

_RUNS = """
SELECT file, run_id,
    any_value(ts) FILTER (WHERE kind = 'run_start') AS started,
    min(ts) AS first_ts,
    any_value(agent_name) FILTER (WHERE kind = 'run_start') AS agent_name,
    any_value(provider) FILTER (WHERE kind = 'run_start') AS provider,
    any_value(model) FILTER (WHERE kind = 'run_start') AS model,
    any_value(status) FILTER (WHERE kind = 'run_end') AS status,
    any_value(error) FILTER (WHERE kind = 'run_end' AND error <> '') AS error,
    count(DISTINCT turn) AS turns,
    count(DISTINCT (turn, iteration)) FILTER (
        WHERE iteration IS NOT NULL AND kind NOT IN ('turn_start', 'turn_end')) AS iterations,
    count(*) FILTER (WHERE kind = 'llm_call') AS llm_calls,
    coalesce(sum(CASE WHEN includes_cache OR provider <> 'anthropic' THEN input_tokens
        ELSE input_tokens + cache_read + cache_write END) FILTER (WHERE kind = 'llm_call' AND replied), 0)
        AS input_tokens,
    coalesce(sum(output_tokens) FILTER (WHERE kind = 'llm_call' AND replied), 0) AS output_tokens,
    count(*) FILTER (WHERE kind = 'lease_grant') AS leases,
    list(DISTINCT lease_id) FILTER (WHERE lease_id IS NOT NULL) AS lease_ids,
    list(DISTINCT tool_name) FILTER (WHERE tool_name IS NOT NULL) AS tools,
    list(DISTINCT coalesce(replied_model, model)) FILTER (WHERE kind = 'llm_call') AS call_models,
    sum(parks) AS parks,
    sum(unsupported) AS unsupported,
    arg_max(final_content, seq) FILTER (WHERE kind = 'turn_end') AS answer,
    min(seq) AS first_seq
FROM r WHERE run_id IS NOT NULL
GROUP BY file, run_id
ORDER BY file, first_seq
"""

# A call of an in-process provider (scripted, replay) or one without a reply has no price whatever its
# tokens and day (:func:`price_tokens`): such calls are grouped by run, provider and model alone and
# priced once. (Priced per distinct token count, 1,000 generated traces of 10 MB took 0.9M pricings:
# the cold scan used 73 CPU-seconds against 61.)
_CALLS = """
SELECT file, run_id, provider, model, replied, input_total, cache_read, cache_write, output_tokens, day,
    count(*) AS calls
FROM (
    SELECT file, run_id, provider, coalesce(replied_model, model) AS model, replied,
        provider IN ('scripted', 'replay') OR NOT replied AS unpriced,
        CASE WHEN unpriced THEN 0 WHEN includes_cache OR provider <> 'anthropic' THEN input_tokens
             ELSE input_tokens + cache_read + cache_write END AS input_total,
        CASE WHEN unpriced THEN 0 ELSE cache_read END AS cache_read,
        CASE WHEN unpriced THEN 0 ELSE cache_write END AS cache_write,
        CASE WHEN unpriced THEN 0 ELSE output_tokens END AS output_tokens,
        CASE WHEN unpriced THEN NULL ELSE substr(ts, 1, 10) END AS day
    FROM r WHERE kind = 'llm_call' AND run_id IS NOT NULL
)
GROUP BY ALL
"""

_GLOB = re.compile(r"[*?\[\]{}\\]")
"""Characters DuckDB's file list reads as a glob."""

_FILES = "SELECT file, count(*) AS lines, count(*) FILTER (WHERE kind IS NULL) AS bad FROM r GROUP BY file"


@dataclass(slots=True)
class ScannedRun:
    """One run's facts, as the scan found them (before the table dresses them)."""

    file: str
    run_id: str
    started: str | None
    has_start: bool
    """Whether its ``run_start`` record is in the trace (``started`` is its first record's time when not)."""
    agent_name: str | None
    provider: str | None
    model: str | None
    status: str
    error: str | None
    turns: int
    iterations: int
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost: CostTotal
    leases: int
    lease_ids: list[str]
    tools: list[str]
    models: list[str]
    parks: int
    unsupported: int
    answer: str | None


@dataclass(slots=True)
class ScannedFile:
    """One file's scan: its runs, how many lines it has and how many could not be read."""

    path: str
    lines: int = 0
    bad_lines: int = 0
    runs: list[ScannedRun] = field(default_factory=list)
    error: str | None = None
    """Set when DuckDB refused the file as a whole."""


def _day(text: str | None) -> datetime:
    try:
        return datetime.fromisoformat(text or "").replace(tzinfo=UTC)
    except ValueError:
        return datetime.now(UTC)  # no usable time: today's price is the honest guess


def _plain_names(files: Sequence[str], scratch: str) -> dict[str, str]:
    """What DuckDB is given for each file → the file: its absolute path, or a link with a plain name.

    DuckDB expands globs in every path it is given, so ``a*b.jsonl`` would also read ``axb.jsonl``
    (and count its runs twice); such a file is read through a symlink named by its position. An
    absolute path also keeps a relative name from being read as a URL (``s3:``, ``http:``).
    """
    names: dict[str, str] = {}
    for number, path in enumerate(files):
        absolute = os.path.abspath(path)
        if _GLOB.search(absolute):
            link = os.path.join(scratch, f"{number}.jsonl")
            os.symlink(absolute, link)
            absolute = link
        names[absolute] = path
    return names


def _query(files: Sequence[str], threads: int | None) -> dict[str, ScannedFile]:
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        with tempfile.TemporaryDirectory(prefix="fpdebug-runs-") as scratch:
            names = _plain_names(files, scratch)
            con.execute(_RECORDS, {"files": list(names), "columns": _COLUMNS})
        found = {path: ScannedFile(path) for path in files}
        for name, lines, bad in con.execute(_FILES).fetchall():
            path = names.get(name)
            if path is not None:
                found[path].lines, found[path].bad_lines = int(lines), int(bad)
        costs: dict[tuple[str, str], CostTotal] = {}
        for name, run_id, provider, model, replied, total, read, write, out, day, calls in con.execute(
            _CALLS
        ).fetchall():
            tokens = TokenCounts(int(total), int(read), int(write), int(out), None)
            cost = price_tokens(provider or "", model or "", tokens, _day(day), replied=bool(replied))
            costs.setdefault((names.get(name, name), run_id), CostTotal()).add(cost, int(calls))
        for row in con.execute(_RUNS).fetchall():
            _add_run(found, costs, (names.get(row[0], row[0]), *row[1:]))
        return found
    finally:
        con.close()


def _add_run(
    found: dict[str, ScannedFile], costs: dict[tuple[str, str], CostTotal], row: tuple[Any, ...]
) -> None:
    (path, run_id, started, first_ts, agent, provider, model, status, error, turns, iterations, calls,
     input_tokens, output_tokens, leases, lease_ids, tools, call_models, parks, unsupported, answer, _first) = row  # fmt: skip
    scanned = found.get(path)
    if scanned is None:
        return
    models = sorted({m for m in [model, *(call_models or [])] if m})
    scanned.runs.append(
        ScannedRun(
            file=path,
            run_id=run_id,
            started=started or first_ts,
            has_start=started is not None,
            agent_name=agent,
            provider=provider,
            model=model,
            status=status or "running",
            error=error,
            turns=int(turns),
            iterations=int(iterations),
            llm_calls=int(calls),
            input_tokens=int(input_tokens),
            output_tokens=int(output_tokens),
            cost=costs.get((path, run_id), CostTotal()),
            leases=int(leases),
            lease_ids=sorted(lease_ids or []),
            tools=sorted(tools or []),
            models=models,
            parks=int(parks or 0),
            unsupported=int(unsupported or 0),
            answer=answer,
        )
    )


def scan_files(files: Sequence[str], *, threads: int | None = None) -> dict[str, ScannedFile]:
    """Scan trace files (all of them in one parallel read); each file's runs, lines and unreadable lines.

    Args:
        files: Paths of files whose first line is an fpdebug trace header.
        threads: DuckDB's worker threads (``None``: one per core).

    Returns:
        Path → what the scan found. A file DuckDB refused carries :attr:`ScannedFile.error`.
    """
    if not files:
        return {}
    import duckdb

    try:
        found = _query(files, threads)
    except duckdb.Error:
        found = {}
        for path in files:  # one refused file must not empty the table: find it
            try:
                found.update(_query([path], threads))
            except duckdb.Error as exc:
                found[path] = ScannedFile(path, error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    return found

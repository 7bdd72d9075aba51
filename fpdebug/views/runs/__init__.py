"""The runs browser's headless part: one row per run over folders of traces, read in place by DuckDB.

:mod:`~fpdebug.views.runs.files` tells what each file is without blocking,
:mod:`~fpdebug.views.runs.scan` reads the traces with DuckDB's parallel JSON reader,
:mod:`~fpdebug.views.runs.cache` keeps each trace's rows keyed by its size and mtime, and
:mod:`~fpdebug.views.runs.table` builds, filters and sorts the table (``fpdebug runs`` prints it).
"""

from __future__ import annotations

from fpdebug.views.runs.files import FileEntry
from fpdebug.views.runs.table import (
    FILTER_FIELDS,
    SORT_COLUMNS,
    TABLE_VERSION,
    RunRow,
    RunsTable,
    build_table,
    parse_filters,
)

__all__ = [
    "FILTER_FIELDS",
    "SORT_COLUMNS",
    "TABLE_VERSION",
    "FileEntry",
    "RunRow",
    "RunsTable",
    "build_table",
    "parse_filters",
]

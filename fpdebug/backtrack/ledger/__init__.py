"""The context ledger (docs/backtracking.md §9.10): which context is offered, what it costs, and what earns its place.

:mod:`~fpdebug.backtrack.ledger.meter` reads one trace into per-run offers and uses;
:mod:`~fpdebug.backtrack.ledger.book` keeps the books across runs (rows worst first, outcomes,
JSON import and export) and hands the engine's gate (:mod:`fpdebug.engine.ledger_gate`) a plain
snapshot of its rows.
"""

from __future__ import annotations

from fpdebug.backtrack.ledger.book import (
    LEDGER_VERSION,
    Ledger,
    LedgerRow,
    SkippedFile,
    build_ledger,
    dumps,
    trace_files,
)
from fpdebug.backtrack.ledger.meter import PieceMeter, RefusedRun, RunMeter, approx_tokens, meter_trace

__all__ = [
    "LEDGER_VERSION",
    "Ledger",
    "LedgerRow",
    "PieceMeter",
    "RefusedRun",
    "RunMeter",
    "SkippedFile",
    "approx_tokens",
    "build_ledger",
    "dumps",
    "meter_trace",
    "trace_files",
]

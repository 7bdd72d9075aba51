"""The context ledger's books across runs (docs/backtracking.md §9.10): rows, outcomes, JSON, the gate's snapshot."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from fpdebug.backtrack.ledger.meter import PieceKey, RefusedRun, RunMeter, meter_trace
from fpdebug.errors import FpdebugError
from fpdebug.trace.cost import format_dollars

__all__ = ["LEDGER_VERSION", "Ledger", "LedgerRow", "SkippedFile", "build_ledger", "trace_files"]

LEDGER_VERSION = 1
"""The version of the exported JSON; an import of any other version is ignored with a warning."""

_KINDS = ("injection", "skill", "tool")


@dataclass(slots=True)
class LedgerRow:
    """One piece's books: offers, tokens, uses and how, runs seen, outcomes, dollars."""

    kind: str
    id: str
    offered: int = 0
    approx_tokens_spent: int = 0
    used: int = 0
    used_via: dict[str, int] = field(default_factory=dict)
    runs_seen: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    dollars: Decimal = Decimal(0)
    """Dollars of the priced offers (approximate tokens × the call's input price)."""
    priced: int = 0
    unpriced: dict[str, int] = field(default_factory=dict)
    """Offers without a price, by reason (``no price: scripted``, ``unknown price``)."""

    @property
    def earn_rate(self) -> float:
        """``used / offered``; 0 when never offered."""
        return self.used / self.offered if self.offered else 0.0

    def cost_text(self) -> str:
        """``$0.0012``; a reason when no offer had a price; both when only some had."""
        if not self.unpriced:
            return format_dollars(self.dollars) if self.priced else "no offers"
        reasons = ", ".join(sorted(self.unpriced))
        return reasons if not self.priced else f"{format_dollars(self.dollars)} + {reasons}"

    def as_json(self) -> dict[str, object]:
        """The row as exported (``earn_rate`` and ``usd`` are derived, recomputed on import)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "offered": self.offered,
            "approx_tokens_spent": self.approx_tokens_spent,
            "used": self.used,
            "used_via": dict(sorted(self.used_via.items())),
            "runs_seen": self.runs_seen,
            "outcomes": dict(sorted(self.outcomes.items())),
            "earn_rate": round(self.earn_rate, 6),
            "usd": float(self.dollars) if self.priced and not self.unpriced else None,
            "priced_offers": self.priced,
            "dollars": str(self.dollars),
            "unpriced_offers": dict(sorted(self.unpriced.items())),
            "cost": self.cost_text(),
        }


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file the ledger could not read, and why (it goes on with the others)."""

    path: str
    reason: str


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _counts(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): _count(n) for key, n in value.items() if _count(n)}


class Ledger:
    """Books kept across runs: :meth:`record_run`, :meth:`record_outcome`, :meth:`rows`, JSON in and out."""

    def __init__(self) -> None:
        self._rows: dict[PieceKey, LedgerRow] = {}
        self._runs: dict[str, frozenset[PieceKey]] = {}
        self._last_run: str | None = None
        self.refused: list[RefusedRun] = []
        """Runs refused (not metered), each with its reason."""
        self.skipped: list[SkippedFile] = []
        """Files not read, each with its reason."""
        self.warnings: list[str] = []
        """What an import or an outcome file could not use."""
        self.runs_metered = 0
        """Runs recorded (imports add theirs)."""

    def _row(self, key: PieceKey) -> LedgerRow:
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = LedgerRow(kind=key[0], id=key[1])
        return row

    def record_run(self, meter: RunMeter) -> str | None:
        """Add one metered run; return its ref, or ``None`` (refused) when it has no call.

        A use of a piece the run never offered is not counted (the earn rate stays ``used /
        offered``).
        """
        if meter.calls == 0 or not meter.offers:
            self.refused.append(
                RefusedRun(meter.trace, meter.run_id, "no llm_call: nothing was offered to meter")
            )
            return None
        for key, piece in meter.offers.items():
            row = self._row(key)
            row.offered += piece.offered
            row.approx_tokens_spent += piece.tokens
            row.runs_seen += 1
            row.dollars += piece.dollars
            row.priced += piece.priced
            for reason, n in piece.unpriced.items():
                row.unpriced[reason] = row.unpriced.get(reason, 0) + n
            via = meter.uses.get(key)
            if via is not None:
                row.used += 1
                row.used_via[via] = row.used_via.get(via, 0) + 1
        offered = frozenset(meter.offers)
        # The run id alone names the run too (the latest run wins when ids repeat across files).
        self._runs[meter.ref] = offered
        self._runs[meter.run_id] = offered
        self._last_run = meter.ref
        self.runs_metered += 1
        return meter.ref

    def record_outcome(self, label: str, run_ref: str | None = None) -> bool:
        """Credit ``label`` to every piece OFFERED in a run (the last recorded one by default).

        Args:
            label: The outcome (``resolved``, ``escalated``…).
            run_ref: A run id, or ``<trace>#<run id>``.

        Returns:
            False when the ref is unknown (or no run was recorded); nothing is credited then.
        """
        ref = run_ref if run_ref is not None else self._last_run
        offered = self._runs.get(ref) if ref is not None else None
        if offered is None:
            return False
        for key in offered:
            row = self._rows[key]
            row.outcomes[label] = row.outcomes.get(label, 0) + 1
        return True

    def rows(self) -> list[LedgerRow]:
        """Every row, worst first: lowest earn rate, then most tokens spent, most offered, then kind and id."""
        return sorted(
            self._rows.values(), key=lambda r: (r.earn_rate, -r.approx_tokens_spent, -r.offered, r.kind, r.id)
        )

    def row(self, kind: str, piece: str) -> LedgerRow | None:
        """The row of ``(kind, piece)``, or ``None``."""
        return self._rows.get((kind, piece))

    def snapshot(self) -> list[dict[str, object]]:
        """The rows as plain data for the engine's gate (``Agent.ledger_gate(ledger.snapshot())``)."""
        return [
            {"kind": r.kind, "id": r.id, "offered": r.offered, "earn_rate": r.earn_rate} for r in self.rows()
        ]

    def export_json(self) -> dict[str, object]:
        """The ledger as JSON data, version 1 (rows worst first)."""
        return {
            "version": LEDGER_VERSION,
            "runs_metered": self.runs_metered,
            "rows": [row.as_json() for row in self.rows()],
        }

    def import_json(self, data: object, *, source: str = "the import") -> bool:
        """Add an exported ledger's counts to these books.

        Returns:
            False (with a warning in :attr:`warnings`) when ``data`` is not a version-1 ledger.
        """
        version = data.get("version") if isinstance(data, Mapping) else None
        if (
            not isinstance(data, Mapping)
            or version != LEDGER_VERSION
            or not isinstance(data.get("rows"), list)
        ):
            self.warnings.append(
                f"{source}: not a version-{LEDGER_VERSION} ledger (version {version!r}); ignored"
            )
            return False
        for item in data["rows"]:
            if (
                not isinstance(item, Mapping)
                or item.get("kind") not in _KINDS
                or not isinstance(item.get("id"), str)
            ):
                self.warnings.append(f"{source}: a row without a known kind and a string id was ignored")
                continue
            self._add_row(item)
        self.runs_metered += _count(data.get("runs_metered"))
        return True

    def _add_row(self, item: Mapping[str, object]) -> None:
        row = self._row((str(item["kind"]), str(item["id"])))
        row.offered += _count(item.get("offered"))
        row.approx_tokens_spent += _count(item.get("approx_tokens_spent"))
        row.used += _count(item.get("used"))
        row.runs_seen += _count(item.get("runs_seen"))
        row.priced += _count(item.get("priced_offers"))
        for target, counts in (
            (row.used_via, item.get("used_via")),
            (row.outcomes, item.get("outcomes")),
            (row.unpriced, item.get("unpriced_offers")),
        ):
            for label, n in _counts(counts).items():
                target[label] = target.get(label, 0) + n
        try:
            row.dollars += Decimal(str(item.get("dollars") or 0))
        except ArithmeticError:
            self.warnings.append(f"row {row.kind}:{row.id}: unreadable dollars ignored")

    def add_trace(self, path: str) -> list[str]:
        """Meter one trace file into the books; an unreadable file is recorded in :attr:`skipped`.

        Returns:
            The refs of the runs recorded.
        """
        try:
            metered, refused = meter_trace(path)
        except FpdebugError as exc:
            self.skipped.append(SkippedFile(path, str(exc)))
            return []
        except (OSError, ValueError) as exc:  # a file that vanished or is not text
            self.skipped.append(SkippedFile(path, f"{type(exc).__name__}: {exc}"))
            return []
        if not metered and not refused:
            self.skipped.append(
                SkippedFile(path, "no run recorded (an empty trace, or one whose writer just started)")
            )
            return []
        self.refused.extend(refused)
        return [ref for ref in map(self.record_run, metered) if ref is not None]


def trace_files(paths: Iterable[str]) -> tuple[list[str], list[SkippedFile]]:
    """The files to read: each path named, and every visible entry of each folder named (sorted).

    Folders are not searched recursively (a sub-folder is reported); a FIFO or a device is handed on
    so the trace reader refuses it, without waiting, with its own reason. Backtrack sidecars
    (``*.backtrack.jsonl``) are left out without a word: they belong to a trace.
    """
    files: list[str] = []
    skipped: list[SkippedFile] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.name.startswith(".") or child.name.endswith(".backtrack.jsonl"):
                    continue
                if child.is_dir():
                    skipped.append(SkippedFile(str(child), "a folder: folders are not searched recursively"))
                else:
                    files.append(str(child))
        elif path.exists() or path.is_symlink():
            files.append(str(path))
        else:
            skipped.append(SkippedFile(name, "no such file or folder"))
    return files, skipped


def build_ledger(paths: Iterable[str], *, imports: Iterable[object] = ()) -> Ledger:
    """The ledger over every run of the given traces (files or folders); it never fails as a whole.

    Args:
        paths: Trace files and folders.
        imports: Exported ledgers (JSON data) whose counts are added first.
    """
    ledger = Ledger()
    for data in imports:
        ledger.import_json(data)
    files, missing = trace_files(paths)
    ledger.skipped.extend(missing)
    for path in files:
        ledger.add_trace(path)
    return ledger


def dumps(ledger: Ledger) -> str:
    """The export as a JSON text (ASCII: nothing from a trace can drive a terminal)."""
    return json.dumps(ledger.export_json(), indent=2, ensure_ascii=True)

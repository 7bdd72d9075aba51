"""The sidecar beside a trace: one backtrack's records, appended as they complete, and read back.

**The sidecar** is ``<trace path>.backtrack.jsonl`` beside the trace (a backtrack never opens the
trace for writing; ARCHITECTURE §2), or, for a trace in a read-only directory or tracked by git, a
file in ``$XDG_CACHE_HOME/fpdebug/sidecars`` (:mod:`~fpdebug.backtrack.sidecar_place`). It is append-only, created with mode ``0600``, one JSON object
per line, each line written by one ``write()``:

- ``{"record": "report", …}``: the report as it stands before any rerun (correlational);
- ``{"record": "baseline", …}``: the baseline probe;
- ``{"record": "verdict", …, "verdict": {kind, tier, label, action, flips, samples, claim}}``: one
  per probed suspect or missing piece, written as soon as it completes;
- ``{"record": "bisect", …, "verdict": {kind, tier, label, claim}}``: the culprit sets;
- ``{"record": "end", "status": "complete" | "cancelled" | "failed"}``.

Every record carries the backtrack's ``id`` and the explained call (``call_index``, ``call_line``,
``call_seq``), so several backtracks of one trace share the file. A cancelled or crashed backtrack
keeps every record that completed. :func:`load_sidecar` reads it back (tolerating a torn last line
and lines it cannot read) and replays the records onto the report, so the TUI pane can reopen saved
verdicts exactly as they were shown.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal, TypeAlias, TypedDict

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from fpdebug.backtrack.ablation import AblationVerdict, SuspectProbe
from fpdebug.backtrack.probe import ProbeStats
from fpdebug.backtrack.report import BacktrackReport, BisectSummary, probe_verdict_of
from fpdebug.backtrack.sidecar_place import SIDECAR_SUFFIX, sidecar_path_for
from fpdebug.errors import BacktrackError
from fpdebug.trace.redact import default_redactor

__all__ = [
    "SIDECAR_SUFFIX",
    "BaselineRecord",
    "BisectRecord",
    "BisectStamp",
    "EndRecord",
    "ReportRecord",
    "SavedBacktrack",
    "Sidecar",
    "SidecarRecord",
    "SidecarWriter",
    "VerdictRecord",
    "load_sidecar",
    "sidecar_path_for",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _CallKeys(TypedDict):
    """The explained call, as every record of one backtrack repeats it."""

    call_index: int
    call_line: int
    call_seq: int


# ----------------------------------------------------------------------------------------------
# Sidecar records


class _Record(_Frozen):
    id: str
    """The backtrack this record belongs to."""
    call_index: int
    """The explained call's index."""
    call_line: int
    """Its line."""
    call_seq: int
    """Its seq."""


class ReportRecord(_Record):
    """The report before any rerun."""

    record: Literal["report"] = "report"
    format: Literal["fpdebug.backtrack"] = "fpdebug.backtrack"
    """Always ``fpdebug.backtrack``."""
    created: datetime
    """When the backtrack started (UTC)."""
    trace: str | None = None
    """The trace path."""
    report: BacktrackReport
    """The report."""


class BaselineRecord(_Record):
    """The baseline probe."""

    record: Literal["baseline"] = "baseline"
    stats: ProbeStats
    """Its stats."""


class VerdictRecord(_Record):
    """One probe's verdict."""

    record: Literal["verdict"] = "verdict"
    source: str
    """The suspect's piece id."""
    action: Literal["ablating", "restoring"]
    """Removed or put back."""
    verdict: AblationVerdict
    """The verdict."""
    stats: ProbeStats
    """The probe's stats."""


class BisectStamp(_Frozen):
    """A bisection's outcome in the shape of a verdict (what a generic sidecar reader looks for)."""

    kind: Literal["confirmed", "not-reproducible", "inconclusive"]
    """The outcome."""
    tier: Literal["causal", "correlational"]
    """``causal`` exactly when confirmed."""
    label: str
    """``bisect: [injection 'x'] · [tool 'y']``."""
    claim: str
    """The reason."""


class BisectRecord(_Record):
    """A bisection's culprit sets."""

    record: Literal["bisect"] = "bisect"
    bisect: BisectSummary
    """The summary."""
    verdict: BisectStamp
    """The same outcome as a verdict."""


class EndRecord(_Record):
    """How the backtrack ended."""

    record: Literal["end"] = "end"
    status: Literal["complete", "cancelled", "failed"]
    """Finished, cancelled by its caller, or stopped by an error."""
    runs_used: int = 0
    """Reruns made."""
    error: str | None = None
    """The error, when it failed."""


SidecarRecord = Annotated[
    ReportRecord | BaselineRecord | VerdictRecord | BisectRecord | EndRecord, Field(discriminator="record")
]
"""Any sidecar line."""

_RECORD: TypeAdapter[SidecarRecord] = TypeAdapter(SidecarRecord)
_AnyRecord: TypeAlias = ReportRecord | BaselineRecord | VerdictRecord | BisectRecord | EndRecord


class SidecarWriter:
    """Appends one backtrack's records to the sidecar beside a trace (never the trace itself).

    The file is opened per record with ``O_APPEND`` (created ``0600``; never through a symbolic
    link), so a crash loses at most the record being written, and several backtracks may append to
    one file in turn.

    Args:
        trace: The trace path.
        report: The report before any rerun (written as the first record).
        path: The sidecar path (``<trace>.backtrack.jsonl`` by default).
        backtrack_id: The backtrack's id (random by default).

    Raises:
        BacktrackError: The sidecar path is the trace itself, a symbolic link, not a regular file,
            or cannot be written.
    """

    def __init__(
        self,
        trace: str | os.PathLike[str],
        report: BacktrackReport,
        *,
        path: str | os.PathLike[str] | None = None,
        backtrack_id: str | None = None,
    ) -> None:
        self.trace = Path(trace)
        """The trace (only its name is used)."""
        self.path = Path(path) if path is not None else sidecar_path_for(trace)
        """The sidecar file."""
        if path is None and not self.path.parent.is_dir():
            # The cache's sidecars directory, made on first use (private: the records hold prompts).
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise BacktrackError(f"cannot create {self.path.parent}: {exc.strerror or exc}") from exc
        if self.path.resolve() == self.trace.resolve():
            raise BacktrackError(f"refusing to write backtrack records into the trace itself ({self.trace})")
        self.id = backtrack_id or uuid.uuid4().hex[:12]
        """This backtrack's id in the file."""
        self._call = _CallKeys(
            call_index=report.call_index, call_line=report.call_line, call_seq=report.call_seq
        )
        self.append(
            ReportRecord(
                id=self.id, created=datetime.now(UTC), trace=str(self.trace), report=report, **self._call
            )
        )

    def append(self, record: _AnyRecord) -> None:
        """Append one record as one line, in one ``write()``.

        Raises:
            BacktrackError: The disk refused it.
        """
        data = _json_line(record.model_dump(mode="json", exclude_none=True))
        data = default_redactor().redact_line(data)  # rerun answers may echo secrets: same redactor as traces
        fd = _open_implicit_output(self.path)
        try:
            if _ends_torn(fd):
                # A crashed writer left half a line: start ours on a line of its own.
                data = b"\n" + data
            written = os.write(fd, data)
            if written != len(data):
                raise BacktrackError(f"short write to the backtrack sidecar {self.path}")
        except OSError as exc:
            raise BacktrackError(f"cannot write the backtrack sidecar {self.path}: {exc.strerror}") from exc
        finally:
            os.close(fd)

    def baseline(self, stats: ProbeStats) -> None:
        """Record the baseline probe."""
        self.append(BaselineRecord(id=self.id, stats=stats, **self._call))

    def verdict(self, probe: SuspectProbe) -> None:
        """Record one probe's verdict."""
        self.append(
            VerdictRecord(
                id=self.id,
                source=probe.suspect.source,
                action=probe.verdict.action,
                verdict=probe.verdict,
                stats=probe.stats,
                **self._call,
            )
        )

    def bisect(self, summary: BisectSummary) -> None:
        """Record a bisection."""
        sets = " · ".join("[" + ", ".join(group) + "]" for group in summary.culprits) or "no culprit set"
        stamp = BisectStamp(
            kind=summary.verdict, tier=summary.tier, label=f"bisect: {sets}", claim=summary.reason
        )
        self.append(BisectRecord(id=self.id, bisect=summary, verdict=stamp, **self._call))

    def end(
        self,
        status: Literal["complete", "cancelled", "failed"],
        *,
        runs_used: int = 0,
        error: str | None = None,
    ) -> None:
        """Record how the backtrack ended."""
        self.append(EndRecord(id=self.id, status=status, runs_used=runs_used, error=error, **self._call))


def _open_implicit_output(path: Path) -> int:
    """Open the sidecar for appending, refusing anything but a regular file that is not a link.

    The sidecar's name is predictable, so whoever can write the trace's directory could plant a
    link there: ``O_NOFOLLOW`` refuses it (a link to a file would be appended to, a dangling one
    would create its target). ``O_NONBLOCK`` keeps a planted FIFO from blocking the open. A new
    file is created ``0600`` by the open itself; an existing one keeps the mode its owner gave it
    (fpdebug never changes the mode of a file it did not create).

    Raises:
        BacktrackError: The path is a link or not a regular file, or cannot be opened.
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise BacktrackError(
                f"refusing the backtrack sidecar {path}: it is a symbolic link (remove it, or pass another path)"
            ) from None
        raise BacktrackError(f"cannot write the backtrack sidecar {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BacktrackError(f"refusing the backtrack sidecar {path}: not a regular file")
    return fd


def _json_line(data: object) -> bytes:
    """One JSON line; exact even for integers beyond 64 bits (a valid trace may hold them).

    orjson refuses such integers; the standard library writes them exactly, and the sidecar's reader
    (pydantic) reads them back exactly.
    """
    try:
        return orjson.dumps(data) + b"\n"
    except TypeError:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "replace") + b"\n"


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


# ----------------------------------------------------------------------------------------------
# Reading the sidecar back


class SavedBacktrack(_Frozen):
    """One backtrack reopened from the sidecar."""

    id: str
    """Its id."""
    created: datetime
    """When it started."""
    report: BacktrackReport
    """The report with every saved record applied."""
    status: Literal["complete", "cancelled", "failed", "unfinished"]
    """``unfinished`` when no end record was written (a crash, or still running)."""
    records: int
    """Records read for it."""


class Sidecar(_Frozen):
    """What a sidecar holds."""

    path: str
    """The file."""
    backtracks: list[SavedBacktrack] = Field(default_factory=list)
    """Backtracks in the order they started."""
    unreadable_lines: int = 0
    """Lines that were not valid records (or belonged to no report), skipped."""
    torn_tail: bool = False
    """The file ends in half a line (a writer stopped mid-record); it was skipped."""

    def latest(self, *, call_seq: int | None = None) -> SavedBacktrack | None:
        """The most recent backtrack (of one call, when ``call_seq`` is given)."""
        for saved in reversed(self.backtracks):
            if call_seq is None or saved.report.call_seq == call_seq:
                return saved
        return None


def load_sidecar(path: str | os.PathLike[str]) -> Sidecar:
    """Read a sidecar back: each backtrack's report with its baseline, verdicts and bisection applied.

    Tolerant: a torn last line, lines that are not JSON, unknown records and records of a backtrack
    whose report line is missing are skipped and counted, never fatal.

    Args:
        path: The sidecar (``sidecar_path_for(trace)``).

    Returns:
        The backtracks it holds.

    Raises:
        BacktrackError: The file does not exist or cannot be read.
    """
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise BacktrackError(f"no backtrack sidecar at {file}") from None
    except OSError as exc:
        raise BacktrackError(f"cannot read the backtrack sidecar {file}: {exc.strerror}") from exc
    lines = data.split(b"\n")
    torn = bool(lines and lines[-1].strip())
    if lines:
        lines = lines[:-1]  # the part after the last newline: empty, or a torn record
    unreadable = 0
    order: list[str] = []
    reports: dict[str, tuple[datetime, BacktrackReport]] = {}
    status: dict[str, Literal["complete", "cancelled", "failed", "unfinished"]] = {}
    counts: dict[str, int] = {}
    for raw in lines:
        if not raw.strip():
            continue
        try:
            record = _RECORD.validate_json(raw)
        except ValidationError:
            unreadable += 1
            continue
        if isinstance(record, ReportRecord):
            order.append(record.id)
            reports[record.id] = (record.created, record.report.finished("running"))
            status[record.id], counts[record.id] = "unfinished", 1
            continue
        if record.id not in reports:
            unreadable += 1
            continue
        created, report = reports[record.id]
        counts[record.id] += 1
        reports[record.id] = (created, _apply(report, record))
        if isinstance(record, EndRecord):
            status[record.id] = record.status
    backtracks = []
    for backtrack_id in order:
        created, report = reports[backtrack_id]
        state = status[backtrack_id]
        report = report.finished("running" if state == "unfinished" else state)
        backtracks.append(
            SavedBacktrack(
                id=backtrack_id, created=created, report=report, status=state, records=counts[backtrack_id]
            )
        )
    return Sidecar(path=str(file), backtracks=backtracks, unreadable_lines=unreadable, torn_tail=torn)


def _apply(report: BacktrackReport, record: _AnyRecord) -> BacktrackReport:
    match record:
        case BaselineRecord():
            return report.with_baseline(record.stats)
        case VerdictRecord():
            verdict = probe_verdict_of(record.source, record.verdict, record.stats)
            return report.with_verdict(verdict, record.stats)
        case BisectRecord():
            return report.with_bisect(record.bisect)
        case EndRecord():
            return report.model_copy(update={"runs_used": max(report.runs_used, record.runs_used)})
    return report

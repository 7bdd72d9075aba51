"""Which files a runs table reads, and what each one is, told from its first bytes and never by blocking.

A folder is listed (not recursively; hidden files and backtrack sidecars are left out), each file is
looked at once: a FIFO, a device or a socket is reported and never opened for reading; a file that
cannot be opened says why; an empty file, a file whose first line is not an fpdebug ``trace_header``
(a foreign recording: OTLP, agentfootprint) and a header-only trace each get their own words. Only
files whose header parsed go on to the scan.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

__all__ = ["FileEntry", "TraceFile", "classify", "list_files"]

_HEAD = 64 * 1024

IMPORT_HINT = "import with `fpdebug import`"
"""What a foreign recording needs before it shows as a run."""


@dataclass(frozen=True, slots=True)
class TraceFile:
    """A file whose first line is an fpdebug ``trace_header``: the scan reads it."""

    path: str
    """The path as listed."""
    size: int
    """Its size when looked at."""
    mtime_ns: int
    """Its modification time when looked at."""
    source: str
    """``native``, ``agentfootprint`` or ``otlp`` (an imported trace's header names its source)."""
    created: str | None
    """The header's creation time."""
    torn_tail: bool = False
    """Its last line has no newline and does not parse: a record still being written (the scan
    counts it as unreadable; the table says what it is instead)."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file or a path that yields no run, and what it is (the table lists it below the runs)."""

    path: str
    """The path as given or listed."""
    what: str
    """``foreign``, ``empty``, ``no-run``, ``not-a-trace``, ``not-regular``, ``unreadable``, ``missing``,
    ``folder``, ``broken``."""
    reason: str
    """One sentence for a person."""

    def as_json(self) -> dict[str, str]:
        """``{"path", "what", "reason"}``."""
        return {"path": self.path, "what": self.what, "reason": self.reason}


def list_files(paths: Iterable[str]) -> tuple[list[str], list[FileEntry]]:
    """Each file named, and the visible entries of each folder named (sorted); what was not found.

    A sub-folder is reported (folders are not searched recursively); backtrack sidecars
    (``*.backtrack.jsonl``) and hidden files are left out without a word: they belong to a trace.
    """
    files: list[str] = []
    entries: list[FileEntry] = []
    for name in paths:
        path = Path(name)
        try:
            is_dir = path.is_dir()
        except OSError as exc:
            entries.append(FileEntry(name, "unreadable", f"cannot look at it: {exc.strerror or exc}"))
            continue
        if is_dir:
            try:
                children = sorted(path.iterdir())
            except OSError as exc:
                entries.append(
                    FileEntry(name, "unreadable", f"cannot list the folder: {exc.strerror or exc}")
                )
                continue
            for child in children:
                if child.name.startswith(".") or child.name.endswith(".backtrack.jsonl"):
                    continue
                if child.is_dir():
                    entries.append(
                        FileEntry(str(child), "folder", "a folder: folders are not searched recursively")
                    )
                else:
                    files.append(str(child))
        elif path.exists() or path.is_symlink():
            files.append(name)
        else:
            entries.append(FileEntry(name, "missing", "no such file or folder"))
    return files, entries


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_head(path: str) -> tuple[bytes, os.stat_result, bool]:
    """The first bytes of a regular file, opened without blocking (a FIFO swapped in is refused),
    and whether its last line is torn (no newline, and not a whole JSON record)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(f"{_kind_of(info.st_mode)}: not opened")
        head = os.read(fd, _HEAD)
        tail = os.pread(fd, _HEAD, max(info.st_size - _HEAD, 0)) if info.st_size > len(head) else head
        return head, info, _torn(tail)
    finally:
        os.close(fd)


def _torn(tail: bytes) -> bool:
    if not tail or tail.endswith(b"\n"):
        return False
    _, newline, last = tail.rpartition(b"\n")
    if not newline:
        return True  # one line longer than the window, without its newline: still being written
    try:
        orjson.loads(last)
    except orjson.JSONDecodeError:
        return True
    return False


def _foreign(head: bytes) -> str | None:
    """The foreign format a file's first bytes suggest (a guess; ``fpdebug import`` decides)."""
    start = head.lstrip()[:1]
    if start in (b"{", b"["):
        if b'"resourceSpans"' in head or b'"resourceLogs"' in head:
            return "OTLP"
        if b"agentfootprint" in head:
            return "agentfootprint"
        return None
    if b"\0" in head:
        return "binary (an OTLP protobuf?)"
    return None


def classify(path: str) -> TraceFile | FileEntry:
    """What ``path`` is: a trace to scan, or an entry that says why it yields no run."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return FileEntry(path, "unreadable", f"cannot look at it: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        return FileEntry(path, "not-regular", f"{_kind_of(info.st_mode)}: not opened")
    try:
        head, info, torn = _read_head(path)
    except IsADirectoryError as exc:
        return FileEntry(path, "not-regular", str(exc))
    except OSError as exc:
        return FileEntry(path, "unreadable", f"cannot open it: {exc.strerror or exc}")
    if not head.strip():
        return FileEntry(path, "empty", "an empty file (a trace whose writer has not started?)")
    first, newline, _ = head.partition(b"\n")
    if b'"trace_header"' in first and b'"fpdebug.trace"' in first:
        try:
            header = orjson.loads(first)
        except orjson.JSONDecodeError:
            if not newline:
                return FileEntry(path, "no-run", "its header is still being written: no run recorded yet")
            return FileEntry(path, "broken", "its first line (the trace header) does not parse")
        if not isinstance(header, dict):
            return FileEntry(path, "broken", "its first line (the trace header) is not an object")
        source = header.get("source")
        fmt = source.get("format") if isinstance(source, dict) else None
        origin = (
            "native"
            if fmt is None
            else ("agentfootprint" if str(fmt).startswith("agentfootprint") else "otlp")
        )
        created = header.get("created")
        return TraceFile(
            path, info.st_size, info.st_mtime_ns, origin, str(created) if created else None, torn
        )
    foreign = _foreign(head)
    if foreign is not None:
        return FileEntry(path, "foreign", f"foreign: {foreign}; {IMPORT_HINT}")
    return FileEntry(path, "not-a-trace", "not an fpdebug trace (its first line is no trace_header)")

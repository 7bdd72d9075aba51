"""``fpdebug migrate``: rewrite a trace in another schema version, record for record.

Version 1 → 2 rewrites each ``llm_call`` by reference (:mod:`fpdebug.trace.compact`); version 2 → 1
writes each one with its request in full again. Every other line is copied byte for byte, bad lines
included, so the migrated trace has the same lines, the same line numbers and the same problems, and
reads back as the same records (docs/trace-contract.md §8.7).

The new file is written beside the target under a temporary name, synced, then renamed over it: an
interrupted migration leaves no half-written trace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fpdebug.errors import TraceError
from fpdebug.trace.compact import LLM_CALL_PREFIX, RequestEncoder
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import classify_line
from fpdebug.trace.schema import SCHEMA_VERSION, LlmCallEvent
from fpdebug.trace.writer import dump_record

__all__ = ["Migration", "migrate"]

_RUN_END_PREFIX = b'{"kind":"run_end",'


@dataclass(frozen=True, slots=True)
class Migration:
    """What :func:`migrate` did."""

    from_version: int
    """The source's schema version."""
    to_version: int
    """The version written."""
    lines: int
    """Lines written, the header included."""
    llm_calls: int
    """``llm_call`` records rewritten."""
    source_bytes: int
    """The source's size."""
    target_bytes: int
    """The new file's size."""
    dropped_tail: int
    """Bytes of a torn tail left out (``drop_torn_tail``), else 0."""


def migrate(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    to: int = SCHEMA_VERSION,
    overwrite: bool = False,
    drop_torn_tail: bool = False,
) -> Migration:
    """Write ``source`` to ``target`` in schema version ``to``.

    Args:
        source: The trace to read.
        target: Where the migrated trace goes (a new file, mode ``0600``).
        to: ``2`` (the default) or ``1``.
        overwrite: Replace an existing ``target``.
        drop_torn_tail: Leave out an unfinished last record instead of refusing the file.

    Raises:
        TraceFormatError: The source is not a trace.
        TraceVersionError: The source is newer than this fpdebug reads.
        TraceError: The source already has version ``to``, ends with a torn tail, is the target, or
            the target exists or cannot be written.
        ValueError: ``to`` is not a version this fpdebug writes.
    """
    if to not in (1, SCHEMA_VERSION):
        raise ValueError(f"--to must be 1 or {SCHEMA_VERSION}, not {to!r}")
    src, dst = Path(source), Path(target)
    with TraceReader(src) as reader:
        version = reader.header.schema_version
        if version == to:
            raise TraceError(f"{src}: already schema_version {to}; nothing to migrate")
        _check_target(src, dst, overwrite)
        torn = reader.torn_tail()
        if torn is not None and not drop_torn_tail:
            raise TraceError(
                f"{src}: ends with a torn tail ({torn.length} byte(s) after the last newline: a record a "
                "run is still writing, or one a crash cut off); nothing was written. If no run writes "
                "this trace any more, pass --drop-torn-tail to leave the unfinished record out"
            )
        header = reader.header.model_copy(update={"schema_version": to})
        partial = dst.with_name(f".{dst.name}.{os.getpid()}.partial")
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise TraceError(f"{dst}: cannot write: {error.strerror or error}") from None
        try:
            with os.fdopen(fd, "wb", buffering=1 << 20) as out:
                out.write(dump_record(header))
                lines, calls = 1, 0
                convert = _Converter(reader, to)
                for line, offset, stored in reader.iter_raw(1, stored=True):
                    data, converted = convert(line, offset, stored)
                    out.write(data)
                    out.write(b"\n")
                    lines += 1
                    calls += converted
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, dst)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise TraceError(f"{dst}: cannot write: {error.strerror or error}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return Migration(
            version, to, lines, calls, reader.size, dst.stat().st_size, torn.length if torn else 0
        )


def _check_target(src: Path, dst: Path, overwrite: bool) -> None:
    if dst.exists():
        if dst.is_dir():
            raise TraceError(f"{dst}: is a directory; name the file to write")
        if src.resolve() == dst.resolve() or os.path.samefile(src, dst):
            raise TraceError(f"{dst}: is the source trace; write the migrated trace to another file")
        if not overwrite:
            raise TraceError(f"{dst}: already exists; pass --force to replace it")
    elif not dst.parent.is_dir():
        raise TraceError(f"{dst}: its directory does not exist")


class _Converter:
    """One stored line → the line in the target version, and whether it was an ``llm_call`` rewritten."""

    def __init__(self, reader: TraceReader, to: int) -> None:
        self.reader = reader
        self.encoder = RequestEncoder() if to >= 2 else None

    def __call__(self, line: int, offset: int, stored: bytes) -> tuple[bytes, bool]:
        if not stored.startswith(LLM_CALL_PREFIX):
            if self.encoder is not None and stored.startswith(_RUN_END_PREFIX):
                run_id = self.reader.peek(line).run_id
                if run_id is not None:
                    self.encoder.forget_run(run_id)
            return stored, False
        if self.encoder is None:  # to version 1: the request in full, as the version 1 writer wrote it
            record = self.reader.classify(line, offset, stored)
            if isinstance(record, LlmCallEvent):
                return dump_record(record)[:-1], True
            return stored, False
        record = classify_line(line, offset, stored)
        # Only a record whose seq is its line is referred to: the reader finds it by its seq.
        if isinstance(record, LlmCallEvent) and record.seq == line:
            encoded = self.encoder.encode(record)
            if encoded is not None:
                return encoded[:-1], True
        return stored, False

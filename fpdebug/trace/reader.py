"""Random access to a trace: open without reading it, index lines, validate only what is read.

**Addressing.** Records are addressed by *line number*: line 0 is the header, line ``i`` the
``i``-th event line. ``seq`` is data, not an address. In a healthy single-writer trace line ``i``
holds ``seq == i``; a corrupt line keeps its line number (it becomes an :class:`InvalidRecord`)
so nothing after it shifts, and :meth:`TraceReader.problems` reports any place where seq and line
disagree.

**Following.** :meth:`TraceReader.refresh` indexes the complete lines appended since the last
call. Bytes after the last newline are ignored until their newline arrives; when the writer is
gone they are a *torn tail* (:meth:`TraceReader.torn_tail`, and a problem in
:meth:`TraceReader.problems`).

**Identity.** A followed file is the file that was opened: its device and inode, and the bytes of
its header line. Each refresh compares ``stat(path)`` with ``fstat(fd)`` and re-reads the header
and the last bytes already indexed; a replacement (``mv other X``), a copy-over (``cp other X``:
same inode, new bytes) or a truncation raises :class:`~fpdebug.errors.TraceReplacedError` and
nothing of the new content is indexed. Not detected: a copy-over by a file at least as long whose
bytes agree with the old ones at both places re-read.

**Threads.** One thread may call :meth:`~TraceReader.refresh` (the TUI's tail worker) while
others read (``reader[i]``, :meth:`~TraceReader.peek`, :meth:`~TraceReader.raw`,
:meth:`~TraceReader.iter_records`): the line index only grows and its entries never change, reads
use positional ``pread``, and the record cache is guarded by a lock. Concurrent ``refresh`` calls
are serialised. Closing a reader that another thread still uses makes that thread's next read
raise :class:`~fpdebug.errors.TraceError`.
"""

from __future__ import annotations

import os
import stat
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from fpdebug.errors import TraceError, TraceFormatError, TraceReplacedError
from fpdebug.trace.compact import LLM_CALL_PREFIX, RebuildError, RequestResolver
from fpdebug.trace.index import DEFAULT_CHUNK_SIZE, LineIndex
from fpdebug.trace.records import (
    HEADER_LIMIT,
    PEEK_PREFIX,
    PREVIEW_BYTES,
    InvalidRecord,
    OpaqueRecord,
    Peek,
    Problem,
    ProblemCode,
    Record,
    TornTail,
    classify_line,
    line_form_problems,
    parse_header,
    peek_line,
    read_back,
    read_first_line,
)
from fpdebug.trace.schema import TraceEvent, TraceHeader

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_LINE_BYTES_ENV_VAR",
    "ProblemScanner",
    "TraceReader",
    "line_form_problems",
    "max_line_bytes_from_env",
    "record_problems",
]

DEFAULT_CACHE_SIZE = 4096
"""Parsed records kept by a reader (least recently used dropped first)."""

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""A line longer than this (newline excluded) is reported and skipped, never read into memory."""

MAX_LINE_BYTES_ENV_VAR = "FPDEBUG_MAX_LINE_BYTES"
"""The environment variable that overrides :data:`DEFAULT_MAX_LINE_BYTES` (a number of bytes)."""

_BATCH_BYTES = 4 * 1024 * 1024  # iter_records reads consecutive lines in blocks of about this size
_BATCH_LINES = 4096
_END_MARK_BYTES = 256  # re-read on each refresh to tell an append from a copy-over


class TraceReader:
    """Opens a trace once; ``reader[i]`` costs one ``pread`` and one validation (then it is cached).

    Args:
        path: The trace file.
        index: Index the file now (the default). Pass ``False`` to index later with
            :meth:`refresh` (e.g. in a background worker with progress).
        cache_size: How many parsed records to keep.
        wait_for_header: Accept an empty file or an unfinished line 0 (a trace whose writer has
            just created it); the header is then checked by the :meth:`refresh` that sees it.
        max_line_bytes: A longer line is an :class:`InvalidRecord` with ``too_long`` (problem
            ``line-too-long``) whose bytes are never read: ``raw()`` and ``iter_raw()`` give
            ``b""`` for it. Default: ``FPDEBUG_MAX_LINE_BYTES``, else 64 MiB.

    Raises:
        TraceError: The path does not exist, is a directory or cannot be read.
        TraceFormatError: The file is empty, or line 0 is not an fpdebug trace header.
        TraceVersionError: The header's ``schema_version`` is newer than this fpdebug reads.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        index: bool = True,
        cache_size: int = DEFAULT_CACHE_SIZE,
        wait_for_header: bool = False,
        max_line_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.max_line_bytes = max_line_bytes if max_line_bytes is not None else max_line_bytes_from_env()
        """Lines longer than this are reported and skipped unread."""
        """The trace file."""
        self.index = LineIndex()
        """The line index (read it; only :meth:`refresh` extends it)."""
        self.cache_size = max(cache_size, 0)
        """How many parsed records :meth:`__getitem__` keeps."""
        self._header: TraceHeader | None = None
        self._resolver: RequestResolver | None = None  # schema_version 2: rebuilds llm_call requests
        self._cache: OrderedDict[int, Record] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._size = 0
        self._header_bytes: bytes | None = None
        self._end_mark: tuple[int, bytes | None] = (0, None)
        self._fd: int | None = _open_for_reading(self.path)
        try:
            opened = os.fstat(self._fd)
            self._identity = (opened.st_dev, opened.st_ino)
            self._size = opened.st_size
            if not self._check_header(self._size) and not wait_for_header:
                self._raise_no_header(self._size)
            if index:
                self.refresh()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------------------------------
    # The header and the index

    @property
    def header(self) -> TraceHeader:
        """The validated header (line 0).

        Raises:
            TraceFormatError: It has not arrived yet (only with ``wait_for_header``).
        """
        if self._header is None:
            raise TraceFormatError(f"{self.path}: the trace header has not been written yet")
        return self._header

    @property
    def has_header(self) -> bool:
        """Whether line 0 has arrived and was validated."""
        return self._header is not None

    @property
    def size(self) -> int:
        """The file size seen by the last :meth:`refresh`."""
        return self._size

    def refresh(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> int:
        """Index the complete lines appended since the last call.

        Safe to call from a worker thread while other threads read. Lines become visible chunk
        by chunk, so a first refresh of a large file can be shown while it runs.

        Args:
            progress: Called with ``(bytes scanned, bytes to scan)`` after each chunk.
            cancelled: Checked after each chunk; a true result stops the scan (resumable).
            chunk_size: Bytes per chunk.

        Returns:
            How many lines were added (0 while the header has not arrived).

        Raises:
            TraceReplacedError: The path now names another file, or the file was copied over or
                truncated (it shrank, or its header changed); nothing new was indexed.
            TraceError: The reader is closed.
            TraceFormatError: Line 0 arrived and is not a valid header.
        """
        with self._refresh_lock:
            fd = self._require_fd()
            size = _fstat_size(fd, self.path)
            self._check_identity(fd)
            if size < self.index.indexed_size:
                raise TraceReplacedError(
                    f"{self.path}: the file was replaced: it shrank from {self.index.indexed_size} to {size} "
                    "bytes while it was being read (truncated or re-created); open it again"
                )
            self._check_same_content(fd)
            self._size = size
            if self._header is None and not self._check_header(size):
                if size >= HEADER_LIMIT:
                    self._raise_no_header(size)
                return 0
            try:
                return self.index.update(
                    fd, size, chunk_size=chunk_size, progress=progress, cancelled=cancelled
                )
            finally:
                self._mark_end()

    def adopt_index(self, starts: array[int]) -> int:
        """Take over line starts saved earlier (:mod:`~fpdebug.trace.index_cache`) instead of scanning for them.

        They are used only if what is indexed already is a prefix of them and they end within the
        file; the next :meth:`refresh` resumes the scan at their end. Returns how many lines were
        added (0: nothing changed).
        """
        with self._refresh_lock:
            fd = self._require_fd()
            size = _fstat_size(fd, self.path)
            if self._header is None or starts[-1] > size:
                return 0
            added = self.index.adopt(starts)
            if added:
                self._size = size
                self._mark_end()
            return added

    def torn_tail(self) -> TornTail | None:
        """The bytes after the last indexed line, if any (call :meth:`refresh` first to be exact).

        While a writer is appending, a short tail is a record in flight; once the writer is gone
        it is a record torn by a crash.
        """
        fd = self._require_fd()
        size = _fstat_size(fd, self.path)
        indexed = self.index.indexed_size
        if size <= indexed:
            return None
        return TornTail(len(self.index), indexed, size - indexed)

    def torn_bytes(self, torn: TornTail, limit: int = PREVIEW_BYTES) -> bytes:
        """The first ``limit`` bytes of a torn tail (what there is of the record so far)."""
        fd = self._require_fd()
        try:
            return os.pread(fd, min(torn.length, limit), torn.offset)
        except OSError as error:
            raise TraceError(f"{self.path}: cannot read: {error.strerror or error}") from error

    # ------------------------------------------------------------------------------------------
    # Random access

    def __len__(self) -> int:
        """How many complete lines are indexed, the header (line 0) included."""
        return len(self.index)

    def __getitem__(self, line: int) -> Record:
        """The record on ``line`` (0 is the header), validated on first access and then cached.

        Returns:
            The :class:`~fpdebug.trace.schema.TraceHeader` for line 0; otherwise an event, an
            :class:`OpaqueRecord` (unknown kind) or an :class:`InvalidRecord` (bad line). Bad
            lines never raise.

        Raises:
            IndexError: The line is not indexed.
            TraceError: The file cannot be read any more.
        """
        line = self._normalise(line)
        if line == 0:
            return self.header
        with self._cache_lock:
            cached = self._cache.get(line)
            if cached is not None:
                self._cache.move_to_end(line)
                return cached
        start, end = self.index.span(line)
        record: Record
        if end - start - 1 > self.max_line_bytes:
            record = self._too_long(line, start, end)
        else:
            record = self.classify(line, start, self._pread(start, end - start).removesuffix(b"\n"))
        if self.cache_size:
            with self._cache_lock:
                self._cache[line] = record
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return record

    def record(self, line: int) -> Record:
        """Same as ``reader[line]`` (the accessor :class:`~fpdebug.trace.model.RunModel` uses)."""
        return self[line]

    def raw(self, line: int, *, stored: bool = False) -> bytes:
        """The bytes of a line, without its newline (one ``pread``; nothing validated).

        Args:
            line: The line.
            stored: The bytes as stored. By default a schema_version 2 ``llm_call`` comes as the
                version 1 line it stands for, its request rebuilt (:meth:`rebuild`).

        Raises:
            IndexError: The line is not indexed.
        """
        start, end = self.index.span(self._normalise(line))
        if end - start - 1 > self.max_line_bytes:
            return b""  # over the maximum line size: never read (``reader[line]`` says so)
        raw = self._pread(start, end - start).removesuffix(b"\n")
        return raw if stored else self.rebuild(raw)

    def rebuild(self, raw: bytes) -> bytes:
        """The version 1 form of a stored line: a schema_version 2 ``llm_call`` with its request
        rebuilt from the records it references (docs/trace-contract.md §8.7); any other line as it is,
        also one whose references cannot be followed (``reader[line]`` says why)."""
        if self._resolver is None or not raw.startswith(LLM_CALL_PREFIX):
            return raw
        try:
            return self._resolver.rebuild(raw)
        except RebuildError:
            return raw

    def offset(self, line: int) -> int:
        """The byte offset where a line starts."""
        return self.index.offset(self._normalise(line))

    def peek(self, line: int) -> Peek:
        """A line's envelope (kind, seq, run_id, turn, iteration) without building a model.

        Reads at most :data:`~fpdebug.trace.records.PEEK_PREFIX` bytes for a line the writer wrote,
        whatever the line's size. Unvalidated: a line whose envelope is intact but whose body is
        corrupt still peeks as its kind; ``reader[line]`` tells the truth.
        """
        line = self._normalise(line)
        if line == 0:
            return Peek("trace_header", None, None, None, None)
        start, end = self.index.span(line)
        if end - start - 1 > self.max_line_bytes:
            return Peek("invalid", None, None, None, None)
        prefix = self._pread(start, min(end - start, PEEK_PREFIX))
        return peek_line(prefix, lambda: self._pread(start, end - start).removesuffix(b"\n"))

    def iter_records(self, start: int = 0, *, stop: int | None = None) -> Iterator[tuple[int, Record]]:
        """Yield ``(line, record)`` from ``start`` on, reading lines in blocks, bypassing the cache.

        The end is re-read at each block, so lines indexed by a concurrent :meth:`refresh` are
        included. Bad lines come out as :class:`OpaqueRecord` / :class:`InvalidRecord`.

        Args:
            start: The first line (0 yields the header first).
            stop: Stop before this line (default: the end of the index, as it grows).
        """
        if start <= 0 and len(self.index) and (stop is None or stop > 0):
            yield 0, self.header
        for line, offset, raw in self._iter_lines(max(start, 1), stop):
            if raw is None:
                yield line, self._too_long(line, offset, self.index.offset(line + 1))
            else:
                yield line, self.classify(line, offset, raw)

    def iter_raw(
        self, start: int = 1, *, stop: int | None = None, stored: bool = False
    ) -> Iterator[tuple[int, int, bytes]]:
        """Yield ``(line, offset, bytes without the newline)`` of event lines, read in blocks; nothing
        validated. A schema_version 2 ``llm_call`` comes rebuilt unless ``stored`` (see :meth:`raw`).

        The end is re-read at each block, so lines indexed by a concurrent :meth:`refresh` are
        included. Line 0 (the header) is never yielded: ``start`` is at least 1.

        Args:
            start: The first line.
            stop: Stop before this line (default: the end of the index, as it grows).
        """
        rebuild = self.rebuild if self._resolver is not None and not stored else None
        for line, offset, raw in self._iter_lines(start, stop):
            if raw is None:
                yield line, offset, b""
            else:
                yield line, offset, raw if rebuild is None else rebuild(raw)

    def _iter_lines(self, start: int, stop: int | None) -> Iterator[tuple[int, int, bytes | None]]:
        """:meth:`iter_raw`, with ``None`` for a line over the maximum line size (never read)."""
        line = max(start, 1)
        index = self.index
        while True:
            last = len(index) if stop is None else min(stop, len(index))
            if line >= last:
                return
            block_end = min(last, line + _BATCH_LINES)
            first_offset = index.offset(line)
            while block_end > line + 1 and index.offset(block_end) - first_offset > _BATCH_BYTES:
                block_end = line + max((block_end - line) // 2, 1)
            if block_end == line + 1 and index.offset(block_end) - first_offset - 1 > self.max_line_bytes:
                yield line, first_offset, None
                line += 1
                continue
            starts = index.offsets(line, block_end)
            data = self._pread(first_offset, starts[-1] - first_offset)
            begin = 0
            limit = self.max_line_bytes
            for k in range(1, len(starts)):
                end = starts[k] - first_offset
                # Every indexed line ends with its newline: drop it by slicing, not by searching.
                yield line, first_offset + begin, data[begin : end - 1] if end - begin - 1 <= limit else None
                begin = end
                line += 1

    def __iter__(self) -> Iterator[Record]:
        """Every record from line 0, as the index grows."""
        for _, record in self.iter_records(0):
            yield record

    # ------------------------------------------------------------------------------------------
    # Validation

    def iter_problems(self, *, progress: Callable[[int, int], None] | None = None) -> Iterator[Problem]:
        """Refresh, then validate every line; yield each problem in file order.

        Problems: invalid lines (``invalid``, or ``non-finite`` / ``out-of-range`` when that is all
        that is wrong), a key twice in one object (``duplicate-key``), a CRLF line end (``crlf``),
        unknown kinds (``unknown-kind``), places where
        ``seq`` is not the previous one plus one (``seq``; a bad line whose seq cannot be read may
        account for one missing seq, so it is not reported twice), and a torn tail (``torn-tail``).

        Args:
            progress: Called with ``(lines validated, lines in total)`` every 10 000 lines.
        """
        self.refresh()
        total = len(self)
        scanner = ProblemScanner(self)
        for line, offset, raw in self._iter_lines(1, None):
            if progress is not None and line % 10_000 == 0:
                progress(line, total)
            if raw is None:  # over the maximum line size: skipped, never read
                yield from scanner.check(line, self._too_long(line, offset, self.index.offset(line + 1)))
                continue
            record, form = self.check_line(line, offset, raw)
            yield from scanner.check(line, record)
            yield from form
        if progress is not None:
            progress(total, total)
        yield from scanner.finish()

    def check_line(
        self, line: int, offset: int, raw: bytes
    ) -> tuple[TraceEvent | OpaqueRecord | InvalidRecord, list[Problem]]:
        """One stored line's record and :func:`~fpdebug.trace.records.line_form_problems` (none for an
        invalid line), from one orjson parse that also answers their two checks (:func:`read_back`)."""
        finite, canonical = read_back(raw)
        record = self.classify(line, offset, raw, finite=finite)
        if isinstance(record, InvalidRecord):
            return record, []
        return record, line_form_problems(line, offset, raw, canonical=canonical)

    def problems(self) -> list[Problem]:
        """Every problem of :meth:`iter_problems`, as a list."""
        return list(self.iter_problems())

    # ------------------------------------------------------------------------------------------
    # Lifetime

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._fd is None

    def stat(self) -> os.stat_result:
        """``fstat`` of the open file (its inode, size and last write time, whatever the path names now).

        Raises:
            TraceError: The reader is closed, or the file cannot be stat'ed.
        """
        try:
            return os.fstat(self._require_fd())
        except OSError as error:
            raise TraceError(f"{self.path}: cannot stat: {error.strerror or error}") from error

    def close(self) -> None:
        """Close the file. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        with self._cache_lock:
            self._cache.clear()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            os.close(fd)

    def __repr__(self) -> str:
        return f"<TraceReader {str(self.path)!r} lines={len(self)}{' closed' if self.closed else ''}>"

    # ------------------------------------------------------------------------------------------
    # Internals

    def _check_header(self, size: int) -> bool:
        """Validate line 0 if it is complete; return whether the header is known."""
        if self._header is not None:
            return True
        if size == 0:
            return False
        first = read_first_line(self._require_fd(), size)
        if first is None:
            return False
        self._header = parse_header(first, str(self.path))
        self._header_bytes = first + b"\n"
        if self._header.schema_version >= 2:
            self._resolver = RequestResolver(self._stored_by_seq)
        return True

    def classify(
        self, line: int, offset: int, raw: bytes, *, finite: bool = False
    ) -> TraceEvent | OpaqueRecord | InvalidRecord:
        """:func:`~fpdebug.trace.records.classify_line` of a stored line's version 1 form (see :meth:`rebuild`):
        what ``reader[line]`` returns for it, from bytes already read (``raw(line, stored=True)``).
        ``finite`` (proved of the stored bytes) is not trusted for a rebuilt line."""
        if self._resolver is None or not raw.startswith(LLM_CALL_PREFIX):
            return (
                classify_line(line, offset, raw, finite=True) if finite else classify_line(line, offset, raw)
            )
        try:
            rebuilt = self._resolver.rebuild(raw)
        except RebuildError as error:
            preview = raw[:PREVIEW_BYTES].decode("utf-8", "backslashreplace")
            seq = peek_line(raw[:PEEK_PREFIX], lambda: raw).seq
            message = f"llm_call record cannot be rebuilt: {error}"
            return InvalidRecord(line, offset, len(raw), message, preview, "llm_call", seq)
        return classify_line(line, offset, rebuilt)

    def _stored_by_seq(self, seq: int) -> bytes | None:
        """The stored line holding ``seq``: line ``seq`` in a healthy trace, a few lines on when a
        torn fragment a resumed writer closed off shifted the lines after it."""
        line, count = seq, len(self.index)
        while line < count and line < seq + 1024:
            peeked = self.peek(line).seq
            if peeked == seq:
                return self.raw(line, stored=True)
            if peeked is not None and peeked > seq:
                return None
            line += 1
        return None

    def _check_identity(self, fd: int) -> None:
        """Raise when the path no longer names the opened file (``mv other X``, or X removed)."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            raise TraceReplacedError(
                f"{self.path}: the file was replaced: it was removed or renamed while it was being read; "
                "open it again"
            ) from None
        except OSError as error:
            raise TraceError(f"{self.path}: cannot stat: {error.strerror or error}") from error
        if (now.st_dev, now.st_ino) != self._identity:
            raise TraceReplacedError(
                f"{self.path}: the file was replaced by another file while it was being read; open it again"
            )

    def _check_same_content(self, fd: int) -> None:
        """Raise when bytes already read changed (``cp other X`` keeps the inode, rewrites the bytes).

        Two places are re-read: line 0 (the header) and the last bytes of the last indexed line,
        so a copy-over by a file with the same header (every demo trace has the same one) is caught
        too unless its bytes agree at both places.
        """
        for offset, known in ((0, self._header_bytes), self._end_mark):
            if known is not None and self._pread_raw(fd, offset, len(known)) != known:
                raise TraceReplacedError(
                    f"{self.path}: the file was replaced: bytes already read changed (copied over); "
                    "open it again"
                )

    def _mark_end(self) -> None:
        """Remember the last bytes of the indexed lines (see :meth:`_check_same_content`)."""
        end = self.index.indexed_size
        start = max(end - _END_MARK_BYTES, 0)
        if end > start:
            self._end_mark = (start, self._pread_raw(self._require_fd(), start, end - start))

    def _raise_no_header(self, size: int) -> None:
        if size == 0:
            raise TraceFormatError(f"{self.path}: the file is empty, not an fpdebug trace (no header line)")
        if size >= HEADER_LIMIT:
            raise TraceFormatError(
                f"{self.path}: line 0 is not an fpdebug trace header (no line end in its first "
                f"{HEADER_LIMIT} bytes)"
            )
        raise TraceFormatError(
            f"{self.path}: line 0 is unfinished ({size} bytes, no newline): the trace header was never "
            "completely written"
        )

    def _normalise(self, line: int) -> int:
        count = len(self.index)
        if line < 0:
            line += count
        if not 0 <= line < count:
            raise IndexError(f"line {line} is not in the trace ({count} lines indexed)")
        return line

    def _require_fd(self) -> int:
        fd = self._fd
        if fd is None:
            raise TraceError(f"{self.path}: the trace reader is closed")
        return fd

    def _too_long(self, line: int, start: int, end: int) -> InvalidRecord:
        """The record of a line over the maximum line size: only its first bytes are read, as a preview."""
        length = end - start - 1
        preview = self._pread(start, PREVIEW_BYTES).decode("utf-8", "backslashreplace")
        message = (
            f"line of {length} bytes is over the maximum line size ({self.max_line_bytes} bytes; "
            f"set {MAX_LINE_BYTES_ENV_VAR} to change it): skipped, not read"
        )
        return InvalidRecord(line, start, length, message, preview, too_long=True)

    def _pread_raw(self, fd: int, offset: int, length: int) -> bytes:
        try:
            return os.pread(fd, length, offset)
        except OSError as error:
            raise TraceError(f"{self.path}: cannot read: {error.strerror or error}") from error

    def _pread(self, offset: int, length: int) -> bytes:
        fd = self._require_fd()
        try:
            data = os.pread(fd, length, offset)
            if len(data) < length:
                # Very large reads may come back in pieces; an empty piece means the file shrank.
                pieces = [data]
                got = len(data)
                while got < length:
                    piece = os.pread(fd, length - got, offset + got)
                    if not piece:
                        raise TraceError(
                            f"{self.path}: the file shrank while being read (truncated or re-created); "
                            "open it again"
                        )
                    pieces.append(piece)
                    got += len(piece)
                data = b"".join(pieces)
        except OSError as error:
            raise TraceError(f"{self.path}: cannot read: {error.strerror or error}") from error
        return data


class ProblemScanner:
    """Finds the problems of a trace while its records stream past (the logic of ``problems()``).

    Feed every record in line order to :meth:`check` (alongside anything else that consumes them,
    such as a :class:`~fpdebug.trace.model.RunModel`), then call :meth:`finish` for the torn tail.

    Args:
        reader: The reader the records come from (for line offsets and the tail).
    """

    def __init__(self, reader: TraceReader) -> None:
        self.reader = reader
        """The reader being checked."""
        self._expected = 1
        self._unknown = 0

    def check(self, line: int, record: Record) -> list[Problem]:
        """The problems of one record (in line order; line 0 is ignored)."""
        if isinstance(record, TraceHeader):
            return []
        problems = record_problems(line, record)
        gap = self.check_seq(line, record.seq)
        if gap is not None:
            problems.append(gap)
        return problems

    def check_seq(self, line: int, seq: int | None) -> Problem | None:
        """The ``seq`` problem of the record on ``line`` whose seq is ``seq`` (``None``: unreadable)."""
        if seq is None:
            self._unknown += 1
            return None
        expected, unknown = self._expected, self._unknown
        self._expected, self._unknown = seq + 1, 0
        # A bad line whose seq cannot be read may have held one (corruption) or not (a torn
        # fragment a resumed writer closed off): either is consistent, neither is a gap.
        if expected <= seq <= expected + unknown:
            return None
        what = f"{seq - expected - unknown} missing" if seq > expected else "repeated or out of order"
        return Problem(
            line, self.reader.offset(line), "seq", f"seq {seq} where {expected} was expected ({what})"
        )

    def check_healthy(self, first: int, last: int) -> Problem | None:
        """Lines ``first..last`` each hold a good record whose seq is its line: what :meth:`check` of
        each would find (only the first can disagree with what came before)."""
        gap = self.check_seq(first, first)
        self._expected, self._unknown = last + 1, 0
        return gap

    def finish(self) -> list[Problem]:
        """The torn tail, if the file ends with an unfinished line."""
        torn = self.reader.torn_tail()
        return [] if torn is None else [Problem(torn.line, torn.offset, "torn-tail", torn.describe())]


def record_problems(line: int, record: Record) -> list[Problem]:
    """What the record itself says is wrong (an invalid line, an unknown kind), before its ``seq`` is judged."""
    if isinstance(record, InvalidRecord):
        code: ProblemCode = "line-too-long" if record.too_long else record.code
        return [Problem(line, record.offset, code, record.error)]
    if isinstance(record, OpaqueRecord):
        return [
            Problem(
                line,
                record.offset,
                "unknown-kind",
                f"unknown kind {record.kind!r}: kept as an opaque record (written by a newer fpdebug?)",
            )
        ]
    return []


def max_line_bytes_from_env(environ: dict[str, str] | None = None) -> int:
    """The maximum line size: ``FPDEBUG_MAX_LINE_BYTES`` when it is a positive integer, else 64 MiB.

    Raises:
        TraceError: The variable is set to something that is not a positive integer.
    """
    value = (os.environ if environ is None else environ).get(MAX_LINE_BYTES_ENV_VAR, "").strip()
    if not value:
        return DEFAULT_MAX_LINE_BYTES
    try:
        limit = int(value.replace("_", ""))
    except ValueError:
        limit = 0
    if limit <= 0:
        raise TraceError(f"{MAX_LINE_BYTES_ENV_VAR}={value!r}: expected a positive number of bytes")
    return limit


def _open_for_reading(path: Path) -> int:
    # O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears, before
    # the regular-file check below could refuse it. It changes nothing for a regular file.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except PermissionError:
        raise TraceError(f"{path}: permission denied") from None
    except OSError as error:
        raise TraceError(f"{path}: cannot open: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as error:
        os.close(fd)
        raise TraceError(f"{path}: cannot stat: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise TraceError(f"{path}: is a directory, not a trace file")
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise TraceError(f"{path}: not a regular file (a pipe or a device); a trace must be a file")
    os.set_blocking(fd, True)
    return fd


def _fstat_size(fd: int, path: Path) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError as error:
        raise TraceError(f"{path}: cannot stat: {error.strerror or error}") from error

"""The byte-offset line index: where every complete line of a trace starts, in one ``array('q')``.

The scan reads the file in large chunks and finds newlines with ``bytes.find`` (the toolong
approach, STYLE §4.4 example 3), but through ``os.pread`` rather than ``mmap``: a file that is
truncated while it is mapped (a writer rolling back a failed record, a trace re-created with
``overwrite=True`` while a viewer follows it) raises SIGBUS, which kills the process and cannot be
caught; ``pread`` simply returns fewer bytes. Measured on a 1M-line, 207 MB file the two differ by
a few percent (≈0.14 s against ≈0.13 s).

Only complete lines are indexed: bytes after the last newline (a record still being written, or
torn by a crash) are left for a later :meth:`LineIndex.update`, which resumes exactly where the
previous one stopped.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator

__all__ = ["DEFAULT_CHUNK_SIZE", "LineIndex", "iter_line_ends", "scan_line_ends"]

_preadv = getattr(os, "preadv", None)  # reads into a reusable buffer; absent on a few platforms

DEFAULT_CHUNK_SIZE = 16 * 1024 * 1024
"""Bytes read per step of a scan (progress is reported and cancellation checked between steps)."""


def iter_line_ends(
    fd: int, start: int, size: int, *, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[tuple[int, array[int]]]:
    """Scan ``[start, size)`` chunk by chunk for newlines.

    Args:
        fd: A readable descriptor (read with ``os.pread`` / ``os.preadv``; its position is not used).
        start: Where to start; normally the end of the last complete line already indexed.
        size: Where to stop (the file size observed by the caller).
        chunk_size: Bytes per step.

    Yields:
        ``(scanned_to, ends)`` per chunk: the offset scanned up to, and the offsets just past each
        newline found in that chunk (possibly none). Stops early if the file became shorter.
    """
    if _preadv is None or size - start <= chunk_size:
        # One read covers it (the common case when following a growing file), or no preadv.
        yield from _iter_pread(fd, start, size, chunk_size)
        return
    # Several chunks: read them all into one buffer. A fresh 16 MB bytes object per chunk is
    # page-faulted in every time; reusing the buffer measured 10-15 % faster on a 2 GB scan.
    position = start
    buffer = bytearray(chunk_size)
    view = memoryview(buffer)
    try:
        while position < size:
            got = _preadv(fd, [view[: min(chunk_size, size - position)]], position)
            if not got:
                return  # the file shrank under us; the caller notices on its next fstat
            ends = _line_ends(buffer, got, position)
            position += got
            yield position, ends
    finally:
        view.release()


def _iter_pread(fd: int, start: int, size: int, chunk_size: int) -> Iterator[tuple[int, array[int]]]:
    # A fresh bytes object per chunk.
    position = start
    while position < size:
        data = os.pread(fd, min(chunk_size, size - position), position)
        if not data:
            return
        ends = _line_ends(data, len(data), position)
        position += len(data)
        yield position, ends


def _line_ends(data: bytes | bytearray, length: int, base: int) -> array[int]:
    """``base`` + the offset just past each newline in ``data[:length]``."""
    ends: array[int] = array("q")
    append, find = ends.append, data.find  # hot loop: bind once (toolong idiom)
    i = 0
    while (i := find(b"\n", i, length)) != -1:
        i += 1
        append(base + i)
    return ends


def scan_line_ends(fd: int, start: int, size: int) -> array[int]:
    """Offsets just past each newline in ``[start, size)``; a trailing partial line is ignored.

    Args:
        fd: A readable descriptor.
        start: Where to start scanning.
        size: Where to stop.
    """
    found: array[int] = array("q")
    for _, ends in iter_line_ends(fd, start, size):
        found.extend(ends)
    return found


class LineIndex:
    """Offsets of complete lines: line ``i`` spans ``starts[i]:starts[i + 1]`` (newline included).

    It only ever grows, and an element once written never changes, so reading it from one thread
    while another extends it is safe; two concurrent :meth:`update` calls are not (the reader
    serialises them).
    """

    def __init__(self) -> None:
        self._starts: array[int] = array("q", [0])
        """``starts[-1]`` is the end of the last complete line."""
        self._scanned = 0
        """Bytes already searched for newlines: a long unfinished line is not searched twice."""

    def __len__(self) -> int:
        """How many complete lines are indexed."""
        return len(self._starts) - 1

    @property
    def indexed_size(self) -> int:
        """Bytes covered by complete lines (where the next scan starts)."""
        return self._starts[-1]

    def span(self, line: int) -> tuple[int, int]:
        """``(start, end)`` of a line: ``end`` is just past its newline.

        Raises:
            IndexError: The line is not indexed.
        """
        if not 0 <= line < len(self._starts) - 1:
            raise IndexError(line)
        starts = self._starts
        return starts[line], starts[line + 1]

    def offset(self, line: int) -> int:
        """The byte offset where a line starts (``line == len(self)`` gives :attr:`indexed_size`)."""
        if not 0 <= line < len(self._starts):
            raise IndexError(line)
        return self._starts[line]

    def offsets(self, first: int, last: int) -> array[int]:
        """The start offsets of lines ``first`` through ``last`` inclusive, as one slice (a copy).

        ``offsets(a, b)[k]`` is where line ``a + k`` starts; the last item (line ``b``'s start) is
        where line ``b - 1`` ends, so ``b`` may be ``len(self)``. Cheaper than ``b - a`` calls to
        :meth:`span` when streaming consecutive lines.

        Raises:
            IndexError: The range is not within ``[0, len(self)]``.
        """
        if not 0 <= first <= last < len(self._starts):
            raise IndexError(f"lines {first}..{last} are not within 0..{len(self._starts) - 1}")
        return self._starts[first : last + 1]

    def line_at(self, offset: int) -> int:
        """The line containing byte ``offset`` (``len(self)`` when it is past the indexed lines)."""
        return max(bisect_right(self._starts, offset) - 1, 0) if offset < self.indexed_size else len(self)

    def extend(self, ends: array[int]) -> None:
        """Append line ends found by a scan (each must be past :attr:`indexed_size`)."""
        if ends and ends[0] <= self._starts[-1]:
            raise ValueError(f"line end {ends[0]} is not past the indexed size {self._starts[-1]}")
        self._starts.extend(ends)

    def adopt(self, starts: array[int]) -> int:
        """Take over a longer index of the same file (a persisted one) if this one is a prefix of it.

        The list of starts is swapped, not extended in place, so a thread reading the old one
        still sees a consistent (shorter) index.

        Args:
            starts: Line starts from ``0`` on, strictly increasing (checked by the caller).

        Returns:
            How many lines were added: 0 when ``starts`` is not longer or disagrees with what
            this index already holds (then nothing changes).
        """
        known = self._starts
        count = len(known)
        if len(starts) <= count or starts[:count] != known:
            return 0
        self._starts = starts
        self._scanned = max(self._scanned, starts[-1])
        return len(starts) - count

    def update(
        self,
        fd: int,
        size: int,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> int:
        """Index the complete lines between :attr:`indexed_size` and ``size``.

        Lines become visible chunk by chunk, so a view can show the first lines of a large file
        while the rest is still being scanned. A cancelled update leaves a consistent index (every
        entry is a real line end); the next update resumes where it stopped.

        Args:
            fd: A readable descriptor of the file.
            size: The file size to scan up to.
            chunk_size: Bytes per step.
            progress: Called after each step with ``(bytes scanned, bytes to scan)``.
            cancelled: Checked after each step; when it returns true the scan stops.

        Returns:
            How many lines were added.
        """
        before = len(self)
        start = self._scanned if self.indexed_size <= self._scanned <= size else self.indexed_size
        total = max(size - start, 0)
        for scanned_to, ends in iter_line_ends(fd, start, size, chunk_size=chunk_size):
            self._starts.extend(ends)
            self._scanned = scanned_to
            if progress is not None:
                progress(scanned_to - start, total)
            if cancelled is not None and cancelled():
                break
        return len(self) - before

    def nbytes(self) -> int:
        """Memory held by the offsets (8 bytes per line)."""
        return self._starts.itemsize * len(self._starts)

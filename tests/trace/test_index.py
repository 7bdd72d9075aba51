"""The line index: exact offsets across chunk boundaries, partial lines, progress and cancellation."""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.trace.index import LineIndex, scan_line_ends


@pytest.fixture
def open_fd(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "lines"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    yield path, fd
    os.close(fd)


def expected_ends(data: bytes) -> list[int]:
    return [i + 1 for i, byte in enumerate(data) if byte == 0x0A]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(st.sampled_from([b"a", b"\n", b"xyz", b"\n\n", "é".encode()]), max_size=80).map(b"".join),
    chunk=st.integers(min_value=1, max_value=9),
)
def test_the_index_matches_every_newline_whatever_the_chunking(
    tmp_path: Path, data: bytes, chunk: int
) -> None:
    path = tmp_path / "lines"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        index = LineIndex()
        index.update(fd, len(data), chunk_size=chunk)
        assert [index.span(i)[1] for i in range(len(index))] == expected_ends(data)
        assert index.indexed_size == (expected_ends(data) or [0])[-1]
        assert list(scan_line_ends(fd, 0, len(data))) == expected_ends(data)
    finally:
        os.close(fd)


def test_incremental_updates_resume_where_they_stopped(open_fd: tuple[Path, int]) -> None:
    path, fd = open_fd
    index = LineIndex()
    with path.open("ab") as handle:
        handle.write(b"one\ntw")
        handle.flush()
        assert index.update(fd, path.stat().st_size) == 1
        assert index.indexed_size == 4  # "tw" waits for its newline
        handle.write(b"o\nthree\n")
        handle.flush()
        assert index.update(fd, path.stat().st_size) == 2
    assert [index.span(i) for i in range(3)] == [(0, 4), (4, 8), (8, 14)]
    assert (index.offset(3), index.line_at(5), index.line_at(0), index.line_at(99)) == (14, 1, 0, 3)


def test_a_long_unfinished_line_is_not_rescanned(
    open_fd: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, fd = open_fd
    index = LineIndex()
    path.write_bytes(b"x" * 1000)
    index.update(fd, 1000)
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(descriptor: int, length: int, offset: int) -> bytes:
        reads.append(offset)
        return real_pread(descriptor, length, offset)

    monkeypatch.setattr(os, "pread", counting_pread)
    with path.open("ab") as handle:
        handle.write(b"x\n")
    assert index.update(fd, 1002) == 1
    assert reads == [1000]


def test_progress_is_reported_and_cancellation_leaves_a_consistent_index(open_fd: tuple[Path, int]) -> None:
    path, fd = open_fd
    data = b"".join(b"line %03d\n" % i for i in range(100))  # 9 bytes a line
    path.write_bytes(data)
    index = LineIndex()
    reports: list[tuple[int, int]] = []
    added = index.update(
        fd,
        len(data),
        chunk_size=100,
        progress=lambda d, t: reports.append((d, t)),
        cancelled=lambda: len(reports) == 3,
    )
    assert reports == [(100, 900), (200, 900), (300, 900)]
    assert added == 33 and index.indexed_size == 297  # only whole lines
    assert index.update(fd, len(data), chunk_size=100) == 67
    assert [index.span(i)[0] for i in range(100)] == [9 * i for i in range(100)]


def test_extend_refuses_offsets_that_go_backwards() -> None:
    index = LineIndex()
    index.extend(array("q", [5, 9]))
    with pytest.raises(ValueError):
        index.extend(array("q", [7]))
    with pytest.raises(IndexError):
        index.span(2)


def test_offsets_of_an_empty_range_is_the_one_boundary_offset() -> None:
    # offsets(a, b) lists the starts of lines a..b inclusive, so offsets(a, a) is one item: where
    # line a starts (where line a - 1 ends). a == len(index) is allowed: it gives the indexed size.
    index = LineIndex()
    assert list(index.offsets(0, 0)) == [0]  # an empty index still has the boundary at 0
    index.extend(array("q", [4, 9, 15]))
    assert [list(index.offsets(a, a)) for a in range(4)] == [[0], [4], [9], [15]]
    assert list(index.offsets(1, 3)) == [4, 9, 15]
    for first, last in [(4, 4), (2, 1), (-1, -1), (0, 4)]:
        with pytest.raises(IndexError):
            index.offsets(first, last)


def test_a_duplicate_extend_does_not_count_its_lines_twice(open_fd: tuple[Path, int]) -> None:
    path, fd = open_fd
    data = b"one\ntwo\nthree\n"
    path.write_bytes(data)
    ends = scan_line_ends(fd, 0, len(data))
    index = LineIndex()
    index.extend(ends)
    assert len(index) == 3
    with pytest.raises(ValueError, match="not past the indexed size"):
        index.extend(ends)  # the same range again is refused as a whole: nothing is appended
    with pytest.raises(ValueError):
        index.extend(array("q", [14, 20]))  # overlapping the indexed end by its first item
    index.extend(array("q"))  # an empty scan adds nothing
    assert (len(index), index.indexed_size, list(index.offsets(0, 3))) == (3, 14, [0, 4, 8, 14])
    # A scan over the same bytes after an extend resumes at the indexed end: no line twice.
    assert index.update(fd, len(data)) == 0
    assert index.update(fd, len(data)) == 0
    assert (len(index), [index.span(i) for i in range(3)]) == (3, [(0, 4), (4, 8), (8, 14)])

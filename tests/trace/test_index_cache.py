"""The persisted line index: hits, misses, invalidation, appends, corrupt or foreign files, unwritable caches."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import struct
from array import array
from pathlib import Path

import orjson
import pytest

from fpdebug.trace import index_cache
from fpdebug.trace.index_cache import CACHE_ENV_VAR, cache_path, load_index, save_index
from fpdebug.trace.reader import TraceReader
from fpdebug.views.session import TraceSession

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "support.fptrace.jsonl"


@pytest.fixture(autouse=True)
def _small_traces_are_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    monkeypatch.setattr(index_cache, "END_BYTES", 64)  # so a change near the end is outside the head
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(CACHE_ENV_VAR, raising=False)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "run.fptrace.jsonl"
    shutil.copyfile(SAMPLE, path)
    return path


def scanned(path: Path) -> array[int]:
    """The starts a fresh full scan finds."""
    with TraceReader(path) as reader:
        return reader.index.offsets(0, len(reader.index))


def save(path: Path) -> Path:
    entry = save_index(path, os.stat(path), scanned(path))
    assert entry is not None and entry == cache_path(path)
    return entry


def load(path: Path) -> array[int] | None:
    return load_index(path, os.stat(path))


def keep_mtime(path: Path, change: bytes, at: int) -> None:
    """Overwrite bytes in place and put the modification time back (what a size+mtime key alone misses)."""
    before = os.stat(path)
    with path.open("r+b") as handle:
        handle.seek(at)
        handle.write(change)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_saved_index_is_found_again_and_reads_the_same_records(trace: Path) -> None:
    save(trace)
    starts = load(trace)
    assert starts == scanned(trace)
    with TraceReader(trace, index=False) as restored, TraceReader(trace) as fresh:
        assert restored.adopt_index(starts) == len(fresh)  # type: ignore[arg-type]
        assert len(restored) == len(fresh)
        assert [restored.raw(line) for line in range(len(fresh))] == [
            fresh.raw(line) for line in range(len(fresh))
        ]
        assert restored.refresh() == 0  # nothing left to scan


def test_nothing_saved_or_the_cache_off_is_a_miss(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load(trace) is None
    monkeypatch.setenv(CACHE_ENV_VAR, "off")
    assert save_index(trace, os.stat(trace), scanned(trace)) is None
    assert not cache_path(trace).exists()
    monkeypatch.delenv(CACHE_ENV_VAR)
    save(trace)
    monkeypatch.setenv(CACHE_ENV_VAR, "0")
    assert load(trace) is None


def test_a_small_trace_is_not_cached(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_cache, "MIN_BYTES", trace.stat().st_size + 1)
    assert save_index(trace, os.stat(trace), scanned(trace)) is None


def test_a_truncated_trace_invalidates(trace: Path) -> None:
    save(trace)
    with trace.open("r+b") as handle:
        handle.truncate(trace.stat().st_size // 2)
    assert load(trace) is None


def test_a_rewrite_of_the_same_size_invalidates(trace: Path) -> None:
    save(trace)
    data = trace.read_bytes()
    trace.write_bytes(data)  # same bytes, new modification time
    os.utime(trace, ns=(0, os.stat(trace).st_mtime_ns + 1_000_000))
    assert load(trace) is None


def test_a_changed_head_or_end_invalidates_even_with_the_same_size_and_mtime(trace: Path) -> None:
    save(trace)
    keep_mtime(trace, b"5", trace.read_bytes().index(b'"created":"') + 14)  # 2026 -> 2025
    assert load(trace) is None
    save(trace)
    size = trace.stat().st_size
    keep_mtime(trace, b"X", size - 10)
    assert load(trace) is None


def test_another_file_at_the_same_path_invalidates(trace: Path, tmp_path: Path) -> None:
    save(trace)
    other = tmp_path / "other"
    shutil.copyfile(trace, other)
    os.replace(other, trace)  # same bytes, new inode
    assert load(trace) is None


def test_a_grown_trace_extends_from_the_saved_end(trace: Path) -> None:
    save(trace)
    saved = scanned(trace)
    lines = trace.read_bytes().splitlines(keepends=True)
    with trace.open("ab") as handle:
        handle.write(b"".join(lines[1:4]) + b'{"kind":"pa')  # three more lines and a torn one
    starts = load(trace)
    assert starts == saved
    with TraceReader(trace, index=False) as reader:
        assert reader.adopt_index(starts) == len(saved) - 1  # type: ignore[arg-type]
        assert reader.refresh() == 3
        assert reader.index.offsets(0, len(reader.index)) == scanned(trace)
        assert reader.torn_tail() is not None


def test_a_grown_trace_whose_indexed_end_changed_invalidates(trace: Path) -> None:
    save(trace)
    size = trace.stat().st_size
    keep_mtime(trace, b"X", size - 10)
    with trace.open("ab") as handle:
        handle.write(trace.read_bytes().splitlines(keepends=True)[1])
    assert load(trace) is None


def corrupt_variants(entry: bytes, key: bytes) -> dict[str, bytes]:
    prefix = struct.calcsize("<8sII")
    _, version, length = struct.unpack_from("<8sII", entry)
    meta = orjson.loads(entry[prefix + 32 : prefix + 32 + length])
    offsets = array("q")
    offsets.frombytes(entry[prefix + 32 + length :])

    def rebuilt(starts: array[int], *, signed_with: bytes = key, **changes: object) -> bytes:
        encoded = orjson.dumps({**meta, **changes})
        mac = hashlib.blake2b(key=signed_with, digest_size=32)
        for part in (struct.pack("<Q", len(encoded)), encoded, starts.tobytes()):
            mac.update(part)
        header = struct.pack("<8sII", b"FPDIDX\r\n", version, len(encoded))
        return header + mac.digest() + encoded + starts.tobytes()

    past_end = array("q", offsets)
    past_end.append(offsets[-1] + 10_000)
    shifted = array("q", offsets)
    shifted[3] += 1
    flipped = bytearray(entry)
    flipped[-20] ^= 0xFF
    return {
        "empty": b"",
        "garbage": os.urandom(300),
        "truncated": entry[: len(entry) - 12],
        "a flipped offset": bytes(flipped),
        "another magic": b"XXXXXXXX" + entry[8:],
        "a newer version": entry[:8] + struct.pack("<I", version + 1) + entry[12:],
        "broken metadata": entry[: prefix + 32] + b"{" * length + entry[prefix + 32 + length :],
        "made elsewhere (another key)": rebuilt(offsets, signed_with=os.urandom(32)),
        # Files with a good MAC that still do not fit the trace:
        "offsets past the file": rebuilt(past_end, indexed=past_end[-1], lines=len(past_end)),
        "a line start not after a newline": rebuilt(shifted),
        "an unknown section": rebuilt(offsets, sections=["offsets", "defs"]),
    }


def test_corrupt_or_foreign_cache_files_are_ignored(trace: Path, caplog: pytest.LogCaptureFixture) -> None:
    entry = save(trace)
    good, key = entry.read_bytes(), (entry.parent / "key").read_bytes()
    assert load(trace) is not None
    for name, bad in corrupt_variants(good, key).items():
        entry.write_bytes(bad)
        with caplog.at_level(logging.INFO, logger="fpdebug.trace.index_cache"):
            assert load(trace) is None, name
        session = TraceSession(TraceReader(trace, index=False))  # the trace is scanned as ever
        assert session.restore_index() == 0
        session.index_step()
        assert session.reader.index.offsets(0, session.lines) == scanned(trace)
        session.reader.close()
    entry.write_bytes(good)
    assert load(trace) is not None
    (entry.parent / "key").unlink()
    assert load(trace) is None


def test_an_unwritable_cache_is_logged_and_ignored(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "blocked"
    (blocked / "fpdebug").parent.mkdir()
    (blocked / "fpdebug").write_bytes(b"a file where the directory should be")  # even root cannot write
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with caplog.at_level(logging.INFO, logger="fpdebug.trace.index_cache"):
        assert save_index(trace, os.stat(trace), scanned(trace)) is None
        assert load(trace) is None
    assert "not written" in caplog.text
    assert not list(blocked.rglob("*.idx")) and not list(tmp_path.rglob(".tmp-*"))


def test_a_trace_replaced_before_the_save_is_not_saved(trace: Path, tmp_path: Path) -> None:
    opened, starts = os.stat(trace), scanned(trace)
    other = tmp_path / "other"
    shutil.copyfile(trace, other)
    os.replace(other, trace)  # another inode under the name: the offsets are not its own to claim
    assert save_index(trace, opened, starts) is None
    assert not cache_path(trace).exists()


def test_old_entries_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_cache, "MAX_ENTRIES", 2)
    traces = []
    for number in range(3):
        path = tmp_path / f"t{number}.fptrace.jsonl"
        shutil.copyfile(SAMPLE, path)
        save(path)
        os.utime(cache_path(path), ns=(number, number))
        traces.append(path)
    save(traces[2])
    assert [cache_path(path).exists() for path in traces] == [False, True, True]


def test_a_session_restores_what_an_earlier_session_saved(trace: Path) -> None:
    first = TraceSession(TraceReader(trace, index=False))
    first.index_step(chunk_size=256)
    assert first.restore_index() == 0
    while not first.index_done:
        first.index_step()
    assert first.save_index() and not first.save_index()  # once per session
    second = TraceSession(TraceReader(trace, index=False))
    second.index_step(chunk_size=256)  # what the first screen indexes: a prefix of the saved one
    before = second.lines
    assert 0 < before < first.lines
    assert second.restore_index() == first.lines - before
    second.index_step()
    assert second.index_done and second.lines == first.lines
    assert not second.save_index()  # nothing new to save
    while second.model_step():
        pass
    while first.model_step():
        pass
    assert [row.first_line for row in second.iterations] == [row.first_line for row in first.iterations]

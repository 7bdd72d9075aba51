"""A followed file has an identity: a replacement or a copy-over is reported, never spliced.

On the old code ``refresh()`` after ``mv other X`` kept reading the old, unlinked file for ever, and
after ``cp other X`` (same inode, new bytes) it indexed the new file's lines after the old ones,
splicing two runs into one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fpdebug.errors import TraceError, TraceReplacedError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import TurnStartEvent
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0


def write_trace(path: Path, count: int, text: str) -> None:
    events = [
        TurnStartEvent(seq=seq, ts=T0, run_id=f"run-{text}", turn=seq, user_message=f"{text} {seq}")
        for seq in range(1, count + 1)
    ]
    with TraceWriter.create(path, overwrite=True) as writer:
        writer.append_many(events)


def test_a_file_moved_over_the_followed_one_is_reported(tmp_path: Path) -> None:
    path, other = tmp_path / "x.fptrace.jsonl", tmp_path / "other.fptrace.jsonl"
    write_trace(path, 3, "old")
    with TraceReader(path) as reader:
        write_trace(other, 5, "new")
        os.replace(other, path)
        with pytest.raises(TraceReplacedError, match="replaced"):
            reader.refresh()
        assert len(reader) == 4  # the old lines, nothing of the new file


def test_a_file_copied_over_the_followed_one_is_reported_not_spliced(tmp_path: Path) -> None:
    path, other = tmp_path / "x.fptrace.jsonl", tmp_path / "other.fptrace.jsonl"
    write_trace(path, 3, "old")
    with TraceReader(path) as reader:
        inode = path.stat().st_ino
        write_trace(other, 8, "new")  # longer, and the same header bytes as the old file
        shutil.copyfile(other, path)
        assert path.stat().st_ino == inode
        with pytest.raises(TraceReplacedError, match="replaced"):
            reader.refresh()
        assert len(reader) == 4


def test_a_removed_file_is_reported_and_an_append_is_not(tmp_path: Path) -> None:
    path = tmp_path / "x.fptrace.jsonl"
    write_trace(path, 3, "old")
    with TraceReader(path) as reader:
        with TraceWriter.resume(path) as writer:
            writer.append(TurnStartEvent(seq=4, ts=T0, run_id="run-old", turn=4, user_message="more"))
        assert reader.refresh() == 1
        path.unlink()
        with pytest.raises(TraceError, match="replaced"):
            reader.refresh()

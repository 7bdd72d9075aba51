"""The runs-browser bench builds the folder it measures: generated traces, copies, and a resumed folder."""

from __future__ import annotations

from pathlib import Path

from bench.runs_browser import build_folder


def test_the_folder_is_generated_copied_and_resumed(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    files, size = build_folder(folder, 5, 0.0005, distinct=2)
    paths = sorted(folder.iterdir())
    assert files == 5 and [path.name for path in paths] == [f"run-{n:05d}.fptrace.jsonl" for n in range(5)]
    assert size == sum(path.stat().st_size for path in paths) > 0
    data = [path.read_bytes() for path in paths]
    # Two seeds, the rest copies round robin: the scan does a generated trace's work on each.
    assert data[0] != data[1] and data[2] == data[4] == data[0] and data[3] == data[1]
    assert data[0].startswith(b'{"kind":"trace_header"')
    # Run again on the same folder: every file is kept as it is (an interrupted --keep resumes).
    stamps = [path.stat().st_mtime_ns for path in paths]
    assert build_folder(folder, 5, 0.0005, distinct=2) == (files, size)
    assert [path.stat().st_mtime_ns for path in paths] == stamps

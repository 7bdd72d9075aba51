"""The demo-shaped bench trace: the demo runs' bodies byte for byte, a writer's envelope, valid."""

from __future__ import annotations

from pathlib import Path

from bench.demo_trace import SAMPLES, iter_demo_lines
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.writer import dump_record


def test_every_line_is_what_the_writer_writes_and_the_bodies_are_the_demos(tmp_path: Path) -> None:
    path = tmp_path / "demo.fptrace.jsonl"
    path.write_bytes(b"".join(iter_demo_lines(400)))
    bodies = {
        raw.split(b'"run_id":"', 1)[1].split(b'"', 1)[1]
        for sample in SAMPLES.glob("*.fptrace.jsonl")
        for raw in sample.read_bytes().splitlines()[1:]
    }
    with TraceReader(path) as reader:
        assert reader.problems() == []
        runs = set()
        for (line, record), (_, _, raw) in zip(reader.iter_records(1), reader.iter_raw(1), strict=True):
            assert record.seq == line
            assert dump_record(record).rstrip(b"\n") == raw
            assert raw.split(b'"run_id":"', 1)[1].split(b'"', 1)[1] in bodies
            runs.add(record.run_id)
    assert len(reader) - 1 >= 400
    assert len(runs) >= 400 // 30

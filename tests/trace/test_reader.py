"""The reader: round trips, random access, peeks, and every bad input of issue 2."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from fpdebug.errors import TraceError, TraceFormatError, TraceVersionError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord, Peek
from fpdebug.trace.schema import EVENT_KINDS, SCHEMA_VERSION, TraceHeader, TurnStartEvent
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0
from tests.trace.samples import every_kind


def turn_start(seq: int, text: str = "hello") -> TurnStartEvent:
    return TurnStartEvent(seq=seq, ts=T0 + timedelta(seconds=seq), run_id="r", turn=1, user_message=text)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "run.jsonl"


def write_events(path: Path, count: int) -> list[TurnStartEvent]:
    events = [turn_start(seq, f"message {seq}") for seq in range(1, count + 1)]
    with TraceWriter.create(path) as writer:
        writer.append_many(events)
    return events


def append_bytes(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


# ----------------------------------------------------------------------------------------------
# Round trips


def test_every_kind_round_trips(path: Path) -> None:
    events = every_kind(T0)
    assert {event.kind for event in events} == EVENT_KINDS  # the sample really covers every kind
    with TraceWriter.create(path) as writer:
        for event in events:
            writer.append(event)
    with TraceReader(path) as reader:
        assert len(reader) == len(events) + 1
        assert isinstance(reader[0], TraceHeader)
        assert [reader[line] for line in range(1, len(reader))] == events
        assert [record for _, record in reader.iter_records(1)] == events
        assert reader.problems() == []


def test_peek_reads_the_envelope_without_a_model(path: Path) -> None:
    events = every_kind(T0)
    with TraceWriter.create(path) as writer:
        writer.append_many(events)
    with TraceReader(path) as reader:
        assert reader.peek(0).kind == "trace_header"
        for line, event in enumerate(events, start=1):
            assert reader.peek(line) == Peek(event.kind, event.seq, event.run_id, event.turn, event.iteration)


def test_peek_falls_back_to_a_full_parse_for_other_layouts(path: Path) -> None:
    write_events(path, 0)
    append_bytes(path, b'{"seq": 1, "run_id": "r\\u00e9", "kind": "turn_start", "turn": 2}\n[1]\n')
    with TraceReader(path) as reader:
        assert reader.peek(1) == Peek("turn_start", 1, "ré", 2, None)
        assert reader.peek(2) == Peek(None, None, None, None, None)


def test_raw_offset_and_negative_indices(path: Path) -> None:
    write_events(path, 3)
    lines = path.read_bytes().split(b"\n")
    with TraceReader(path) as reader:
        assert reader.raw(2) == lines[2]
        assert reader.offset(2) == len(lines[0]) + len(lines[1]) + 2
        assert reader[-1] == turn_start(3, "message 3")
        with pytest.raises(IndexError):
            reader[4]


def test_iteration_from_any_position(path: Path) -> None:
    events = write_events(path, 20)
    with TraceReader(path) as reader:
        assert [line for line, _ in reader.iter_records(15)] == [15, 16, 17, 18, 19, 20]
        assert [record for _, record in reader.iter_records(5, stop=8)] == events[4:7]
        assert list(reader.iter_records(21)) == []
        assert list(reader)[1:] == events


def test_iteration_picks_up_lines_indexed_meanwhile(path: Path) -> None:
    write_events(path, 2)
    with TraceReader(path) as reader, TraceWriter.resume(path) as writer:
        seen = []
        for line, _record in reader.iter_records(1):
            seen.append(line)
            if line == 2:
                writer.append(turn_start(3))
                reader.refresh()
        assert seen == [1, 2, 3]


def test_the_cache_is_bounded_and_returns_cached_records(path: Path) -> None:
    write_events(path, 10)
    with TraceReader(path, cache_size=3) as reader:
        first = reader[1]
        assert reader[1] is first  # served from the cache
        for line in range(2, 8):
            reader[line]
        assert reader[1] == first and reader[1] is not first  # evicted, then parsed again


def test_opening_does_not_index_when_asked_and_reports_progress(path: Path) -> None:
    write_events(path, 50)
    with TraceReader(path, index=False) as reader:
        assert len(reader) == 0
        reports: list[tuple[int, int]] = []
        added = reader.refresh(progress=lambda done, total: reports.append((done, total)), chunk_size=512)
        assert added == 51
        assert reports[-1][0] == reports[-1][1] == path.stat().st_size
        assert len(reports) > 1


# ----------------------------------------------------------------------------------------------
# Following


def test_a_partial_line_waits_for_its_newline(path: Path) -> None:
    write_events(path, 1)
    with TraceReader(path) as reader:
        line = TurnStartEvent.model_dump_json(turn_start(2), exclude_none=True).encode()
        append_bytes(path, line[:20])
        assert reader.refresh() == 0 and len(reader) == 2
        torn = reader.torn_tail()
        assert torn is not None and (torn.line, torn.length) == (2, 20)
        append_bytes(path, line[20:] + b"\n")
        assert reader.refresh() == 1
        assert reader[2] == turn_start(2) and reader.torn_tail() is None


def test_a_truncated_file_is_reported(path: Path) -> None:
    write_events(path, 3)
    with TraceReader(path) as reader:
        with path.open("r+b") as handle:
            handle.truncate(10)
        with pytest.raises(TraceError, match="shrank"):
            reader.refresh()


def test_wait_for_header_accepts_a_file_still_being_created(path: Path) -> None:
    path.touch()
    with TraceReader(path, wait_for_header=True) as reader:
        assert not reader.has_header and reader.refresh() == 0 and len(reader) == 0
        append_bytes(path, b'{"kind":"trace_header","format":"fpdebug.trace",')
        assert reader.refresh() == 0
        append_bytes(path, b'"schema_version":1,"producer":"p","created":"2026-01-01T12:00:00Z"}\n')
        assert reader.refresh() == 1
        assert reader.header.producer == "p"


def test_a_closed_reader_says_so(path: Path) -> None:
    write_events(path, 2)
    reader = TraceReader(path)
    reader.close()
    with pytest.raises(TraceError, match="closed"):
        reader.raw(1)
    with pytest.raises(TraceError, match="closed"):
        reader.refresh()


# ----------------------------------------------------------------------------------------------
# Bad input: a clear error, nothing lost


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nothing\.jsonl: no such file"):
        TraceReader(tmp_path / "nothing.jsonl")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="is a directory"):
        TraceReader(tmp_path)


def test_empty_file(path: Path) -> None:
    path.touch()
    with pytest.raises(TraceFormatError, match="empty"):
        TraceReader(path)


def test_no_header(path: Path) -> None:
    path.write_bytes(TurnStartEvent.model_dump_json(turn_start(1), exclude_none=True).encode() + b"\n")
    with pytest.raises(TraceFormatError, match="line 0 is not an fpdebug trace header.*turn_start"):
        TraceReader(path)


def test_not_json_at_all(path: Path) -> None:
    path.write_bytes(b"hello world\nsecond line\n")
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        TraceReader(path)


def test_a_huge_first_line_is_not_a_header(path: Path) -> None:
    path.write_bytes(b"x" * 100_000)
    with pytest.raises(TraceFormatError, match="no line end"):
        TraceReader(path)


def test_an_unfinished_header(path: Path) -> None:
    path.write_bytes(b'{"kind":"trace_header"')
    with pytest.raises(TraceFormatError, match="unfinished"):
        TraceReader(path)


def test_a_newer_schema_version_names_both_versions(path: Path) -> None:
    newer = SCHEMA_VERSION + 1
    header = {
        "kind": "trace_header",
        "format": "fpdebug.trace",
        "schema_version": newer,
        "producer": "fpdebug 9",
        "created": "2030-01-01T00:00:00Z",
        "a_field_from_the_future": 1,
    }
    path.write_bytes(orjson.dumps(header) + b"\n")
    with pytest.raises(TraceVersionError) as caught:
        TraceReader(path)
    message = str(caught.value)
    assert f"schema_version {newer}" in message and f"the {SCHEMA_VERSION} this fpdebug reads" in message
    assert str(path) in message
    assert (caught.value.found, caught.value.supported) == (newer, SCHEMA_VERSION)


def test_a_wrong_format_is_refused(path: Path) -> None:
    path.write_bytes(b'{"kind":"trace_header","format":"other","schema_version":1}\n')
    with pytest.raises(TraceFormatError, match="format is 'other'"):
        TraceReader(path)


def test_corrupt_and_non_utf8_lines_in_the_middle(path: Path) -> None:
    events = write_events(path, 2)
    corrupt_offset = path.stat().st_size
    append_bytes(path, b'{"kind":"turn_start","seq":3,"ts":\n')
    binary_offset = path.stat().st_size
    append_bytes(path, b'{"kind":"turn_start","user_message":"\xff\xfe"}\n')
    with TraceWriter.resume(path) as writer:
        assert writer.next_seq == 3
        later = [turn_start(3, "after"), turn_start(4, "more")]
        writer.append_many(later)
    with TraceReader(path) as reader:
        corrupt, binary = reader[3], reader[4]
        assert isinstance(corrupt, InvalidRecord) and (corrupt.line, corrupt.offset) == (3, corrupt_offset)
        assert "not valid JSON" in corrupt.error
        assert isinstance(binary, InvalidRecord) and (binary.line, binary.offset) == (4, binary_offset)
        assert "not valid UTF-8" in binary.error and "\\xff" in binary.preview
        assert [reader[1], reader[2], reader[5], reader[6]] == [*events, *later]
        problems = reader.problems()
        assert [(p.line, p.offset, p.code) for p in problems] == [
            (3, corrupt_offset, "invalid"),
            (4, binary_offset, "invalid"),
        ]


def test_wrong_field_types_keep_the_claimed_kind_and_seq(path: Path) -> None:
    write_events(path, 1)
    append_bytes(
        path, b'{"kind":"turn_start","seq":2,"ts":"2026-01-01T00:00:00Z","run_id":"r","user_message":5}\n'
    )
    with TraceReader(path) as reader:
        record = reader[2]
        assert isinstance(record, InvalidRecord)
        assert (record.kind, record.seq) == ("turn_start", 2)
        assert "user_message" in record.error
        assert reader.problems()[0].code == "invalid"


def test_unknown_kind_is_kept_as_opaque_and_reported(path: Path) -> None:
    write_events(path, 1)
    append_bytes(path, b'{"kind":"quantum_leap","seq":2,"run_id":"r","payload":{"x":[1,2]}}\n')
    with TraceWriter.resume(path) as writer:
        writer.append(turn_start(3))
    with TraceReader(path) as reader:
        opaque = reader[2]
        assert isinstance(opaque, OpaqueRecord)
        assert (opaque.kind, opaque.seq, opaque.run_id, opaque.line) == ("quantum_leap", 2, "r", 2)
        assert opaque.data["payload"] == {"x": [1, 2]}
        assert reader[3] == turn_start(3)
        assert [(p.line, p.code) for p in reader.problems()] == [(2, "unknown-kind")]


def test_a_second_header_in_the_middle_is_invalid(path: Path) -> None:
    write_events(path, 1)
    append_bytes(path, path.read_bytes().split(b"\n")[0] + b"\n")
    with TraceReader(path) as reader:
        assert isinstance(reader[2], InvalidRecord) and "second trace header" in reader[2].error


def test_seq_gaps_and_repeats_are_reported(path: Path) -> None:
    write_events(path, 2)
    for seq in (5, 5):
        line = TurnStartEvent.model_dump_json(turn_start(seq), exclude_none=True).encode()
        append_bytes(path, line + b"\n")
    with TraceReader(path) as reader:
        problems = reader.problems()
        assert [(p.line, p.code) for p in problems] == [(3, "seq"), (4, "seq")]
        assert "seq 5 where 3 was expected (2 missing)" in problems[0].message
        assert "repeated or out of order" in problems[1].message


def test_a_torn_last_line_is_ignored_and_reported(path: Path) -> None:
    events = write_events(path, 2)
    append_bytes(path, b'{"kind":"turn_sta')
    with TraceReader(path) as reader:
        assert len(reader) == 3
        assert [record for _, record in reader.iter_records(1)] == events
        problems = reader.problems()
        assert [(p.line, p.code) for p in problems] == [(3, "torn-tail")]
        assert problems[0].offset == path.stat().st_size - 17
        assert "17 byte(s)" in problems[0].message


def test_an_empty_line_is_invalid_but_harmless(path: Path) -> None:
    write_events(path, 1)
    append_bytes(path, b"\n")
    with TraceReader(path) as reader:
        assert isinstance(reader[2], InvalidRecord) and reader[2].error == "empty line"


def test_a_single_fifty_megabyte_line(path: Path) -> None:
    big = "é" * (25 * 1024 * 1024)  # 2 bytes each in UTF-8: a 50 MB line
    with TraceWriter.create(path) as writer:
        writer.append(turn_start(1))
        writer.append(turn_start(2, big))
        writer.append(turn_start(3))
    with TraceReader(path, cache_size=0) as reader:
        assert len(reader) == 4
        assert len(reader.raw(2)) > 50 * 1024 * 1024
        assert reader.peek(2) == Peek("turn_start", 2, "r", 1, None)
        record = reader[2]
        assert isinstance(record, TurnStartEvent) and record.user_message == big
        assert reader[3] == turn_start(3)
        assert reader.problems() == []

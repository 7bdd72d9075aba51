"""Schema version 2: requests by reference, read back as version 1 would have stored them; migrate."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel

from fpdebug.cli import main
from fpdebug.demo.registry import SCENARIOS, run_target, sample_path
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.errors import TraceError, TraceFormatError, TraceVersionError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.migrate import migrate
from fpdebug.trace.model import RunModel
from fpdebug.trace.parallel import line_verdicts
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, Record
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PromptSegment,
    RunStartEvent,
    ToolCallRecord,
    ToolSchema,
    TurnEndEvent,
)
from fpdebug.trace.writer import TraceWriter, dump_record
from tests.trace.samples import T0

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
SAMPLE_NAMES = sorted(path.name for path in SAMPLES.glob("*.fptrace.jsonl"))


def _bytes(record: Record) -> bytes:
    """A record as the version 1 writer stores it (a bad line by what the reader says of it)."""
    return dump_record(record) if isinstance(record, BaseModel) else repr(record).encode()


def _sequential(path: Path) -> list[bytes]:
    with TraceReader(path) as reader:
        return [_bytes(record) for _line, record in reader.iter_records()][1:]


def _random(path: Path) -> list[bytes]:
    """Every record read cold, last line first: each ``reader[i]`` follows its references alone."""
    with TraceReader(path, cache_size=0) as reader:
        return [_bytes(reader[line]) for line in reversed(range(1, len(reader)))][::-1]


def _answers(path: Path) -> list[str]:
    with TraceReader(path) as reader:
        return [r.final_content for _l, r in reader.iter_records() if isinstance(r, TurnEndEvent)]


def _call(seq: int, messages: list[Message], *, tools: list[ToolSchema] | None = None) -> LlmCallEvent:
    return LlmCallEvent(
        seq=seq,
        ts=T0 + timedelta(milliseconds=seq),
        run_id="r1",
        turn=1,
        iteration=seq,
        call_index=seq,
        provider="scripted",
        model="m",
        request=LlmRequest(
            system_prompt=[PromptSegment(source="base", text="You are a careful agent. " * 20)],
            messages=messages,
            tools=tools or [],
            temperature=0.0,
        ),
        response=LlmResponse(content=f"reply {seq}"),
        route="tool-calls",
    )


def _conversation(path: Path, calls: int, **writer_options: object) -> list[LlmCallEvent]:
    """One run whose history grows by two messages a call; returns the calls written."""
    tool = ToolSchema(name="fetch", description="Fetch a record.", parameters={"type": "object"})
    history: list[Message] = [Message(role="user", content="hello")]
    events: list[LlmCallEvent] = []
    with TraceWriter.create(path, durability="none", **writer_options) as writer:  # type: ignore[arg-type]
        for seq in range(1, calls + 1):
            event = _call(seq, list(history), tools=[tool])
            writer.append(event)
            events.append(event)
            history += [
                Message(role="assistant", content=f"reply {seq} " * 10),
                Message(
                    role="tool", content=f"result {seq} " * 30, tool_call_id=f"c{seq}", tool_name="fetch"
                ),
            ]
    return events


# ----------------------------------------------------------------------------------------------
# Writing and reading version 2


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_demo_run_written_in_version_2_reads_as_version_1_wrote_it(name: str, tmp_path: Path) -> None:
    paths = {}
    for version in (1, 2):
        paths[version] = run_target(
            name,
            trace_path=tmp_path / f"v{version}.jsonl",
            clock=FixedClock(T0),
            run_id="r",
            durability="none",
            schema_version=version,
        ).trace_path
    expected = _sequential(paths[1])
    assert _sequential(paths[2]) == expected
    assert _random(paths[2]) == expected
    with TraceReader(paths[2]) as reader:
        assert reader.header.schema_version == 2
        assert reader.problems() == []
        # Consumers of lines get the version 1 line, byte for byte (RunModel's facts, the Events view).
        old = paths[1].read_bytes().splitlines()
        assert [raw for _l, _o, raw in reader.iter_raw()] == old[1:]
        assert reader.raw(len(old) - 1) == old[-1]
        stored = [raw for _l, _o, raw in reader.iter_raw(stored=True)]
        assert stored == paths[2].read_bytes().splitlines()[1:] != old[1:]
        model = RunModel.build(reader)
        assert model.invalid_lines == []
        assert model.counts == RunModel.build(TraceReader(paths[1])).counts
    assert paths[2].stat().st_size < paths[1].stat().st_size


def test_bytes_per_call_stay_flat_as_the_history_grows(tmp_path: Path) -> None:
    v1 = tmp_path / "v1.jsonl"
    v2 = tmp_path / "v2.jsonl"
    events = _conversation(v1, 60, schema_version=1)
    assert _conversation(v2, 60) == events
    sizes = [len(line) for line in v2.read_bytes().splitlines()[1:]]
    # The first call defines the prompt, the tool and the first message; each later one only what is new.
    assert max(sizes[5:]) < 1.1 * min(sizes[5:]), sizes
    old = [len(line) for line in v1.read_bytes().splitlines()[1:]]
    assert old[-1] > 20 * sizes[-1]
    assert _sequential(v2) == _sequential(v1)
    assert _random(v2) == _sequential(v1)


def test_a_long_chain_is_cut_and_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = _conversation(path, 20)
    writer_lines = path.read_bytes().splitlines()
    assert all(b'"from":' in line for line in writer_lines[2:])  # every call after the first chains
    short = tmp_path / "short.jsonl"
    with TraceWriter.create(short, durability="none") as writer:
        assert writer._encoder is not None
        writer._encoder.max_chain = 3
        writer.append_many(events)
    listed = [i for i, line in enumerate(short.read_bytes().splitlines()) if b'"from":' not in line]
    assert listed == [0, 1, 5, 9, 13, 17]  # the header, then a full list every fourth call
    assert _random(short) == [dump_record(e) for e in events]


def test_a_follower_rebuilds_each_call_as_it_arrives(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    history = [Message(role="user", content="q")]
    with TraceWriter.create(path, durability="none") as writer:
        reader = TraceReader(path, wait_for_header=True)
        for seq in range(1, 6):
            event = _call(seq, list(history))
            writer.append(event)
            history.append(Message(role="assistant", content=f"a{seq}"))
            reader.refresh()
            assert reader[-1] == event
        reader.close()


def test_a_resumed_writer_after_a_torn_record_refers_to_nothing_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = _conversation(path, 3)
    with open(path, "ab") as file:
        file.write(b'{"kind":"llm_call","seq":4,"ts":"2026-')  # a crash mid-record
    history = list(events[-1].request.messages)
    with TraceWriter.resume(path, durability="none") as writer:
        later = [_call(4, history), _call(5, [*history, Message(role="assistant", content="x")])]
        writer.append_many(later)
    with TraceReader(path, cache_size=0) as reader:
        assert isinstance(reader[4], InvalidRecord)  # the fragment, closed off by the resume
        assert [reader[5], reader[6]] == later  # seq 4 and 5, one line on
        assert [p.code for p in reader.problems()] == ["invalid"]


def test_a_resumed_version_1_trace_goes_on_in_version_1(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    events = _conversation(path, 2, schema_version=1)
    history = list(events[-1].request.messages)
    with TraceWriter.resume(path, durability="none") as writer:
        writer.append(_call(3, history))
        writer.append(_call(4, history))
    assert b'"defs"' not in path.read_bytes()
    assert TraceReader(path).header.schema_version == 1


def test_a_reference_that_cannot_be_followed_is_an_invalid_line_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _conversation(path, 3)
    good = path.read_bytes().splitlines(keepends=True)
    lines = list(good)
    lines[1] = (
        b'{"kind":"turn_start","seq":1,"ts":"2026-01-01T12:00:00Z","run_id":"r1","turn":1,"user_message":"x"}\n'
    )
    path.write_bytes(b"".join(lines))
    with TraceReader(path) as reader:
        two, three = reader[2], reader[3]
        assert isinstance(two, InvalidRecord) and isinstance(three, InvalidRecord)
        assert two.error == (
            "llm_call record cannot be rebuilt: request.system_prompt: reference [1, 0]: record 1 defines 0 item(s)"
        )
        assert [p.line for p in reader.problems()] == [2, 3]
        assert [v[0] for v in line_verdicts(reader, 1, len(reader))] == [2, 3]
    lines = list(good)
    lines[3] = lines[3].replace(b'"from":2', b'"from":3')
    path.write_bytes(b"".join(lines))
    with TraceReader(path) as reader:
        three = reader[3]
        assert isinstance(three, InvalidRecord)
        assert "'from' 3 is not an earlier record" in three.error


def test_text_the_fast_path_refuses_is_written_in_full_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    broken = Message(role="user", content="half an emoji \ud83c")
    with TraceWriter.create(path, durability="none") as writer:
        writer.append(_call(1, [broken]))
        writer.append(_call(2, [broken, Message(role="assistant", content="ok")]))
    first = path.read_bytes().splitlines()[1]
    assert b'"defs"' not in first  # the record in full, as version 1 writes it
    with TraceReader(path) as reader:
        assert reader.problems() == []
        call = reader[2]
        assert isinstance(call, LlmCallEvent)
        assert call.request.messages[0].content == "half an emoji \ufffd"


# ----------------------------------------------------------------------------------------------
# Migrating


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_migrates_to_version_2_and_back_losslessly(name: str, tmp_path: Path) -> None:
    sample = SAMPLES / name
    assert TraceReader(sample).header.schema_version == 1  # the samples stay version 1 fixtures
    v2, back = tmp_path / "v2.jsonl", tmp_path / "v1.jsonl"
    done = migrate(sample, v2)
    assert (done.from_version, done.to_version, done.llm_calls) == (1, 2, _count_calls(sample))
    expected = _sequential(sample)
    assert _sequential(v2) == expected
    assert _random(v2) == expected
    assert TraceReader(v2).problems() == []
    assert v2.stat().st_size < sample.stat().st_size
    assert os.stat(v2).st_mode & 0o777 == 0o600
    migrate(v2, back, to=1)
    assert back.read_bytes() == sample.read_bytes()


@pytest.mark.parametrize("name", ["support", "zone-trap", "planted-fact"])
def test_a_migrated_trace_replays_to_the_same_answers(name: str, tmp_path: Path) -> None:
    sample = sample_path(SAMPLES, name)
    migrated = migrate(sample, tmp_path / "v2.jsonl") and tmp_path / "v2.jsonl"
    replay = ReplayProvider.from_trace(migrated)
    assert replay.calls == _count_calls(sample)
    rerun = run_target(name, trace_path=tmp_path / "replayed.jsonl", provider=replay, clock=FixedClock(T0))
    assert rerun.result.status == "completed"
    assert replay.remaining == 0
    assert _answers(rerun.trace_path) == _answers(sample)


def test_migrate_keeps_bad_lines_and_their_problems(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.jsonl"
    lines = (SAMPLES / "support.fptrace.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = b"not json\n"
    damaged.write_bytes(b"".join(lines))
    migrate(damaged, tmp_path / "v2.jsonl")
    before = [(p.line, p.code) for p in TraceReader(damaged).problems()]
    assert before and [(p.line, p.code) for p in TraceReader(tmp_path / "v2.jsonl").problems()] == before
    assert _sequential(tmp_path / "v2.jsonl") == _sequential(damaged)


def test_migrate_refuses_what_it_cannot_do_and_writes_nothing(tmp_path: Path) -> None:
    sample = SAMPLES / "leases.fptrace.jsonl"
    v2 = tmp_path / "v2.jsonl"
    migrate(sample, v2)
    with pytest.raises(TraceError, match="already schema_version 2; nothing to migrate"):
        migrate(v2, tmp_path / "again.jsonl")
    with pytest.raises(TraceError, match="already exists; pass --force"):
        migrate(sample, v2)
    with pytest.raises(TraceError, match="is the source trace"):
        migrate(v2, v2, to=1, overwrite=True)
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("hello\n")
    with pytest.raises(TraceFormatError, match="not an fpdebug trace"):
        migrate(not_a_trace, tmp_path / "x.jsonl")
    newer = tmp_path / "v3.jsonl"
    newer.write_bytes(sample.read_bytes().replace(b'"schema_version":1', b'"schema_version":3', 1))
    with pytest.raises(TraceVersionError, match="newer than the 2"):
        migrate(newer, tmp_path / "x.jsonl")
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(sample.read_bytes() + b'{"kind":"pass","seq":')
    with pytest.raises(TraceError, match="torn tail .* --drop-torn-tail"):
        migrate(torn, tmp_path / "x.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "torn.jsonl", "v2.jsonl", "v3.jsonl"]
    done = migrate(torn, tmp_path / "x.jsonl", drop_torn_tail=True)
    assert done.dropped_tail == len(b'{"kind":"pass","seq":')
    assert _sequential(tmp_path / "x.jsonl") == _sequential(sample)


def test_the_migrate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = SAMPLES / "support.fptrace.jsonl"
    out = tmp_path / "v2.jsonl"
    assert main(["migrate", str(sample), str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"{out}: schema_version 1 -> 2, ") and "llm_call record(s) rewritten" in said
    assert main(["validate", str(out)]) == 0
    assert "schema_version 2" in capsys.readouterr().out
    assert main(["migrate", str(out), str(tmp_path / "again.jsonl")]) == 2
    assert "already schema_version 2" in capsys.readouterr().err
    assert main(["migrate", str(out), str(tmp_path / "v1.jsonl"), "--to", "1"]) == 0
    assert (tmp_path / "v1.jsonl").read_bytes() == sample.read_bytes()


def _count_calls(path: Path) -> int:
    with TraceReader(path) as reader:
        return sum(isinstance(r, LlmCallEvent) for _l, r in reader.iter_records())


def test_the_run_start_of_a_sample_is_untouched_by_migration(tmp_path: Path) -> None:
    sample = SAMPLES / "cascade.fptrace.jsonl"
    migrate(sample, tmp_path / "v2.jsonl")
    old, new = sample.read_bytes().splitlines(), (tmp_path / "v2.jsonl").read_bytes().splitlines()
    assert new[0] == old[0].replace(b'"schema_version":1', b'"schema_version":2')
    kept = [i for i, line in enumerate(old[1:], 1) if not line.startswith(b'{"kind":"llm_call"')]
    assert all(new[i] == old[i] for i in kept)
    assert isinstance(TraceReader(tmp_path / "v2.jsonl")[1], RunStartEvent)


def test_an_integer_past_64_bits_is_rebuilt_exactly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    asked = Message(
        role="assistant", tool_calls=[ToolCallRecord(id="c1", name="fetch", args={"n": 2**70 + 1})]
    )
    calls = [_call(1, [asked]), _call(2, [asked, Message(role="tool", content="ok", tool_call_id="c1")])]
    with TraceWriter.create(path, durability="none") as writer:
        writer.append_many(calls)
    assert _random(path) == [dump_record(call) for call in calls] == _sequential(path)

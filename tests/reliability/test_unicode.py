"""Text UTF-8 cannot encode (lone UTF-16 surrogates) never fails a run nor loses a record.

A Python string can hold a lone surrogate: an emoji cut in half by a JS service (``"\\ud83c"``), or
the ``surrogateescape`` stand-in of a non-UTF-8 byte in a file name (``os.listdir``). The writer
writes each as U+FFFD, the engine hands the model that same text, and the reader accepts a
third-party line that spells one as the JSON escape ``\\ud800``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, classify_line, well_formed_text, well_formed_value
from fpdebug.trace.schema import ErrorInfo, LlmCallEvent, ToolResultEvent, TurnStartEvent
from fpdebug.trace.writer import TraceWriter, dump_record
from tests.conftest import T0

HALF_EMOJI = "Party time \ud83c"
"""An emoji cut after its high surrogate."""
BAD_NAME = os.fsdecode(b"caf\xe9.txt")
"""A Latin-1 file name as ``os.listdir`` returns it on a UTF-8 system: ``caf\\udce9.txt``."""
FFFD = "\ufffd"


def _result(**fields: object) -> ToolResultEvent:
    base: dict[str, object] = {
        "seq": 1,
        "ts": T0,
        "run_id": "r",
        "turn": 1,
        "iteration": 1,
        "tool_call_id": "c1",
        "tool_name": "t",
        "result": "ok",
    }
    return ToolResultEvent(**{**base, **fields})


# ----------------------------------------------------------------------------------------------
# The repair itself


def test_a_lone_surrogate_becomes_u_fffd_and_a_pair_is_joined() -> None:
    assert well_formed_text(HALF_EMOJI) == f"Party time {FFFD}"
    assert well_formed_text(BAD_NAME) == f"caf{FFFD}.txt"
    assert well_formed_text("a\ud83c\udf89b") == "a\U0001f389b"  # a pair held as two code points
    assert well_formed_text("\udf89\ud83c x") == f"{FFFD}{FFFD} x"  # the wrong order is two halves
    clean = "plain é 🎉 text"
    assert well_formed_text(clean) is clean


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x1FFFF), max_size=30))
def test_the_repair_always_encodes_and_only_touches_surrogates(text: str) -> None:
    repaired = well_formed_text(text)
    repaired.encode("utf-8")  # never raises
    assert repaired == _reference_repair(text)
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert repaired is text


def _reference_repair(text: str) -> str:
    """Character by character: a high surrogate then a low one is their pair, any other surrogate U+FFFD."""
    out: list[str] = []
    at = 0
    while at < len(text):
        code = ord(text[at])
        if 0xD800 <= code <= 0xDBFF and at + 1 < len(text) and 0xDC00 <= ord(text[at + 1]) <= 0xDFFF:
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + (ord(text[at + 1]) - 0xDC00)))
            at += 2
            continue
        out.append(FFFD if 0xD800 <= code <= 0xDFFF else text[at])
        at += 1
    return "".join(out)


def test_well_formed_value_walks_keys_and_values_and_keeps_clean_objects() -> None:
    clean = {"a": ["b", 1, None, {"c": 2.5}]}
    assert well_formed_value(clean) is clean
    assert well_formed_value({BAD_NAME: [HALF_EMOJI, 3], "ok": ("x",)}) == {
        f"caf{FFFD}.txt": [f"Party time {FFFD}", 3],
        "ok": ("x",),
    }


# ----------------------------------------------------------------------------------------------
# The writer


def test_a_record_with_lone_surrogates_is_written_with_u_fffd_the_rest_intact() -> None:
    event = _result(
        args={BAD_NAME: [BAD_NAME, 1.5, None]},
        result=HALF_EMOJI,
        status="failure",
        error=ErrorInfo(type="OSError", message=f"cannot open {BAD_NAME}"),
    )
    line = dump_record(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    repaired = ToolResultEvent.model_validate_json(line)
    assert repaired == event.model_copy(
        update={
            "args": {f"caf{FFFD}.txt": [f"caf{FFFD}.txt", 1.5, None]},
            "result": f"Party time {FFFD}",
            "error": ErrorInfo(type="OSError", message=f"cannot open caf{FFFD}.txt"),
        }
    )
    # The repaired line is the one a record holding the repaired text writes, byte for byte.
    assert line == dump_record(repaired)


def test_a_record_that_fails_for_another_reason_still_says_why() -> None:
    from pydantic_core import PydanticSerializationError

    with pytest.raises(PydanticSerializationError, match="unknown type"):
        dump_record(_result(args={"value": object()}, result=HALF_EMOJI))


def test_the_writer_writes_such_a_record_and_it_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append(_result(result=HALF_EMOJI))
        writer.append_many([TurnStartEvent(seq=2, ts=T0, run_id="r", turn=2, user_message=BAD_NAME)])
    with TraceReader(path) as reader:
        assert reader.problems() == []
        first, second = reader[1], reader[2]
    assert isinstance(first, ToolResultEvent) and first.result == f"Party time {FFFD}"
    assert isinstance(second, TurnStartEvent) and second.user_message == f"caf{FFFD}.txt"


# ----------------------------------------------------------------------------------------------
# The engine: the model reads what the trace records


@tool(description="Fetch a title.")
def fetch_title() -> str:
    return HALF_EMOJI


@tool(description="List a directory.")
def list_dir() -> dict[str, object]:
    return {"files": [BAD_NAME, "ok.txt"]}


def test_a_tool_returning_a_lone_surrogate_does_not_fail_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    provider = ScriptedProvider(
        [
            ScriptedReply.tool_call("fetch_title", {}),
            ScriptedReply.tool_call("list_dir", {}),
            "Done.",
        ]
    )
    agent = Agent("surr").system_prompt("You fetch titles.").tools(fetch_title, list_dir)
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run("Fetch the title", provider=provider, sink=sink, clock=clock)
    assert result.status == "completed"
    with TraceReader(path) as reader:
        assert reader.problems() == []
        records = [record for _, record in reader.iter_records(1)]
    results = [r for r in records if isinstance(r, ToolResultEvent)]
    assert [r.result for r in results] == [
        f"Party time {FFFD}",
        json.dumps({"files": [f"caf{FFFD}.txt", "ok.txt"]}, ensure_ascii=False),
    ]
    # What the model read is what the trace holds: in the requests it received and in the
    # llm_call records of the trace.
    read = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    assert read == [r.result for r in results]
    last_call = [r for r in records if isinstance(r, LlmCallEvent)][-1]
    assert [m.content for m in last_call.request.messages if m.role == "tool"] == read


def test_a_tool_raising_with_a_lone_surrogate_in_its_message_is_a_failure_the_model_reads_as_recorded(
    tmp_path: Path,
) -> None:
    def open_file() -> str:
        """Open the file."""
        raise FileNotFoundError("no such file: caf\udce9.txt")  # a surrogateescape file name

    path = tmp_path / "run.jsonl"
    provider = ScriptedProvider([ScriptedReply.tool_call("open_file", {}), "Done."])
    agent = Agent("surr").tools(open_file)
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run("Open it", provider=provider, sink=sink, clock=clock)
    assert result.status == "completed"
    with TraceReader(path) as reader:
        assert reader.problems() == []
        (failed,) = [r for _, r in reader.iter_records(1) if isinstance(r, ToolResultEvent)]
    assert failed.status == "failure" and failed.error is not None
    assert failed.error.message == f"no such file: caf{FFFD}.txt"
    read = [m.content for m in provider.requests[-1].messages if m.role == "tool"]
    assert read == [failed.result] and FFFD in failed.result


def test_the_command_line_run_of_such_an_agent_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "surr.py"
    module.write_text(
        "from fpdebug.engine import Agent, tool\n"
        "from fpdebug.engine.providers import ScriptedProvider, ScriptedReply as R\n"
        "USER_MESSAGES = ['Fetch the title']\n"
        "@tool(description='Fetch a title.')\n"
        "def fetch_title() -> str:\n"
        "    return 'Party time \\ud83c'\n"
        "def build_agent():\n"
        "    return Agent('surr').system_prompt('You fetch titles.').tools(fetch_title)\n"
        "def scripted_provider():\n"
        "    return ScriptedProvider([R.tool_call('fetch_title', {}), 'The title is Party time.'])\n"
    )
    trace = tmp_path / "surr.fptrace.jsonl"
    assert main(["run", str(module), "--trace", str(trace)]) == 0
    assert main(["validate", str(trace)]) == 0
    capsys.readouterr()
    assert f'"result":"Party time {FFFD}"'.encode() in trace.read_bytes()


def _requests_are_the_trace(path: Path, provider: ScriptedProvider) -> list[object]:
    """The trace's records, after checking each request the provider received is the one recorded."""
    with TraceReader(path) as reader:
        assert reader.problems() == []
        records = [record for _, record in reader.iter_records(1)]
    recorded = [r.request for r in records if isinstance(r, LlmCallEvent)]
    assert recorded == list(provider.requests) and len(recorded) >= 2
    return records


class Page(BaseModel):
    title: str


class Shown:
    """An object whose text is only its ``str()`` (text_of's JSON fallback)."""

    def __str__(self) -> str:
        return HALF_EMOJI


def page() -> Page:
    """Fetch a page."""
    return Page(title=HALF_EMOJI)


def shown() -> dict[str, object]:
    """Show a value."""
    return {"value": Shown()}


@pytest.mark.parametrize("fetch", [page, shown], ids=["pydantic-model", "object-str"])
def test_a_result_repaired_only_once_dumped_is_read_by_the_model_as_recorded(
    tmp_path: Path, fetch: object
) -> None:
    path = tmp_path / "run.jsonl"
    name = fetch.__name__  # type: ignore[attr-defined]
    provider = ScriptedProvider([ScriptedReply.tool_call(name, {}), "Done."])
    clock = FixedClock(T0)
    agent = Agent("surr").tools(fetch)  # type: ignore[arg-type]
    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent.run("Go", provider=provider, sink=sink, clock=clock)
    assert result.status == "completed"
    records = _requests_are_the_trace(path, provider)
    (done,) = [r for r in records if isinstance(r, ToolResultEvent)]
    assert f"Party time {FFFD}" in done.result
    assert [m.content for m in provider.requests[-1].messages if m.role == "tool"] == [done.result]


def test_a_user_message_with_a_lone_surrogate_is_sent_as_recorded(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    provider = ScriptedProvider([ScriptedReply.tool_call("fetch_title", {}), "Done."])
    clock = FixedClock(T0)
    message = f"Read {BAD_NAME}"  # `--message "$(ls)"` in a directory with a Latin-1 file name
    with TraceFileSink.create(path, clock=clock) as sink:
        result = Agent("surr").tools(fetch_title).run(message, provider=provider, sink=sink, clock=clock)
    assert result.status == "completed"
    records = _requests_are_the_trace(path, provider)
    (start,) = [r for r in records if isinstance(r, TurnStartEvent)]
    assert start.user_message == f"Read caf{FFFD}.txt"
    assert [m.content for m in provider.requests[0].messages if m.role == "user"] == [start.user_message]
    assert result.turns[0].user_message == start.user_message


def test_tool_call_arguments_with_a_lone_surrogate_reach_the_tool_as_recorded(tmp_path: Path) -> None:
    received: list[dict[str, object]] = []

    def echo(q: str, tags: list[str]) -> str:
        """Echo the query."""
        received.append({"q": q, "tags": tags})
        return "ok"

    path = tmp_path / "run.jsonl"
    args = {"q": "a\ud83c", "tags": [BAD_NAME]}
    provider = ScriptedProvider(
        [
            ScriptedReply.tool_call("echo", args, content="Half \udc99 thought."),
            "Done.",
        ]
    )
    clock = FixedClock(T0)
    with TraceFileSink.create(path, clock=clock) as sink:
        result = Agent("surr").tools(echo).run("Go", provider=provider, sink=sink, clock=clock)
    assert result.status == "completed"
    records = _requests_are_the_trace(path, provider)
    (done,) = [r for r in records if isinstance(r, ToolResultEvent)]
    assert done.args == {"q": f"a{FFFD}", "tags": [f"caf{FFFD}.txt"]}
    assert received == [done.args]
    # The conversation echoes the model's request as the trace records it, text included.
    (echoed,) = [m for m in provider.requests[-1].messages if m.role == "assistant"]
    assert echoed.content == f"Half {FFFD} thought."
    assert echoed.tool_calls is not None and echoed.tool_calls[0].args == done.args


# ----------------------------------------------------------------------------------------------
# The reader: a lone surrogate escape written by someone else


def _third_party_line(text_escape: str) -> bytes:
    return (
        '{"kind":"turn_start","seq":1,"ts":"2026-01-01T12:00:00Z","run_id":"r","turn":1,'
        f'"user_message":"hi {text_escape} there"}}'
    ).encode()


def test_a_line_with_a_lone_surrogate_escape_is_read_with_u_fffd() -> None:
    for escape in ("\\ud800", "\\udc80", "\\ud83c\\ud83c"):
        raw = _third_party_line(escape)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(raw)  # the control: the fast parser refuses it
        record = classify_line(1, 0, raw)
        assert isinstance(record, TurnStartEvent), record
        assert record.user_message == f"hi {FFFD * escape.count('u')} there"


def test_a_surrogate_line_that_is_wrong_otherwise_is_explained_not_called_bad_json() -> None:
    raw = _third_party_line("\\ud800").replace(b'"turn":1,', b'"turn":"one",')
    record = classify_line(4, 0, raw)
    assert isinstance(record, InvalidRecord)
    assert "turn_start record does not match the schema" in record.error and "turn" in record.error


def test_a_trace_with_such_a_line_validates_and_keeps_every_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "third.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append(TurnStartEvent(seq=1, ts=T0, run_id="r", turn=1, user_message="first"))
    with path.open("ab") as handle:
        handle.write(_third_party_line("\\ud800").replace(b'"seq":1', b'"seq":2') + b"\n")
    with TraceReader(path) as reader:
        assert reader.problems() == []
        assert reader.peek(2).seq == 2
        second = reader[2]
    assert isinstance(second, TurnStartEvent) and second.user_message == f"hi {FFFD} there"
    assert main(["validate", str(path)]) == 0
    capsys.readouterr()
    with TraceWriter.resume(path) as writer:  # the resume scan reads the line too
        assert writer.next_seq == 3

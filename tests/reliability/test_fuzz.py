"""Bad input never crashes the reader, the CLI (every command that reads a trace) or the debugger
(issue 9 §2, issue 18).

The short fuzz runs of ``bench/fuzz.py``'s four targets (a few seconds each), then the inputs too
big or too specific for a random run, each as one example: a 50 MB garbage line between good
records, nesting beyond the parsers' limits, integers beyond 64 bits. The long run is
``python -m bench.fuzz --minutes N`` (figures in docs/guide/reliability.md). Already covered
in ``tests/trace``: one bad line of each kind (``test_reader.py``), a valid 50 MB record, any
sequence of valid events reading back equal (``test_properties.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from bench.fuzz import (
    Case,
    cases,
    check_cli,
    check_commands,
    check_reader,
    check_render,
    unsafe_characters,
)
from fpdebug.cli import main
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord
from fpdebug.trace.redact import Redactor
from fpdebug.trace.schema import PassEvent, ToolResultEvent, TurnStartEvent
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.events import EventList, event_document
from fpdebug.views.session import TraceSession
from tests.conftest import T0


def fuzz(examples: int) -> settings:
    """A short fuzz run: no deadline (file I/O), no example database (nothing to replay)."""
    return settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "case.fptrace.jsonl"


@fuzz(150)
@given(cases)
def test_the_reader_keeps_every_good_record_among_garbage(scratch: Path, case: Case) -> None:
    check_reader(case, scratch)


@fuzz(60)
@given(cases)
def test_validate_summary_and_backtrack_exit_0_1_or_2_and_print_nothing_unsafe(
    scratch: Path, case: Case
) -> None:
    check_cli(case, scratch)


@fuzz(30)
@given(cases)
def test_report_export_diff_ledger_and_import_exit_as_documented_and_print_nothing_unsafe(
    scratch: Path, case: Case
) -> None:
    check_commands(case, scratch)


@fuzz(100)
@given(cases)
def test_the_debuggers_rows_and_documents_render_any_record_inert(scratch: Path, case: Case) -> None:
    check_render(case, scratch)


# ----------------------------------------------------------------------------------------------
# Single examples


def _event(seq: int, **fields: object) -> ToolResultEvent:
    return ToolResultEvent(
        seq=seq,
        ts=T0 + timedelta(seconds=seq),
        run_id="r",
        turn=1,
        iteration=seq,
        tool_call_id=f"c{seq}",
        tool_name="t",
        **fields,  # type: ignore[arg-type]
    )


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_fifty_megabyte_garbage_line_between_good_records(tmp_path: Path) -> None:
    path = tmp_path / "big.fptrace.jsonl"
    before, after = _event(1, result="before"), _event(3, result="after")
    with TraceWriter.create(path, redactor=Redactor.off()) as writer:
        writer.append(before)
    garbage = b'{"kind":"tool_result","seq":2,"result":"' + b"\x1b[2J\xff\xfe" * (50 * 1024 * 1024 // 6)
    with path.open("ab") as handle:
        handle.write(garbage + b"\n")
    with TraceWriter.resume(path, redactor=Redactor.off()) as writer:
        writer._next_seq = 3  # the garbage line took seq 2's place
        writer.append(after)
    with TraceReader(path, cache_size=0) as reader:
        assert len(reader) == 4 and reader[1] == before and reader[3] == after
        bad = reader[2]
        assert isinstance(bad, InvalidRecord) and bad.length == len(garbage)
        assert len(bad.preview) < 1000 and bad.kind is None
    code, out, _ = _cli("validate", str(path))
    assert code == 1 and out.count("\n") == 1 and ":2: offset " in out and "not valid UTF-8" in out
    assert not unsafe_characters(out)
    code, out, _ = _cli("summary", str(path))
    assert code == 0 and "1 invalid" in out
    with TraceReader(path, index=False) as reader:  # the debugger's row and detail of that line
        session = TraceSession(reader)
        while not session.index_done:
            session.index_step()
        while session.model_step():
            pass
        rows = EventList(session)
        rows._palette = Palette()
        row = rows.render_row(2, 200).plain
        assert row.split()[:2] == ["2", "INVALID"] and not unsafe_characters(row)
        detail = event_document(session, 2, Palette())
        assert detail and len(detail) < 100


def test_nesting_beyond_the_parsers_limits_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.fptrace.jsonl"
    with TraceWriter.create(path, redactor=Redactor.off()) as writer:
        writer.append(_event(1, result="ok"))
    deep = '{"kind":"tool_result","seq":2,"args":' + '{"a":' * 100_000 + "1" + "}" * 100_001
    with path.open("a") as handle:
        handle.write(deep + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    with TraceReader(path) as reader:
        assert reader[1] == _event(1, result="ok")
        assert isinstance(reader[2], InvalidRecord) and isinstance(reader[3], InvalidRecord)
        assert [p.code for p in reader.problems()] == ["invalid", "invalid"]
    assert _cli("validate", str(path))[0] == 1
    assert _cli("summary", "--json", str(path))[0] == 0


def test_integers_beyond_64_bits_survive_exactly(tmp_path: Path) -> None:
    path = tmp_path / "huge.fptrace.jsonl"
    huge = 2**200 + 12345
    good = _event(1, result="ok", args={"order": huge, "negative": -huge})
    with TraceWriter.create(path, redactor=Redactor.off()) as writer:
        writer.append(good)
    counted = {
        "kind": "pass",
        "seq": 2,
        "ts": T0.isoformat(),
        "run_id": "r",
        "active_ids": [],
        "evaluated_total": huge,
    }  # written by something else: valid, with a count beyond int64
    with path.open("a") as handle:
        handle.write(json.dumps(counted) + "\n")
        handle.write(f'{{"kind":"tool_result","seq":1e999,"args":{{"x":{huge}}}}}\n')  # seq: infinity
    with TraceReader(path) as reader:
        record = reader[1]
        assert isinstance(record, ToolResultEvent) and record.args == {"order": huge, "negative": -huge}
        assert isinstance(reader[2], PassEvent) and reader[2].evaluated_total == huge
        assert isinstance(reader[3], InvalidRecord)
    code, out, _ = _cli("summary", "--json", str(path))
    assert code == 0 and json.loads(out)["problems_by_code"] == {"invalid": 1}


def test_a_line_of_wrong_types_for_every_field_keeps_its_neighbours(tmp_path: Path) -> None:
    path = tmp_path / "types.fptrace.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append(TurnStartEvent(seq=1, ts=T0, run_id="r", turn=1, user_message="hi"))
    wrong = {"kind": "turn_start", "seq": "2", "ts": 5, "run_id": ["r"], "turn": {}, "user_message": None}
    with path.open("a") as handle:
        handle.write(json.dumps(wrong) + "\n")
    with TraceWriter.resume(path) as writer:
        writer.append(TurnStartEvent(seq=2, ts=T0, run_id="r", turn=2, user_message="again"))
    with TraceReader(path) as reader:
        bad = reader[2]
        assert isinstance(bad, InvalidRecord) and bad.kind == "turn_start"
        assert "does not match the schema" in bad.error
        assert reader[3] == TurnStartEvent(seq=2, ts=T0, run_id="r", turn=2, user_message="again")

"""``fpdebug validate`` and ``fpdebug summary``: output, exit codes, and inert printing of trace text."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from fpdebug.cli import main
from fpdebug.trace.schema import SCHEMA_VERSION, RunStartEvent, TurnStartEvent
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0
from tests.trace.samples import support_run


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    script, _ = support_run()
    return script.write(tmp_path / "support.jsonl")


def turn_line(seq: int) -> bytes:
    event = TurnStartEvent(seq=seq, ts=T0, run_id="r1", turn=1, user_message="hi")
    return event.model_dump_json(exclude_none=True).encode() + b"\n"


def test_validate_a_clean_trace(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(clean)]) == 0
    out = capsys.readouterr().out
    lines = len(clean.read_bytes().splitlines())
    assert out == f"{clean}: ok ({lines} lines, schema_version {SCHEMA_VERSION})\n"


def test_counts_of_one_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "header-only.jsonl"
    TraceWriter.create(path, clock=None).close()  # the header line and nothing else
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: ok (1 line, schema_version {SCHEMA_VERSION})\n"
    assert main(["summary", str(path)]) == 0
    second = capsys.readouterr().out.splitlines()[1]
    assert second.startswith("1 line (0 events), ") and " 1 lines" not in second


def test_validate_lists_every_problem_by_line_and_offset(
    clean: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = clean.read_bytes().splitlines(keepends=True)
    events = len(lines) - 1
    bad = [
        b'{"kind":"pass","seq":\n',  # corrupt JSON
        b'{"kind":"turn_start","user_message":"\xff"}\n',  # not UTF-8
        b'{"kind":"warp_drive","seq":99}\n',  # unknown kind, and a seq gap
    ]
    clean.write_bytes(b"".join([*lines, *bad, turn_line(100), b'{"kind":"tu']))
    offsets = [sum(map(len, lines))]
    for chunk in [*bad, turn_line(100)]:
        offsets.append(offsets[-1] + len(chunk))
    assert main(["validate", str(clean)]) == 1
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    first = events + 1
    assert [line.split(": ", 2)[:2] for line in out] == [
        [f"{clean}:{first}", f"offset {offsets[0]}"],
        [f"{clean}:{first + 1}", f"offset {offsets[1]}"],
        [f"{clean}:{first + 2}", f"offset {offsets[2]}"],
        [f"{clean}:{first + 2}", f"offset {offsets[2]}"],
        [f"{clean}:{first + 4}", f"offset {offsets[4]}"],
    ]
    assert "not valid JSON" in out[0] and "not valid UTF-8" in out[1]
    assert "unknown kind 'warp_drive'" in out[2] and "seq 99 where" in out[3]
    assert "torn tail: 11 byte(s)" in out[4]
    assert captured.err == "5 problems\n"


def test_validate_reports_a_file_that_is_not_a_trace_on_line_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    assert main(["validate", str(empty)]) == 1
    assert capsys.readouterr().out.startswith(f"{empty}:0: offset 0: the file is empty")
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(turn_line(1))
    assert main(["validate", str(headless)]) == 1
    assert "line 0 is not an fpdebug trace header" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["missing.jsonl", "."])
def test_validate_a_path_it_cannot_read_is_an_error(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fpdebug validate: error: ") and str(path) in err
    assert ("no such file" if name != "." else "is a directory") in err


def test_validate_a_newer_schema_is_an_error_naming_both_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "future.jsonl"
    header = {
        "kind": "trace_header",
        "format": "fpdebug.trace",
        "schema_version": SCHEMA_VERSION + 7,
        "producer": "x",
        "created": "2030-01-01T00:00:00Z",
    }
    path.write_bytes(orjson.dumps(header) + b"\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"schema_version {SCHEMA_VERSION + 7}" in err and f"the {SCHEMA_VERSION} this fpdebug reads" in err


def test_validate_prints_trace_text_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hostile.jsonl"
    TraceWriter.create(path).close()
    with path.open("ab") as handle:
        handle.write(orjson.dumps({"kind": "\x1b]52;c;cHduZWQ=\x07\u202e", "seq": 1}) + b"\n")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b]52" in out and "\\u202e" in out


def test_summary_text(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(clean)]) == 0
    out = capsys.readouterr().out
    assert "0 problems" in out
    assert "run r1: completed; provider scripted, model m-1" in out
    assert "1 turn, 4 iterations, 4 LLM calls, 4 tool results, tokens 490 in / 49 out" in out
    assert "leases: 3 granted, 2 pruned (1 spent, 1 tenure-ended), 1 alive" in out
    assert "map skill-map: engaged, 1 park, 1 re-engagement" in out
    assert "routing: 1 route conflict, 1 skill rejected, 1 reroute superseded" in out
    kinds = dict(line.split() for line in out.split("events by kind:\n")[1].splitlines())
    assert kinds["pass"] == "4" and kinds["lease_grant"] == "3" and kinds["run_end"] == "1"


def test_summary_json(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script, _ = support_run()
    assert main(["summary", "--json", str(clean)]) == 0
    facts = json.loads(capsys.readouterr().out)
    events = len(script.events)
    assert (facts["lines"], facts["events"], facts["problems"]) == (events + 1, events, 0)
    (run,) = facts["runs"]
    assert (run["status"], run["turns"], run["iterations"], run["input_tokens"], run["output_tokens"]) == (
        "completed",
        1,
        4,
        490,
        49,
    )
    assert run["leases"] == {"granted": 3, "pruned": 2, "spent": 1, "tenure_ended": 1, "alive": 1}
    assert (run["parks"], run["reengagements"]) == (1, 1)
    assert sum(facts["counts"].values()) == len(script.events)


def test_summary_counts_problems_and_keeps_going(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with clean.open("ab") as handle:
        handle.write(b"garbage\n" + b'{"kind":"later_kind","seq":35}\n' + b'{"kind":"tu')
    assert main(["summary", "--json", str(clean)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["problems_by_code"] == {"invalid": 1, "torn-tail": 1, "unknown-kind": 1}
    assert facts["runs"][0]["status"] == "completed"


def test_summary_prints_trace_text_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hostile.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append(
            RunStartEvent(seq=1, ts=T0, run_id="r\x1b[2J", provider="p\u202e", model="m\r", max_iterations=1)
        )
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    assert "run r\\x1b[2J" in out
    assert main(["summary", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["run_id"] == "r\x1b[2J"


def test_summary_of_something_that_is_not_a_trace_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.jsonl"
    path.touch()
    assert main(["summary", str(path)]) == 2
    assert "empty" in capsys.readouterr().err

"""The runs scan's fast reader (fpdebug.views.runs.scan): the same facts as DuckDB's JSON reader.

The fast reader cuts a writer-shaped ``llm_call`` line into its head and its response and parses only
those; every other line is parsed whole. Each test here scans a folder with both readers and
compares, on traces crafted to fool a careless cut: text that quotes the keys the cut looks for,
real nested ``response`` keys in the request and in a tool's arguments, keys in another order,
calls without a reply, blank lines and CRLF, a file that is not UTF-8.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from fpdebug.views.runs import scan


def _both(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scan of every file in ``folder`` by the fast reader, and by the reference reader."""
    files = sorted(str(path) for path in folder.iterdir())
    fast = {path: asdict(found) for path, found in scan.scan_files(files).items()}
    with monkeypatch.context() as patch:
        patch.setattr(scan, "_FAST_MAX_BYTES", -1)  # every file is "too large": read_json reads them all
        reference = {path: asdict(found) for path, found in scan.scan_files(files).items()}
    return fast, reference


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    # orjson keeps each dict's key order: the writer's order unless a test changes it.
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))


@pytest.fixture
def folder(demo_runs: Path, tmp_path: Path) -> Path:
    target = tmp_path / "runs"
    shutil.copytree(demo_runs, target)
    return target


def _run(found: dict[str, Any], name: str) -> dict[str, Any]:
    (run,) = next(value for path, value in found.items() if path.endswith(name))["runs"]
    return run  # type: ignore[no-any-return]


def test_the_demo_runs_scan_the_same_either_way(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, reference = _both(folder, monkeypatch)
    assert fast == reference
    assert _run(fast, "support.fptrace.jsonl")["input_tokens"] == 1920


def test_quoted_and_nested_keys_do_not_fool_the_cut(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder / "support.fptrace.jsonl"
    records = _records(path)
    calls = [record for record in records if record["kind"] == "llm_call"]
    fake = ',"response":{"model":"evil","usage":{"input_tokens":999999}},"kind":"run_end","status":"failed"'
    # 1. Text that quotes the keys (a user message, an answer): its quotes are escaped in the line.
    calls[0]["request"]["messages"][0]["content"] += fake + ',"request":{'
    # 2. A real "response" object nested in the request (a tool schema may well have one).
    calls[1]["request"]["tools"][0]["parameters"] = {"response": {"usage": {"input_tokens": 888888}}}
    # 3. A real one in the reply's tool arguments, after the top-level "response" key.
    calls[2]["response"]["tool_calls"][0]["args"] = {"response": {"usage": {"input_tokens": 777777}}}
    # 4. An answer that quotes a run_end record.
    for record in records:
        if record["kind"] == "turn_end":
            record["final_content"] = '{"kind":"run_end","status":"failed"}\n' + record["final_content"]
    _write(path, records)
    fast, reference = _both(folder, monkeypatch)
    assert fast == reference
    run = _run(fast, "support.fptrace.jsonl")
    assert (run["input_tokens"], run["status"], run["llm_calls"]) == (1920, "completed", 5)
    assert "evil" not in run["models"]
    assert run["answer"].startswith('{"kind":"run_end"')


def test_a_call_in_another_key_order_or_without_a_reply_is_parsed_whole(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = folder / "leases.fptrace.jsonl"
    records = _records(path)
    calls = [index for index, record in enumerate(records) if record["kind"] == "llm_call"]
    # The turn and iteration after the request: a head cut before it lacks them.
    first = records[calls[0]]
    turn, iteration = first.pop("turn"), first.pop("iteration")
    records[calls[0]] = {**first, "turn": turn, "iteration": iteration}
    # A call that failed: no response key, an error instead (no usage: no price, not $0).
    failed = records[calls[1]]
    del failed["response"]
    failed["error"] = {"type": "ProviderError", "message": 'it said ,"response":{"usage":{}}'}
    _write(path, records)
    fast, reference = _both(folder, monkeypatch)
    assert fast == reference
    run = _run(fast, "leases.fptrace.jsonl")
    assert run["iterations"] == 3 and run["llm_calls"] == 3
    assert run["cost"]["unpriced"] == {"no price: scripted": 3}


def test_blank_lines_crlf_and_broken_lines_count_alike(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder / "planted-fact.fptrace.jsonl"
    lines = path.read_bytes().splitlines()
    call = next(index for index, line in enumerate(lines) if line.startswith(b'{"kind":"llm_call"'))
    torn = lines[call][: len(lines[call]) // 2]  # a torn call: its head parses, its tail does not
    mangled = [*lines[:3], b"", b"  \t", b"[1, 2]", b'"text"', b"{broken", torn, *lines[3:]]
    path.write_bytes(b"\r\n".join(mangled) + b"\r\n")
    fast, reference = _both(folder, monkeypatch)
    assert fast == reference
    found = next(value for key, value in fast.items() if key.endswith("planted-fact.fptrace.jsonl"))
    assert (found["lines"], found["bad_lines"]) == (len(lines) + 4, 4)


def test_a_file_that_is_not_utf8_is_read_by_the_json_reader(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = folder / "zone-trap.fptrace.jsonl"
    path.write_bytes(path.read_bytes() + b'{"kind":"note","text":"\xff\xfe"}\n')
    fast, reference = _both(folder, monkeypatch)
    assert fast == reference
    found = next(value for key, value in fast.items() if key.endswith("zone-trap.fptrace.jsonl"))
    assert found["error"] is None and len(found["runs"]) == 1 and found["runs"][0]["parks"] == 1


def test_a_damaged_request_between_a_sound_head_and_tail_is_not_seen(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one thing the fast reader gives up (docs/guide/runs.md): the request's bytes are not parsed.
    path = folder / "leases.fptrace.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    call = next(index for index, line in enumerate(lines) if line.startswith(b'{"kind":"llm_call"'))
    lines[call] = lines[call].replace(b'"messages":[', b'"messages":[[', 1)
    path.write_bytes(b"".join(lines))
    fast, reference = _both(folder, monkeypatch)
    name = str(path)
    assert (fast[name]["bad_lines"], reference[name]["bad_lines"]) == (0, 1)
    assert fast[name]["runs"][0]["llm_calls"] == 3 and reference[name]["runs"][0]["llm_calls"] == 2

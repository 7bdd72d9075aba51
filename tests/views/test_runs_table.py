"""The runs table (fpdebug.views.runs): rows, filters, sort, the per-trace cache, and every bad input."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from fpdebug.demo import SCENARIOS
from fpdebug.views.runs import RunsTable, build_table
from fpdebug.views.runs.cache import cache_path
from fpdebug.views.runs.table import NO_START_NOTE, RUNNING_NOTE


@pytest.fixture
def runs(demo_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the demo runs, and a private cache for this test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "runs"
    shutil.copytree(demo_runs, folder)
    return folder


def _agents(rows: list) -> list[str]:  # type: ignore[type-arg]
    return [row.agent for row in rows]


def test_one_row_per_demo_run_with_its_facts(runs: Path) -> None:
    table = build_table([str(runs)])
    assert table.entries == []
    assert sorted(_agents(table.rows)) == sorted(path.name.split(".")[0] for path in runs.iterdir())
    support = next(row for row in table.rows if row.agent == "support")
    assert (support.status, support.source, support.turns, support.iterations) == (
        "completed",
        "native",
        1,
        5,
    )
    assert support.leases == 2 and support.lease_ids == ["refund-policy", "wire-format"]
    assert support.cost["text"] == "no price: scripted" and support.cost["usd"] is None
    assert support.answer_first_line.startswith("I refunded the duplicate charge")
    zone = next(row for row in table.rows if row.agent == "zone-trap")
    assert zone.parks == 1
    amount = next(row for row in table.rows if row.agent == "unsupported-amount")
    assert amount.unsupported_values == 1


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (["tool:refund"], ["step-nudge", "support", "traced-argument"]),
        (["lease:refund-policy"], ["support"]),
        (["model:ZONE"], ["zone-trap"]),
        (["late fee"], ["revised-amount", "unsupported-amount"]),
        (['"refund of $250"'], ["planted-fact", "recalled-fact"]),
        (["tool:refund", "lease:wire"], ["support"]),
        (["tool:refund status:failed"], []),
        (["status:completed source:otlp"], []),
    ],
)
def test_filters_and_together(runs: Path, filters: list[str], expected: list[str]) -> None:
    table = build_table([str(runs)])
    assert sorted(_agents(table.filtered(filters))) == expected


def test_a_failed_run_is_found_by_its_status(runs: Path) -> None:
    path = runs / "leases.fptrace.jsonl"
    text = path.read_text(encoding="utf-8").replace(
        '"status":"completed"', '"status":"failed","error":{"type":"ProviderError","message":"boom"}'
    )
    path.write_text(text, encoding="utf-8")
    rows = build_table([str(runs)]).filtered(["status:failed"])
    assert [(row.agent, row.error) for row in rows] == [("leases", "ProviderError: boom")]


def test_sort_by_a_column_either_way(runs: Path) -> None:
    table = build_table([str(runs)])
    down = RunsTable.sorted_rows(table.rows, "tokens", descending=True)
    assert [row.tokens for row in down] == sorted((row.tokens for row in table.rows), reverse=True)
    assert down[0].agent == "support"
    up = RunsTable.sorted_rows(table.rows, "agent")
    assert _agents(up) == sorted(_agents(table.rows))
    with pytest.raises(ValueError, match="unknown sort column"):
        RunsTable.sorted_rows(table.rows, "colour")


def test_the_cache_serves_the_second_call_and_a_change_invalidates_it(runs: Path) -> None:
    first = build_table([str(runs)])
    count = len(first.rows)
    assert (first.cached_files, first.scanned_files) == (0, count)
    second = build_table([str(runs)])
    assert (second.cached_files, second.scanned_files) == (count, 0)
    key = lambda row: (row.trace, row.run_id)
    assert [r.as_json() for r in sorted(second.rows, key=key)] == [
        r.as_json() for r in sorted(first.rows, key=key)
    ]
    # A cached entry is what is read: a doctored one shows (so the second call did not rescan).
    leases = runs / "leases.fptrace.jsonl"
    entry = cache_path(str(leases))
    entry.write_text(entry.read_text(encoding="utf-8").replace('"leases":1', '"leases":99'), encoding="utf-8")
    assert next(r for r in build_table([str(runs)]).rows if r.agent == "leases").leases == 99
    # A new mtime (same size) invalidates it; so does an append (a new size).
    stat = leases.stat()
    os.utime(leases, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = build_table([str(runs)])
    assert (third.cached_files, third.scanned_files) == (count - 1, 1)
    assert next(r for r in third.rows if r.agent == "leases").leases == 1
    with leases.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
    fourth = build_table([str(runs)])
    assert fourth.scanned_files == 1
    assert next(r for r in fourth.rows if r.agent == "leases").bad_lines == 1
    assert build_table([str(runs)], use_cache=False).scanned_files == count


def test_a_trace_still_being_written_is_read_again_every_time(runs: Path) -> None:
    lines = (runs / "support.fptrace.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    # Caught mid-write: eight whole records and the first bytes of the ninth.
    (runs / "support.fptrace.jsonl").write_text("".join(lines[:8]) + lines[8][:30], encoding="utf-8")
    table = build_table([str(runs)])
    row = next(row for row in table.rows if row.agent == "support")
    assert row.status == "running" and row.bad_lines == 0
    assert row.notes == [RUNNING_NOTE, "its last line is still being written"]
    assert build_table([str(runs)]).scanned_files == 1


def test_every_bad_input_is_an_entry_and_the_table_still_stands(runs: Path, tmp_path: Path) -> None:
    good = (runs / "planted-fact.fptrace.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (runs / "broken.fptrace.jsonl").write_text(
        "".join(good[:3]) + "garbage {\n" + '{"kind": "pass", "seq": [\n' + "".join(good[3:]) + '{"kind":"tu',
        encoding="utf-8",
    )
    (runs / "empty.jsonl").write_bytes(b"")
    (runs / "header-only.fptrace.jsonl").write_text(good[0], encoding="utf-8")
    (runs / "otel.json").write_text('{"resourceSpans": []}\n', encoding="utf-8")
    (runs / "recording.json").write_text('{"format": "agentfootprint.recording.v1"}\n', encoding="utf-8")
    (runs / "notes.txt").write_text("hello\n", encoding="utf-8")
    (runs / "sub").mkdir()
    os.mkfifo(runs / "pipe")  # opened for reading it would block: it must not be opened
    table = build_table([str(runs), str(tmp_path / "missing")])
    what = {Path(entry.path).name: (entry.what, entry.reason) for entry in table.entries}
    assert what["empty.jsonl"][0] == "empty"
    assert what["header-only.fptrace.jsonl"][0] == "no-run"
    assert what["otel.json"] == ("foreign", "foreign: OTLP; import with `fpdebug import`")
    assert what["recording.json"][0] == "foreign" and "agentfootprint" in what["recording.json"][1]
    assert what["notes.txt"][0] == "not-a-trace"
    assert what["sub"][0] == "folder"
    assert what["pipe"] == ("not-regular", "a FIFO: not opened")
    assert what["missing"][0] == "missing"
    broken = [row for row in table.rows if row.trace.endswith("broken.fptrace.jsonl")]
    # Two broken lines, and a torn last one: a record still being written, said as such.
    assert len(broken) == 1 and broken[0].bad_lines == 2
    assert broken[0].notes == ["its last line is still being written", "2 unreadable lines in its trace"]
    assert broken[0].status == "completed"
    assert len(table.rows) == len(SCENARIOS) + 1  # every demo run and the broken one


def test_an_unreadable_file_says_why(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = runs / "leases.fptrace.jsonl"
    path.chmod(0)
    # chmod 0 stops every user but root (CI runs as root): the kernel's answer to anyone else is
    # EACCES from open(2), so deny that open the same way for every user.
    real_open = os.open

    def denied(name: str, flags: int, *args: int, **kwargs: object) -> int:
        if os.fspath(name) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        return real_open(name, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    table = build_table([str(runs)])
    assert [(Path(e.path).name, e.what) for e in table.entries] == [("leases.fptrace.jsonl", "unreadable")]
    assert table.entries[0].reason == "cannot open it: Permission denied"


def test_a_dangling_link_is_unreadable_not_fatal(runs: Path) -> None:
    (runs / "gone.fptrace.jsonl").symlink_to(runs / "nowhere")
    table = build_table([str(runs)])
    assert [(Path(e.path).name, e.what) for e in table.entries] == [("gone.fptrace.jsonl", "unreadable")]
    assert len(table.rows) == len(SCENARIOS)


def test_a_name_duckdb_would_read_as_a_glob_is_read_as_itself(runs: Path) -> None:
    # Unescaped, "lease*.fptrace.jsonl" would also read leases.fptrace.jsonl and count its run twice.
    shutil.copy(runs / "support.fptrace.jsonl", runs / "lease*.fptrace.jsonl")
    shutil.copy(runs / "zone-trap.fptrace.jsonl", runs / "run[1].fptrace.jsonl")
    rows = {Path(row.trace).name: row for row in build_table([str(runs)]).rows}
    assert len(rows) == len(SCENARIOS) + 2
    assert rows["leases.fptrace.jsonl"].llm_calls == 3
    assert (rows["lease*.fptrace.jsonl"].agent, rows["run[1].fptrace.jsonl"].agent) == (
        "support",
        "zone-trap",
    )


def test_a_file_the_scanner_refuses_is_an_entry_not_an_empty_table(
    runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from fpdebug.views.runs import scan

    real = scan._query

    def refusing(files: list[str], threads: int | None) -> dict[str, scan.ScannedFile]:
        if any(path.endswith("leases.fptrace.jsonl") for path in files):
            raise duckdb.InvalidInputException("refused")
        return real(files, threads)

    monkeypatch.setattr(scan, "_query", refusing)
    table = build_table([str(runs)])
    assert len(table.rows) == len(SCENARIOS) - 1
    assert [(Path(e.path).name, e.what, e.reason) for e in table.entries] == [
        ("leases.fptrace.jsonl", "broken", "could not be scanned: InvalidInputException: refused")
    ]


def test_lines_naming_a_run_without_its_start_are_said_to_be_so(runs: Path) -> None:
    with (runs / "leases.fptrace.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(
            '{"kind":"tool_result","seq":99,"ts":"2026-01-01T12:00:01Z","run_id":"stray","tool_name":5}\n'
        )
    stray = next(row for row in build_table([str(runs)]).rows if row.run_id == "stray")
    assert stray.notes == [NO_START_NOTE, RUNNING_NOTE]
    assert (stray.llm_calls, stray.started) == (0, "2026-01-01T12:00:01Z")

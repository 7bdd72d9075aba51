"""``fpdebug ledger``: the table and ``--json``, junk in a folder, outcomes, export and import, inert text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpdebug.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two sample runs, a foreign file, and a trace whose writer has not ended its run."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("leases", "planted-fact"):
        shutil.copy(SAMPLES / f"{name}.fptrace.jsonl", runs)
    (runs / "README.txt").write_text("not a trace\n", encoding="utf-8")
    lines = (SAMPLES / "support.fptrace.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    # A run id that carries a terminal control sequence, in a run still being written.
    torn = "".join(lines[:8]).replace("sample-support", "evil\\u001b[2Jrun")
    (runs / "writing.fptrace.jsonl").write_text(torn, encoding="utf-8")
    return runs


def test_the_table_reports_rows_worst_first_and_every_bad_file(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", str(folder)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "context ledger: 2 runs metered, 8 rows (worst earn rate first)"
    assert lines[2].split()[:6] == ["injection", "wire-format", "1", "20", "0", "0.00"]
    assert "never used" in lines[2]
    assert f"refused run evil\\x1b[2Jrun in {folder / 'writing.fptrace.jsonl'}: still being written" in out
    assert "\x1b" not in out
    assert f"skipped {folder / 'README.txt'}: " in out


def test_json_outcomes_export_and_import_add_up(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = tmp_path / "outcomes.json"
    outcomes.write_text(json.dumps({"sample-leases": ["resolved"], "nobody": "lost"}), encoding="utf-8")
    exported = tmp_path / "ledger.json"
    argv = ["ledger", str(folder), "--json", "--outcomes", str(outcomes), "--export", str(exported)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == 1 and data["runs_metered"] == 2
    rows = {(row["kind"], row["id"]): row for row in data["rows"]}
    assert rows[("injection", "wire-format")]["outcomes"] == {"resolved": 1}
    assert rows[("tool", "lookup_order")]["outcomes"] == {}  # offered in planted-fact only
    assert [r["reason"] for r in data["refused_runs"]] == ["still being written (no run_end yet)"]
    assert [Path(s["path"]).name for s in data["skipped_files"]] == ["README.txt"]
    assert data["warnings"] == [f"{outcomes}: run nobody is not among the runs metered; outcome ignored"]
    saved = json.loads(exported.read_text(encoding="utf-8"))
    assert saved["rows"] == data["rows"]
    # Import the export, add the same runs again: every count doubles.
    assert main(["ledger", str(folder), "--import", str(exported), "--json", "--kind", "injection"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {row["kind"] for row in again["rows"]} == {"injection"}
    wire = next(row for row in again["rows"] if row["id"] == "wire-format")
    assert (wire["offered"], wire["runs_seen"], wire["outcomes"]) == (2, 2, {"resolved": 1})


def test_an_import_of_another_version_is_ignored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "v2.json"
    old.write_text(json.dumps({"version": 2, "rows": []}), encoding="utf-8")
    assert main(["ledger", "--import", str(old)]) == 0
    out = capsys.readouterr().out
    assert "0 runs metered" in out
    assert f"warning: {old}: not a version-1 ledger (version 2); ignored" in out


def test_nothing_to_read_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger"]) == 2
    assert "give trace files or folders" in capsys.readouterr().err


def test_a_secret_in_a_trace_is_redacted_on_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-proj-" + "Ab9_" * 12
    text = (SAMPLES / "leases.fptrace.jsonl").read_text(encoding="utf-8").replace("sample-leases", secret)
    (tmp_path / "leaky.jsonl").write_text(
        text.replace('"kind":"llm_call"', '"kind":"llm_cal"'), encoding="utf-8"
    )
    assert main(["ledger", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "refused run [redacted] in " in out and secret not in out

"""``fpdebug runs``: the table agrees with ``fpdebug summary --json``; JSON, filters, sort, inert text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.demo import SCENARIOS


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo scenarios on their scripted model, plus one run priced as if it were live."""
    from fpdebug.demo.registry import write_samples

    folder = tmp_path_factory.mktemp("runs-cli")
    write_samples(folder)
    text = (folder / "support.fptrace.jsonl").read_text(encoding="utf-8")
    priced = text.replace('"provider":"scripted"', '"provider":"openai"').replace(
        '"model":"scripted-support"', '"model":"gpt-4o-mini"'
    )
    (folder / "support-live.fptrace.jsonl").write_text(
        priced.replace("sample-support", "live-support"), "utf-8"
    )
    return folder


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_each_row_says_what_summary_says(demo_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _json(["runs", str(demo_runs), "--json", "--no-cache"], capsys)
    assert table["version"] == 1 and table["files"] == []
    rows = {row["trace"]: row for row in table["runs"]}
    assert len(rows) == len(SCENARIOS) + 1  # every sample and the live one
    for path in sorted(demo_runs.iterdir()):
        summary = _json(["summary", str(path), "--json"], capsys)
        (run,) = summary["runs"]
        row = rows[str(path)]
        assert row["run_id"] == run["run_id"]
        assert (row["status"], row["agent"], row["model"], row["provider"]) == (
            run["status"], run["agent_name"], run["model"], run["provider"]
        )  # fmt: skip
        assert (row["turns"], row["iterations"], row["llm_calls"]) == (
            run["turns"],
            run["iterations"],
            run["llm_calls"],
        )
        assert (row["input_tokens"], row["output_tokens"]) == (run["input_tokens"], run["output_tokens"])
        assert row["cost"] == run["cost"], path.name
        assert (row["leases"], row["parks"]) == (run["leases"]["granted"], run["parks"])
        assert row["unsupported_values"] == run["unsupported_values"]
    live = rows[str(demo_runs / "support-live.fptrace.jsonl")]
    assert live["cost"]["usd"] is not None and live["cost"]["usd"] > 0


def test_json_is_stable_and_filters_sort_apply(demo_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["runs", str(demo_runs), "--json", "--filter", "tool:refund", "--sort", "tokens", "--desc"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    data = json.loads(first)
    assert list(data) == sorted(data)
    assert [row["agent"] for row in data["runs"]] == ["support", "support", "step-nudge", "traced-argument"]
    assert [row["tokens"] for row in data["runs"]] == sorted(
        (row["tokens"] for row in data["runs"]), reverse=True
    )
    assert data["total_runs"] == len(SCENARIOS) + 1
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert json.loads(second)["cache"] == {"cached_traces": len(SCENARIOS) + 1, "scanned_traces": 0}
    assert json.loads(second)["runs"] == data["runs"]


def test_the_table_on_a_terminal(demo_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(demo_runs), "--filter", "source:native lease:refund-policy"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"2 of {len(SCENARIOS) + 1} runs"
    assert out[1].split()[:3] == ["started", "agent", "status"]
    assert all("I refunded the duplicate charge" in line for line in out[2:4])
    assert any("no price: scripted" in line for line in out[2:4]) and any(
        "$0.000" in line for line in out[2:4]
    )


def test_a_bad_sort_column_is_an_error(demo_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(demo_runs), "--sort", "colour"]) == 2
    assert "unknown sort column 'colour'" in capsys.readouterr().err


def test_trace_text_is_inert_and_redacted(
    tmp_path: Path, demo_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-proj-" + "Ab9_" * 12
    text = (demo_runs / "leases.fptrace.jsonl").read_text(encoding="utf-8")
    text = text.replace("100 EUR is 108.00 USD", f"\\u001b[2J {secret} 100 EUR")
    (tmp_path / "evil.fptrace.jsonl").write_text(
        text.replace("sample-leases", "evil\\u001b]0;x\\u0007run"), "utf-8"
    )
    assert main(["runs", str(tmp_path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert secret not in out and "[redacted]" in out
    assert main(["runs", str(tmp_path), "--json", "--no-cache"]) == 0
    raw = capsys.readouterr().out
    assert "\x1b" not in raw and secret not in raw


def test_imported_runs_name_their_source_and_agree_with_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "ingest" / "fixtures"
    folder = tmp_path / "runs"
    folder.mkdir()
    otlp = fixtures / "otlp" / "agentfootprint-support-refund.otlp.json"
    recording = fixtures / "agentfootprint" / "engagement-park.recording.json"
    assert main(["import", str(otlp), "-o", str(folder / "otlp.fptrace.jsonl")]) == 0
    assert main(["import", str(recording), "-o", str(folder / "af.fptrace.jsonl")]) == 0
    shutil.copy(otlp, folder)  # the raw file beside its import: listed as foreign, not a run
    capsys.readouterr()
    table = _json(["runs", str(folder), "--json", "--no-cache"], capsys)
    assert {row["source"] for row in table["runs"]} == {"otlp", "agentfootprint"}
    assert [(Path(f["path"]).name, f["what"]) for f in table["files"]] == [(otlp.name, "foreign")]
    for row in table["runs"]:
        (run,) = _json(["summary", row["trace"], "--json"], capsys)["runs"]
        assert (row["iterations"], row["input_tokens"], row["cost"], row["parks"]) == (
            run["iterations"], run["input_tokens"], run["cost"], run["parks"]
        )  # fmt: skip

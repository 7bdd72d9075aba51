"""The runs table prices calls in groups: a group per run for calls that have no price, per tokens otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from fpdebug.cli import main
from fpdebug.views.runs import build_table


def test_grouped_pricing_says_what_summary_says(
    demo_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (demo_runs / "support.fptrace.jsonl").read_text(encoding="utf-8")
    live = text.replace('"provider":"scripted"', '"provider":"openai"').replace(
        '"model":"scripted-support"', '"model":"gpt-4o-mini"'
    )
    records = [orjson.loads(line) for line in live.splitlines()]
    calls = [record for record in records if record["kind"] == "llm_call"]
    del calls[1]["response"]  # a call that got no reply: no usage, so no price (never $0)
    calls[1]["error"] = {"type": "ProviderError", "message": "timeout"}
    path = tmp_path / "mixed.fptrace.jsonl"
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    scripted = tmp_path / "scripted.fptrace.jsonl"
    scripted.write_text(text, encoding="utf-8")

    rows = {Path(row.trace).name: row for row in build_table([str(tmp_path)], use_cache=False).rows}
    for name in ("mixed.fptrace.jsonl", "scripted.fptrace.jsonl"):
        assert main(["summary", str(tmp_path / name), "--json"]) == 0
        (run,) = json.loads(capsys.readouterr().out)["runs"]
        assert rows[name].cost == run["cost"], name
    mixed = rows["mixed.fptrace.jsonl"].cost
    assert mixed["priced_calls"] == 4 and mixed["unpriced_calls"] == {"no usage recorded": 1}
    assert rows["scripted.fptrace.jsonl"].cost["unpriced_calls"] == {"no price: scripted": 5}

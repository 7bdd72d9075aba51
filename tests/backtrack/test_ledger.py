"""The context ledger (docs/backtracking.md §9.10): every rule, over traces the demo scenarios write."""

from __future__ import annotations

import json
import math
import os
from decimal import Decimal
from pathlib import Path

import pytest

from fpdebug.backtrack.ledger import LEDGER_VERSION, Ledger, LedgerRow, RunMeter, approx_tokens, build_ledger
from fpdebug.backtrack.ledger.meter import meter_trace
from fpdebug.demo import SCENARIOS, run_target
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.cost import input_price_per_token
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent
from tests.conftest import T0


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every demo scenario run once on its scripted provider, one trace each."""
    folder = tmp_path_factory.mktemp("demo-runs")
    for name in SCENARIOS:
        run_target(
            name,
            trace_path=folder / f"{name}.jsonl",
            clock=FixedClock(T0),
            run_id=f"run-{name}",
            durability="none",
        )
    return folder


def _calls(path: Path) -> list[LlmCallEvent]:
    with TraceReader(path) as reader:
        return [record for record in reader if isinstance(record, LlmCallEvent)]


def test_the_demo_ledger_ranks_the_never_used_injection_worst(demo_dir: Path) -> None:
    ledger = build_ledger([str(demo_dir)])
    assert ledger.skipped == [] and ledger.refused == []
    assert ledger.runs_metered == len(SCENARIOS)
    rows = ledger.rows()
    rates = [row.earn_rate for row in rows]
    assert rates == sorted(rates)  # worst first
    injections = [row for row in rows if row.kind == "injection"]
    # wire-format rides a middle pass of `leases` and of `support`, never the final answer's call.
    worst = injections[0]
    assert (worst.id, worst.used, worst.offered, worst.runs_seen) == ("wire-format", 0, 2, 2)
    never = [row.id for row in injections if row.used == 0]
    used = [row.id for row in injections if row.used > 0]
    assert never == ["wire-format", "after-escalation", "refund-policy", "triage-notes"]
    assert injections[: len(never)] == [row for row in injections if row.id in never]
    assert "tone" in used and "vip-override" in used


def test_offers_are_calls_and_static_tools_cost_nothing(demo_dir: Path) -> None:
    (meter,), refused = meter_trace(str(demo_dir / "leases.jsonl"))
    assert refused == []
    assert meter.calls == 3
    offers = meter.offers
    assert offers[("injection", "tone")].offered == 3  # always: once per call
    assert offers[("injection", "wire-format")].offered == 1  # leased onto pass 2 only
    for name in ("fetch", "calc"):  # the agent's own tools: offered every call, 0 tokens
        assert (offers[("tool", name)].offered, offers[("tool", name)].tokens) == (3, 0)
    assert offers[("injection", "tone")].tokens == 3 * approx_tokens(["Answer in one sentence."])


def test_a_dynamic_tool_counts_its_schema_json(demo_dir: Path) -> None:
    (meter,), _ = meter_trace(str(demo_dir / "zone-trap.jsonl"))
    schemas = [
        schema.model_dump(mode="json", exclude_none=True)
        for call in _calls(demo_dir / "zone-trap.jsonl")
        for schema in call.request.tools
        if schema.name == "get_zone_info"
    ]
    assert schemas and all(schema.get("injection_id") == "zone-audit" for schema in schemas)
    expected = sum(math.ceil(len(json.dumps(s, ensure_ascii=False, sort_keys=True)) / 4) for s in schemas)
    piece = meter.offers[("tool", "get_zone_info")]
    assert (piece.offered, piece.tokens) == (len(schemas), expected)
    assert ("tool", "get_zone_info") not in meter.uses  # offered four times, never called


def test_uses_tool_called_skill_activated_answer_slice(demo_dir: Path) -> None:
    (support,), _ = meter_trace(str(demo_dir / "support.jsonl"))
    assert support.uses[("tool", "issue_refund")] == "tool-called"
    assert support.uses[("skill", "refund")] == "skill-activated"  # read_skill accepted it
    assert support.uses[("injection", "tone")] == "answer-slice(system-prompt)"
    # refund-policy rode pass 3 only; the final answer's call (pass 5) never read it.
    assert ("injection", "refund-policy") in support.offers
    assert ("injection", "refund-policy") not in support.uses
    # triage is an always-on skill: its body rides the answer, but a skill earns only by activation.
    assert ("skill", "triage") in support.offers and ("skill", "triage") not in support.uses


def test_earn_rate_is_zero_when_never_offered() -> None:
    assert LedgerRow(kind="tool", id="x").earn_rate == 0.0
    ledger = Ledger()
    ledger.import_json({"version": 1, "rows": [{"kind": "tool", "id": "x", "used": 3}]})
    assert ledger.rows()[0].earn_rate == 0.0


def test_record_outcome_credits_every_offered_piece(demo_dir: Path) -> None:
    ledger = Ledger()
    refs = ledger.add_trace(str(demo_dir / "leases.jsonl"))
    ledger.add_trace(str(demo_dir / "planted-fact.jsonl"))
    assert ledger.record_outcome("resolved")  # the last run recorded: planted-fact
    assert ledger.record_outcome("escalated", "run-leases")  # by run id
    assert ledger.record_outcome("escalated", refs[0])  # by <trace>#<run id>
    assert not ledger.record_outcome("resolved", "no-such-run")
    assert ledger.row("injection", "wire-format").outcomes == {"escalated": 2}  # type: ignore[union-attr]
    assert ledger.row("injection", "vip-override").outcomes == {"resolved": 1}  # type: ignore[union-attr]
    assert ledger.row("tool", "lookup_order").outcomes == {"resolved": 1}  # type: ignore[union-attr]
    assert not Ledger().record_outcome("resolved")  # nothing recorded yet


def test_import_adds_counts_and_ignores_other_versions(demo_dir: Path) -> None:
    ledger = build_ledger([str(demo_dir / "leases.jsonl")])
    ledger.record_outcome("resolved")
    exported = json.loads(json.dumps(ledger.export_json()))
    assert exported["version"] == LEDGER_VERSION
    twice = Ledger()
    assert twice.import_json(exported) and twice.import_json(exported)
    tone = twice.row("injection", "tone")
    assert tone is not None
    assert (tone.offered, tone.used, tone.runs_seen, tone.outcomes) == (6, 2, 2, {"resolved": 2})
    assert tone.used_via == {"answer-slice(system-prompt)": 2}
    assert twice.runs_metered == 2
    before = twice.export_json()
    assert not twice.import_json({**exported, "version": 2}, source="future.json")
    assert not twice.import_json(["not", "a", "ledger"], source="list.json")
    assert twice.export_json() == before
    assert twice.warnings == [
        "future.json: not a version-1 ledger (version 2); ignored",
        "list.json: not a version-1 ledger (version None); ignored",
    ]


def test_a_run_without_a_call_is_refused_not_metered(demo_dir: Path, tmp_path: Path) -> None:
    lines = (demo_dir / "leases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    callless = tmp_path / "no-calls.jsonl"
    callless.write_text("".join(line for line in lines if '"kind":"llm_call"' not in line), encoding="utf-8")
    ledger = build_ledger([str(callless), str(demo_dir / "planted-fact.jsonl")])
    assert ledger.runs_metered == 1
    assert [(r.run_id, r.reason) for r in ledger.refused] == [
        ("run-leases", "no llm_call: nothing was offered to meter")
    ]
    assert ledger.row("injection", "wire-format") is None
    assert Ledger().record_run(RunMeter("t.jsonl", "r", "completed")) is None


def test_a_folder_with_junk_reports_each_file_and_goes_on(demo_dir: Path, tmp_path: Path) -> None:
    good = (demo_dir / "leases.jsonl").read_text(encoding="utf-8")
    (tmp_path / "a-trace.jsonl").write_text(good, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a trace\n", encoding="utf-8")
    (tmp_path / "writing.jsonl").write_text("".join(good.splitlines(keepends=True)[:6]), encoding="utf-8")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "a-trace.jsonl.backtrack.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "older").mkdir()
    os.mkfifo(tmp_path / "pipe.jsonl")
    ledger = build_ledger([str(tmp_path), str(tmp_path / "gone.jsonl")])
    assert ledger.runs_metered == 1
    assert [(r.run_id, r.reason) for r in ledger.refused] == [
        ("run-leases", "still being written (no run_end yet)")
    ]
    skipped = {Path(s.path).name: s.reason for s in ledger.skipped}
    assert set(skipped) == {"notes.txt", "empty.jsonl", "gone.jsonl", "older", "pipe.jsonl"}
    assert "not a regular file" in skipped["pipe.jsonl"]
    assert "not searched recursively" in skipped["older"]
    assert "not an fpdebug trace" in skipped["notes.txt"]
    assert skipped["gone.jsonl"] == "no such file or folder"


def test_a_priced_model_gives_each_row_dollars(demo_dir: Path, tmp_path: Path) -> None:
    text = (demo_dir / "leases.jsonl").read_text(encoding="utf-8")
    live = tmp_path / "live.jsonl"
    # The same run as if answered by a live model the price table knows.
    text = text.replace('"provider":"scripted"', '"provider":"openai"')
    live.write_text(text.replace('"model":"scripted-leases"', '"model":"gpt-4o"'), encoding="utf-8")
    call = _calls(live)[0]
    per_token, reason = input_price_per_token(call)
    assert reason is None and per_token is not None and per_token > 0
    ledger = build_ledger([str(live)])
    tone = ledger.row("injection", "tone")
    fetch = ledger.row("tool", "fetch")
    assert tone is not None and fetch is not None
    assert (tone.priced, tone.unpriced) == (3, {})
    assert tone.dollars == per_token * tone.approx_tokens_spent
    assert fetch.dollars == Decimal(0) and fetch.cost_text() == "$0.00"  # a static tool: 0 tokens
    assert tone.as_json()["usd"] == float(tone.dollars)
    scripted = build_ledger([str(demo_dir / "leases.jsonl")]).row("injection", "tone")
    assert scripted is not None and scripted.cost_text() == "no price: scripted"
    assert scripted.as_json()["usd"] is None


def test_the_snapshot_is_plain_data_for_the_gate(demo_dir: Path) -> None:
    snapshot = build_ledger([str(demo_dir / "leases.jsonl")]).snapshot()
    assert {"kind": "injection", "id": "wire-format", "offered": 1, "earn_rate": 0.0} in snapshot
    json.dumps(snapshot)  # data only, nothing the engine would need the backtrack layer for

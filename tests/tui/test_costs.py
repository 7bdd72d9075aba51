"""Cost in the debugger: the header's run cost, and each active injection's share in the pass inspector."""

from __future__ import annotations

import json
from pathlib import Path

from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.bars import header_text
from fpdebug.tui.widgets.inspector import inspect_iteration
from tests.export.otlp_helpers import SAMPLES_DIR
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered


def priced(tmp_path: Path, model: str) -> Path:
    """The support demo as if ``model`` (an Anthropic model) had answered."""
    lines = []
    for line in (SAMPLES_DIR / "support.fptrace.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] in ("run_start", "llm_call"):
            record["provider"], record["model"] = "anthropic", model
        lines.append(json.dumps(record))
    path = tmp_path / "priced.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_header_shows_the_run_cost_or_why_there_is_none(tmp_path: Path) -> None:
    for path, expected in (
        (priced(tmp_path, "claude-sonnet-4-5"), "$0.00687"),
        (SAMPLES_DIR / "support.fptrace.jsonl", "no price: scripted"),
    ):
        with TraceReader(path, index=False) as reader:
            session = load_session(reader)
            run = session.model.runs[0]
            assert expected in header_text(session, run, "t", PALETTE).plain


def test_the_inspector_shows_each_injections_share_of_the_call_and_the_run(tmp_path: Path) -> None:
    with TraceReader(priced(tmp_path, "claude-sonnet-4-5"), index=False) as reader:
        session = load_session(reader)
        first = rendered(inspect_iteration(session, session.iterations[0], PALETTE), width=160)
    assert "Context cost" in first
    triage = next(line for line in first.splitlines() if line.strip().startswith("triage") and "≈" in line)
    assert "tokens, $" in triage  # the run-wide share is priced
    unknown = priced(tmp_path, "no-such-model-x")
    with TraceReader(unknown, index=False) as reader:
        session = load_session(reader)
        text = rendered(inspect_iteration(session, session.iterations[0], PALETTE), width=160)
    assert "unknown price" in text and "$0.00" not in text

"""Cost in the debugger: the header's run cost, each timeline row's, and each active injection's share in the
pass inspector."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from fpdebug.trace.reader import TraceReader
from fpdebug.tui.costs import run_costs
from fpdebug.tui.widgets.bars import header_text
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.timeline import IterationTimeline, compact_dollars, timeline_header
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


def test_a_timeline_row_shows_its_iterations_dollars_and_the_rows_add_up(tmp_path: Path) -> None:
    with TraceReader(priced(tmp_path, "claude-sonnet-4-5"), index=False) as reader:
        session = load_session(reader)
        timeline = IterationTimeline(session)
        timeline._palette = PALETTE
        title = timeline_header(70, label=session.label_width).plain
        rows = [timeline.render_row(row, 70).plain for row in range(len(session.iterations))]
        costs = run_costs(session, session.model.runs[0])
    assert title.split()[-2:] == ["cost", "badges"]
    column = title.index("cost") + len("cost")  # right-aligned under its title
    shown = [row[column - 7 : column] for row in rows]
    expected = [compact_dollars(costs.iterations[(it.turn, it.number)].dollars) for it in session.iterations]
    assert shown == expected and all(cell.startswith("$0.00") for cell in shown)
    # The header's run total is the sum of the same per-iteration figures.
    assert sum((costs.iterations[key].dollars for key in costs.iterations), Decimal(0)) == costs.run.dollars


def test_an_unpriced_row_shows_a_dash_never_zero_dollars(tmp_path: Path) -> None:
    for path in (priced(tmp_path, "no-such-model-x"), SAMPLES_DIR / "support.fptrace.jsonl"):
        with TraceReader(path, index=False) as reader:
            session = load_session(reader)
            timeline = IterationTimeline(session)
            timeline._palette = PALETTE
            column = timeline_header(70, label=session.label_width).plain.index("cost") + len("cost")
            for row in range(len(session.iterations)):
                text = timeline.render_row(row, 70)
                assert text.plain[column - 7 : column] == "      —" and "$" not in text.plain
                dash = text.plain.index("—", column - 7)
                assert any(span.start <= dash < span.end and span.style == PALETTE.dim for span in text.spans)


@pytest.mark.parametrize(
    ("width", "cost"),
    [(160, 7), (70, 7), (66, 7), (65, 6), (64, 0), (56, 0), (38, 0)],
)
def test_the_cost_column_is_the_first_to_go_as_the_timeline_narrows(width: int, cost: int) -> None:
    title = timeline_header(width, label=5).plain
    assert ("cost" in title) == bool(cost)
    if cost:
        # Whenever cost is drawn, the badges still have room for words.
        assert width - len(title) + len("badges") >= 14
        assert title.index("cost") - title.index("route") == len("route ") + cost - len("cost")
    else:
        assert ("route" in title) or width < 40  # the other columns are untouched by its going


@pytest.mark.parametrize(
    ("dollars", "seven", "six"),
    [
        ("0.004185", "$0.0042", "$.0042"),
        ("0.0423", "$0.0423", "$.0423"),
        ("0.00004", "$4e-05", "$4e-05"),
        ("0", "$0", "$0"),
        ("1.234", "$1.23", "$1.23"),
        ("12.346", "$12.35", "$12.35"),
        ("123.4", "$123", "$123"),
    ],
)
def test_compact_dollars_fit_the_column_and_never_round_to_a_made_up_zero(
    dollars: str, seven: str, six: str
) -> None:
    assert compact_dollars(Decimal(dollars), 7) == seven and len(seven) <= 7
    assert compact_dollars(Decimal(dollars), 6) == six and len(six) <= 6

"""The call view's argument provenance: where each tool argument of the reply came from (inputs layer)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fpdebug.trace.schema import (
    ArgumentRow,
    BasisRow,
    FindingEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    TurnEndEvent,
    TurnStartEvent,
)
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.calls import CallView, call_document, source_words
from fpdebug.views.session import TraceSession
from tests.trace.samples import Script
from tests.tui.helpers import document_text, load_session, loaded, screen_text
from tests.tui.traces import MARKUP, sample

SIZE = (160, 48)


def _text(session: TraceSession, row: int) -> str:
    return document_text(call_document(session, session.iterations[row], Palette()))


def write_every_source(path: Path) -> Path:
    """One reply whose five arguments come from five kinds of source, one hidden, one rewritten."""
    script = Script("sources")
    script.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=2)
    script.turn = 1
    script.add(TurnStartEvent, user_message="refund ORD-1")
    script.add(PassEvent, iteration=1, active_ids=[], evaluated_total=0)
    calls = [
        ToolCallRecord(
            id="call_7",
            name="refund",
            args={"order_id": "ORD-1", "amount": 250.0, "note": MARKUP, "account": "C-88", "sku": "SKU-77"},
        ),
        ToolCallRecord(id="call_8", name="set_pin", args={"pin": "4242"}),
    ]
    script.add(
        LlmCallEvent,
        iteration=1,
        call_index=1,
        provider="scripted",
        model="m",
        request=LlmRequest(messages=[Message(role="user", content="refund ORD-1")]),
        response=LlmResponse(tool_calls=calls),
        route="tool-calls",
    )

    def row(call: str, tool: str, path_: str, value: object, source: str, **extra: object) -> ArgumentRow:
        return ArgumentRow(tool_call_id=call, tool_name=tool, path=path_, value=value, source=source, **extra)

    script.add(
        FindingEvent,
        iteration=1,
        layer="inputs",
        rows=[
            BasisRow(
                tool_call_id="call_7", tool_name="refund", from_entries=["$.order_id <- user"], dropped_from=2
            ),
            row("call_7", "refund", "$.order_id", "ORD-1", "user", source_text="refund ORD-1"),
            row(
                "call_7",
                "refund",
                "$.amount",
                250.0,
                "nowhere",
                rewritten=True,
                rewritten_to=100.0,
                refused_reference="tool:call_3",
            ),
            row("call_7", "refund", "$.note", MARKUP, "nowhere"),
            row("call_7", "refund", "$.account", "C-88", "external", label="signed-in account"),
            row(
                "call_7", "refund", "$.sku", "SKU-77", "declared", label="price list", source_path="$.SKU-77"
            ),
            row("call_8", "set_pin", "$.pin", None, "nowhere", hidden=True),
        ],
    )
    script.add(TurnEndEvent, iteration=None, final_content="", iteration_count=1)
    script.turn = None
    script.add(RunEndEvent, status="completed", turns=1)
    return script.write(path)


class TestSourceWords:
    @pytest.mark.parametrize(
        ("fields", "words"),
        [
            (
                {
                    "source": "tool-result",
                    "source_tool_call_id": "call_1",
                    "source_path": "$.orders[0].total",
                    "source_iteration": 1,
                    "source_tool_name": "list_orders",
                },
                "tool-result call_1 $.orders[0].total @I1 (list_orders)",
            ),
            ({"source": "user"}, "user"),
            ({"source": "external", "label": "signed-in account"}, "external: signed-in account"),
            (
                {"source": "declared", "label": "price list", "source_path": "$.SKU-77"},
                "declared: price list $.SKU-77",
            ),
            ({"source": "nowhere"}, "nowhere (model supplied)"),
        ],
    )
    def test_each_source(self, fields: dict[str, object], words: str) -> None:
        row = ArgumentRow.model_validate(
            {"tool_call_id": "c", "tool_name": "t", "path": "$.x", "value": 1, **fields}
        )
        assert source_words(row) == words


class TestCallDocument:
    def test_traced_argument_sample(self) -> None:
        session = load_session(sample("traced-argument"))
        first = _text(session, 0)
        assert '$.customer_id  "C-88"  ← user  “C-88”' in first
        second = _text(session, 1)
        traced = '$.order_id  "ORD-5521"  ← tool-result call_1 $.orders[0].order_id @I1 (list_orders)'
        assert traced in second
        assert "$.amount    89.9  ← tool-result call_1 $.orders[0].total @I1 (list_orders)" in second
        assert "refused reference user (it does not hold the value)" in second
        assert "cites $.order_id <- tool:call_1 at $.orders[0].order_id · 1 citation(s) dropped" in second

    def test_every_kind_of_source_hidden_values_and_rewrites(self, tmp_path: Path) -> None:
        session = load_session(write_every_source(tmp_path / "sources.fptrace.jsonl"))
        text = _text(session, 0)
        words = " ".join(text.split())
        assert '$.order_id "ORD-1" ← user “refund ORD-1”' in words
        assert "$.amount asked 250.0 → ran 100.0 ← nowhere (model supplied)" in words
        assert "refused reference tool:call_3" in words
        assert '$.account "C-88" ← external: signed-in account' in words
        assert '$.sku "SKU-77" ← declared: price list $.SKU-77' in words
        assert "$.pin (hidden: a tool in reach hides its arguments) ← nowhere (model supplied)" in words
        assert "4242" not in text.split("tool call set_pin")[1].split("arguments, where")[1]
        assert "2 citation(s) dropped" in text
        assert MARKUP in text  # shown literally

    def test_no_findings_means_no_provenance_rows(self) -> None:
        session = load_session(sample("support"))
        for row in range(len(session.iterations)):
            assert "where each value came from" not in _text(session, row)


@pytest.mark.anyio
async def test_the_calls_view_shows_the_provenance_on_screen() -> None:
    app = FpdebugApp(sample("traced-argument"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("j", "3", "G")
        await pilot.pause()
        view = app.screen.query_one(CallView)
        rows = " ".join(" ".join(view.text_lines()).split())
        assert "← tool-result call_1 $.orders[0].total @I1 (list_orders)" in rows
        assert "refused reference user" in screen_text(app)


def test_snapshot_of_the_provenance_rows(snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: object) -> None:
        pilot.app.animation_level = "none"  # type: ignore[attr-defined]
        await loaded(pilot)  # type: ignore[arg-type]
        for key in ("j", "3", "G"):
            await pilot.press(key)  # type: ignore[attr-defined]
            await pilot.pause()  # type: ignore[attr-defined]

    assert snap_compare(FpdebugApp(sample("traced-argument")), run_before=run_before, terminal_size=SIZE)

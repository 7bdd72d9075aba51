"""Imported OTLP runs open in the debugger: every view draws, the calls show their exchange."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.ingest.otlp import import_otlp
from fpdebug.tui.widgets.calls import CallView
from tests.tui.helpers import opened, screen_text

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"


@pytest.mark.parametrize(
    "fixture",
    ["openai_v2_latest.otlp.pb", "anthropic_sdk.otlp.json", "agentfootprint-support-refund.otlp.json"],
)
async def test_an_imported_run_opens_and_every_view_draws(tmp_path: Path, fixture: str) -> None:
    trace = tmp_path / "run.fptrace.jsonl"
    import_otlp([FIXTURES / fixture], trace)
    async with opened(trace) as (pilot, screen):
        calls = 5 if fixture.startswith("agentfootprint") else 3
        assert screen.timeline.total == calls
        for key in ("2", "3", "4", "1"):
            await pilot.press(key)
            await pilot.pause()
            assert screen_text(pilot.app)
        await pilot.press("3", *["right_square_bracket"] * (calls - 1))
        await pilot.pause()
        lines = " ".join(screen.query_one(CallView).text_lines())
        assert f"Call {calls}" in lines
        if not fixture.startswith("agentfootprint"):
            assert "Tokyo is warmer" in lines

"""Recalled chunks on screen: the pass view lists them apart from the evaluated injections, the
prompt view tags each segment with its source and score (the recalled-fact sample)."""

from __future__ import annotations

import pytest

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.calls import CallView, call_document
from fpdebug.tui.widgets.inspector import inspect_iteration
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session, opened, wait_for
from tests.tui.strategies import PALETTE, rendered


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_pass_view_lists_the_recalled_chunks_apart_from_the_evaluated_injections() -> None:
    with TraceReader(sample_path(SAMPLES, "recalled-fact"), index=False) as reader:
        session = load_session(reader)
        shown = [
            flat(rendered(inspect_iteration(session, it, PALETTE), width=160)) for it in session.iterations
        ]
    for text in shown:  # on every iteration of the turn: the chunks ride every call
        active = text.split("Active injections", 1)[1].split("Pass facts")[0]
        assert "mem-2025-vip" not in active and "refund-limits" in active  # not among the evaluated
        recalled = text.split("Recalled", 1)[1].split("LLM call")[0]
        assert "2 chunk(s), added outside the evaluator before the first pass" in recalled
        assert "memory customer-memory asked with the user's message, threshold 0.1" in recalled
        assert "1 mem-address · score 0.250" in recalled and "2 mem-2025-vip · score 0.213" in recalled


def test_the_prompt_view_tags_each_recalled_chunk_with_its_source_and_score() -> None:
    with TraceReader(sample_path(SAMPLES, "recalled-fact"), index=False) as reader:
        session = load_session(reader)
        text = flat(rendered(call_document(session, session.iterations[0], PALETTE), width=160))
    assert (
        "[3] instructions · format-answer" in text
        and "[3] instructions · format-answer · recalled" not in text
    )
    assert (
        "[5] memory · mem-2025-vip · recalled by customer-memory · score 0.213 · rank 2 · threshold 0.1"
        in text
    )


@pytest.mark.anyio
async def test_the_calls_view_shows_the_recalled_chunks_on_screen() -> None:
    async with opened(sample_path(SAMPLES, "recalled-fact")) as (pilot, screen):
        await pilot.press("3")
        tagged = "memory · mem-2025-vip · recalled by customer-memory · score 0.213 · rank 2"

        def shown() -> bool:
            views = screen.query(CallView)
            return bool(views) and tagged in " ".join(" ".join(views.first().text_lines()).split())

        assert await wait_for(pilot, shown)

"""Go to a place by its number: the ``:`` prompt, the ``c`` key and the palette's ``go: call/iteration/seq N``.

Issue 20's task "see the exact prompt of LLM call N" takes three keys from launch: ``c N enter``.
Every check presses keys and reads what is drawn. They share one app session (starting the app is
most of each one's time): the first runs from launch, the others each go somewhere absolute.
"""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from fpdebug.tui.screens.trace_screen import TraceScreen
from tests.tui.helpers import opened, record_notices, run_checks, run_palette, screen_text, wait_for
from tests.tui.traces import sample


def _calls_title(text: str) -> str:
    return next((line.strip("│ ") for line in text.splitlines() if line.startswith("│ Call ")), "")


async def c_n_enter_shows_the_exact_prompt_of_call_n(pilot: Pilot[object], _screen: TraceScreen) -> None:
    await pilot.press("c", "3", "enter")  # the three keys of issue 20's task
    assert await wait_for(pilot, lambda: "Call 3 · " in screen_text(pilot.app))
    text = screen_text(pilot.app)
    assert _calls_title(text).startswith("Call 3 · scripted / scripted-support · T1·I3")
    assert "SYSTEM PROMPT" in text and "[6] skill · billing" in text
    assert "MESSAGES  6" in text


async def colon_number_is_a_seq_in_the_events_view(pilot: Pilot[object], _screen: TraceScreen) -> None:
    await pilot.press("colon", "1", "7", "enter")
    assert await wait_for(pilot, lambda: "Line 17 · llm_call" in screen_text(pilot.app))
    assert "seq: 17" in screen_text(pilot.app)


async def colon_words_call_and_iter(pilot: Pilot[object], _screen: TraceScreen) -> None:
    await pilot.press("colon", *"call 2", "enter")
    assert await wait_for(pilot, lambda: _calls_title(screen_text(pilot.app)).startswith("Call 2 · "))
    await pilot.press("colon", *"iter 4", "enter")
    await pilot.press("3")
    assert await wait_for(pilot, lambda: _calls_title(screen_text(pilot.app)).startswith("Call 4 · "))
    assert "T1·I4" in _calls_title(screen_text(pilot.app))


async def escape_closes_the_prompt_and_nowhere_warns(pilot: Pilot[object], _screen: TraceScreen) -> None:
    said = record_notices(pilot.app)
    await pilot.press("colon")
    assert await wait_for(pilot, lambda: "a bare number is a seq" in screen_text(pilot.app))
    await pilot.press("escape")
    assert await wait_for(pilot, lambda: "a bare number is a seq" not in screen_text(pilot.app))
    await pilot.press("c", "9", "enter")
    # toasts are not drawn headless: read the notification the user would see
    assert await wait_for(pilot, lambda: any("No LLM call #9" in notice for notice in said))


async def palette_go_call_and_seq(pilot: Pilot[object], _screen: TraceScreen) -> None:
    await run_palette(pilot, "go: call 5")
    assert await wait_for(pilot, lambda: _calls_title(screen_text(pilot.app)).startswith("Call 5 · "))
    await run_palette(pilot, "go: seq 22")
    assert await wait_for(pilot, lambda: "Line 22 · llm_call" in screen_text(pilot.app))
    await run_palette(pilot, "go: iteration 2")
    await pilot.press("3")
    assert await wait_for(pilot, lambda: _calls_title(screen_text(pilot.app)).startswith("Call 2 · "))


async def palette_go_call_n_opens_the_prompt(pilot: Pilot[object], _screen: TraceScreen) -> None:
    await run_palette(pilot, "go: call N")
    assert await wait_for(pilot, lambda: "\n : call" in screen_text(pilot.app))
    await pilot.press("4", "enter")
    assert await wait_for(pilot, lambda: _calls_title(screen_text(pilot.app)).startswith("Call 4 · "))


@pytest.mark.anyio
async def test_go_to_by_prompt_key_and_palette() -> None:
    async with opened(sample("support")) as (pilot, screen):
        await run_checks(
            pilot,
            screen,
            c_n_enter_shows_the_exact_prompt_of_call_n,  # first: the three keys count from launch
            colon_number_is_a_seq_in_the_events_view,
            colon_words_call_and_iter,
            escape_closes_the_prompt_and_nowhere_warns,
            palette_go_call_and_seq,
            palette_go_call_n_opens_the_prompt,
        )

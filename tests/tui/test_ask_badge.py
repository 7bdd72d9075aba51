"""The argument ask on the screen (docs/honesty.md §12.7): the timeline's ``ask`` badge, its legend
letter, the inspector's ask and answered rows (``w`` jumps to the ask), the Calls view's argument
source, and a run that ended paused in the run bar. Read from what is drawn."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import argument_ask, sample_path
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.calls import call_document
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.timeline import BADGE_LETTERS, timeline_legend
from tests.conftest import T0
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session, opened, screen_text, wait_for
from tests.tui.strategies import PALETTE, rendered
from tests.tui.test_link_cursor import row_backgrounds
from tests.tui.traces import sample


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_iteration_that_asked_has_the_badge_and_the_inspector_shows_the_ask_and_the_answer() -> None:
    with TraceReader(sample_path(SAMPLES, "argument-ask"), index=False) as reader:
        session = load_session(reader)
        assert [i for i in range(len(session.iterations)) if "ask" in session.badges(i)] == [0]
        shown = flat(rendered(inspect_iteration(session, session.iterations[0], PALETTE), width=200))
        calls = flat(rendered(call_document(session, session.iterations[0], PALETTE), width=200))
    assert (
        'argument ask call_1 get_balance $.account_id · the model guessed "ACC-1001"; the call waits for the user'
        in shown
    )
    assert "Which account_id should Balance lookup use?" in shown
    assert 'answered call_1 get_balance $.account_id ← the user: "ACC-7731"; the call runs with it' in shown
    # The Calls view: the guess from nowhere, then the user's answer the call ran with.
    assert "nowhere (model supplied)" in calls
    assert "user (answered the argument ask: the call ran with it)" in calls
    assert BADGE_LETTERS["ask"] not in {BADGE_LETTERS[b] for b in BADGE_LETTERS if b != "ask"}


def test_the_legend_explains_the_ask_letter() -> None:
    legend = timeline_legend(40, 8, {"ask"}, PALETTE)  # narrow: badges are letters
    assert "A argument ask" in legend.plain


@pytest.mark.anyio
async def test_the_timeline_draws_the_badge_and_w_shows_the_ask() -> None:
    async with opened(sample("argument-ask")) as (pilot, _screen):
        app = pilot.app

        def asked_row() -> str:
            return next((line for line in screen_text(app).splitlines() if "T1·I1" in line), "")

        assert await wait_for(pilot, lambda: asked_row().rstrip(" │").endswith(" tools       — ask")), (
            asked_row()
        )
        await pilot.press("g", "w")

        def marked() -> set[str]:
            return row_backgrounds(app, "argument ask call_1") - row_backgrounds(app, "Tool batch")

        assert await wait_for(pilot, lambda: bool(marked())), screen_text(app)
        assert "answered call_1 get_balance $.account_id ← the user" in screen_text(app)


@pytest.mark.anyio
async def test_a_run_closed_while_paused_says_so_in_the_run_bar(tmp_path: Path) -> None:
    path = tmp_path / "paused.fptrace.jsonl"
    clock = FixedClock(T0)
    provider = ScriptedProvider(replies=[ScriptedReply.tool_call("get_balance", {"account_id": "ACC-1001"})])
    with TraceFileSink.create(path, clock=clock) as sink:
        result = argument_ask.build_agent().run("Balance?", provider=provider, sink=sink, clock=clock)
    assert result.status == "paused"
    async with opened(path) as (pilot, _screen):
        app = pilot.app
        assert await wait_for(
            pilot, lambda: "paused (an argument ask was never answered)" in screen_text(app)
        ), screen_text(app)

"""A window's fold on the timeline (the ``compact`` badge) and in the inspector (docs/context-model.md
§7.1): read from the drawn screen of the ``windowed`` sample."""

from __future__ import annotations

import pytest

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.app import FpdebugApp
from fpdebug.tui.screens.badge_reason import BADGE_REASONS
from fpdebug.tui.widgets.events import summarize
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.timeline import BADGE_LETTERS
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import SIZE, load_session, loaded, screen_text, wait_for
from tests.tui.strategies import PALETTE, rendered

ROW = "compacted 2 older message(s) folded out of the history (max_messages=5); 5 kept, size 7 → 5"


def test_the_folding_iterations_have_the_badge_and_the_inspector_says_what_went() -> None:
    with TraceReader(sample_path(SAMPLES, "windowed"), index=False) as reader:
        session = load_session(reader)
        badged = [i for i in range(len(session.iterations)) if "compact" in session.badges(i)]
        assert badged == [3, 4]  # iterations 4 and 5: the history was over five messages there
        shown = " ".join(
            rendered(inspect_iteration(session, session.iterations[3], PALETTE), width=160).split()
        )
        quiet = " ".join(
            rendered(inspect_iteration(session, session.iterations[2], PALETTE), width=160).split()
        )
        folds = [summarize(r) for r in map(session.record, range(1, len(reader))) if r.kind == "compact"]
    assert ROW in shown and "compacted" not in quiet
    assert BADGE_REASONS["compact"].row(ROW)
    assert folds == ["compacted: 2 older message(s) folded away (max_messages=5); 5 kept"] * 2
    assert list(BADGE_LETTERS.values()).count(BADGE_LETTERS["compact"]) == 1


@pytest.mark.anyio
async def test_the_timeline_draws_the_compact_badge_on_the_folding_rows() -> None:
    app = FpdebugApp(sample_path(SAMPLES, "windowed"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        assert await wait_for(pilot, lambda: "T1·I5" in screen_text(app))
        rows = {row[:5]: row for row in (line.lstrip("│") for line in screen_text(app).splitlines())}
    # The badge column spells the name where it has room, its letter where it does not.
    mark = ("compact", f" {BADGE_LETTERS['compact']} ")
    assert any(m in rows["T1·I4"] for m in mark) and any(m in rows["T1·I5"] for m in mark)
    assert not any(m in rows["T1·I3"] for m in mark)

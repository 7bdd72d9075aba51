"""The step nudge and the wrap-up on the timeline (a badge and the route cell) and in the inspector."""

from __future__ import annotations

import pytest
from rich.text import Text

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.screens.badge_reason import BADGE_REASONS
from fpdebug.tui.widgets.events import summarize
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.timeline import BADGE_LETTERS, _route_cell
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered


@pytest.mark.parametrize(
    ("name", "badge", "at", "route_word", "row"),
    [
        ("step-nudge", "nudge", 1, "nudge", "step nudge step 1 of 2 (lookup_order) of refund unfinished"),
        ("wrap-up", "wrapup", 2, "wrap", "wrap-up 1 call(s) asked for at the limit never ran"),
    ],
)
def test_the_iteration_that_re_asked_has_its_badge_route_and_inspector_row(
    name: str, badge: str, at: int, route_word: str, row: str
) -> None:
    with TraceReader(sample_path(SAMPLES, name), index=False) as reader:
        session = load_session(reader)
        badged = [i for i in range(len(session.iterations)) if badge in session.badges(i)]
        assert badged == [at]  # only the iteration whose reply Route sent back
        iteration = session.iterations[at]
        cell = Text()
        _route_cell(cell, iteration.route, 6, PALETTE)
        assert cell.plain.strip() == route_word
        shown = rendered(inspect_iteration(session, iteration, PALETTE), width=160)
    assert row in " ".join(shown.split())
    assert BADGE_LETTERS[badge] not in {BADGE_LETTERS[b] for b in BADGE_LETTERS if b != badge}


def test_an_accepted_proposal_has_a_badge_and_its_reason_stands_beside_the_move() -> None:
    with TraceReader(sample_path(SAMPLES, "step-nudge"), index=False) as reader:
        session = load_session(reader)
        badged = [i for i in range(len(session.iterations)) if "proposal" in session.badges(i)]
        assert badged == [0]  # escalate's batch accepted it; the next pass honoured it
        batch = " ".join(
            rendered(inspect_iteration(session, session.iterations[0], PALETTE), width=160).split()
        )
        moved = " ".join(
            rendered(inspect_iteration(session, session.iterations[1], PALETTE), width=160).split()
        )
        stayed = " ".join(
            rendered(inspect_iteration(session, session.iterations[2], PALETTE), width=160).split()
        )
    reason = "“the customer asked for their money back”"
    assert f"effect propose-transition refund → accepted — {reason}" in batch
    assert f"proposal {reason} (escalate, iteration 1)" in moved
    assert "proposal" not in stayed.split("Cursor")[1].split("reachable")[0]  # the re-ask stays: no reason


@pytest.mark.parametrize(
    ("name", "badge", "at", "route_word", "row"),
    [
        (
            "output-retry",
            "retry",
            1,
            "retry",
            "output retry 1 of 2: the reply failed the output schema — priority: Input should be a valid integer",
        ),
        (
            "cost-budget",
            "wrapup",
            2,
            "wrap",
            "wrap-up 1 call(s) asked for past the cost budget never ran (spent $0.0045 of $0.004); one more call",
        ),
        (
            "cost-budget",
            "budget",
            3,
            "final",
            "stopped early cost-budget at iteration 3: the run spent $0.0045 of its $0.004 budget; "
            "1 call(s) never ran · wrapped up",
        ),
        ("time-window", "beyond", 1, "final", "result call_1 sales · batch of I1 · beyond now"),
    ],
)
def test_the_limits_and_the_time_layer_have_their_badge_and_row(
    name: str, badge: str, at: int, route_word: str, row: str
) -> None:
    with TraceReader(sample_path(SAMPLES, name), index=False) as reader:
        session = load_session(reader)
        badged = [i for i in range(len(session.iterations)) if badge in session.badges(i)]
        assert badged == [at]
        iteration = session.iterations[at]
        cell = Text()
        _route_cell(cell, iteration.route, 6, PALETTE)
        assert cell.plain.strip() == route_word
        shown = " ".join(rendered(inspect_iteration(session, iteration, PALETTE), width=200).split())
    assert row in shown
    assert BADGE_LETTERS[badge] not in {BADGE_LETTERS[b] for b in BADGE_LETTERS if b != badge}
    assert BADGE_REASONS[badge].row(row)  # `w` on the badge lands on this row


@pytest.mark.parametrize(
    ("name", "kind", "summary"),
    [
        ("output-retry", "output_retry", "output retry 1 of 2: priority: Input should be a valid integer"),
        ("cost-budget", "wrap_up", "wrap-up: 1 call(s) asked for past the cost budget never ran"),
        ("cost-budget", "turn_end", "· stopped early (cost-budget: $0.0045 of $0.004) · wrapped up"),
        ("wrap-up", "wrap_up", "wrap-up: 1 call(s) asked for at the iteration limit never ran"),
    ],
)
def test_the_events_view_says_what_the_loop_did(name: str, kind: str, summary: str) -> None:
    with TraceReader(sample_path(SAMPLES, name)) as reader:
        records = [reader[line] for line in range(1, len(reader))]
    (record,) = [r for r in records if getattr(r, "kind", None) == kind]
    assert summary in summarize(record)

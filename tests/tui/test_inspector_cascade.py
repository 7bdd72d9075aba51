"""The pass inspector shows a turn-start cascade's verdict: the classifier's score on an ``intent``
move, the decider's menu on a ``decider`` move (docs/context-model.md §5.1)."""

from __future__ import annotations

import re

from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.inspector import inspect_iteration
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered


def test_the_cursor_section_shows_the_score_and_the_menu() -> None:
    with TraceReader(sample_path(SAMPLES, "cascade"), index=False) as reader:
        session = load_session(reader)
        shown = [rendered(inspect_iteration(session, it, PALETTE), width=120) for it in session.iterations]
    intent, stay, decider = shown[0], shown[1], shown[4]
    assert "by intent · strength semantic" in intent and re.search(r"\n  score +0\.8\n", intent)
    assert not re.search(r"\n  (score|menu) ", stay) and not re.search(r"\n  menu ", intent)
    assert "by decider · strength semantic" in decider and re.search(
        r"\n  menu +billing, shipping\n", decider
    )

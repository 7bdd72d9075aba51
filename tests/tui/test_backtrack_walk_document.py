"""The backtrack pane's walk section, built headless (the Pilot run is in test_backtrack_pane)."""

from __future__ import annotations

from fpdebug.backtrack import explain, walk_to_root
from fpdebug.demo import recorded_module_loader
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.backtrack_report import PaneState, backtrack_document
from tests.tui.helpers import document_text
from tests.tui.traces import sample


def test_the_pane_document_lists_the_walks_hops() -> None:
    path = sample("traced-argument")
    walk = walk_to_root(path, beam=1, load_module=recorded_module_loader(path))
    report = explain(path).report
    text = document_text(backtrack_document(report, PaneState(walk=walk), None, Palette()))
    part = " ".join(text[text.index("Walk to the root") :].split())
    assert "1. seq 14 iteration 3 wrote" in part
    assert "confirmed tool 'list_orders' 3/3 flipped" in part
    assert "← HOP llm_call #1 (seq 4, turn 1, iteration 1) asked for it" in part
    assert "2. seq 4 iteration 1 wrote" in part
    assert "root tool 'list_orders' (convicted at seq 14)" in part
    assert "stop nothing-recalled" in part
    # Without a walk there is no section.
    assert "Walk to the root" not in document_text(backtrack_document(report, PaneState(), None, Palette()))

"""``python -m bench.cold_start`` runs the real ``fpdebug view`` on a pty and stamps its first full screen."""

from __future__ import annotations

import pytest

from bench.cold_start import measure, screen_text


@pytest.mark.slow
def test_one_run_of_each_is_timed_and_the_screen_is_full_at_the_stamp() -> None:
    result = measure(repeat=1)
    runs = (result.view_s, result.python_s, result.textual_import_s, result.textual_floor_s)
    assert [len(walls) for walls in runs] == [1, 1, 1, 1]
    # The viewer's first screen comes after the bare interpreter's exit, and it spent CPU getting there;
    # any Textual program (the floor) spends more CPU than the bare interpreter.
    assert 0 < result.python < result.view < 60
    assert result.view_cpu > result.python_cpu > 0
    assert min(result.textual_floor_cpu_s) > result.python_cpu
    # What the viewer had written to its terminal when it stamped: every pane of the first screen.
    screen = result.screen
    assert "support.fptrace.jsonl" in screen and "5 iterations" in screen  # the run header
    assert "T1·I5" in screen  # the timeline's last row
    assert "Active injections" in screen  # the pass inspector
    assert "29 lines" in screen  # the status line
    assert "Quit" in screen and "Keys" in screen  # the key bar, which composes last


def test_screen_text_drops_escape_sequences() -> None:
    raw = b"\x1b[?1049h\x1b[1;1H\x1b[38;2;1;2;3mT1\xc2\xb7I5\x1b[0m \x1b]22;default\x07 keys\x1b[K"
    assert screen_text(raw) == "T1·I5\n keys"

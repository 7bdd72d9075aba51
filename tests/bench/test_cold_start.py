"""``python -m bench.cold_start`` runs the real ``fpdebug view`` on a pty and gets its first-paint stamp."""

from __future__ import annotations

import pytest

from bench.cold_start import measure


@pytest.mark.slow
def test_one_run_of_each_is_timed() -> None:
    result = measure(repeat=1)
    assert len(result.view_s) == len(result.python_s) == 1
    # The viewer's first screen comes after the bare interpreter's exit, and it spent CPU getting there.
    assert 0 < result.python < result.view < 60
    assert result.view_cpu > result.python_cpu > 0

"""Drive the real ``fpdebug view`` in tmux: open the backtrack pane on a copy of the planted-fact sample,
start the ablation reruns, and read the verdicts off the screen as a person would; then the diff view.

The copy lives in ``tmp_path`` (a backtrack writes its sidecar beside the trace). tmux runs on a
private socket (the part 1 script's fixture), so no other tmux server is touched.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from fpdebug.backtrack import load_sidecar, sidecar_path_for
from tests.tui.test_tmux import ROOT, Tmux, tmux  # noqa: F401 - the fixture is used by name
from tests.tui.traces import sample

pytestmark = pytest.mark.tmux


def _start(tmux: Tmux, trace: Path, size: tuple[int, int]) -> None:  # noqa: F811
    command = f"cd {ROOT} && env -u COLUMNS -u LINES {sys.executable} -m fpdebug view {trace}; sleep 30"
    tmux.run(
        "new-session", "-d", "-s", tmux.session, "-x", str(size[0]), "-y", str(size[1]),
        "-e", "LANG=C.UTF-8", "-e", "TERM=xterm-256color", command,
    )


def test_backtrack_pane_reruns_and_confirms_the_planted_fact(
    tmux: Tmux, tmp_path: Path  # noqa: F811 - the fixture
) -> None:
    trace = tmp_path / "planted-fact.fptrace.jsonl"
    shutil.copyfile(sample("planted-fact"), trace)
    _start(tmux, trace, (160, 48))
    tmux.wait_for(lambda s: "run sample-planted-fact" in s and "T1·I2" in s, timeout=30)

    # the pane: the final answer's chain and ranked suspects, correlational until rerun
    tmux.keys("7", literal=True)
    screen = tmux.wait_for(lambda s: "Backtrack llm_call #2 (seq 7, turn 1, iteration 2)" in s, timeout=30)
    assert "APPROVED: refund of $250.00 for ORD-7 issued." in screen
    assert "CORRELATIONAL" in screen and "← READ" in screen
    assert "no reruns yet" in screen

    # ablate: the baseline, then one seeded probe per suspect; the culprit is confirmed causal
    tmux.keys("a", literal=True)
    screen = tmux.wait_for(lambda s: "complete: 18 reruns" in s, timeout=30)
    assert "baseline     0/3 flipped with no ablation  (stable)" in screen
    rows = [line for line in screen.splitlines() if "ablating" in line and "flipped" in line]
    confirmed = [row for row in rows if "CONFIRMED" in row]
    assert len(confirmed) == 1
    assert "injection 'vip-override'" in confirmed[0] and "3/3 flipped" in confirmed[0]
    assert sum("not confirmed" in row for row in rows) == 4
    assert "tier causal" in screen

    # the diff view from the same app: mark I1, select I2
    tmux.keys("1", literal=True)
    tmux.wait_for(lambda s: "Iteration 1 · turn 1" in s)
    tmux.keys("m", literal=True)
    tmux.wait_for(lambda s: "marked as A" in s)
    tmux.keys("j", literal=True)
    tmux.wait_for(lambda s: "Iteration 2 · turn 1" in s)
    tmux.keys("6", literal=True)
    screen = tmux.wait_for(lambda s: "Diff A T1·I1  →  B T1·I2" in s)
    assert "A is the marked iteration" in screen

    tmux.keys("q", literal=True)
    tmux.wait_for(lambda s: "Diff A" not in s)
    saved = load_sidecar(sidecar_path_for(trace)).latest(call_seq=7)
    assert saved is not None and saved.status == "complete"
    assert not sidecar_path_for(sample("planted-fact")).exists()

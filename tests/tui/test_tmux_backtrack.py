"""Drive the real ``fpdebug view`` in tmux: open the backtrack pane on a copy of the planted-fact sample,
start the ablation reruns, and read the verdicts off the screen as a person would; then the diff view.

The copy lives in ``tmp_path`` (a backtrack writes its sidecar beside the trace). tmux runs on a
private socket (``tests/tui/tmux.py``), so no other tmux server is touched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fpdebug.backtrack import load_sidecar, sidecar_path_for
from tests.tui.tmux import READY, Tmux, tmux  # noqa: F401 - the fixture is used by name
from tests.tui.traces import sample

pytestmark = pytest.mark.tmux

RERUNS = 300.0
"""Seconds the 18 reruns may take on a loaded machine (about 2 s on an idle one)."""


def test_backtrack_pane_reruns_and_confirms_the_planted_fact(
    tmux: Tmux,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "planted-fact.fptrace.jsonl"
    shutil.copyfile(sample("planted-fact"), trace)
    tmux.fpdebug("view", str(trace))
    tmux.wait_for(lambda s: "run sample-planted-fact" in s and "T1·I2" in s and READY in s)

    # the pane: the final answer's chain and ranked suspects, correlational until rerun
    tmux.keys("7", literal=True)
    pane = (
        "Backtrack llm_call #2 (seq 7, turn 1, iteration 2)",
        "APPROVED: refund of $250.00 for ORD-7 issued.",
        "CORRELATIONAL",
        "← READ",
        "no reruns yet",
    )
    screen = tmux.wait_for(lambda s: all(part in s for part in pane))
    assert all(part in screen for part in pane)

    # ablate: the baseline, then one seeded probe per suspect; the culprit is confirmed causal
    tmux.keys("a", literal=True)

    def verdicts(text: str) -> list[str]:
        return [line for line in text.splitlines() if "ablating" in line and "flipped" in line]

    def done(text: str) -> bool:
        found = verdicts(text)
        confirmed = sum("CONFIRMED" in row for row in found)
        refuted = sum("not confirmed" in row for row in found)
        return "complete: 18 reruns" in text and (confirmed, refuted) == (1, 4)

    screen = tmux.wait_for(done, timeout=RERUNS)
    assert "baseline     0/3 flipped with no ablation  (stable)" in screen
    confirmed = [row for row in verdicts(screen) if "CONFIRMED" in row]
    assert len(confirmed) == 1
    assert "injection 'vip-override'" in confirmed[0] and "3/3 flipped" in confirmed[0]
    assert sum("not confirmed" in row for row in verdicts(screen)) == 4
    assert "tier causal" in screen

    # the diff view from the same app: mark I1, select I2 (keys are handled in the order typed;
    # the "marked as A" toast is short-lived, the diff's own line below says the same for good)
    tmux.keys("1", literal=True)
    tmux.wait_for(lambda s: "Iteration 1 · turn 1" in s)
    tmux.keys("m", literal=True)
    tmux.keys("j", literal=True)
    tmux.wait_for(lambda s: "Iteration 2 · turn 1" in s)
    tmux.keys("6", literal=True)
    screen = tmux.wait_for(lambda s: "Diff A T1·I1  →  B T1·I2" in s and "A is the marked iteration" in s)
    assert "A is the marked iteration" in screen

    tmux.keys("q", literal=True)
    tmux.wait_for(lambda s: "EXIT=" in s)
    saved = load_sidecar(sidecar_path_for(trace)).latest(call_seq=7)
    assert saved is not None and saved.status == "complete"
    assert not sidecar_path_for(sample("planted-fact")).exists()

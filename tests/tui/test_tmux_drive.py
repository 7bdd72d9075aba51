"""Drive a live demo in a real terminal (tmux) and read the screen as a person would.

``fpdebug demo support`` at 160×48: it opens paused on pass 1; ``s`` steps to pass 2; the breakpoints
menu (``b``) sets ``lease_prune``; ``space`` continues to iteration 3's prune; the skill map shows
where the cursor is; ``q`` ends the run (``run_end`` interrupted, exit code 130) and the trace it
leaves behind validates. ``fpdebug demo planted-fact``: the Backtrack pane opened before the run
answered follows it, and shows the final answer's chain once ``space`` has run it to the end. Each
step waits until the screen shows everything it checks.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fpdebug.cli import main
from tests.tui.tmux import READY, Tmux, rows, tmux  # noqa: F401 - the fixture is used by name

pytestmark = pytest.mark.tmux


def test_step_a_live_demo_break_on_a_prune_and_quit(tmux: Tmux, tmp_path: Path) -> None:
    tmux.fpdebug("demo", "support", cwd=tmp_path)

    # it opens paused on the first pass, with the run's first iteration selected
    opening = ("paused at T1·I1 pass", "b Breakpoints", "Iteration 1 · turn 1", "drive ●", READY)
    screen = tmux.wait_for(lambda s: all(part in s for part in opening))
    assert "space Pause/Go" in screen and "s Step" in screen
    assert "‖ paused at T1·I1" in screen.splitlines()[1]  # the run header agrees

    # s: one pass further; the timeline grew by one row and the inspector follows
    tmux.keys("s", literal=True)
    stepped = ("paused at T1·I2 pass", "Iteration 2 · turn 1")
    screen = tmux.wait_for(lambda s: all(part in s for part in stepped) and rows(s) == ["T1·I1", "T1·I2"])
    assert rows(screen) == ["T1·I1", "T1·I2"]

    # b: the breakpoints menu; the first entry is lease_prune
    tmux.keys("b", literal=True)
    tmux.wait_for(lambda s: "Breakpoints · 0 set" in s and "lease_prune" in s)
    tmux.keys("Space")
    tmux.wait_for(lambda s: "Breakpoints · 1 set" in s)
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "· 1 breakpoint" in s and "Breakpoints · " not in s)

    # space: continue until the prune of iteration 3 (the spent next-call lease, at evaluate)
    tmux.keys("Space")
    hit = "breakpoint lease_prune hit at T1·I3 lease_prune (line 15) · at evaluate: wire-format (spent)"
    screen = tmux.wait_for(lambda s: hit in s and "Iteration 3 · turn 1" in s and "pruned  at evaluate" in s)
    assert "pruned  at evaluate" in screen

    # the skill map: the cursor stays on billing, reached by the route from triage
    tmux.keys("5", literal=True)
    where = "cursor on billing since T1·I2 (route)"
    screen = tmux.wait_for(lambda s: "Skill map · run" in s and where in s and "│ ▶ triage ├────a▶" in s)
    assert "│ ▶ triage ├────a▶" in screen

    # q: the run is ended cleanly and the trace it leaves behind is whole
    tmux.keys("q", literal=True)
    screen = tmux.wait_for(lambda s: "EXIT=130" in s and "trace: support-" in s)
    assert "run_end interrupted" in screen and "trace: support-" in screen
    traces = list(tmp_path.glob("support-*.fptrace.jsonl"))
    assert len(traces) == 1
    assert main(["validate", str(traces[0])]) == 0
    last = orjson.loads(traces[0].read_bytes().splitlines()[-1])
    assert (last["kind"], last["status"]) == ("run_end", "interrupted")


def test_the_backtrack_pane_follows_a_live_demo_to_its_final_answer(
    tmux: Tmux,
    tmp_path: Path,
) -> None:
    tmux.fpdebug("demo", "planted-fact", cwd=tmp_path)
    tmux.wait_for(lambda s: "paused at T1·I1 pass" in s and READY in s)

    # 7 before any answer exists: the pane says so
    tmux.keys("7", literal=True)
    tmux.wait_for(lambda s: "no llm_call with a reply" in s)

    # space: the run goes to its end, and the pane traces the final answer it wrote
    tmux.keys("Space")
    chain = (
        "■ completed",
        "Backtrack llm_call #2 (seq 7, turn 1, iteration 2)",
        "APPROVED: refund of $250.00 for ORD-7 issued.",
        "← READ",
        "← BORN",
        "vip-override",
        "CORRELATIONAL",
    )
    screen = tmux.wait_for(lambda s: all(part in s for part in chain))
    assert "no llm_call with a reply" not in screen

    tmux.keys("q", literal=True)
    screen = tmux.wait_for(lambda s: "EXIT=" in s and "trace: planted-fact-" in s)
    traces = list(tmp_path.glob("planted-fact-*.fptrace.jsonl"))
    assert len(traces) == 1 and main(["validate", str(traces[0])]) == 0
    last = orjson.loads(traces[0].read_bytes().splitlines()[-1])
    assert (last["kind"], last["status"]) == ("run_end", "completed")

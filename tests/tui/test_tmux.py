"""Drive the real ``fpdebug view`` in a real terminal (tmux) and read the screen as a person would.

Open a sample trace, move to the iteration whose pass prunes a lease, open the leases view, then
search and filter; each step waits until the screen shows everything it checks (the app paints
asynchronously, and CI is slow), then asserts. tmux runs on a private socket (``tests/tui/tmux.py``),
so the test never touches another tmux server. CI installs tmux (``.ci/run``).
"""

from __future__ import annotations

import pytest

# Tmux and the fixture are re-exported: tests/reliability/test_terminal.py takes them from here.
from tests.tui.tmux import READY, Tmux, rows, tmux  # noqa: F401
from tests.tui.traces import sample

pytestmark = pytest.mark.tmux


def test_open_move_to_a_prune_open_leases_search_and_filter(tmux: Tmux) -> None:
    tmux.fpdebug("view", str(sample("support")))

    # open: the header, the timeline and the first iteration's inspector, the whole trace read
    screen = tmux.wait_for(lambda s: "Iteration 1 · turn 1" in s and "T1·I5" in s and READY in s)
    assert "run sample-support" in screen and "■ completed" in screen

    # move to the iteration whose pass prunes a lease (next-call wire-format, spent)
    tmux.keys("]", "]", literal=True)
    prune = ("Iteration 3 · turn 1", "pruned  at evaluate", "spent  wire-format next-call")
    screen = tmux.wait_for(lambda s: all(part in s for part in prune))
    assert all(part in screen for part in prune)

    # the leases view: one row per lease, the selected iteration's column, how each ended
    tmux.keys("2", literal=True)
    leases = ("granted by", "tenure-ended T1·I4", "spent T1·I3", "refund-policy", "wire-format")
    screen = tmux.wait_for(lambda s: all(part in s for part in leases))
    assert all(part in screen for part in leases)

    # search and filter the leases: only the one whose tenure ended stays
    tmux.keys("/", literal=True)
    tmux.wait_for(lambda s: "esc Close" in s)  # the prompt has the focus

    def lease_rows(text: str) -> list[str]:
        return [line for line in text.splitlines() if "granted by" not in line and "@I2" in line]

    tmux.keys("tenure", literal=True)
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "filter tenure 1 match" in s and len(lease_rows(s)) == 1)
    assert "refund-policy" in lease_rows(screen)[0]

    # filter the timeline by kind: the two pruning iterations remain, n walks them
    tmux.keys("1", literal=True)
    tmux.wait_for(lambda s: "act  ls  pk" in s)
    tmux.keys("/", literal=True)
    tmux.wait_for(lambda s: "esc Close" in s)
    tmux.keys("kind:lease_prune", literal=True)
    tmux.keys("Enter")
    screen = tmux.wait_for(
        lambda s: "filter kind:lease_prune 2 matches" in s and rows(s) == ["T1·I3", "T1·I4"]
    )
    assert rows(screen) == ["T1·I3", "T1·I4"]
    tmux.keys("n", literal=True)
    tmux.wait_for(lambda s: "Iteration 4 · turn 1" in s)

    tmux.keys("q", literal=True)
    screen = tmux.wait_for(lambda s: "EXIT=" in s)
    assert "EXIT=0" in screen and "Iteration" not in screen

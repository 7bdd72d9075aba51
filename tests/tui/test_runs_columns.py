"""The runs table's columns: which fit, and how wide the agent column is."""

from __future__ import annotations

from fpdebug.tui.widgets.runs_list import fit_columns, heading


def _agent_width(width: int) -> int:
    return next(column.width for column in fit_columns(width) if column.title == "agent")


def test_a_wide_screen_gives_agent_names_room_and_a_narrow_one_keeps_the_answer() -> None:
    assert _agent_width(80) == _agent_width(120) == 12  # the snapshot sizes keep the compact table
    assert _agent_width(200) == 24  # "leases-cyclic", "revised-amount" are no longer cut
    assert "answer" in heading(200, "started", False).plain
    assert len(heading(200, "started", False).plain) < 200 - 40  # the answer still has its room

"""A decision-tree leaf's path in the explain views: the pass diff's why, the backtracker's ALLOWED words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fpdebug.backtrack.provenance.models import Admission
from fpdebug.backtrack.provenance.words import admission_words, reason_words
from fpdebug.cli import main
from fpdebug.demo import sample_path
from fpdebug.trace.reader import TraceReader
from fpdebug.views.pass_diff import iter_changes, pass_diff
from fpdebug.views.run_diff import run_diff
from tests.demo.helpers import SAMPLES
from tests.tui.helpers import load_session


def test_the_pass_diff_says_which_path_held_and_which_no_longer_does() -> None:
    with TraceReader(sample_path(SAMPLES, "decision-tree"), index=False) as reader:
        session = load_session(reader)
        diff = pass_diff(session, 1, 2)  # T1·I2 (billing › refund) → T2·I1 (shipping)
        changes = {(c.slot, c.id, c.change): c.why for c in iter_changes(diff)}
    assert changes[("system-prompt", "shipping", "entered")] == (
        "every branch on its path held (decision tree support: shipping)"
    )
    assert changes[("tools", "refund", "left")] == (
        "a branch on its path no longer holds (decision tree support: billing › refund)"
    )


def test_the_backtracker_words_a_tree_admission_with_its_path() -> None:
    admission = Admission(via="tree", tree_path=["billing", "refund"], tree_label="support")
    assert (
        admission_words(admission)
        == "every branch on its path held (decision tree support: billing › refund)"
    )
    assert reason_words(Admission(via="tree")) == (
        "rode because every branch on its path held (decision tree ?: (path not recorded))"
    )


def test_backtrack_says_why_a_tree_leaf_rode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "decision-tree.fptrace.jsonl"
    shutil.copy(sample_path(SAMPLES, "decision-tree"), trace)
    assert main(["backtrack", str(trace), "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "skill 'shipping'" in out
    assert "← ALLOWED  every branch on its path held (decision tree support: shipping)" in out


def test_the_run_diff_tells_a_changed_tree_apart(tmp_path: Path) -> None:
    a = tmp_path / "a.fptrace.jsonl"
    shutil.copy(sample_path(SAMPLES, "decision-tree"), a)
    text = a.read_text(encoding="utf-8")
    b = tmp_path / "b.fptrace.jsonl"
    b.write_text(text.replace('"label":"copy"', '"label":"duplicate"', 1), encoding="utf-8")
    with TraceReader(a, index=False) as ra, TraceReader(b, index=False) as rb:
        sa, sb = load_session(ra), load_session(rb)
        diff = run_diff((sa, sa.model.runs[0], str(a)), (sb, sb.model.runs[0], str(b)))
    (skill_map,) = [d for d in diff.declared if d.kind == "skill-map"]
    assert skill_map.a == "3 skill(s) (refund, invoice-copy, shipping), 0 route(s), 1 decision tree(s)"
    assert any('"label": "duplicate"' in line for line in skill_map.detail)

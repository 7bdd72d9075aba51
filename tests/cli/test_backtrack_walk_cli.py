"""``fpdebug backtrack --walk``: the walk to the root in text and JSON, and its option errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpdebug.cli import main
from tests.backtrack.traces import copy_sample


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtrack", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_walk_prints_each_frame_the_hop_the_root_and_the_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_sample("traced-argument", tmp_path)
    code, out, err = run(capsys, str(path), "--walk", "--beam", "1", "--no-save")
    assert (code, err) == (0, "")
    walk = out[out.index("walk to the root") :]
    assert "1. seq 14 (turn 1, iteration 3) wrote 'Refunded $89.90" in walk
    assert "CAUSAL: ablating tool 'list_orders' flipped the outcome in 3/3" in walk
    assert "← HOP     llm_call #1 (seq 4, turn 1, iteration 1) asked for it" in walk
    assert "2. seq 4 (turn 1, iteration 1) wrote '→ list_orders(" in walk
    assert "root: tool 'list_orders' (convicted at seq 14)" in walk
    assert "stop: nothing-recalled: no source of this frame" in walk
    assert "2 probes, 6 reruns" in walk


def test_the_walk_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("planted-fact", tmp_path)
    code, out, _ = run(capsys, str(path), "--walk", "--beam", "3", "--json", "--no-save")
    assert code == 0
    walk = json.loads(out)["walk"]
    assert (walk["stop"], walk["root"]) == ("root-declared", "injection 'vip-override'")
    assert walk["steps"][0]["convicted"] == "injection 'vip-override'"
    assert [v["kind"] for v in walk["steps"][0]["verdicts"]] == [
        "not-confirmed",
        "not-confirmed",
        "confirmed",
    ]


def test_without_walk_there_is_no_walk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("planted-fact", tmp_path)
    code, out, _ = run(capsys, str(path), "--json", "--no-save")
    assert code == 0 and "walk" not in json.loads(out)


def test_a_beam_below_one_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_sample("planted-fact", tmp_path)
    code, _, err = run(capsys, str(path), "--walk", "--beam", "0")
    assert code == 2 and "--beam must be at least 1, got 0" in err

"""The bench's plumbing on tiny traces: both shapes, baselines from the same run, RSS of a fresh process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import commands
from bench.commands import tree_pss_kb
from bench.figures import stopped_row
from bench.probes import peak_rss_mb
from bench.run import main

ROOT = Path(__file__).resolve().parents[2]


def test_fresh_process_reads_its_own_peak_not_its_parents() -> None:
    """A child exec'd from a process that holds 200 MB reports its own VmHWM, far below the parent's."""
    ballast = bytearray(200 << 20)  # touched: resident in this process
    ballast[::4096] = b"x" * len(ballast[::4096])
    parent = peak_rss_mb()
    done = subprocess.run(
        [sys.executable, "-c", "from bench.probes import peak_rss_mb; print(peak_rss_mb())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    child = float(done.stdout.strip())
    assert parent > 200
    assert child < parent - 150, (child, parent)
    del ballast


def test_table_has_both_shapes_each_row_against_a_same_run_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--sizes", "200", "--no-10m", "--repeat", "1",
            "--steps", "index", "commands", "--commands", "model",
            "--out-dir", str(tmp_path),
        ]
    )  # fmt: skip
    assert code == 0
    table = capsys.readouterr().out
    results = json.loads((tmp_path / "results.json").read_text())
    rows = results["figures"]
    assert not [row for row in rows if row["number"] == "!"], table
    assert {row["shape"] for row in rows} == {"synthetic", "demo"}
    for shape in ("synthetic", "demo"):
        names = {row["name"].split(" (")[0].strip() for row in rows if row["shape"] == shape}
        assert {"index build, cold cache", "index on reopen", "RunModel.build"} <= names, names
    for row in rows:
        assert row["size"] == 200
        assert row["baseline"], row  # every figure beside its baseline
    model = [row["raw"] for row in rows if row["raw"].get("command") == "model"]
    for raw in model:  # the command and its parse anchor alternated in one run, RSS of each child's own
        assert raw["pairs"] == 1
        assert 0 < raw["parse_peak_mb"] < 200
        assert raw["peak_mb"] > raw["parse_peak_mb"]
    index = [row["raw"] for row in rows if row["number"] == "1"]
    assert all(len(raw["wc_s"]) == len(raw["cold_s"]) == 1 for raw in index)
    for header in ("shape", "size", "baseline (same run)", "ratio", "target", "met"):
        assert header in table
    assert "| synthetic " in table and "| demo " in table


def test_a_forked_workers_inherited_pages_count_once_in_the_tree() -> None:
    """A parent holding 150 MB forks two workers: their RSS each shows the 150 MB, the tree's PSS once."""
    code = (
        "import os, sys, time\n"
        "ballast = bytearray(150 << 20)\n"
        "ballast[::4096] = b'x' * len(ballast[::4096])\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(30); os._exit(0)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    kids: set[int] = set()
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        total_kb, kids = tree_pss_kb(process.pid)
        rss_mb = []
        for pid in (process.pid, *kids):
            with open(f"/proc/{pid}/status") as status:
                rss_mb.append(
                    next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
                )
    finally:
        for pid in kids:  # the workers this test's child forked, by id
            os.kill(pid, signal.SIGKILL)
        process.kill()
        process.wait()
    assert len(kids) == 2
    assert all(rss > 150 for rss in rss_mb)  # each worker's RSS (and VmHWM) shows what it inherited
    assert 150 < total_kb / 1024 < 150 + 60, (total_kb, rss_mb)  # the tree holds it once


def test_a_command_past_the_stop_ratio_is_stopped_and_raises() -> None:
    """The stop ends the command's child (its whole process group) and says what the limit was."""
    trace = ROOT / "sample_traces" / "support.fptrace.jsonl"
    with pytest.raises(commands.Stopped) as stop:
        commands.measure("validate", trace, 1, stop_ratio=0.001, slack=0.05)
    assert stop.value.ratio == 0.001
    assert stop.value.limit == pytest.approx(0.05 + 0.001 * stop.value.parse_wall)
    row = stopped_row("8a", "validate", stop.value)
    assert row.met is False and "stopped" in row.measured


def test_the_10m_step_measures_then_removes_its_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 10M step's path on a stand-in size: index, first screen, RSS + full load, a command, cleanup."""
    from bench import run

    monkeypatch.setattr(run, "TEN_M", 300)
    plan = run.Plan([200], 1, ["10m"], ["demo"], ["demo"], out_dir=tmp_path, commands=run.COMMAND_ROWS)
    plan.ten_m_commands = ["model"]
    rows = run._ten_million(plan, "demo", lambda _: None)
    numbers = {row.number for row in rows}
    assert {"1", "1b", "2", "2b", "4", "4b", "8f"} <= numbers, numbers  # model keeps its letter
    assert all(row.size == 300 and row.shape == "demo" for row in rows)
    assert not list(tmp_path.glob("fpdebug-bench-10m-*"))  # generated, then removed

"""``fpdebug validate`` over line ranges on several processes finds what one process finds, in order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.demo_trace import iter_demo_lines
from fpdebug.cli import main
from fpdebug.trace import parallel
from fpdebug.trace.reader import TraceReader


def _damaged(path: Path, seed: int) -> Path:
    """A demo-shaped trace with every kind of problem sprinkled in, and sometimes a torn tail."""
    rng = random.Random(seed)
    lines = b"".join(iter_demo_lines(600)).splitlines()
    out = [lines[0]]
    for raw in lines[1:]:
        roll = rng.random()
        if roll < 0.02:
            continue  # a seq gap
        if roll < 0.04:
            out.append(raw)  # a repeated seq
        elif roll < 0.05:
            raw = raw + b"\r"
        elif roll < 0.06:
            raw = raw[:-1] + b',"seq":1}'  # a key twice
        elif roll < 0.07:
            raw = raw.replace(b'{"kind":"', b'{"kind":"future_', 1)  # an unknown kind
        elif roll < 0.08:
            raw = raw[: rng.randint(0, len(raw))]  # a torn fragment in the middle
        elif roll < 0.09:
            raw = b""
        elif roll < 0.10:
            raw = raw + b" " * 3000  # over the line limit below
        out.append(raw)
    body = b"\n".join(out) + b"\n"
    if seed % 2:
        body += b'{"kind":"pass","seq":'  # a torn tail
    path.write_bytes(body)
    return path


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("workers", [2, 3])
def test_the_workers_find_the_same_problems_in_the_same_order(
    tmp_path: Path, seed: int, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _damaged(tmp_path / "damaged.fptrace.jsonl", seed)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_LINES", 0)
    with TraceReader(path, max_line_bytes=2500) as reader:
        alone = reader.problems()
        together = list(parallel.iter_problems(reader, workers=workers))
    assert len(alone) > 40
    assert {problem.code for problem in alone} >= {"seq", "crlf", "duplicate-key", "unknown-kind", "invalid"}
    assert together == alone


def test_a_healthy_file_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "demo.fptrace.jsonl"
    path.write_bytes(b"".join(iter_demo_lines(900)))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_LINES", 0)
    with TraceReader(path) as reader:
        assert list(parallel.iter_problems(reader, workers=2)) == []
    assert main(["validate", str(path)]) == 0
    # iter_demo_lines(900) ends on a whole run, so the count follows the committed samples.
    lines = path.read_bytes().count(b"\n")
    assert capsys.readouterr().out.endswith(f": ok ({lines} lines, schema_version 1)\n")
    damaged = _damaged(tmp_path / "damaged.fptrace.jsonl", 1)
    assert main(["validate", str(damaged)]) == 1
    shown = capsys.readouterr().out.splitlines()
    monkeypatch.setattr(parallel, "PARALLEL_MIN_LINES", 10**9)
    assert main(["validate", str(damaged)]) == 1
    assert capsys.readouterr().out.splitlines() == shown

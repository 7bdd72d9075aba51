"""A 30 MB single OTLP request imports in memory that does not grow with it (a fresh child's peak RSS).

The child reads its peak RSS from ``VmHWM`` in ``/proc/self/status``: the peak of its own address
space. ``getrusage().ru_maxrss`` would not do: Linux carries it across ``execve``, so a child of
a large parent (pytest) starts with the parent's peak and would hide any growth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ingest_stream import generate

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from pathlib import Path
from fpdebug.ingest.otlp import import_otlp

def peak_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

small, big, out = map(Path, sys.argv[1:4])
import_otlp([small], out)  # every module and message descriptor loaded: the baseline
before = peak_kb()
summary = import_otlp([big], out)
after = peak_kb()
print(json.dumps({"before_kb": before, "after_kb": after, "runs": summary.runs, "spans": summary.spans}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc (Linux)")
@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_peak_memory_does_not_grow_with_the_request(tmp_path: Path, encoding: str) -> None:
    # spans of 100 kB (long prompts): few spans, so the child is quick; 30 MB all the same
    small, big = tmp_path / "small", tmp_path / "big"
    generate(small, 1_000_000, encoding, pad=100_000)
    traces = generate(big, 30_000_000, encoding, pad=100_000)
    size = big.stat().st_size
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(small), str(big), str(tmp_path / "out.fptrace.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["runs"] == traces and figures["spans"] == traces * 7
    grown = (figures["after_kb"] - figures["before_kb"]) * 1024
    # whole, the file alone would be 30 MB, and its parse several times that
    print(f"{encoding}: {size / 1e6:.1f} MB, peak RSS grew {grown / 1e6:.1f} MB")
    assert grown < size / 5, f"peak RSS grew {grown / 1e6:.1f} MB importing {size / 1e6:.1f} MB"

"""Whole-file commands read each line once and still write the bytes they wrote before (issue 22).

Compared on the bench's two shapes, small: the synthetic trace (long runs, 2 KB events) and the
demo-shaped one (the demo runs repeated, short runs of 850-byte events).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.demo_trace import iter_demo_lines
from bench.gen_trace import generate
from fpdebug.export import report_stream
from fpdebug.trace import reader as reader_module
from tests.export.test_report_memory import streamed, whole


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shapes")
    synthetic = root / "synthetic.fptrace.jsonl"
    generate(synthetic, 1_500, seed=3)
    demo = root / "demo.fptrace.jsonl"
    demo.write_bytes(b"".join(iter_demo_lines(700)))
    return {"synthetic": synthetic, "demo": demo}


@pytest.mark.parametrize("shape", ["synthetic", "demo"])
def test_the_streamed_report_validates_each_line_once(
    shapes: dict[str, Path], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shapes[shape]
    expected = whole(path)
    calls: list[int] = []
    classify = reader_module.classify_line

    def counted(line: int, offset: int, raw: bytes) -> object:
        calls.append(line)
        return classify(line, offset, raw)

    monkeypatch.setattr(reader_module, "classify_line", counted)
    assert streamed(path, cache_size=0) == expected
    assert len(calls) == len(set(calls)) == sum(1 for _ in path.open("rb")) - 1


@pytest.mark.parametrize("shape", ["synthetic", "demo"])
def test_a_run_longer_than_what_is_held_is_read_again_and_reads_the_same(
    shapes: dict[str, Path], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_stream, "HELD_RECORDS", 7)
    assert streamed(shapes[shape], cache_size=0) == whole(shapes[shape])

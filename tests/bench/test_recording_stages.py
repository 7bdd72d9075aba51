"""``python -m bench.recording stages``: each stage of recording against the null sink, files removed."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.recording import _stages


def test_stages_reports_every_stage_and_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "stages"
    result = _stages(argparse.Namespace(rounds=1, per_round=20, out=out))
    for name in ("serialise", "redact", "write", "none", "batch"):
        assert result[f"{name}_cpu_x"] > 0, name  # type: ignore[operator]
    assert float(result["null_cpu_ms"]) > 0  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []

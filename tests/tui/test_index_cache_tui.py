"""A trace opened again takes its line index from the cache directory and shows the same screen."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fpdebug.trace import index_cache
from fpdebug.trace.index_cache import cache_path
from fpdebug.tui.screens import loader
from tests.tui.helpers import opened, screen_text

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "support.fptrace.jsonl"


@pytest.mark.anyio
async def test_a_reopened_trace_shows_the_same_screen_from_its_saved_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)  # the sample is small: cache it all the same
    monkeypatch.setattr(loader, "FIRST_CHUNK", 4096)  # the first screen indexes a few lines, the rest follows
    trace = tmp_path / "support.fptrace.jsonl"
    shutil.copyfile(SAMPLE, trace)

    async with opened(trace) as (pilot, screen):
        scanned = screen_text(pilot.app)
        assert screen.session.restored == 0
    assert cache_path(trace).is_file()

    async with opened(trace) as (pilot, screen):
        assert screen.session.restored == trace.stat().st_size  # every line came from the cache
        assert screen_text(pilot.app) == scanned
    assert "T1·I1" in scanned

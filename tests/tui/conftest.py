"""Fixtures of the TUI tests: traces, an app runner, screen text, deterministic rendering."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from tests.tui.traces import write_hostile, write_support_run


@pytest.fixture
def anyio_backend() -> str:
    """Pilot tests run on asyncio (the anyio pytest plugin drives them)."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A blinking input cursor would make snapshots depend on timing (harlequin's fix)."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    yield


@pytest.fixture
def support_run_trace(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """The hand-built four-iteration run: leases, a park and re-engagement, a conflict, a rejected pick."""
    path = tmp_path / "run.fptrace.jsonl"
    return path, write_support_run(path)


@pytest.fixture
def hostile_trace(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """Huge strings, markup, control sequences, invalid lines, wrong types, an unknown kind."""
    path = tmp_path / "hostile.fptrace.jsonl"
    return path, write_hostile(path)

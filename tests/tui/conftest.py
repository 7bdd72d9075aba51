"""Fixtures of the TUI tests: traces, an app runner, screen text, deterministic rendering."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from tests.tui.traces import write_hostile, write_support_run

HANG = 600.0
"""Seconds after which a TUI test is taken to be stuck (the slowest takes about a minute on a loaded box)."""


@pytest.fixture(autouse=True)
def _hang_guard() -> Iterator[None]:
    """End a stuck test's process with every thread's stack on stderr instead of hanging the run.

    A worker thread that never returns keeps the event loop (and the pytest worker) from closing;
    pytest-timeout is not a dependency, so the standard library's watchdog stands in: under xdist
    the test fails as a crashed worker and the run goes on.
    """
    faulthandler.dump_traceback_later(HANG, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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

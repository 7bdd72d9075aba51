"""Fixtures shared by every test package."""

from __future__ import annotations

import gc
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fpdebug.engine.providers.base import allow_live_calls

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The fixed instant every deterministic test starts from."""


@pytest.fixture
def t0() -> datetime:
    """The fixed start instant of deterministic traces."""
    return T0


def pytest_configure(config: pytest.Config) -> None:
    """Give the tests default SIGHUP and SIGINT, whatever the runner was started under.

    A runner started with ``nohup`` ignores SIGHUP, and one started in the background by a
    non-interactive shell ignores SIGINT. An ignored signal stays ignored across ``exec``, and Python
    installs no Ctrl-C handler when SIGINT starts ignored: every fpdebug child would then rightly keep
    running on a hang-up or a Ctrl-C, and the tests of what those do would fail for the runner's reason.
    """
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _private_bytecode_cache()


def _private_bytecode_cache() -> None:
    """Under ``PYTHONDONTWRITEBYTECODE``, keep bytecode in a cache of the tests' own, out of the tree.

    With bytecode writing off, every process compiles every module it imports from source: each
    xdist worker all of fpdebug and every test module (assertion rewriting included), and each of the
    many ``python -m fpdebug`` children again (about 0.3 s of CPU apiece, bench/cold_start.py).
    ``PYTHONPYCACHEPREFIX`` sends the ``.pyc`` files to a directory outside the checkout, so the tree
    stays as clean as the setting wanted; set here (in the xdist controller before it starts its
    workers, and in each worker before it collects), it reaches every child. A source change is seen
    as ever: a ``.pyc`` records its source's size and mtime.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = Path(tempfile.gettempdir()) / f"fpdebug-tests-pycache-{getattr(os, 'getuid', lambda: 0)()}"
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    sys.pycache_prefix = str(cache)
    sys.dont_write_bytecode = False


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection built (every test module, fpdebug, Textual) out of the garbage collector.

    Those objects live for the whole run; left in the collector's oldest generation, every full
    collection the tests trigger walks all of them again. Objects a test creates are collected as ever.
    """
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point ``$XDG_CACHE_HOME`` at a scratch directory for the whole run (child processes inherit it).

    The cache holds the sidecars of tracked traces (the samples): a user's own backtracks of the
    samples must not show up in the tests, nor the tests' in the user's cache.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(autouse=True)
def _no_live_model_calls() -> Iterator[None]:
    """Block live model calls in every test; fake-server fixtures re-allow them for loopback."""
    with allow_live_calls(False):
        yield


# The inner loop (`pytest -m "not slow and not tmux"`, CONTRIBUTING.md) leaves out the modules whose
# tests each drive the whole Textual app through Pilot, start fpdebug in a child process or a pty,
# or run long property and fuzz searches: together they are most of the suite's time. CI runs them
# all. The list is by module so a new test in a slow module is slow without a decorator to forget.
SLOW_MODULES = frozenset(
    {
        "tests/tui/test_app.py",
        "tests/tui/test_recalled.py",
        "tests/bench/test_run.py",
        "tests/tui/test_compact_badge.py",
        "tests/tui/test_skill_map_trees.py",
        "tests/trace/test_parallel_validate.py",
        "tests/tui/test_backtrack_pane.py",
        "tests/tui/test_backtrack_pane_snapshots.py",
        "tests/tui/test_diff.py",
        "tests/tui/test_runs_tui.py",
        "tests/tui/test_runs_snapshots.py",
        "tests/tui/test_diff_snapshots.py",
        "tests/tui/test_drive.py",
        "tests/tui/test_invalid_lines.py",
        "tests/tui/test_layout.py",
        "tests/tui/test_screen_layout.py",
        "tests/tui/test_liveness.py",
        "tests/tui/test_follow_honest.py",
        "tests/tui/test_tour_clean.py",
        "tests/tui/test_skill_map.py",
        "tests/tui/test_skill_map_snapshots.py",
        "tests/tui/test_snapshots.py",
        "tests/tui/test_call_provenance.py",
        "tests/reliability/test_fuzz.py",
        "tests/reliability/test_redact.py",
        "tests/reliability/test_signals.py",
        "tests/reliability/test_model_wait.py",
        "tests/reliability/test_terminal.py",
        "tests/reliability/test_provider_faults.py",
        "tests/reliability/test_faults.py",
        "tests/reliability/test_special_files.py",
        "tests/backtrack/test_ablation.py",
        "tests/engine/test_invariants.py",
        "tests/engine/test_honesty_properties.py",
        "tests/bench/test_gen_trace.py",
        "tests/demo/test_honesty_interrupted_consumers.py",
        "tests/cli/test_export_report_serve.py",
        "tests/cli/test_serve_demo.py",
        "tests/tui/test_go_to.py",
        "tests/tui/test_fork_ledger.py",
        "tests/tui/test_verdict_first.py",
        "tests/tui/test_badge_reason.py",
        "tests/tui/test_ask_badge.py",
        "tests/tui/test_lease_reason.py",
        "tests/tui/test_link_cursor.py",
        "tests/tui/test_keys_everywhere.py",
        "tests/tui/test_refusal.py",
        "tests/tui/test_cost_agreement.py",
        "tests/ingest/test_not_recorded_tui.py",
        "tests/ingest/test_otlp_tui.py",
        "tests/ingest/test_collect.py",
        "tests/ingest/test_stream_memory.py",
        "tests/ingest/test_backtrack_imported.py",
        "tests/cli/test_import_cli.py",
        "tests/test_cold_start_imports.py",
        "tests/reliability/test_line_size.py",
        "tests/reliability/test_sizes.py",
        "tests/reliability/test_implicit_outputs.py",
        "tests/export/test_otlp_deadline.py",
        "tests/engine/test_agent_stop_reasons.py",
        "tests/engine/test_provider_parity.py",
        "tests/tui/test_session.py",
        "tests/tui/test_index_cache_tui.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of a :data:`SLOW_MODULES` module ``slow``."""
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)

"""Shared fixtures of the headless view tests: a folder of demo runs written by the scripted provider."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every built-in demo scenario run on its scripted model into one folder (read-only for tests)."""
    from fpdebug.demo.registry import write_samples

    folder = tmp_path_factory.mktemp("demo-runs")
    write_samples(folder)
    return folder

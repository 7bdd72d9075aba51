"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from fpdebug.engine.providers.base import allow_live_calls

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The fixed instant every deterministic test starts from."""


@pytest.fixture
def t0() -> datetime:
    """The fixed start instant of deterministic traces."""
    return T0


@pytest.fixture(autouse=True)
def _no_live_model_calls() -> Iterator[None]:
    """Block live model calls in every test; fake-server fixtures re-allow them for loopback."""
    with allow_live_calls(False):
        yield

"""Fixtures shared by every test package."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
"""The fixed instant every deterministic test starts from."""


@pytest.fixture
def t0() -> datetime:
    """The fixed start instant of deterministic traces."""
    return T0

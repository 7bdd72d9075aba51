"""Fixtures of the reliability tests: the fake model API server, the anyio backend of pilot tests."""

from __future__ import annotations

import pytest

from tests.engine.conftest import fake_server

__all__ = ["fake_server"]


@pytest.fixture
def anyio_backend() -> str:
    """Pilot tests run on asyncio (the anyio pytest plugin drives them)."""
    return "asyncio"

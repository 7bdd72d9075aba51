"""Fixtures for the engine tests: a local fake model API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fpdebug.engine.providers.base import BLOCK_ENV_VAR, allow_live_calls
from tests.fakeservers import FakeServer

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    """A fake API server on 127.0.0.1; live calls are allowed while it runs (it is loopback only)."""
    # A proxy from the environment would take loopback traffic elsewhere; the SDKs' own endpoint
    # variables would override nothing here (tests pass base_url) but keep the run hermetic.
    for name in (*_PROXY_VARS, BLOCK_ENV_VAR, "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as server, allow_live_calls(True):
        yield server

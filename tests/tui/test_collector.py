"""``fpdebug view`` pauses the garbage collector over its start-up and gives it back (issue 20)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fpdebug.tui import collector


@pytest.fixture
def collector_state() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    collector.resume()
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_state")
def test_pause_turns_the_collector_off_until_resume() -> None:
    gc.enable()
    collector.pause()
    assert not gc.isenabled() and collector.paused()
    collector.resume()
    assert gc.isenabled() and not collector.paused()
    # What start-up made is frozen: the first collection after it does not walk all of it.
    assert gc.get_freeze_count() > 0
    collector.resume()  # a second resume (the loader's, then the screen's) changes nothing
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_state")
def test_a_collector_the_user_turned_off_stays_off() -> None:
    gc.disable()
    collector.pause()
    assert not collector.paused()
    collector.resume()
    assert not gc.isenabled()

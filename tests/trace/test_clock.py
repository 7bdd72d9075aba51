"""The injected clocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from fpdebug.trace.clock import Clock, FixedClock, SystemClock
from tests.conftest import T0


def test_fixed_clock_advances_one_step_per_read() -> None:
    clock = FixedClock(T0, step=timedelta(milliseconds=5))
    reads = [clock.now() for _ in range(4)]
    assert reads == [T0 + timedelta(milliseconds=5 * k) for k in range(4)]


def test_two_fixed_clocks_give_the_same_sequence() -> None:
    first, second = FixedClock(T0), FixedClock(T0)
    assert [first.now() for _ in range(10)] == [second.now() for _ in range(10)]


def test_fixed_clock_normalises_to_utc_and_refuses_naive_times() -> None:
    plus_two = timezone(timedelta(hours=2))
    clock = FixedClock(datetime(2026, 1, 1, 14, 0, tzinfo=plus_two))
    assert clock.now() == T0 and clock.now().tzinfo == UTC
    with pytest.raises(ValueError, match="timezone-aware"):
        FixedClock(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="negative"):
        FixedClock(T0, step=timedelta(seconds=-1))


def test_system_clock_is_aware_utc_and_both_satisfy_the_protocol() -> None:
    now = SystemClock().now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert isinstance(SystemClock(), Clock) and isinstance(FixedClock(T0), Clock)

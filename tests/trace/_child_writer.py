"""A writer process for the follow and kill tests: ``python -m tests.trace._child_writer MODE PATH COUNT``.

Modes:

- ``steady``: write COUNT events (sizes varying from a few bytes to ~64 KiB), yielding the CPU
  now and then so a reader interleaves, then a ``run_end``; exit 0.
- ``torn``: write COUNT events, print ``ready``, then start one more record and stop halfway
  through it (as if killed between two parts of a continued short write); wait to be killed.
- ``flood``: write large events without end, printing ``ready`` after COUNT; wait to be killed.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta

from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import RunEndEvent, ToolResultEvent
from fpdebug.trace.writer import TraceWriter

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def event(seq: int, *, size: int) -> ToolResultEvent:
    """A tool result whose text is ``size`` characters, tagged with its seq."""
    return ToolResultEvent(
        seq=seq,
        ts=T0 + timedelta(milliseconds=seq),
        run_id="child",
        turn=1,
        iteration=seq,
        tool_call_id=f"call-{seq}",
        tool_name="fetch",
        result=f"#{seq}:" + "x" * size,
    )


def main(mode: str, path: str, count: int) -> None:
    writer = TraceWriter.create(path, clock=FixedClock(T0), durability="none")
    if mode == "steady":
        for seq in range(1, count + 1):
            writer.append(event(seq, size=(seq * 7919) % 65536 if seq % 10 == 0 else seq % 300))
            if seq % 10 == 0:
                time.sleep(0.001)  # spread the writes so the reader really follows a growing file
        writer.append(RunEndEvent(seq=count + 1, ts=T0, run_id="child", status="completed"))
        writer.close()
        return
    if mode == "torn":
        for seq in range(1, count + 1):
            writer.append(event(seq, size=100))
        real_write = os.write

        def half(fd: int, data: bytes) -> int:
            written = real_write(fd, bytes(data)[: len(data) // 2])
            print("ready", flush=True)
            time.sleep(3600)  # killed here, between two parts of one record
            return written

        os.write = half  # type: ignore[assignment]
        writer.append(event(count + 1, size=5000))
        return
    if mode == "flood":
        seq = 0
        while True:
            seq += 1
            writer.append(event(seq, size=200_000))
            if seq == count:
                print("ready", flush=True)
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

"""An agent run for the kill tests: ``python -m tests.reliability._child_agent MODE PATH COUNT``.

A real :class:`~fpdebug.engine.agent.Agent` on a scripted model that calls its ``step`` tool again
and again, recording into a trace file through :class:`~fpdebug.engine.sink.TraceFileSink`.

Modes:

- ``torn``: during the COUNT-th tool call, the next write to the trace (that call's ``tool_result``)
  is cut in half; ``ready`` is printed and the process waits to be killed mid-record.
- ``flood``: ``ready`` is printed once COUNT tool calls have run; the runs go on (large results,
  several records per iteration) until the process is killed at an arbitrary moment.

Each run is twenty steps and an answer; runs follow one another in the same trace file.

- ``fast``: no agent, the bare writer as fast as it can: a ``run_start``, COUNT ``tool_result``
  records (mostly small, every 100th 64 KiB) and a ``run_end``, with no pause between them.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import LlmRequest, RunEndEvent, RunStartEvent, ToolResultEvent
from fpdebug.trace.writer import TraceWriter

RESULT_SIZE = {"torn": 300, "flood": 20_000}


def main(mode: str, path: str, count: int) -> None:
    if mode == "fast":
        fast(path, count)
        return
    calls = 0

    def step(n: int) -> str:
        """Do one step of the job.

        Args:
            n: The step number.
        """
        nonlocal calls
        calls += 1
        if mode == "torn" and calls == count:
            _tear_next_write()
        if mode == "flood" and calls == count:
            print("ready", flush=True)
        return f"step {n} done: " + "x" * RESULT_SIZE[mode]

    def respond(request: LlmRequest) -> ScriptedReply | str:
        # Twenty steps per run, then an answer: each run's records stay small whatever COUNT is.
        done = sum(1 for m in request.messages if m.role == "tool")
        return ScriptedReply.tool_call("step", {"n": done + 1}) if done < 20 else "all steps done"

    agent = Agent("killed").system_prompt("Work through the steps.").tools(tool(step, timeout=None))
    agent = agent.max_iterations(21)
    with TraceFileSink.create(path, durability="none") as sink:
        for number in range(1, 1_000_000):
            model = ScriptedProvider(respond=respond)
            agent.run("do the steps", provider=model, sink=sink, run_id=f"r{number}")


def fast(path: str, count: int) -> None:
    clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
    with TraceWriter.create(path, durability="none", clock=clock) as writer:
        writer.append(
            RunStartEvent(
                seq=1, ts=clock.now(), run_id="fast", provider="none", model="none", max_iterations=count
            )
        )
        for n in range(1, count + 1):
            size = 65_536 if n % 100 == 0 else n % 200
            writer.append(
                ToolResultEvent(
                    seq=n + 1,
                    ts=clock.now(),
                    run_id="fast",
                    turn=1,
                    iteration=n,
                    tool_call_id=f"c{n}",
                    tool_name="fetch",
                    result=f"#{n}:" + "f" * size,
                )
            )
        writer.append(RunEndEvent(seq=count + 2, ts=clock.now(), run_id="fast", status="completed"))


def _tear_next_write() -> None:
    real_write = os.write

    def half(fd: int, data: bytes) -> int:
        written = real_write(fd, bytes(data)[: len(data) // 2])
        print("ready", flush=True)
        time.sleep(3600)  # killed here, halfway through one record
        return written

    os.write = half  # type: ignore[assignment]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

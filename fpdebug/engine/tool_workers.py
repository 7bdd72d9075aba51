"""Reusable worker threads for tool calls that have a timeout.

A tool call with a timeout runs on another thread so that the loop can stop waiting for it. Starting
a thread for every call cost the engine about a fifth of its time on a scripted run (issue 22), so
the threads are kept: a worker that finished its call waits for the next one. A call that times out
keeps its worker (Python cannot stop a thread); that worker rejoins the pool if the call ever
returns, and the next call meanwhile gets another worker.
"""

from __future__ import annotations

import contextvars
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["MAX_IDLE_WORKERS", "run_with_timeout"]

MAX_IDLE_WORKERS = 4
"""Workers kept waiting for a call; a worker that finishes when this many wait ends instead."""


@dataclass(eq=False)
class _Job:
    call: Callable[[], object]
    context: contextvars.Context
    name: str
    done: threading.Event = field(default_factory=threading.Event)
    value: object = None
    error: BaseException | None = None


class _Worker:
    """One daemon thread that runs the jobs put on its queue, one at a time."""

    def __init__(self, pool: _Pool) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.pool = pool
        self.thread = threading.Thread(target=self._run, name="fpdebug-tool-worker", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            self.thread.name = f"fpdebug-tool-{job.name}"  # what a tool that reads its thread sees
            try:
                job.value = job.context.run(job.call)
            except BaseException as exc:  # handed to the caller, which re-raises it
                job.error = exc
            # Back in the pool before the caller wakes: its next call then finds this worker idle.
            kept = self.pool.give_back(self)
            job.done.set()
            if not kept:
                return


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []

    def take(self) -> _Worker:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return _Worker(self)

    def give_back(self, worker: _Worker) -> bool:
        with self.lock:
            if len(self.idle) >= MAX_IDLE_WORKERS:
                return False
            self.idle.append(worker)
            return True

    def forget(self) -> None:
        # In a forked child the workers' threads do not exist: a job put on their queues would
        # never run. The lock may have been held by a thread that is gone too.
        self.lock = threading.Lock()
        self.idle = []


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def run_with_timeout(call: Callable[[], object], *, timeout: float, name: str) -> tuple[bool, object]:
    """Run ``call`` on a pooled worker thread, in a copy of the caller's context; wait at most ``timeout``.

    Args:
        call: What to run.
        timeout: Seconds to wait.
        name: Names the worker thread while it runs the call (``fpdebug-tool-<name>``).

    Returns:
        ``(True, value)`` when the call returned in time, ``(False, None)`` when it did not (it
        keeps running on its worker).

    Raises:
        BaseException: Whatever the call raised, when it ended in time.
    """
    job = _Job(call, contextvars.copy_context(), name)
    _POOL.take().jobs.put(job)
    if not job.done.wait(timeout):
        return False, None
    if job.error is not None:
        raise job.error
    return True, job.value

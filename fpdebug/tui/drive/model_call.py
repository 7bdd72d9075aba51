"""A model call the debugger can walk away from: quitting never waits on a provider that does not answer.

The step gate stops a driven run between events, and a model call is not an event: the run's thread
sits inside the provider's HTTP request until it returns. Quitting (``q``, SIGTERM, or SIGHUP when
the terminal closes) then waited for the reply, up to the provider's timeout (ten minutes by the
SDKs' defaults), and a hung-up process stayed behind all that time.

:class:`InterruptibleProvider` makes the request on a daemon thread of its own and has the run's
thread wait for either the reply or the stop. Stopped, the run's thread raises
:class:`~fpdebug.errors.RunInterrupted`, as the gate does: the loop ends the run with ``run_end
{interrupted}`` (no ``llm_call``, as Ctrl-C in the middle of a call records none: there is no reply to
record) and the process can leave at once. The abandoned request stays with its daemon thread, which
the interpreter does not wait for; the provider may still bill it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from fpdebug.errors import RunInterrupted

if TYPE_CHECKING:
    from fpdebug.engine.providers.base import Provider
    from fpdebug.trace.schema import LlmRequest, LlmResponse

__all__ = ["POLL_SECONDS", "InterruptibleProvider", "needs_interruption"]

POLL_SECONDS = 0.05
"""How often a waiting run's thread looks whether it was stopped (the bound on how late it notices)."""


def needs_interruption(provider: Provider | None) -> bool:
    """Whether ``provider`` may block: anything but the in-process scripted and replay models."""
    from fpdebug.engine.providers.replay import ReplayProvider
    from fpdebug.engine.providers.scripted import ScriptedProvider

    return provider is not None and not isinstance(provider, ScriptedProvider | ReplayProvider)


class InterruptibleProvider:
    """Wraps a provider so that :meth:`complete` returns early, raising ``RunInterrupted``, once stopped.

    Everything but :meth:`complete` (``name``, ``model``, ``close``, ``on_delta``…) is the wrapped
    provider's own.

    Args:
        inner: The provider that makes the call.
        stopped: Set when the run is to end (:meth:`~fpdebug.tui.drive.driver.RunDriver.stop`).
    """

    def __init__(self, inner: Provider, stopped: threading.Event) -> None:
        self.inner = inner
        """The wrapped provider."""
        self.name: str = inner.name
        """The wrapped provider's name (what the trace records)."""
        self.model: str = inner.model
        """The wrapped provider's model."""
        self.stopped = stopped
        """The stop signal."""
        self.abandoned = 0
        """Calls walked away from (their threads may still be waiting on the network)."""

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def complete(self, request: LlmRequest) -> LlmResponse:
        """The wrapped provider's reply, made on a thread of its own.

        Raises:
            RunInterrupted: The run was stopped before the reply came (or before the call began).
            Whatever the wrapped provider raises.
        """
        if self.stopped.is_set():
            raise RunInterrupted("the run was stopped before its model call")
        outcome: list[LlmResponse | BaseException] = []
        done = threading.Event()

        def call() -> None:
            try:
                outcome.append(self.inner.complete(request))
            except BaseException as error:  # handed to the run's thread, which raises it
                outcome.append(error)
            finally:
                done.set()

        threading.Thread(target=call, name="fpdebug-model-call", daemon=True).start()
        while not done.wait(POLL_SECONDS):
            if self.stopped.is_set():
                self.abandoned += 1
                raise RunInterrupted("the run was stopped while waiting on the model")
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def __repr__(self) -> str:
        return f"InterruptibleProvider({self.inner!r})"

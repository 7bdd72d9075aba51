"""InterruptibleProvider: a driven run's model call that the stop can walk away from (no network, no app)."""

from __future__ import annotations

import threading
import time

import pytest

from fpdebug.engine.providers.scripted import ScriptedProvider
from fpdebug.errors import ProviderError, RunInterrupted
from fpdebug.trace.schema import LlmRequest, LlmResponse
from fpdebug.tui.drive.model_call import POLL_SECONDS, InterruptibleProvider, needs_interruption

REQUEST = LlmRequest(system_prompt=[], messages=[], tools=[])


class Silent:
    """A provider whose call blocks until released, as a request to a server that never answers."""

    name = "silent"
    model = "m"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.closed = False

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.entered.set()
        self.release.wait(60)
        raise ProviderError("released", provider=self.name)

    def close(self) -> None:
        self.closed = True


def test_a_stop_ends_a_call_that_never_returns_at_once() -> None:
    inner, stopped = Silent(), threading.Event()
    provider = InterruptibleProvider(inner, stopped)
    raised: list[BaseException] = []
    returned = threading.Event()

    def run() -> None:
        try:
            provider.complete(REQUEST)
        except BaseException as error:
            raised.append(error)
        returned.set()

    threading.Thread(target=run, daemon=True).start()
    assert inner.entered.wait(10)
    time.sleep(0.2)
    assert not returned.is_set()  # it really waits on the model
    began = time.monotonic()
    stopped.set()
    assert returned.wait(5)
    assert time.monotonic() - began < 1.0
    assert isinstance(raised[0], RunInterrupted) and "waiting on the model" in str(raised[0])
    assert provider.abandoned == 1
    inner.release.set()


def test_replies_and_failures_pass_through_and_the_rest_is_the_providers() -> None:
    scripted = ScriptedProvider(["hello"])
    provider = InterruptibleProvider(scripted, threading.Event())
    reply = provider.complete(REQUEST)
    assert reply.content == "hello"
    assert (provider.name, provider.model) == (scripted.name, scripted.model)
    failing, stopped = Silent(), threading.Event()
    failing.release.set()
    wrapped = InterruptibleProvider(failing, stopped)
    with pytest.raises(ProviderError, match="released"):
        wrapped.complete(REQUEST)
    wrapped.close()
    assert failing.closed


def test_a_stopped_run_makes_no_new_call() -> None:
    inner, stopped = Silent(), threading.Event()
    stopped.set()
    with pytest.raises(RunInterrupted, match="before its model call"):
        InterruptibleProvider(inner, stopped).complete(REQUEST)
    assert not inner.entered.is_set()


def test_only_providers_that_can_block_are_wrapped() -> None:
    assert not needs_interruption(ScriptedProvider(["x"]))
    assert not needs_interruption(None)
    assert needs_interruption(Silent())  # type: ignore[arg-type]
    assert POLL_SECONDS <= 0.1

"""Provider and tool failures in a real agent run: recorded, a clear end status, shown by the debugger.

The real SDK clients talk to the local fake API server (``tests/fakeservers.py``). Already covered
elsewhere and not repeated: each provider's error mapping on its own (``tests/engine/
test_provider_*.py``), a scripted 429 and a live 500 ending a run (``tests/engine/test_agent.py``,
``test_agent_live.py``), a tool that raises or hangs past its timeout (``tests/engine/
test_agent.py``: ``test_a_tool_that_raises_becomes_a_failure_and_the_loop_goes_on``,
``test_a_hung_tool_times_out_into_a_failure``). Here: every failure kind on both live providers,
through the whole chain (trace, ``validate``, ``summary``, the debugger).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.base import Provider
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.trace.schema import LlmCallEvent, RunEndEvent, ToolResultEvent
from fpdebug.tui.app import FpdebugApp
from tests.engine.test_agent import Recorded, echo, record
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
)
from tests.tui.helpers import loaded, screen_text

KEY = "sk-test-fault-0123456789abcdef"

# What the server answers to the second request, per provider, and what the run must record.
Failure = tuple[Callable[[], FakeResponse], int | None, str]


def _openai_tool_call(arguments: str) -> FakeResponse:
    calls = (("call_2", "echo", arguments),)
    return FakeResponse(body=openai_completion(tool_calls=calls, finish_reason="tool_calls"))


def _anthropic_tool_call(arguments: object) -> FakeResponse:
    content = [{"type": "tool_use", "id": "toolu_2", "name": "echo", "input": arguments}]
    return FakeResponse(body=anthropic_message(content, stop_reason="tool_use"))


FAILURES: dict[str, dict[str, Failure]] = {
    "openai": {
        "timeout": (
            lambda: FakeResponse(body=openai_completion(content="late"), delay=5.0),
            None,
            "request timed out after 0.3s",
        ),
        "429": (
            lambda: FakeResponse(
                429, openai_error("Rate limit reached", kind="rate_limit_error"), headers={"retry-after": "0"}
            ),
            429,
            "Rate limit reached",
        ),
        "500": (
            lambda: FakeResponse(500, openai_error("The server had an error", kind="server_error")),
            500,
            "The server had an error",
        ),
        "malformed-tool-call": (
            lambda: _openai_tool_call('{"text": "unterminated'),
            None,
            "malformed tool-call arguments: call 'call_2' to 'echo' is not valid JSON",
        ),
    },
    "anthropic": {
        "timeout": (
            lambda: FakeResponse(body=anthropic_message([]), delay=5.0),
            None,
            "request timed out after 0.3s",
        ),
        "429": (
            lambda: FakeResponse(
                429, anthropic_error("rate_limit_error", "Rate limit reached"), headers={"retry-after": "0"}
            ),
            429,
            "Rate limit reached",
        ),
        "500": (
            lambda: FakeResponse(500, anthropic_error("api_error", "Internal server error")),
            500,
            "Internal server error",
        ),
        "malformed-tool-call": (
            lambda: _anthropic_tool_call('{"text": "unterminated'),
            None,
            "malformed tool-call arguments: call 'toolu_2' to 'echo' is not valid JSON",
        ),
    },
}


def _first_reply(kind: str) -> FakeResponse:
    if kind == "openai":
        return FakeResponse(
            body=openai_completion(
                tool_calls=(("call_1", "echo", '{"text": "ping"}'),), finish_reason="tool_calls"
            )
        )
    return _anthropic_tool_call({"text": "ping"})


def _provider(kind: str, server: FakeServer, **options: object) -> Provider:
    if kind == "openai":
        return OpenAIProvider(
            "gpt-test", api_key=KEY, base_url=f"{server.url}/v1", max_retries=0, timeout=0.3, **options
        )  # type: ignore[arg-type]
    return AnthropicProvider(
        "claude-test", api_key=KEY, base_url=server.url, max_retries=0, timeout=0.3, **options
    )  # type: ignore[arg-type]


def _failing_run(kind: str, failure: str, server: FakeServer, tmp_path: Path) -> tuple[Recorded, Failure]:
    answer, status, message = FAILURES[kind][failure]
    server.handler = lambda request: _first_reply(kind) if len(server.requests) == 1 else answer()
    agent = Agent("live").tools(echo)
    run = record(agent, "ping me", _provider(kind, server), tmp_path, name=f"{kind}-{failure}")
    return run, (answer, status, message)


@pytest.mark.parametrize("failure", list(FAILURES["openai"]))
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_provider_failure_is_recorded_and_the_run_ends_failed(
    fake_server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, failure: str
) -> None:
    run, (_, status, message) = _failing_run(kind, failure, fake_server, tmp_path)
    assert [e.kind for e in run.events] == [
        "run_start",
        "turn_start",
        "pass",
        "llm_call",
        "tool_result",
        "pass",
        "llm_call",
        "run_end",
    ]
    first, failed = run.of("llm_call")
    assert isinstance(first, LlmCallEvent) and first.response is not None  # nothing before is lost
    (done,) = run.of("tool_result")
    assert isinstance(done, ToolResultEvent) and done.result == "ping"
    assert isinstance(failed, LlmCallEvent) and failed.response is None and failed.route is None
    assert failed.error is not None and failed.error.type == "ProviderError"
    assert failed.error.status == status and message in failed.error.message
    assert failed.request.messages[-1].role == "tool"  # the exact request that failed
    end = run.events[-1]
    assert isinstance(end, RunEndEvent) and end.status == "failed" and end.error == failed.error
    assert run.result.status == "failed" and run.result.error == failed.error
    assert run.model.runs[0].status == "failed"
    assert KEY.encode() not in run.path.read_bytes()
    assert main(["validate", str(run.path)]) == 0
    capsys.readouterr()
    assert main(["summary", str(run.path)]) == 0
    summary = capsys.readouterr().out
    line = next(line for line in summary.splitlines() if line.startswith("run r1"))
    assert line.startswith("run r1: failed (ProviderError: ") and message in line, line


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_malformed_tool_call_kept_for_the_loop_is_answered_invalid_and_the_run_recovers(
    fake_server: FakeServer, tmp_path: Path, kind: str
) -> None:
    def answer(request: RecordedRequest) -> FakeResponse:
        if len(fake_server.requests) == 1:
            if kind == "openai":
                return _openai_tool_call('{"text": "unterminated')
            return _anthropic_tool_call('{"text": "unterminated')
        if kind == "openai":
            return FakeResponse(body=openai_completion(content="sorry, retried"))
        return FakeResponse(body=anthropic_message([{"type": "text", "text": "sorry, retried"}]))

    fake_server.handler = answer
    provider = _provider(kind, fake_server, malformed_args="keep")
    run = record(Agent("live").tools(echo), "ping me", provider, tmp_path)
    (bad,) = run.of("tool_result")
    assert isinstance(bad, ToolResultEvent) and bad.status == "invalid"
    assert bad.error is not None and bad.error.type == "InvalidToolArguments"
    assert "unterminated" in bad.error.message
    first = run.of("llm_call")[0]
    assert first.response.tool_calls[0].raw_args == '{"text": "unterminated'  # what the model really sent
    assert run.result.status == "completed" and run.result.content == "sorry, retried"


# ----------------------------------------------------------------------------------------------
# The debugger shows the failure


@pytest.mark.anyio
@pytest.mark.parametrize("failure", ["timeout", "429", "malformed-tool-call"])
async def test_the_debugger_shows_a_failed_call_and_the_failed_run(
    fake_server: FakeServer, tmp_path: Path, failure: str
) -> None:
    run, (_, status, message) = _failing_run("openai", failure, fake_server, tmp_path)
    app = FpdebugApp(run.path)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot)
        await pilot.press("G")  # the iteration whose call failed
        await pilot.pause()
        passes = " ".join(screen_text(app).split())
        await pilot.press("3")  # the Calls view
        await pilot.pause()
        calls = " ".join(screen_text(app).split())
    # The run's header, the timeline's badge, the inspector's call line and the Calls view.
    # (An OpenAI error message starts with its type: "rate_limit_error: Rate limit reached".)
    said = r"(?:\w+: )?" + re.escape(message)
    assert re.search(r"■ failed: ProviderError: " + said, passes), passes
    assert "T1·I2 — 0/0 · · · — — error" in passes  # no route, no usage to price (never $0)
    assert re.search(r"error ProviderError: (?:\w+: )?" + re.escape(message[:20]), passes)  # it wraps
    http = f" \\(HTTP {status}\\)" if status is not None else ""
    assert re.search(f"error ProviderError{http}: " + said, calls), calls
    assert "no reply (the call failed)" in calls


@pytest.mark.anyio
async def test_the_debugger_shows_a_tool_that_raised_and_one_that_hung(tmp_path: Path) -> None:
    release = threading.Event()

    def explode(order_id: str) -> str:
        """Fail.

        Args:
            order_id: The order.
        """
        raise ValueError(f"order {order_id} is corrupt")

    def hang(text: str) -> str:
        """Wait for ever.

        Args:
            text: Anything.
        """
        release.wait(10)
        return text

    agent = Agent("tools").tools(explode, tool(hang, timeout=0.05))
    model = ScriptedProvider(
        [
            ScriptedReply.tool_call("explode", {"order_id": "A-1"}),
            ScriptedReply.tool_call("hang", {"text": "x"}),
            "gave up",
        ]
    )
    try:
        run = record(agent, "go", model, tmp_path)
    finally:
        release.set()
    raised, hung = run.of("tool_result")
    assert (raised.status, raised.error.type) == ("failure", "ValueError")
    assert (hung.status, hung.error.type) == ("failure", "TimeoutError")
    assert run.result.status == "completed"
    app = FpdebugApp(run.path)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot)
        first = " ".join(screen_text(app).split())
        await pilot.press("]")
        await pilot.pause()
        second = " ".join(screen_text(app).split())
    assert "ValueError: order A-1 is corrupt" in first and "failure" in first
    assert "TimeoutError" in second and "did not return within 0.05 s" in second

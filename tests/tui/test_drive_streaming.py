"""Issue 17: in a driven live run, the reply shows in the status line as it streams in."""

from __future__ import annotations

from pathlib import Path

from fpdebug.demo.registry import SAMPLE_START, load_scenario
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent
from fpdebug.tui.drive import RunDriver
from tests.engine.conftest import fake_server  # noqa: F401  (the fake API server fixture)
from tests.fakeservers import FakeServer, anthropic_stream


def test_a_driven_live_run_streams_its_reply_to_the_driver(
    fake_server: FakeServer,
    tmp_path: Path,
) -> None:
    fake_server.handler = lambda request: anthropic_stream(["All ", "done."])
    model = AnthropicProvider("claude-test", api_key="k", base_url=fake_server.url, max_retries=0)
    driver = RunDriver(
        load_scenario("support"),
        trace_path=tmp_path / "live.fptrace.jsonl",
        provider=model,
        clock=FixedClock(SAMPLE_START),
        start="running",
        durability="none",
    )
    seen: list[str] = []
    real = driver._on_delta

    def spy(text: str) -> None:
        seen.append(text)
        real(text)

    driver._on_delta = spy  # type: ignore[method-assign]
    driver._run()
    assert model.on_delta is not None and seen == ["All ", "done."]
    assert driver.error is None and driver.reply_so_far == ""  # emptied once the llm_call is written
    calls = [e for e in TraceReader(tmp_path / "live.fptrace.jsonl") if isinstance(e, LlmCallEvent)]
    assert calls and calls[-1].response is not None and calls[-1].response.content == "All done."


def test_the_driver_keeps_the_streaming_reply_tail(tmp_path: Path) -> None:
    driver = RunDriver(
        load_scenario("support"), trace_path=tmp_path / "t.fptrace.jsonl", start="running", durability="none"
    )
    driver._on_delta("The refund ")
    driver._on_delta("is on its way")
    assert driver.reply_so_far == "The refund is on its way"

"""Prompt caching of the always-on context: the stable prefix (the agent's prompt and tools, the
always-on injections) carries the breakpoints, what varies per call comes after it, and the cache
tokens the API reports are recorded. Through the real SDKs against the local fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import OnToolReturn, define_injection, define_instruction, define_steering
from fpdebug.engine.providers.anthropic import MAX_BREAKPOINTS, AnthropicProvider
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.trace.schema import CachePrefix, LlmCallEvent, ToolSchema, TurnEndEvent
from tests.engine.test_agent import echo, record
from tests.fakeservers import FakeResponse, FakeServer, RecordedRequest, anthropic_message, openai_completion

KEY = "sk-test-0123456789abcdef"
EPHEMERAL = {"type": "ephemeral"}
AUDIT_TOOL = ToolSchema(name="audit", description="Audit the echo.", parameters={"type": "object"})


def _agent(*injections: Any) -> Agent:
    return Agent("cached").system_prompt("You are a support agent.").injections(*injections).tools(echo)


# A steering rule rides every call; the audit note and its tool arrive only after echo returned.
ALWAYS = define_steering("tone", prompt="Be brief.")
TRIGGERED = define_injection(
    "audit", trigger=OnToolReturn("echo"), system_prompt="Cite the echo.", tools=[AUDIT_TOOL]
)


def _anthropic_server(server: FakeServer) -> None:
    """A tool call first (the cache written), then the answer (the prefix read back)."""

    def answer(request: RecordedRequest) -> FakeResponse:
        if len(request.json()["messages"]) == 1:
            content = [{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "ping"}}]
            return FakeResponse(
                body=anthropic_message(
                    content, stop_reason="tool_use", input_tokens=20, output_tokens=5, cache_write=1500
                )
            )
        return FakeResponse(
            body=anthropic_message(
                [{"type": "text", "text": "pong"}], input_tokens=40, output_tokens=2, cache_read=1500
            )
        )

    server.handler = answer


def _breakpoints(body: dict[str, Any]) -> int:
    blocks = [*body.get("tools", []), *(body["system"] if isinstance(body.get("system"), list) else [])]
    for turn in body["messages"]:
        if isinstance(turn["content"], list):
            blocks.extend(turn["content"])
    return sum(1 for block in blocks if "cache_control" in block)


def test_the_always_on_prefix_carries_the_breakpoints_and_the_cache_tokens_are_recorded(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    _anthropic_server(fake_server)
    model = AnthropicProvider(
        "claude-test", api_key=KEY, base_url=fake_server.url, max_retries=0, cache_prompt=True
    )
    run = record(_agent(ALWAYS, TRIGGERED), "say ping", model, tmp_path)
    assert run.result.content == "pong"
    first, second = (request.json() for request in fake_server.requests)
    # The base prompt and the always-on rule are one cached block; the triggered note follows it.
    cached = {"type": "text", "text": "You are a support agent.\n\nBe brief.", "cache_control": EPHEMERAL}
    assert first["system"] == [cached]
    assert second["system"] == [cached, {"type": "text", "text": "\n\nCite the echo."}]
    # The agent's own tool leads and carries the tools' breakpoint; the injection's tool follows.
    assert first["tools"] == [{**second["tools"][0]}]
    assert [(t["name"], t.get("cache_control")) for t in second["tools"]] == [
        ("echo", EPHEMERAL),
        ("audit", None),
    ]
    assert all(_breakpoints(body) <= MAX_BREAKPOINTS for body in (first, second))
    # The trace records where the prefix ended, and the cache tokens of each call.
    calls = run.of("llm_call")
    assert all(isinstance(call, LlmCallEvent) for call in calls)
    assert [call.request.cache_prefix for call in calls] == [
        CachePrefix(system_segments=2, tools=1),
        CachePrefix(system_segments=2, tools=1),
    ]
    write, read = (call.response.usage for call in calls)
    assert (write.cache_write_tokens, write.cache_read_tokens, write.input_tokens) == (1500, None, 1520)
    assert (read.cache_read_tokens, read.cache_write_tokens, read.input_tokens) == (1500, None, 1540)
    (end,) = run.of("turn_end")
    assert isinstance(end, TurnEndEvent) and end.input_tokens == 3060
    # A replay caches nothing and marks nothing, yet reproduces the run: the prefix is not compared.
    replayed = record(
        _agent(ALWAYS, TRIGGERED), "say ping", ReplayProvider.from_trace(run.path), tmp_path, name="replay"
    )
    assert replayed.result.content == "pong"
    assert [call.request.cache_prefix for call in replayed.of("llm_call")] == [None, None]


@pytest.mark.parametrize(
    ("injections", "prefixes"),
    [
        # Declared before the always-on rule, the triggered note cuts the prefix once it arrives.
        ((TRIGGERED, ALWAYS), [2, 1]),
        # An always-on template renders per call: not stable, so only the agent's own prompt is.
        ((define_instruction("budget", prompt_template="Calls left: {{actionsRemaining}}."), ALWAYS), [1, 1]),
    ],
    ids=["triggered-first", "templated"],
)
def test_the_prefix_stops_at_the_first_segment_that_can_vary(
    fake_server: FakeServer, tmp_path: Path, injections: tuple[Any, ...], prefixes: list[int]
) -> None:
    _anthropic_server(fake_server)
    model = AnthropicProvider(
        "claude-test", api_key=KEY, base_url=fake_server.url, max_retries=0, cache_prompt=True
    )
    run = record(_agent(*injections), "say ping", model, tmp_path)
    assert run.result.content == "pong"
    calls = run.of("llm_call")
    assert [call.request.cache_prefix.system_segments for call in calls] == prefixes
    for call, sent in zip(calls, fake_server.requests, strict=True):
        cut = call.request.cache_prefix.system_segments
        stable, varying = call.request.system_prompt[:cut], call.request.system_prompt[cut:]
        # The breakpoint closes the stable segments; the rest follows in one block without one.
        assert sent.json()["system"] == [
            {"type": "text", "text": "\n\n".join(s.text for s in stable), "cache_control": EPHEMERAL},
            *([{"type": "text", "text": "".join("\n\n" + s.text for s in varying)}] if varying else []),
        ]


def test_without_caching_nothing_is_marked_or_recorded(fake_server: FakeServer, tmp_path: Path) -> None:
    _anthropic_server(fake_server)
    model = AnthropicProvider("claude-test", api_key=KEY, base_url=fake_server.url, max_retries=0)
    run = record(_agent(ALWAYS, TRIGGERED), "say ping", model, tmp_path)
    assert all(_breakpoints(request.json()) == 0 for request in fake_server.requests)
    assert isinstance(fake_server.requests[1].json()["system"], str)
    assert "cache_prefix" not in run.path.read_text()


def test_openai_gets_the_stable_prefix_first_on_every_call(fake_server: FakeServer, tmp_path: Path) -> None:
    # OpenAI caches a request's longest previously seen prefix by itself: the always-on context must
    # lead the first message, the same on every call, with what varies after it.
    def answer(request: RecordedRequest) -> FakeResponse:
        if not any(m["role"] == "tool" for m in request.json()["messages"]):
            return FakeResponse(
                body=openai_completion(
                    tool_calls=(("call_a", "echo", '{"text": "ping"}'),), finish_reason="tool_calls"
                )
            )
        return FakeResponse(body=openai_completion(content="pong", prompt_tokens=1600, cached_tokens=1536))

    fake_server.handler = answer
    model = OpenAIProvider("gpt-test", api_key=KEY, base_url=f"{fake_server.url}/v1", max_retries=0)
    run = record(_agent(ALWAYS, TRIGGERED), "say ping", model, tmp_path)
    first, second = (request.json() for request in fake_server.requests)
    prefix = "You are a support agent.\n\nBe brief."
    assert first["messages"][0] == {"role": "system", "content": prefix}
    assert second["messages"][0] == {"role": "system", "content": prefix + "\n\nCite the echo."}
    assert [t["function"]["name"] for t in second["tools"]] == ["echo", "audit"]
    (_, call) = run.of("llm_call")
    assert (call.response.usage.input_tokens, call.response.usage.cache_read_tokens) == (1600, 1536)

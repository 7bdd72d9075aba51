"""Anthropic extended thinking with tools: the thinking blocks go back with the tool_use turn.

The fake server enforces the real API's rule (:func:`tests.fakeservers.anthropic_thinking_rule`):
with thinking on, the assistant turn that made the last ``tool_use`` must start with its thinking
blocks, signatures intact, or the follow-up is a 400. So a run that dropped or changed them fails
here as it would against the real API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.anthropic import AnthropicProvider
from fpdebug.engine.providers.replay import ReplayProvider
from fpdebug.errors import ProviderError
from fpdebug.trace.schema import LlmCallEvent, LlmRequest, Message, ThinkingBlock, ToolCallRecord
from tests.engine.test_agent import echo, record
from tests.fakeservers import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_block_stream,
    anthropic_message,
    anthropic_thinking_rule,
)

KEY = "sk-ant-test-0123456789"
THINKING = {"type": "enabled", "budget_tokens": 1024}
SIGNATURE = "EqQBCkYIARgCIkDsig0123456789+/="
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def _thinking_server(server: FakeServer) -> None:
    """Answer like the API with thinking on: a tool_use turn with its thinking, then the answer
    (streamed when the request asks for it)."""
    issued = {SIGNATURE: "The user wants an echo; call the tool.", REDACTED: ""}

    def answer(request: RecordedRequest) -> FakeResponse:
        body = request.json()
        refused = anthropic_thinking_rule(body, issued)
        if refused is not None:
            return refused
        if len(body["messages"]) == 1:
            content: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": issued[SIGNATURE], "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "Let me echo it."},
                {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "ping"}},
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "pong"}], "end_turn"
        if body.get("stream"):
            return anthropic_block_stream(content, stop_reason=stop)
        return FakeResponse(body=anthropic_message(content, stop_reason=stop, output_tokens=2))

    server.handler = answer


def _model(server: FakeServer) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-test", api_key=KEY, base_url=server.url, max_retries=0, thinking=THINKING, max_tokens=4096
    )


def test_a_reply_keeps_its_thinking_blocks_in_order_with_their_signatures(fake_server: FakeServer) -> None:
    _thinking_server(fake_server)
    reply = _model(fake_server).complete(LlmRequest(messages=[Message(role="user", content="say ping")]))
    assert reply.thinking == [
        ThinkingBlock(
            type="thinking", thinking="The user wants an echo; call the tool.", signature=SIGNATURE
        ),
        ThinkingBlock(type="redacted_thinking", data=REDACTED),
    ]
    assert (reply.content, [c.name for c in reply.tool_calls]) == ("Let me echo it.", ["echo"])


def test_the_tool_use_turn_goes_back_starting_with_its_thinking_blocks(fake_server: FakeServer) -> None:
    _thinking_server(fake_server)
    turn = Message(
        role="assistant",
        content="Let me echo it.",
        tool_calls=[ToolCallRecord(id="toolu_1", name="echo", args={"text": "ping"})],
        thinking=[
            ThinkingBlock(
                type="thinking", thinking="The user wants an echo; call the tool.", signature=SIGNATURE
            ),
            ThinkingBlock(type="redacted_thinking", data=REDACTED),
        ],
    )
    request = LlmRequest(
        messages=[
            Message(role="user", content="say ping"),
            turn,
            Message(role="tool", content="ping", tool_call_id="toolu_1", tool_name="echo"),
        ]
    )
    assert _model(fake_server).complete(request).content == "pong"
    sent = fake_server.requests[0].json()["messages"][1]["content"]
    assert sent == [
        {"type": "thinking", "thinking": "The user wants an echo; call the tool.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "Let me echo it."},
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "ping"}},
    ]


@pytest.mark.parametrize(
    ("thinking", "refusal"),
    [
        (None, "Expected `thinking` or `redacted_thinking`, but found `text`"),
        (
            [ThinkingBlock(type="thinking", thinking="Edited afterwards.", signature=SIGNATURE)],
            "Invalid `signature`",
        ),
    ],
    ids=["dropped", "tampered"],
)
def test_the_fake_api_refuses_a_tool_use_turn_without_its_signed_thinking(
    fake_server: FakeServer, thinking: list[ThinkingBlock] | None, refusal: str
) -> None:
    # The rule the run test relies on: without it, that test could not fail.
    _thinking_server(fake_server)
    request = LlmRequest(
        messages=[
            Message(role="user", content="say ping"),
            Message(
                role="assistant",
                content="Let me echo it.",
                tool_calls=[ToolCallRecord(id="toolu_1", name="echo", args={"text": "ping"})],
                thinking=thinking,
            ),
            Message(role="tool", content="ping", tool_call_id="toolu_1", tool_name="echo"),
        ]
    )
    with pytest.raises(ProviderError, match=refusal) as caught:
        _model(fake_server).complete(request)
    assert caught.value.status == 400


def test_a_thinking_run_with_tools_completes_records_the_blocks_and_replays(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    _thinking_server(fake_server)
    agent = Agent("live").system_prompt("Base.").tools(echo)
    run = record(agent, "say ping", _model(fake_server), tmp_path)
    assert run.result.status == "completed" and run.result.content == "pong"
    first, second = run.of("llm_call")
    assert isinstance(first, LlmCallEvent) and isinstance(second, LlmCallEvent)
    # The trace records the reply's blocks, and the follow-up request as sent: thinking first.
    assert first.response is not None and first.response.thinking is not None
    assert [block.type for block in first.response.thinking] == ["thinking", "redacted_thinking"]
    assert second.request.messages[1].thinking == first.response.thinking
    assert [b["type"] for b in fake_server.requests[1].json()["messages"][1]["content"]] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
    ]
    assert main(["validate", str(run.path)]) == 0
    # The replay provider reproduces the run from the trace: same requests, thinking included.
    replayed = record(agent, "say ping", ReplayProvider.from_trace(run.path), tmp_path, name="replay")
    assert replayed.result.status == "completed" and replayed.result.content == "pong"
    assert [e.request for e in replayed.of("llm_call")] == [first.request, second.request]


def test_a_streamed_thinking_run_keeps_the_signed_blocks(fake_server: FakeServer, tmp_path: Path) -> None:
    # Drive mode streams: the final message the SDK assembles from the deltas carries the signature.
    _thinking_server(fake_server)
    pieces: list[str] = []
    model = _model(fake_server)
    model.on_delta = pieces.append
    run = record(Agent("live").tools(echo), "say ping", model, tmp_path)
    assert run.result.status == "completed" and run.result.content == "pong"
    assert pieces == ["Let me echo it.", "pong"]
    first = run.of("llm_call")[0]
    assert first.response.thinking == [
        ThinkingBlock(
            type="thinking", thinking="The user wants an echo; call the tool.", signature=SIGNATURE
        ),
        ThinkingBlock(type="redacted_thinking", data=REDACTED),
    ]

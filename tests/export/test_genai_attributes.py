"""The GenAI attributes real backends read: usage with cache and reasoning, response id and model,
finish reasons in the convention's words, cost, schema URLs, and ids unique per trace file."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fpdebug.export.otlp import SCHEMA_URL, export_request
from fpdebug.export.spans import build_spans, finish_reason, trace_salt
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PromptSegment,
    RunEndEvent,
    RunStartEvent,
    ThinkingBlock,
    ToolSchema,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from tests.export.otlp_helpers import attrs, spans_of
from tests.trace.samples import Script


def one_call(
    *, provider: str = "anthropic", model: str = "claude-sonnet-4-5", usage: Usage, stop: str = "end_turn"
) -> list[TraceEvent]:
    s = Script("r1")
    s.add(RunStartEvent, turn=None, agent_name="a", provider=provider, model=model, max_iterations=2)
    s.turn = 1
    s.add(TurnStartEvent, user_message="hi")
    request = LlmRequest(
        system_prompt=[PromptSegment(source="base", text="You help.")],
        messages=[Message(role="user", content="hi")],
        tools=[ToolSchema(name="lookup", description="Look up.", parameters={"type": "object"})],
    )
    response = LlmResponse(
        content="hello", stop_reason=stop, usage=usage, id="msg_1", model=model + "-20250929"
    )
    s.add(
        LlmCallEvent,
        iteration=1,
        call_index=1,
        provider=provider,
        model=model,
        request=request,
        response=response,
    )
    s.add(TurnEndEvent, final_content="hello", iteration_count=1, input_tokens=usage.input_tokens)
    s.turn = None
    s.add(RunEndEvent, status="completed", turns=1)
    return s.events


def by_name(events: list[TraceEvent], *, content: bool = False, salt: str = "") -> dict[str, dict[str, Any]]:
    spans = spans_of(export_request(build_spans(events, include_content=content, id_salt=salt)))
    return {span.name.split(" ")[0]: attrs(span.attributes) for span in spans}


CACHED = Usage(input_tokens=500, cache_read_tokens=200, cache_write_tokens=300, output_tokens=100)


def test_cache_tokens_are_counted_in_the_input_and_under_both_cache_write_names() -> None:
    chat = by_name(one_call(usage=CACHED))["chat"]
    assert chat["gen_ai.usage.input_tokens"] == 1000
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 200
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 300
    assert chat["gen_ai.usage.cache_write.input_tokens"] == 300


def test_reasoning_tokens_and_the_response_id_and_model_are_exported() -> None:
    usage = Usage(input_tokens=10, output_tokens=50, reasoning_tokens=40)
    chat = by_name(one_call(provider="openai", model="o3", usage=usage))["chat"]
    assert chat["gen_ai.usage.reasoning.output_tokens"] == 40
    assert chat["gen_ai.response.id"] == "msg_1"
    assert chat["gen_ai.response.model"] == "o3-20250929"


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("end_turn", "stop"),
        ("stop", "stop"),
        ("max_tokens", "length"),
        ("length", "length"),
        ("tool_use", "tool_call"),
        ("tool_calls", "tool_call"),
        ("refusal", "content_filter"),
        ("content_filter", "content_filter"),
        ("something_new", "something_new"),
    ],
)
def test_finish_reasons_are_the_conventions_values(stop: str, expected: str) -> None:
    assert finish_reason(stop) == expected
    chat = by_name(one_call(usage=CACHED, stop=stop), content=True)["chat"]
    assert chat["gen_ai.response.finish_reasons"] == [expected]
    assert chat["fpdebug.response.stop_reason"] == stop
    assert json.loads(chat["gen_ai.output.messages"])[0]["finish_reason"] == expected


def test_messages_and_tool_definitions_are_json_strings() -> None:
    chat = by_name(one_call(usage=CACHED), content=True)["chat"]
    for key in ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"):
        assert isinstance(chat[key], str)
    assert json.loads(chat["gen_ai.system_instructions"]) == [{"type": "text", "content": "You help."}]
    assert json.loads(chat["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert json.loads(chat["gen_ai.tool.definitions"]) == [
        {"type": "function", "name": "lookup", "description": "Look up.", "parameters": {"type": "object"}}
    ]
    assert "gen_ai.tool.definitions" not in by_name(one_call(usage=CACHED))["chat"]


def test_the_recorded_server_is_on_every_chat_span_and_an_old_trace_has_none() -> None:
    events = one_call(usage=CACHED)
    start = events[0]
    assert isinstance(start, RunStartEvent)
    events[0] = start.model_copy(update={"server_address": "gateway.example.com", "server_port": 8443})
    chat = by_name(events)["chat"]
    assert (chat["server.address"], chat["server.port"]) == ("gateway.example.com", 8443)
    assert "server.address" not in by_name(one_call(usage=CACHED))["chat"]


def test_thinking_is_a_reasoning_part_and_its_signature_is_never_exported() -> None:
    events = one_call(usage=CACHED)
    call = next(event for event in events if isinstance(event, LlmCallEvent))
    assert call.response is not None
    thinking = [
        ThinkingBlock(type="thinking", thinking="Greet them back.", signature="sig-opaque-123"),
        ThinkingBlock(type="redacted_thinking", data="redacted-opaque-456"),
    ]
    events[events.index(call)] = call.model_copy(
        update={"response": call.response.model_copy(update={"thinking": thinking})}
    )
    chat = by_name(events, content=True)["chat"]
    (output,) = json.loads(chat["gen_ai.output.messages"])
    assert output["parts"] == [
        {"type": "reasoning", "content": "Greet them back."},
        {"type": "text", "content": "hello"},
    ]
    assert not any("opaque" in str(value) for value in chat.values())


def test_a_known_model_has_a_cost_on_its_call_its_turn_and_its_run() -> None:
    spans = by_name(one_call(usage=CACHED))
    # 500 uncached at $3/M + 200 read at $0.30/M + 300 written at $3.75/M + 100 out at $15/M.
    assert spans["chat"]["fpdebug.cost.usd"] == pytest.approx(0.004185)
    assert spans["chat"]["gen_ai.usage.cost"] == pytest.approx(0.004185)  # what Langfuse reads
    assert "gen_ai.usage.cost" not in spans["run"]
    assert spans["invoke_agent"]["fpdebug.cost.usd"] == pytest.approx(0.004185)
    assert spans["run"]["fpdebug.cost.usd"] == pytest.approx(0.004185)


def test_an_unknown_model_says_unknown_price_never_zero() -> None:
    spans = by_name(one_call(provider="openai", model="no-such-model-x", usage=CACHED))
    for name in ("chat", "invoke_agent", "run"):
        assert "fpdebug.cost.usd" not in spans[name] and "gen_ai.usage.cost" not in spans[name]
        assert spans[name]["fpdebug.cost.unpriced"] == "unknown price"


def test_a_scripted_call_has_no_price() -> None:
    spans = by_name(one_call(provider="scripted", model="scripted", usage=CACHED))
    assert spans["chat"]["fpdebug.cost.unpriced"] == "no price: scripted"


def test_ids_are_unique_per_trace_file_and_stable_for_one_file() -> None:
    events = one_call(usage=CACHED)
    original = trace_salt('{"kind":"trace_header","created":"2026-01-01T00:00:00Z"}')
    replay = trace_salt('{"kind":"trace_header","created":"2026-01-01T00:05:00Z"}')
    first = build_spans(events, id_salt=original)
    again = build_spans(events, id_salt=original)
    other = build_spans(events, id_salt=replay)
    assert [(s.trace_id, s.span_id) for s in first] == [(s.trace_id, s.span_id) for s in again]
    assert {s.trace_id for s in first}.isdisjoint({s.trace_id for s in other})
    assert {s.span_id for s in first}.isdisjoint({s.span_id for s in other})


def test_the_resource_and_the_scope_carry_the_schema_url() -> None:
    request = export_request(build_spans(one_call(usage=CACHED)))
    (resource_spans,) = request.resource_spans
    assert resource_spans.schema_url == SCHEMA_URL
    assert resource_spans.scope_spans[0].schema_url == SCHEMA_URL

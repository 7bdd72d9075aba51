"""Span building on hand-made traces: failures, unfinished runs, several runs, ids, opt-in content."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from fpdebug.export.otlp import export_request
from fpdebug.export.spans import SpanBuilder, build_spans, span_id_for, trace_id_for
from fpdebug.trace.schema import (
    ErrorInfo,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from tests.conftest import T0
from tests.export.otlp_helpers import CONTENT_KEYS, attrs, spans_of
from tests.trace.samples import Script, every_kind

Grouped = dict[str, list[tuple[Span, dict[str, Any]]]]


def tree(events: list[TraceEvent], *, include_content: bool = False) -> Grouped:
    """The encoded spans, grouped by role (from the span name's first word)."""
    spans = spans_of(export_request(build_spans(events, include_content=include_content)))
    grouped: Grouped = {}
    for span in spans:
        grouped.setdefault(span.name.split(" ")[0], []).append((span, attrs(span.attributes)))
    return grouped


def small_run(
    *,
    run_id: str = "r1",
    end: str | None = "completed",
    call_error: bool = False,
    tool_status: str | None = None,
) -> list[TraceEvent]:
    s = Script(run_id)
    s.add(
        RunStartEvent,
        turn=None,
        agent_name="helper",
        provider="anthropic",
        model="claude-x",
        max_iterations=4,
    )
    s.turn = 1
    s.add(TurnStartEvent, user_message="secret user words")
    s.add(PassEvent, iteration=1, active_ids=["tone"], evaluated_total=1)
    request = LlmRequest(messages=[Message(role="user", content="secret user words")])
    if call_error:
        s.add(
            LlmCallEvent,
            iteration=1,
            call_index=1,
            provider="anthropic",
            model="claude-x",
            request=request,
            latency_ms=40.0,
            error=ErrorInfo(type="ProviderError", message="HTTP 529 overloaded", status=529),
        )
    else:
        s.add(
            LlmCallEvent,
            iteration=1,
            call_index=1,
            provider="anthropic",
            model="claude-x",
            request=request,
            response=LlmResponse(
                content="calling", stop_reason="tool_use", usage=Usage(input_tokens=10, output_tokens=2)
            ),
            latency_ms=40.0,
            route="tool-calls",
        )
        s.add(
            ToolResultEvent,
            iteration=1,
            tool_call_id="t1",
            tool_name="lookup",
            args={"n": 2**70},
            result="secret tool output",
            status=tool_status,
            duration_ms=5.0,
            error=ErrorInfo(type="TimeoutError", message="took too long")
            if tool_status == "failure"
            else None,
        )
    if end == "completed":
        s.add(TurnEndEvent, final_content="done", iteration_count=1, input_tokens=10, output_tokens=2)
    s.turn = None
    if end == "failed":
        s.add(RunEndEvent, status="failed", turns=1, error=ErrorInfo(type="ProviderError", message="gave up"))
    elif end is not None:
        s.add(RunEndEvent, status=end, turns=1)
    return s.events


def test_a_failed_call_marks_the_call_the_turn_and_the_run_as_errors() -> None:
    got = tree(small_run(end="failed", call_error=True))
    ((chat, chat_attrs),) = got["chat"]
    assert chat.status.code == Status.STATUS_CODE_ERROR
    assert chat.status.message == "ProviderError: HTTP 529 overloaded"
    assert chat_attrs["error.type"] == "ProviderError"
    assert [attrs(e.attributes)["exception.message"] for e in chat.events if e.name == "exception"] == [
        "HTTP 529 overloaded"
    ]
    ((turn, _),) = got["invoke_agent"]
    ((run, run_attrs),) = got["run"]
    assert turn.status.code == run.status.code == Status.STATUS_CODE_ERROR
    assert run.status.message == "ProviderError: gave up"
    assert run_attrs["fpdebug.run.status"] == "failed"
    assert turn.end_time_unix_nano == run.end_time_unix_nano  # the open turn ends with the run


def test_a_failed_tool_is_an_error_span_and_a_denied_one_too() -> None:
    ((failed, failed_attrs),) = tree(small_run(tool_status="failure"))["execute_tool"]
    assert failed.status.code == Status.STATUS_CODE_ERROR
    assert failed_attrs["error.type"] == "TimeoutError"
    assert failed_attrs["fpdebug.tool.status"] == "failure"
    ((denied, denied_attrs),) = tree(small_run(tool_status="denied"))["execute_tool"]
    assert denied.status.code == Status.STATUS_CODE_ERROR and denied_attrs["error.type"] == "denied"
    ((ok, _),) = tree(small_run(tool_status="success"))["execute_tool"]
    assert ok.status.code == Status.STATUS_CODE_UNSET


def test_an_interrupted_run_is_not_an_error() -> None:
    got = tree(small_run(end="interrupted"))
    ((run, run_attrs),) = got["run"]
    assert run.status.code == Status.STATUS_CODE_UNSET
    assert run_attrs["fpdebug.run.status"] == "interrupted"


def test_a_trace_without_run_end_closes_its_spans_as_incomplete() -> None:
    events = small_run(end=None)
    got = tree(events)
    ((run, run_attrs),) = got["run"]
    ((turn, turn_attrs),) = got["invoke_agent"]
    assert run_attrs["fpdebug.incomplete"] is True and turn_attrs["fpdebug.incomplete"] is True
    last = events[-1].ts
    assert run.end_time_unix_nano == turn.end_time_unix_nano
    elapsed = (last - events[0].ts) // timedelta(microseconds=1) * 1000
    assert run.end_time_unix_nano - run.start_time_unix_nano == elapsed


def test_the_builder_hands_out_each_span_when_it_completes() -> None:
    builder = SpanBuilder()
    completed = [[span.name for span in builder.feed(event)] for event in small_run()]
    assert completed == [
        [],
        [],
        [],
        ["chat claude-x"],
        ["execute_tool lookup"],
        ["invoke_agent helper"],
        ["run helper"],
    ]
    assert builder.finish() == []


def test_ids_are_derived_from_the_run_and_the_record() -> None:
    spans = build_spans(small_run())
    assert {span.trace_id for span in spans} == {trace_id_for("r1")}
    chat = next(span for span in spans if span.role == "chat")
    assert chat.span_id == span_id_for("r1", "chat", chat.seq)
    assert [span.span_id for span in build_spans(small_run())] == [span.span_id for span in spans]
    other = build_spans(small_run(run_id="r2"))
    assert not {span.span_id for span in other} & {span.span_id for span in spans}
    assert span_id_for("r1", "turn", 3) != span_id_for("r1", "chat", 3)


def test_two_runs_in_one_file_are_two_traces() -> None:
    second = small_run(run_id="r2")
    shifted = [event.model_copy(update={"seq": event.seq + 7}) for event in second]
    got = tree(small_run() + shifted)
    roots = [span for span, _ in got["run"]]
    assert len(roots) == 2 and roots[0].trace_id != roots[1].trace_id
    for span, _ in got["chat"] + got["invoke_agent"]:
        assert span.trace_id in {root.trace_id for root in roots}


def test_chat_kind_is_client_for_remote_models_and_internal_for_scripted_ones() -> None:
    ((chat, _),) = tree(small_run())["chat"]
    assert chat.kind == Span.SPAN_KIND_CLIENT
    scripted = [
        event.model_copy(update={"provider": "scripted"}) if event.kind == "llm_call" else event
        for event in small_run()
    ]
    ((chat, _),) = tree(scripted)["chat"]
    assert chat.kind == Span.SPAN_KIND_INTERNAL


def test_input_tokens_include_the_cached_ones_as_the_conventions_ask() -> None:
    # Anthropic reports cache reads and writes apart from input_tokens; OpenAI counts them inside.
    def with_cache(provider: str) -> list[TraceEvent]:
        cached = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=100, cache_write_tokens=7)
        return [
            event.model_copy(
                update={"provider": provider, "response": event.response.model_copy(update={"usage": cached})}
            )
            if isinstance(event, LlmCallEvent)
            else event
            for event in small_run()
        ]

    grouped = tree(with_cache("anthropic"))
    ((_, chat),) = grouped["chat"]
    assert chat["gen_ai.usage.input_tokens"] == 117
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 100
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 7
    ((_, turn),) = grouped["invoke_agent"]
    assert turn["gen_ai.usage.input_tokens"] == 117  # the turn's 10, plus its calls' cache tokens
    grouped = tree(with_cache("openai"))
    assert grouped["chat"][0][1]["gen_ai.usage.input_tokens"] == 10
    assert grouped["invoke_agent"][0][1]["gen_ai.usage.input_tokens"] == 10


def test_integers_beyond_int64_are_kept_as_text() -> None:
    ((_, tool_attrs),) = tree(small_run(), include_content=True)["execute_tool"]
    # Arguments are a JSON string now, and JSON keeps any integer exactly.
    assert json.loads(tool_attrs["gen_ai.tool.call.arguments"]) == {"n": 2**70}


def test_every_kind_without_content_carries_no_text_from_the_trace() -> None:
    events = every_kind(T0)
    got = tree(events)
    keys = {key for group in got.values() for _, span_attrs in group for key in span_attrs}
    assert not keys & CONTENT_KEYS
    encoded = export_request(build_spans(events)).SerializeToString()
    for secret in (b"help me", b"a page\nwith", b"Refunded.", b"You are helpful.", b"calling"):
        assert secret not in encoded


def test_every_kind_with_content_exports_the_witness_and_the_values() -> None:
    got = tree(every_kind(T0), include_content=True)
    ((turn, turn_attrs),) = got["invoke_agent"]
    events = {event.name: attrs(event.attributes) for event in turn.events}
    assert events["fpdebug.cursor_move"]["fpdebug.cursor.witness.text"] == "help me"
    assert events["fpdebug.cursor_move"]["fpdebug.cursor.witness.keyword"] == "help"
    assert events["fpdebug.finding"]["fpdebug.finding.values_stated"] == 1
    assert events["fpdebug.finding"]["fpdebug.finding.values_unsupported"] == 0
    assert events["fpdebug.skill_rejected"]["fpdebug.skill.requested_id"] == "faq"
    assert events["fpdebug.route_conflict"]["fpdebug.route_conflict.loser_targets"] == ["faq"]
    assert events["fpdebug.reroute_superseded"]["fpdebug.reroute.won_id"] == "billing"
    assert json.loads(turn_attrs["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "help me with a refund ünïcödé \u202e"}]}
    ]
    output = json.loads(turn_attrs["gen_ai.output.messages"])
    assert output[0]["parts"] == [{"type": "text", "content": "Refunded."}]


def test_facts_without_a_turn_go_on_the_run_span() -> None:
    s = Script("r1")
    s.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=2)
    s.add(PassEvent, turn=None, iteration=1, active_ids=["a"], evaluated_total=1)
    s.add(RunEndEvent, turn=None, status="completed")
    ((run, _),) = tree(s.events)["run"]
    assert [event.name for event in run.events] == ["fpdebug.pass"]

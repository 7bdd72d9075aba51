"""The OTLP/JSON export of every demo trace, parsed back with the official protobuf definitions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from fpdebug.export.otlp import otlp_json
from fpdebug.export.spans import FACT_KINDS, build_spans, finish_reason
from tests.export.otlp_helpers import (
    CONTENT_KEYS,
    SAMPLES,
    attrs,
    ns,
    parse_otlp_json,
    raw_records,
    spans_of,
    trace_events,
)


def export(path: Path, *, include_content: bool = False) -> dict[str, Any]:
    spans = build_spans(trace_events(path), include_content=include_content)
    return otlp_json(spans, producer="fpdebug test")


@pytest.fixture(params=SAMPLES, ids=lambda p: p.name.split(".")[0])
def sample(request: pytest.FixtureRequest) -> Path:
    return request.param


def test_there_is_a_sample_for_each_demo_scenario() -> None:
    names = {path.name.split(".")[0] for path in SAMPLES}
    assert {"support", "zone-trap", "planted-fact", "leases"} <= names


class Tree:
    """The parsed spans of one export, indexed for assertions."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.request = parse_otlp_json(document)
        self.spans = spans_of(self.request)
        self.by_id = {span.span_id: span for span in self.spans}
        self.attrs = {span.span_id: attrs(span.attributes) for span in self.spans}

    def op(self, name: str) -> list[Span]:
        return [span for span in self.spans if self.attrs[span.span_id].get("gen_ai.operation.name") == name]

    def roots(self) -> list[Span]:
        return [span for span in self.spans if not span.parent_span_id]


def test_the_span_tree_is_run_then_turns_then_calls_and_tools(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample))
    run_starts = [r for r in records if r["kind"] == "run_start"]
    roots = tree.roots()
    assert [root.name for root in roots] == [f"run {r['agent_name']}" for r in run_starts]
    assert all(len(span.trace_id) == 16 and len(span.span_id) == 8 for span in tree.spans)
    assert len(tree.by_id) == len(tree.spans), "span ids are unique"
    assert {span.trace_id for span in tree.spans} == {root.trace_id for root in roots}

    turns = tree.op("invoke_agent")
    assert len(turns) == sum(1 for r in records if r["kind"] == "turn_start")
    for turn in turns:
        assert tree.by_id[turn.parent_span_id] in roots
        assert turn.kind == Span.SPAN_KIND_INTERNAL
        assert turn.name == f"invoke_agent {run_starts[0]['agent_name']}"
    turn_of = {tree.attrs[turn.span_id]["fpdebug.turn"]: turn for turn in turns}

    chats, tools = tree.op("chat"), tree.op("execute_tool")
    assert len(chats) == sum(1 for r in records if r["kind"] == "llm_call")
    assert len(tools) == sum(1 for r in records if r["kind"] == "tool_result")
    assert len(tree.spans) == len(roots) + len(turns) + len(chats) + len(tools)
    for span in chats + tools:
        assert span.parent_span_id == turn_of[tree.attrs[span.span_id]["fpdebug.turn"]].span_id


def test_chat_spans_carry_the_gen_ai_attributes_of_each_llm_call(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample))
    calls = [r for r in records if r["kind"] == "llm_call"]
    passes = {(r["turn"], r["iteration"]): r for r in records if r["kind"] == "pass"}
    chats = sorted(tree.op("chat"), key=lambda span: tree.attrs[span.span_id]["fpdebug.call_index"])
    assert len(chats) == len(calls)
    for call, span in zip(calls, chats, strict=True):
        got = tree.attrs[span.span_id]
        assert span.name == f"chat {call['model']}"
        assert got["gen_ai.provider.name"] == call["provider"]
        assert got["gen_ai.request.model"] == call["model"]
        assert got["gen_ai.conversation.id"] == call["run_id"]
        assert got["gen_ai.usage.input_tokens"] == call["response"]["usage"]["input_tokens"]
        assert got["gen_ai.usage.output_tokens"] == call["response"]["usage"]["output_tokens"]
        if call["response"].get("stop_reason"):
            # The convention's value (tool_use → tool_call); the provider's own word is kept beside it.
            assert got["gen_ai.response.finish_reasons"] == [finish_reason(call["response"]["stop_reason"])]
            assert got["fpdebug.response.stop_reason"] == call["response"]["stop_reason"]
        assert got["fpdebug.iteration"] == call["iteration"]
        assert got["fpdebug.route"] == call["route"]
        assert got["fpdebug.pass.active_ids"] == passes[(call["turn"], call["iteration"])]["active_ids"]
        assert span.end_time_unix_nano == ns(call["ts"])
        assert span.end_time_unix_nano - span.start_time_unix_nano == round(call["latency_ms"] * 1e6)
        assert span.status.code == Status.STATUS_CODE_UNSET


def test_tool_spans_name_the_tool_and_the_call(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample))
    results = [r for r in records if r["kind"] == "tool_result"]
    tools = tree.op("execute_tool")
    assert [
        (tree.attrs[s.span_id]["gen_ai.tool.name"], tree.attrs[s.span_id]["gen_ai.tool.call.id"])
        for s in tools
    ] == [(r["tool_name"], r["tool_call_id"]) for r in results]
    for span, result in zip(tools, results, strict=True):
        assert span.name == f"execute_tool {result['tool_name']}"
        assert span.end_time_unix_nano == ns(result["ts"])


def test_turn_spans_total_the_turn(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample))
    run_start = next(r for r in records if r["kind"] == "run_start")
    ends = {r["turn"]: r for r in records if r["kind"] == "turn_end"}
    starts = {r["turn"]: r for r in records if r["kind"] == "turn_start"}
    for span in tree.op("invoke_agent"):
        got = tree.attrs[span.span_id]
        end = ends[got["fpdebug.turn"]]
        assert got["gen_ai.provider.name"] == run_start["provider"]
        assert got["gen_ai.agent.name"] == run_start["agent_name"]
        assert got["gen_ai.usage.input_tokens"] == end["input_tokens"]
        assert got["gen_ai.usage.output_tokens"] == end["output_tokens"]
        assert got["fpdebug.turn.iteration_count"] == end["iteration_count"]
        assert span.start_time_unix_nano == ns(starts[got["fpdebug.turn"]]["ts"])
        assert span.end_time_unix_nano == ns(end["ts"])


def test_every_fpdebug_fact_is_an_event_on_its_turn_span(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample))
    facts = [r for r in records if r["kind"] in FACT_KINDS]
    events = [
        (tree.attrs[span.span_id]["fpdebug.turn"], event)
        for span in tree.op("invoke_agent")
        for event in span.events
    ]
    assert Counter(event.name for _, event in events) == Counter(f"fpdebug.{r['kind']}" for r in facts)
    by_seq = {attrs(event.attributes)["fpdebug.seq"]: (turn, event) for turn, event in events}
    for record in facts:
        turn, event = by_seq[record["seq"]]
        got = attrs(event.attributes)
        assert turn == record["turn"] and got.get("fpdebug.iteration") == record.get("iteration")
        assert event.time_unix_nano == ns(record["ts"])
        if record["kind"] == "pass":
            assert got["fpdebug.pass.active_ids"] == record["active_ids"]
            assert got.get("fpdebug.pass.lease_active_ids") == record.get("lease_active_ids")
        elif record["kind"] == "cursor_move":
            # A move with no cursor (by: none: a decision tree's run, or a menu left to the model) has no `to`.
            assert (
                got.get("fpdebug.cursor.from"),
                got.get("fpdebug.cursor.to"),
                got["fpdebug.cursor.by"],
            ) == (
                record.get("from_skill"),
                record.get("to_skill"),
                record["by"],
            )
            assert got.get("fpdebug.cursor.score") == record.get("score")
            assert got.get("fpdebug.cursor.offered") == record.get("offered")
            assert got.get("fpdebug.cursor.declined_offer") == record.get("declined_offer")
        elif record["kind"] == "lease_grant":
            lease = record["lease"]
            assert got["fpdebug.lease.instruction_id"] == lease["instruction_id"]
            assert got["fpdebug.lease.delivery_lease"] == lease["delivery_lease"]
            assert got["fpdebug.lease.tool_call_id"] == lease["tool_call_id"]
        elif record["kind"] == "lease_prune":
            pruned = record["pruned"]
            assert got["fpdebug.lease_prune.instruction_ids"] == [p["instruction_id"] for p in pruned]
            assert got["fpdebug.lease_prune.reasons"] == [p["reason"] for p in record["pruned"]]
            assert got["fpdebug.lease_prune.site"] == record["site"]
        elif record["kind"] == "engagement":
            assert got["fpdebug.engagement.standings"] == [m["standing"] for m in record["records"]]
            assert got["fpdebug.engagement.idle"] == [m["idle"] for m in record["records"]]


def test_the_zone_trap_export_shows_the_park_and_the_re_engagement() -> None:
    path = next(p for p in SAMPLES if p.name.startswith("zone-trap"))
    tree = Tree(export(path))
    changes = [
        change
        for span in tree.op("invoke_agent")
        for event in span.events
        if event.name == "fpdebug.engagement"
        for change in attrs(event.attributes).get("fpdebug.engagement.changes", [])
    ]
    assert "parked" in changes and "reengaged" in changes
    assert changes.index("parked") < changes.index("reengaged")


def test_no_content_leaves_the_trace_unless_asked(sample: Path) -> None:
    records = raw_records(sample)
    document = export(sample)
    keys = {key for span in Tree(document).attrs.values() for key in span}
    assert not keys & CONTENT_KEYS
    text = json.dumps(document)
    for record in records:
        if record["kind"] == "turn_start":
            assert json.dumps(record["user_message"])[1:-1] not in text
        if record["kind"] == "tool_result" and len(record["result"]) > 8:
            assert json.dumps(record["result"])[1:-1] not in text


JSON_KEYS = frozenset(
    {
        "gen_ai.system_instructions",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.definitions",
    }
)


def test_content_is_exported_on_request_in_the_gen_ai_message_shapes(sample: Path) -> None:
    records = raw_records(sample)
    tree = Tree(export(sample, include_content=True))
    calls = {r["call_index"]: r for r in records if r["kind"] == "llm_call"}
    for span in tree.op("chat"):
        # Message attributes are JSON strings: what Phoenix and Langfuse parse.
        got = {
            key: json.loads(value) if key in JSON_KEYS else value
            for key, value in tree.attrs[span.span_id].items()
        }
        call = calls[got["fpdebug.call_index"]]
        assert [part["content"] for part in got["gen_ai.system_instructions"]] == [
            segment["text"] for segment in call["request"]["system_prompt"]
        ]
        sent = call["request"]["messages"]
        assert [m["role"] for m in got["gen_ai.input.messages"]] == [m["role"] for m in sent]
        first_user = next(m for m in call["request"]["messages"] if m["role"] == "user")
        user_message = next(m for m in got["gen_ai.input.messages"] if m["role"] == "user")
        assert user_message["parts"] == [{"type": "text", "content": first_user["content"]}]
        # A tool message is one ToolCallResponsePart: its required field is `response` (the
        # conventions' gen-ai-input-messages.json), which backends read to show the result.
        for message, exported in zip(sent, got["gen_ai.input.messages"], strict=True):
            if message["role"] == "tool":
                assert exported["parts"] == [
                    {
                        "type": "tool_call_response",
                        "id": message["tool_call_id"],
                        "response": message["content"],
                    }
                ]
        output = got["gen_ai.output.messages"][0]
        calls_asked = [part for part in output["parts"] if part["type"] == "tool_call"]
        assert [part["name"] for part in calls_asked] == [c["name"] for c in call["response"]["tool_calls"]]
    results = {r["tool_call_id"]: r for r in records if r["kind"] == "tool_result"}
    for span in tree.op("execute_tool"):
        got = tree.attrs[span.span_id]
        result = results[got["gen_ai.tool.call.id"]]
        assert got["gen_ai.tool.call.result"] == result["result"]
        assert json.loads(got["gen_ai.tool.call.arguments"]) == result["args"]


def test_the_export_follows_the_otlp_json_encoding(sample: Path) -> None:
    document = export(sample)
    scope = document["resourceSpans"][0]["scopeSpans"][0]
    assert scope["scope"]["name"] == "fpdebug.export"
    resource = {kv["key"]: kv["value"] for kv in document["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["service.name"] == {"stringValue": "fpdebug"}
    for span in scope["spans"]:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        int(span["traceId"], 16), int(span["spanId"], 16)
        assert isinstance(span["startTimeUnixNano"], str) and isinstance(span["endTimeUnixNano"], str)
        assert isinstance(span["kind"], int)
        for kv in span.get("attributes", []):
            if "intValue" in kv["value"]:
                assert isinstance(kv["value"]["intValue"], str)


def test_an_export_is_reproducible(sample: Path) -> None:
    first = json.dumps(export(sample))
    assert json.dumps(export(sample)) == first

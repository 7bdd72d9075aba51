"""The OTLP importer against real producers' spans: every fixture matches its ground truth."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from fpdebug.ingest.otlp import import_otlp
from fpdebug.ingest.otlp_decode import OtlpDecodeError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, ToolResultEvent, TraceHeader, TurnEndEvent, TurnStartEvent

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
PRODUCERS = ("openai_v2_latest", "openai_openinference", "anthropic_sdk", "pydantic_ai_v5")
SYSTEM = "You are a helpful weather assistant. Use tools; be concise."


def _import(tmp_path: Path, *sources: Path) -> tuple[TraceHeader, list[Any]]:
    out = tmp_path / "out.fptrace.jsonl"
    import_otlp(list(sources), out)
    with TraceReader(out) as reader:
        assert reader.problems() == []
        return reader.header, list(reader)[1:]


def _of(records: list[Any], kind: type) -> list[Any]:
    return [record for record in records if isinstance(record, kind)]


@pytest.mark.parametrize("encoding", ["json", "pb"])
@pytest.mark.parametrize("name", PRODUCERS)
def test_each_producer_matches_its_ground_truth(tmp_path: Path, name: str, encoding: str) -> None:
    truth = json.loads((FIXTURES / f"{name}.truth.json").read_text())
    header, records = _import(tmp_path, FIXTURES / f"{name}.otlp.{encoding}")
    assert header.source is not None and header.source.format == "otlp"
    assert "pass" in header.source.not_recorded and "lease_grant" in header.source.not_recorded

    calls = _of(records, LlmCallEvent)
    assert len(calls) == truth["llm_calls"] == 3
    assert [call.provider for call in calls] == [truth["provider"]] * 3
    assert all(call.model == truth["request_model"] for call in calls)
    assert all(call.response.model == truth["response_model"] for call in calls)
    # the stop reason as the span recorded it (pydantic-ai writes its own spelling, see README.md)
    recorded = ["tool_call", "tool_call", "stop"] if name == "pydantic_ai_v5" else truth["finish_reasons"]
    assert [call.response.stop_reason for call in calls] == recorded
    assert [call.route for call in calls] == ["tool-calls", "tool-calls", "final"]
    # the exact request: system instructions apart, the user's message first
    for call in calls:
        assert [segment.text for segment in call.request.system_prompt] == [SYSTEM]
        assert call.request.messages[0].role == "user"
        assert call.request.messages[0].content == truth["user_prompt"]
    asked = [tc for call in calls for tc in call.response.tool_calls]
    assert [(tc.id, tc.name, tc.args) for tc in asked] == [
        (t["id"], t["name"], t["arguments"]) for t in truth["tool_calls"]
    ]
    # the tool results the last request carried, with the tool's name joined from its call
    tool_messages = [m for m in calls[-1].request.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.tool_name, m.content) for m in tool_messages] == [
        (t["id"], t["name"], t["result"]) for t in truth["tool_calls"]
    ]

    results = _of(records, ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.args, r.result) for r in results] == [
        (t["id"], t["name"], t["arguments"], t["result"]) for t in truth["tool_calls"]
    ]
    assert [r.iteration for r in results] == [1, 1, 2]

    (start,) = _of(records, TurnStartEvent)
    assert start.user_message == truth["user_prompt"]
    (end,) = _of(records, TurnEndEvent)
    assert end.final_content == truth["final_answer"]
    assert end.iteration_count == 3

    if name == "anthropic_sdk":
        assert calls[0].response.content == truth["assistant_text_before_tools"]
        per_call = truth["usage_per_llm_call"]
        assert [c.response.usage.input_tokens for c in calls] == [u["input_tokens"] for u in per_call]
        assert [c.response.usage.cache_write_tokens for c in calls] == [
            u["cache_creation_input_tokens"] for u in per_call
        ]
        assert [c.response.usage.cache_read_tokens for c in calls] == [
            u["cache_read_input_tokens"] for u in per_call
        ]
        # input + cache writes + cache reads is what every Anthropic producer reported
        reported = truth["usage_as_reported_total"]
        total = sum(
            c.response.usage.input_tokens
            + c.response.usage.cache_read_tokens
            + c.response.usage.cache_write_tokens
            for c in calls
        )
        assert total == reported["input_tokens"] == 1799
        assert end.input_tokens == truth["usage_total_api"]["input_tokens"]
        assert end.output_tokens == reported["output_tokens"]
    else:
        per_call = truth["usage_per_llm_call"]
        assert [c.response.usage.input_tokens for c in calls] == [u["input_tokens"] for u in per_call]
        assert [c.response.usage.output_tokens for c in calls] == [u["output_tokens"] for u in per_call]
        # the run total on the agent span (641 again) is never added to the calls
        assert (end.input_tokens, end.output_tokens) == (641, 96)
        assert [c.response.id for c in calls] == [
            f"chatcmpl-FX000{i}aBcDeFgHiJkLmNoPqRsTuV" for i in (1, 2, 3)
        ]


def test_tool_definitions_are_kept_where_recorded(tmp_path: Path) -> None:
    _header, records = _import(tmp_path, FIXTURES / "pydantic_ai_v5.otlp.json")
    call = _of(records, LlmCallEvent)[0]
    assert [tool.name for tool in call.request.tools] == ["get_weather", "calculate"]
    assert call.request.tools[0].parameters["properties"] == {"city": {"type": "string"}}
    assert call.request.temperature == 0.2 and call.request.max_tokens == 512
    _header, records = _import(tmp_path, FIXTURES / "openai_v2_latest.otlp.json")
    assert _of(records, LlmCallEvent)[0].request.tools == []  # not recorded: not invented


def test_agentfootprint_otlp_has_calls_and_tools_but_no_content(tmp_path: Path) -> None:
    header, records = _import(tmp_path, FIXTURES / "agentfootprint-support-refund.otlp.json")
    calls = _of(records, LlmCallEvent)
    assert len(calls) == 5
    assert [c.route for c in calls] == ["tool-calls"] * 4 + ["final"]
    assert sum(c.response.usage.input_tokens for c in calls) == 680
    assert all(c.request.messages == [] and c.response.id is None for c in calls)
    results = _of(records, ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.iteration) for r in results] == [
        ("t1", "lookup_customer", 1),
        ("t2", "check_charges", 2),
        ("t3", "open_refund_case", 3),
        ("t4", "issue_refund", 4),
    ]
    assert all(r.args == {} and r.result == "" for r in results)
    assert records[0].run_id == "run-1796148354440-1"
    assert records[0].agent_name == "afrec-support-refund"
    assert header.source is not None and header.source.producer == "agentfootprint"


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: base64.b64decode(value).hex()
            if key in ("traceId", "spanId", "parentSpanId") and value
            else _hex_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def test_hex_ids_and_json_lines_read_like_base64(tmp_path: Path) -> None:
    request = json.loads((FIXTURES / "openai_v2_latest.otlp.json").read_text())
    hexed = tmp_path / "hex.json"
    hexed.write_text(json.dumps(_hex_ids(request)))
    # a collector's file exporter: one request per line, the root span in a later batch
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    first, later = json.loads(json.dumps(request)), json.loads(json.dumps(request))
    first["resourceSpans"][0]["scopeSpans"][0]["spans"] = [s for s in spans if s.get("parentSpanId")]
    later["resourceSpans"][0]["scopeSpans"][0]["spans"] = [s for s in spans if not s.get("parentSpanId")]
    lines = tmp_path / "spans.jsonl"
    lines.write_bytes(orjson.dumps(_hex_ids(first)) + b"\n" + orjson.dumps(later) + b"\n")
    _h, base = _import(tmp_path, FIXTURES / "openai_v2_latest.otlp.json")
    for path in (hexed, lines):
        _h, other = _import(tmp_path, path)
        assert [r.model_dump(exclude={"ts"}) for r in other] == [r.model_dump(exclude={"ts"}) for r in base]


def test_duplicate_llm_spans_keep_one_per_response_id(tmp_path: Path) -> None:
    request = json.loads((FIXTURES / "anthropic_sdk.otlp.json").read_text())
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    twins = []
    kept = {"gen_ai.provider.name", "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.id"}
    for index, span in enumerate(spans):
        twin = json.loads(json.dumps(span))
        twin["spanId"] = base64.b64encode(bytes([index + 1] * 8)).decode()
        twin["name"] = "anthropic.chat"
        twin["attributes"] = [a for a in twin["attributes"] if a["key"] in kept]
        twins.append(twin)
    request["resourceSpans"][0]["scopeSpans"].append({"scope": {"name": "traceloop"}, "spans": twins})
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(request))
    header, records = _import(tmp_path, path)
    calls = _of(records, LlmCallEvent)
    assert len(calls) == 3
    assert calls[0].response.content  # the richer span (with messages) is the one kept
    assert header.source is not None and "traceloop" in (header.source.producer or "")


def _log(trace_id: str, span_id: str, name: str, body: dict[str, Any], t: int) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, dict):
            return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": str(v)}

    return {
        "timeUnixNano": str(t),
        "traceId": trace_id,
        "spanId": span_id,
        "eventName": name,
        "body": value(body),
    }


def test_legacy_layout_merges_log_events_and_groups_parentless_spans(tmp_path: Path) -> None:
    """openai-v2 legacy: LLM spans without a parent, content only in log records."""
    trace_id = "5b8aa5a2d2c872e8321cf37308d69df2"
    spans, logs = [], []
    calls = [
        (
            "1111111111111111",
            [("gen_ai.system.message", {"content": SYSTEM}), ("gen_ai.user.message", {"content": "hi?"})],
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "clock", "arguments": '{"tz": "UTC"}'},
                        }
                    ]
                },
            },
        ),
        (
            "2222222222222222",
            [
                ("gen_ai.user.message", {"content": "hi?"}),
                ("gen_ai.tool.message", {"id": "c1", "content": "12:00"}),
            ],
            {"index": 0, "finish_reason": "stop", "message": {"content": "It is noon."}},
        ),
    ]
    for number, (span_id, inputs, choice) in enumerate(calls, start=1):
        start = 1_000_000_000 * number
        spans.append(
            {
                "traceId": trace_id,
                "spanId": span_id,
                "name": "chat gpt-4o-mini",
                "kind": 3,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 500_000_000),
                "attributes": [
                    {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
                    {"key": "gen_ai.response.id", "value": {"stringValue": f"chatcmpl-{number}"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "10"}},
                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "5"}},
                ],
            }
        )
        for offset, (name, body) in enumerate(inputs):
            logs.append(_log(trace_id, span_id, name, body, start + offset))
        logs.append(_log(trace_id, span_id, "gen_ai.choice", choice, start + 400_000_000))
    traces = tmp_path / "traces.json"
    traces.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    log_file = tmp_path / "logs.json"
    log_file.write_text(json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": logs}]}]}))
    _h, records = _import(tmp_path, log_file, traces)
    calls_out = _of(records, LlmCallEvent)
    assert len(calls_out) == 2 and len(_of(records, TurnStartEvent)) == 1  # one trace, one run, one turn
    assert [s.text for s in calls_out[0].request.system_prompt] == [SYSTEM]
    assert calls_out[0].response.tool_calls[0].args == {"tz": "UTC"}
    results = _of(records, ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.result) for r in results] == [("c1", "clock", "12:00")]
    assert _of(records, TurnEndEvent)[0].final_content == "It is noon."


def test_openinference_flattened_messages_and_gzip_free_protobuf(tmp_path: Path) -> None:
    _h, records = _import(tmp_path, FIXTURES / "openai_openinference.otlp.pb")
    second = _of(records, LlmCallEvent)[1]
    assert second.request.messages[1].tool_calls is not None
    assert [c.args for c in second.request.messages[1].tool_calls] == [{"city": "Paris"}, {"city": "Tokyo"}]
    assert second.response.usage.cache_read_tokens == 128


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x0a\xff\xff\xff\x0f", "truncated or corrupt"),
        (b'{"hello": "world"}', "not OTLP"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}', "not a valid OTLP/JSON"),
        (b"", "empty file"),
    ],
)
def test_bad_input_is_an_error_and_writes_nothing(tmp_path: Path, content: bytes, message: str) -> None:
    source = tmp_path / "bad.bin"
    source.write_bytes(content)
    out = tmp_path / "out.fptrace.jsonl"
    with pytest.raises(OtlpDecodeError, match=message):
        import_otlp([source], out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.bin"]


def test_truncated_protobuf_fixture_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "cut.pb"
    source.write_bytes((FIXTURES / "pydantic_ai_v5.otlp.pb").read_bytes()[:-7])
    with pytest.raises(OtlpDecodeError):
        import_otlp([source], tmp_path / "out.fptrace.jsonl")
    assert not (tmp_path / "out.fptrace.jsonl").exists()
    assert gzip  # gzip bodies are the collector's concern (tests/ingest/test_collect.py)


def test_what_the_producer_dropped_is_named_in_the_header(tmp_path: Path) -> None:
    request = json.loads((FIXTURES / "openai_v2_latest.otlp.json").read_text())
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["droppedAttributesCount"] = 4
    path = tmp_path / "dropped.json"
    path.write_text(json.dumps(request))
    header, _records = _import(tmp_path, path)
    assert header.source is not None
    assert header.source.gaps == (
        "the producer dropped 4 attributes, events or links from 1 span(s) (its span limits)",
    )


def test_json_lines_are_converted_trace_by_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays bounded: a trace is converted and released once its root arrives."""
    from fpdebug.ingest import otlp

    request = json.loads((FIXTURES / "pydantic_ai_v5.otlp.json").read_text())
    lines = []
    for number in range(40):
        copy = json.loads(json.dumps(request))
        trace_id = base64.b64encode(number.to_bytes(16, "big")).decode()
        for span in copy["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span["traceId"] = trace_id
        lines.append(orjson.dumps(copy))
    source = tmp_path / "many.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    most_open: list[int] = []
    original = otlp.TraceConverter.add

    def add(self: otlp.TraceConverter, spans: Any, logs: Any) -> None:
        original(self, spans, logs)
        most_open.append(len(self._open))

    monkeypatch.setattr(otlp.TraceConverter, "add", add)
    seen: list[tuple[int, int]] = []
    summary = import_otlp([source], tmp_path / "out.fptrace.jsonl", progress=lambda d, t: seen.append((d, t)))
    assert summary.runs == 40 and summary.counts["llm_call"] == 120
    assert max(most_open) == 0  # every line held a whole trace: nothing stays in memory between lines
    assert seen[-1] == (source.stat().st_size, source.stat().st_size) and len(seen) == 40


# Recorded for this importer with tests/ingest/fixtures/otlp/generate/openai_legacy.py: real
# instrumentations against a scripted fake server, the same weather run as the other fixtures.


def _weather_checks(records: list[Any]) -> list[LlmCallEvent]:
    truth = json.loads((FIXTURES / "openai_v2_latest.truth.json").read_text())
    calls = _of(records, LlmCallEvent)
    assert [c.response.id for c in calls] == [f"chatcmpl-FX000{i}aBcDeFgHiJkLmNoPqRsTuV" for i in (1, 2, 3)]
    assert [(c.response.usage.input_tokens, c.response.usage.output_tokens) for c in calls] == [
        (u["input_tokens"], u["output_tokens"]) for u in truth["usage_per_llm_call"]
    ]
    assert [s.text for s in calls[0].request.system_prompt] == [SYSTEM]
    results = _of(records, ToolResultEvent)
    assert [(r.tool_call_id, r.tool_name, r.args, r.result, r.iteration) for r in results] == [
        (t["id"], t["name"], t["arguments"], t["result"], i)
        for t, i in zip(truth["tool_calls"], (1, 1, 2), strict=True)
    ]
    (start,) = _of(records, TurnStartEvent)
    (end,) = _of(records, TurnEndEvent)
    assert (start.user_message, end.final_content) == (truth["user_prompt"], truth["final_answer"])
    assert (end.input_tokens, end.output_tokens) == (641, 96)
    return calls


@pytest.mark.parametrize("logs_first", [True, False])
def test_real_legacy_layout_openai_v2_2_1_content_in_log_events(tmp_path: Path, logs_first: bool) -> None:
    traces = FIXTURES / "openai_v2_legacy_events.otlp.pb"
    logs = FIXTURES / "openai_v2_legacy_events.logs.otlp.pb"
    _h, records = _import(tmp_path, *((logs, traces) if logs_first else (traces, logs)))
    calls = _weather_checks(records)
    assert calls[0].provider == "openai"  # from gen_ai.system: this version has no provider.name
    tool_messages = [m for m in calls[2].request.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.tool_name) for m in tool_messages] == [
        ("call_Wx7PARIS0001", "get_weather"),
        ("call_Wx7TOKYO0002", "get_weather"),
        ("call_Calc7DIFF003", "calculate"),
    ]
    # without the logs file the calls are there, their content is not (not recorded, not invented)
    _h, bare = _import(tmp_path, traces)
    assert [c.request.messages for c in _of(bare, LlmCallEvent)] == [[], [], []]


def test_real_two_instrumentations_of_each_call_give_one_call(tmp_path: Path) -> None:
    """openai-v2 2.4b0 nested in Traceloop's openai 0.62.4: every call twice, one gen_ai.response.id."""
    out = tmp_path / "out.fptrace.jsonl"
    summary = import_otlp([FIXTURES / "openai_v2_and_traceloop.otlp.pb"], out)
    assert summary.duplicate_llm_spans == 3
    with TraceReader(out) as reader:
        records = list(reader)[1:]
    calls = _weather_checks(records)
    # the richer span is kept: Traceloop's carries the tool definitions and the cached tokens
    assert [t.name for t in calls[0].request.tools] == ["get_weather", "calculate"]
    assert [c.response.usage.cache_read_tokens for c in calls] == [0, 128, 256]


def _span(
    span_id: str, name: str, start: int, attributes: dict[str, Any], parent: str = ""
) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": str(v)}

    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 100),
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }


def test_openai_agents_repr_text_and_tool_spans_without_ids(tmp_path: Path) -> None:
    """openai-agents-v2: messages and arguments as Python repr text, execute_tool with no call id."""
    root = "b7ad6b7169203331"
    repr_in = repr([{"role": "user", "content": "Time in Oslo?"}])
    repr_out = repr(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "call_1", "function": {"name": "clock", "arguments": "{'tz': 'CET'}"}}],
            }
        ]
    )
    repr_final = repr([{"role": "assistant", "content": "It is 13:00 in Oslo."}])
    spans = [
        _span(
            root,
            "invoke_agent Clock",
            0,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Clock"},
        ),
        _span(
            "0000000000000001",
            "chat gpt-4o",
            1000,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": repr_in,
                "gen_ai.output.messages": repr_out,
            },
            root,
        ),
        _span(
            "0000000000000002",
            "execute_tool clock",
            2000,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "clock",
                "gen_ai.tool.call.result": "13:00",
            },
            root,
        ),
        _span(
            "0000000000000003",
            "chat gpt-4o",
            3000,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.output.messages": repr_final,
            },
            root,
        ),
    ]
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    _h, records = _import(tmp_path, path)
    assert records[0].agent_name == "Clock"
    calls = _of(records, LlmCallEvent)
    assert calls[0].request.messages[0].content == "Time in Oslo?"
    assert calls[0].response.tool_calls[0].args == {"tz": "CET"}
    (result,) = _of(records, ToolResultEvent)
    # the tool span named no call: it answers the pending call of that tool
    assert (result.tool_call_id, result.args, result.result, result.iteration) == (
        "call_1",
        {"tz": "CET"},
        "13:00",
        1,
    )
    assert _of(records, TurnEndEvent)[0].final_content == "It is 13:00 in Oslo."


def test_the_service_name_names_an_agent_without_an_agent_span(tmp_path: Path) -> None:
    _h, records = _import(tmp_path, FIXTURES / "openai_v2_legacy_events.otlp.pb")
    assert records[0].agent_name == "weather-agent"


def test_json_lines_longer_than_any_read_ahead(tmp_path: Path) -> None:
    """A collector's line holds whole prompts: a 200 kB first line is still one JSON Lines record."""
    request = json.loads((FIXTURES / "openai_v2_latest.otlp.json").read_text())
    resource = request["resourceSpans"][0]["resource"]
    resource["attributes"].append({"key": "padding", "value": {"stringValue": "x" * 200_000}})
    path = tmp_path / "long.jsonl"
    path.write_bytes(orjson.dumps(request) + b"\n" + orjson.dumps(request) + b"\n")
    _h, records = _import(tmp_path, path)
    calls = _of(records, LlmCallEvent)
    assert len(calls) == 6  # the same trace twice: two runs (its root came twice), told apart
    assert len({call.run_id for call in calls}) == 2

"""OTLP/HTTP delivery with the SDK's exporter, to a receiver on loopback that decodes what it gets."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from fpdebug.errors import ExportError
from fpdebug.export.otlp import (
    ENDPOINT_ENV,
    TRACES_ENDPOINT_ENV,
    SdkLog,
    capture_sdk_log,
    endpoint_from_env,
    export_request,
    send_spans,
    traces_endpoint,
    undelivered_reason,
)
from fpdebug.export.spans import build_spans
from tests.export.otlp_helpers import SAMPLES, attrs, raw_records, trace_events
from tests.export.receiver import OtlpReceiver


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name.split(".")[0])
def test_the_receiver_decodes_the_same_span_tree_as_the_file_export(sample: Path) -> None:
    spans = build_spans(trace_events(sample))
    with OtlpReceiver() as receiver:
        assert send_spans(spans, receiver.endpoint, producer="fpdebug test") == len(spans)
    received = receiver.spans
    records = raw_records(sample)
    assert len(received) == len(spans)
    names = [span.name for span in received]
    assert names.count(f"run {records[0]['agent_name']}") == 1
    assert sum(name.startswith("chat ") for name in names) == sum(r["kind"] == "llm_call" for r in records)
    tools = sum(r["kind"] == "tool_result" for r in records)
    assert sum(name.startswith("execute_tool ") for name in names) == tools
    by_id = {span.span_id: span for span in received}
    for span in received:
        if span.name.startswith(("chat ", "execute_tool ")):
            assert by_id[span.parent_span_id].name.startswith("invoke_agent ")
        elif span.name.startswith("invoke_agent "):
            assert by_id[span.parent_span_id].name.startswith("run ")
    # What went over the wire is exactly what the file export encodes.
    wire = MessageToDict(receiver.received[0])
    assert wire == MessageToDict(export_request(spans, producer="fpdebug test"))


def test_headers_reach_the_collector() -> None:
    spans = build_spans(trace_events(SAMPLES[0]))
    with OtlpReceiver() as receiver:
        send_spans(spans, receiver.endpoint, headers={"Authorization": "Bearer k-123"})
    assert receiver.requests[0].headers["authorization"] == "Bearer k-123"
    assert receiver.requests[0].path == "/v1/traces"


def test_a_refusing_collector_is_a_clear_error() -> None:
    spans = build_spans(trace_events(SAMPLES[0]))
    with (
        OtlpReceiver(status=400) as receiver,
        pytest.raises(ExportError, match=r"did not accept spans 1-\d+ .*400"),
    ):
        send_spans(spans, receiver.endpoint)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_nobody_listening_is_a_clear_error() -> None:
    port = closed_port()
    spans = build_spans(trace_events(SAMPLES[0]))
    # The cause comes from the SDK's first warning or, when its short retry window left only the
    # generic last line, from fpdebug's own connection attempt (next test); either way it is said.
    with pytest.raises(ExportError, match=r"did not accept spans 1-\d+ .*Connection refused"):
        send_spans(spans, f"http://127.0.0.1:{port}", timeout=1.0)


def test_a_generic_sdk_message_gets_the_connection_error_added() -> None:
    port = closed_port()
    log = SdkLog()
    generic = "Failed to export spans batch due to timeout, max retries or shutdown."
    log.emit(logging.makeLogRecord({"msg": generic, "levelno": logging.ERROR}))
    assert undelivered_reason(f"http://127.0.0.1:{port}", log) == (
        f"{generic} (cannot connect to 127.0.0.1:{port}: Connection refused)"
    )
    assert undelivered_reason(f"http://127.0.0.1:{port}", SdkLog()) == (
        f"cannot connect to 127.0.0.1:{port}: Connection refused"
    )


def test_an_answering_collector_is_not_called_unreachable() -> None:
    with OtlpReceiver(status=400) as receiver:
        log = SdkLog()
        log.emit(
            logging.makeLogRecord({"msg": "Failed to export span batch code: 400", "levelno": logging.ERROR})
        )
        assert undelivered_reason(receiver.endpoint, log) == "Failed to export span batch code: 400"


def test_the_sdk_log_reason_joins_the_last_message_and_the_first_cause() -> None:
    log = SdkLog()
    assert log.reason is None
    logger = logging.getLogger("opentelemetry.test")
    record = logger.makeRecord(
        logger.name,
        logging.WARNING,
        __file__,
        1,
        "Transient error %s encountered while exporting span batch, retrying in %ss.",
        (
            "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded (Caused by NewConnectionError("
            "'<urllib3.connection.HTTPConnection object>: Failed to establish a new connection: "
            "[Errno 111] Connection refused'))",
            0.9,
        ),
        None,
    )
    log.emit(record)
    assert log.reason == log.first  # one message: nothing to join
    log.emit(logger.makeRecord(logger.name, logging.ERROR, __file__, 2, "Failed to export batch.", (), None))
    assert log.reason == "Failed to export batch. (first error: [Errno 111] Connection refused)"
    # A first message without an OS error is kept whole when short, cut when long.
    other = SdkLog()
    other.emit(logger.makeRecord(logger.name, logging.WARNING, __file__, 3, "x" * 400, (), None))
    other.emit(logger.makeRecord(logger.name, logging.ERROR, __file__, 4, "gave up", (), None))
    assert other.reason == f"gave up (first error: {'x' * 299}…)"


def test_captured_sdk_lines_stay_off_the_terminal(caplog: pytest.LogCaptureFixture) -> None:
    # The SDK's lines would reach the root logger's handlers (or Python's last-resort handler on
    # stderr, in the CLI); while captured they go only to the capture.
    caplog.set_level(logging.WARNING)
    with capture_sdk_log() as log:
        logging.getLogger("opentelemetry.exporter").warning("Transient error, retrying")
    assert log.first == "Transient error, retrying"
    assert not caplog.records
    logging.getLogger("opentelemetry.exporter").warning("Transient error after the block")
    assert [record.getMessage() for record in caplog.records] == ["Transient error after the block"]


def test_large_exports_go_in_batches() -> None:
    spans = build_spans(trace_events(SAMPLES[0]))
    # More than one request's worth (512 spans a request), whatever the first sample's size.
    many = [span for _ in range(1200 // len(spans) + 1) for span in spans]
    with OtlpReceiver() as receiver:
        assert send_spans(many, receiver.endpoint) == len(many)
    assert len(receiver.received) > 1
    assert len(receiver.spans) == len(many)
    assert attrs(receiver.spans[0].attributes)["fpdebug.run.id"] == records_run_id(SAMPLES[0])


def records_run_id(path: Path) -> str:
    return raw_records(path)[0]["run_id"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
        (
            "https://cloud.example/api/public/otel/v1/traces",
            "https://cloud.example/api/public/otel/v1/traces",
        ),
        # Langfuse's documented base URL: a base URL with a path still gets /v1/traces (the SDK's rule).
        (
            "https://cloud.langfuse.com/api/public/otel",
            "https://cloud.langfuse.com/api/public/otel/v1/traces",
        ),
        ("http://localhost:6006/", "http://localhost:6006/v1/traces"),
    ],
)
def test_a_base_url_gets_the_traces_path(url: str, expected: str) -> None:
    assert traces_endpoint(url) == expected


@pytest.mark.parametrize("url", ["localhost:4318", "ftp://host/x", "http://", ""])
def test_a_bad_endpoint_is_refused(url: str) -> None:
    with pytest.raises(ExportError, match="not an OTLP/HTTP endpoint"):
        traces_endpoint(url)


def test_the_environment_follows_the_sdk_endpoint_rules() -> None:
    base = "https://cloud.langfuse.com/api/public/otel"
    assert endpoint_from_env({ENDPOINT_ENV: base}) == base + "/v1/traces"
    # The signal-specific variable is used exactly as given, and wins over the base URL.
    assert (
        endpoint_from_env({ENDPOINT_ENV: base, TRACES_ENDPOINT_ENV: "http://h:1/custom"})
        == "http://h:1/custom"
    )
    assert endpoint_from_env({}) is None
    with pytest.raises(ExportError, match="not an OTLP/HTTP endpoint"):
        endpoint_from_env({ENDPOINT_ENV: "localhost:4318"})


def test_a_traces_endpoint_given_as_is_is_posted_to_as_is() -> None:
    spans = build_spans(trace_events(SAMPLES[0]))
    with OtlpReceiver() as receiver:
        with pytest.raises(ExportError, match="did not accept"):
            send_spans(spans, receiver.endpoint + "/custom", as_given=True, timeout=2)
        assert [request.path for request in receiver.requests] == ["/custom"]

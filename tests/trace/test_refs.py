"""The prototype request codec of schema v2 rebuilds every recorded request byte for byte."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fpdebug.trace.refs import RequestCodec, decode_request, encode_request
from fpdebug.trace.schema import LlmCallEvent
from fpdebug.trace.writer import dump_record

SAMPLES = sorted((Path(__file__).parents[2] / "sample_traces").glob("*.fptrace.jsonl"))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.name.split(".")[0])
def test_every_request_of_a_sample_round_trips_byte_for_byte(sample: Path) -> None:
    encoders: dict[str, RequestCodec] = {}
    decoders: dict[str, RequestCodec] = {}
    calls = 0
    saved = 0
    for line in sample.read_bytes().splitlines()[1:]:
        record = orjson.loads(line)
        if record.get("kind") != "llm_call":
            continue
        run = record["run_id"]
        encoded = encode_request(record["request"], encoders.setdefault(run, RequestCodec()))
        written = orjson.dumps({**record, "request": encoded})  # what a v2 line would hold
        back = orjson.loads(written)
        back["request"] = decode_request(back["request"], decoders.setdefault(run, RequestCodec()))
        assert dump_record(LlmCallEvent.model_validate(back)) == line + b"\n"
        calls += 1
        saved += len(line) - len(written)
    assert calls
    assert saved >= 0


def test_a_reference_before_its_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="segment 1 is referenced before it is defined"):
        decode_request({"system_prompt": [1], "messages": {"keep": 0, "then": []}}, RequestCodec())
    with pytest.raises(ValueError, match="keeps 2 messages of a conversation of 0"):
        decode_request({"messages": {"keep": 2, "then": []}}, RequestCodec())

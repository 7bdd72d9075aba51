"""The fast OTLP/JSON span printer writes what the SDK's encoder path writes, byte for byte.

``OtlpJsonWriter`` prints each span from its record (:mod:`fpdebug.export.otlp_text`) instead of
going through ``ReadableSpan`` → protobuf → ``MessageToDict`` → ``json.dumps(indent=2)``. These
tests hold the two together where they could part: characters orjson spells differently from
``json.dumps(ensure_ascii=True)``, floats, empty and missing values (proto3 leaves defaults out),
nested values, error statuses, and the per-item redaction cache.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from fpdebug.export import otlp
from fpdebug.export.otlp_text import ItemRedactor
from fpdebug.export.spans import SpanEventRecord, SpanRecord, build_spans
from fpdebug.trace.redact import default_redactor
from tests.export.otlp_helpers import SAMPLES, trace_events

HOSTILE: dict[str, object] = {
    "ascii": "plain",
    "accents": "café naïve",
    "astral": "emoji \U0001f600 and \U00010348",
    "del": "a\x7fb",
    "controls": "\x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f",
    "bidi": "\u202eevil\u2028\u2029",
    "quotes": 'say "hi" \\ back/slash',
    "lone surrogate": "bad \ud800 half",
    "": "an empty key",
    "none": None,
    "empty text": "",
    "true": True,
    "false": False,
    "zero": 0,
    "negative": -42,
    "int64 max": 2**63 - 1,
    "beyond int64": 2**70,
    "float": 0.1,
    "whole float": 3.0,
    "big float": 1e16,
    "small float": 1e-7,
    "negative zero": -0.0,
    "nan": math.nan,
    "infinity": math.inf,
    "minus infinity": -math.inf,
    "empty list": [],
    "empty map": {},
    "list": [1, "two", 3.5, None, [True], {"k": "v"}],
    "map": {"inner": {"deeper": ["x", {"": 1}]}, "n": None},
    "api_key": "sk-live-1234567890abcdef",
    "password": 4821,
}


def reference(spans: list[SpanRecord]) -> str:
    return json.dumps(otlp.otlp_json(spans, producer="p"), indent=2, ensure_ascii=True) + "\n"


def streamed(spans: list[SpanRecord], size: int) -> str:
    pieces: list[str] = []
    writer = otlp.OtlpJsonWriter(pieces.append, producer="p")
    for start in range(0, len(spans), size):
        writer.write(spans[start : start + size])
    writer.close()
    return "".join(pieces)


def hostile_spans() -> list[SpanRecord]:
    base = SpanRecord(
        run_id="r",
        role="run",
        seq=1,
        order=0,
        trace_id=2**128 - 1,
        span_id=1,
        parent_span_id=None,
        name="run \u00e9\U0001f600",
        kind="internal",
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_500_000_000,
        attributes=dict(HOSTILE),
        events=[
            SpanEventRecord("fpdebug.pass", 1_700_000_000_100_000_000, dict(HOSTILE)),
            SpanEventRecord("", 0, {}),
        ],
    )
    return [
        base,
        replace(base, span_id=2, parent_span_id=1, name="", kind="client", start_ns=0, attributes={}),
        replace(base, span_id=3, parent_span_id=1, status="error", status_message="boom \u00e9", events=[]),
        replace(base, span_id=4, parent_span_id=0, status="error", status_message=None),
        replace(base, span_id=5, parent_span_id=1, status="error", status_message=""),
    ]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_hostile_values_print_as_the_sdk_path_prints_them(size: int) -> None:
    spans = hostile_spans()
    assert streamed(spans, size) == reference(spans)


def test_every_sample_trace_prints_as_the_sdk_path_prints_it_without_content_too() -> None:
    for sample in SAMPLES:
        spans = build_spans(trace_events(sample), include_content=False)
        assert streamed(spans, 7) == reference(spans), sample.name


def test_the_item_cache_redacts_as_the_whole_dict_does_and_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redactor = default_redactor()
    items = ItemRedactor(redactor.redact_value)
    monkeypatch.setattr("fpdebug.export.otlp_text._CACHE_SIZE", 4)
    values = [dict(HOSTILE), {"token": "abc", "Authorization": "Bearer xyz123456789"}, dict(HOSTILE)]
    for value in values:
        expected = redactor.redact_value(value)
        got = items(value)
        assert list(got.items()) == list(expected.items()) or json.dumps(got) == json.dumps(expected)
        assert len(items._cache) <= 4
    assert items(dict(HOSTILE))["api_key"] == redactor.replacement  # a secret is still redacted


def test_repeated_items_reuse_their_encoded_pair_and_print_as_the_sdk_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The pair cache (ItemRedactor.pairs) serves every span after the first: equal values of other
    # types or spellings must not share a pair, a secret must stay redacted on a cache hit, and a
    # key that redaction changes must fall back to the dict path (two such keys collapse into one).
    monkeypatch.setattr("fpdebug.export.otlp_text._CACHE_SIZE", 8)
    key = "sk-ant-api03-" + "A" * 24
    variants = [
        {"n": 0.0, "b": 1, "ids": ["a", "b"], "api_key": "hunter2-secret", "auth": "Bearer abcdef123456"},
        {"n": -0.0, "b": True, "ids": ("a", "b"), "api_key": "hunter2-secret", "auth": "Bearer abcdef123456"},
        {"n": 0, "b": 1.0, "ids": ["a", 2], "api_key": ["sk-ant-api03-" + "B" * 24], "password": [1, 2]},
        {key: 1, key[:-1] + "C": 2, "ids": ["a", "b"]},
    ]
    spans = [
        replace(hostile_spans()[1], span_id=10 + i, attributes=dict(variants[i % len(variants)]), events=[])
        for i in range(12)
    ]
    text = streamed(spans, 3)
    assert text == reference(spans)
    assert (
        "hunter2" not in text and "abcdef123456" not in text and "A" * 24 not in text and "B" * 24 not in text
    )

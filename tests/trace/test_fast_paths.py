"""The read side's fast paths answer exactly what the slower code they replace answered (issue 22)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from bench.demo_trace import iter_demo_lines
from fpdebug.trace.reader import TraceReader, record_problems
from fpdebug.trace.records import (
    _MAYBE_NON_FINITE,
    InvalidRecord,
    _maybe_non_finite,
    classify_line,
    line_form_problems,
    read_back,
)
from tests.trace.test_lazy_schema import _good_lines


@pytest.mark.parametrize(
    "raw",
    [
        b"1e400",
        b'{"x":1E+400}',
        b'{"x":NaN}',
        b'{"x":-Infinity}',
        b'"text 9e999 in a string"',
        b"1e40",
        b"e400",
        b"1e-400",
        b"1.5e+3000",
        b"NaN",
        b"Nan",
        b"infinity",
        b"0e000",
        b"\xff\xfe9E+123",
        b"",
    ],
)
def test_the_prefilter_agrees_with_the_regex(raw: bytes) -> None:
    assert _maybe_non_finite(raw) == (_MAYBE_NON_FINITE.search(raw) is not None)


def test_the_prefilter_agrees_on_random_lines() -> None:
    rng = random.Random(22)
    alphabet = b'0123456789eE+-.NaIfinty"{}:, x\xc3\xa9'
    for _ in range(20_000):
        raw = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert _maybe_non_finite(raw) == (_MAYBE_NON_FINITE.search(raw) is not None), raw


def test_a_non_finite_number_is_still_invalid() -> None:
    tool = next(orjson.loads(raw) for raw in _good_lines() if raw.startswith(b'{"kind":"tool_result"'))
    for number in (b"NaN", b"-Infinity", b"1E+400", b"9e999"):
        raw = orjson.dumps(tool).replace(b'"n":[1,2]', b'"n":[1,' + number + b"]")
        assert number in raw
        assert getattr(classify_line(3, 0, raw), "code", None) == "non-finite", number
    assert (
        type(classify_line(3, 0, orjson.dumps(tool).replace(b"[1,2]", b"[1,1e300]"))).__name__
        == "ToolResultEvent"
    )


def _variants() -> list[bytes]:
    """Good lines of every kind, and the same lines damaged in each way validate reports."""
    good = _good_lines()
    tool = next(orjson.loads(raw) for raw in good if raw.startswith(b'{"kind":"tool_result"'))
    call = next(orjson.loads(raw) for raw in good if raw.startswith(b'{"kind":"llm_call"'))
    with_tool = orjson.dumps(tool)
    damaged = (
        [
            raw[:-1] + b',"seq":1}'
            for raw in good  # a key twice, at the top
        ]
        + [
            raw + b"\r"
            for raw in good  # CRLF
        ]
        + [
            with_tool.replace(b'"n":[1,2]', b'"n":[1,' + number + b"]")
            for number in (b"NaN", b"-Infinity", b"1E+400")
        ]
        + [
            with_tool.replace(b'"n":[1,2]', b'"n":[1,2],"n":[3]'),  # a key twice, nested
            with_tool.replace(b'"n":[1,2]', b'"n":[1,NaN],"n":[3]') + b"\r",  # all three at once
            orjson.dumps({**call, "ts": "2300-01-01T00:00:00Z"}),  # out of time range
            orjson.dumps({**call, "ts": "1969-12-31T23:59:59Z"}) + b"\r",
            orjson.dumps(tool, option=orjson.OPT_INDENT_2).replace(b"\n", b""),  # not canonical, still fine
            with_tool.replace(
                b'"n":[1,2]', b'"n":[1,2,123456789012345678901234567890]'
            ),  # reads, does not re-encode
            b'{"kind":"tool_result","seq":"\xff"}',  # not UTF-8
        ]
    )
    return good + damaged


def test_one_parse_answers_what_the_separate_checks_answer(tmp_path: Path) -> None:
    # validate parses each line once with orjson (read_back) and skips the non-finite and
    # duplicate-key checks that parse proves needless; every verdict must be what they give.
    path = tmp_path / "t.fptrace.jsonl"
    path.write_bytes(b"".join(iter_demo_lines(30)))
    codes: set[str] = set()
    with TraceReader(path) as reader:
        for raw in _variants():
            record, form = reader.check_line(5, 100, raw)
            expected = classify_line(5, 100, raw)
            assert record == expected, raw
            slow = [] if isinstance(expected, InvalidRecord) else line_form_problems(5, 100, raw)
            assert form == slow, raw
            codes |= {problem.code for problem in form}
            codes |= {problem.code for problem in record_problems(5, record)}
    assert codes >= {"duplicate-key", "crlf", "non-finite", "out-of-range", "invalid"}


@pytest.mark.parametrize(
    ("raw", "verdict"),
    [
        (b'{"a":1,"b":[1.5,"x"]}', (True, True)),
        (b'{"a":1,"a":2}', (True, False)),
        (b'{"a":1}\r', (True, False)),
        (b'{"a": 1}', (True, False)),
        (b'{"a":NaN}', (False, False)),
        (b'{"a":1e400}', (False, False)),
        (b'{"a":-Infinity}', (False, False)),
        (b'{"a":"NaN 1e400"}', (True, True)),
        (b"{", (False, False)),
    ],
)
def test_read_back(raw: bytes, verdict: tuple[bool, bool]) -> None:
    assert read_back(raw) == verdict

"""The read side's fast paths answer exactly what the slower code they replace answered (issue 22)."""

from __future__ import annotations

import random

import orjson
import pytest

from fpdebug.trace.records import _MAYBE_NON_FINITE, _maybe_non_finite, classify_line
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

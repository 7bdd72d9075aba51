"""``Redactor.redact_value`` skips its walk when the value's JSON text is clean: never a secret let through.

The shortcut (issue 22) judges the whole value's ``json.dumps`` once instead of every field; these
tests compare it with the walk alone (the shortcut turned off) on values built to sit at its edges:
secrets in keys, in list items, under secret-named keys, as scalars under a non-ASCII key, next to
characters JSON escapes, and a configured secret spelled with a brace.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.trace.redact import Redactor

SECRET = "sk-ant-api03-" + "A1b2C3d4" * 4


def _walk_only(redactor: Redactor, value: Any) -> Any:
    """What the walk alone gives (the shortcut refused at every level)."""

    class Walker(Redactor):
        __slots__ = ()

        def _clean_value(self, value: Any) -> bool:
            return False

    walker = Walker.__new__(Walker)
    for name in Redactor.__slots__:
        object.__setattr__(walker, name, getattr(redactor, name))
    return walker.redact_value(value)


CASES: list[Any] = [
    {"run_id": "r1", "timeline": [{"badges": ["ok", f"leaked {SECRET}"]}]},
    {"maps": {SECRET: {"standing": "engaged"}}},
    {"password": "hunter2hunter2", "other": "plain"},
    {"API_KEY": 4821, "count": 3},
    {"ключ token": 1234, "é": "Bearer abcdefgh12345678"},
    {"note": 'quoted "Bearer abcdefgh12345678"'},
    {"note": "line\nAuthorization: Basic dXNlcjpwYXNzd29yZA=="},
    ["postgres://user:pa55word@host/db", ("tuple", "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl")],
    {"served": ["1.–", "2.3"], "agent": "démo", "cost": 0.25, "usd": None, "ok": True},
    {"nested": {"deeper": [{"json": '{"client_secret": "abcdefgh"}'}]}},
]


@pytest.mark.parametrize("value", CASES)
def test_the_shortcut_gives_what_the_walk_gives(value: Any) -> None:
    redactor = Redactor()
    assert redactor.redact_value(value) == _walk_only(redactor, value)


def test_a_secret_in_a_report_field_is_still_redacted() -> None:
    redactor = Redactor()
    report = {"runs": [{"run_id": "r", "error": f"provider said {SECRET}", "timeline": [{"route": "a"}]}]}
    out = redactor.redact_value(report)
    assert SECRET not in repr(out)
    assert out["runs"][0]["error"] == "provider said [redacted]"


def test_a_clean_value_is_returned_as_it_is() -> None:
    value = {"runs": [{"run_id": "r", "served": ["1.–"], "tokens": 3}]}
    assert Redactor().redact_value(value) is value


def test_a_configured_secret_with_a_brace_still_redacted() -> None:
    redactor = Redactor(secrets=['ab"}cdefgh'])
    value = {"k": 'ab"', "x": "cdefgh"}
    assert redactor.redact_value(value) == _walk_only(redactor, value)
    literal = Redactor(secrets=["value-with}brace"])
    assert literal.redact_value({"a": "x value-with}brace y"}) == {"a": "x [redacted] y"}


def test_configured_literals_and_patterns_still_apply() -> None:
    redactor = Redactor(secrets=["my-own-secret-value"], patterns=[r"cust-[0-9]{6}"])
    value = {"a": ["my-own-secret-value", "cust-123456"], "b": {"my-own-secret-value": 1}}
    out = redactor.redact_value(value)
    assert out == _walk_only(redactor, value)
    assert "my-own-secret-value" not in repr(out) and "cust-123456" not in repr(out)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)
)
_pieces = st.sampled_from(["password", "Token", "key", "sk-", "Bearer ", "é", '"', "\\", ":", " ", "{", "x"])
_texts = st.lists(st.one_of(_pieces, st.text(max_size=6)), max_size=5).map("".join)
_values = st.recursive(
    st.one_of(_scalars, _texts, st.just(SECRET)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_texts, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_the_shortcut_agrees_with_the_walk_on_any_value(value: Any) -> None:
    redactor = Redactor()
    assert redactor.redact_value(value) == _walk_only(redactor, value)

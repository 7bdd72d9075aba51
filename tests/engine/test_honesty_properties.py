"""Properties of the honesty layers: copied values are traced to their source; absent ones never are."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.engine.honesty import (
    PriorResult,
    SourcesInReach,
    answer_fold_reads,
    assess_answer,
    judge_inputs,
)
from fpdebug.engine.honesty.sources import parse_json, parse_json_path
from fpdebug.trace.schema import ArgumentRow, Message, ToolCallRecord

# The holder's strings use letters a–h; every other source uses q–z, so only the holder can hold them.
HOLDER_WORDS = st.text(alphabet="abcdefgh", min_size=2, max_size=6)
OTHER_WORDS = st.text(alphabet="qrstuvwxyz", min_size=2, max_size=6)
IDS = st.from_regex(r"[A-H]{2,4}-[0-9]{2,5}", fullmatch=True)
NUMBERS = st.integers(min_value=-(10**12), max_value=10**12) | st.floats(
    allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12
)
HOLDER_LEAVES = HOLDER_WORDS | IDS | NUMBERS


def json_of(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, min_size=1, max_size=3)
            | st.dictionaries(keys, children, min_size=1, max_size=3)
        ),
        max_leaves=8,
    ).filter(lambda data: isinstance(data, (dict, list)))


def scalars(data: Any) -> list[Any]:
    if isinstance(data, dict):
        return [leaf for child in data.values() for leaf in scalars(child)]
    if isinstance(data, list):
        return [leaf for child in data for leaf in scalars(child)]
    return [data]


def resolve(data: Any, path: str) -> Any:
    parts = parse_json_path(path)
    assert parts is not None
    for part in parts:
        data = data[part]
    return data


OTHER_TEXT = st.lists(OTHER_WORDS, max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    holder=json_of(HOLDER_LEAVES, HOLDER_WORDS),
    others=st.lists(json_of(OTHER_WORDS, OTHER_WORDS).map(json.dumps) | OTHER_TEXT, max_size=3),
    position=st.integers(min_value=0, max_value=3),
    user=OTHER_TEXT,
    data=st.data(),
)
def test_a_value_copied_from_a_tool_result_is_traced_to_that_result(
    holder: Any, others: list[str], position: int, user: str, data: st.DataObject
) -> None:
    value = data.draw(st.sampled_from(scalars(holder)))
    results = [PriorResult(f"other_{i}", "search", text, iteration=i + 1) for i, text in enumerate(others)]
    holding = PriorResult("holder", "lookup", json.dumps(holder), iteration=9)
    results.insert(min(position, len(results)), holding)
    args = {"outer": [{"copied": value}]}
    reach = SourcesInReach(tuple(results), (user,))
    verdict = judge_inputs([ToolCallRecord(id="c", name="act", args=args)], reach)
    (row,) = verdict.rows
    assert isinstance(row, ArgumentRow)
    assert (row.path, row.value) == ("$.outer[0].copied", value)
    assert (row.source, row.source_tool_call_id, row.source_tool_name, row.source_iteration) == (
        "tool-result",
        "holder",
        "lookup",
        9,
    )
    # The JSON path names a leaf of that result that holds the value (or the entry under a key that
    # does, when the value is only an object key there).
    path = row.source_path or ""
    held = resolve(parse_json(json.dumps(holder)), path)
    if isinstance(held, (dict, list)):
        assert parse_json_path(path)[-1] == value  # type: ignore[index]
    elif isinstance(value, str):
        assert held == value
    else:
        assert Decimal(str(held)) == Decimal(repr(value))


SOURCE_NUMBERS = st.integers(min_value=0, max_value=10**6 - 1)
SOURCE_TEXT = st.lists(OTHER_WORDS | SOURCE_NUMBERS.map(str), max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    results=st.lists(
        json_of(OTHER_WORDS | SOURCE_NUMBERS, OTHER_WORDS).map(json.dumps) | SOURCE_TEXT, max_size=4
    ),
    user=SOURCE_TEXT,
    absent=st.integers(min_value=10**9, max_value=10**12),
)
def test_a_number_absent_from_every_source_is_nowhere_and_unsupported(
    results: list[str], user: str, absent: int
) -> None:
    prior = tuple(PriorResult(f"c{i}", "t", text, iteration=1) for i, text in enumerate(results))
    calls = [ToolCallRecord(id="x", name="act", args={"n": absent, "s": str(absent), "f": absent / 100})]
    verdict = judge_inputs(calls, SourcesInReach(prior, (user,)))
    assert [r.source for r in verdict.rows] == ["nowhere", "nowhere", "nowhere"]  # type: ignore[union-attr]

    history = [Message(role="user", content=user)]
    history += [
        Message(role="tool", tool_call_id=p.tool_call_id, tool_name=p.tool_name, content=p.result)
        for p in prior
    ]
    reads = answer_fold_reads(
        tools=True, evidence_gate=False, answer_validation=False, inputs=False, tool_middleware=False
    )
    answer = f"It costs ${absent:,}.00, or {absent} in all."
    row = assess_answer(answer, {"history": history, "turnNumber": 1}, reads=reads)
    assert row is not None
    assert [(v.text, v.supported, v.supported_by) for v in row.values] == [
        (f"${absent:,}.00", False, []),
        (str(absent), False, []),
    ]

"""The inputs layer: where every tool argument came from (docs/honesty.md §12.1, §12.2)."""

from __future__ import annotations

import json

import pytest

from fpdebug.engine.honesty import (
    ArgumentRewrite,
    Grounds,
    InputsConfig,
    PriorResult,
    SourcesInReach,
    judge_inputs,
    rewrites_of,
)
from fpdebug.trace.schema import ArgumentRow, BasisRow, DeclaredSource, ExternalGround, ToolCallRecord

ORDER = json.dumps(
    {
        "order": {
            "id": "ORD-1234",
            "total": 1250.0,
            "placed": "2024-05-01",
            "items": [{"sku": "SKU12345", "qty": 2}],
        }
    }
)
LOOKUP = PriorResult("call_1", "lookup_order", ORDER, iteration=1)
USER = "Please refund order ORD-1234, I paid $1,250.00 on May 1st, 2024. My email is bob@example.com"

ARMED = InputsConfig(
    argument_sources=True,
    grounds=Grounds(
        external_grounds=(
            ExternalGround(label="account tier", value="gold"),
            ExternalGround(label="limit", value=5000),
        ),
        declared_sources=(
            DeclaredSource(name="catalog", content={"skus": [{"code": "SKU-777", "price": 19.99}]}),
        ),
    ),
)


def call(args: dict[str, object], *, name: str = "refund", id: str = "call_2") -> ToolCallRecord:
    return ToolCallRecord(id=id, name=name, args=args)


def rows_of(
    args: dict[str, object],
    *,
    results: tuple[PriorResult, ...] = (LOOKUP,),
    user: str = USER,
    config: InputsConfig = ARMED,
    **kw: object,
) -> list[ArgumentRow | BasisRow]:
    reach = SourcesInReach(results, (user,))
    verdict = judge_inputs([call(args)], reach, config=config, **kw)  # type: ignore[arg-type]
    return list(verdict.rows)


def only(rows: list[ArgumentRow | BasisRow], path: str) -> ArgumentRow:
    (row,) = [r for r in rows if isinstance(r, ArgumentRow) and r.path == path]
    return row


# ----------------------------------------------------------------------------------------------
# Provenance, in order of preference


def test_value_from_a_previous_tool_result_names_call_tool_iteration_and_json_path() -> None:
    rows = rows_of({"lines": [{"sku": "SKU12345"}]})
    row = only(rows, "$.lines[0].sku")
    assert row == ArgumentRow(
        tool_call_id="call_2",
        tool_name="refund",
        path="$.lines[0].sku",
        value="SKU12345",
        source="tool-result",
        source_tool_call_id="call_1",
        source_tool_name="lookup_order",
        source_iteration=1,
        source_path="$.order.items[0].sku",
    )


def test_a_number_is_traced_by_value_in_json_and_in_text() -> None:
    assert only(rows_of({"amount": 1250}), "$.amount").source_path == "$.order.total"
    text_result = PriorResult("call_9", "balance", "Your balance is $1,250.00 today.", iteration=3)
    row = only(rows_of({"amount": 1250.0}, results=(text_result,)), "$.amount")
    assert (row.source, row.source_tool_call_id, row.source_path, row.source_text) == (
        "tool-result",
        "call_9",
        None,
        "$1,250.00",
    )


def test_newest_tool_result_wins() -> None:
    older = PriorResult("call_0", "search", '{"hits": ["ORD-1234"]}', iteration=1)
    newer = PriorResult("call_5", "lookup_order", ORDER, iteration=2)
    row = only(rows_of({"order_id": "ORD-1234"}, results=(older, newer)), "$.order_id")
    assert (row.source_tool_call_id, row.source_iteration, row.source_path) == ("call_5", 2, "$.order.id")


def test_a_tool_result_is_preferred_to_the_user_message() -> None:
    # ORD-1234 is in both; the tool result comes first in the order of preference.
    assert only(rows_of({"order_id": "ORD-1234"}), "$.order_id").source == "tool-result"


def test_value_from_the_user_message() -> None:
    row = only(rows_of({"email": "BOB@example.com"}), "$.email")
    assert (row.source, row.source_text, row.source_tool_call_id) == ("user", "bob@example.com", None)


def test_a_date_written_differently_is_traced_to_the_user() -> None:
    row = only(rows_of({"when": "2024-05-01"}, results=()), "$.when")
    assert (row.source, row.source_text) == ("user", "May 1st, 2024")


def test_external_ground_with_its_label() -> None:
    tier = only(rows_of({"tier": "gold"}), "$.tier")
    assert (tier.source, tier.label) == ("external", "account tier")
    limit = only(rows_of({"limit": 5000}), "$.limit")
    assert (limit.source, limit.label, limit.source_path) == ("external", "limit", None)


def test_declared_source_with_its_name_and_path() -> None:
    row = only(rows_of({"sku": "SKU-777", "price": 19.99}), "$.sku")
    assert (row.source, row.label, row.source_path) == ("declared", "catalog", "$.skus[0].code")
    assert only(rows_of({"sku": "SKU-777", "price": 19.99}), "$.price").source_path == "$.skus[0].price"


def test_grounds_are_not_searched_unless_argument_sources_are_armed() -> None:
    unarmed = InputsConfig(grounds=ARMED.grounds)
    assert only(rows_of({"tier": "gold"}, config=unarmed), "$.tier").source == "nowhere"


@pytest.mark.parametrize("value", ["ORD-9999", 1251, "silver", "2024-05-02", "ORD-12", ""])
def test_a_value_no_source_holds_comes_from_nowhere(value: object) -> None:
    row = only(rows_of({"x": value}), "$.x")
    assert row.source == "nowhere"
    assert row.source_tool_call_id is None and row.source_path is None and row.label is None
    assert row.value == value


def test_bools_and_nulls_are_model_choices_unless_cited() -> None:
    result = PriorResult("call_1", "check", '{"in_stock": true, "note": null}', iteration=1)
    rows = rows_of({"confirm": True, "note": None}, results=(result,))
    assert only(rows, "$.confirm").source == "nowhere"
    assert only(rows, "$.note").source == "nowhere"
    basis = {"arg": "$.confirm", "source": "tool:call_1", "path": "$.in_stock"}
    cited = rows_of({"confirm": True, "_from": basis}, results=(result,))
    assert (only(cited, "$.confirm").source, only(cited, "$.confirm").source_path) == (
        "tool-result",
        "$.in_stock",
    )


def test_rows_follow_the_argument_order_depth_first_and_skip_empty_containers() -> None:
    rows = rows_of({"b": 1, "a": {"z": "x", "y": [3, {"k": "v"}]}, "empty": {}, "none": []})
    assert [r.path for r in rows] == ["$.b", "$.a.z", "$.a.y[0]", "$.a.y[1].k"]


def test_odd_keys_get_bracketed_paths() -> None:
    (row,) = rows_of({"order id": "ORD-1234"})
    assert row.path == '$["order id"]'


# ----------------------------------------------------------------------------------------------
# The _from basis: Declare → Verify


def test_a_verified_citation_wins_over_the_search_order() -> None:
    # The tool result also holds ORD-1234, but the model cited the user and the user holds it.
    rows = rows_of({"order_id": "ORD-1234", "_from": [{"arg": "$.order_id", "source": "user"}]})
    assert rows[0] == BasisRow(
        tool_call_id="call_2", tool_name="refund", from_entries=["$.order_id <- user"], dropped_from=0
    )
    assert only(rows, "$.order_id").source == "user"
    assert only(rows, "$.order_id").refused_reference is None


def test_a_refused_reference_is_filtered_out_and_recorded() -> None:
    basis = [{"arg": "$.amount", "source": "tool:call_1", "path": "$.order.id"}]
    rows = rows_of({"amount": 1250, "_from": basis})
    basis, row = rows
    assert basis == BasisRow(tool_call_id="call_2", tool_name="refund", from_entries=[], dropped_from=1)
    assert row.refused_reference == "tool:call_1 at $.order.id"
    # The value is then searched for as if uncited, and the search finds the right field.
    assert (row.source, row.source_path) == ("tool-result", "$.order.total")


def test_a_citation_of_a_source_never_seen_is_refused() -> None:
    rows = rows_of({"amount": 99, "_from": [{"arg": "$.amount", "source": "tool:call_42"}]})
    assert only(rows, "$.amount").refused_reference == "tool:call_42"
    assert only(rows, "$.amount").source == "nowhere"


def test_a_quote_the_source_does_not_contain_refuses_the_entry() -> None:
    good = {"arg": "$.when", "source": "user", "quote": "May 1st, 2024"}
    bad = {"arg": "$.when", "source": "user", "quote": "June 3rd"}
    rows = rows_of({"when": "2024-05-01", "_from": [bad, good]})
    assert rows[0] == BasisRow(
        tool_call_id="call_2",
        tool_name="refund",
        from_entries=['$.when <- user "May 1st, 2024"'],
        dropped_from=1,
    )
    assert only(rows, "$.when").refused_reference == "user"
    assert only(rows, "$.when").source == "user"


def test_an_entry_is_kept_only_if_its_source_holds_every_value_it_grounds() -> None:
    # A whole-call shorthand: the tool result holds the order id but not the note.
    rows = rows_of({"order_id": "ORD-1234", "note": "asap", "_from": "tool:call_1"})
    assert rows[0] == BasisRow(tool_call_id="call_2", tool_name="refund", from_entries=[], dropped_from=1)
    assert only(rows, "$.order_id").refused_reference == "tool:call_1"
    assert only(rows, "$.note").refused_reference == "tool:call_1"
    assert only(rows, "$.order_id").source == "tool-result"  # found again by the search
    assert only(rows, "$.note").source == "nowhere"


def test_an_entry_grounds_everything_under_its_arg_path() -> None:
    rows = rows_of(
        {
            "line": {"sku": "SKU12345", "qty": 2},
            "_from": [{"arg": "$.line", "source": "tool:call_1", "path": "$.order.items[0]"}],
        }
    )
    assert rows[0].from_entries == ["$.line <- tool:call_1 at $.order.items[0]"]  # type: ignore[union-attr]
    assert only(rows, "$.line.sku").source_path == "$.order.items[0].sku"
    assert only(rows, "$.line.qty").source_path == "$.order.items[0].qty"


@pytest.mark.parametrize(
    "entry",
    [
        7,
        {"arg": "$.amount"},  # no source
        {"arg": "$.amount", "source": "memory:x"},  # unknown source kind
        {"arg": "$.amount", "source": "tool:"},  # empty reference
        {"arg": "$.nope", "source": "user"},  # names no argument
        {"arg": "amount", "source": "user"},  # not a JSON path
        {"arg": "$.amount", "source": "user", "path": "total"},  # bad source path
        {"arg": "$.amount", "source": "user", "why": "because"},  # unknown key
    ],
)
def test_malformed_entries_are_dropped_and_counted_without_naming_a_row(entry: object) -> None:
    rows = rows_of({"amount": 1250, "_from": [entry]})
    assert rows[0] == BasisRow(tool_call_id="call_2", tool_name="refund", from_entries=[], dropped_from=1)
    assert only(rows, "$.amount").refused_reference is None


def test_the_basis_is_stripped_from_what_route_dispatches() -> None:
    args = {"amount": 1250, "_from": [{"arg": "$.amount", "source": "tool:call_1"}]}
    verdict = judge_inputs([call(args)], SourcesInReach((LOOKUP,), (USER,)), config=ARMED)
    assert verdict.dispatch == {"call_2": {"amount": 1250}}
    assert [r.path for r in verdict.rows if isinstance(r, ArgumentRow)] == ["$.amount"]


def test_without_argument_sources_from_is_an_ordinary_argument() -> None:
    args = {"amount": 1250, "_from": "tool:call_1"}
    verdict = judge_inputs([call(args)], SourcesInReach((LOOKUP,), (USER,)))
    assert verdict.dispatch == {"call_2": args}
    assert [r.path for r in verdict.rows] == ["$.amount", "$._from"]  # type: ignore[union-attr]
    assert not any(isinstance(r, BasisRow) for r in verdict.rows)


def test_without_basis_rows_the_dropped_count_rides_the_first_argument_row() -> None:
    config = InputsConfig(argument_sources=True, basis_rows=False)
    basis = [5, {"arg": "$.amount", "source": "user"}]
    rows = rows_of({"amount": 1250, "email": "bob@example.com", "_from": basis}, config=config)
    assert not any(isinstance(r, BasisRow) for r in rows)
    assert [r.dropped_from for r in rows] == [1, None]  # type: ignore[union-attr]


def test_a_call_without_a_basis_files_no_basis_row() -> None:
    assert not any(isinstance(r, BasisRow) for r in rows_of({"amount": 1250}))


# ----------------------------------------------------------------------------------------------
# Hidden arguments


HIDING = InputsConfig(argument_sources=True, hidden_argument_tools=frozenset({"set_password"}))


def test_a_hiding_tool_never_shows_its_values() -> None:
    verdict = judge_inputs(
        [call({"user": "bob@example.com", "password": "hunter2"}, name="set_password")],
        SourcesInReach((), (USER + " password hunter2",)),
        config=HIDING,
        tools_in_reach=["set_password"],
    )
    for row in verdict.rows:
        assert isinstance(row, ArgumentRow)
        assert (row.hidden, row.value, row.source_text) == (True, None, None)
        assert row.source == "user"  # where it came from is still said
    assert "hunter2" not in json.dumps([r.model_dump(mode="json") for r in verdict.rows])


def test_while_a_hiding_tool_is_in_reach_no_row_shows_a_model_written_value() -> None:
    basis = [{"arg": "$.order_id", "source": "user", "quote": "ORD-1234"}]
    rows = rows_of(
        {"order_id": "ORD-1234", "_from": basis}, config=HIDING, tools_in_reach=["refund", "set_password"]
    )
    basis, row = rows
    assert basis.from_entries == ["$.order_id <- user"]  # type: ignore[union-attr]
    assert (row.hidden, row.value, row.source) == (True, None, "user")  # type: ignore[union-attr]


def test_without_a_hiding_tool_in_reach_values_are_shown() -> None:
    rows = rows_of({"order_id": "ORD-1234"}, config=HIDING, tools_in_reach=["refund"])
    assert (only(rows, "$.order_id").hidden, only(rows, "$.order_id").value) == (False, "ORD-1234")


# ----------------------------------------------------------------------------------------------
# Middleware rewrites, tools off


def test_rewrites_of_lists_changed_removed_and_added_paths() -> None:
    requested = {"amount": 1250, "currency": "usd", "note": "asap", "flag": 1}
    ran = {"amount": 1000, "currency": "usd", "flag": True, "region": "eu"}
    assert rewrites_of("call_2", requested, ran) == [
        ArgumentRewrite("call_2", "$.amount", 1250, 1000),
        ArgumentRewrite("call_2", "$.note", "asap", None, removed=True),
        ArgumentRewrite("call_2", "$.flag", 1, True),  # 1 == True in Python, but not the same value
        ArgumentRewrite("call_2", "$.region", None, "eu"),
    ]
    assert rewrites_of("call_2", requested, requested) == []


def test_a_rewritten_argument_says_the_call_ran_with_the_rewrite() -> None:
    rewrites = [
        ArgumentRewrite("call_2", "$.amount", 1250, 1000),
        ArgumentRewrite("call_2", "$.note", "x", None, removed=True),
    ]
    rows = rows_of({"amount": 1250, "note": "x"}, rewrites=rewrites)
    amount, note = only(rows, "$.amount"), only(rows, "$.note")
    assert (amount.value, amount.rewritten, amount.rewritten_to, amount.source) == (
        1250,
        True,
        1000,
        "tool-result",
    )
    assert (note.rewritten, note.rewritten_to) == (True, None)


def test_a_hidden_rewrite_shows_that_it_happened_but_not_the_value() -> None:
    rows = rows_of(
        {"order_id": "ORD-1234"},
        config=HIDING,
        tools_in_reach=["set_password"],
        rewrites=[ArgumentRewrite("call_2", "$.order_id", "ORD-1234", "ORD-1")],
    )
    first = rows[0]
    assert isinstance(first, ArgumentRow)
    assert (first.rewritten, first.rewritten_to, first.value) == (True, None, None)


def test_when_tools_are_off_the_layer_asks_about_no_call() -> None:
    verdict = judge_inputs(
        [call({"amount": 1250})], SourcesInReach((LOOKUP,), (USER,)), config=ARMED, tools_off=True
    )
    assert verdict.rows == ()
    assert verdict.dispatch == {}


def test_rows_of_several_calls_keep_call_order_with_each_basis_first() -> None:
    calls = [
        call({"a": "ORD-1234", "_from": "user"}, id="c1"),
        call({"b": 2}, id="c2"),
        call({"c": 3, "_from": []}, id="c3"),
    ]
    verdict = judge_inputs(calls, SourcesInReach((LOOKUP,), (USER,)), config=ARMED)
    assert [(r.row, r.tool_call_id) for r in verdict.rows] == [
        ("basis", "c1"),
        ("argument", "c1"),
        ("argument", "c2"),
        ("basis", "c3"),
        ("argument", "c3"),
    ]

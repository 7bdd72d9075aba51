"""Value extraction and normalisation for the honesty layers (fpdebug.engine.honesty.values)."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.engine.honesty.values import extract_values, held_keys, text_contains


def found(text: str) -> list[tuple[str, str]]:
    return [(v.kind, v.text) for v in extract_values(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # numbers
        ("I have 3 apples and 1,250 pears", [("number", "3"), ("number", "1,250")]),
        ("pi is 3.14159", [("number", "3.14159")]),
        ("it fell to -3 and then −7", [("number", "-3"), ("number", "−7")]),
        ("2-3 days", [("number", "2"), ("number", "3")]),
        ("a 5 million grant", [("number", "5 million")]),
        # percentages
        ("a 12.5% discount, or 40 percent", [("number", "12.5%"), ("number", "40 percent")]),
        ("down -2%", [("number", "-2%")]),
        # amounts
        ("Refund $1,250.00 now", [("amount", "$1,250.00")]),
        ("costs USD 1250 or 1250 USD", [("amount", "USD 1250"), ("amount", "1250 USD")]),
        ("paid 1.250,00 € and €3k", [("amount", "1.250,00 €"), ("amount", "€3k")]),
        ("-$5 and $-5", [("amount", "-$5"), ("amount", "$-5")]),
        ("five is 5 dollars", [("amount", "5 dollars")]),
        ("CA$20 vs $20", [("amount", "CA$20"), ("amount", "$20")]),
        # dates
        ("on 2024-05-01.", [("date", "2024-05-01")]),
        ("on May 1st, 2024 or 1 May 2024", [("date", "May 1st, 2024"), ("date", "1 May 2024")]),
        ("by 05/01/2024 or 01.05.2024", [("date", "05/01/2024"), ("date", "01.05.2024")]),
        ("at 2024-05-01T10:30:00Z", [("date", "2024-05-01T10:30:00Z")]),
        ("in March 2024, on Dec 25", [("date", "March 2024"), ("date", "Dec 25")]),
        # times are temporal values, never numbers
        ("at 10:30 or 3pm.", [("date", "10:30"), ("date", "3pm")]),
        ("at 10:30 a.m. today", [("date", "10:30 a.m.")]),
        # ids, and no numbers inside them
        ("order ORD-1234 and INV_88", [("id", "ORD-1234"), ("id", "INV_88")]),
        ("ticket #1234 and SKU12345", [("id", "#1234"), ("id", "SKU12345")]),
        ("key 123e4567-e89b-12d3-a456-426614174000", [("id", "123e4567-e89b-12d3-a456-426614174000")]),
        ("mail bob@example.com", [("id", "bob@example.com")]),
        # versions are ids, not numbers or dates
        ("upgrade to 1.2.3 or v2", [("id", "1.2.3"), ("id", "v2")]),
        ("host 192.168.0.1", [("id", "192.168.0.1")]),
        # quoted strings; a quote holding exactly one value is that value
        ('he wrote "ship 3 boxes" then "ORD-77"', [("quoted", "ship 3 boxes"), ("id", "ORD-77")]),
        ("it's the 'gold' tier", [("quoted", "gold")]),
        ("“curly quotes” and `code`", [("quoted", "curly quotes"), ("quoted", "code")]),
    ],
)
def test_extraction_table(text: str, expected: list[tuple[str, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "5kg of flour, the 3rd time, 10x faster, H2O",  # numbers glued to letters are words
        "a ratio of 3:2 and half is 1/2",  # ratios and fractions
        "you may go, we march on",  # lower-case month names are words
        "25:00",  # impossible times are not times, nor two numbers
        "#general and e-mail",  # a tag and a hyphenated word hold no digit
    ],
)
def test_not_values(text: str) -> None:
    assert found(text) == []


def test_impossible_date_falls_back_to_its_numbers() -> None:
    assert found("Feb 30, 2024") == [("number", "30"), ("number", "2024")]


def test_numbers_inside_ids_are_not_numbers() -> None:
    values = extract_values("ORD-1234 INV_88 SKU12345 v1.2.3")
    assert [v.kind for v in values] == ["id", "id", "id", "id"]
    assert not any(k.startswith("n:") for v in values for k in v.keys)


def test_ambiguous_numeric_date_means_both_readings() -> None:
    (value,) = extract_values("05/01/2024")
    assert value.keys == {"d:2024-05-01", "d:2024-01-05"}
    (day_first,) = extract_values("13/01/2024")
    assert day_first.keys == {"d:2024-01-13"}


def held(stated: str, source: str) -> bool:
    (value,) = extract_values(stated)
    return bool(value.keys & held_keys(source))


@pytest.mark.parametrize(
    ("stated", "source"),
    [
        ("$1,250.00", "1250"),
        ("$1,250.00", "total 1250.0"),
        ("1250", "$1,250.00"),
        ("1250.0", "USD 1,250"),
        ("USD 1250", "$1,250.00"),
        ("€1.250,00", "1250 EUR"),
        ("2024-05-01", "placed on May 1st, 2024"),
        ("May 1, 2024", "2024-05-01T10:30:00Z"),
        ("01.05.2024", "2024-05-01"),
        ("05/01/2024", "2024-05-01"),
        ("May 2024", "2024-05-17"),
        ("May 17", "2024-05-17"),
        ("10:30", "2024-05-01T10:30:00Z"),
        ("3pm", "at 15:00"),
        ("12.5%", "rate 0.125"),
        ("12.5%", "discount_pct 12.5"),
        ("ord-1234", "Order ORD-1234"),
        ("#1234", "1234"),
        ("v1.2.3", "release 1.2.3"),
        ("-5", "balance -5.00"),
        ("5 million", "5000000"),
    ],
)
def test_same_value_written_differently_matches(stated: str, source: str) -> None:
    assert held(stated, source)


@pytest.mark.parametrize(
    ("stated", "source"),
    [
        ("$1,250", "€1,250"),  # another currency
        ("$5", "-5"),  # another sign
        ("1234", "ORD-1234"),  # the digits of an id are not a number
        ("2024-05-01", "2024-05-02"),
        ("10:30", "10:31"),
        ("ORD-12", "ORD-1234"),
        ("1.2.3", "1.2.4"),
    ],
)
def test_different_values_do_not_match(stated: str, source: str) -> None:
    assert not held(stated, source)


def test_text_contains_respects_token_boundaries_and_ignores_case_and_spacing() -> None:
    assert text_contains("Order ORD-1234 shipped", "ord-1234") is not None
    assert text_contains("Order ORD-1234 shipped", "ORD-12") is None
    assert text_contains("Order ORD-1234 shipped", "1234") is None
    assert text_contains("pi is 3.5", "3") is None
    m = text_contains("ship to  New\nYork today", "new york")
    assert m is not None and m.group(0) == "New\nYork"
    assert text_contains("anything", "   ") is None


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), max_size=80)
    | st.lists(
        st.sampled_from(
            [
                "$1,250.00",
                "ORD-12",
                '"',
                "'",
                " ",
                "May",
                "1st",
                "2024",
                "-",
                ":",
                "10",
                "%",
                "USD",
                ".",
                ",",
                "v2",
                "#",
                "05/01",
                "x",
            ]
        ),
        max_size=25,
    ).map("".join)
)
def test_values_never_overlap_and_spans_are_exact(text: str) -> None:
    values = extract_values(text)
    assert [v.start for v in values] == sorted(v.start for v in values)
    for value in values:
        assert text[value.start : value.end] == value.text
        assert value.keys
    for a, b in itertools.pairwise(values):
        assert a.end <= b.start


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(10**9), max_value=10**9), st.integers(min_value=0, max_value=99))
def test_amount_formats_match_the_plain_number(units: int, cents: int) -> None:
    value = Decimal(units) + (Decimal(cents) / 100 if units >= 0 else -Decimal(cents) / 100)
    written = f"${abs(value):,.2f}"
    if value < 0:
        written = "-" + written
    (amount,) = extract_values(f"refund {written} today")
    assert amount.kind == "amount"
    assert amount.keys & held_keys(f"total {value}")
    assert amount.keys & held_keys(f"total {value:.2f} USD")
    assert not amount.keys & held_keys(f"total {value + 1}")

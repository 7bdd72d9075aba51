"""Claim: known / unknown / not-applicable, and the only ways to reach a value (docs/backtracking.md §9.11)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from fpdebug.backtrack.claim import (
    Claim,
    Known,
    NotApplicable,
    Unknown,
    describe,
    is_known,
    known,
    not_applicable,
    unknown,
    value_or,
)


def test_describe_renders_each_kind_in_the_reference_shape() -> None:
    assert describe(known(3, "pass event seq 12")) == "3 (pass event seq 12)"
    assert describe(unknown("no cursor was recorded")) == "unknown — no cursor was recorded"
    no_map = not_applicable("the agent has no skill map")
    assert describe(no_map) == "not applicable — the agent has no skill map"


def test_is_known_is_true_only_for_a_known_claim() -> None:
    assert is_known(known(0, "measured"))
    assert is_known(known(None, "the cursor was recorded as empty"))
    assert not is_known(unknown("not measured"))
    assert not is_known(not_applicable("no map"))


def test_only_a_known_claim_carries_a_value() -> None:
    assert known("billing", "cursor_move seq 4").value == "billing"
    for claim in (unknown("not measured", evidence="no usage in the reply"), not_applicable("no map")):
        with pytest.raises(AttributeError):
            claim.value  # type: ignore[union-attr]  # noqa: B018 - the access itself is the test


def test_value_or_returns_the_value_or_the_required_fallback() -> None:
    assert value_or(known(0, "counted"), 7) == 0  # a falsy known value is still the value
    assert value_or(unknown("not measured"), 7) == 7
    assert value_or(not_applicable("no leases"), -1) == -1
    with pytest.raises(TypeError):
        value_or(unknown("not measured"))  # type: ignore[call-arg]


def test_unknown_keeps_optional_evidence() -> None:
    claim = unknown("the provider reported no usage", evidence="llm_call seq 9")
    assert claim.evidence == "llm_call seq 9"
    assert unknown("never asked").evidence is None


def test_claims_round_trip_through_json_on_their_kind() -> None:
    adapter: TypeAdapter[Claim[int]] = TypeAdapter(Claim[int])
    for claim in (
        known(5, "turn_end seq 20"),
        unknown("cut short", evidence="stopped_early"),
        not_applicable("single turn"),
    ):
        again = adapter.validate_json(adapter.dump_json(claim, warnings=False))
        assert type(again).__name__.startswith(type(claim).__name__)
        assert describe(again) == describe(claim)


def test_a_claim_field_validates_the_value_type() -> None:
    class Row(BaseModel):
        tokens: Claim[int]

    row = Row.model_validate({"tokens": {"kind": "known", "value": "12", "evidence": "usage"}})
    assert is_known(row.tokens) and row.tokens.value == 12
    with pytest.raises(ValidationError):
        Row.model_validate({"tokens": {"kind": "known", "value": "many", "evidence": "usage"}})
    with pytest.raises(ValidationError):
        Row.model_validate({"tokens": {"kind": "maybe", "evidence": "x"}})


def test_claims_are_frozen() -> None:
    claim = known(1, "e")
    with pytest.raises(ValidationError):
        claim.evidence = "other"  # type: ignore[misc]
    assert isinstance(claim, Known)
    assert isinstance(unknown("r"), Unknown)
    assert isinstance(not_applicable("e"), NotApplicable)

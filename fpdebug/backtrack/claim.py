"""``Claim``: a value fpdebug may or may not know, with the evidence either way (docs/backtracking.md §9.11)."""

from __future__ import annotations

from typing import Annotated, Generic, Literal, TypeGuard, TypeVar, Union, assert_never

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

__all__ = [
    "Claim",
    "Known",
    "NotApplicable",
    "Unknown",
    "describe",
    "is_known",
    "known",
    "not_applicable",
    "unknown",
    "value_or",
]

T = TypeVar("T")


class Known(BaseModel, Generic[T]):
    """The value is known, and ``evidence`` says how."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["known"] = "known"
    value: T
    """The value. Reach it through :func:`is_known` (or :func:`value_or`), never by guessing."""
    evidence: str
    """Where the value comes from (a trace record, a measurement)."""


class Unknown(BaseModel):
    """The value exists in principle but fpdebug does not know it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["unknown"] = "unknown"
    reason: str
    """Why it is unknown (``"no cursor was recorded"``, ``"not measured"``)."""
    evidence: str | None = None
    """What was looked at, when there is something to cite."""


class NotApplicable(BaseModel):
    """The question does not apply (a cursor of an agent without a skill map)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["not-applicable"] = "not-applicable"
    evidence: str
    """Why the question does not apply."""


# A generic alias that pydantic can validate (``TypeAdapter(Claim[int])``) and type checkers can
# narrow; Python 3.11 has no ``type`` statement, so it is spelled with TypeAliasType.
Claim = TypeAliasType(
    "Claim",
    Annotated[Union[Known[T], Unknown, NotApplicable], Field(discriminator="kind")],  # noqa: UP007
    type_params=(T,),
)
"""One of :class:`Known`, :class:`Unknown` or :class:`NotApplicable`; ``Claim[int]`` narrows the value."""


def known(value: T, evidence: str) -> Known[T]:
    """A known value and its evidence.

    Args:
        value: The value.
        evidence: Where it comes from.

    Returns:
        The claim.
    """
    return Known(value=value, evidence=evidence)


def unknown(reason: str, *, evidence: str | None = None) -> Unknown:
    """An unknown value.

    Args:
        reason: Why it is unknown.
        evidence: What was looked at, when there is something to cite.

    Returns:
        The claim.
    """
    return Unknown(reason=reason, evidence=evidence)


def not_applicable(evidence: str) -> NotApplicable:
    """A question that does not apply.

    Args:
        evidence: Why it does not apply.

    Returns:
        The claim.
    """
    return NotApplicable(evidence=evidence)


def is_known(claim: Claim[T]) -> TypeGuard[Known[T]]:
    """Whether the claim holds a value; the only sanctioned way to reach ``claim.value``.

    Args:
        claim: Any claim.

    Returns:
        True for a :class:`Known` claim.
    """
    return isinstance(claim, Known)


def value_or(claim: Claim[T], fallback: T, /) -> T:
    """The value of a known claim, else ``fallback``.

    The fallback is required on purpose: a caller must decide what an unknown shows as.

    Args:
        claim: Any claim.
        fallback: What to use when the claim is unknown or not applicable.

    Returns:
        The value or the fallback.
    """
    return claim.value if is_known(claim) else fallback


def describe(claim: Claim[T]) -> str:
    """One line for display.

    Args:
        claim: Any claim.

    Returns:
        ``"<value> (<evidence>)"``, ``"unknown — <reason>"`` or ``"not applicable — <evidence>"``.
    """
    match claim:
        case Known():
            return f"{claim.value} ({claim.evidence})"
        case Unknown():
            return f"unknown — {claim.reason}"
        case NotApplicable():
            return f"not applicable — {claim.evidence}"
        case _:
            assert_never(claim)

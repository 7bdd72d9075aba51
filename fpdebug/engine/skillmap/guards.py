"""Guards: conditions over a tool result's JSON fields that an edge must pass (refused when unsatisfiable)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeGuard, TypeVar, get_args

from fpdebug.engine.types import require_id
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import GuardDecl

GuardOp: TypeAlias = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in"]
"""A guard comparison."""

_GUARD_OPS = frozenset(get_args(GuardOp))
_BOUND_OPS = frozenset({"gt", "gte", "lt", "lte"})
_MISSING = object()


def _same(a: object, b: object) -> bool:
    # JSON equality: true is not 1.
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


def _is_number(x: object) -> TypeGuard[int | float]:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _orderable(a: object, b: object) -> bool:
    return (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))


_Ordered = TypeVar("_Ordered", float, str)
"""A value a bound compares: numbers with numbers, strings with strings."""


def _compare(op: str, a: _Ordered, b: _Ordered) -> bool:
    match op:
        case "gt":
            return a > b
        case "gte":
            return a >= b
        case "lt":
            return a < b
    return a <= b


def _bound_holds(op: str, value: object, bound: object) -> bool:
    """``value op bound`` for a bound op; false when the two cannot be ordered."""
    if _is_number(value) and _is_number(bound):
        return _compare(op, value, bound)
    if isinstance(value, str) and isinstance(bound, str):
        return _compare(op, value, bound)
    return False


def _field_of(result: object, path: str) -> object:
    data = result
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except Exception:
            return _MISSING
    for part in path.split("."):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


@dataclass(frozen=True, slots=True)
class Guard:
    """One condition over a result's JSON field; an edge's guards are ANDed."""

    field: str
    """A dotted path into the result (a JSON string result is parsed first)."""
    op: GuardOp
    """The comparison."""
    value: object = None
    """The value compared against (a list for ``in`` / ``not_in``)."""

    def __post_init__(self) -> None:
        require_id(self.field, "guard field")
        if self.op not in _GUARD_OPS:
            raise DefinitionError(
                f"guard on {self.field!r}: {self.op!r} is not one of {', '.join(sorted(_GUARD_OPS))}"
            )
        if self.op in ("in", "not_in"):
            if not isinstance(self.value, list | tuple | set | frozenset):
                raise DefinitionError(
                    f"guard {self.field} {self.op}: needs a list of values, got {self.value!r}"
                )
            object.__setattr__(self, "value", tuple(self.value))
            if self.op == "in" and not self.value:
                raise DefinitionError(f"guard {self.field} in []: can never pass")
        if self.op in _BOUND_OPS and (
            not _orderable(self.value, self.value)
            or (isinstance(self.value, float) and not math.isfinite(self.value))
        ):
            raise DefinitionError(
                f"guard {self.field} {self.op}: needs a finite number or a string, got {self.value!r}"
            )

    def holds_for(self, value: object) -> bool:
        """Whether a field value passes this condition."""
        if value is _MISSING:
            return False
        match self.op:
            case "eq":
                return _same(value, self.value)
            case "ne":
                return not _same(value, self.value)
            case "in":
                return any(_same(value, x) for x in self.members)
            case "not_in":
                return not any(_same(value, x) for x in self.members)
        return _bound_holds(self.op, value, self.value)

    @property
    def members(self) -> tuple[object, ...]:
        """The values of an ``in`` / ``not_in`` guard (``__post_init__`` made them a tuple); else empty."""
        return self.value if isinstance(self.value, tuple) else ()

    def passes(self, result: object) -> bool:
        """Whether the result's field passes this condition (a missing field never does)."""
        return self.holds_for(_field_of(result, self.field))

    def describe(self) -> str:
        """``field op value``."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return f"{self.field} {self.op} {json.dumps(value, default=str)}"

    def declaration(self) -> GuardDecl:
        """The trace's :class:`~fpdebug.trace.schema.GuardDecl`."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return GuardDecl(field=self.field, op=self.op, value=value)


def guards_of(
    guard: Mapping[str, Mapping[str, object]] | Sequence[Guard] | None, where: str
) -> tuple[Guard, ...]:
    if guard is None:
        return ()
    if isinstance(guard, Mapping):
        out: list[Guard] = []
        for field_path, conditions in guard.items():
            if not isinstance(conditions, Mapping) or not conditions:
                raise DefinitionError(f"{where}: guard {field_path!r} needs {{op: value}} conditions")
            # An op outside GuardOp is refused by Guard.__post_init__ with the field and the op named.
            out.extend(Guard(field_path, op, value) for op, value in conditions.items())  # type: ignore[arg-type]
        guards = tuple(out)
    else:
        guards = tuple(guard)
        if not all(isinstance(g, Guard) for g in guards):
            raise DefinitionError(f"{where}: guard must be a mapping or a list of Guard")
    if not guards:
        raise DefinitionError(f"{where}: an empty guard")
    by_field: dict[str, list[Guard]] = {}
    for g in guards:
        by_field.setdefault(g.field, []).append(g)
    for field_path, same_field in by_field.items():
        if not _satisfiable(same_field):
            raise DefinitionError(
                f"{where}: the guard on {field_path!r} can never pass ("
                + " and ".join(c.describe() for c in same_field)
                + ")"
            )
    return guards


def _satisfiable(conditions: Sequence[Guard]) -> bool:
    """Whether some JSON value passes every condition on one field."""
    candidates = _candidates(conditions)
    if candidates is not None:
        return any(all(g.holds_for(c) for g in conditions) for c in candidates)
    bounds = [g for g in conditions if g.op in _BOUND_OPS]
    if not bounds:
        return True  # only ne / not_in: finitely many values excluded from infinitely many
    numbers = [g.value for g in bounds if _is_number(g.value)]
    if len(numbers) == len(bounds):
        return _range_satisfiable(conditions, [g.op for g in bounds], numbers)
    strings = [g.value for g in bounds if isinstance(g.value, str)]
    if len(strings) == len(bounds):
        return _range_satisfiable(conditions, [g.op for g in bounds], strings)
    return False  # numbers and strings mixed: nothing is ordered against both


def _candidates(conditions: Sequence[Guard]) -> list[object] | None:
    """The values that ``eq`` and ``in`` conditions leave possible (``None``: there is none of them)."""
    candidates: list[object] | None = None
    for g in conditions:
        if g.op == "eq":
            pool: tuple[object, ...] = (g.value,)
        elif g.op == "in":
            pool = g.members
        else:
            continue
        candidates = (
            list(pool) if candidates is None else [c for c in candidates if any(_same(c, x) for x in pool)]
        )
    return candidates


def _range_satisfiable(conditions: Sequence[Guard], ops: Sequence[str], values: Sequence[_Ordered]) -> bool:
    """Whether the bounds ``ops[i] values[i]`` leave a value between them that passes ``conditions``."""
    lows = [(value, op == "gt") for op, value in zip(ops, values, strict=True) if op in ("gt", "gte")]
    highs = [(value, op == "lte") for op, value in zip(ops, values, strict=True) if op in ("lt", "lte")]
    if not lows or not highs:
        return True
    low, low_strict = max(lows)  # the tightest lower bound; on a tie, the strict one
    high, high_inclusive = min(highs)  # the tightest upper bound; on a tie, the strict one
    if low < high:
        return True
    if low == high and not low_strict and high_inclusive:
        return all(g.holds_for(low) for g in conditions)
    return False

"""The run's cost budget and the turn's output schema: two limits Route reads (docs/context-model.md §7.2).

- **Cost budget** (:meth:`Agent.cost_budget <fpdebug.engine.agent.Agent.cost_budget>`): after each
  call, the run's spend so far is that call's usage priced by the offline table of
  :mod:`fpdebug.trace.cost` (or by the price the agent declares), added to the spend before it. Once
  the spend reaches the budget, Route dispatches no more tools: a reply asking for some routes
  ``final`` (or ``wrap-up``) with ``stopped_early.reason = "cost-budget"``. A call nothing can price
  is never counted as $0: the budget's ``unpriced`` stance either fails the run (``fail``, the
  default) or counts it as unpriced and goes on (``ignore``), and ``run_start.options`` says which.
- **Output schema** (:meth:`Agent.output_schema <fpdebug.engine.agent.Agent.output_schema>`): a reply
  Route would send to ``final`` must parse as JSON and validate against the declared type. One that
  does not routes ``output-retry``: no tool runs, the reply's text and a re-ask carrying the error
  join the history, the iteration advances. After ``max_retries`` re-asks in a turn, a reply that
  still fails ends the run ``failed`` (``OutputValidationError``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter, ValidationError

from fpdebug.errors import DefinitionError
from fpdebug.trace.cost import price_tokens, usage_of
from fpdebug.trace.schema import ErrorInfo, LlmResponse

__all__ = [
    "CostBudget",
    "ModelPrice",
    "OutputCheck",
    "OutputSchema",
    "SpendMeter",
    "Unpriced",
    "output_reask",
]

Unpriced: TypeAlias = Literal["fail", "ignore"]
"""What a call nothing can price does under a budget: fail the run, or count as unpriced and go on."""

_MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A price the agent declares, in US dollars per million tokens (every call is priced with it)."""

    input_per_mtok: float
    """Dollars per million input tokens (cache reads and writes included)."""
    output_per_mtok: float
    """Dollars per million output tokens."""

    def __post_init__(self) -> None:
        for name, value in (
            ("input_per_mtok", self.input_per_mtok),
            ("output_per_mtok", self.output_per_mtok),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise DefinitionError(f"ModelPrice.{name} must be a number >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class CostBudget:
    """The declared budget (:meth:`Agent.cost_budget`)."""

    usd: float
    """The run's budget in US dollars."""
    price: ModelPrice | None = None
    """A declared price used for every call instead of the table."""
    unpriced: Unpriced = "fail"
    """The stance on a call nothing can price."""

    @classmethod
    def from_declaration(cls, recorded: object) -> CostBudget | None:
        """The budget ``run_start.options["cost_budget"]`` recorded (``None`` when it is not one)."""
        if not isinstance(recorded, dict):
            return None
        usd, unpriced, price = recorded.get("usd"), recorded.get("unpriced", "fail"), recorded.get("price")
        if isinstance(usd, bool) or not isinstance(usd, int | float) or unpriced not in ("fail", "ignore"):
            return None
        declared = None
        if isinstance(price, dict):
            try:
                declared = ModelPrice(price["input_per_mtok"], price["output_per_mtok"])
            except (KeyError, DefinitionError):
                return None
        return cls(float(usd), declared, unpriced)

    def declaration(self) -> dict[str, object]:
        """What ``run_start.options["cost_budget"]`` records."""
        recorded: dict[str, object] = {"usd": self.usd, "unpriced": self.unpriced}
        if self.price is not None:
            recorded["price"] = {
                "input_per_mtok": self.price.input_per_mtok,
                "output_per_mtok": self.price.output_per_mtok,
            }
        return recorded


class SpendMeter:
    """The run's spend so far under a :class:`CostBudget` (one per run, shared by its turns).

    Every call is priced at the table's prices in force when the run started (``run_start.ts``): the
    honesty replay knows that instant, so it prices the recorded usages exactly as the loop did.
    """

    def __init__(self, budget: CostBudget, priced_at: datetime) -> None:
        self.budget = budget
        self.priced_at = priced_at
        """The instant whose table prices apply (the run's start)."""
        self.spent = Decimal(0)
        """Dollars of the priced calls so far."""
        self.unpriced_calls = 0
        """Calls counted as unpriced (the ``ignore`` stance)."""

    @property
    def over(self) -> bool:
        """Whether the spend has reached the budget: Route dispatches no more tools."""
        return self.spent >= Decimal(str(self.budget.usd))

    def charge(self, provider: str, model: str, response: LlmResponse) -> ErrorInfo | None:
        """Add one reply's cost to the spend.

        Returns:
            ``None``, or the failure to end the run with: the call has no price and the stance is
            ``fail``.
        """
        tokens = usage_of(provider, response.usage)
        price = self.budget.price
        if price is not None:
            self.spent += (
                Decimal(tokens.input_total) * Decimal(str(price.input_per_mtok))
                + Decimal(tokens.output) * Decimal(str(price.output_per_mtok))
            ) / _MILLION
            return None
        cost = price_tokens(provider, response.model or model, tokens, self.priced_at)
        if cost.dollars is not None:
            self.spent += cost.dollars
            return None
        if self.budget.unpriced == "ignore":
            self.unpriced_calls += 1
            return None
        return ErrorInfo(
            type="UnpricedCallError",
            message=(
                f"cost_budget: the call to {provider}/{response.model or model} has no price "
                f"({cost.unpriced}); declare one with cost_budget(price=ModelPrice(...)), or "
                "cost_budget(unpriced='ignore') to count such calls as unpriced"
            ),
        )

    def stop_fields(self) -> dict[str, float]:
        """The budget and the spend, as ``stopped_early`` and ``wrap_up`` record them."""
        return {"budget_usd": self.budget.usd, "spent_usd": round(float(self.spent), 8)}


# ----------------------------------------------------------------------------------------------
# The output schema


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """A final reply checked against the schema: the parsed value, or why it failed."""

    value: object = None
    """The validated value (a model instance for a pydantic model)."""
    error: str | None = None
    """The JSON or validation error, ``None`` when the reply passed."""


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The declared type of a final answer (:meth:`Agent.output_schema`)."""

    adapter: TypeAdapter[Any]
    """Validates the reply's JSON."""
    name: str
    """The type's name (recorded in ``run_start.options``)."""
    max_retries: int
    """Re-asks per turn before the run fails."""

    @classmethod
    def of(cls, schema: object, max_retries: int) -> OutputSchema:
        """Build one from a pydantic model, a dataclass, a TypedDict or any type pydantic validates."""
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise DefinitionError(
                f"output_schema(max_retries=...) must be an integer >= 0, got {max_retries!r}"
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(schema)  # type: ignore[arg-type]  # checked here
            adapter.json_schema()
        except Exception as exc:  # pydantic's errors for a non-type are several classes
            raise DefinitionError(
                f"output_schema() needs a type pydantic can validate (a BaseModel subclass…), got {schema!r}: {exc}"
            ) from exc
        return cls(adapter, getattr(schema, "__name__", repr(schema)), max_retries)

    def json_schema(self) -> str:
        """The schema as the re-ask shows it (compact JSON)."""
        return json.dumps(self.adapter.json_schema(), separators=(",", ":"), sort_keys=True)

    def check(self, content: str) -> OutputCheck:
        """Parse and validate ``content`` (one surrounding Markdown code fence is allowed)."""
        text = _unfenced(content)
        try:
            return OutputCheck(value=self.adapter.validate_json(text))
        except ValidationError as exc:
            return OutputCheck(error=_validation_text(exc))

    def declaration(self) -> dict[str, object]:
        """What ``run_start.options["output_schema"]`` records."""
        return {"name": self.name, "max_retries": self.max_retries, "schema": self.adapter.json_schema()}


def _unfenced(content: str) -> str:
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and text.count("```") == 2:
        body = text[3:-3]
        first, _, rest = body.partition("\n")
        return (rest if first.strip().isalpha() or not first.strip() else body).strip()
    return text


def _validation_text(exc: ValidationError) -> str:
    """The errors as one line each: where, then what (at most five)."""
    lines = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error.get("loc", ())) or "(the reply)"
        lines.append(f"{where}: {error.get('msg', 'invalid')}")
    more = exc.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


def output_reask(schema: OutputSchema, error: str) -> str:
    """The user message an ``output-retry`` adds: the error and the schema to follow."""
    return (
        f"Your answer does not match the required output format: {error}. Reply again with only a JSON "
        f"value that matches this JSON Schema, and nothing else: {schema.json_schema()}"
    )

"""What an LLM call cost: one usage definition, prices from an offline table, and per-injection shares.

**One usage definition.** :func:`usage_of` is the only place that reads a recorded
:class:`~fpdebug.trace.schema.Usage` into counts: input tokens *including* cache reads and writes
(the OTel GenAI convention's ``gen_ai.usage.input_tokens``), cache reads, cache writes, output tokens
(reasoning included, as both OpenAI and Anthropic bill them) and reasoning tokens. Anthropic reports
cache reads and writes apart from ``input_tokens``; traces recorded so far keep that split, so they
are added back here. Everything that shows tokens or cost (``summary``, ``report``, the TUI, the
export) goes through it.

**Prices** come from `genai-prices <https://pypi.org/project/genai-prices/>`_ (Pydantic's maintained
price table, bundled in the package: no network). A call costs its uncached input at the input price,
its cache reads at the cache-read price, its cache writes at the cache-write price and its output at
the output price (the table's tiers apply). A model the table does not know has an *unknown price*,
never $0; the in-process providers (``scripted``, ``replay``) have *no price*, and a call that got no
reply (it failed) has *no usage recorded*: its tokens are unknown, not zero.

**Per injection** (docs/context-model.md §3.4: each segment of a request names the injection that
contributed it): an injection's share of a call is the characters of its segments (system-prompt
segments, messages and tool schemas it delivered) over the characters of the whole request. This is
a tokenizer-free estimate: its tokens are that share of the call's input tokens, its dollars that
share of the call's input-side cost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from fpdebug.trace.schema import LlmCallEvent, LlmRequest, Usage

__all__ = [
    "NO_PRICE_REPLAYED",
    "NO_PRICE_SCRIPTED",
    "NO_USAGE",
    "UNKNOWN_PRICE",
    "CallCost",
    "CostTotal",
    "InjectionCost",
    "InjectionShare",
    "RunCosts",
    "TokenCounts",
    "call_cost",
    "costs_of",
    "format_dollars",
    "injection_shares",
    "input_price_per_token",
    "price_tokens",
    "usage_of",
]

UNKNOWN_PRICE = "unknown price"
"""What a call of a model the price table does not know costs."""

NO_PRICE_SCRIPTED = "no price: scripted"
"""What a call the scripted model answered in process costs."""
NO_PRICE_REPLAYED = "no price: replayed"
"""What a call answered from a recording costs (nothing was sent: the recording's model is not billed)."""

NO_USAGE = "no usage recorded"
"""What a call that got no reply (a timeout, an HTTP error) costs: the trace has no tokens to price."""

_IN_PROCESS = frozenset({"scripted", "replay"})


def _in_process_reason(provider: str) -> str:
    # A replayed call says so: "scripted" beside a recording of claude-sonnet-4-5 reads as a lie.
    return NO_PRICE_REPLAYED if provider == "replay" else NO_PRICE_SCRIPTED


_PROVIDER_IDS = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai"}
_MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """One call's tokens, in the OTel GenAI convention's terms."""

    input_total: int
    """Every input token, cache reads and writes included."""
    cache_read: int
    """Input tokens served from the provider's cache (0 when not reported)."""
    cache_write: int
    """Input tokens written to the provider's cache (0 when not reported)."""
    output: int
    """Output tokens, reasoning included."""
    reasoning: int | None
    """Output tokens spent reasoning, when reported."""

    @property
    def uncached_input(self) -> int:
        """Input tokens billed at the plain input price."""
        return max(self.input_total - self.cache_read - self.cache_write, 0)


def usage_of(provider: str, usage: Usage) -> TokenCounts:
    """The one reading of a recorded usage (see the module doc): inclusive input, cache, output, reasoning.

    Args:
        provider: The provider that answered (``anthropic`` reports cache tokens apart from input).
        usage: The usage the trace recorded.
    """
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    # The schema owns the rule (an unmarked Anthropic call reported its cache apart).
    return TokenCounts(
        usage.total_input_tokens(provider), read, write, usage.output_tokens, usage.reasoning_tokens
    )


@dataclass(frozen=True, slots=True)
class CallCost:
    """What one call cost, or why there is no number."""

    tokens: TokenCounts
    """Its tokens (:func:`usage_of`)."""
    dollars: Decimal | None
    """Total dollars, or ``None`` with :attr:`unpriced`."""
    input_dollars: Decimal | None = None
    """The input side (uncached input, cache reads and writes)."""
    unpriced: str | None = None
    """:data:`UNKNOWN_PRICE`, :data:`NO_PRICE_SCRIPTED` or :data:`NO_USAGE` when there is no number."""


@dataclass(slots=True)
class CostTotal:
    """Costs summed over calls (a turn, a run): the priced dollars and how many calls had no price."""

    dollars: Decimal = Decimal(0)
    """Dollars of the priced calls."""
    priced: int = 0
    """Calls with a price."""
    unpriced: dict[str, int] = field(default_factory=dict)
    """Calls without one, by reason."""

    def add(self, cost: CallCost, times: int = 1) -> None:
        """Count one call (or ``times`` calls that cost the same: the runs browser groups them)."""
        if cost.dollars is None:
            reason = cost.unpriced or UNKNOWN_PRICE
            self.unpriced[reason] = self.unpriced.get(reason, 0) + times
        else:
            self.dollars += cost.dollars * times
            self.priced += times

    @classmethod
    def of(cls, costs: Iterable[CallCost]) -> CostTotal:
        """The sum of ``costs``."""
        total = cls()
        for cost in costs:
            total.add(cost)
        return total

    @property
    def known(self) -> bool:
        """Whether every call had a price (and there was at least one)."""
        return self.priced > 0 and not self.unpriced

    def usd(self) -> float | None:
        """The dollars as a float when every call was priced, else ``None`` (for JSON and spans)."""
        return float(self.dollars) if self.known else None

    def text(self) -> str:
        """``$0.0123``; ``unknown price``; ``no price: scripted``; or ``$0.0123 + unknown price (2 calls)``."""
        if not self.unpriced:
            return format_dollars(self.dollars)
        reasons = ", ".join(sorted(self.unpriced))
        if not self.priced:
            return reasons
        count = sum(self.unpriced.values())
        return f"{format_dollars(self.dollars)} + {reasons} ({count} call{'' if count == 1 else 's'})"

    def as_json(self) -> dict[str, object]:
        """``{"usd": float|None, "priced_calls": n, "unpriced_calls": {reason: n}, "text": …}``."""
        return {
            "usd": self.usd(),
            "priced_calls": self.priced,
            "unpriced_calls": dict(sorted(self.unpriced.items())),
            "text": self.text(),
        }


def format_dollars(dollars: Decimal) -> str:
    """Dollars for a person: four significant decimals below a cent, cents above (``$0.004185``, ``$1.23``)."""
    if dollars == 0:
        return "$0.00"
    if dollars >= 1:
        return f"${dollars:.2f}"
    return f"${float(dollars):.4g}" if dollars >= Decimal("0.0001") else f"${float(dollars):.2e}"


def call_cost(event: LlmCallEvent) -> CallCost:
    """What one recorded call cost (the replied model's price, else the requested one's)."""
    usage = event.response.usage if event.response is not None else Usage()
    tokens = usage_of(event.provider, usage)
    model = (event.response.model if event.response is not None else None) or event.model
    return price_tokens(event.provider, model, tokens, event.ts, replied=event.response is not None)


def price_tokens(
    provider: str, model: str, tokens: TokenCounts, when: datetime, *, replied: bool = True
) -> CallCost:
    """What a call of ``provider``/``model`` with these tokens cost at ``when`` (:func:`call_cost`'s rule).

    Args:
        provider: The ``llm_call``'s provider (``scripted`` and ``replay`` have no price).
        model: The replied model, else the requested one.
        tokens: Its tokens (:func:`usage_of`).
        when: The call's time: it picks the price in force then.
        replied: ``False`` for a call that got no reply: its tokens are unknown (:data:`NO_USAGE`).
    """
    if provider in _IN_PROCESS:
        return CallCost(tokens, None, unpriced=_in_process_reason(provider))
    if not replied:  # pricing the empty usage would say $0 for tokens nobody counted
        return CallCost(tokens, None, unpriced=NO_USAGE)
    priced = _dollars(_PROVIDER_IDS.get(provider), model, tokens, when)
    if priced is None:
        return CallCost(tokens, None, unpriced=UNKNOWN_PRICE)
    input_dollars, output_dollars = priced
    return CallCost(tokens, input_dollars + output_dollars, input_dollars)


def input_price_per_token(event: LlmCallEvent) -> tuple[Decimal | None, str | None]:
    """The plain input price of one token at this call's model (the context ledger prices its rows with it).

    Returns:
        ``(dollars per token, None)``, or ``(None, reason)``: :data:`NO_PRICE_SCRIPTED` for an
        in-process provider, :data:`UNKNOWN_PRICE` for a model the table does not know. A failed
        call is priced at the requested model: what was offered to it was sent all the same.
    """
    if event.provider in _IN_PROCESS:
        return None, _in_process_reason(event.provider)
    model = (event.response.model if event.response is not None else None) or event.model
    tokens = TokenCounts(1_000_000, 0, 0, 0, None)
    priced = _dollars(_PROVIDER_IDS.get(event.provider), model, tokens, event.ts)
    if priced is None:
        return None, UNKNOWN_PRICE
    return priced[0] / _MILLION, None


def _dollars(
    provider_id: str | None, model: str, tokens: TokenCounts, when: datetime
) -> tuple[Decimal, Decimal] | None:
    """Input-side and output dollars from the bundled table, or ``None`` when it does not know the model."""
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:  # the table is a dependency; a broken install prices nothing rather than $0
        return None
    # genai-prices takes input_tokens inclusive of cache reads and writes, as usage_of does.
    usage = PriceUsage(
        input_tokens=tokens.input_total,
        cache_read_tokens=tokens.cache_read or None,
        cache_write_tokens=tokens.cache_write or None,
        output_tokens=tokens.output,
    )
    try:
        # The call's own time picks the price in force then (the table keeps dated prices).
        calculated = calc_price(usage, model, provider_id=provider_id, genai_request_timestamp=when)
    except LookupError:
        return None
    return calculated.input_price, calculated.output_price


@dataclass(frozen=True, slots=True)
class InjectionShare:
    """What one injection's segments took of a call: characters, estimated tokens and dollars."""

    chars: int
    """Characters of its segments in the request."""
    tokens: float
    """Its share of the call's input tokens."""
    dollars: Decimal | None
    """Its share of the call's input-side cost, or ``None`` when the call has no price."""


def injection_shares(request: LlmRequest, cost: CallCost) -> dict[str, InjectionShare]:
    """Each injection's share of one call (by characters; see the module doc), keyed by injection id."""
    own: dict[str, int] = {}
    total = 0
    for segment in request.system_prompt:
        total += len(segment.text)
        if segment.injection_id:
            own[segment.injection_id] = own.get(segment.injection_id, 0) + len(segment.text)
    for message in request.messages:
        size = len(message.content) + sum(
            len(call.name) + len(json.dumps(call.args, sort_keys=True)) for call in message.tool_calls or ()
        )
        total += size
        if message.injection_id:
            own[message.injection_id] = own.get(message.injection_id, 0) + size
    for schema in request.tools:
        size = len(schema.name) + len(schema.description) + len(json.dumps(schema.parameters, sort_keys=True))
        total += size
        if schema.injection_id:
            own[schema.injection_id] = own.get(schema.injection_id, 0) + size
    if total == 0:
        return {}
    shares: dict[str, InjectionShare] = {}
    for injection_id, chars in own.items():
        fraction = Decimal(chars) / Decimal(total)
        dollars = cost.input_dollars * fraction if cost.input_dollars is not None else None
        shares[injection_id] = InjectionShare(chars, float(fraction) * cost.tokens.input_total, dollars)
    return shares


@dataclass(slots=True)
class InjectionCost:
    """What one injection's segments took across a run (sum of its :class:`InjectionShare` s)."""

    tokens: float = 0.0
    """Estimated input tokens (its character share of each call's input tokens)."""
    cost: CostTotal = field(default_factory=CostTotal)
    """Its share of each call's input-side dollars; unpriced calls counted by reason."""
    calls: int = 0
    """Calls its segments rode."""

    def as_json(self) -> dict[str, object]:
        """``{"tokens": int, "calls": n, "cost": {…}}`` (tokens rounded: an estimate)."""
        return {"tokens": round(self.tokens), "calls": self.calls, "cost": self.cost.as_json()}


@dataclass(slots=True)
class RunCosts:
    """A run's costs: per call (by line), per iteration, per turn, for the run, and per injection."""

    run: CostTotal = field(default_factory=CostTotal)
    """Every call of the run."""
    turns: dict[int, CostTotal] = field(default_factory=dict)
    """Per turn number."""
    iterations: dict[tuple[int, int], CostTotal] = field(default_factory=dict)
    """Per ``(turn, iteration)``."""
    calls: dict[int, CallCost] = field(default_factory=dict)
    """Per ``llm_call`` line."""
    injections: dict[str, InjectionCost] = field(default_factory=dict)
    """Per injection id, in order of first appearance."""

    def add(self, line: int, event: LlmCallEvent) -> CallCost:
        """Count one call (its line in the trace) everywhere it belongs; return its cost."""
        cost = call_cost(event)
        self.calls[line] = cost
        self.run.add(cost)
        if event.turn is not None:
            self.turns.setdefault(event.turn, CostTotal()).add(cost)
            if event.iteration is not None:
                self.iterations.setdefault((event.turn, event.iteration), CostTotal()).add(cost)
        for injection_id, share in injection_shares(event.request, cost).items():
            total = self.injections.setdefault(injection_id, InjectionCost())
            total.tokens += share.tokens
            total.calls += 1
            total.cost.add(CallCost(cost.tokens, share.dollars, share.dollars, cost.unpriced))
        return cost

    def injections_by_cost(self) -> list[tuple[str, InjectionCost]]:
        """Injections, the most expensive first (by dollars, then by tokens)."""
        return sorted(self.injections.items(), key=lambda item: (-item[1].cost.dollars, -item[1].tokens))


def costs_of(events: Iterable[tuple[int, object]]) -> RunCosts:
    """The costs of the ``llm_call`` records among ``(line, record)`` pairs (other records are skipped)."""
    costs = RunCosts()
    for line, record in events:
        if isinstance(record, LlmCallEvent):
            costs.add(line, record)
    return costs

"""Cost from the offline price table: one usage definition, cache tokens at their prices, unknown never $0."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from fpdebug.trace.cost import (
    NO_PRICE_REPLAYED,
    NO_PRICE_SCRIPTED,
    NO_USAGE,
    UNKNOWN_PRICE,
    CostTotal,
    RunCosts,
    call_cost,
    format_dollars,
    injection_shares,
    usage_of,
)
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PromptSegment,
    RunEndEvent,
    RunStartEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from tests.conftest import T0
from tests.trace.samples import Script

CACHED = Usage(input_tokens=500, cache_read_tokens=200, cache_write_tokens=300, output_tokens=100)


def call(
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    usage: Usage = CACHED,
    request: LlmRequest | None = None,
    turn: int = 1,
) -> LlmCallEvent:
    return LlmCallEvent(
        seq=2,
        ts=T0,
        run_id="r1",
        turn=turn,
        iteration=1,
        call_index=1,
        provider=provider,
        model=model,
        request=request or LlmRequest(),
        response=LlmResponse(usage=usage),
    )


def test_anthropic_input_counts_its_cache_reads_and_writes() -> None:
    tokens = usage_of("anthropic", CACHED)
    assert (tokens.input_total, tokens.cache_read, tokens.cache_write, tokens.output) == (1000, 200, 300, 100)
    assert tokens.uncached_input == 500


def test_openai_input_already_includes_its_cached_tokens() -> None:
    tokens = usage_of(
        "openai", Usage(input_tokens=1000, cache_read_tokens=400, output_tokens=10, reasoning_tokens=6)
    )
    assert (tokens.input_total, tokens.uncached_input, tokens.reasoning) == (1000, 600, 6)


def test_a_known_model_is_priced_with_cache_reads_and_writes_at_their_own_prices() -> None:
    cost = call_cost(call())
    # Claude Sonnet 4.5: $3/M input, $0.30/M cache read, $3.75/M cache write, $15/M output.
    expected_input = (500 * Decimal(3) + 200 * Decimal("0.3") + 300 * Decimal("3.75")) / 1_000_000
    assert cost.input_dollars == expected_input
    assert cost.dollars == expected_input + 100 * Decimal(15) / 1_000_000
    assert cost.unpriced is None


def test_an_unknown_model_has_an_unknown_price_never_zero() -> None:
    cost = call_cost(call(provider="openai", model="no-such-model-x"))
    assert cost.dollars is None and cost.unpriced == UNKNOWN_PRICE
    total = CostTotal.of([cost])
    assert total.text() == "unknown price" and total.usd() is None


def test_scripted_and_replayed_calls_have_no_price_and_say_which() -> None:
    assert call_cost(call(provider="scripted")).unpriced == NO_PRICE_SCRIPTED
    # A replay of a priced model's recording: nothing was sent, and the reason names the replay.
    replayed = call_cost(call(provider="replay", model="claude-sonnet-4-5"))
    assert replayed.dollars is None and replayed.unpriced == NO_PRICE_REPLAYED == "no price: replayed"


def test_a_partly_priced_total_says_what_it_left_out() -> None:
    total = CostTotal.of([call_cost(call()), call_cost(call(provider="openai", model="no-such-model-x"))])
    assert total.text() == "$0.004185 + unknown price (1 call)"
    assert total.usd() is None
    assert total.as_json()["unpriced_calls"] == {"unknown price": 1}


def test_dollars_are_formatted_for_a_person() -> None:
    assert format_dollars(Decimal("1.234")) == "$1.23"
    assert format_dollars(Decimal("0.004185")) == "$0.004185"
    assert format_dollars(Decimal(0)) == "$0.00"


def test_an_injection_takes_its_character_share_of_the_input() -> None:
    request = LlmRequest(
        system_prompt=[
            PromptSegment(source="base", text="x" * 60),
            PromptSegment(source="instruction", injection_id="tone", text="y" * 30),
        ],
        messages=[Message(role="user", content="z" * 10)],
    )
    event = call(request=request)
    shares = injection_shares(request, call_cost(event))
    assert list(shares) == ["tone"]
    assert shares["tone"].chars == 30
    assert shares["tone"].tokens == pytest.approx(300)  # 30% of 1000 input tokens
    assert shares["tone"].dollars == call_cost(event).input_dollars * Decimal("0.3")  # type: ignore[operator]
    costs = RunCosts()
    costs.add(2, event)
    costs.add(3, event)
    assert costs.injections["tone"].calls == 2
    assert costs.injections["tone"].as_json()["tokens"] == 600


def test_summary_shows_the_cost_in_text_and_json(tmp_path: Path) -> None:
    s = Script("r1")
    s.add(
        RunStartEvent,
        turn=None,
        agent_name="a",
        provider="anthropic",
        model="claude-sonnet-4-5",
        max_iterations=2,
    )
    s.turn = 1
    s.add(TurnStartEvent, user_message="hi")
    event = call()
    s.add(
        LlmCallEvent,
        iteration=1,
        call_index=1,
        provider="anthropic",
        model="claude-sonnet-4-5",
        request=event.request,
        response=event.response,
    )
    s.add(TurnEndEvent, final_content="", iteration_count=1, input_tokens=500, output_tokens=100)
    s.turn = None
    s.add(RunEndEvent, status="completed", turns=1)
    trace = s.write(tmp_path / "t.jsonl")
    command = [sys.executable, "-m", "fpdebug", "summary", str(trace)]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "cost $0.004185" in text
    facts = json.loads(
        subprocess.run([*command, "--json"], capture_output=True, text=True, check=True).stdout
    )
    assert facts["runs"][0]["cost"] == {
        "usd": pytest.approx(0.004185),
        "priced_calls": 1,
        "unpriced_calls": {},
        "text": "$0.004185",
    }


def test_a_call_that_got_no_reply_has_no_usage_to_price_never_zero() -> None:
    failed = call().model_copy(update={"response": None})
    cost = call_cost(failed)
    assert cost.dollars is None and cost.unpriced == NO_USAGE
    total = CostTotal.of([call_cost(call()), cost])
    assert total.text() == "$0.004185 + no usage recorded (1 call)" and total.usd() is None

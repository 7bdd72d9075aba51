"""The scripted agent the recording benchmark runs: the support demo grown to a realistic size.

The support scenario (``fpdebug.demo.support``: a skill map triage → billing → refund, two leasing
tools, a scripted model that plays five iterations per turn) with what a production agent adds:
the engagement kernel, and 14 more injections (steering, rule-gated instructions and facts, an
on-tool-return instruction) so that every pass evaluates 20 injections and every call carries a
system prompt of about 4 KB. Each run has four turns; :func:`run_iterations` runs as many runs as
it takes to reach an iteration count, all into one sink.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from fpdebug.demo import support
from fpdebug.engine import (
    Agent,
    EventSink,
    InjectionContext,
    OnToolReturn,
    define_fact,
    define_injection,
    define_instruction,
    define_steering,
)
from fpdebug.trace.clock import Clock

__all__ = ["ITERATIONS_PER_RUN", "TURNS_PER_RUN", "bench_agent", "run_iterations"]

TURNS_PER_RUN = 4
"""User turns per run (the conversation's history grows over a run, as it does in production)."""

ITERATIONS_PER_RUN = TURNS_PER_RUN * 5
"""Iterations per run (the support model plays five per turn)."""


def _prose(rng: random.Random, size: int) -> str:
    words = [
        "order",
        "refund",
        "invoice",
        "customer",
        "policy",
        "amount",
        "always",
        "never",
        "confirm",
        "explain",
        "check",
        "before",
        "after",
        "only",
        "when",
        "the",
        "a",
        "of",
        "to",
        "in",
        "for",
        "with",
        "must",
        "should",
        "reply",
        "answer",
    ]
    text = ""
    while len(text) < size:
        text += " ".join(rng.choices(words, k=12)).capitalize() + ". "
    return text.strip()


def _at_least(iteration: int) -> Callable[[InjectionContext], bool]:
    return lambda ctx: ctx.iteration >= iteration


def bench_agent() -> Agent:
    """The support agent with the engagement kernel and 20 injections (about 4 KB of prompt per call)."""
    rng = random.Random(1)
    extra = [
        define_steering("safety", prompt=_prose(rng, 420), description="Safety rails"),
        define_steering("format-rules", prompt=_prose(rng, 380), description="Answer format"),
        define_steering("brand-voice", prompt=_prose(rng, 300), description="Brand voice"),
        define_steering("privacy", prompt=_prose(rng, 340), description="Personal data"),
        define_instruction(
            "escalation", prompt=_prose(rng, 360), active_when=_at_least(4), description="Escalate long turns"
        ),
        define_instruction(
            "second-look",
            prompt=_prose(rng, 300),
            active_when=_at_least(2),
            description="Re-read the tool results",
        ),
        define_instruction(
            "never-guess",
            prompt=_prose(rng, 280),
            active_when=_at_least(3),
            description="Do not guess amounts",
        ),
        define_fact(
            "locale",
            data={"locale": "en-US", "currency": "USD", "timezone": "America/New_York"},
            description="Customer locale",
        ),
        define_fact(
            "shop-hours",
            data={"open": "09:00", "close": "18:00", "days": "Mon-Fri"},
            description="Office hours",
        ),
        define_fact(
            "tier",
            data={"tier": "gold", "since": "2019-04-01"},
            active_when=_at_least(2),
            description="Customer tier",
        ),
        define_injection(
            "order-context",
            trigger=OnToolReturn("lookup_order"),
            flavor="rag",
            system_prompt=_prose(rng, 500),
            description="Order context",
        ),
        define_injection(
            "invoice-guide",
            trigger=OnToolReturn("fetch_invoice"),
            flavor="instructions",
            system_prompt=_prose(rng, 420),
            description="Reading invoices",
        ),
        define_injection(
            "refund-checklist",
            trigger=OnToolReturn("issue_refund"),
            flavor="instructions",
            system_prompt=_prose(rng, 360),
            description="After a refund",
        ),
        define_steering("sign-off", prompt=_prose(rng, 200), description="Sign-off"),
    ]
    return support.build_agent().injections(*extra).maps(renewal_grace=3).max_iterations(12)


def run_iterations(
    agent: Agent, iterations: int, *, sink: EventSink, clock: Clock | None = None
) -> tuple[int, int]:
    """Run ``agent`` on the support script until ``iterations`` iterations have run, into one sink.

    Args:
        agent: The agent (:func:`bench_agent`).
        iterations: How many iterations to run in all (rounded up to whole runs).
        sink: Where every run's events go.
        clock: The runs' clock (the system clock by default).

    Returns:
        ``(runs, iterations)`` actually run.

    Raises:
        RuntimeError: A run did not complete (the benchmark would measure something else).
    """
    messages = list(support.USER_MESSAGES) * TURNS_PER_RUN
    runs = done = 0
    while done < iterations:
        result = agent.run(
            messages,
            provider=support.scripted_provider(),
            sink=sink,
            clock=clock,
            run_id=f"bench-{runs + 1:05d}",
        )
        if result.status != "completed":
            raise RuntimeError(f"bench run {runs + 1} ended {result.status}: {result.error}")
        runs += 1
        done += result.iterations
    return runs, done

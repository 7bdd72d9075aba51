"""The window strategy (``Agent.window``, docs/context-model.md §7.1): Compact folds the oldest messages
out of the history at the loop head, never splitting a tool call from its results, never dropping the
turn's user message, and records each fold as ``compact``."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.demo import windowed
from fpdebug.engine.agent import Agent
from fpdebug.engine.agent.window import Window, compact, estimate_tokens
from fpdebug.engine.providers.scripted import ScriptedReply
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    CompactEvent,
    FindingEvent,
    LlmCallEvent,
    Message,
    PassEvent,
    ToolCallRecord,
    TraceEvent,
)
from tests.demo.helpers import run_events
from tests.engine.test_honesty_loop import assert_equality_law, record, scripted

R = ScriptedReply


def of(events: list[TraceEvent], cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, cls)]


def user(text: str, *, from_loop: bool | None = None) -> Message:
    return Message(role="user", content=text, from_loop=from_loop)


def call(call_id: str, *ids: str) -> list[Message]:
    """An assistant message asking for calls ``ids`` (or one call ``call_id``), then their results."""
    ids = ids or (call_id,)
    asked = Message(role="assistant", tool_calls=[ToolCallRecord(id=i, name="t", args={}) for i in ids])
    return [asked, *(Message(role="tool", content=f"r-{i}", tool_call_id=i, tool_name="t") for i in ids)]


def test_a_history_within_the_window_is_left_alone() -> None:
    history = [user("q"), *call("a")]
    assert compact(history, Window(max_messages=3)) is None
    assert len(history) == 3


def test_a_tool_call_and_its_results_go_together() -> None:
    history = [user("q"), *call("a", "a1", "a2"), *call("b"), *call("c")]
    folded = compact(history, Window(max_messages=6))
    # Dropping the assistant message alone would fit at 6; its two results must go with it.
    assert folded is not None and folded.dropped_at == (1, 2, 3)
    assert [m.tool_call_id for m in history if m.role == "tool"] == ["b", "c"]
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "tool"]
    assert (folded.kept, folded.size_before, folded.size_after) == (5, 8, 5)


def test_the_turns_user_message_and_the_first_user_message_stay() -> None:
    history = [
        user("first"),
        *call("a"),
        user("nudge", from_loop=True),
        user("turn 2"),
        *call("b"),
        *call("c"),
    ]
    folded = compact(history, Window(max_messages=3))
    # Nothing more can go: the two typed user messages are kept, and the newest block is never dropped.
    assert folded is not None and folded.dropped_at == (1, 2, 3, 5, 6)
    assert [m.content for m in history] == ["first", "turn 2", "", "r-c"]
    without_first = [user("first"), *call("a"), user("turn 2"), *call("c")]
    compact(without_first, Window(max_messages=3, keep_first_user=False))
    assert [m.content for m in without_first] == ["turn 2", "", "r-c"]


def test_the_token_window_counts_chars_over_four() -> None:
    assert estimate_tokens(Message(role="user", content="x" * 9)) == 3
    long = [user("q" * 40), Message(role="assistant", content="a" * 400), user("now")]
    folded = compact(long, Window(max_tokens=20))
    assert folded is not None and folded.size_before == 10 + 100 + 1
    assert [m.content for m in long] == ["q" * 40, "now"]


def test_the_builder_refuses_a_bad_window() -> None:
    for kwargs in ({}, {"max_messages": 3, "max_tokens": 10}, {"max_messages": 0}, {"max_tokens": True}):
        with pytest.raises(DefinitionError):
            Agent("w").window(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError):
        Agent("w").window(max_messages=3, keep_first_user="yes")  # type: ignore[arg-type]


def lookup(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: The order.
    """
    return f"order {order_id}: total 118.00 EUR" if order_id == "A" else f"order {order_id}: shipped"


def test_the_engine_compacts_before_the_pass_and_sends_the_compacted_history(tmp_path: Path) -> None:
    agent = Agent("w").tools(tool(lookup)).findings().window(max_messages=3)
    recorded = record(
        agent,
        "Check A then B",
        scripted(
            R.tool_call("lookup", {"order_id": "A"}),
            R.tool_call("lookup", {"order_id": "B"}),
            R.text("Order A totals 118.00 EUR."),
        ),
        tmp_path,
    )
    (fold,) = of(recorded.events, CompactEvent)
    assert (fold.turn, fold.iteration, fold.dropped, fold.kept, fold.limit) == (1, 3, 2, 3, "max_messages=3")
    kinds = [e.kind for e in recorded.events if e.iteration == 3]
    # After the results layer's finding on the batch in place, before the pass and the call.
    assert kinds[:3] == ["finding", "compact", "pass"]
    last_call = of(recorded.events, LlmCallEvent)[-1]
    assert [m.tool_call_id for m in last_call.request.messages if m.role == "tool"] == [
        last_call.request.messages[-1].tool_call_id
    ]
    assert "118.00" not in "".join(m.content for m in last_call.request.messages)
    assert of(recorded.events, PassEvent)
    # The honesty replay folds the same messages away: it recomputes the findings written.
    written = assert_equality_law(recorded)
    assert written and of(recorded.events, FindingEvent)


def test_the_windowed_demo_folds_the_largest_stock_away(tmp_path: Path) -> None:
    events = run_events("windowed", tmp_path)
    folds = of(events, CompactEvent)
    assert [(f.iteration, f.dropped, f.kept) for f in folds] == windowed.EXPECTED["compacted"]
    assert [c.route for c in of(events, LlmCallEvent)] == windowed.EXPECTED["routes"]
    final = of(events, LlmCallEvent)[-1]
    assert final.response is not None and final.response.content == windowed.EXPECTED["answer"]
    seen = "".join(m.content for m in final.request.messages)
    assert windowed.EXPECTED["folded_fact"] not in seen

"""Property: any sequence of valid events written by the writer reads back equal (and peeks right)."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import Peek
from fpdebug.trace.redact import Redactor
from fpdebug.trace.schema import (
    ArgumentRow,
    CursorMoveEvent,
    EffectJudgment,
    FindingEvent,
    LeaseGrantEvent,
    LeaseRecord,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    Skipped,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
    TurnStartEvent,
    Usage,
    Witness,
)
from fpdebug.trace.writer import TraceWriter

# Any text: unicode, control characters, quotes, backslashes, newlines (surrogates cannot be UTF-8).
text = st.text(max_size=30)
ids = st.lists(text, max_size=4)
counts = st.integers(min_value=0, max_value=10**9)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=4)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=text,
    tool_call_id=st.none() | text,
)
calls = st.builds(ToolCallRecord, id=text, name=text, args=json_objects, raw_args=st.none() | text)

Spec = tuple[tuple[type[Any], dict[str, Any]], dict[str, Any]]
bodies: st.SearchStrategy[tuple[type[Any], dict[str, Any]]] = st.one_of(
    st.tuples(st.just(TurnStartEvent), st.fixed_dictionaries({"user_message": text})),
    st.tuples(
        st.just(ToolResultEvent),
        st.fixed_dictionaries(
            {
                "tool_call_id": text,
                "tool_name": text,
                "args": json_objects,
                "result": text,
                "status": st.none() | st.sampled_from(["success", "failure", "partial"]),
                "effects": st.lists(
                    st.builds(
                        EffectJudgment,
                        kind=st.just("require-instruction"),
                        outcome=st.sampled_from(["accepted", "refused"]),
                        instruction_id=st.none() | text,
                        refusal_reason=st.none() | text,
                    ),
                    max_size=2,
                ),
                "duration_ms": st.floats(min_value=0, max_value=1e9, allow_nan=False),
            }
        ),
    ),
    st.tuples(
        st.just(PassEvent),
        st.fixed_dictionaries(
            {
                "active_ids": ids,
                "evaluated_total": counts,
                "skipped": st.lists(
                    st.builds(Skipped, id=text, reason=st.just("predicate-threw"), error=st.none() | text),
                    max_size=2,
                ),
                "lease_active_ids": st.none() | ids,
                "parked_ids": st.none() | ids,
                "trigger_kind_counts": st.dictionaries(text, counts, max_size=3),
            }
        ),
    ),
    st.tuples(
        st.just(CursorMoveEvent),
        st.fixed_dictionaries(
            {
                "from_skill": st.none() | text,
                "to_skill": st.none() | text,
                "by": text,
                "strength": st.sampled_from(["explicit", "structural", "semantic", "lexical", "assumed"]),
                "witness": st.none() | st.builds(Witness, text=text, keyword=st.none() | text),
                "reachable": ids,
            }
        ),
    ),
    st.tuples(
        st.just(LeaseGrantEvent),
        st.fixed_dictionaries(
            {
                "lease": st.builds(
                    LeaseRecord,
                    instruction_id=text,
                    delivery_lease=st.sampled_from(["next-call", "until-skill-exit"]),
                    skill_id=st.none() | text,
                    tool_name=text,
                    tool_call_id=st.none() | text,
                    iteration=counts,
                ),
            }
        ),
    ),
    st.tuples(
        st.just(LlmCallEvent),
        st.fixed_dictionaries(
            {
                "call_index": counts,
                "provider": text,
                "model": text,
                "request": st.builds(
                    LlmRequest,
                    messages=st.lists(messages, max_size=3),
                    temperature=st.none() | st.floats(0, 2),
                ),
                "response": st.none()
                | st.builds(
                    LlmResponse,
                    content=text,
                    tool_calls=st.lists(calls, max_size=2),
                    usage=st.builds(Usage, input_tokens=counts, output_tokens=counts),
                ),
                "latency_ms": st.floats(min_value=0, max_value=1e6, allow_nan=False),
                "route": st.none() | st.sampled_from(["tool-calls", "final"]),
            }
        ),
    ),
    st.tuples(
        st.just(FindingEvent),
        st.fixed_dictionaries(
            {
                "layer": st.just("inputs"),
                "rows": st.lists(
                    st.builds(
                        ArgumentRow,
                        tool_call_id=text,
                        tool_name=text,
                        path=text,
                        value=json_values,
                        source=st.sampled_from(["user", "nowhere"]),
                    ),
                    max_size=2,
                ),
            }
        ),
    ),
)
envelopes = st.fixed_dictionaries(
    {
        "ts": st.datetimes(
            min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
        ),
        "run_id": text,
        "turn": st.none() | counts,
        "iteration": st.none() | counts,
    }
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(bodies, envelopes), max_size=12))
def test_any_sequence_of_valid_events_reads_back_equal(specs: list[Spec]) -> None:
    events: list[TraceEvent] = [
        cls(seq=seq, **envelope, **body) for seq, ((cls, body), envelope) in enumerate(specs, start=1)
    ]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "trace.jsonl"
        # Redaction off: random text may look like a secret, and this property is about the
        # writer and reader alone (redaction has its own tests in tests/reliability).
        with TraceWriter.create(path, durability="none", redactor=Redactor.off()) as writer:
            for event in events:
                writer.append(event)
        with TraceReader(path) as reader:
            assert len(reader) == len(events) + 1
            assert [record for _, record in reader.iter_records(1)] == events
            assert [reader[line] for line in range(1, len(reader))] == events
            assert [reader.peek(line) for line in range(1, len(reader))] == [
                Peek(event.kind, event.seq, event.run_id, event.turn, event.iteration) for event in events
            ]
            assert reader.problems() == []

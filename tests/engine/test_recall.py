"""Recall (``Agent.rag`` / ``Agent.memory``, docs/context-model.md §1.3): the memory READ before the
first pass, one system-prompt injection per kept chunk outside the evaluator, and the memory WRITE."""

from __future__ import annotations

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.recall import InMemoryStore, TurnMemory
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    MemoryWriteEvent,
    PassEvent,
    RecallEvent,
    RunStartEvent,
    TraceEvent,
    TurnEndEvent,
)


def echo(request: LlmRequest) -> ScriptedReply:
    """Answers with the ids of the system-prompt segments it read."""
    return ScriptedReply.text(" ".join(s.injection_id or s.source for s in request.system_prompt))


def run(agent: Agent, *messages: str) -> list[TraceEvent]:
    result = agent.run(list(messages), provider=ScriptedProvider(respond=echo))
    assert result.status == "completed", result.error
    return list(result.events)


def store() -> InMemoryStore:
    return InMemoryStore(
        [
            ("limit", "The refund limit is 100 dollars."),
            ("vip", "Dana is a VIP refund customer."),
            ("weather", "It rained in Lisbon."),
        ]
    )


class Chunks:
    def __init__(self, *chunks: tuple[str, str, float]) -> None:
        self.chunks = list(chunks)
        self.asked: list[str] = []

    def recall(self, query: str) -> list[tuple[str, str, float]]:
        self.asked.append(query)
        return self.chunks


def test_each_kept_chunk_is_one_system_prompt_injection_added_outside_the_evaluator() -> None:
    agent = Agent("a").system_prompt("Base.").memory("mem", store(), threshold=0.2)
    events = run(agent, "What is the refund limit for Dana?")
    kinds = [e.kind for e in events]
    # The READ comes before the first pass; the WRITE after the final reply, before turn_end.
    assert kinds == [
        "run_start",
        "turn_start",
        "recall",
        "pass",
        "llm_call",
        "memory_write",
        "turn_end",
        "run_end",
    ]
    (recall,) = [e for e in events if isinstance(e, RecallEvent)]
    assert (recall.recall_id, recall.flavor, recall.query, recall.iteration) == (
        "mem",
        "memory",
        "What is the refund limit for Dana?",
        1,
    )
    assert [(c.entry_id, c.rank) for c in recall.chunks] == [("limit", 1), ("vip", 2)]
    (call,) = [e for e in events if isinstance(e, LlmCallEvent)]
    segments = call.request.system_prompt
    assert [(s.source, s.injection_id) for s in segments] == [
        ("base", None),
        ("memory", "limit"),
        ("memory", "vip"),
    ]
    retrieval = segments[1].retrieval
    assert retrieval is not None and (retrieval.rank, retrieval.threshold, retrieval.recall_id) == (
        1,
        0.2,
        "mem",
    )
    assert retrieval.score == recall.chunks[0].score > recall.chunks[1].score
    (pass_,) = [e for e in events if isinstance(e, PassEvent)]
    # Step 13: the evaluated/active ids exclude memory and RAG recall rows.
    assert pass_.active_ids == [] and pass_.by_slot.system_prompt == []


def test_threshold_and_top_k_decide_what_is_kept_and_the_rest_is_counted() -> None:
    source = Chunks(("a", "alpha", 0.9), ("b", "beta", 0.5), ("c", "gamma", 0.7), ("d", "delta", 0.1))
    events = run(Agent("a").rag("docs", source, top_k=2, threshold=0.3), "q?")
    (recall,) = [e for e in events if isinstance(e, RecallEvent)]
    assert [(c.entry_id, c.score, c.rank) for c in recall.chunks] == [("a", 0.9, 1), ("c", 0.7, 2)]
    assert recall.below_threshold == 2 and (recall.top_k, recall.threshold) == (2, 0.3)
    assert source.asked == ["q?"]  # once per turn, with the user's message
    (call,) = [e for e in events if isinstance(e, LlmCallEvent)]
    assert [s.source for s in call.request.system_prompt] == ["rag", "rag"]
    assert not [e for e in events if isinstance(e, MemoryWriteEvent)]  # a retriever is read-only


def test_the_chunks_ride_every_call_of_the_turn_and_are_asked_once() -> None:
    source = Chunks(("a", "alpha", 0.9))

    def lookup() -> str:
        """Look."""
        return "ok"

    calls: list[list[str | None]] = []

    def respond(request: LlmRequest) -> ScriptedReply:
        calls.append([s.injection_id for s in request.system_prompt])
        if len(calls) == 1:
            return ScriptedReply.tool_call("lookup", {})
        return ScriptedReply.text("done")

    Agent("a").rag("docs", source).tools(lookup).run("q", provider=ScriptedProvider(respond=respond))
    assert calls == [["a"], ["a"]] and source.asked == ["q"]


def test_the_memory_write_stores_the_turn_and_the_next_turn_recalls_it() -> None:
    memory = InMemoryStore()
    events = run(Agent("a").memory("mem", memory), "Where does Dana live?", "Remind me where Dana lives?")
    writes = [e for e in events if isinstance(e, MemoryWriteEvent)]
    assert [(w.turn, w.entry_id) for w in writes] == [(1, "turn-1"), (2, "turn-2")]
    assert writes[0].text == memory.entries["turn-1"] and "Where does Dana live?" in writes[0].text
    recalls = [e for e in events if isinstance(e, RecallEvent)]
    assert recalls[0].chunks == [] and [c.entry_id for c in recalls[1].chunks] == ["turn-1"]
    ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert ends[1].final_content == "turn-1"  # the second call read the first turn's memory


def test_without_memory_ids_leaves_the_entry_out_and_says_so() -> None:
    agent = Agent("a").memory("mem", store(), threshold=0.2).without(memory_ids=["vip"])
    events = run(agent, "What is the refund limit for Dana?")
    (recall,) = [e for e in events if isinstance(e, RecallEvent)]
    assert [c.entry_id for c in recall.chunks] == ["limit"] and recall.excluded == ["vip"]
    (start,) = [e for e in events if isinstance(e, RunStartEvent)]
    assert start.options["without"] == {"injection_ids": [], "tool_names": [], "memory_ids": ["vip"]}


def test_the_in_memory_store_scores_by_word_overlap() -> None:
    found = dict((entry, score) for entry, _, score in store().recall("refund limit"))
    assert set(found) == {"limit", "vip"} and found["limit"] > found["vip"]
    assert store().recall("") == []
    memory = InMemoryStore([("turn-1", "x")])
    assert memory.write(TurnMemory(1, "hi", "hello")) == "turn-1-2"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Agent("a").rag("", Chunks()), "the id must be a non-empty string"),
        (lambda: Agent("a").rag("r", object()), "must have a recall"),  # type: ignore[arg-type]
        (lambda: Agent("a").memory("m", Chunks()), "needs a write"),
        (lambda: Agent("a").rag("r", Chunks(), top_k=0), "top_k must be an integer >= 1"),
        (lambda: Agent("a").rag("r", Chunks(), threshold=float("nan")), "threshold must be a finite"),
        (lambda: Agent("a").rag("r", Chunks()).memory("r", store()), "with this id exists"),
    ],
)
def test_a_bad_declaration_is_a_clear_definition_error(build, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DefinitionError, match=message):
        build()


def test_a_retriever_returning_garbage_fails_the_run_with_a_clear_error() -> None:
    agent = Agent("a").rag("docs", Chunks(("a", "alpha", "high")))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"recall source 'docs' returned .*\(entry_id: str, text: str, score"):
        agent.run("q", provider=ScriptedProvider(respond=echo))

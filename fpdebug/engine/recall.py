"""Recall: the ``rag`` and ``memory`` sources (``Agent.rag``, ``Agent.memory``; docs/context-model.md §1.3).

Once per turn, before the first Evaluate pass (the memory READ of docs/context-model.md §7.1),
each source is asked with the user's message. Every chunk it returns that scores at least its
``threshold``, up to ``top_k``, becomes ONE injection of the source's flavor in the system-prompt
slot: a :class:`~fpdebug.trace.schema.PromptSegment` whose ``injection_id`` is the chunk's id and
whose ``retrieval`` holds its score and rank. The chunks are added OUTSIDE the evaluator: they are
in no pass's ``evaluated`` or ``active`` ids, and ride every call of the turn after the evaluated
injections. One ``recall`` event per source records what was asked and kept.

After the final answer, each ``memory`` source that writes stores the turn (the memory WRITE),
recorded as a ``memory_write`` event. A ``rag`` source is read-only.

A rerun that leaves a chunk out (``Agent.without(memory_ids=…)``, the backtracker's
``{kind: 'memory', excludeMemoryIds: [id]}``) still asks the source, and drops that id from what
it returned; the ``recall`` event names it in ``excluded``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LlmRequest, PromptSegment, RecalledChunk, Retrieval

RecallFlavor: TypeAlias = Literal["rag", "memory"]
"""The two recall flavors."""

Recalled: TypeAlias = tuple[str, str, float]
"""One chunk a source returns: ``(entry_id, text, score)``."""


@dataclass(frozen=True, slots=True)
class TurnMemory:
    """What the memory WRITE hands a store after a turn's final answer."""

    turn: int
    """The 1-based turn."""
    user_message: str
    """What the user said."""
    answer: str
    """The final answer."""


@runtime_checkable
class Retriever(Protocol):
    """A ``rag`` source: returns the chunks relevant to a query."""

    def recall(self, query: str) -> Sequence[Recalled]:
        """The chunks relevant to ``query``, as ``(entry_id, text, score)``, in any order."""
        ...


@runtime_checkable
class MemoryStore(Retriever, Protocol):
    """A ``memory`` source: recalls like a retriever, and stores each finished turn."""

    def write(self, turn: TurnMemory) -> str | None:
        """Store ``turn``; return the new entry's id (or ``None``)."""
        ...


_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(word for word in _WORD.findall(text.lower()) if len(word) > 2)


class InMemoryStore:
    """A small :class:`MemoryStore` held in memory: entries scored by word overlap with the query.

    Args:
        entries: ``(entry_id, text)`` pairs the store starts with (an earlier conversation's facts).
        min_score: Entries scoring below this are not returned at all.
    """

    def __init__(self, entries: Iterable[tuple[str, str]] = (), *, min_score: float = 0.0) -> None:
        self.entries: dict[str, str] = {}
        """The entries, by id, in insertion order."""
        for entry_id, text in entries:
            self.add(entry_id, text)
        self.min_score = min_score

    def add(self, entry_id: str, text: str) -> None:
        """Store ``text`` under ``entry_id`` (an existing id is replaced)."""
        if not entry_id:
            raise DefinitionError("InMemoryStore: an entry id must be a non-empty string")
        self.entries[entry_id] = text

    def recall(self, query: str) -> list[Recalled]:
        """Every entry sharing words with ``query``, scored by overlap ``|A∩B| / sqrt(|A|·|B|)``."""
        asked = _words(query)
        found: list[Recalled] = []
        for entry_id, text in self.entries.items():
            words = _words(text)
            score = len(asked & words) / math.sqrt(len(asked) * len(words)) if asked and words else 0.0
            if score > 0 and score >= self.min_score:
                found.append((entry_id, text, round(score, 4)))
        return found

    def write(self, turn: TurnMemory) -> str:
        """Store the turn as ``turn-<n>`` (``turn-<n>-<k>`` if taken): the user's message and the answer."""
        entry_id, k = f"turn-{turn.turn}", 1
        while entry_id in self.entries:
            k += 1
            entry_id = f"turn-{turn.turn}-{k}"
        self.add(entry_id, f"User asked: {turn.user_message}\nAnswer: {turn.answer}")
        return entry_id


@dataclass(frozen=True, slots=True)
class RecallSource:
    """One ``Agent.rag`` / ``Agent.memory`` declaration."""

    id: str
    """The declaration's id (recorded in ``recall`` events and on each chunk's ``retrieval``)."""
    flavor: RecallFlavor
    """``rag`` or ``memory``."""
    source: Retriever
    """The retriever or store."""
    top_k: int | None = 3
    """The most chunks kept per turn (``None``: no limit)."""
    threshold: float | None = None
    """The minimum score kept (``None``: every chunk returned)."""
    writes: bool = False
    """``memory`` only: store each finished turn."""


def recall_source(
    id: str,
    flavor: RecallFlavor,
    source: object,
    *,
    top_k: int | None,
    threshold: float | None,
    writes: bool,
) -> RecallSource:
    """A checked :class:`RecallSource` (what the builder's ``rag``/``memory`` make).

    Raises:
        DefinitionError: An empty id, a source without ``recall`` (or ``write`` when it writes), a
            ``top_k`` below 1, or a threshold that is not a finite number.
    """
    what = f"{'rag' if flavor == 'rag' else 'memory'}({id!r})"
    if not isinstance(id, str) or not id:
        raise DefinitionError(f"{flavor}(): the id must be a non-empty string")
    if not callable(getattr(source, "recall", None)):
        raise DefinitionError(f"{what}: the source must have a recall(query) method")
    if writes and not callable(getattr(source, "write", None)):
        raise DefinitionError(f"{what}: a memory that writes needs a write(turn) method (or write=False)")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise DefinitionError(f"{what}: top_k must be an integer >= 1 or None, got {top_k!r}")
    if threshold is not None and not (
        isinstance(threshold, int | float) and not isinstance(threshold, bool) and math.isfinite(threshold)
    ):
        raise DefinitionError(f"{what}: threshold must be a finite number or None, got {threshold!r}")
    return RecallSource(id, flavor, source, top_k, threshold, writes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RecallRead:
    """One source's memory READ: the ``recall`` event's fields and the segments it injects."""

    fields: dict[str, object]
    """The ``recall`` event's fields."""
    segments: tuple[PromptSegment, ...]
    """One system-prompt segment per kept chunk, best first."""


def read_source(source: RecallSource, query: str, excluded: Sequence[str]) -> RecallRead:
    """Ask ``source`` with ``query``; keep the chunks at or above its threshold, up to ``top_k``.

    Raises:
        TypeError: The source returned something that is not ``(entry_id, text, score)`` triples.
    """
    returned = [_checked(source.id, item) for item in source.source.recall(query)]
    left_out = [entry_id for entry_id, _, _ in returned if entry_id in excluded]
    candidates = sorted(
        (item for item in returned if item[0] not in excluded), key=lambda item: -item[2]
    )  # stable: ties keep the source's order
    passing = [item for item in candidates if source.threshold is None or item[2] >= source.threshold]
    kept = passing if source.top_k is None else passing[: source.top_k]
    chunks = [
        RecalledChunk(entry_id=entry_id, text=text, score=score, rank=rank)
        for rank, (entry_id, text, score) in enumerate(kept, start=1)
    ]
    segments = tuple(
        PromptSegment(
            source=source.flavor,
            injection_id=chunk.entry_id,
            text=chunk.text,
            retrieval=Retrieval(
                score=chunk.score, rank=chunk.rank, threshold=source.threshold, recall_id=source.id
            ),
        )
        for chunk in chunks
    )
    fields: dict[str, object] = {
        "recall_id": source.id,
        "flavor": source.flavor,
        "query": query,
        "top_k": source.top_k,
        "threshold": source.threshold,
        "chunks": chunks,
        "below_threshold": len(candidates) - len(kept),
        "excluded": left_out or None,
    }
    return RecallRead(fields, segments)


def _checked(source_id: str, item: object) -> Recalled:
    if (
        isinstance(item, tuple | list)
        and len(item) == 3
        and isinstance(item[0], str)
        and item[0]
        and isinstance(item[1], str)
        and isinstance(item[2], int | float)
        and not isinstance(item[2], bool)
        and math.isfinite(item[2])
    ):
        return item[0], item[1], float(item[2])
    raise TypeError(
        f"recall source {source_id!r} returned {item!r:.80}: each chunk must be "
        "(entry_id: str, text: str, score: finite number)"
    )


def with_recalled(request: LlmRequest, segments: Sequence[PromptSegment]) -> LlmRequest:
    """``request`` with the turn's recalled chunks after its evaluated segments (outside the evaluator)."""
    if not segments:
        return request
    return request.model_copy(update={"system_prompt": [*request.system_prompt, *segments]})


def write_sources(
    sources: Sequence[RecallSource], memory: TurnMemory, emit: Callable[[dict[str, object]], None]
) -> None:
    """The memory WRITE: each writing source stores ``memory``; one ``memory_write`` per store."""
    for source in sources:
        if not source.writes:
            continue
        store = source.source
        assert isinstance(store, MemoryStore)  # recall_source() checked it has write()
        entry_id = store.write(memory)
        text = f"User asked: {memory.user_message}\nAnswer: {memory.answer}"
        emit(
            {
                "recall_id": source.id,
                "entry_id": entry_id if isinstance(entry_id, str) else None,
                "text": text,
            }
        )

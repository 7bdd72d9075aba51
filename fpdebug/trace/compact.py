"""Schema version 2: an ``llm_call`` stores each prompt segment, message and tool schema once.

In a version 1 trace every ``llm_call`` holds its whole request, so a conversation of *n* calls
writes its history *n* times over: quadratic bytes (issue 22). A version 2 ``llm_call`` writes the
request by reference (docs/trace-contract.md §8.7):

- ``request.system_prompt`` and ``request.tools`` are lists whose items are either the item itself
  (a JSON object, as in version 1) or a reference ``[seq, k]``: item ``k`` of the ``defs`` list of
  the record whose ``seq`` is ``seq``;
- ``request.messages`` is such a list, or ``{"from": seq, "keep": n, "add": [...]}``: the first
  ``n`` messages of the request of the ``llm_call`` at ``seq``, then the items of ``add``;
- ``defs`` (last on the line, left out when empty) holds the items this record is the first to use.

A reference never points forward (``seq`` at most the record's own), so every line stays valid JSON
on its own, a torn tail loses only its own record, and a follower can rebuild each record as it
arrives. The reader (:class:`RequestResolver`) turns each such line back into the version 1 line,
so every consumer validates the same :class:`~fpdebug.trace.schema.LlmCallEvent` as before.

A request written in full (every item inline, ``messages`` a list) is also a valid version 2
record: the writer falls back to it when an item cannot be serialised on the fast path.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from fpdebug.trace.records import well_formed_value
from fpdebug.trace.schema import LlmCallEvent, LlmRequest, Message

__all__ = ["LLM_CALL_PREFIX", "RebuildError", "RequestEncoder", "RequestResolver"]

LLM_CALL_PREFIX = b'{"kind":"llm_call",'
"""How every ``llm_call`` line the writer writes begins (``kind`` first)."""

MAX_CHAIN = 256
"""The longest chain of ``from`` links the writer makes: reading one ``llm_call`` cold follows at
most this many earlier records before it meets a request whose messages are listed in full."""

MAX_ITEMS = 50_000
"""Items the writer remembers; past this it forgets them all and writes each again at next use
(bounded memory for a writer that records many runs)."""

_LISTS = frozenset({"system_prompt", "messages", "tools"})
_IDENTITY_CACHE = 4096  # objects known by identity (kept alive): a run's messages and tools
_RESOLVED_CACHE = 16  # resolved message lists kept (a sequential read needs the last one)
_RECORD_CACHE = 1024  # parsed records kept for their defs

Ref = tuple[int, int]


class RequestEncoder:
    """Writes ``llm_call`` records in the version 2 form; one per writer (not thread-safe: the
    writer calls it under its lock).

    Call :meth:`reset` when a line it encoded was not written (the write failed): what it remembers
    from that line would otherwise be referenced by later ones.
    """

    def __init__(self, *, max_items: int = MAX_ITEMS, max_chain: int = MAX_CHAIN) -> None:
        self.max_items = max_items
        self.max_chain = max_chain
        self._by_content: dict[object, Ref] = {}
        self._by_identity: dict[int, tuple[object, Ref]] = {}
        self._last: OrderedDict[str, tuple[list[Message], int, int]] = OrderedDict()

    def reset(self) -> None:
        """Forget every item and request: the next records define what they use afresh."""
        self._by_content.clear()
        self._by_identity.clear()
        self._last.clear()

    def forget_run(self, run_id: str) -> None:
        """A run ended: its conversation will not be continued, and its objects need not be known."""
        self._last.pop(run_id, None)
        if not self._last:
            # The identity cache keeps the engine's message and tool objects alive; dropped between
            # runs, a long-lived writer holds no graph of them for the garbage collector to walk.
            self._by_identity.clear()

    def encode(self, event: LlmCallEvent) -> bytes | None:
        """The record's version 2 line (newline included), or ``None`` when an item cannot be
        serialised on the fast path (the caller writes the record in full; nothing is remembered)."""
        if len(self._by_content) > self.max_items:
            self.reset()
        try:
            return self._encode(event)
        except PydanticSerializationError:
            self.reset()  # refs to this record's defs may have been remembered
            return None

    def _encode(self, event: LlmCallEvent) -> bytes:
        seq = event.seq
        defs: list[bytes] = []
        request = event.request
        # Segments are rebuilt for every call, so they are known by content: their three strings hash
        # without serialising them. Inlined: a call has a dozen or more, and this runs per record.
        by_content = self._by_content
        segments: list[Ref] = []
        for segment in request.system_prompt:
            key = ("s", segment.source, segment.injection_id, segment.text)
            ref = by_content.get(key)
            if ref is None:
                ref = by_content[key] = (seq, len(defs))
                defs.append(_dump(segment))
            segments.append(ref)
        tools = [self._identity_ref(seq, defs, b"t", t) for t in request.tools]
        messages = self._messages(event, defs)
        # The request's other fields are usually all absent: no call to the serializer for them then.
        rest = _dump(request, exclude=_LISTS) if _has_rest(request) else b"{}"
        # One serializer call for the envelope and the tail, the request left out and spliced back
        # in where it belongs (measured: a third of the cost of two calls with ``include``).
        outer = _dump(event, exclude=_REQUEST)
        at = _tail_start(outer)
        parts = [
            outer[:at],
            b',"request":{"system_prompt":',
            orjson.dumps(segments),
            b',"messages":',
            orjson.dumps(messages),
            b',"tools":',
            orjson.dumps(tools),
            b"," + rest[1:-1] + b"}" if len(rest) > 2 else b"}",
            outer[at:-1],
        ]
        if defs:
            parts += [b',"defs":[', b",".join(defs), b"]"]
        parts.append(b"}\n")
        return b"".join(parts)

    def _messages(self, event: LlmCallEvent, defs: list[bytes]) -> object:
        seq, messages = event.seq, event.request.messages
        previous = self._last.get(event.run_id)
        spec: object = None
        if previous is not None:
            prior, prior_seq, depth = previous
            keep = _common_prefix(messages, prior)
            if keep and depth < self.max_chain:
                added = [self._identity_ref(seq, defs, b"m", m) for m in messages[keep:]]
                spec = {"from": prior_seq, "keep": keep, "add": added}
                self._remember(event.run_id, messages, seq, depth + 1)
        if spec is None:
            spec = [self._identity_ref(seq, defs, b"m", m) for m in messages]
            self._remember(event.run_id, messages, seq, 0)
        return spec

    def _remember(self, run_id: str, messages: list[Message], seq: int, depth: int) -> None:
        self._last[run_id] = (messages, seq, depth)
        self._last.move_to_end(run_id)
        if len(self._last) > 256:
            self._last.popitem(last=False)

    def _identity_ref(self, seq: int, defs: list[bytes], tag: bytes, item: BaseModel) -> Ref:
        # The engine hands the same message and tool objects to call after call: known by identity,
        # they cost no serialisation. The object is kept alive with its ref, so its id stays its own.
        known = self._by_identity.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        data = _dump(item)
        key = (tag, data)
        ref = self._by_content.get(key)
        if ref is None:
            ref = (seq, len(defs))
            defs.append(data)
            self._by_content[key] = ref
        if len(self._by_identity) >= _IDENTITY_CACHE:
            self._by_identity.clear()
        self._by_identity[id(item)] = (item, ref)
        return ref


_REQUEST = frozenset({"request"})
_TAIL_KEYS = (b',"response":', b',"error":', b',"latency_ms":', b',"route":')


def _has_rest(request: LlmRequest) -> bool:
    return not (
        request.temperature is None
        and request.max_tokens is None
        and request.seed is None
        and request.cache_prefix is None
    )


def _tail_start(outer: bytes) -> int:
    """Where the fields after ``request`` begin in the event serialised without it.

    The fields before it are scalars, and ``,"`` never occurs inside a JSON string (its quote would
    be escaped), so the first tail key found is the top-level one: a key nested in a tail field
    comes after that field's own key.
    """
    found = [at for at in (outer.find(key) for key in _TAIL_KEYS) if at != -1]
    return min(found) if found else len(outer) - 1


def _dump(model: BaseModel, **options: Any) -> bytes:
    return type(model).__pydantic_serializer__.to_json(model, exclude_none=True, **options)


def _common_prefix(messages: list[Message], prior: list[Message]) -> int:
    """How many leading messages the two lists share (list equality compares identity first, in C)."""
    count = min(len(messages), len(prior))
    if messages[:count] == prior[:count]:
        return count
    low, high = 0, count  # messages[:low] equal, messages[:high] not
    while high - low > 1:
        middle = (low + high) // 2
        if messages[:middle] == prior[:middle]:
            low = middle
        else:
            high = middle
    return low


# ----------------------------------------------------------------------------------------------
# Reading


class RebuildError(ValueError):
    """A version 2 ``llm_call`` whose references cannot be followed (damaged or missing records)."""


class RequestResolver:
    """Rebuilds version 1 ``llm_call`` lines from version 2 ones (thread-safe).

    Args:
        fetch: The stored bytes of the record whose ``seq`` is the argument, or ``None`` when no
            such line is indexed.
    """

    def __init__(self, fetch: Callable[[int], bytes | None]) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._records: OrderedDict[int, tuple[list[Any], Any]] = OrderedDict()
        self._resolved: OrderedDict[int, list[Any]] = OrderedDict()

    def rebuild(self, raw: bytes) -> bytes:
        """The version 1 line of a stored line (the line itself when it is not a version 2 ``llm_call``).

        Raises:
            RebuildError: A reference cannot be followed.
        """
        if not raw.startswith(LLM_CALL_PREFIX):
            return raw
        try:
            data = _loads(raw)
        except RebuildError:
            return raw  # the classifier explains what is wrong with the line
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            return raw  # the schema explains what is wrong
        seq = data.get("seq")
        if type(seq) is not int:
            return raw
        request = data["request"]
        if "defs" not in data and not _has_references(request):
            return raw  # the request in full (version 1's form, valid in version 2)
        defs = data.pop("defs", [])
        if not isinstance(defs, list):
            raise RebuildError("'defs' is not a list")
        with self._lock:
            for name in ("system_prompt", "tools"):
                if name in request:
                    request[name] = self._items(seq, defs, request[name], name)
            if "messages" in request:
                request["messages"] = self._messages(seq, defs, request["messages"])
        return _dumps(data)

    def _items(self, seq: int, defs: list[Any], items: object, where: str) -> list[Any]:
        if not isinstance(items, list):
            raise RebuildError(f"request.{where} is not a list")
        return [self._item(seq, defs, item, where) for item in items]

    def _item(self, seq: int, defs: list[Any], item: object, where: str) -> object:
        if isinstance(item, dict):
            return item
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int and type(item[1]) is int):
            raise RebuildError(f"request.{where}: {_short(item)} is neither an item nor a [seq, k] reference")
        at, k = item
        if at == seq:
            found = defs
        elif 1 <= at < seq:
            found = self._record(at)[0]
        else:
            raise RebuildError(f"request.{where}: reference [{at}, {k}] does not point to an earlier record")
        if not 0 <= k < len(found):
            raise RebuildError(
                f"request.{where}: reference [{at}, {k}]: record {at} defines {len(found)} item(s)"
            )
        return found[k]

    def _messages(self, seq: int, defs: list[Any], spec: object) -> list[Any]:
        # A chain of ``from`` links is followed iteratively back to a cached or listed request.
        chain: list[tuple[int, list[Any], dict[str, Any]]] = []
        at, at_defs, current = seq, defs, spec
        while isinstance(current, dict):
            base = current.get("from")
            keep = current.get("keep")
            if type(base) is not int or type(keep) is not int or keep < 0:
                raise RebuildError(f"request.messages of record {at}: 'from' and 'keep' must be integers")
            if not 1 <= base < at:
                raise RebuildError(f"request.messages of record {at}: 'from' {base} is not an earlier record")
            chain.append((at, at_defs, current))
            cached = self._resolved.get(base)
            if cached is not None:
                self._resolved.move_to_end(base)
                messages = cached
                break
            at_defs, stored = self._record(base)
            at, current = base, stored
        else:
            messages = self._items(at, at_defs, current, "messages")
            self._keep(at, messages)
        for at, at_defs, link in reversed(chain):
            keep = link["keep"]
            if keep > len(messages):
                raise RebuildError(
                    f"request.messages of record {at}: keeps {keep} of the {len(messages)} messages of "
                    f"record {link['from']}"
                )
            messages = messages[:keep] + self._items(at, at_defs, link.get("add", []), "messages")
            self._keep(at, messages)
        return messages

    def _keep(self, seq: int, messages: list[Any]) -> None:
        self._resolved[seq] = messages
        self._resolved.move_to_end(seq)
        if len(self._resolved) > _RESOLVED_CACHE:
            self._resolved.popitem(last=False)

    def _record(self, seq: int) -> tuple[list[Any], Any]:
        """The defs and the stored ``request.messages`` of the record at ``seq``."""
        cached = self._records.get(seq)
        if cached is not None:
            self._records.move_to_end(seq)
            return cached
        raw = self._fetch(seq)
        if raw is None:
            raise RebuildError(f"refers to record {seq}, which is not in the trace")
        try:
            data = _loads(raw)
        except ValueError:
            raise RebuildError(f"refers to record {seq}, which is not valid JSON") from None
        if not isinstance(data, dict) or data.get("seq") != seq:
            raise RebuildError(f"refers to record {seq}, which cannot be read")
        defs = data.get("defs", [])
        request = data.get("request")
        messages = request.get("messages", []) if isinstance(request, dict) else []
        if not isinstance(defs, list):
            raise RebuildError(f"refers to record {seq}, whose 'defs' is not a list")
        entry = (defs, messages)
        self._records[seq] = entry
        if len(self._records) > _RECORD_CACHE:
            self._records.popitem(last=False)
        return entry


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _has_references(request: dict[str, Any]) -> bool:
    if isinstance(request.get("messages"), dict):
        return True
    return any(
        isinstance(items, list) and any(isinstance(item, list) for item in items)
        for items in (request.get("system_prompt"), request.get("messages"), request.get("tools"))
    )


_LONG_NUMBER = re.compile(rb"[0-9]{19}")
"""Digits enough for an integer orjson would read as a float (past 64 bits)."""


def _loads(raw: bytes) -> Any:
    try:
        if _LONG_NUMBER.search(raw) is None:
            return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    # An integer past 64 bits (read exactly here) or a lone surrogate escape (repaired as the
    # classifier repairs it); NaN and Infinity are refused, so the classifier names them.
    try:
        return well_formed_value(json.loads(raw, parse_constant=_refuse_constant))
    except (ValueError, RecursionError) as error:
        raise RebuildError(f"not valid JSON: {error}") from None


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _dumps(data: object) -> bytes:
    try:
        return orjson.dumps(data)
    except TypeError:  # an integer past 64 bits
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()

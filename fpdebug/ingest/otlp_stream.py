"""ONE large OTLP request, a JSON document or a protobuf body, read in bounded memory.

A collector's JSON Lines file is read line by line (:func:`fpdebug.ingest.otlp_decode.iter_file`);
this module is for a file, or a POST body, that is a single ``ExportTraceServiceRequest`` (or
``ExportLogsServiceRequest``) however large. Neither the bytes nor the parsed request are held
whole: memory grows with the largest single span (or resource, or scope), never with the file.

Two passes over a seekable file:

1. :func:`plan` walks the structure, the three outer levels only (request → ``resourceSpans`` →
   ``scopeSpans`` → ``spans``), and decodes each span just far enough to learn its trace. It
   records where each resource and scope is (they may come after their spans: JSON members and
   protobuf fields may be in any order), and the ordinal of the last span of each trace, so the
   importer knows when a trace is complete and can be converted and forgotten. What it keeps
   grows with the number of resources, scopes and traces, not with spans or bytes.
2. :func:`records` walks again and yields every span (or log record) fully decoded, each with its
   resource and scope.

**JSON** is split by a small scanner (a regular expression finds the next bracket or string;
strings are skipped whole), each span is parsed by ``orjson`` and ``google.protobuf.json_format``
into the real ``Span`` message. camelCase and snake_case member names are both read, ids in hex
or base64, as :func:`~fpdebug.ingest.otlp_decode.decode_json_object` reads them.

**Protobuf**: the outer messages are walked by their tags and lengths, with seeks
(``ExportTraceServiceRequest.resource_spans`` = 1; ``ResourceSpans.resource`` = 1, ``scope_spans``
= 2, ``schema_url`` = 3; ``ScopeSpans.scope`` = 1, ``spans`` = 2, ``schema_url`` = 3; the logs
request has the same numbers). Every ``Span``, ``LogRecord``, ``Resource`` and
``InstrumentationScope`` is parsed by ``opentelemetry-proto`` (``Span.FromString``), so its
content is never read by hand. A truncated or corrupt body is an :class:`OtlpDecodeError` naming
the byte offset.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TypeAlias

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from fpdebug.ingest.otlp_decode import (
    OtlpDecodeError,
    OtlpLog,
    OtlpSpan,
    log_from_proto,
    normalise_ids,
    resource_attributes,
    scope_name,
    span_from_proto,
)

__all__ = ["Leaf", "Part", "Plan", "Signal", "leaves", "part", "plan", "records"]

Signal: TypeAlias = Literal["traces", "logs"]
"""Which request: ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest``."""

CHUNK = 1 << 20
"""Bytes read at a time."""

_OUTER: dict[str, Signal] = {
    "resourceSpans": "traces",
    "resource_spans": "traces",
    "resourceLogs": "logs",
    "resource_logs": "logs",
}
_MIDDLE: dict[Signal, frozenset[str]] = {
    "traces": frozenset({"scopeSpans", "scope_spans"}),
    "logs": frozenset({"scopeLogs", "scope_logs"}),
}
_LEAF: dict[Signal, frozenset[str]] = {
    "traces": frozenset({"spans"}),
    "logs": frozenset({"logRecords", "log_records"}),
}
_SCHEMA = frozenset({"schemaUrl", "schema_url"})
_LEAF_TYPE: dict[Signal, type[Span] | type[LogRecord]] = {"traces": Span, "logs": LogRecord}

_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_RUN = re.compile(rb'(?:[^"{}\[\]]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.S)
_SCALAR = re.compile(rb"-?[0-9][0-9.eE+\-]*|true|false|null")
_HEX = re.compile(r"^[0-9a-fA-F]{32}$")


@dataclass(slots=True)
class Part:
    """A resource or a scope of the request: where its message is, and its schema URL."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    """Byte ranges of its message (protobuf: every occurrence, merged as protobuf merges them)."""
    schema_url: str = ""
    """Its ``schemaUrl``."""
    body: tuple[int, int] = (0, 0)
    """Protobuf: the range of the ``ResourceSpans`` / ``ScopeSpans`` message itself."""
    scopes: list[Part] = field(default_factory=list)
    """A resource's scopes, in order."""


@dataclass(slots=True)
class Plan:
    """What :func:`plan` learnt of a request: enough to read it again span by span."""

    name: str
    """The file's name, for messages."""
    encoding: Literal["otlp-json", "otlp-protobuf"]
    """How it is encoded."""
    signal: Signal
    """Traces or logs."""
    size: int
    """Its size in bytes."""
    resources: list[Part] = field(default_factory=list)
    """Its resources, each with its scopes."""
    ends: set[int] = field(default_factory=set)
    """Ordinals (in :func:`leaves` order) of the last span of each trace."""
    leaves: int = 0
    """Spans (or log records) in it."""


@dataclass(slots=True)
class Leaf:
    """One span or log record, parsed, with where it sits."""

    resource: int
    """Index into :attr:`Plan.resources`."""
    scope: int
    """Index into that resource's scopes."""
    message: Span | LogRecord
    """The parsed message."""
    offset: int
    """Its first byte in the file."""


def _size(handle: IO[bytes]) -> int:
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(0)
    return size


class _Json:
    """A forward scanner over a JSON document: members and items of the outer levels, values whole."""

    def __init__(self, handle: IO[bytes], name: str, size: int) -> None:
        self.handle = handle
        self.name = name
        self.size = size
        self.buf = bytearray()
        self.base = 0  # the file offset of buf[0]
        self.pos = 0  # the file offset of the scanner

    def error(self, what: str, at: int | None = None, *, syntax: bool = False) -> OtlpDecodeError:
        """``syntax``: the bytes are not JSON at all; else JSON, but not the shape of an OTLP request."""
        where = self.pos if at is None else at
        problem = "not JSON" if syntax else "not a valid OTLP/JSON document"
        return OtlpDecodeError(f"{self.name}: {problem} at byte {where}: {what}")

    def truncated(self) -> OtlpDecodeError:
        return OtlpDecodeError(
            f"{self.name}: truncated OTLP/JSON: the document ends at byte {self.size}, inside an unfinished value"
        )

    def _fill(self) -> bool:
        end = self.base + len(self.buf)
        self.handle.seek(end)
        chunk = self.handle.read(CHUNK)
        self.buf += chunk
        return bool(chunk)

    def drop(self) -> None:
        """Forget what lies before the scanner (kept until it is worth a move)."""
        cut = self.pos - self.base
        if cut >= CHUNK:
            del self.buf[:cut]
            self.base = self.pos

    def peek(self) -> int:
        """The next byte that is not white space (the scanner moves to it)."""
        while True:
            at = _WS.match(self.buf, self.pos - self.base).end()  # type: ignore[union-attr]
            self.pos = self.base + at
            if at < len(self.buf):
                return self.buf[at]
            if not self._fill():
                raise self.truncated()

    def at_end(self) -> bool:
        """Whether only white space is left."""
        try:
            self.peek()
        except OtlpDecodeError:
            return True
        return False

    def expect(self, char: bytes) -> None:
        found = self.peek()
        if found != char[0]:
            raise self.error(f"expected {char.decode()!r}, found {chr(found)!r}", syntax=True)
        self.pos += 1

    def _string_end(self, start: int) -> int:
        while True:
            match = _STRING.match(self.buf, start - self.base)
            if match is not None:
                return self.base + match.end()
            if not self._fill():
                raise self.truncated()

    def skip(self) -> None:
        """Move past the value at the scanner (strings and brackets are balanced; orjson checks the rest)."""
        first = self.peek()
        if first == 0x22:  # "
            self.pos = self._string_end(self.pos)
            return
        if first not in (0x7B, 0x5B):  # { [
            while len(self.buf) - (self.pos - self.base) < 64 and self._fill():
                pass
            match = _SCALAR.match(self.buf, self.pos - self.base)
            if match is None:
                raise self.error(f"unexpected {chr(first)!r}", syntax=True)
            self.pos = self.base + match.end()
            return
        depth, at = 0, self.pos
        while True:
            # one C-level match runs over everything up to the next bracket, strings whole
            index = _RUN.match(self.buf, at - self.base).end()  # type: ignore[union-attr]
            if index == len(self.buf) or self.buf[index] == 0x22:  # the buffer ends, maybe in a string
                at = self.base + index
                if not self._fill():
                    self.pos = at
                    raise self.truncated()
                continue
            depth += 1 if self.buf[index] in (0x7B, 0x5B) else -1
            at = self.base + index + 1
            if depth == 0:
                self.pos = at
                return

    def value(self) -> tuple[int, int]:
        """The byte range of the value at the scanner (which moves past it)."""
        start = self.pos
        self.skip()
        return start, self.pos

    def load(self, start: int, end: int) -> Any:
        """The value in ``[start, end)``, parsed (it must still be in the buffer)."""
        try:
            return orjson.loads(self.buf[start - self.base : end - self.base])
        except orjson.JSONDecodeError as error:
            raise self.error(str(error), start, syntax=True) from error

    def members(self) -> Iterator[str]:
        """The keys of the object at the scanner; after each, the caller consumes its value."""
        self.expect(b"{")
        if self.peek() == 0x7D:
            self.pos += 1
            return
        while True:
            if self.peek() != 0x22:
                raise self.error("expected a member name", syntax=True)
            start = self.pos
            self.pos = self._string_end(start)
            key = self.load(start, self.pos)
            self.expect(b":")
            self.peek()
            yield key
            following = self.peek()
            self.pos += 1
            if following == 0x7D:
                return
            if following != 0x2C:
                raise self.error(f"expected ',' or '}}', found {chr(following)!r}", self.pos - 1, syntax=True)

    def items(self) -> Iterator[int]:
        """The items of the array at the scanner (yields each one's offset; the caller consumes it)."""
        self.expect(b"[")
        if self.peek() == 0x5D:
            self.pos += 1
            return
        while True:
            self.peek()
            self.drop()
            yield self.pos
            following = self.peek()
            self.pos += 1
            if following == 0x5D:
                return
            if following != 0x2C:
                raise self.error(f"expected ',' or ']', found {chr(following)!r}", self.pos - 1, syntax=True)

    def null(self) -> bool:
        """Skip a ``null`` (which OTLP/JSON reads as absent) and say so."""
        if self.peek() == 0x6E:  # n
            self.skip()
            return True
        return False

    def array(self, what: str) -> Iterator[int]:
        """:meth:`items` of an array member (``null``: none)."""
        if self.null():
            return iter(())
        if self.peek() != 0x5B:
            raise self.error(f"{what} is not an array")
        return self.items()

    def obj(self, what: str) -> Iterator[str]:
        """:meth:`members` of an object (``null``: none)."""
        if self.null():
            return iter(())
        if self.peek() != 0x7B:
            raise self.error(f"{what} is not an object")
        return self.members()

    def schema_url(self) -> str:
        start, end = self.value()
        url = self.load(start, end)
        if url is not None and not isinstance(url, str):
            raise self.error("schemaUrl is not a string", start)
        return url or ""


def _json_part(scan: _Json, what: str) -> tuple[int, int] | None:
    """The range of a resource or scope object (``None`` for ``null``)."""
    if scan.null():
        return None
    if scan.peek() != 0x7B:
        raise scan.error(f"the {what} is not an object")
    return scan.value()


def _json_walk(
    scan: _Json, signals: frozenset[str], parts: dict[str, list[Part]]
) -> Iterator[tuple[Signal, int, int, int, int]]:
    """Walk a document; yield (signal, resource, scope, start, end) of each leaf; fill ``parts``."""
    for key in scan.obj("the document"):
        signal = _OUTER.get(key)
        if signal is None or signal not in signals:
            scan.load(*scan.value())  # another member: checked, not kept
            continue
        resources = parts.setdefault(signal, [])
        for _item in scan.array(key):
            resource = Part()
            resources.append(resource)
            for member in scan.obj("a resource's spans"):
                if member == "resource":
                    got = _json_part(scan, "resource")
                    resource.ranges = [got] if got else []
                elif member in _SCHEMA:
                    resource.schema_url = scan.schema_url()
                elif member in _MIDDLE[signal]:
                    yield from _json_scopes(scan, signal, resources, resource, member)
                else:
                    scan.load(*scan.value())
    if not scan.at_end():
        raise scan.error("more than one JSON value (JSON Lines start each request on a new line)")


def _json_scopes(
    scan: _Json, signal: Signal, resources: list[Part], resource: Part, key: str
) -> Iterator[tuple[Signal, int, int, int, int]]:
    for _item in scan.array(key):
        scope = Part()
        resource.scopes.append(scope)
        for member in scan.obj("a scope's spans"):
            if member == "scope":
                got = _json_part(scan, "scope")
                scope.ranges = [got] if got else []
            elif member in _SCHEMA:
                scope.schema_url = scan.schema_url()
            elif member in _LEAF[signal]:
                for _leaf in scan.array(member):
                    if scan.peek() != 0x7B:
                        raise scan.error(f"an item of {member} is not an object")
                    start, end = scan.value()
                    yield signal, len(resources) - 1, len(resource.scopes) - 1, start, end
            else:
                scan.load(*scan.value())


def _from_json(obj: Any, message: Message, what: str, name: str, offset: int, signal: Signal) -> Message:
    try:
        json_format.ParseDict(normalise_ids(obj), message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise OtlpDecodeError(
            f"{name}: not a valid OTLP/JSON {signal} request: the {what} at byte {offset}: {error}"
        ) from error
    return message


def _json_trace_key(value: Any) -> str:
    """A span's ``traceId`` as hex, read the way ``normalise_ids`` and ``json_format`` read it."""
    if isinstance(value, str):
        if _HEX.match(value):
            return value.lower()
        try:
            return base64.b64decode(value + "=" * (-len(value) % 4)).hex()
        except (binascii.Error, ValueError):
            pass
    return repr(value)


def _json_plan(
    handle: IO[bytes],
    name: str,
    size: int,
    signal: Signal | None,
    validate: bool,
    progress: Callable[[int], None] | None,
) -> Plan:
    scan = _Json(handle, name, size)
    parts: dict[str, list[Part]] = {}
    last: dict[str, int] = {}
    counts: dict[str, int] = {"traces": 0, "logs": 0}
    signals = frozenset(_OUTER.values()) if signal is None else frozenset({signal})
    for kind, _r, _s, start, end in _json_walk(scan, signals, parts):
        obj = scan.load(start, end)
        ordinal = counts[kind]
        counts[kind] += 1
        if validate:
            _from_json(obj, _LEAF_TYPE[kind](), "span", name, start, kind)
        if kind == "traces":
            last[_json_trace_key(obj.get("traceId", obj.get("trace_id")))] = ordinal
        if progress is not None:
            progress(end)
    chosen = signal or ("traces" if "traces" in parts else "logs" if "logs" in parts else None)
    if chosen is None:
        raise OtlpDecodeError(f"{name}: JSON that is not OTLP (no resourceSpans or resourceLogs)")
    result = Plan(name, "otlp-json", chosen, size, parts.get(chosen, []), leaves=counts[chosen])
    result.ends = set(last.values()) if chosen == "traces" else set()
    for resource in result.resources:  # small, and checked before anything is converted
        _part(handle, result, resource, Resource, "resource")
        for scope in resource.scopes:
            _part(handle, result, scope, InstrumentationScope, "scope")
    return result


def _json_leaves(handle: IO[bytes], plan: Plan, progress: Callable[[int], None] | None) -> Iterator[Leaf]:
    scan = _Json(handle, plan.name, plan.size)
    leaf_type = _LEAF_TYPE[plan.signal]
    for _kind, r, s, start, end in _json_walk(scan, frozenset({plan.signal}), {}):
        message = _from_json(scan.load(start, end), leaf_type(), "span", plan.name, start, plan.signal)
        yield Leaf(r, s, message, start)  # type: ignore[arg-type]
        if progress is not None:
            progress(end)


class _Wire:
    """The protobuf wire format's tags and lengths, read with seeks (never a whole message)."""

    def __init__(self, handle: IO[bytes], name: str, size: int) -> None:
        self.handle = handle
        self.name = name
        self.size = size

    def corrupt(self, what: str, at: int) -> OtlpDecodeError:
        return OtlpDecodeError(
            f"{self.name}: not a valid OTLP/protobuf body (truncated or corrupt) at byte {at}: {what}"
        )

    def read(self, start: int, end: int) -> bytes:
        self.handle.seek(start)
        data = self.handle.read(end - start)
        if len(data) != end - start:
            raise self.corrupt(f"the file ends at byte {start + len(data)}, inside a field", start)
        return data

    def _varint(self, head: bytes, index: int, at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if index >= len(head) or shift > 63:
                raise self.corrupt("a varint that does not end", at)
            byte = head[index]
            value |= (byte & 0x7F) << shift
            index += 1
            if not byte & 0x80:
                return value, index
            shift += 7

    def fields(self, start: int, end: int, what: str) -> Iterator[tuple[int, int, int, int]]:
        """(number, wire type, value start, value end) of each field of the message in ``[start, end)``."""
        at = start
        while at < end:
            self.handle.seek(at)
            head = self.handle.read(min(20, end - at))
            tag, index = self._varint(head, 0, at)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise self.corrupt(f"field number 0 in the {what}", at)
            if wire == 0:
                _value, index = self._varint(head, index, at)
                first, last = at, at + index
            elif wire in (1, 5):
                first = at + index
                last = first + (8 if wire == 1 else 4)
            elif wire == 2:
                length, index = self._varint(head, index, at)
                first = at + index
                last = first + length
            else:
                raise self.corrupt(f"wire type {wire} (field {number} of the {what})", at)
            if last > end:
                ends = "the body ends" if end == self.size else "its message ends"
                raise self.corrupt(
                    f"field {number} of the {what} runs to byte {last}, but {ends} at byte {end}", at
                )
            yield number, wire, first, last
            at = last

    def message_fields(self, start: int, end: int, what: str) -> Iterator[tuple[int, int, int]]:
        """Like :meth:`fields`, for OTLP's outer messages: fields 1-3 must be length-delimited."""
        for number, wire, first, last in self.fields(start, end, what):
            if number in (1, 2, 3) and wire != 2:
                raise self.corrupt(f"field {number} of the {what} has wire type {wire}, not 2", first)
            if number in (1, 2, 3):
                yield number, first, last


def _wire_walk(wire: _Wire, resources: list[Part]) -> Iterator[tuple[int, int, int, int]]:
    """Walk a body; yield (resource, scope, start, end) of each leaf; fill ``resources``."""
    for number, first, last in wire.message_fields(0, wire.size, "request"):
        if number != 1:
            continue
        resource = Part(body=(first, last))
        resources.append(resource)
        for field_number, start, end in wire.message_fields(first, last, "resource's spans"):
            if field_number == 1:
                resource.ranges.append((start, end))
            elif field_number == 3:
                resource.schema_url = _utf8(wire, start, end)
            else:
                scope = Part(body=(start, end))
                resource.scopes.append(scope)
                for inner, leaf_start, leaf_end in wire.message_fields(start, end, "scope's spans"):
                    if inner == 1:
                        scope.ranges.append((leaf_start, leaf_end))
                    elif inner == 3:
                        scope.schema_url = _utf8(wire, leaf_start, leaf_end)
                    else:
                        yield len(resources) - 1, len(resource.scopes) - 1, leaf_start, leaf_end


def _utf8(wire: _Wire, start: int, end: int) -> str:
    try:
        return wire.read(start, end).decode("utf-8")
    except UnicodeDecodeError as error:
        raise wire.corrupt("a schema URL that is not UTF-8", start) from error


def _parse(wire: _Wire, kind: type[Message], start: int, end: int, what: str) -> Message:
    try:
        return kind.FromString(wire.read(start, end))
    except DecodeError as error:
        raise wire.corrupt(f"the {what} does not parse ({error})", start) from error


def _wire_plan(
    handle: IO[bytes], name: str, size: int, signal: Signal, progress: Callable[[int], None] | None
) -> Plan:
    wire = _Wire(handle, name, size)
    result = Plan(name, "otlp-protobuf", signal, size)
    last: dict[bytes, int] = {}
    leaf_type = _LEAF_TYPE[signal]
    for ordinal, (_r, _s, start, end) in enumerate(_wire_walk(wire, result.resources)):
        message = _parse(wire, leaf_type, start, end, "span" if signal == "traces" else "log record")
        result.leaves = ordinal + 1
        if isinstance(message, Span):
            last[message.trace_id] = ordinal
        if progress is not None:
            progress(end)
    result.ends = set(last.values())
    for resource in result.resources:
        _part(handle, result, resource, Resource, "resource")
        for scope in resource.scopes:
            _part(handle, result, scope, InstrumentationScope, "scope")
    return result


def _wire_leaves(handle: IO[bytes], plan: Plan, progress: Callable[[int], None] | None) -> Iterator[Leaf]:
    wire = _Wire(handle, plan.name, plan.size)
    leaf_type = _LEAF_TYPE[plan.signal]
    for r, resource in enumerate(plan.resources):
        for s, scope in enumerate(resource.scopes):
            for number, start, end in wire.message_fields(*scope.body, "scope's spans"):
                if number == 2:
                    yield Leaf(r, s, _parse(wire, leaf_type, start, end, "span"), start)  # type: ignore[arg-type]
                    if progress is not None:
                        progress(end)


def _part(handle: IO[bytes], plan: Plan, part: Part, kind: type[Message], what: str) -> Message:
    """The resource or scope message of ``part`` (empty when absent)."""
    if not part.ranges:
        return kind()
    if plan.encoding == "otlp-protobuf":
        wire = _Wire(handle, plan.name, plan.size)
        data = b"".join(wire.read(start, end) for start, end in part.ranges)
        try:
            return kind.FromString(data)
        except DecodeError as error:
            raise wire.corrupt(f"the {what} does not parse ({error})", part.ranges[0][0]) from error
    start, end = part.ranges[0]
    handle.seek(start)
    try:
        obj = orjson.loads(handle.read(end - start))
    except orjson.JSONDecodeError as error:
        raise OtlpDecodeError(f"{plan.name}: the {what} at byte {start} is not JSON: {error}") from error
    return _from_json(obj, kind(), what, plan.name, start, plan.signal)


def plan(
    handle: IO[bytes],
    encoding: Literal["otlp-json", "otlp-protobuf"],
    *,
    name: str,
    signal: Signal | None = None,
    validate: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Pass one over a seekable request: its structure, and where each trace ends.

    Args:
        handle: The file, seekable, opened in binary.
        encoding: JSON document or protobuf body.
        name: For messages.
        signal: Traces or logs, when known (a collector's endpoint says); otherwise JSON says by
            its member name, and a protobuf body is read as traces, then as logs if it is not.
        validate: Also parse each JSON span into its message, so that :func:`records` cannot
            fail later (protobuf spans are always parsed).
        progress: Called with the offset reached.

    Raises:
        OtlpDecodeError: Not OTLP, truncated or corrupt; the message names the byte.
    """
    size = _size(handle)
    if encoding == "otlp-json":
        return _json_plan(handle, name, size, signal, validate, progress)
    if signal is not None:
        return _wire_plan(handle, name, size, signal, progress)
    try:
        traces = _wire_plan(handle, name, size, "traces", progress)
    except OtlpDecodeError as error:
        # a logs body fails as traces inside its records (a LogRecord is not a Span), never in
        # the outer messages, which the two requests share
        try:
            return _wire_plan(handle, name, size, "logs", progress)
        except OtlpDecodeError:
            raise error from None
    if traces.leaves:
        return traces
    logs = _wire_plan(handle, name, size, "logs", None)
    return logs if logs.leaves else traces


def leaves(handle: IO[bytes], plan: Plan, *, progress: Callable[[int], None] | None = None) -> Iterator[Leaf]:
    """Pass two: every span (or log record) of the request, parsed, in file order.

    ``progress`` is called with the offset reached.
    """
    if plan.encoding == "otlp-json":
        return _json_leaves(handle, plan, progress)
    return _wire_leaves(handle, plan, progress)


def part(handle: IO[bytes], plan: Plan, resource: int, scope: int | None = None) -> Message:
    """The ``Resource`` (or, with ``scope``, the ``InstrumentationScope``) at those indexes."""
    owner = plan.resources[resource]
    if scope is None:
        return _part(handle, plan, owner, Resource, "resource")
    return _part(handle, plan, owner.scopes[scope], InstrumentationScope, "scope")


def records(
    handle: IO[bytes], plan: Plan, *, progress: Callable[[int], None] | None = None
) -> Iterator[OtlpSpan | OtlpLog]:
    """Pass two, decoded: :class:`OtlpSpan` (or :class:`OtlpLog`) for each leaf, in order."""
    current: tuple[int, int] | None = None
    resource: dict[str, Any] = {}
    scope = ""
    for leaf in leaves(handle, plan, progress=progress):
        if isinstance(leaf.message, LogRecord):
            yield log_from_proto(leaf.message)
            continue
        if current is None or current[0] != leaf.resource:
            resource = resource_attributes(part(handle, plan, leaf.resource))  # type: ignore[arg-type]
        if current != (leaf.resource, leaf.scope):
            scope = scope_name(part(handle, plan, leaf.resource, leaf.scope))  # type: ignore[arg-type]
        current = (leaf.resource, leaf.scope)
        yield span_from_proto(leaf.message, scope, resource)

"""One span's OTLP/JSON text, written straight from a :class:`~fpdebug.export.spans.SpanRecord`.

The reference path (:mod:`fpdebug.export.otlp`) builds an SDK ``ReadableSpan``, encodes it to
protobuf with the SDK's encoder, turns the message into a dict with ``MessageToDict``, re-spells
its ids in hex and prints it with ``json.dumps(indent=2)``, whose indenting encoder is pure Python.
At 10,000 demo-shaped events that was 12 s against 0.13 s to parse the file (issue 22). This module
builds the very dict ``MessageToDict`` would give, field for field, and prints it with orjson,
then re-spells what orjson spells differently from ``json.dumps(ensure_ascii=True)``:

- every character outside printable ASCII inside a string (orjson writes UTF-8 and a bare DEL) as
  ``\\uXXXX``, astral ones as a surrogate pair, as :mod:`json` does;
- a float as ``float.__repr__`` (``1e+16``, where orjson writes ``1e16``), through a fragment.

A string orjson refuses (a lone surrogate) sends that span through ``json.dumps``. The proto3 JSON
rules mirrored here: a field at its default value is left out (an empty name, a zero time, an
empty attribute list, a status without a message); a oneof member is always written, empty or not
(``{"stringValue": ""}``, ``{"arrayValue": {}}``); 64-bit integers are decimal strings; enums are
integers; ids are hex (the OTLP/JSON rule).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, cast

import orjson

from fpdebug.export.spans import SpanRecord, attribute

__all__ = ["ItemRedactor", "span_json", "span_to_dict"]

_KIND = {"internal": 1, "client": 3}  # SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT
_FLAGS = 256  # SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK: the parent, if any, is local
_STATUS_ERROR = 2
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x00-\x7e]")


def _value(value: object, plain: bool) -> dict[str, Any]:
    """An ``AnyValue`` as ``MessageToDict`` gives it (the SDK encoder's type order: bool before int);
    ``plain`` keeps floats as floats (for :func:`json.dumps`), else as orjson fragments."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _double(value, plain)}
    if isinstance(value, list | tuple):
        items = [_value(item, plain) for item in value]
        return {"arrayValue": {"values": items} if items else {}}
    if isinstance(value, Mapping):
        pairs = [_key_value(str(key), item, plain) for key, item in value.items()]
        return {"kvlistValue": {"values": pairs} if pairs else {}}
    # attribute() never gives anything else; the SDK encoder would log and drop it.
    raise TypeError(f"not an OTLP attribute value: {type(value).__name__}")


def _double(value: float, plain: bool) -> object:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value if plain else orjson.Fragment(repr(value))  # json.dumps spells floats as repr does


def _key_value(key: str, value: object, plain: bool) -> dict[str, Any]:
    pair: dict[str, Any] = {"key": key} if key else {}
    pair["value"] = _value(value, plain)
    return pair


def _attribute_list(attributes: Mapping[str, object], plain: bool) -> list[dict[str, Any]]:
    pairs = [_key_value(key, value, plain) for key, value in attributes.items()]
    if plain:  # the slow path: drop what protobuf cannot hold, as the SDK's encoder does (it logs)
        pairs = [pair for pair in pairs if _utf8(pair)]
    return pairs


def _utf8(node: object) -> bool:
    """Whether every string in ``node`` (keys included) can be encoded as UTF-8 (no lone surrogate)."""
    if isinstance(node, str):
        try:
            node.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(node, dict):
        return all(_utf8(key) and _utf8(value) for key, value in node.items())
    if isinstance(node, list):
        return all(_utf8(item) for item in node)
    return True


def span_to_dict(span: SpanRecord, redact: Callable[[Any], Any], *, plain: bool = False) -> dict[str, Any]:
    """The span as ``request_to_json`` shows it inside ``scopeSpans[0].spans``.

    Args:
        span: The record.
        redact: Applied to the attributes (as a dict), each event's attributes and the status
            message, exactly where :func:`~fpdebug.export.otlp.to_readable_spans` applies it.
        plain: Floats as floats, not orjson fragments, and attributes holding a lone surrogate
            dropped (the SDK's encoder logs and drops them): for :func:`json.dumps`.
    """
    out: dict[str, Any] = {
        "traceId": f"{span.trace_id:032x}",
        "spanId": f"{span.span_id:016x}",
    }
    if span.parent_span_id is not None:
        out["parentSpanId"] = f"{span.parent_span_id:016x}"
    if span.name:
        out["name"] = span.name
    out["kind"] = _KIND[span.kind]
    if span.start_ns:
        out["startTimeUnixNano"] = str(span.start_ns)
    if span.end_ns:
        out["endTimeUnixNano"] = str(span.end_ns)
    pairs = _pairs(span.attributes, redact, plain)
    if pairs:
        out["attributes"] = pairs
    if span.events:
        events = []
        for event in span.events:
            encoded: dict[str, Any] = {}
            if event.time_ns:
                encoded["timeUnixNano"] = str(event.time_ns)
            if event.name:
                encoded["name"] = event.name
            event_pairs = _pairs(event.attributes, redact, plain)
            if event_pairs:
                encoded["attributes"] = event_pairs
            events.append(encoded)
        out["events"] = events
    status: dict[str, Any] = {}
    if span.status == "error":
        message = redact(span.status_message)
        if isinstance(message, str) and message:
            status["message"] = message
        status["code"] = _STATUS_ERROR
    out["status"] = status
    out["flags"] = _FLAGS
    return out


def _pairs(
    attributes: Mapping[str, object], redact: Callable[[Any], Any], plain: bool
) -> list[dict[str, Any]]:
    """The attributes redacted (as one dict) and encoded as an OTLP key-value list."""
    if not plain and isinstance(redact, ItemRedactor):
        pairs = redact.pairs(attributes)
        if pairs is not None:
            return pairs
    redacted = redact({key: attribute(value) for key, value in attributes.items()})
    return _attribute_list(redacted, plain) if redacted else []


_CACHED_TEXT = 256  # longer strings are rarely repeated: redacted each time, never kept
_CACHED_LIST = 32  # a list of at most this many short strings (ids, names) is kept too
_CACHE_SIZE = 1 << 13  # items: a few MB at most


def _slot(key: str, value: object) -> tuple[object, ...] | None:
    """What an attribute item is cached under, or ``None`` when it is not cached.

    The value's type is part of it (``1``, ``True`` and ``1.0`` are equal keys of a dict), a float
    is keyed by its ``repr`` (``0.0 == -0.0``, and the two print differently), and a list only when
    every item is a short ``str`` (so the tuple of its items says everything it prints).
    """
    kind = type(value)
    if kind is str:
        return (key, kind, value) if len(cast(str, value)) <= _CACHED_TEXT else None
    if kind is int or kind is bool or value is None:
        return (key, kind, value)
    if kind is float:
        return (key, kind, repr(value))
    if kind is list:
        items = tuple(cast("list[object]", value))
        if len(items) <= _CACHED_LIST and all(
            type(item) is str and len(item) <= _CACHED_TEXT for item in items
        ):
            return (key, kind, items)
    return None


class ItemRedactor:
    """``redact_value`` of an attribute dict, one ``key: value`` item at a time, repeated items cached.

    ``Redactor.redact_value`` judges each item of a dict on its own (a value with its key), so the
    dict's result is the items' results in order. Most items of a trace's spans recur (the agent,
    the model, a status, a token count) and judging one costs a JSON round trip through the rules:
    a short scalar item is judged once and its result reused. The cache is cleared when full, so
    memory stays bounded whatever the trace.

    Args:
        redact: The redactor's ``redact_value``.
    """

    def __init__(self, redact: Callable[[Any], Any]) -> None:
        self.redact = redact
        self._cache: dict[tuple[object, ...], tuple[object, object]] = {}
        self._pairs: dict[tuple[object, ...], dict[str, Any]] = {}

    def pairs(self, attributes: Mapping[str, object]) -> list[dict[str, Any]] | None:
        """``_attribute_list(self({k: attribute(v) …}))``: the encoded pairs, each repeated one reused.

        An item judged before (the same key and value) costs one dict lookup: neither
        :func:`~fpdebug.export.spans.attribute`, nor the redactor, nor the pair's dicts are made
        again. ``None`` when redaction changed a key: two keys redacted alike collapse into one
        item of a dict, which the caller's dict path then reproduces.
        """
        cache = self._pairs
        out: list[dict[str, Any]] = []
        for key, raw in attributes.items():
            kind = type(raw)
            if kind is int or (kind is str and len(raw) <= _CACHED_TEXT):  # type: ignore[arg-type]
                slot: tuple[object, ...] | None = (key, kind, raw)  # _slot's answer, without the call
            else:
                slot = _slot(key, raw)
            pair = cache.get(slot) if slot is not None else None
            if pair is None:
                ((new_key, value),) = self.redact({key: attribute(raw)}).items()
                if new_key != key:
                    return None
                pair = _key_value(key, value, False)
                if slot is not None:
                    if len(cache) >= _CACHE_SIZE:
                        cache.clear()
                    cache[slot] = pair
            out.append(pair)
        return out

    def __call__(self, value: Any) -> Any:
        """The value redacted as ``redact`` would (a dict item by item, anything else as it is)."""
        if type(value) is not dict:
            return self.redact(value)
        out: dict[object, object] = {}
        for key, item in value.items():
            slot = _slot(key, item) if type(item) is not list else None
            if slot is not None:
                done = self._cache.get(slot)
                if done is None:
                    if len(self._cache) >= _CACHE_SIZE:
                        self._cache.clear()
                    ((new_key, new_item),) = self.redact({key: item}).items()
                    done = self._cache[slot] = (new_key, new_item)
                out[done[0]] = done[1]
            else:
                ((new_key, new_item),) = self.redact({key: item}).items()
                out[new_key] = new_item
        return out


def _ascii_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def span_json(span: SpanRecord, redact: Callable[[Any], Any]) -> str:
    """The span's text as ``json.dumps(span_to_dict(...), indent=2, ensure_ascii=True)`` prints it."""
    document = span_to_dict(span, redact)
    try:
        text = orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # a lone surrogate orjson will not encode: the reference printer takes it
        document = span_to_dict(span, redact, plain=True)
        for holder in (document, *document.get("events", ())):
            if holder.get("attributes") == []:  # every attribute dropped: the field is at its default
                del holder["attributes"]
        return json.dumps(document, indent=2, ensure_ascii=True)
    if text.isascii() and "\x7f" not in text:
        return text
    return _NOT_PRINTABLE_ASCII.sub(_ascii_escape, text)

"""The sources in reach of the honesty layers, JSON paths into them, and whether one holds a value.

A :class:`Source` is one thing a value can have come from: a previous tool result as the model read
it, a user message, a value the app vouches for (an external ground) or a document the app declared.
Its content is JSON when the text parses as a JSON object or array (then every scalar, and every
object key, is a *leaf* with a JSON path such as ``$.items[0].sku``; a key's path is the path of the
entry under it), else one text leaf.

Whether a leaf holds a value (:func:`leaf_holds`):

- a **number** (not a bool) is held by an equal JSON number, or by a text stating that magnitude
  (``1250`` is held by ``"Total: $1,250.00"``; never by the digits of an id such as ``ORD-1250``);
- a **string** is held by a text containing it as whole tokens, ignoring case and spacing
  (``"ord-1234"`` by ``"Order ORD-1234 shipped"``, never ``"ORD-12"`` by ``"ORD-1234"``), or —
  when the string is itself exactly one value — by a text or number stating the same value
  (``"2024-05-01"`` by ``"May 1st, 2024"``, ``"1250"`` by the JSON number ``1250.0``); an empty
  string is held by nothing;
- a **bool** or ``null`` is held only where the model cited it: an equal JSON leaf at the cited
  path. Searched for on its own it would be found everywhere and mean nothing.

A match is lexical evidence, not proof: a small number such as ``1`` is held by many texts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import Literal, TypeAlias

from fpdebug.engine.honesty.values import (
    FoundValue,
    extract_values,
    held_keys,
    normalize_text,
    number_holds,
    number_keys,
    text_contains,
)
from fpdebug.trace.schema import DeclaredSource, ExternalGround

__all__ = [
    "Hit",
    "JsonPathPart",
    "Leaf",
    "Source",
    "SourceKind",
    "child_path",
    "leaf_holds",
    "parse_json",
    "parse_json_path",
    "scalar_leaves",
    "source_of_declared",
    "source_of_ground",
    "source_of_result",
    "source_of_user",
    "values_in",
]

SourceKind: TypeAlias = Literal["tool-result", "user", "external", "declared"]
"""What kind of thing a source is (``ArgumentRow.source`` without ``nowhere``)."""

JsonPathPart: TypeAlias = str | int
"""One step of a JSON path: an object key or a list index."""

Scalar: TypeAlias = str | int | float | Decimal | bool | None


@dataclass(frozen=True, slots=True)
class Leaf:
    """One scalar of a source, where it sits, and what it is.

    Attributes:
        path: Its JSON path, or ``None`` for the single leaf of a text source.
        value: The scalar (JSON floats are read as Decimals, so ``1250.00`` keeps its digits).
        is_key: True when the leaf is an object key rather than a value.
    """

    path: str | None
    value: Scalar
    is_key: bool = False


@dataclass(frozen=True, slots=True)
class Hit:
    """Where a source holds a value.

    Attributes:
        path: The JSON path of the leaf that holds it (``None`` in a text source).
        text: The text that holds it, as written in the source.
    """

    path: str | None
    text: str


# ----------------------------------------------------------------------------------------------
# JSON and JSON paths

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PATH_STEP = re.compile(
    r"\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<index>\d+)\]|\[(?P<quoted>\"(?:[^\"\\]|\\.)*\")\]"
)


def child_path(parent: str, key: JsonPathPart) -> str:
    """The JSON path of a child: ``$.a``, ``$.a[0]``, or ``$["odd key"]`` for other keys.

    Args:
        parent: The parent's path (``$`` for the root).
        key: An object key or a list index.

    Returns:
        The child's path.
    """
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _IDENT.match(key):
        return f"{parent}.{key}"
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def parse_json_path(path: str) -> list[JsonPathPart] | None:
    """Read a JSON path written by :func:`child_path` (``$``, ``.name``, ``[0]``, ``["key"]``).

    Args:
        path: The path.

    Returns:
        Its steps, or ``None`` when it is not such a path.
    """
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    parts: list[JsonPathPart] = []
    at = 1
    while at < len(path):
        m = _PATH_STEP.match(path, at)
        if m is None:
            return None
        if m["name"] is not None:
            parts.append(m["name"])
        elif m["index"] is not None:
            parts.append(int(m["index"]))
        else:
            parts.append(json.loads(m["quoted"]))
        at = m.end()
    return parts


def _reject_constant(name: str) -> object:
    raise ValueError(f"not a finite JSON number: {name}")


def parse_json(text: str) -> object | None:
    """Parse a text as JSON when it is an object or an array; floats become Decimals.

    Args:
        text: The text, as the model read it.

    Returns:
        The parsed object or list, or ``None`` when the text is not a JSON object or array.
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        parsed: object = json.loads(stripped, parse_float=Decimal, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    return parsed


def _plain(value: object) -> object:
    """App data (floats) in the form parsed JSON has (Decimals), so both compare the same way."""
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def scalar_leaves(data: object, path: str = "$", *, keys: bool = False) -> Iterator[Leaf]:
    """Every scalar under ``data`` with its JSON path, depth first in document order.

    Args:
        data: Parsed JSON (or tool arguments).
        path: The path of ``data`` itself.
        keys: Also yield each object key (at its child's path) before the child's leaves.

    Yields:
        The leaves. Empty objects and lists have none.
    """
    if isinstance(data, dict):
        for key, child in data.items():
            sub = child_path(path, str(key))
            if keys:
                yield Leaf(sub, str(key), is_key=True)
            yield from scalar_leaves(child, sub, keys=keys)
    elif isinstance(data, list):
        for index, child in enumerate(data):
            yield from scalar_leaves(child, child_path(path, index), keys=keys)
    elif data is None or isinstance(data, (str, int, float, Decimal, bool)):
        yield Leaf(path, data)
    else:
        # Not JSON data (a tool returned an object): its text stands for it.
        yield Leaf(path, str(data))


def _resolve(data: object, parts: Sequence[JsonPathPart]) -> tuple[bool, object]:
    for part in parts:
        found, data = _child(data, part)
        if not found:
            return False, None
    return True, data


def _child(data: object, part: JsonPathPart) -> tuple[bool, object]:
    """``data[part]`` when ``data`` has it: a list by index, an object by key."""
    if isinstance(part, int):
        return (True, data[part]) if isinstance(data, list) and part < len(data) else (False, None)
    return (True, data[part]) if isinstance(data, dict) and part in data else (False, None)


# ----------------------------------------------------------------------------------------------
# Matching one value against one leaf


def _decimal(value: object) -> Decimal | None:
    """The magnitude of a JSON number, or ``None`` for anything else (a bool is not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    return None


def _single_value_keys(text: str) -> frozenset[str] | None:
    """The keys of a string that is exactly one value (``"2024-05-01"``, ``"$5"``), else ``None``."""
    values = extract_values(text, quotes=False)
    if len(values) == 1 and values[0].start == 0 and values[0].end == len(text):
        return values[0].keys
    return None


def _stated_in(text: str, keys: frozenset[str]) -> str | None:
    for found in extract_values(text, quotes=False):
        if found.holds & keys:
            return found.text
    return None


def _number_text(value: object) -> str:
    return str(value)


def leaf_holds(value: object, leaf: Leaf, *, cited: bool = False) -> str | None:
    """Whether one leaf holds an argument value (the rules are in the module docstring).

    Args:
        value: The scalar the model wrote.
        leaf: The source leaf.
        cited: The model cited this leaf's source, which lets a bool or ``null`` match.

    Returns:
        The text in the leaf that holds the value, or ``None``.
    """
    held = leaf.value
    if value is None or isinstance(value, bool):
        if cited and type(held) is type(value) and held == value:
            return json.dumps(held)
        return None
    magnitude = _decimal(value)
    if magnitude is not None:
        held_number = _decimal(held)
        if held_number is not None:
            return _number_text(held) if held_number == magnitude else None
        if isinstance(held, str):
            return _stated_in(held, number_keys(magnitude))
        return None
    if not isinstance(value, str):
        return None
    needle = value.strip()
    if not needle:
        return None
    keys = _single_value_keys(needle)
    if isinstance(held, str):
        m = text_contains(held, needle)
        if m is not None:
            return m.group(0)
        return _stated_in(held, keys) if keys else None
    held_number = _decimal(held)
    if held_number is not None and keys and keys & number_holds(held_number):
        return _number_text(held)
    return None


def _values_first(leaves: Iterable[Leaf]) -> tuple[Leaf, ...]:
    # A value copied from ``{"id": "ORD-1"}`` names ``$.id``; an object key is the last resort.
    listed = tuple(leaves)
    return tuple(leaf for leaf in listed if not leaf.is_key) + tuple(leaf for leaf in listed if leaf.is_key)


# ----------------------------------------------------------------------------------------------
# Sources


@dataclass(frozen=True, eq=False)
class Source:
    """One thing a value can have come from.

    Attributes:
        kind: What it is.
        ref: How rows name it: ``tool:<call id>``, ``user``, ``external:<label>``, ``declared:<name>``.
        text: Its text as read (the tool result as the model read it, the user's message…).
        data: Its content as JSON, or ``None`` when it is a text.
        tool_call_id: ``tool-result``: the call.
        tool_name: ``tool-result``: the tool.
        iteration: ``tool-result``: the iteration whose batch ran the call.
        label: ``external``: the ground's label; ``declared``: the source's name.
        scalar: ``data`` is one scalar (a ground such as ``5``): one leaf with no path.
    """

    kind: SourceKind
    ref: str
    text: str
    data: object | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    iteration: int | None = None
    label: str | None = None
    scalar: bool = False

    @property
    def is_json(self) -> bool:
        """True when the source is searched by JSON path."""
        return self.data is not None and not self.scalar

    @cached_property
    def leaves(self) -> tuple[Leaf, ...]:
        """Every leaf: the JSON scalars and keys, the one scalar, or the one text leaf."""
        if self.scalar:
            value = self.data
            if value is None or isinstance(value, (str, int, Decimal, bool)):
                return (Leaf(None, value),)
            return (Leaf(None, str(value)),)
        if self.data is None:
            return (Leaf(None, self.text),)
        return tuple(scalar_leaves(self.data, keys=True))

    @cached_property
    def _search_order(self) -> tuple[Leaf, ...]:
        return _values_first(self.leaves)

    @cached_property
    def holds(self) -> frozenset[str]:
        """Every value key the source vouches for (see :mod:`fpdebug.engine.honesty.values`)."""
        keys: set[str] = set()
        for leaf in self.leaves:
            number = _decimal(leaf.value)
            if number is not None:
                keys |= number_holds(number)
            elif isinstance(leaf.value, str):
                keys |= held_keys(leaf.value)
        return frozenset(keys)

    def find(self, value: object, *, path: str | None = None, cited: bool = False) -> Hit | None:
        """Where this source holds an argument value.

        Args:
            value: The scalar the model wrote.
            path: Look only at this JSON path (a cited path) and what lies under it.
            cited: The model cited this source (see :func:`leaf_holds`).

        Returns:
            The first value leaf in document order that holds the value, else the first object key
            that does (its path is the path of the entry under that key), else ``None``. A
            ``path`` that does not parse, or any path into a text source, finds nothing.
        """
        leaves: Sequence[Leaf] = self._search_order
        if path is not None:
            parts = parse_json_path(path)
            if parts is None or not self.is_json:
                return None
            found, sub = _resolve(self.data, parts)
            if not found:
                return None
            leaves = _values_first(scalar_leaves(sub, path, keys=True))
        for leaf in leaves:
            text = leaf_holds(value, leaf, cited=cited)
            if text is not None:
                return Hit(leaf.path, text)
        return None

    def contains_text(self, needle: str) -> bool:
        """True when a quotation appears in the source as whole tokens (ignoring case and spacing)."""
        if not normalize_text(needle):
            return False
        return any(
            isinstance(leaf.value, str) and text_contains(leaf.value, needle) is not None
            for leaf in self.leaves
        )

    def states(self, value: FoundValue) -> bool:
        """True when the source holds a value an answer states (by key; quotations by text)."""
        if value.kind == "quoted":
            return self.contains_text(value.text)
        return bool(value.keys & self.holds)


@lru_cache(maxsize=1024)
def source_of_result(tool_call_id: str, tool_name: str, iteration: int | None, result: str) -> Source:
    """A previous tool result, as the model read it (cached: every later visit reads it again).

    Args:
        tool_call_id: The call.
        tool_name: The tool.
        iteration: The iteration whose batch ran it.
        result: The result text the model read.

    Returns:
        The source ``tool:<call id>``.
    """
    return Source(
        "tool-result",
        f"tool:{tool_call_id}",
        result,
        parse_json(result),
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        iteration=iteration,
    )


@lru_cache(maxsize=256)
def source_of_user(message: str) -> Source:
    """A user message (always searched as text).

    Args:
        message: What the user said.

    Returns:
        The source ``user``.
    """
    return Source("user", "user", message)


def _source_of_content(kind: SourceKind, ref: str, label: str, content: object) -> Source:
    if isinstance(content, str):
        return Source(kind, ref, content, parse_json(content), label=label)
    data = _plain(content)
    text = json.dumps(content, default=str)
    if isinstance(data, (dict, list)):
        return Source(kind, ref, text, data, label=label)
    # A scalar ground is one leaf with no path, so ``5`` is compared as a number.
    return Source(kind, ref, text, data, label=label, scalar=True)


def source_of_ground(ground: ExternalGround) -> Source:
    """A value the app vouches for.

    Args:
        ground: The ground, with its label.

    Returns:
        The source ``external:<label>``.
    """
    return _source_of_content("external", f"external:{ground.label}", ground.label, ground.value)


def source_of_declared(declared: DeclaredSource) -> Source:
    """A document the app declared as an argument source.

    Args:
        declared: The source, with its name.

    Returns:
        The source ``declared:<name>``.
    """
    return _source_of_content("declared", f"declared:{declared.name}", declared.name, declared.content)


def values_in(text: str) -> list[str]:
    """The values a tool result holds, as texts, each once, in document order.

    Args:
        text: The result as the model read it.

    Returns:
        For a JSON result, each number as written and each value stated in its strings and keys;
        for a text, each value it states.
    """
    data = parse_json(text)
    texts: list[str] = []
    if data is None:
        texts = [v.text for v in extract_values(text, quotes=False)]
    else:
        for leaf in scalar_leaves(data, keys=True):
            if _decimal(leaf.value) is not None:
                texts.append(_number_text(leaf.value))
            elif isinstance(leaf.value, str):
                texts.extend(v.text for v in extract_values(leaf.value, quotes=False))
    return list(dict.fromkeys(texts))

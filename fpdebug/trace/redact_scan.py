r"""The lexical scans redaction relies on: where a quoted value ends, where a name starts, what is JSON.

Internal to :mod:`fpdebug.trace.redact`: a rule of :mod:`fpdebug.trace.redact_rules` matched at an
anchor becomes a span to replace here, and the replaced text is checked to be JSON still.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Mapping
from typing import Literal

import orjson

from fpdebug.errors import ConfigError
from fpdebug.trace.redact_rules import (
    _BARE,
    _HEX,
    _JSON_START,
    _JSON_STRING,
    _MAX_NAME,
    _NAME_CHARS,
    _SECRET_NAME,
    _SINGLE_RUN,
    _VALUE_RE,
    _WORD_CHARS,
    MAX_DEPTH,
    Rule,
)


def _match_rule(
    rule: Rule,
    compiled: re.Pattern[str],
    text: str,
    at: int,
    length: int,
    quotes: _QuoteCache | None = None,
) -> tuple[int, int] | None:
    if rule.boundary == "name":
        start = _name_start(text, at)
        name = text[start : at + length]
        if (at + length < len(text) and text[at + length] in _NAME_CHARS) or not _SECRET_NAME.fullmatch(name):
            return None
        match = compiled.match(text, at + length)
    else:
        if rule.boundary != "any" and not _boundary_ok(
            text, at, _NAME_CHARS if rule.boundary == "token" else _WORD_CHARS
        ):
            return None
        match = compiled.match(text, at)
    if match is None:
        return None
    if "q" in compiled.groupindex and match.group("q") is not None:
        return (quotes or _QuoteCache(text, in_json=False)).value(match)
    return None if match.group("s") is None else match.span("s")


class _QuoteCache:
    """Finds where quoted values end, remembering each search (many names may share one value)."""

    __slots__ = ("_found", "deferred", "in_json", "text")

    def __init__(self, text: str, *, in_json: bool) -> None:
        self.text = text
        self.in_json = in_json
        self.deferred = False
        """A quoted value was left to the per-string path (JSON text only)."""
        self._found: dict[str, tuple[int, int, int | None]] = {}

    def value(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The span of the quoted value a rule matched the opening quote of (group ``q``)."""
        quote, start = match.group("q"), match.start("v")
        if self.in_json and not (match.group("a") == ":" and match.group("k") == quote):
            # Not a JSON key's value ("name": "…" with the same quote spelling at both ends): the
            # quote after ``password=`` may close the very string the name is in. The string is
            # decoded and judged as text instead.
            self.deferred = True
            return None
        end = self._closing(quote, start)
        if end is None:  # no closing quote where one must be: the unquoted rule, safe characters only
            found = _VALUE_RE.match(self.text, start)
            return None if found is None else found.span()
        return (start, end) if end > start else None

    def _closing(self, quote: str, start: int) -> int | None:
        known = self._found.get(quote)
        if known is not None and known[0] <= start <= known[1]:
            return known[2]
        end, stop = _closing_quote(self.text, start, quote)
        self._found[quote] = (start, stop, end)
        return end


def _closing_quote(text: str, start: int, quote: str) -> tuple[int | None, int]:
    """Where the value opened by ``quote`` just before ``start`` ends, and up to where that holds.

    A double quote escaped ``k`` times (``k = 2**d - 1``: the quote of JSON text held ``d`` strings
    deep) is closed by the first double quote preceded by ``k + m * 2**d`` backslashes with ``m``
    even (``m`` odd: a quote inside the value). A quote with fewer than ``k`` backslashes ends the
    string the value was in: no closing quote. A single quote is closed by the next single quote
    unless a double quote, a backslash or a line break comes first. Returns (the index of the
    closing quote's first character or ``None``, the last start for which the same answer holds).
    """
    if quote == "'":
        # _SINGLE_RUN matches the empty string, so match() never returns None here.
        stop = _SINGLE_RUN.match(text, start).end()  # type: ignore[union-attr]
        return (stop if stop < len(text) and text[stop] == "'" else None), stop
    k = len(quote) - 1
    if k & (k + 1):
        return None, start  # not a quote of any JSON depth
    width = k + 1
    at = start
    while True:
        x = text.find('"', at)
        if x == -1:
            return None, len(text)
        run = 0
        while x - run > 0 and text[x - run - 1] == "\\":
            run += 1
        if run < k:
            return None, x - run
        pairs, rest = divmod(run - k, width)
        if rest == 0 and pairs % 2 == 0:
            return x - k, x - run
        at = x + 1


def _is_secret_name(key: str) -> bool:
    """Whether a (decoded) key names a secret, as the name rule judges ``"key": …`` in JSON text."""
    start = len(key)
    while start > 0 and key[start - 1] in _NAME_CHARS:
        start -= 1
    return _SECRET_NAME.fullmatch(key, start) is not None


def _looks_like_json(text: str) -> bool:
    return _JSON_START.match(text) is not None


def _spellings(value: str) -> set[str]:
    """``value`` as a JSON string's content, escaped once per level down to MAX_DEPTH, each level
    with or without \\u escapes for non-ASCII (as ``json.dumps``, orjson and pydantic write it)."""
    out: set[str] = set()
    level = {value}
    for _ in range(MAX_DEPTH):
        level = {_json_body(text, ascii=ascii) for text in level for ascii in (False, True)}
        out |= level
    return out


def _after_escape(text: str, at: int) -> bool:
    # Whether ``at`` directly follows a JSON escape (``\n``, ``\t``… or ``\u001b``): the letters of
    # an escape are not part of the word that follows it.
    if at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrtbf":
        return True
    return (
        at >= 6 and text[at - 6] == "\\" and text[at - 5] == "u" and all(c in _HEX for c in text[at - 4 : at])
    )


def _boundary_ok(text: str, at: int, inside: frozenset[str]) -> bool:
    return at == 0 or text[at - 1] not in inside or _after_escape(text, at)


def _name_start(text: str, end: int) -> int:
    start = end
    limit = max(0, end - _MAX_NAME)
    while start > limit and text[start - 1] in _NAME_CHARS and not _after_escape(text, start):
        start -= 1
    return start


def _names(text: str) -> list[str]:
    return [name for name in re.split(r"[\s,]+", text) if name]


def _compile_user(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        compiled = pattern
    else:
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise ConfigError(
                f"redaction pattern {pattern!r} is not a valid regular expression: {error}"
            ) from None
    if not isinstance(compiled.pattern, str):
        raise ConfigError(f"redaction pattern {compiled.pattern!r} must be a text (str) pattern")
    if compiled.fullmatch("") is not None:
        raise ConfigError(f"redaction pattern {compiled.pattern!r} matches the empty string")
    return compiled


def _json_body(value: str, *, ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii)[1:-1]


def _replace(
    text: str,
    spans: list[tuple[int, int]],
    replacement: str,
    special: Mapping[tuple[int, int], str] | None = None,
) -> str:
    spans.sort()
    out: list[str] = []
    position = 0
    for start, end in spans:
        if end <= position:
            continue  # inside a span already replaced
        out.append(text[position : max(start, position)])
        out.append(special.get((start, end), replacement) if special else replacement)
        position = end
    out.append(text[position:])
    return "".join(out)


def _bare_replacements(
    text: str, spans: list[tuple[int, int]], replacement: str
) -> dict[tuple[int, int], str]:
    """The spans that are a whole bare JSON value (a number, true, false, null), each with its quoted
    replacement: ``"[redacted]"`` outside strings; inside a string (a JSON text held in a string),
    quoted with the escaped quote that closed its key, so that text stays JSON too."""
    special: dict[tuple[int, int], str] = {}
    regions: tuple[list[int], list[int]] | None = None
    for start, end in spans:
        if (start and text[start - 1] in "\"'") or _BARE.fullmatch(text, start, end) is None:
            continue  # a quoted value, or text that is no JSON value: replaced in place
        if regions is None:
            found = [m.span() for m in _JSON_STRING.finditer(text)]
            regions = ([a for a, _ in found], [b for _, b in found])
        at = bisect_right(regions[0], start) - 1
        if at < 0 or regions[1][at] <= start:
            special[(start, end)] = f'"{replacement}"'  # a bare token of the document itself
            continue
        quote = _key_quote(text, start)
        if quote:
            special[(start, end)] = f"{quote}{replacement}{quote}"
    return special


def _key_quote(text: str, at: int) -> str:
    """The quote that closed the key before ``: value`` at ``at`` (inside a string: ``\\"`` escaped
    once, ``\\\\\\"`` twice, or ``'``), or ``""`` when the value does not follow a quoted key."""
    at = _skip_space_back(text, at)
    if at == 0 or text[at - 1] != ":":
        return ""
    at = _skip_space_back(text, at - 1)
    if at == 0 or text[at - 1] not in "\"'":
        return ""
    slashes = 0
    while at - 1 - slashes > 0 and text[at - 2 - slashes] == "\\":
        slashes += 1
    if text[at - 1] == "'":
        return "'" if slashes == 0 else ""
    return text[at - 1 - slashes : at] if slashes % 2 == 1 else ""


def _skip_space_back(text: str, at: int) -> int:
    while at > 0:
        if text[at - 1] in " \t\r\n":
            at -= 1
        elif at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrt":
            at -= 2
        else:
            break
    return at


def _parses(text: str) -> bool | None:
    """Whether ``text`` is JSON; ``None`` when too deep to tell."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        state = _json_state(text)  # orjson refuses some valid JSON (lone surrogate escapes, depth)
        return None if state == "deep" else state == "ok"
    return True


def _json_state(text: str) -> Literal["ok", "deep", "invalid"]:
    try:
        json.loads(text)
    except RecursionError:
        return "deep"
    except ValueError:
        return "invalid"
    return "ok"

"""Reading one line of a trace: the header check, the record classifier and the reader-side types.

A line of a trace is classified into exactly one of:

- a schema event (:data:`~fpdebug.trace.schema.TraceEvent`), when it validates;
- an :class:`OpaqueRecord`, when it is a JSON object whose ``kind`` this fpdebug does not know
  (a newer producer's record): kept with its raw data, reported, never dropped;
- an :class:`InvalidRecord`, for everything else (not UTF-8, not JSON, not an object, no ``kind``,
  a known kind with wrong fields, a second header): kept with its line, byte offset, error and a
  bounded preview.

Classifying never raises for bad bytes; only the header check (:func:`parse_header`) raises,
because a file without a valid header is not a trace at all.

A lone UTF-16 surrogate (``\ud83c`` without its pair: valid JSON, but no Unicode text) is read
leniently: the fast parser refuses it, so such a line is decoded again by the standard library and
each lone surrogate becomes U+FFFD (:func:`well_formed_text`), the rest of the record intact. The
writer writes such text the same way, so a trace never holds one.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypeAlias, TypeVar, Union, cast

import orjson
from pydantic import ValidationError

from fpdebug.errors import TraceFormatError, TraceVersionError
from fpdebug.trace.schema import (
    EVENT_ADAPTER,
    EVENT_KINDS,
    EVENT_MODELS,
    FORMAT,
    SCHEMA_VERSION,
    TraceEvent,
    TraceHeader,
)

__all__ = [
    "HEADER_LIMIT",
    "PEEK_PREFIX",
    "PREVIEW_BYTES",
    "InvalidRecord",
    "OpaqueRecord",
    "Peek",
    "Problem",
    "ProblemCode",
    "Record",
    "TornTail",
    "classify_line",
    "line_form_problems",
    "loads_lenient",
    "parse_header",
    "peek_line",
    "read_back",
    "read_first_line",
    "well_formed_text",
    "well_formed_value",
]

PREVIEW_BYTES = 200
"""How many bytes of a bad line an :class:`InvalidRecord` keeps for display."""

HEADER_LIMIT = 64 * 1024
"""A header line is tiny; a first line longer than this is not a header."""


@dataclass(frozen=True, slots=True)
class OpaqueRecord:
    """A valid JSON object with a ``kind`` this fpdebug does not know: kept, reported, never dropped."""

    line: int
    """The line number (0 is the header)."""
    offset: int
    """The byte offset of the line's first byte."""
    kind: str
    """The unknown kind."""
    data: dict[str, object]
    """The whole object as parsed."""

    @property
    def seq(self) -> int | None:
        """The record's ``seq`` when it carries an integer one."""
        seq = self.data.get("seq")
        return seq if type(seq) is int else None

    @property
    def run_id(self) -> str | None:
        """The record's ``run_id`` when it carries a string one."""
        run_id = self.data.get("run_id")
        return run_id if isinstance(run_id, str) else None


@dataclass(frozen=True, slots=True)
class InvalidRecord:
    """A line that is not a valid record (corrupt JSON, not UTF-8, wrong field types…)."""

    line: int
    """The line number (0 is the header)."""
    offset: int
    """The byte offset of the line's first byte."""
    length: int
    """The line's length in bytes, without its newline."""
    error: str
    """What is wrong, in one sentence (untrusted parts included: display through ``inert``)."""
    preview: str
    """The first :data:`PREVIEW_BYTES` bytes, decoded with backslash escapes for bad UTF-8."""
    kind: str | None = None
    """The ``kind`` the line claims, when it parsed far enough to tell."""
    seq: int | None = None
    """The ``seq`` the line claims, when it parsed far enough to tell."""
    code: ProblemCode = "invalid"
    """The problem it is: ``non-finite`` (NaN, Infinity, a number beyond a double), ``out-of-range``
    (a time or duration no exporter can carry), else ``invalid``."""
    too_long: bool = False
    """The line is over the maximum line size: it was skipped, never read (problem ``line-too-long``)."""


Record: TypeAlias = Union[TraceHeader, TraceEvent, OpaqueRecord, InvalidRecord]  # noqa: UP007
"""What ``reader[i]`` returns: the header (line 0), an event, or an opaque or invalid line."""


class Peek(NamedTuple):
    """The envelope of a line, read without building a model (unvalidated: a hint for filtering)."""

    kind: str | None
    """The record kind, or ``None`` when the line is not a JSON object with a string kind."""
    seq: int | None
    """The ``seq`` field."""
    run_id: str | None
    """The ``run_id`` field."""
    turn: int | None
    """The ``turn`` field."""
    iteration: int | None
    """The ``iteration`` field."""


ProblemCode: TypeAlias = Literal[
    "invalid",
    "non-finite",
    "out-of-range",
    "line-too-long",
    "duplicate-key",
    "crlf",
    "unknown-kind",
    "seq",
    "torn-tail",
]
"""What kind of problem a :class:`Problem` is (docs/guide/reliability.md lists them)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a trace, located by line and byte offset."""

    line: int
    """The line number (0 is the header; a torn tail gets the number it would have had)."""
    offset: int
    """The byte offset of the line's first byte."""
    code: ProblemCode
    """``invalid`` (or, more precisely, ``non-finite`` / ``out-of-range``), ``line-too-long``,
    ``duplicate-key``, ``crlf``, ``unknown-kind``, ``seq`` (a gap, repeat or reorder) or ``torn-tail``."""
    message: str
    """One sentence (may quote untrusted text: display through ``inert_line``)."""


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes after the last newline: a record whose writer has not finished it (or never will)."""

    line: int
    """The line number the record would get once completed."""
    offset: int
    """Where the unfinished bytes start."""
    length: int
    """How many bytes there are."""

    def describe(self) -> str:
        """A one-sentence description for reports."""
        return (
            f"torn tail: {self.length} byte(s) after the last newline, an unfinished record "
            "(ignored while following; the writer was killed or is still writing)"
        )


# ----------------------------------------------------------------------------------------------
# The header


def read_first_line(fd: int, size: int, *, limit: int = HEADER_LIMIT) -> bytes | None:
    """Read line 0 without its newline, or ``None`` when no newline occurs in the first ``limit`` bytes.

    Args:
        fd: An open descriptor of the trace.
        size: The file's current size.
        limit: How far to look for the first newline.
    """
    head = os.pread(fd, min(size, limit), 0)
    end = head.find(b"\n")
    return None if end < 0 else head[:end]


def parse_header(raw: bytes, path: str) -> TraceHeader:
    """Check and parse line 0 of a trace.

    The version is checked before the rest so that a newer header with fields this fpdebug does
    not know still gets the version error, which names both versions.

    Args:
        raw: Line 0, without its newline.
        path: The file's path, for the messages.

    Returns:
        The validated header.

    Raises:
        TraceVersionError: The header declares a schema newer than :data:`SCHEMA_VERSION`.
        TraceFormatError: Line 0 is not an fpdebug trace header.
    """
    not_a_trace = f"{path}: line 0 is not an fpdebug trace header"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise TraceFormatError(
            f"{not_a_trace} (not valid JSON: {error}); this is not an fpdebug trace"
        ) from None
    if not isinstance(data, dict):
        raise TraceFormatError(f"{not_a_trace} (a JSON {_json_type(data)}, not an object)")
    kind = data.get("kind")
    if kind != "trace_header":
        found = f"found kind {kind!r}" if isinstance(kind, str) else "it has no 'kind'"
        raise TraceFormatError(f"{not_a_trace} ({found}); is the file's first line missing?")
    if data.get("format") != FORMAT:
        raise TraceFormatError(f"{not_a_trace}: format is {data.get('format')!r}, expected {FORMAT!r}")
    version = data.get("schema_version")
    if type(version) is not int or version < 1:
        raise TraceFormatError(
            f"{path}: the trace header's schema_version {version!r} is not a positive integer"
        )
    if version > SCHEMA_VERSION:
        raise TraceVersionError(version, SCHEMA_VERSION, path=path)
    try:
        return TraceHeader.model_validate(data)
    except ValidationError as error:
        raise TraceFormatError(f"{path}: the trace header is invalid: {_summarise(error)}") from None


# ----------------------------------------------------------------------------------------------
# One line


def classify_line(
    line: int, offset: int, raw: bytes, *, finite: bool = False
) -> TraceEvent | OpaqueRecord | InvalidRecord:
    """Turn the bytes of one event line into a record; never raises for bad bytes.

    Args:
        line: The line number (for the record's location).
        offset: The byte offset of the line.
        raw: The line without its newline.
        finite: The caller has proved that ``raw`` holds no NaN, Infinity or number beyond a
            double (:func:`read_back`), so that check is skipped.
    """
    if not raw or raw.isspace():
        # Before the schema: a file of blank lines is a million of these, and building and
        # explaining a pydantic error for each made validate take seconds per megabyte.
        return InvalidRecord(line, offset, len(raw), "empty line", raw[:PREVIEW_BYTES].decode("ascii"))
    event = _validate_by_kind(raw)
    if event is None:
        try:
            event = EVENT_ADAPTER.validate_json(raw)
        except ValidationError as error:
            repaired = _without_lone_surrogates(raw)
            if repaired is None:
                return _explain(line, offset, raw, error)
            try:
                event = EVENT_ADAPTER.validate_json(repaired)
            except ValidationError:
                return _explain(line, offset, raw, error)  # explained from the line as written
    if not finite and _maybe_non_finite(raw) and _holds_non_finite(raw):
        # pydantic's parser reads NaN, Infinity and 1e400 into free-form fields (tool arguments,
        # options); they are not JSON, and no exporter can encode them.
        preview = raw[:PREVIEW_BYTES].decode("utf-8", "backslashreplace")
        message = f"{event.kind} record holds NaN, Infinity or a number beyond a double (not JSON)"
        return InvalidRecord(line, offset, len(raw), message, preview, event.kind, event.seq, "non-finite")
    return event


_MAYBE_NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE]\+?[0-9]{3}")
"""What a line holding a non-finite number must contain somewhere (in a string or not)."""

_DIGITS_AND_E = bytes.maketrans(b"123456789E", b"000000000e")


def _maybe_non_finite(raw: bytes) -> bool:
    """Whether :data:`_MAYBE_NON_FINITE` matches ``raw``, answered without the regex.

    The regex tries its three branches at every byte: 20-55 us a line, 3 to 5 times what parsing
    the line costs (issue 22). Mapping every digit to ``0`` and ``E`` to ``e`` (one C pass) turns
    ``[0-9][eE]\\+?[0-9]{3}`` into two fixed strings, and four substring searches answer the same.
    """
    folded = raw.translate(_DIGITS_AND_E)
    return b"0e000" in folded or b"0e+000" in folded or b"NaN" in folded or b"Infinity" in folded


_WRITER_KIND = b'{"kind":"'
"""How every line the writer writes begins: ``kind`` is its first key."""


def read_back(raw: bytes) -> tuple[bool, bool]:
    """What one orjson parse of a line proves: ``(finite, canonical)``; both ``False`` when it does not parse.

    *finite*: orjson refuses ``NaN``, ``Infinity`` and a number beyond a double, so a line it reads
    holds none of them (what :func:`classify_line`'s ``finite`` skips). *canonical*: the parse
    re-encodes to the very bytes of the line, which a line with a key twice in one object cannot
    (the second value replaces the first and the line gets shorter: what
    :func:`line_form_problems`'s ``canonical`` skips). ``validate`` used to parse each line twice more
    for these two checks (issue 22); every line fpdebug writes is canonical.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False, False
    try:
        return True, orjson.dumps(value) == raw
    except TypeError:  # an integer beyond 64 bits reads but does not re-encode
        return True, False


def _validate_by_kind(raw: bytes) -> TraceEvent | None:
    """The event of a line that opens with its ``kind``, validated by that kind's model alone.

    ``None`` when the line does not open so, names no known kind, or does not validate: the union
    (:data:`EVENT_ADAPTER`) then decides and explains, as for any line. What validates here is what the
    union returns too, since it dispatches on the same ``kind`` to the same model; but only that one
    model's validator is built, and the union's (every event model) not at all while every line
    validates (the viewer's first screen reads two or three kinds: issue 20).
    """
    if not raw.startswith(_WRITER_KIND):
        return None
    start = len(_WRITER_KIND)
    end = raw.find(b'"', start, start + 64)
    if end < 0:
        return None
    name = raw[start:end]
    try:
        validate = _BUILT.get(name)
        if validate is not None:
            return cast("TraceEvent", validate(raw))
        model = EVENT_MODELS.get(name.decode("ascii", "replace"))
        if model is None:
            return None
        event = cast("TraceEvent", model.model_validate_json(raw))  # builds the kind's validator
    except ValidationError:
        return None
    _BUILT[name] = model.__pydantic_validator__.validate_json
    return event


_BUILT: dict[bytes, Callable[[bytes], object]] = {}
"""Each kind's built validator once it has validated a line: what ``model_validate_json`` calls,
without its Python wrapper (about 1 us of the 20-60 a line costs: issue 22)."""


def _holds_non_finite(raw: bytes) -> bool:
    found = False

    def constant(_name: str) -> float:
        nonlocal found
        found = True
        return 0.0

    def number(text: str) -> float:
        nonlocal found
        value = float(text)
        found = found or not math.isfinite(value)
        return value

    try:
        json.loads(raw, parse_constant=constant, parse_float=number)
    except ValueError:
        return False  # not JSON for another reason: the validator's verdict stands
    return found


def _explain(line: int, offset: int, raw: bytes, error: ValidationError) -> OpaqueRecord | InvalidRecord:
    def invalid(
        message: str, *, kind: str | None = None, seq: int | None = None, code: ProblemCode = "invalid"
    ) -> InvalidRecord:
        preview = raw[:PREVIEW_BYTES].decode("utf-8", "backslashreplace")
        return InvalidRecord(line, offset, len(raw), message, preview, kind, seq, code)

    if not raw.strip():
        return invalid("empty line")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return invalid(f"not valid UTF-8: byte 0x{raw[bad.start]:02x} at offset {offset + bad.start}")
    try:
        data = loads_lenient(raw)
    except orjson.JSONDecodeError as bad:
        # NaN, Infinity or 1e400 where a number belongs is named apart (what some encoders write
        # for a float); with anything else wrong as well, the line is just invalid.
        return invalid(f"not valid JSON: {bad}", code=_code_of(error))
    if not isinstance(data, dict):
        return invalid(f"not a JSON object (a JSON {_json_type(data)})")
    kind = data.get("kind")
    if not isinstance(kind, str):
        return invalid("the object has no string 'kind'")
    seq = data.get("seq") if type(data.get("seq")) is int else None
    if kind == "trace_header":
        return invalid("a second trace header in the middle of the trace (two traces joined?)", kind=kind)
    if kind not in EVENT_KINDS:
        return OpaqueRecord(line, offset, kind, data)
    summary = _summarise(error, skip=kind)
    return invalid(
        f"{kind} record does not match the schema: {summary}", kind=kind, seq=seq, code=_code_of(error)
    )


def _code_of(error: ValidationError) -> ProblemCode:
    # The most precise code every error of the line agrees on; a mix is just "invalid".
    types = {item["type"] for item in error.errors(include_url=False, include_input=False)}
    if types == {"finite_number"}:
        return "non-finite"
    if types == {"out_of_range"}:
        return "out-of-range"
    return "invalid"


def _summarise(error: ValidationError, *, skip: str | None = None, limit: int = 3) -> str:
    # Only locations and messages: pydantic's full text quotes the input, which can be huge.
    parts: list[str] = []
    errors = error.errors(include_url=False, include_input=False)
    for item in errors[:limit]:
        loc = [str(part) for part in item["loc"]]
        if loc and loc[0] == skip:
            loc = loc[1:]
        parts.append(f"{'.'.join(loc) or '(record)'}: {item['msg']}")
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)


def _json_type(value: object) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), "null"
    )


# ----------------------------------------------------------------------------------------------
# Peeks

# The writer dumps the envelope first, in a fixed order, with None left out; so the envelope of a
# line of any size can be read from its first bytes.
_ENVELOPE = re.compile(
    rb'\{"kind":"([A-Za-z0-9_.\-]+)","seq":(\d+),"ts":"[^"\\]*","run_id":("(?:[^"\\]|\\.)*")'
    rb'(?:,"turn":(\d+))?(?:,"iteration":(\d+))?'
)
PEEK_PREFIX = 1024
"""How many bytes :func:`peek_line` needs to read the envelope of a line the writer wrote."""


def peek_line(prefix: bytes, read_all: Callable[[], bytes]) -> Peek:
    """Read a line's envelope from its first bytes, falling back to a full parse.

    Args:
        prefix: The line's first :data:`PEEK_PREFIX` bytes (or the whole line when shorter).
        read_all: Returns the whole line; called only when the prefix is not in the writer's layout.
    """
    match = _ENVELOPE.match(prefix)
    if match is not None:
        kind, seq, run_id, turn, iteration = match.groups()
        try:
            run = orjson.loads(run_id)
        except orjson.JSONDecodeError:
            pass
        else:
            return Peek(
                kind.decode(),
                int(seq),
                run,
                int(turn) if turn is not None else None,
                int(iteration) if iteration is not None else None,
            )
    try:
        data = loads_lenient(read_all())
    except orjson.JSONDecodeError:
        return _NO_PEEK
    if not isinstance(data, dict):
        return _NO_PEEK
    return Peek(
        _typed(data.get("kind"), str),
        _typed(data.get("seq"), int),
        _typed(data.get("run_id"), str),
        _typed(data.get("turn"), int),
        _typed(data.get("iteration"), int),
    )


_NO_PEEK = Peek(None, None, None, None, None)
_T = TypeVar("_T")
_V = TypeVar("_V")


def _typed(value: object, cls: type[_T]) -> _T | None:
    # ``type() is`` rather than isinstance: a JSON ``true`` is not an integer seq.
    return value if type(value) is cls else None


# ----------------------------------------------------------------------------------------------
# Text UTF-8 can hold


def well_formed_text(text: str) -> str:
    """``text`` with every lone UTF-16 surrogate replaced by U+FFFD (a surrogate pair is joined).

    A Python string can hold a lone surrogate (``"\\ud83c"`` of an emoji cut in half, or the
    ``surrogateescape`` stand-in for a byte of a non-UTF-8 file name) that UTF-8 cannot encode.
    The trace holds text as UTF-8, so such text is written, and read, this way.

    Args:
        text: Any string.

    Returns:
        The same object when it has no surrogate, else the repaired copy.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def well_formed_value(value: _V) -> _V:
    """:func:`well_formed_text` applied to every string of a JSON-like value (keys included).

    Args:
        value: A string, dict, list or tuple of values, or anything else (returned as it is).

    Returns:
        A value of the same shape; the same object when nothing changed (also when the value is
        too deep to walk: the writer repairs its record on its own).
    """
    try:
        return _well_formed(value)
    except RecursionError:
        return value


def _well_formed(value: _V) -> _V:
    if isinstance(value, str):
        # A str in gives a str out, but mypy cannot tie ``str`` back to the type variable ``_V``.
        return well_formed_text(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        items = [(_well_formed(k), _well_formed(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, list | tuple):
        out = [_well_formed(item) for item in value]
        if all(a is b for a, b in zip(out, value, strict=True)):
            return value
        return type(value)(out)
    return value


def loads_lenient(raw: bytes | str) -> object:
    """``orjson.loads``, but a text with a lone surrogate escape (``"\\ud800"``) is read too.

    orjson refuses such JSON; the standard library decodes it, and every lone surrogate becomes
    U+FFFD. Only a line orjson refused pays for the second parse.

    Raises:
        orjson.JSONDecodeError: The text is not JSON (orjson's own error).
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "surrogate" not in str(error):
            raise
        try:
            return well_formed_value(json.loads(raw))
        except (ValueError, RecursionError):
            raise error from None


def _without_lone_surrogates(raw: bytes) -> bytes | None:
    """The line re-encoded with its lone surrogates replaced, or ``None`` (it has none, or no JSON)."""
    if b"\\u" not in raw:
        return None  # no escape at all: cheap to rule out, and the common case of a bad line
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    repaired = well_formed_value(data)
    if repaired is data:
        return None
    try:
        return orjson.dumps(repaired)
    except (orjson.JSONEncodeError, TypeError):
        return None


# ----------------------------------------------------------------------------------------------
# How a line is written


def line_form_problems(line: int, offset: int, raw: bytes, *, canonical: bool | None = None) -> list[Problem]:
    """What is wrong with how a line that reads as a record is written: a CRLF end, a key twice.

    fpdebug never writes either. A CRLF means another program rewrote the file; a key twice in one
    object is read differently by different JSON parsers (fpdebug keeps the last), so what a
    trace says would depend on who reads it. Both are problems (``validate`` exits 1).

    Args:
        line: The line number.
        offset: The byte offset of the line.
        raw: The line without its newline.
        canonical: :func:`read_back`'s verdict when the caller has it: ``True`` skips the search
            for a key twice, ``False`` goes straight to it (``None``: find out here).
    """
    problems: list[Problem] = []
    if raw.endswith(b"\r"):
        problems.append(
            Problem(line, offset, "crlf", "the line ends with CRLF, not LF (rewritten by another tool?)")
        )
    duplicate = None if canonical else _duplicate_key(raw, tried=canonical is False)
    if duplicate is not None:
        problems.append(
            Problem(
                line,
                offset,
                "duplicate-key",
                f"the key {duplicate!r} occurs twice in one object (JSON readers disagree on which counts; "
                "fpdebug reads the last)",
            )
        )
    return problems


def _duplicate_key(raw: bytes, *, tried: bool = False) -> str | None:
    # Fast path (unless the caller tried it): what fpdebug writes reads back and re-encodes to the
    # same bytes, which a line with a key twice cannot (see read_back).
    if not tried and read_back(raw)[1]:
        return None
    found: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        seen: set[str] = set()
        for key, _value in items:
            if key in seen and not found:
                found.append(key)
            seen.add(key)
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None

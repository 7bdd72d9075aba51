"""Import an agentfootprint recording (``agentfootprint.recording.v1``) as an fpdebug trace.

Two shapes are accepted, detected by content: the versioned envelope
``{"format": "agentfootprint.recording.v1", "producer", "run", "configuration", "recording"}`` and the
bare Recording ``{snapshot, events, structure}`` (the envelope's ``recording``). The mapping of each
event family is docs/trace-contract.md §8.2's table; the conversion itself is
:mod:`fpdebug.ingest.agentfootprint_convert`, and leases are read from the snapshot's commit log by
:mod:`fpdebug.ingest.agentfootprint_leases` (agentfootprint emits no lease events).

The trace is written beside ``out`` under a temporary name and renamed on success, so a failed import
leaves no file. A recording whose events were capped (``droppedEvents`` > 0) imports, with the gap
named in the header's ``source.gaps`` and in the summary.

Example::

    obj = json.loads(Path("run.recording.json").read_text())
    if looks_like_agentfootprint(obj):
        summary = import_agentfootprint(obj, Path("run.fptrace.jsonl"), source_name="run.recording.json")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from fpdebug.errors import FpdebugError, ImportFormatError, TraceError
from fpdebug.ingest.agentfootprint_convert import convert_recording
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import ImportSource
from fpdebug.trace.writer import TraceWriter

__all__ = [
    "FORMAT_V1",
    "ImportSummary",
    "import_agentfootprint",
    "import_agentfootprint_file",
    "looks_like_agentfootprint",
]

FORMAT_V1 = "agentfootprint.recording.v1"
"""The envelope format this importer reads."""

_FORMAT_FAMILY = "agentfootprint.recording"

NOT_RECORDED: tuple[str, ...] = ("finding",)
"""Record kinds an agentfootprint recording cannot hold: it has no honesty layers (its
``integrity.disposition`` counts checks, it files no argument, result or answer rows)."""


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import wrote, and what it could not carry over."""

    runs: int
    """Runs written (one per recording)."""
    events_written: int
    """Event records written (the header not counted)."""
    llm_calls: int
    """``llm_call`` records."""
    tool_results: int
    """``tool_result`` records."""
    passes: int
    """``pass`` records."""
    gaps: tuple[str, ...]
    """What the source says it lost (``droppedEvents``), in words; also in the header."""
    warnings: tuple[str, ...]
    """What was read but could not be represented, or disagreed with itself."""
    leases_granted: int = 0
    """``lease_grant`` records."""
    lease_prunes: int = 0
    """``lease_prune`` records."""
    format: str = FORMAT_V1
    """The detected shape: the envelope's format, or ``agentfootprint.recording`` for a bare Recording."""


def looks_like_agentfootprint(obj: object) -> bool:
    """Whether a parsed JSON value is an agentfootprint recording, of any format version.

    True for an envelope whose ``format`` starts with ``agentfootprint.recording`` (another version
    is then refused by :func:`import_agentfootprint` with a clear message) and for a bare Recording:
    an object with ``events`` (a list), ``snapshot`` (an object) and ``structure``.
    """
    if not isinstance(obj, dict):
        return False
    fmt = obj.get("format")
    if isinstance(fmt, str):
        return fmt.startswith(_FORMAT_FAMILY)
    return (
        isinstance(obj.get("events"), list) and isinstance(obj.get("snapshot"), dict) and "structure" in obj
    )


def import_agentfootprint(obj: dict[str, Any], out: Path, *, source_name: str | None = None) -> ImportSummary:
    """Write the fpdebug trace of one agentfootprint recording at ``out``.

    Args:
        obj: The parsed recording: an envelope or a bare Recording.
        out: Where to write the trace (replaced if it exists). Written under a temporary name beside
            it and renamed when complete.
        source_name: The file name it was read from, for the header's ``source.path``.

    Returns:
        What was written.

    Raises:
        ImportFormatError: ``obj`` is not an agentfootprint recording, is another format version, or
            its events are not a list of objects. Nothing is written.
        TraceError: The output cannot be written (no file is left behind).
    """
    recording, envelope, fmt = _unwrap(obj)
    gaps = _gaps(envelope)
    try:
        conversion = convert_recording(recording, envelope)
    except ValidationError as error:
        # A field of a shape no recording of this format has: say which, rather than a traceback.
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise ImportFormatError(
            f"the recording holds a value fpdebug cannot read ({error.title}.{where}: {first.get('msg')})"
        ) from error
    source = ImportSource(
        format="agentfootprint.recording.v1" if envelope is not None else "agentfootprint.recording",
        path=source_name,
        producer=_producer(envelope),
        not_recorded=NOT_RECORDED,
        gaps=gaps,
    )
    events = conversion.events
    created = events[0].ts  # the run_start, always written: the header is stamped with the run's start
    out = Path(out)
    temporary = out.with_name(f".{out.name}.{os.getpid()}.importing")
    try:
        with TraceWriter.create(
            temporary, clock=FixedClock(created), source=source, overwrite=True, durability="none"
        ) as writer:
            writer.append_many(events)
            writer.flush()
        os.replace(temporary, out)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise TraceError(f"{out}: cannot write the imported trace: {error.strerror or error}") from error
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    counts: dict[str, int] = {}
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return ImportSummary(
        runs=conversion.runs,
        events_written=len(events),
        llm_calls=counts.get("llm_call", 0),
        tool_results=counts.get("tool_result", 0),
        passes=counts.get("pass", 0),
        gaps=gaps,
        warnings=tuple(conversion.warnings),
        leases_granted=counts.get("lease_grant", 0),
        lease_prunes=counts.get("lease_prune", 0),
        format=fmt,
    )


def import_agentfootprint_file(src: Path, out: Path) -> ImportSummary:
    """Read ``src`` (JSON), check it is an agentfootprint recording, and import it to ``out``.

    Raises:
        ImportFormatError: The file is not JSON (truncated, say), not an agentfootprint recording,
            or another format version. Nothing is written.
        FpdebugError: The file cannot be read.
    """
    src = Path(src)
    try:
        data = src.read_bytes()
    except OSError as error:
        raise FpdebugError(f"{src}: cannot read: {error.strerror}") from error
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ImportFormatError(f"{src}: not valid JSON ({error}); is the file truncated?") from error
    if not looks_like_agentfootprint(obj):
        raise ImportFormatError(
            f'{src}: not an agentfootprint recording (no "format": "{FORMAT_V1}" envelope, and not a '
            "bare Recording with snapshot, events and structure)"
        )
    return import_agentfootprint(obj, out, source_name=src.name)


# ----------------------------------------------------------------------------------------------


def _unwrap(obj: object) -> tuple[dict[str, Any], dict[str, Any] | None, str]:
    if not isinstance(obj, dict):
        raise ImportFormatError(
            f"not an agentfootprint recording: a JSON {type(obj).__name__}, not an object"
        )
    fmt = obj.get("format")
    if fmt is not None:
        if not isinstance(fmt, str) or not fmt.startswith(_FORMAT_FAMILY):
            raise ImportFormatError(f"not an agentfootprint recording: format {fmt!r}")
        if fmt != FORMAT_V1:
            raise ImportFormatError(f"{fmt}: this fpdebug reads {FORMAT_V1}")
        recording = obj.get("recording")
        if not isinstance(recording, dict):
            raise ImportFormatError(f'{FORMAT_V1} envelope without a "recording" object')
        envelope: dict[str, Any] | None = obj
        shape = FORMAT_V1
    else:
        recording, envelope, shape = obj, None, _FORMAT_FAMILY
    events = recording.get("events")
    if not isinstance(events, list) or not isinstance(recording.get("snapshot"), dict):
        raise ImportFormatError(
            'not an agentfootprint recording: "recording" needs an "events" list and a "snapshot" object'
        )
    bad = next(
        (i for i, event in enumerate(events) if not isinstance(event, dict) or "type" not in event), None
    )
    if bad is not None:
        raise ImportFormatError(f"not an agentfootprint recording: events[{bad}] is not a typed event object")
    return recording, envelope, shape


def _gaps(envelope: dict[str, Any] | None) -> tuple[str, ...]:
    run = envelope.get("run") if envelope is not None else None
    if not isinstance(run, dict):
        return ()
    dropped = run.get("droppedEvents")
    if isinstance(dropped, int) and dropped > 0:
        first = run.get("firstRetainedEventIndex")
        where = f"; the first event kept is #{first}" if isinstance(first, int) else ""
        return (
            f"droppedEvents: {dropped} (the recorder's event cap dropped the oldest {dropped} events{where}; "
            "what they held is not in this trace)",
        )
    return ()


def _producer(envelope: dict[str, Any] | None) -> str | None:
    producer = envelope.get("producer") if envelope is not None else None
    if not isinstance(producer, dict):
        return None
    version = producer.get("agentfootprintVersion")
    engine = producer.get("footprintjsVersion")
    if not isinstance(version, str):
        return "agentfootprint"
    return f"agentfootprint {version}" + (f" (footprintjs {engine})" if isinstance(engine, str) else "")

"""Which importer a file needs, told by its content (never its extension), and the dispatch to it.

- an fpdebug trace: line 0 is a ``trace_header`` (nothing to import);
- OTLP: a JSON request (``resourceSpans`` / ``resourceLogs``), JSON Lines of them, or anything
  that is not JSON (a protobuf body; a file that does not parse as one is refused by the import);
- agentfootprint: JSON that :func:`fpdebug.ingest.agentfootprint.looks_like_agentfootprint` accepts
  (the envelope or a bare Recording). That module is imported only when a file needs it.

Also the import cache of ``fpdebug view FOREIGN_FILE`` (:func:`cached_import`).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Literal, TypeAlias

import orjson

from fpdebug.errors import FpdebugError

__all__ = [
    "SourceKind",
    "UnknownFormatError",
    "cache_dir",
    "cached_import",
    "detect",
    "import_sources",
]

SourceKind: TypeAlias = Literal["fpdebug", "otlp", "agentfootprint"]
"""What a file holds."""

_HEAD = 64 * 1024


class UnknownFormatError(FpdebugError):
    """A file no importer reads (JSON that is neither OTLP nor an agentfootprint recording)."""


def _agentfootprint() -> ModuleType | None:
    """The agentfootprint importer, when this fpdebug has it."""
    try:
        return importlib.import_module("fpdebug.ingest.agentfootprint")
    except ImportError:
        return None


def detect(path: Path) -> SourceKind:
    """What ``path`` holds, by content.

    Raises:
        UnknownFormatError: Empty, or JSON that no importer reads.
        OSError: It cannot be read.
    """
    with path.open("rb") as handle:
        head = handle.read(_HEAD)
    first_line = head.split(b"\n", 1)[0]
    if b'"trace_header"' in first_line and b'"fpdebug.trace"' in first_line:
        return "fpdebug"
    if not head.strip():
        raise UnknownFormatError(f"{path.name}: empty file")
    from fpdebug.ingest.otlp import looks_like_otlp  # the OTel protobufs: not for an fpdebug trace

    if looks_like_otlp(head):
        return "otlp"
    # JSON without OTLP's first key: it must be read whole to be judged.
    try:
        obj = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        obj = None
    module = _agentfootprint()
    if obj is not None and module is not None and module.looks_like_agentfootprint(obj):
        return "agentfootprint"
    what = "JSON" if obj is not None else "a file that starts like JSON but does not parse"
    readers = "OTLP or an agentfootprint recording" if module is not None else "OTLP"
    raise UnknownFormatError(f"{path.name}: {what} that is not {readers}")


def import_sources(
    sources: list[Path],
    out: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[SourceKind, str]:
    """Import ``sources`` into the trace ``out`` (written whole or not at all).

    Several OTLP files (traces and logs) become one trace; an agentfootprint recording is imported
    alone.

    Returns:
        The format and a one-line summary.

    Raises:
        UnknownFormatError: A source no importer reads, a mix of formats, or an fpdebug trace.
        FpdebugError: The importer refused the content (nothing is written).
    """
    kinds = [detect(path) for path in sources]
    if "fpdebug" in kinds:
        name = sources[kinds.index("fpdebug")].name
        raise UnknownFormatError(f"{name}: already an fpdebug trace; open it with fpdebug view")
    if "agentfootprint" in kinds:
        if len(sources) > 1:
            raise UnknownFormatError("an agentfootprint recording is imported alone (one SRC)")
        return "agentfootprint", _import_agentfootprint(sources[0], out)
    from fpdebug.ingest.otlp import import_otlp

    summary = import_otlp(sources, out, progress=progress)
    return "otlp", summary.describe()


def _import_agentfootprint(source: Path, out: Path) -> str:
    """Run the agentfootprint importer into a temporary file, renamed over ``out`` on success."""
    module = _agentfootprint()
    assert module is not None  # detect() said agentfootprint, so the module is there
    obj = orjson.loads(source.read_bytes())
    temp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        summary = module.import_agentfootprint(obj, temp, source_name=source.name)
        os.chmod(temp, 0o600)
        os.replace(temp, out)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    describe = getattr(summary, "describe", None)
    return str(describe()) if callable(describe) else "imported"


def cache_dir() -> Path:
    """Where ``fpdebug view`` keeps imports of foreign files: ``$XDG_CACHE_HOME/fpdebug/imports``."""
    from fpdebug.trace.cachedir import cache_dir as fpdebug_cache

    return fpdebug_cache("imports")


def _cache_key(path: Path) -> str:
    """A file's identity: its size, mtime and a hash of its first and last 1 MiB (not all of a large file)."""
    from fpdebug import __version__

    stat = path.stat()
    digest = hashlib.sha256(f"{__version__}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
        if stat.st_size > 2 << 20:
            handle.seek(-(1 << 20), os.SEEK_END)
            digest.update(handle.read())
    return digest.hexdigest()[:32]


def cached_import(
    path: Path, *, progress: Callable[[int, int], None] | None = None
) -> tuple[Path, SourceKind]:
    """``path`` itself when it is an fpdebug trace; else its import, made once into :func:`cache_dir`.

    Returns:
        The trace to open and what ``path`` held.
    """
    kind = detect(path)
    if kind == "fpdebug":
        return path, kind
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = directory / f"{_cache_key(path)}.fptrace.jsonl"
    if not target.exists():
        import_sources([path], target, progress=progress)
    return target, kind

"""The persisted line index: a trace's line offsets kept in the cache directory, so reopening skips the scan.

Scanning a 10M-event trace for its line ends reads every byte (seconds for gigabytes); loading the
offsets back is one read of 8 bytes per line. The cache is never part of the trace: it lives under
``$XDG_CACHE_HOME/fpdebug/index/``, one file per trace path, and deleting it only costs a scan.

**Format** (version :data:`FORMAT_VERSION`): the magic ``b"FPDIDX\\r\\n"``, a little-endian ``u32``
format version and ``u32`` metadata length, the metadata as JSON, then the offsets as little-endian
``int64``. The metadata names its sections (``"sections": ["offsets"]``) so a later version can add
tables (such as the definitions of schema v2) after the offsets without a new magic.

**Trust.** A cache file is a claim about a trace, checked before it is used, never believed:

- the trace is the same file (device, inode and real path) and was not rewritten: same size and
  modification time, or larger (appended to) with the bytes before the saved end unchanged;
- the first :data:`HEAD_BYTES` and the last :data:`END_BYTES` indexed bytes hash as they did when
  the index was saved, and the last indexed byte is a newline;
- the offsets hash to the digest written with them, start at 0, strictly increase and end at the
  saved end, which is within the file.

Anything else (a foreign, truncated, corrupt or newer-version file) is ignored and the trace is
scanned. Writing is atomic (a temporary file renamed over the old one); a cache that cannot be
written (read-only, full) is logged at ``INFO`` and otherwise ignored. ``FPDEBUG_INDEX_CACHE=off``
turns the cache off (neither read nor written).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import struct
import sys
import tempfile
from array import array
from collections.abc import Callable
from itertools import islice
from operator import lt
from pathlib import Path
from typing import BinaryIO

import orjson

from fpdebug.trace.cachedir import cache_dir

__all__ = [
    "CACHE_ENV_VAR",
    "END_BYTES",
    "FORMAT_VERSION",
    "HEAD_BYTES",
    "MAX_ENTRIES",
    "MIN_BYTES",
    "cache_enabled",
    "cache_path",
    "load_index",
    "save_index",
]

_log = logging.getLogger(__name__)

CACHE_ENV_VAR = "FPDEBUG_INDEX_CACHE"
"""Set to ``off`` (or ``0``, ``no``, ``false``) to neither read nor write persisted indexes."""

FORMAT_VERSION = 1
"""The version of the cache file format; a file of another version is ignored."""

MIN_BYTES = 16 << 20
"""Traces smaller than this are not cached: scanning them takes milliseconds."""

HEAD_BYTES = 64 << 10
"""How much of the start of a trace is hashed into the cache key."""

END_BYTES = 4096
"""How many bytes before the saved end are hashed (an append must leave them unchanged)."""

MAX_ENTRIES = 32
"""Cache files kept; the least recently written go first."""

_MAGIC = b"FPDIDX\r\n"
_PREFIX = struct.Struct("<8sII")
_ITEM = 8
_CHECK_STEP = 1 << 18  # offsets compared per step of the order check (a few ms each)


def cache_enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether persisted indexes are read and written (``FPDEBUG_INDEX_CACHE`` is not ``off``)."""
    value = (os.environ if environ is None else environ).get(CACHE_ENV_VAR, "").strip().lower()
    return value not in ("off", "0", "no", "false")


def cache_path(trace: Path) -> Path:
    """Where the persisted index of ``trace`` lives (named by a hash of its real path)."""
    name = hashlib.blake2b(os.fsencode(os.path.realpath(trace)), digest_size=16).hexdigest()
    return cache_dir("index") / f"{name}.idx"


def load_index(
    trace: Path, opened: os.stat_result, *, cancelled: Callable[[], bool] | None = None
) -> array[int] | None:
    """The saved line starts of ``trace`` if a valid cache entry vouches for them, else ``None``.

    Args:
        trace: The trace's path.
        opened: ``fstat`` of the trace as the reader opened it (its identity, size and mtime).
        cancelled: Checked between steps of the order check; a true result gives up (``None``).

    Returns:
        The starts (``starts[i]`` where line ``i`` begins, the last item where the indexed lines
        end), to be adopted by :meth:`~fpdebug.trace.reader.TraceReader.adopt_index`. Never
        raises: every failure is ``None``.
    """
    if not cache_enabled():
        return None
    entry = cache_path(trace)
    try:
        with entry.open("rb") as cached:
            return _check_entry(cached, trace, opened, cancelled)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError, EOFError, OSError, orjson.JSONDecodeError) as error:
        _log.info("index cache %s ignored: %s", entry, error)
        return None


def save_index(trace: Path, opened: os.stat_result, starts: array[int]) -> Path | None:
    """Persist the line starts of ``trace`` (atomically); return the cache file, ``None`` if not written.

    Nothing is written for a trace under :data:`MIN_BYTES` or when the cache is off; a failure to
    write is logged at ``INFO``, never raised.

    Args:
        trace: The trace's path.
        opened: ``fstat`` of the trace taken after ``starts`` were scanned (its size may be past
            the indexed end: the next open resumes the scan there).
        starts: The line starts, from ``0`` to the end of the last complete line (a copy no other
            thread extends: it is viewed, not copied, while it is written out).
    """
    indexed = starts[-1]
    if not cache_enabled() or indexed < MIN_BYTES:
        return None
    entry = cache_path(trace)
    try:
        head, end = _marks(trace, opened, indexed)
        payload = _little_endian(starts)
        meta = {
            "sections": ["offsets"],
            "path": os.path.realpath(trace),
            "dev": opened.st_dev,
            "ino": opened.st_ino,
            "size": opened.st_size,
            "mtime_ns": opened.st_mtime_ns,
            "indexed": indexed,
            "lines": len(starts),
            "head": head,
            "end": end,
            "digest": hashlib.blake2b(payload, digest_size=32).hexdigest(),
        }
        encoded = orjson.dumps(meta)
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".idx")
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(_PREFIX.pack(_MAGIC, FORMAT_VERSION, len(encoded)))
                out.write(encoded)
                out.write(payload)
            os.replace(temporary, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(entry.parent)
    except OSError as error:
        _log.info("index cache %s not written: %s", entry, error)
        return None
    return entry


# ----------------------------------------------------------------------------------------------
# Internals


def _check_entry(
    cached: BinaryIO, trace: Path, opened: os.stat_result, cancelled: Callable[[], bool] | None
) -> array[int] | None:
    """The offsets of a cache file after every check of the module's docstring (``ValueError`` if one fails)."""
    prefix = cached.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size:
        raise ValueError("shorter than its header")
    magic, version, meta_length = _PREFIX.unpack(prefix)
    if magic != _MAGIC:
        raise ValueError("not an fpdebug index cache")
    if version != FORMAT_VERSION:
        raise ValueError(f"format version {version}, this fpdebug reads {FORMAT_VERSION}")
    meta = orjson.loads(cached.read(meta_length))
    if not isinstance(meta, dict) or meta.get("sections") != ["offsets"]:
        raise ValueError("unknown sections")
    if (meta["dev"], meta["ino"], meta["path"]) != (opened.st_dev, opened.st_ino, os.path.realpath(trace)):
        raise ValueError("saved for another file")
    size, indexed, lines = int(meta["size"]), int(meta["indexed"]), int(meta["lines"])
    if opened.st_size < size:
        raise ValueError(f"the trace shrank from {size} to {opened.st_size} bytes")
    if opened.st_size == size and opened.st_mtime_ns != meta["mtime_ns"]:
        raise ValueError("the trace was rewritten (same size, another modification time)")
    if not 0 < indexed <= size or not 2 <= lines <= indexed + 1:
        raise ValueError("an impossible indexed size")
    # Read straight into the array: no second copy of tens of megabytes.
    starts: array[int] = array("q")
    starts.fromfile(cached, lines)  # EOFError when the file is shorter
    if cached.read(1):
        raise ValueError(f"more than {lines} offsets")
    if hashlib.blake2b(memoryview(starts).cast("B"), digest_size=32).hexdigest() != meta["digest"]:
        raise ValueError("the offsets do not match their digest")
    if sys.byteorder == "big":
        starts.byteswap()
    if starts[0] != 0 or starts[-1] != indexed:
        raise ValueError("the offsets do not span the indexed bytes")
    if not _increasing(starts, cancelled):
        return None
    if _marks(trace, opened, indexed) != (meta["head"], meta["end"]):
        raise ValueError("the trace's bytes changed (head or end of the indexed lines)")
    return starts


def _increasing(starts: array[int], cancelled: Callable[[], bool] | None) -> bool:
    """Whether the offsets strictly increase (checked in steps, so the UI thread gets the interpreter)."""
    count = len(starts)
    for first in range(0, count - 1, _CHECK_STEP):
        if cancelled is not None and cancelled():
            return False
        step = starts[first : first + _CHECK_STEP + 1]
        if not all(map(lt, step, islice(step, 1, None))):
            raise ValueError(f"the offsets do not increase (near line {first})")
    return True


def _marks(trace: Path, opened: os.stat_result, indexed: int) -> tuple[str, str]:
    """Hashes of the head and of the last :data:`END_BYTES` before ``indexed`` (which must end a line)."""
    fd = os.open(trace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise ValueError("the path names another file now")
        head = os.pread(fd, min(HEAD_BYTES, indexed), 0)
        start = max(indexed - END_BYTES, 0)
        end = os.pread(fd, indexed - start, start)
    finally:
        os.close(fd)
    if not end.endswith(b"\n") or len(end) != indexed - start:
        raise ValueError("the indexed end is not the end of a line")
    return (
        hashlib.blake2b(head, digest_size=16).hexdigest(),
        hashlib.blake2b(end, digest_size=16).hexdigest(),
    )


def _little_endian(starts: array[int]) -> memoryview:
    """The offsets' bytes, little-endian (a view of ``starts`` itself where that is the machine's order)."""
    if starts.itemsize != _ITEM:
        raise OSError(f"offsets of {starts.itemsize} bytes")  # never on the platforms Python runs on
    if sys.byteorder == "little":
        return memoryview(starts).cast("B")
    swapped = array("q", starts)
    swapped.byteswap()
    return memoryview(swapped).cast("B")


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` most recently written cache files."""
    entries = []
    for path in folder.glob("*.idx"):
        try:
            entries.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    entries.sort(reverse=True)
    for _, stale in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            stale.unlink()

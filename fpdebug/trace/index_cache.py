"""The persisted line index: a trace's line offsets kept in the cache directory, so reopening skips the scan.

Scanning a 10M-event trace for its line ends reads every byte (seconds for gigabytes); loading the
offsets back is one read of 8 bytes per line. The cache is never part of the trace: it lives under
``$XDG_CACHE_HOME/fpdebug/index/``, one file per trace path, and deleting it only costs a scan.

**Format** (version :data:`FORMAT_VERSION`): the magic ``b"FPDIDX\\r\\n"``, a little-endian ``u32``
format version and ``u32`` metadata length, a 32-byte MAC, the metadata as JSON, then the offsets
as little-endian ``int64``. The metadata names its sections (``"sections": ["offsets"]``) so a later version can add
tables (such as the definitions of schema v2) after the offsets without a new magic.

**Trust.** A cache file is a claim about a trace, checked before it is used, never believed:

- the trace is the same file (device, inode and real path) and was not rewritten: same size and
  modification time, or larger (appended to) with the bytes before the saved end unchanged;
- the first :data:`HEAD_BYTES` and the last :data:`END_BYTES` indexed bytes hash as they did when
  the index was saved, and the last indexed byte is a newline;
- the metadata and offsets carry a MAC under a random key kept beside them (``index/key``, private
  to the user like the cache): only this user's fpdebug, which writes nothing but indexes it scanned,
  can have written them. A corrupt file, or one copied from elsewhere or made by hand, fails it.
  (Checking that ten million offsets increase would cost about a second of Python; the MAC is a
  hash, a tenth of that.);
- the offsets start at 0 and end at the saved end, which is within the file, and a sample of them
  (:data:`SAMPLES`) each follows a newline in the trace.

Anything else (a foreign, truncated, corrupt or newer-version file) is ignored and the trace is
scanned. Writing is atomic (a temporary file renamed over the old one); a cache that cannot be
written (read-only, full) is logged at ``INFO`` and otherwise ignored. ``FPDEBUG_INDEX_CACHE=off``
turns the cache off (neither read nor written).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import struct
import sys
import tempfile
from array import array
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
    "SAMPLES",
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
SAMPLES = 64
"""Saved line starts checked against the trace (each must follow a newline) on every load."""

_MAC_BYTES = 32


def cache_enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether persisted indexes are read and written (``FPDEBUG_INDEX_CACHE`` is not ``off``)."""
    value = (os.environ if environ is None else environ).get(CACHE_ENV_VAR, "").strip().lower()
    return value not in ("off", "0", "no", "false")


def cache_path(trace: Path) -> Path:
    """Where the persisted index of ``trace`` lives (named by a hash of its real path)."""
    name = hashlib.blake2b(os.fsencode(os.path.realpath(trace)), digest_size=16).hexdigest()
    return cache_dir("index") / f"{name}.idx"


def load_index(trace: Path, opened: os.stat_result) -> array[int] | None:
    """The saved line starts of ``trace`` if a valid cache entry vouches for them, else ``None``.

    Args:
        trace: The trace's path.
        opened: ``fstat`` of the trace as the reader opened it (its identity, size and mtime).

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
            return _check_entry(cached, trace, opened, _key(entry.parent, create=False))
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
        }
        encoded = orjson.dumps(meta)
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        mac = _mac(_key(entry.parent, create=True), encoded, payload)
        descriptor, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".idx")
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(_PREFIX.pack(_MAGIC, FORMAT_VERSION, len(encoded)))
                out.write(mac)
                out.write(encoded)
                out.write(payload)
            os.replace(temporary, entry)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(entry.parent)
    except (OSError, ValueError, TypeError) as error:  # TypeError: a path JSON cannot hold
        _log.info("index cache %s not written: %s", entry, error)
        return None
    return entry


# ----------------------------------------------------------------------------------------------
# Internals


def _check_entry(cached: BinaryIO, trace: Path, opened: os.stat_result, key: bytes) -> array[int]:
    """The offsets of a cache file after every check of the module's docstring (``ValueError`` if one fails)."""
    prefix = cached.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size:
        raise ValueError("shorter than its header")
    magic, version, meta_length = _PREFIX.unpack(prefix)
    if magic != _MAGIC:
        raise ValueError("not an fpdebug index cache")
    if version != FORMAT_VERSION:
        raise ValueError(f"format version {version}, this fpdebug reads {FORMAT_VERSION}")
    mac = cached.read(_MAC_BYTES)
    encoded = cached.read(meta_length)
    meta = orjson.loads(encoded)
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
    if not hmac.compare_digest(_mac(key, encoded, memoryview(starts).cast("B")), mac):
        raise ValueError("the MAC does not match (corrupt, or not written by this user's fpdebug)")
    if sys.byteorder == "big":
        starts.byteswap()
    if starts[0] != 0 or starts[-1] != indexed:
        raise ValueError("the offsets do not span the indexed bytes")
    if _marks(trace, opened, indexed, starts) != (meta["head"], meta["end"]):
        raise ValueError("the trace's bytes changed (head or end of the indexed lines)")
    return starts


def _key(folder: Path, *, create: bool) -> bytes:
    """The cache's MAC key (``folder/key``, 32 random bytes), made on the first save."""
    path = folder / "key"
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        if not create:
            raise ValueError("no key: nothing was saved here") from None
        key = b""
    if len(key) == _MAC_BYTES:
        return key
    if not create:
        raise ValueError("a damaged key")
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".key")
    with os.fdopen(descriptor, "wb") as out:
        out.write(os.urandom(_MAC_BYTES))
    os.replace(temporary, path)  # two savers at once: the last key wins, the other's entry misses once
    return path.read_bytes()


def _mac(key: bytes, encoded: bytes, payload: memoryview) -> bytes:
    digest = hashlib.blake2b(key=key, digest_size=_MAC_BYTES)
    digest.update(struct.pack("<Q", len(encoded)))
    digest.update(encoded)
    digest.update(payload)
    return digest.digest()


def _marks(
    trace: Path, opened: os.stat_result, indexed: int, starts: array[int] | None = None
) -> tuple[str, str]:
    """Hashes of the head and of the last :data:`END_BYTES` before ``indexed`` (which must end a line).

    With ``starts``, a sample of them must each follow a newline (``ValueError`` otherwise).
    """
    fd = os.open(trace, os.O_RDONLY | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise ValueError("the path names another file now")
        head = os.pread(fd, min(HEAD_BYTES, indexed), 0)
        start = max(indexed - END_BYTES, 0)
        end = os.pread(fd, indexed - start, start)
        if starts is not None:
            stride = max((len(starts) - 1) // SAMPLES, 1)
            for line in range(1, len(starts), stride):
                if os.pread(fd, 1, starts[line] - 1) != b"\n":
                    raise ValueError(f"line {line} does not start after a newline")
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

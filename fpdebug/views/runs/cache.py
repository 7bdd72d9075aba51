"""The runs table's derived index, cached per trace file in ``$XDG_CACHE_HOME/fpdebug/runs``.

One small JSON file per trace, named by a hash of the trace's absolute path, holds the trace's
rows and the size and modification time they were read at. It is used only while both still match
(an append, a rewrite or a ``touch`` invalidates it), and only for a trace whose runs all ended: a
trace still being written is read again every time. The cache holds answers and ids from the
traces, so its folder is private (``0700``) and its files ``0600``. A cache that cannot be written
(read-only home, full disk) is skipped without a word: it only saves time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from fpdebug.trace.cachedir import cache_dir

__all__ = ["CACHE_VERSION", "cache_path", "load", "store"]

CACHE_VERSION = 1
"""Bumped whenever what a row holds changes, so older entries are read again."""


def _directory() -> Path:
    return cache_dir("runs")


def cache_path(path: str) -> Path:
    """Where the rows of the trace at ``path`` are cached."""
    key = hashlib.sha256(os.path.abspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return _directory() / f"{key}.json"


def load(path: str, size: int, mtime_ns: int) -> dict[str, Any] | None:
    """The cached entry of ``path`` when it was made at this size and mtime, else ``None``."""
    try:
        data = orjson.loads(cache_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    expected = [CACHE_VERSION, os.path.abspath(path), size, mtime_ns]
    if [data.get("version"), data.get("path"), data.get("size"), data.get("mtime_ns")] != expected:
        return None
    entry = data.get("entry")
    return entry if isinstance(entry, dict) else None


def store(path: str, size: int, mtime_ns: int, entry: dict[str, Any]) -> bool:
    """Cache ``entry`` for ``path`` at this size and mtime (atomically); ``False`` when it could not be."""
    target = cache_path(path)
    data = {
        "version": CACHE_VERSION,
        "path": os.path.abspath(path),
        "size": size,
        "mtime_ns": mtime_ns,
        "entry": entry,
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(data))
        os.replace(temp, target)
    except OSError:
        return False
    return True

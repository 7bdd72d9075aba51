"""Is anyone still writing a trace? What the file itself tells a reader, without disturbing a writer.

fpdebug's :class:`~fpdebug.trace.writer.TraceWriter` holds an exclusive ``flock`` on its trace from
open to close, and the kernel drops it when the process dies. Testing the lock by taking it would
race a writer that is just starting (its non-blocking ``flock`` would fail), so the lock is looked
up in ``/proc/locks`` (Linux) instead: read-only, invisible to the writer.

What this cannot know: a writer of another kind (a script appending to the file) holds no lock, and
a writer in another PID namespace (another container) may be hidden from ``/proc/locks``. So "no
lock found" means "no fpdebug writer that this machine shows", never "the run is over".
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["PROC_LOCKS", "seconds_since", "writer_holds"]

PROC_LOCKS = Path("/proc/locks")
"""The kernel's table of file locks (Linux)."""


def writer_holds(inode: int, *, table: Path = PROC_LOCKS) -> bool | None:
    """Whether a process holds an exclusive ``flock`` on the file with inode ``inode``.

    Returns:
        ``True`` when such a lock is listed, ``False`` when none is, ``None`` when the lock table
        cannot be read (not Linux, or ``/proc`` not mounted).
    """
    try:
        listing = table.read_bytes()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 30189 fe:00:2531473 0 EOF". The device is not compared: an
    # overlay's st_dev need not be the one the kernel prints, and the inode is what matters here.
    # A waiter's line ("1: -> FLOCK …") has another shape and holds nothing: it never matches.
    wanted = f":{inode}".encode()
    for line in listing.splitlines():
        fields = line.split()
        if (
            len(fields) >= 6
            and fields[1] == b"FLOCK"
            and fields[3] == b"WRITE"
            and fields[5].endswith(wanted)
        ):
            return True
    return False


def seconds_since(mtime: float, now: float | None = None) -> float:
    """Seconds since the wall-clock time ``mtime`` (never negative: the clock of a network mount drifts)."""
    return max((time.time() if now is None else now) - mtime, 0.0)

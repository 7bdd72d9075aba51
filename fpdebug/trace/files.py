"""Opening a trace for writing: a regular file only, created ``0600``, locked by one writer."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from fpdebug.errors import TraceError, TraceLockedError

__all__ = ["lock_exclusive", "open_for_writing", "open_or_create", "sync_directory"]


def open_for_writing(path: Path, flags: int, *, passthrough: tuple[type[OSError], ...] = ()) -> int:
    """Open ``path`` with ``flags`` (mode ``0600`` when created), refusing anything but a regular file.

    Raises:
        TraceError: It cannot be opened, or is a directory, a pipe or a device.
    """
    # O_NONBLOCK: opening a FIFO would otherwise block until a reader appears (or, for writing with
    # no reader, fail with ENXIO), before the regular-file check below could refuse it.
    try:
        fd = os.open(path, flags | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except passthrough:
        raise  # the caller handles these (a file that exists, or does not)
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except FileNotFoundError:
        missing = "the file does not exist" if flags & os.O_CREAT == 0 else "its directory does not exist"
        raise TraceError(f"{path}: {missing}") from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO nobody reads
            raise TraceError(f"{path}: not a regular file (a pipe); a trace must be a file") from None
        raise TraceError(f"{path}: cannot open for writing: {error.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as error:
        os.close(fd)
        raise TraceError(f"{path}: cannot stat: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise TraceError(f"{path}: not a regular file; a trace must be a file")
    os.set_blocking(fd, True)
    return fd


def open_or_create(path: Path) -> tuple[int, bool]:
    """Open ``path`` for appending, creating it when missing; also say whether this call created it.

    ``O_EXCL`` tells a new file from an existing one atomically, so only a file fpdebug made gets its
    mode set. When the existing file is gone by the second attempt (removed meanwhile, or a dangling
    link, which ``O_EXCL`` refuses), a plain ``O_CREAT`` makes it, and it counts as ours.
    """
    flags = os.O_WRONLY | os.O_APPEND
    try:
        return open_for_writing(path, flags | os.O_CREAT | os.O_EXCL, passthrough=(FileExistsError,)), True
    except FileExistsError:
        pass
    try:
        return open_for_writing(path, flags, passthrough=(FileNotFoundError,)), False
    except FileNotFoundError:
        return open_for_writing(path, flags | os.O_CREAT), True


def lock_exclusive(fd: int, path: Path) -> None:
    """Take the one-writer ``flock`` of an open trace, without waiting.

    Raises:
        TraceLockedError: Another writer holds it.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise TraceLockedError(
            f"{path}: another writer holds this trace (a run is still writing it); "
            "write to another file, or wait for that run to finish"
        ) from None


def sync_directory(path: Path) -> None:
    """fsync the directory of ``path`` (a new file's entry is durable only then); best effort."""
    # A new file's directory entry is durable only once the directory itself is synced.
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the file itself is synced
    finally:
        os.close(dir_fd)

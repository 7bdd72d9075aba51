"""The append-only trace writer: one ``write()`` per record on an ``O_APPEND`` descriptor, under a lock.

Guarantees:

- **Whole lines.** Each record (or each :meth:`TraceWriter.append_many` batch) is one ``bytes``
  ending in ``\\n``, handed to ``os.write`` on an ``O_APPEND`` descriptor; a short write is
  continued until the record is complete. A tailing reader ignores the bytes after the last
  newline until they are completed, so it only ever sees whole records.
- **Nothing lost, nothing torn that could be avoided.** When a write fails (disk full, I/O error)
  the bytes of the failed record that did reach the file are truncated away, the writer raises
  :class:`~fpdebug.errors.TraceWriteError`, and every record written before is untouched. The
  failed record's ``seq`` is not consumed, so the caller may retry it. If the truncation itself
  fails, the next record starts with a newline so that it never fuses with the fragment.
- **One writer per file.** An exclusive ``flock`` is held from open to close; a second writer (in
  another process, or another :class:`TraceWriter` in this one) fails at once with
  :class:`~fpdebug.errors.TraceLockedError`. Readers take no lock.
- **Dense seq.** Records must arrive with ``seq`` 1, 2, 3… (continuing from the file's last
  record when resuming); anything else is refused with :class:`~fpdebug.errors.TraceFormatError`
  before a byte is written.
- **Private files.** A trace holds prompts and tool results: a file the writer creates gets mode
  ``0600``. An existing file it overwrites (``overwrite=True``) keeps its mode: fpdebug never
  changes the mode of a file it did not create.
- **No secrets.** Every line passes through a :class:`~fpdebug.trace.redact.Redactor` before it
  is written (``redactor=``; by default :func:`~fpdebug.trace.redact.default_redactor`: API keys,
  Authorization headers, configured values and patterns become ``[redacted]``).

Durability policies (``durability=``):

``"none"``
    Never fsync; the operating system writes the page cache back when it likes. Fastest. A
    process crash loses nothing (the kernel has the bytes); a machine crash may lose the tail.
``"batch"`` (default)
    A machine crash loses at most the last ``batch_size - 1`` records: when ``append`` returns,
    fewer than ``batch_size`` records are not yet on disk. The ``fdatasync`` runs on a thread of
    the writer's own, started once three quarters of a batch are pending, so the caller waits on
    the disk only when that sync has not finished by the time a whole batch is pending. Writing
    stays on the caller's thread: a process crash loses nothing. Also synced on
    :meth:`TraceWriter.flush` and on close. A sync that failed in the background is raised by
    the next ``append``, ``flush`` or ``close``.
``"every"``
    ``fdatasync`` after every record (and the directory after creating the file): a record is
    on disk when ``append`` returns. Slowest.
"""

from __future__ import annotations

import errno
import mmap
import os
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeAlias, get_args

import orjson
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from fpdebug.errors import TraceError, TraceFormatError, TraceWriteError
from fpdebug.trace.clock import Clock, SystemClock
from fpdebug.trace.compact import RequestEncoder
from fpdebug.trace.files import lock_exclusive as _lock
from fpdebug.trace.files import open_for_writing as _open
from fpdebug.trace.files import open_or_create as _open_or_create
from fpdebug.trace.files import sync_directory as _sync_directory
from fpdebug.trace.records import loads_lenient, parse_header, read_first_line, well_formed_value
from fpdebug.trace.redact import Redactor, default_redactor
from fpdebug.trace.schema import SCHEMA_VERSION, ImportSource, LlmCallEvent, TraceEvent, TraceHeader

__all__ = ["DEFAULT_BATCH_SIZE", "DURABILITIES", "Durability", "TraceWriter", "dump_record"]

Durability: TypeAlias = Literal["none", "batch", "every"]
"""When the writer fsyncs: never, every ``batch_size`` records, or after every record."""

DURABILITIES: tuple[Durability, ...] = ("none", "batch", "every")
"""The accepted durability policies."""

DEFAULT_BATCH_SIZE = 64
"""Records between two fsyncs under the ``batch`` policy."""

_sync = getattr(os, "fdatasync", os.fsync)

_EVENT_CLASSES: frozenset[type] = frozenset(get_args(get_args(TraceEvent)[0]))
"""The event classes (what :meth:`TraceWriter.append` accepts without a closer look)."""


def dump_record(record: BaseModel) -> bytes:
    """Serialise one record as its trace line (newline included), ``None`` fields left out.

    Uses the model's own serializer: measured faster than ``EVENT_ADAPTER.dump_json`` (no union
    dispatch) and than ``orjson.dumps(model_dump(mode="json"))``, with identical bytes.

    Text UTF-8 cannot encode (a lone surrogate: half an emoji, a ``surrogateescape`` file name) is
    written with each lone surrogate as U+FFFD (:func:`~fpdebug.trace.records.well_formed_text`),
    the rest of the record as it is. Only a record the fast path refused pays for that.

    Raises:
        PydanticSerializationError: The record cannot be serialised for another reason.
    """
    serializer = type(record).__pydantic_serializer__
    try:
        return serializer.to_json(record, exclude_none=True) + b"\n"
    except PydanticSerializationError as error:
        # The record is rebuilt from its repaired fields, so the line is the one a record holding
        # the repaired text would have (pydantic's JSON mode would mangle a key's surrogate).
        try:
            data = record.model_dump()
        except PydanticSerializationError:
            raise error from None
        repaired = well_formed_value(data)
        if repaired is data:
            raise  # not a surrogate: the original error says what is wrong
        try:
            clean = type(record).model_validate(repaired)
        except ValidationError:
            raise error from None
        return serializer.to_json(clean, exclude_none=True) + b"\n"


class TraceWriter:
    """Appends records to a trace file; never seeks, never rewrites.

    Open one with :meth:`create` (a new trace: writes the header) or :meth:`resume` (continue an
    existing trace after its last record). Use it as a context manager, or call :meth:`close`.
    All methods are thread-safe.

    Example::

        with TraceWriter.create(path, clock=FixedClock(T0)) as writer:
            writer.append(RunStartEvent(seq=writer.next_seq, ts=T0, run_id="r1", ...))
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        *,
        header: TraceHeader,
        next_seq: int,
        offset: int,
        durability: Durability,
        batch_size: int,
        redactor: Redactor | None = None,
    ) -> None:
        """Wrap an already opened and locked descriptor; use :meth:`create` or :meth:`resume`."""
        self.path = path
        """The trace file."""
        self.header = header
        """The file's header (written by :meth:`create`, read by :meth:`resume`)."""
        self.durability: Durability = durability
        """The fsync policy (see the module docstring)."""
        self.batch_size = batch_size
        """Records between fsyncs under ``batch``."""
        self._fd: int | None = fd
        self._next_seq = next_seq
        self._offset = offset  # bytes in the file; we are its only writer while we hold the lock
        self._state = _SyncState(fd, threading.Condition(threading.Lock()))
        self._fragment = False  # a failed write left bytes we could not truncate away
        self._lock = self._state.cond  # one lock: the records written and those synced move together
        self.redactor: Redactor = redactor if redactor is not None else default_redactor()
        """Runs over every serialised line before it is written."""
        self._redact = self.redactor.redact_line if self.redactor.active else _unchanged
        self._ask_at = batch_size - batch_size // 4  # pending records that ask the sync thread (batch)
        # schema_version 2 writes each segment, message and tool of a request once (compact.py).
        self._encoder = RequestEncoder() if header.schema_version >= 2 else None

    # ------------------------------------------------------------------------------------------
    # Opening

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        producer: str | None = None,
        clock: Clock | None = None,
        durability: Durability = "batch",
        batch_size: int = DEFAULT_BATCH_SIZE,
        overwrite: bool = False,
        redactor: Redactor | None = None,
        source: ImportSource | None = None,
        schema_version: int = SCHEMA_VERSION,
    ) -> TraceWriter:
        """Create a new trace (mode ``0600``), lock it and write its header as line 0.

        Args:
            path: Where to write.
            producer: The header's producer string; ``fpdebug <version>`` by default.
            clock: Stamps the header's ``created``; the system clock by default.
            durability: ``none``, ``batch`` or ``every`` (see the module docstring).
            batch_size: Records between fsyncs under ``batch``.
            overwrite: Replace an existing non-empty file instead of refusing.
            redactor: Removes secrets from each line; :func:`~fpdebug.trace.redact.default_redactor`
                when ``None`` (pass ``Redactor.off()`` to write lines unchanged).
            source: The header's ``source``: set only by an importer, naming the recording the trace
                was made from (docs/trace-contract.md §8.1).
            schema_version: ``2`` (the default) or ``1`` (requests written in full, for readers
                older than version 2; docs/trace-contract.md §8.7).

        Returns:
            A writer whose :attr:`next_seq` is 1.

        Raises:
            TraceLockedError: Another writer holds the file.
            TraceError: The path is a directory, its directory is missing, it is not writable,
                or it is a non-empty file and ``overwrite`` is false.
            TraceWriteError: The header could not be written.
            ConfigError: ``FPDEBUG_REDACT_PATTERNS`` holds an invalid pattern (nothing is opened).
        """
        _check_policy(durability, batch_size)
        if schema_version not in (1, SCHEMA_VERSION):
            raise ValueError(f"schema_version must be 1 or {SCHEMA_VERSION}, not {schema_version!r}")
        redactor = redactor if redactor is not None else default_redactor()  # bad config: fail before opening
        target = Path(path)
        fd, created = _open_or_create(target)
        try:
            _lock(fd, target)
            size = os.fstat(fd).st_size
            if size and not overwrite:
                raise TraceError(
                    f"{target}: already exists and is not empty ({size} bytes); pass overwrite=True "
                    "to replace it, or TraceWriter.resume to append to it"
                )
            if size:
                os.ftruncate(fd, 0)
            if created:
                # The open mode is filtered by the umask: set 0600 exactly on the file this call made.
                # An existing file (overwritten or empty) keeps the mode its owner chose.
                os.fchmod(fd, 0o600)
        except OSError as error:
            os.close(fd)
            raise TraceError(f"{target}: cannot prepare the trace file: {error.strerror}") from error
        except BaseException:
            os.close(fd)
            raise
        if producer is None:
            from fpdebug import __version__  # the package root is a leaf; imported late to avoid cycles

            producer = f"fpdebug {__version__}"
        stamp = (clock or SystemClock()).now()
        header = TraceHeader(producer=producer, created=stamp, source=source, schema_version=schema_version)
        writer = cls(
            target,
            fd,
            header=header,
            next_seq=1,
            offset=0,
            durability=durability,
            batch_size=batch_size,
            redactor=redactor,
        )
        try:
            with writer._lock:
                writer._write(writer._redact(dump_record(header)), "the trace header")
                writer._after_write(1)
            if durability == "every":
                _sync_directory(target)
        except BaseException:
            writer._close_fd()
            raise
        return writer

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "batch",
        batch_size: int = DEFAULT_BATCH_SIZE,
        redactor: Redactor | None = None,
    ) -> TraceWriter:
        """Open an existing trace to append after its last record.

        :attr:`next_seq` continues from the last record that carries an integer ``seq`` (lines
        that do not parse are skipped). When the file ends with a torn record (no final newline,
        e.g. after a killed writer), a newline is written first: the fragment stays in the file,
        where validation reports it as an invalid line, and new records start on a line of their
        own.

        Args:
            path: The trace to continue.
            durability: ``none``, ``batch`` or ``every``.
            batch_size: Records between fsyncs under ``batch``.
            redactor: Removes secrets from each line (see :meth:`create`).

        Raises:
            TraceLockedError: Another writer holds the file.
            TraceError: The path is missing, a directory or unreadable.
            TraceFormatError: The file is empty or has no valid header (a version 1 trace goes on
                in version 1).
        """
        _check_policy(durability, batch_size)
        redactor = redactor if redactor is not None else default_redactor()
        target = Path(path)
        fd = _open(target, os.O_RDWR | os.O_APPEND)
        try:
            _lock(fd, target)
            size = os.fstat(fd).st_size
            if size == 0:
                raise TraceFormatError(
                    f"{target}: the file is empty (no trace header); use TraceWriter.create"
                )
            first = read_first_line(fd, size)
            if first is None:
                raise TraceFormatError(f"{target}: line 0 is not a complete trace header")
            header = parse_header(first, str(target))  # the records go on in the file's version
            next_seq = _last_seq(fd, size) + 1
        except OSError as error:
            os.close(fd)
            raise TraceError(f"{target}: cannot read the trace: {error.strerror}") from error
        except BaseException:
            os.close(fd)
            raise
        writer = cls(
            target,
            fd,
            header=header,
            next_seq=next_seq,
            offset=size,
            durability=durability,
            batch_size=batch_size,
            redactor=redactor,
        )
        if os.pread(fd, 1, size - 1) != b"\n":
            writer._fragment = True
        return writer

    # ------------------------------------------------------------------------------------------
    # Writing

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next appended event must carry."""
        return self._next_seq

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or opening failed)."""
        return self._fd is None

    @property
    def size(self) -> int:
        """Bytes in the file, as written through this writer."""
        return self._offset

    def append(self, event: TraceEvent) -> None:
        """Append one event as one line with one ``write()`` (continued if the OS writes less).

        Args:
            event: The next event; its ``seq`` must equal :attr:`next_seq`.

        Raises:
            TraceFormatError: The seq is out of order, or the value is not an event.
            TraceWriteError: The writer is closed, or the OS refused the write or the fsync.
        """
        with self._lock:
            seq = self._next_seq
            # The common case in one test: a known event class, the right seq, an open writer.
            if type(event) not in _EVENT_CLASSES or event.seq != seq or self._fd is None:
                self._check(event, seq)
            self._write(self._redact(self._dump(event)), seq)
            self._next_seq = seq + 1
            state = self._state
            state.written += 1
            if self.durability == "batch":
                # Nothing to ask or wait for (the usual case): skip the commit's bookkeeping.
                if (
                    state.error is not None
                    or state.unasked >= self._ask_at
                    or state.pending >= self.batch_size
                ):
                    self._batch_commit(state)
            elif self.durability == "every":
                self._sync()

    def append_many(self, events: Iterable[TraceEvent]) -> int:
        """Append several events as one ``write()`` (all of them or none).

        Args:
            events: Consecutive events starting at :attr:`next_seq`.

        Returns:
            How many events were written.

        Raises:
            TraceFormatError: A seq is out of order (checked before anything is written).
            TraceWriteError: The writer is closed, or the OS refused the write or the fsync.
        """
        with self._lock:
            seq = self._next_seq
            batch = list(events)
            for event in batch:
                self._check(event, seq)
                seq += 1
            try:
                chunks = [self._redact(self._dump(event)) for event in batch]
            except BaseException:
                self._forget()  # nothing is written: no later record may refer to these
                raise
            if not chunks:
                return 0
            self._write(b"".join(chunks), f"records seq {self._next_seq}..{seq - 1}")
            self._next_seq = seq
            self._after_write(len(chunks))
            return len(chunks)

    def flush(self) -> None:
        """fsync now, whatever the policy.

        Raises:
            TraceWriteError: The writer is closed or the fsync failed.
        """
        with self._lock:
            self._sync()

    def close(self) -> None:
        """fsync (under ``batch`` and ``every``) and close, releasing the lock. Idempotent.

        Raises:
            TraceWriteError: The final fsync failed, or a background one did (the file is closed
                anyway).
        """
        state = self._state
        with self._lock:
            if self._fd is None:
                return
            thread = state.stop_thread()
        if thread is not None:
            thread.join()  # a sync in flight ends before the descriptor goes
        with self._lock:
            if self._fd is None:
                return
            try:
                if self.durability != "none" and (state.pending or state.error is not None):
                    self._sync()
            finally:
                self._close_fd()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A writer dropped without close(): release the descriptor and the lock (no fsync). The
        # sync thread holds the state, not the writer, so a dropped writer is collected; a thread
        # in its fdatasync closes the descriptor itself when the sync ends.
        fd = getattr(self, "_fd", None)
        state = getattr(self, "_state", None)
        if fd is None:
            return
        self._fd = None
        if state is None or not state.hand_over_descriptor():
            os.close(fd)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"next_seq={self._next_seq}"
        return f"<TraceWriter {str(self.path)!r} {state} durability={self.durability!r}>"

    # ------------------------------------------------------------------------------------------
    # Internals (called with self._lock held)

    def _check(self, event: TraceEvent, expected: int) -> None:
        if self._fd is None:
            raise TraceWriteError(f"{self.path}: the trace writer is closed")
        if isinstance(event, TraceHeader) or not isinstance(event, BaseModel) or not hasattr(event, "seq"):
            raise TraceFormatError(
                f"{self.path}: only trace events can be appended, not {type(event).__name__}"
            )
        if event.seq != expected:
            raise TraceFormatError(
                f"{self.path}: {event.kind} event has seq {event.seq}, but the next record must be "
                f"seq {expected} (seq is dense from 1)"
            )

    def _dump(self, event: TraceEvent) -> bytes:
        encoder = self._encoder
        if encoder is not None:
            if isinstance(event, LlmCallEvent):
                line = encoder.encode(event)
                if line is not None:
                    return line
            elif event.kind == "run_end":
                encoder.forget_run(event.run_id)
        return _dump_event(event)

    def _forget(self) -> None:
        if self._encoder is not None:
            self._encoder.reset()

    def _write(self, data: bytes, what: str | int) -> None:
        """Write ``data`` whole (``what``: the records it holds, for an error: a text, or one seq)."""
        fd = self._fd
        if fd is None:
            raise TraceWriteError(f"{self.path}: the trace writer is closed")
        if self._fragment:
            self._heal_fragment(fd)
        done = 0
        try:
            done = os.write(fd, data)  # a regular file takes the whole record at once
            if done == len(data):
                self._offset += done
                return
            view = memoryview(data)
            while done < len(data):
                written = os.write(fd, view[done:])
                if written == 0:  # a regular file never does this; refuse to spin if it does
                    raise OSError(errno.EIO, "the write made no progress")
                done += written
        except OSError as error:
            left = self._roll_back(fd, done)
            if isinstance(what, int):
                what = f"record seq {what}"
            raise TraceWriteError(
                f"{self.path}: could not append {what}: {error.strerror or error}; "
                f"every earlier record is intact{left}"
            ) from error
        self._offset += len(data)

    def _roll_back(self, fd: int, done: int) -> str:
        self._forget()  # the failed record's items are not in the file
        if done == 0:
            return ""
        try:
            if os.fstat(fd).st_size == self._offset + done:
                os.ftruncate(fd, self._offset)
                return f" (the {done} byte(s) that were written were removed)"
        except OSError:
            pass
        self._offset += done
        self._fragment = True
        at = self._offset - done
        return f" ({done} byte(s) of it remain at offset {at}; readers report them as a bad line)"

    def _heal_fragment(self, fd: int) -> None:
        # A fragment we could not remove: try again, else end it with a newline so the next
        # record is a line of its own.
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) == b"\n":
                self._fragment = False
                return
        except OSError:
            pass
        self._fragment = False
        self._write(b"\n", "the newline ending an earlier unfinished record")

    def _after_write(self, records: int) -> None:
        state = self._state
        state.written += records
        if self.durability == "every":
            self._sync()
        elif self.durability == "batch":
            self._batch_commit(state)

    def _batch_commit(self, state: _SyncState) -> None:
        # Ask the sync thread early (three quarters of a batch pending), wait only when a whole batch
        # is: when this returns, fewer than batch_size records are not on disk, as the policy
        # promises. A quarter of a batch (16 records) takes the engine far longer than a fdatasync,
        # so the wait is rare, and the file is synced about once per batch, not twice.
        if state.error is not None:
            self._raise_sync_error(state)
        if state.unasked >= self._ask_at and not state.request():
            self._sync()  # closing: no thread to ask, keep the promise here
            return
        while state.pending >= self.batch_size:  # the sync asked for earlier has not finished
            if state.stopping or not state.running():  # closing meanwhile, or a forked child
                self._sync()
                return
            self._lock.wait()
            if state.error is not None:
                self._raise_sync_error(state)

    def _raise_sync_error(self, state: _SyncState) -> None:
        error, state.error = state.error, None
        raise TraceWriteError(
            f"{self.path}: fsync failed: {getattr(error, 'strerror', None) or error}; the last "
            f"{state.pending} record(s) may not be on disk"
        ) from error

    def _sync(self) -> None:
        if self._fd is None:
            raise TraceWriteError(f"{self.path}: the trace writer is closed")
        state = self._state
        state.error = None  # this sync covers whatever a failed background one did not
        try:
            _sync(self._fd)
        except OSError as error:
            raise TraceWriteError(
                f"{self.path}: fsync failed: {error.strerror or error}; the last {state.pending} "
                "record(s) may not be on disk"
            ) from error
        state.durable = state.written

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock


_SYNC_STATES: weakref.WeakSet[_SyncState] = weakref.WeakSet()
"""Every live batch writer's state, so a fork finds none of their locks held (see :func:`_hold_for_fork`)."""
_HELD_FOR_FORK: list[_SyncState] = []


def _hold_for_fork() -> None:
    # A sync thread holds its writer's lock for a moment around each fdatasync. Forked in that
    # moment, the child would inherit a lock held by a thread it does not have, and its next append
    # would wait forever. Taking every lock before the fork and letting go on both sides rules it out.
    _HELD_FOR_FORK[:] = list(_SYNC_STATES)
    for state in _HELD_FOR_FORK:
        state.cond.acquire()


def _release_after_fork() -> None:
    for state in reversed(_HELD_FOR_FORK):
        state.cond.release()
    _HELD_FOR_FORK.clear()


os.register_at_fork(
    before=_hold_for_fork, after_in_parent=_release_after_fork, after_in_child=_release_after_fork
)


class _SyncState:
    """What a batch writer has written and synced, and its sync thread (started on first need).

    Every field is read and written under :attr:`cond`'s lock (the writer's lock). The thread refers
    to this object only, never to the writer, so that a writer dropped without ``close`` is still
    collected.
    """

    def __init__(self, fd: int, cond: threading.Condition) -> None:
        self.fd = fd
        self.cond = cond
        self.written = 0  # records written through the descriptor
        self.durable = 0  # records covered by a finished fdatasync
        self.requested = 0  # the ``written`` count the thread is asked to cover
        self.syncing_to = 0  # the ``written`` count the sync in flight (or the last one) covers
        self.in_flight = False  # the thread is in its fdatasync
        self.error: OSError | None = None  # a background fdatasync that failed, not yet reported
        self.thread: threading.Thread | None = None
        self.pid = 0  # the process that started the thread (a forked child has none running)
        self.stopping = False
        self.close_descriptor = False  # the writer was dropped: the thread closes the fd on its way out
        _SYNC_STATES.add(self)

    @property
    def pending(self) -> int:
        """Records written but not known to be on disk."""
        return self.written - self.durable

    @property
    def unasked(self) -> int:
        """Records written that no sync, finished, in flight or asked for, covers.

        Asking again for the few records written while a sync runs would chain one fdatasync
        after another; they wait for the next three quarters of a batch instead.
        """
        return self.written - max(self.durable, self.syncing_to, self.requested)

    def request(self) -> bool:
        """Ask the thread to sync what is written now; ``False`` when it is stopping (the caller syncs)."""
        if self.stopping:
            return False
        if self.thread is None or self.pid != os.getpid():  # none yet, or a forked child's copy
            self.pid = os.getpid()
            self.thread = threading.Thread(target=self._run, name="fpdebug-trace-sync", daemon=True)
            self.thread.start()
        if self.requested < self.written:
            self.requested = self.written
            self.cond.notify_all()
        return True

    def running(self) -> bool:
        """Whether this process's sync thread is alive (a forked child inherits none)."""
        return self.thread is not None and self.pid == os.getpid() and self.thread.is_alive()

    def stop_thread(self) -> threading.Thread | None:
        """Tell the thread to end (after a sync in flight); the thread to join, if one was started."""
        self.stopping = True
        self.cond.notify_all()
        return self.thread

    def hand_over_descriptor(self) -> bool:
        """For a dropped writer: stop the thread; ``True`` when it will close the descriptor itself.

        Only a thread in its fdatasync keeps the descriptor (closed when the sync ends); otherwise
        the caller closes it at once, so the file's lock is free when the writer is collected.
        """
        if self.thread is None:
            return False
        with self.cond:
            self.stopping = True
            self.close_descriptor = self.in_flight
            self.cond.notify_all()
            return self.in_flight

    def _run(self) -> None:
        cond = self.cond
        cond.acquire()
        try:
            while True:
                while not self.stopping and self.requested <= self.durable:
                    cond.wait()
                if self.stopping:
                    return
                target = self.syncing_to = self.written
                self.in_flight = True
                cond.release()
                try:
                    _sync(self.fd)
                    failure: OSError | None = None
                except OSError as error:
                    failure = error
                finally:
                    cond.acquire()
                    self.in_flight = False
                if failure is None:
                    self.durable = max(self.durable, target)
                else:
                    self.error = failure
                    self.requested = self.syncing_to = self.durable  # asked again by the next append
                cond.notify_all()
        finally:
            fd = self.fd if self.close_descriptor else None
            cond.release()
            if fd is not None:
                os.close(fd)


def _unchanged(line: bytes) -> bytes:
    return line


def _dump_event(event: TraceEvent) -> bytes:
    try:
        return dump_record(event)
    except PydanticSerializationError as error:
        raise TraceFormatError(f"cannot serialise {event.kind} seq {event.seq}: {error}") from error


def _check_policy(durability: str, batch_size: int) -> None:
    if durability not in DURABILITIES:
        raise ValueError(f"durability must be one of {', '.join(DURABILITIES)}, not {durability!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")


def _last_seq(fd: int, size: int) -> int:
    """The seq of the last complete record carrying an integer seq, or 0 (header only)."""
    with mmap.mmap(fd, size, prot=mmap.PROT_READ) as view:
        end = view.rfind(b"\n", 0, size)  # end of the last complete line
        while end > 0:
            start = view.rfind(b"\n", 0, end) + 1
            if start == 0:
                return 0  # reached line 0, the header
            try:
                data = loads_lenient(view[start:end])
            except orjson.JSONDecodeError:
                data = None
            if isinstance(data, dict) and type(data.get("seq")) is int:
                return int(data["seq"])
            end = start - 1
    return 0

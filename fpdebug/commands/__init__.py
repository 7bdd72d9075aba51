"""One module per ``fpdebug`` sub-command (``HELP``, ``add_arguments``, ``run``); see :mod:`fpdebug.cli`."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO, TextIO

if TYPE_CHECKING:
    from fpdebug.trace.redact import Redactor

__all__ = ["RedactingStream", "output_stream", "terminal_text", "write_output"]


def terminal_text(text: str) -> str:
    """``text`` made safe to print: secrets redacted, control sequences and bidi overrides shown,
    never obeyed.

    For messages that quote paths, servers or trace content (``cli.main`` prints every error
    through it). Imports the trace layer only when called.
    """
    from fpdebug.trace.inert import inert
    from fpdebug.trace.redact import default_redactor

    return inert(default_redactor().redact(text))


class RedactingStream(io.TextIOBase):
    """A text stream that redacts what it passes on, a whole line at a time.

    ``cli.main`` puts one over stdout and stderr for every command, so a final answer, a rerun's
    answer or an error that quotes a key reaches the terminal as ``[redacted]``, as it reaches the
    trace. Text is held until its line is complete, so a secret split across two ``write`` calls is
    still seen whole. A chunk of complete lines that parses as JSON is redacted as JSON (it stays
    the same valid JSON); anything else as plain text. The redactor is built on the first line, so
    a command that prints nothing (the debugger draws through its own driver) pays nothing.
    """

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self._pending = ""
        self._redactor: Redactor | None = None

    def write(self, text: str) -> int:
        """Pass on every complete line of ``text`` (and what was held before it), redacted."""
        self._pending += text
        if "\n" in text:
            done, _, self._pending = self._pending.rpartition("\n")
            self.inner.write(self._redacted(done + "\n"))
        return len(text)

    def flush(self) -> None:
        """Pass on the held partial line too (a prompt, a progress line), redacted, and flush."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self.inner.write(self._redacted(pending))
        self.inner.flush()

    def _redacted(self, text: str) -> str:
        # The redactor is looked up once per stream (one per command): reading the environment
        # for every printed line cost more than the redaction itself (``validate`` prints a line
        # per problem, a million for a file of blank lines).
        if self._redactor is None:
            from fpdebug.trace.redact import default_redactor

            self._redactor = default_redactor()
        return _redacted(text, self._redactor)

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares it a plain attribute
        return self.inner.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.inner.errors


def _redacted(text: str, redactor: Redactor) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(text)
        except ValueError:
            pass
        else:
            return redactor.redact_json(text)
    return redactor.redact(text)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a whole-file sweep, back as it was after.

    A sweep makes millions of objects and next to no cycles; the collector walked the growing
    model again and again (issue 22: 14 % of ``summary``, 17 % of a model's build, and ``report``
    superlinear). Forked workers inherit the paused state.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write_output(text: str, output: str | None, *, trace: str, encoding: str = "utf-8") -> None:
    """Write a command's document to ``output`` (a new ``0600`` file), or to stdout for ``None``/``-``.

    Reports and exports quote trace content, so the file is as private as the trace it came from:
    a new file is created ``0600`` whatever the umask. An existing regular file is never
    ``chmod``-ed (fpdebug does not change the mode of a file it did not create): it is replaced
    atomically by a new ``0600`` file written beside it, so its other hard links keep their old
    content and mode. A link, device or pipe (``/dev/stdout``, a FIFO) is the user's explicit
    choice and is written through as it is, its mode untouched; so is a regular file in a
    directory fpdebug may not create files in.

    Raises:
        ExportError: ``output`` is the trace itself, or it cannot be written.
    """
    with output_stream(output, trace=trace, encoding=encoding) as write:
        write(text)


@contextlib.contextmanager
def output_stream(
    output: str | None, *, trace: str, encoding: str = "utf-8", redacted: bool = False
) -> Iterator[Callable[[str], object]]:
    """:func:`write_output` for a document written piece by piece: yields a ``write(text)`` function.

    A file is written as :func:`write_output` writes it (a new ``0600`` file renamed over an
    existing one), and only when the block ends without an exception: an export that fails half
    way leaves the old file as it was. On stdout the pieces go out as they come.

    Args:
        output: A path, or ``None``/``-`` for stdout.
        trace: The trace the document comes from (never overwritten).
        encoding: The file's encoding.
        redacted: The pieces are already redacted (as JSON, each on its own): on stdout they skip
            the terminal's line-by-line redaction, which would see fragments of a document.

    Raises:
        ExportError: ``output`` is the trace itself, or it cannot be written.
    """
    from fpdebug.errors import ExportError

    if output is None or output == "-":
        stream: TextIO = sys.stdout
        if redacted and isinstance(stream, RedactingStream):
            stream.flush()
            stream = stream.inner
        yield stream.write
        stream.flush()
        return
    if os.path.exists(output) and os.path.samefile(output, trace):
        raise ExportError(f"refusing to overwrite the trace itself: {terminal_text(output)}")
    try:
        with contextlib.ExitStack() as stack:
            handle = None
            if _is_plain_file(output):
                handle = _replacement(output, stack)
            if handle is None:
                fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
                handle = stack.enter_context(os.fdopen(fd, "wb"))
            writer = handle

            def write(text: str) -> None:
                writer.write(text.encode(encoding))

            yield write
    except OSError as error:
        raise ExportError(f"cannot write {terminal_text(output)}: {error.strerror or error}") from error


def _is_plain_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _replacement(path: str, stack: contextlib.ExitStack) -> BinaryIO | None:
    """A new ``0600`` file beside ``path``, renamed over it when ``stack`` closes without an error.

    Returns:
        None when the directory refuses a new file (the caller then writes in place).
    """
    import tempfile

    directory, name = os.path.split(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)  # 0600
    except PermissionError:
        return None

    @contextlib.contextmanager
    def replacing() -> Iterator[BinaryIO]:
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    return stack.enter_context(replacing())

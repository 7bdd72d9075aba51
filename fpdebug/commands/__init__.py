"""One module per ``fpdebug`` sub-command (``HELP``, ``add_arguments``, ``run``); see :mod:`fpdebug.cli`."""

from __future__ import annotations

import os
import stat
import sys

__all__ = ["terminal_text", "write_output"]


def terminal_text(text: str) -> str:
    """``text`` made safe to print: control sequences and bidi overrides shown, never obeyed.

    For messages that quote paths, servers or trace content (``cli.main`` prints every error
    through it). Imports the trace layer only when called.
    """
    from fpdebug.trace.inert import inert

    return inert(text)


def write_output(text: str, output: str | None, *, trace: str, encoding: str = "utf-8") -> None:
    """Write a command's document to ``output`` (``0600``), or to stdout for ``None``/``-``.

    Reports and exports quote trace content, so the file is as private as the trace it came from:
    created ``0600`` whatever the umask, and an existing regular file is made ``0600`` before
    anything is written to it (as the trace writer does). A device or pipe (``/dev/stdout``) is
    written as it is, its mode untouched; a file of another owner keeps the mode its owner gave it.

    Raises:
        ExportError: ``output`` is the trace itself, or it cannot be written.
    """
    from fpdebug.errors import ExportError

    if output is None or output == "-":
        sys.stdout.write(text)
        return
    if os.path.exists(output) and os.path.samefile(output, trace):
        raise ExportError(f"refusing to overwrite the trace itself: {terminal_text(output)}")
    try:
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding=encoding) as handle:
            # The open mode is filtered by the umask, and an overwritten file keeps its old mode.
            if stat.S_ISREG(os.fstat(fd).st_mode):
                try:
                    os.fchmod(fd, 0o600)
                except PermissionError:
                    pass  # not our file: it stays as restrictive as its owner made it
            handle.write(text)
    except OSError as error:
        raise ExportError(f"cannot write {terminal_text(output)}: {error.strerror or error}") from error

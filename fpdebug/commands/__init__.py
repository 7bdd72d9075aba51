"""One module per ``fpdebug`` sub-command (``HELP``, ``add_arguments``, ``run``); see :mod:`fpdebug.cli`."""

from __future__ import annotations

import os
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
    """Write a command's document to ``output`` (created ``0600``), or to stdout for ``None``/``-``.

    Reports and exports quote trace content, so the file is as private as the trace it came from.

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
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding=encoding) as handle:
            handle.write(text)
    except OSError as error:
        raise ExportError(f"cannot write {terminal_text(output)}: {error.strerror or error}") from error

"""One module per ``fpdebug`` sub-command (``HELP``, ``add_arguments``, ``run``); see :mod:`fpdebug.cli`."""

from __future__ import annotations

__all__ = ["terminal_text"]


def terminal_text(text: str) -> str:
    """``text`` made safe to print: control sequences and bidi overrides shown, never obeyed.

    For messages that quote paths, servers or trace content (``cli.main`` prints every error
    through it). Imports the trace layer only when called.
    """
    from fpdebug.trace.inert import inert

    return inert(text)

"""fpdebug's cache directory: ``$XDG_CACHE_HOME/fpdebug/<part>`` (``~/.cache`` when the variable is unset).

Imports of foreign recordings, the demo traces of a bare ``serve`` and the backtrack sidecars of
traces that must not be written beside (read-only or tracked by git) all live under it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir(part: str, *, create: bool = False) -> Path:
    """``$XDG_CACHE_HOME/fpdebug/<part>``.

    Args:
        part: The sub-directory (``imports``, ``serve``, ``sidecars``).
        create: Make it (and its parents) if missing, private (``0700``): what is cached holds
            prompts and tool results.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "fpdebug" / part
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path

"""Where a fork's trace is written: beside its parent, or in fpdebug's cache when it must not be there.

``NAME.fork-passN.fptrace.jsonl`` beside the parent (``-2``, ``-3``… when taken), as
``fpdebug fork`` names it. The debugger forks with no ``-o`` to ask for, so a parent in a directory
this user cannot write (a read-only mount), or tracked by git (the committed ``sample_traces/``),
gets its forks in ``$XDG_CACHE_HOME/fpdebug/forks/`` instead, by the rule backtrack sidecars follow
(:mod:`fpdebug.backtrack.sidecar_place`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from fpdebug.backtrack.sidecar_place import may_write_beside
from fpdebug.trace.cachedir import cache_dir

__all__ = ["fork_name", "fork_output_for", "free_fork_path"]


def fork_name(trace: str | os.PathLike[str], at_pass: int, counter: int = 1) -> str:
    """``NAME.fork-passN.fptrace.jsonl`` (``NAME.fork-passN-2.fptrace.jsonl`` for ``counter`` 2)."""
    stem = Path(trace).name.removesuffix(".jsonl").removesuffix(".fptrace")
    suffix = "" if counter == 1 else f"-{counter}"
    return f"{stem}.fork-pass{at_pass}{suffix}.fptrace.jsonl"


def free_fork_path(directory: Path, trace: str | os.PathLike[str], at_pass: int) -> Path:
    """The first :func:`fork_name` in ``directory`` that does not exist yet."""
    counter = 1
    while True:
        candidate = directory / fork_name(trace, at_pass, counter)
        if not os.path.lexists(candidate):
            return candidate
        counter += 1


def fork_output_for(trace: str | os.PathLike[str], at_pass: int) -> Path:
    """A new fork trace of ``trace`` at ``at_pass``: beside it, or in the cache (see the module doc)."""
    path = Path(trace)
    if may_write_beside(path):
        return free_fork_path(path.parent, path, at_pass)
    key = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:16]
    directory = cache_dir("forks", create=True) / key
    directory.mkdir(exist_ok=True, mode=0o700)
    return free_fork_path(directory, path, at_pass)

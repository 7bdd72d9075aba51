"""Where a trace's backtrack sidecar lives: beside the trace, or in the cache when it must not be there.

Beside the trace (``<trace>.backtrack.jsonl``) is the default: the verdicts travel with the trace.
Two kinds of trace must not get a file beside them:

- a trace in a directory this user cannot write (a read-only mount, a shared directory);
- a trace tracked by git (the committed ``sample_traces/`` of a checkout): a sidecar there is
  an untracked file that dirties ``git status``, and tests that read the samples would see it.

Their sidecar goes to ``$XDG_CACHE_HOME/fpdebug/sidecars/<hash of the trace's absolute path>-<name>``
instead, so reopening the same trace finds its verdicts again. A sidecar that already exists beside
the trace is always the one used (nothing saved is hidden), then one already in the cache.

"Tracked by git" is asked of ``git ls-files`` only when a ``.git`` is found above the trace, with the
repository's fsmonitor hook switched off (``core.fsmonitor=false``): a cloned repository's config must
not get to run a command because a trace was opened.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from fpdebug.trace.cachedir import cache_dir

__all__ = [
    "SIDECAR_SUFFIX",
    "cached_sidecar_path",
    "may_write_beside",
    "sidecar_path_for",
    "sidecar_where",
    "tracked_by_git",
]

SIDECAR_SUFFIX = ".backtrack.jsonl"
"""Appended to the trace's file name: ``run.fptrace.jsonl`` → ``run.fptrace.jsonl.backtrack.jsonl``."""

_GIT_TIMEOUT = 3.0  # seconds; a git that hangs (a network mount) must not hang the debugger


def sidecar_path_for(trace: str | os.PathLike[str]) -> Path:
    """The sidecar of ``trace``: beside it, unless it is read-only or tracked (then in the cache).

    The answer depends only on the file system, so the writer and every later reader agree.
    """
    path = Path(trace)
    beside = path.with_name(path.name + SIDECAR_SUFFIX)
    if os.path.lexists(beside):
        return beside  # already there (a planted link is refused when it is opened, not skipped)
    cached = cached_sidecar_path(path)
    if cached.exists() or not may_write_beside(path):
        return cached
    return beside


def sidecar_where(trace: str | os.PathLike[str], sidecar: str | os.PathLike[str]) -> str:
    """``beside the trace`` or ``in fpdebug's cache``: where saved verdicts are, in words for a label."""
    return "beside the trace" if Path(sidecar).parent == Path(trace).parent else "in fpdebug's cache"


def cached_sidecar_path(trace: str | os.PathLike[str]) -> Path:
    """``$XDG_CACHE_HOME/fpdebug/sidecars/<16 hex of the absolute path>-<trace name>.backtrack.jsonl``."""
    path = Path(trace)
    absolute = os.path.realpath(path)
    key = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:16]
    return cache_dir("sidecars") / f"{key}-{path.name}{SIDECAR_SUFFIX}"


def may_write_beside(trace: Path) -> bool:
    """Whether a sidecar may be created beside ``trace`` (its directory is writable and it is untracked)."""
    directory = trace.parent
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    return not tracked_by_git(trace)


def tracked_by_git(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is in the index of the git work tree that holds it.

    ``False`` when no ``.git`` is above it, when git is not installed, or when git fails.
    """
    file = Path(os.path.realpath(path))
    if not any((parent / ".git").exists() for parent in file.parents):
        return False
    git = shutil.which("git")
    if git is None:
        return False
    # Literal pathspecs: a trace named ":(glob)*" names itself, not every file.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_LITERAL_PATHSPECS": "1"}
    try:
        done = subprocess.run(
            [git, "-c", "core.fsmonitor=false", "ls-files", "--error-unmatch", "--", file.name],
            cwd=file.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0

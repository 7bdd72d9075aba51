"""Where a backtrack sidecar goes: beside the trace, or in the cache for a read-only or tracked trace."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fpdebug.backtrack import sidecar_place
from fpdebug.backtrack.sidecar_place import cached_sidecar_path, sidecar_path_for, tracked_by_git

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _trace(directory: Path, name: str = "run.fptrace.jsonl") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text('{"kind":"trace_header"}\n')
    return path


def _git(directory: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=directory, check=True, capture_output=True)


def test_an_untracked_trace_in_a_writable_directory_keeps_its_sidecar_beside(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    assert sidecar_path_for(trace) == tmp_path / "run.fptrace.jsonl.backtrack.jsonl"


@needs_git
def test_a_tracked_trace_gets_its_sidecar_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    trace = _trace(repo / "sample_traces")
    other = _trace(repo / "sample_traces", "mine.fptrace.jsonl")
    _git(repo, "init", "-q")
    _git(repo, "add", "sample_traces/run.fptrace.jsonl")
    assert tracked_by_git(trace) and not tracked_by_git(other)
    place = sidecar_path_for(trace)
    assert place.parent == tmp_path / "cache" / "fpdebug" / "sidecars"
    assert place.name.endswith("-run.fptrace.jsonl.backtrack.jsonl")
    assert sidecar_path_for(other) == other.with_name(
        "mine.fptrace.jsonl.backtrack.jsonl"
    )  # untracked: beside


def test_a_read_only_directory_sends_the_sidecar_to_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    trace = _trace(tmp_path / "shared")
    # Tests may run as root, for whom chmod does not make a directory read-only: ask access() instead.
    monkeypatch.setattr(sidecar_place.os, "access", lambda path, mode: False)
    assert sidecar_path_for(trace) == cached_sidecar_path(trace)
    assert str(sidecar_path_for(trace)).startswith(str(tmp_path / "cache"))


def test_a_sidecar_already_beside_is_used_and_one_in_the_cache_is_found_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    trace = _trace(tmp_path / "a")
    cached = cached_sidecar_path(trace)
    cached.parent.mkdir(parents=True)
    cached.write_text("")
    assert sidecar_path_for(trace) == cached  # saved there once (the trace was tracked then): found again
    beside = trace.with_name(trace.name + ".backtrack.jsonl")
    beside.write_text("")
    assert sidecar_path_for(trace) == beside  # nothing saved beside the trace is ever hidden


def test_the_cache_key_is_the_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = _trace(tmp_path / "one"), _trace(tmp_path / "two")
    monkeypatch.chdir(tmp_path / "one")
    assert cached_sidecar_path("run.fptrace.jsonl") == cached_sidecar_path(one)
    assert cached_sidecar_path(one) != cached_sidecar_path(two)


def test_no_git_is_asked_outside_a_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _trace(tmp_path / "plain")
    calls: list[object] = []
    monkeypatch.setattr(sidecar_place.subprocess, "run", lambda *args, **kwargs: calls.append(args))
    assert not tracked_by_git(trace) and calls == []


@needs_git
def test_a_repository_hook_is_never_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    trace = _trace(repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "run.fptrace.jsonl")
    planted = tmp_path / "ran"
    _git(repo, "config", "core.fsmonitor", f"touch {planted}; false")
    assert tracked_by_git(trace)
    assert not planted.exists()

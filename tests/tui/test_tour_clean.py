"""The README's tour leaves ``git status`` clean (issue 20): ``7`` then ``a`` on a committed sample
writes its sidecar to the cache, not beside the sample, and reopening the sample finds it again."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fpdebug.tui.app import FpdebugApp
from tests.tui.helpers import SIZE, loaded, screen_text, wait_for
from tests.tui.test_backtrack_pane import RERUNS
from tests.tui.traces import sample

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("git") is None, reason="no git")]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _listing(directory: Path) -> list[str]:
    return sorted(
        str(path.relative_to(directory)) for path in directory.rglob("*") if ".git" not in path.parts
    )


async def test_reruns_on_a_committed_sample_leave_the_checkout_clean_and_are_found_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    repo = tmp_path / "checkout"
    (repo / "sample_traces").mkdir(parents=True)
    trace = repo / "sample_traces" / "planted-fact.fptrace.jsonl"
    shutil.copyfile(sample("planted-fact"), trace)
    _git(repo, "init", "-q")
    _git(repo, "add", "sample_traces")
    before = _listing(repo)
    assert (
        _git(repo, "status", "--porcelain", "--untracked-files=all")
        == "A  sample_traces/planted-fact.fptrace.jsonl\n"
    )

    app = FpdebugApp(trace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("7", "a")
        assert await wait_for(pilot, lambda: "complete: 18 reruns" in screen_text(app), timeout=RERUNS)
        assert "saved in fpdebug's cache" in screen_text(app)  # the pane says where the verdicts went

    # Nothing new in the checkout: no sidecar beside the sample, git sees only the sample it was given.
    assert _listing(repo) == before
    assert (
        _git(repo, "status", "--porcelain", "--untracked-files=all")
        == "A  sample_traces/planted-fact.fptrace.jsonl\n"
    )
    saved = list((cache / "fpdebug" / "sidecars").glob("*-planted-fact.fptrace.jsonl.backtrack.jsonl"))
    assert len(saved) == 1 and saved[0].stat().st_mode & 0o777 == 0o600

    # Reopened: the saved verdicts show at once (one key: 7), read from the cache.
    app = FpdebugApp(trace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("7")
        assert await wait_for(pilot, lambda: "saved verdicts (complete)" in screen_text(app))
        assert "CONFIRMED injection 'vip-override'" in screen_text(app)
        assert "SAVED in fpdebug's cache on" in screen_text(app)

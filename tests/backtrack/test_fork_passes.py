"""A fork's ``pass`` records tell what the fork did: an edited-out injection is skipped with the
edit named, an edited-in one rides ``via: fork-edit``, and the passes before the fork point are
the parent's (docs/guide/fork.md, "What the trace records"). And what the debugger's fork screen
needs of the headless fork: cancelling, the output's place, a live continuation's price."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fpdebug.backtrack import fork_place
from fpdebug.backtrack.fork import ForkEdit, load_fork_point
from fpdebug.backtrack.fork_place import fork_output_for
from fpdebug.backtrack.fork_run import run_fork
from fpdebug.demo import recorded_module_loader
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, PassEvent, Skipped
from fpdebug.views.fork_summary import live_cost_estimate
from tests.backtrack.test_fork import calls, demo_trace, fork, injection_ids

_VOLATILE = {"seq", "ts", "run_id"}


@pytest.fixture(autouse=True)
def _never_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")


def passes(path: Path) -> list[PassEvent]:
    with TraceReader(path) as reader:
        return [r for r in reader if isinstance(r, PassEvent)]


def _sent(passes_: list[PassEvent], path: Path) -> list[tuple[set[str], set[str | None]]]:
    """Per pass: the ids it records in the system-prompt and tools slots, and the ids its call sent."""
    return [
        (
            {e.id for e in p.by_slot.system_prompt} | {e.id for e in p.by_slot.tools},
            injection_ids(c.request) - {None},
        )
        for p, c in zip(passes_, calls(path), strict=True)
    ]


def test_a_dropped_injection_is_recorded_as_skipped_by_the_fork_edit(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    _, outcome = fork(parent, 3, [ForkEdit("drop-injection", "refund-policy")])
    old, new = passes(parent), passes(outcome.path)
    # Before the fork point: the parent's pass records (but for the stamps and the run id).
    assert [p.model_dump(exclude=_VOLATILE) for p in new[:2]] == [
        p.model_dump(exclude=_VOLATILE) for p in old[:2]
    ]
    assert "refund-policy" in old[2].active_ids
    at = new[2]
    assert "refund-policy" not in at.active_ids
    assert all(r.id != "refund-policy" for r in at.reasons)
    assert (
        Skipped(id="refund-policy", reason="fork-edit", error="fork edit drop-injection at pass 3 of turn 1")
        in at.skipped
    )
    # The parent's pass 3 put it in; the fork's did not.
    assert "refund-policy" in old[2].delta.system_prompt.added
    assert "refund-policy" not in at.delta.system_prompt.added
    # Every pass records what its call sent.
    for recorded, sent in _sent(new, outcome.path):
        assert recorded == sent
    with TraceReader(outcome.path) as reader:
        assert reader.problems() == []


def test_a_granted_lease_rides_its_pass_only_and_says_why(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "leases")
    _, outcome = fork(parent, 3, [ForkEdit("grant-lease", "wire-format")])
    new = passes(outcome.path)
    at = new[2]
    assert "wire-format" in at.active_ids
    assert any(r.id == "wire-format" and r.via == "fork-edit" for r in at.reasons)
    assert at.trigger_kind_counts.get("fork-edit") == 1
    for later in new[3:]:
        assert "wire-format" not in later.active_ids
    for recorded, sent in _sent(new, outcome.path):
        assert recorded == sent


def test_a_revoked_lease_leaves_the_pass_record(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "leases")
    _, outcome = fork(parent, 2, [ForkEdit("revoke-lease", "wire-format")])
    at = passes(outcome.path)[1]
    assert "wire-format" not in at.active_ids
    assert "wire-format" not in (at.lease_active_ids or [])
    assert any(
        s.id == "wire-format" and s.reason == "fork-edit" and "revoke-lease" in (s.error or "")
        for s in at.skipped
    )


def test_an_edit_that_changes_no_injection_leaves_the_passes_alone(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    _, outcome = fork(parent, 3, [ForkEdit("tool-result", "call_2", '{"ok": false}')])
    old, new = passes(parent), passes(outcome.path)
    assert [p.model_dump(exclude=_VOLATILE) for p in new[:3]] == [
        p.model_dump(exclude=_VOLATILE) for p in old[:3]
    ]


def test_a_cancelled_fork_ends_interrupted_and_valid(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "planted-fact")
    point = load_fork_point(parent, at_pass=2)
    stop = threading.Event()
    seen: list[int] = []

    def progress(call: LlmCallEvent) -> None:
        seen.append(call.iteration or 0)
        stop.set()  # cancel once the first call is written

    outcome = run_fork(
        point,
        [ForkEdit("drop-injection", "vip-override")],
        output=tmp_path / "cancelled.fptrace.jsonl",
        load_module=recorded_module_loader(parent),
        provider="scripted",
        stop=stop,
        progress=progress,
    )
    assert outcome.result.status == "interrupted"
    assert seen == [1] and len(outcome.calls) == 1
    with TraceReader(outcome.path) as reader:
        assert reader.problems() == []


def test_the_debuggers_fork_goes_to_the_cache_when_the_parents_folder_will_not_take_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = tmp_path / "runs" / "a.fptrace.jsonl"
    parent.parent.mkdir()
    parent.write_text("")
    assert fork_output_for(parent, 3) == parent.with_name("a.fork-pass3.fptrace.jsonl")
    (parent.parent / "a.fork-pass3.fptrace.jsonl").write_text("")
    assert fork_output_for(parent, 3).name == "a.fork-pass3-2.fptrace.jsonl"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(fork_place, "may_write_beside", lambda path: False)  # read-only, or tracked
    cached = fork_output_for(parent, 3)
    assert cached.parent.parent == tmp_path / "cache" / "fpdebug" / "forks"
    assert cached.name == "a.fork-pass3.fptrace.jsonl"


def test_a_live_continuation_is_priced_before_it_runs(tmp_path: Path) -> None:
    point = load_fork_point(demo_trace(tmp_path, "planted-fact"), at_pass=2)
    assert live_cost_estimate(point, "openai", "gpt-4o").startswith("about $")
    assert "from pass 2 on" in live_cost_estimate(point, "openai", "gpt-4o")
    assert live_cost_estimate(point, "openai", "no-such-model").startswith(
        "no estimate: no-such-model has no price"
    )

"""Forks from a pass (docs/guide/fork.md): the calls before the pass replay byte for byte, the edits
reach the request at the pass, the new trace is valid and names its parent. Nothing here is live."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.backtrack.fork import ForkEdit, ForkPoint, check_edits, load_fork_point
from fpdebug.backtrack.fork_run import ForkOutcome, run_fork
from fpdebug.demo import recorded_module_loader, run_target
from fpdebug.engine.providers.base import BLOCK_ENV_VAR
from fpdebug.errors import BacktrackError
from fpdebug.ingest.agentfootprint import import_agentfootprint_file
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    ForkEditRecord,
    ForkOrigin,
    LlmCallEvent,
    LlmRequest,
    RunStartEvent,
    TurnStartEvent,
)
from tests.conftest import T0

FIXTURES = Path(__file__).parent.parent / "ingest" / "fixtures"


@pytest.fixture(autouse=True)
def _never_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, "1")


def demo_trace(tmp_path: Path, scenario: str = "support") -> Path:
    """A demo run on its scripted model, traced into ``tmp_path``."""
    path = tmp_path / f"{scenario}.fptrace.jsonl"
    run_target(scenario, trace_path=path, clock=FixedClock(T0), run_id=f"parent-{scenario}")
    return path


def fork(
    trace: Path, at_pass: int, edits: list[ForkEdit], *, provider: str = "scripted"
) -> tuple[ForkPoint, ForkOutcome]:
    point = load_fork_point(trace, at_pass=at_pass)
    outcome = run_fork(
        point,
        edits,
        output=trace.with_name("fork.fptrace.jsonl"),
        load_module=recorded_module_loader(trace),
        provider=provider,
        clock=FixedClock(T0),
    )
    return point, outcome


def calls(path: Path) -> list[LlmCallEvent]:
    with TraceReader(path) as reader:
        return [r for r in reader if isinstance(r, LlmCallEvent)]


def run_start(path: Path) -> RunStartEvent:
    with TraceReader(path) as reader:
        return next(r for r in reader if isinstance(r, RunStartEvent))


def raw_request(request: LlmRequest) -> str:
    return request.model_dump_json()


def injection_ids(request: LlmRequest) -> set[str | None]:
    return {s.injection_id for s in request.system_prompt} | {t.injection_id for t in request.tools}


def test_a_fork_that_drops_an_injection_replays_before_its_pass_and_names_its_parent(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    point, outcome = fork(parent, 3, [ForkEdit("drop-injection", "refund-policy")])
    assert outcome.result.status == "completed"
    before, after = calls(parent), calls(outcome.path)
    assert point.before == 2
    # The calls before pass 3: the parent's requests and replies, byte for byte.
    assert [raw_request(c.request) for c in after[:2]] == [raw_request(c.request) for c in before[:2]]
    assert [c.response for c in after[:2]] == [c.response for c in before[:2]]
    # Pass 3: the parent sent refund-policy's segment, the fork did not (and nothing else changed).
    assert "refund-policy" in injection_ids(before[2].request)
    assert "refund-policy" not in injection_ids(after[2].request)
    assert injection_ids(after[2].request) == injection_ids(before[2].request) - {"refund-policy"}
    with TraceReader(outcome.path) as reader:
        assert reader.problems() == []
    start = run_start(outcome.path)
    assert start.fork_of == ForkOrigin(
        trace=parent.name,
        run_id="parent-support",
        turn=1,
        at_pass=3,
        edits=[ForkEditRecord(kind="drop-injection", target="refund-policy")],
        provider="scripted",
    )
    assert start.run_id != "parent-support" and start.options["scenario"] == "support"
    first = outcome.first_difference()
    assert first is not None and (first.call, first.iteration) == (3, 3)
    assert "system_prompt" in first.what


def test_the_drop_holds_on_every_later_pass(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "planted-fact")
    _, outcome = fork(parent, 1, [ForkEdit("drop-injection", "vip-override")])
    assert outcome.result.status == "completed" and outcome.calls
    assert all("vip-override" not in injection_ids(c.request) for c in outcome.calls)
    # planted-fact's variant was rebuilt from run_start.options, as the parent ran it.
    assert run_start(outcome.path).options["variant"] == "single"


def test_a_tool_result_edit_changes_the_next_request(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    text = '{"status": "refund refused: the order is older than a year"}'
    _, outcome = fork(parent, 3, [ForkEdit("tool-result", "call_2", text)])
    before, after = calls(parent), calls(outcome.path)
    assert raw_request(after[1].request) == raw_request(before[1].request)

    def result_of(request: LlmRequest) -> str:
        return next(m.content for m in request.messages if m.tool_call_id == "call_2")

    assert result_of(before[2].request) != text
    assert result_of(after[2].request) == text
    assert all(result_of(c.request) == text for c in after[2:])


def test_leases_revoked_and_granted_at_the_pass(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "leases")
    _, revoked = fork(parent, 2, [ForkEdit("revoke-lease", "wire-format")])
    assert "wire-format" in injection_ids(calls(parent)[1].request)
    assert "wire-format" not in injection_ids(revoked.calls[1].request)
    granted_path = tmp_path / "granted"
    granted_path.mkdir()
    parent2 = demo_trace(granted_path, "leases")
    _, granted = fork(parent2, 3, [ForkEdit("grant-lease", "wire-format")])
    assert "wire-format" not in injection_ids(calls(parent2)[2].request)
    assert "wire-format" in injection_ids(granted.calls[2].request)


def test_a_user_message_edit_reaches_the_pass(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    _, outcome = fork(parent, 1, [ForkEdit("user-message", value="Cancel order A-17.")])
    first = outcome.calls[0].request
    assert [m.content for m in first.messages if m.role == "user"][-1] == "Cancel order A-17."
    # At a turn's first pass the turn itself starts with the new message.
    with TraceReader(outcome.path) as reader:
        turn = next(r for r in reader if isinstance(r, TurnStartEvent))
    assert turn.user_message == "Cancel order A-17."


def test_a_user_message_edit_at_a_later_pass_edits_the_requests_from_there(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path, "leases")
    _, outcome = fork(parent, 2, [ForkEdit("user-message", value="And 300 EUR?")])
    before = calls(parent)
    assert raw_request(outcome.calls[0].request) == raw_request(before[0].request)
    for call in outcome.calls[1:]:
        assert [m.content for m in call.request.messages if m.role == "user"] == ["And 300 EUR?"]


def test_a_fork_never_overwrites_its_parent(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    original = parent.read_bytes()
    point = load_fork_point(parent, at_pass=2)
    with pytest.raises(BacktrackError, match="refusing to write the fork over its parent trace"):
        run_fork(
            point,
            [ForkEdit("drop-injection", "tone")],
            output=parent,
            load_module=recorded_module_loader(parent),
            overwrite=True,
        )
    assert parent.read_bytes() == original


def test_continuing_on_replay_stops_where_the_recording_has_no_answer(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    _, outcome = fork(parent, 3, [ForkEdit("drop-injection", "refund-policy")], provider="replay")
    assert outcome.result.status == "failed"
    assert outcome.result.error is not None
    assert outcome.result.error.message.startswith(
        "diverged at call 3: the recording has no answer for this request"
    )
    assert len(outcome.calls) == 3 and outcome.calls[2].error is not None
    with TraceReader(outcome.path) as reader:
        assert reader.problems() == []


@pytest.mark.parametrize(
    ("at_pass", "edit", "message"),
    [
        (
            3,
            ForkEdit("drop-injection", "refund-polcy"),
            "--drop-injection 'refund-polcy': the run declares no such injection; did you mean 'refund-policy'?",
        ),
        (1, ForkEdit("drop-injection", "refund-policy"), "it is not active at pass 1 of turn 1"),
        (3, ForkEdit("add-injection", "tone"), "--add-injection 'tone': it is already active at pass 3"),
        (3, ForkEdit("tool-result", "call_9", "x"), "did you mean 'call_3'?"),
        (3, ForkEdit("revoke-lease", "tone"), "no lease on it was granted before pass 3"),
    ],
)
def test_bad_edits_are_refused_before_anything_runs(
    tmp_path: Path, at_pass: int, edit: ForkEdit, message: str
) -> None:
    parent = demo_trace(tmp_path)
    with pytest.raises(BacktrackError) as raised:
        fork(parent, at_pass, [edit])
    assert message in str(raised.value)
    assert not (tmp_path / "fork.fptrace.jsonl").exists()


def test_the_choices_at_a_pass_are_what_the_checks_accept(tmp_path: Path) -> None:
    point = load_fork_point(demo_trace(tmp_path), at_pass=3)
    choices = point.choices()
    assert choices["drop-injection"] == ["tone", "refund-policy", "wire-format", "triage", "billing"]
    assert choices["tool-result"] == ["call_1", "call_2", "call_3"]
    assert choices["revoke-lease"] == ["refund-policy", "wire-format"]
    assert "refund" in choices["add-injection"] and "tone" not in choices["add-injection"]
    for kind, targets in choices.items():
        for target in targets:
            check_edits(point, [ForkEdit(kind, target, "x" if kind == "tool-result" else None)])  # type: ignore[arg-type]


def test_a_pass_out_of_range_is_refused(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    with pytest.raises(
        BacktrackError, match=r"pass 9 is out of range: turn 1 of run 'parent-support' has passes 1\.\.5"
    ):
        load_fork_point(parent, at_pass=9)


def test_an_imported_run_cannot_be_forked(tmp_path: Path) -> None:
    trace = tmp_path / "imported.fptrace.jsonl"
    import_agentfootprint_file(FIXTURES / "agentfootprint" / "support-refund.recording.json", trace)
    with pytest.raises(BacktrackError, match="was not recorded in a form fpdebug can rebuild"):
        load_fork_point(trace, at_pass=1)


def test_a_live_continuation_needs_live(tmp_path: Path) -> None:
    parent = demo_trace(tmp_path)
    point = load_fork_point(parent, at_pass=3)
    with pytest.raises(BacktrackError, match="pass --live to allow it"):
        run_fork(
            point,
            [ForkEdit("provider", value="anthropic")],
            output=tmp_path / "fork.fptrace.jsonl",
            load_module=recorded_module_loader(parent),
            provider="anthropic",
            model="claude-test",
        )
    assert not (tmp_path / "fork.fptrace.jsonl").exists()


def test_a_fork_of_a_run_that_asked_gives_the_parents_answer_again(tmp_path: Path) -> None:
    # argument-ask: pass 1's call waited for the user's ACC-7731 (docs/honesty.md §12.7)
    parent = demo_trace(tmp_path, "argument-ask")
    text = '{"account_id": "ACC-7731", "type": "checking", "balance": 10.0, "currency": "USD"}'
    _, outcome = fork(parent, 2, [ForkEdit("tool-result", "call_1", text)])
    assert outcome.result.status == "completed"
    assert outcome.result.content == "Your checking account ACC-7731 has a balance of $10.00."
    with TraceReader(outcome.path) as reader:
        kinds = [r.kind for r in reader]
        answers = [r.answer for r in reader if r.kind == "ask_answer"]  # type: ignore[union-attr]
    assert answers == ["ACC-7731"] and kinds[-1] == "run_end"

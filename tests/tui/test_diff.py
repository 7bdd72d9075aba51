"""The pass diff: what entered and left each slot between two passes, and why (pure and through the app)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from fpdebug.trace.schema import (
    ActiveReason,
    CursorMoveEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LeaseRecord,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    PromptSegment,
    PrunedLease,
    RunEndEvent,
    RunStartEvent,
    SlotEntry,
    SlotRouting,
    TurnEndEvent,
    TurnStartEvent,
)
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.diff import DiffView, diff_document
from fpdebug.views.pass_diff import ACTIVE, Change, PassDiff, iter_changes, pass_diff
from fpdebug.views.session import TraceSession
from tests.trace.samples import Script, support_run
from tests.tui.helpers import (
    document_text,
    load_session,
    opened,
    record_notices,
    run_checks,
    run_palette,
    screen_text,
    wait_for,
)
from tests.tui.traces import sample


def _by_id(diff: PassDiff, slot: str) -> dict[str, Change]:
    return {change.id: change for change in diff.slots[slot]}


def _words(session: TraceSession, diff: PassDiff) -> str:
    return document_text(diff_document(session, diff, Palette(), marked=True))


# ----------------------------------------------------------------------------------------------
# Traces built here


def _segment(id_: str, text: str | None = None) -> PromptSegment:
    return PromptSegment(source="instructions", injection_id=id_, text=text or f"{id_} says hello")


def _pass(script: Script, iteration: int, ids: list[str], reasons: list[ActiveReason]) -> int:
    entries = [SlotEntry(id=id_, source="instructions", reason=f"{id_} rides") for id_ in ids]
    return script.add(
        PassEvent,
        iteration=iteration,
        active_ids=ids,
        reasons=reasons,
        evaluated_total=4,
        by_slot=SlotRouting(system_prompt=entries),
    )


def _call(
    script: Script,
    iteration: int,
    ids: list[str],
    messages: list[Message],
    texts: dict[str, str] | None = None,
) -> int:
    texts = texts or {}
    return script.add(
        LlmCallEvent,
        iteration=iteration,
        call_index=iteration,
        provider="scripted",
        model="m",
        request=LlmRequest(
            system_prompt=[
                PromptSegment(source="base", text="sys"),
                *(_segment(i, texts.get(i)) for i in ids),
            ],
            messages=messages,
        ),
        response=LlmResponse(content="ok"),
        route="final",
    )


def write_two_turns(path: Path) -> dict[str, int]:
    """Turn 1: billing (cursor) then a wire-format lease; turn 2: the cursor moves to refund."""
    script, at = Script("two-turns"), {}
    script.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=4)
    lease = LeaseRecord(
        instruction_id="wire-format",
        delivery_lease="next-call",
        skill_id="billing",
        tool_name="fetch",
        tool_call_id="c1",
        iteration=1,
    )
    script.turn = 1
    at["turn1"] = script.add(TurnStartEvent, user_message="first")
    cursor = ActiveReason(id="billing", via="cursor")
    always = ActiveReason(id="tone", via="always")
    at["t1i1"] = _pass(script, 1, ["tone", "billing"], [always, cursor])
    script.add(CursorMoveEvent, iteration=1, to_skill="billing", by="entry", strength="lexical")
    _call(script, 1, ["tone", "billing"], [Message(role="user", content="first")])
    at["grant"] = script.add(LeaseGrantEvent, iteration=1, lease=lease)
    leased = ActiveReason(
        id="wire-format",
        via="lease",
        tool_name="fetch",
        tool_call_id="c1",
        at_iteration=1,
        delivery_lease="next-call",
        tenant="billing",
    )
    at["t1i2"] = _pass(script, 2, ["tone", "billing", "wire-format"], [always, cursor, leased])
    at["prune"] = script.add(
        LeasePruneEvent,
        iteration=2,
        site="evaluate",
        tenant="billing",
        pruned=[PrunedLease(**lease.model_dump(), reason="spent")],
    )
    script.add(
        CursorMoveEvent, iteration=2, from_skill="billing", to_skill="billing", by="stay", strength="assumed"
    )
    _call(script, 2, ["tone", "billing", "wire-format"], [Message(role="user", content="first")])
    script.add(TurnEndEvent, iteration=None, final_content="ok", iteration_count=2)
    script.turn = 2
    at["turn2"] = script.add(TurnStartEvent, user_message="second")
    at["t2i1"] = _pass(script, 1, ["tone", "refund"], [always, ActiveReason(id="refund", via="cursor")])
    script.add(
        CursorMoveEvent,
        iteration=1,
        from_skill="billing",
        to_skill="refund",
        by="route",
        strength="structural",
    )
    _call(
        script,
        1,
        ["tone", "refund"],
        [
            Message(role="user", content="first"),
            Message(role="assistant", content="ok"),
            Message(role="user", content="second"),
        ],
        texts={"tone": "tone says hello\nand keep it brief"},
    )
    script.add(TurnEndEvent, iteration=None, final_content="ok", iteration_count=1)
    script.turn = None
    script.add(RunEndEvent, status="completed", turns=2)
    script.write(path)
    return at


def write_two_runs(path: Path) -> None:
    """Two one-iteration runs in one file."""
    script = Script("run-a")
    for run_id, ids in (("run-a", ["tone", "billing"]), ("run-b", ["tone", "refund"])):
        script.run_id = run_id
        script.turn = None
        script.add(RunStartEvent, turn=None, provider="scripted", model="m", max_iterations=4)
        script.turn = 1
        script.add(TurnStartEvent, user_message="hi")
        _pass(script, 1, ids, [ActiveReason(id=i, via="always") for i in ids])
        _call(script, 1, ids, [Message(role="user", content="hi")])
        script.add(TurnEndEvent, iteration=None, final_content="ok", iteration_count=1)
        script.turn = None
        script.add(RunEndEvent, status="completed", turns=1)
    script.write(path)


# ----------------------------------------------------------------------------------------------
# pass_diff


class TestPassDiff:
    def test_support_i2_vs_i4_says_what_entered_left_and_why(self) -> None:
        session = load_session(sample("support"))
        diff = pass_diff(session, 1, 3)
        assert (diff.a.label, diff.b.label) == ("T1·I2", "T1·I4")
        assert not diff.across_turns and not diff.swapped and diff.walked == 2
        prompt = _by_id(diff, "system-prompt")
        assert diff.kept["system-prompt"] == ["tone", "triage"]
        refund = prompt["refund"]
        assert refund.change == "entered" and refund.label == "T1·I4"
        assert "read_skill" in refund.why and "call_4" in refund.why
        billing = prompt["billing"]
        assert billing.change == "left"
        assert billing.why == "the cursor moved billing → refund by model-pick"
        policy = prompt["refund-policy"]
        assert policy.change == "came-and-went" and policy.label == "T1·I3"
        assert "lease until-skill-exit granted by check_policy" in policy.why
        assert policy.left_label == "T1·I4" and "tenure-ended" in str(policy.why_left)
        wire = prompt["wire-format"]
        assert wire.change == "came-and-went" and "spent at T1·I3" in str(wire.why_left)
        moves = [(step.from_skill, step.to_skill, step.by) for step in diff.cursor_steps]
        assert moves == [("billing", "refund", "model-pick")]
        leases = {note.instruction_id: note for note in diff.leases}
        assert leases["refund-policy"].pruned == "tenure-ended at T1·I4 (evaluate, tenant refund)"
        assert leases["refund-policy"].granted == "check_policy call_2 at T1·I2"
        assert leases["wire-format"].pruned is not None and leases["wire-format"].pruned.startswith("spent")
        tools = {change.name: change for change in diff.tools}
        assert tools["issue_refund"].change == "entered" and tools["check_policy"].change == "left"
        assert "billing, which offered it, left" in tools["check_policy"].why
        segments = {(segment.change, segment.injection_id) for segment in diff.segments}
        assert segments == {("added", "refund"), ("removed", "billing")}
        assert diff.messages_counts == (3, 8)
        assert [m.what for m in diff.messages if m.role == "tool"] == [
            "tool result of check_policy call_2",
            "tool result of fetch_invoice call_3",
            "tool result of read_skill call_4",
        ]
        assert not diff.identical

    def test_the_later_pass_chosen_first_is_read_forwards(self) -> None:
        session = load_session(sample("support"))
        forwards, backwards = pass_diff(session, 1, 3), pass_diff(session, 3, 1)
        assert backwards.swapped and not forwards.swapped
        assert (backwards.a.label, backwards.b.label) == ("T1·I2", "T1·I4")
        assert [(c.id, c.change) for c in iter_changes(backwards)] == [
            (c.id, c.change) for c in iter_changes(forwards)
        ]

    def test_the_same_iteration_twice_is_identical(self) -> None:
        session = load_session(sample("support"))
        diff = pass_diff(session, 2, 2)
        assert diff.same and diff.identical
        assert "Identical" in _words(session, diff)
        assert "the same pass on both sides" in _words(session, diff)

    def test_neighbours_whose_context_did_not_change_say_identical(self) -> None:
        session = load_session(sample("planted-fact"))
        diff = pass_diff(session, 0, 1)
        assert not any(diff.slots.values())
        assert diff.messages  # the conversation grew: the reply and the tool result

    def test_tools_offered_on_both_calls_are_named_not_called_nothing(self) -> None:
        # planted-fact I1 → I2: no injection is routed to the tools slot, yet lookup_order is on both calls.
        session = load_session(sample("planted-fact"))
        diff = pass_diff(session, 0, 1)
        assert diff.tools == [] and diff.tools_same == ["lookup_order"]
        words = " ".join(_words(session, diff).split())
        assert "tools no injection on either side; offered on both calls: lookup_order" in words
        assert "tools offered on both calls: lookup_order" in words
        assert "nothing on either side" not in words

    def test_tools_on_one_call_only_still_name_those_on_both(self) -> None:
        session = load_session(sample("support"))
        diff = pass_diff(session, 0, 1)  # billing brings check_policy and fetch_invoice
        words = " ".join(_words(session, diff).split())
        assert diff.tools_same == ["lookup_order", "read_skill"]
        assert "tools offered on both calls: lookup_order, read_skill" in words
        assert "+ check_policy offered by billing" in words

    def test_across_turns_is_labelled_and_walked(self, tmp_path: Path) -> None:
        path = tmp_path / "two.fptrace.jsonl"
        write_two_turns(path)
        session = load_session(path)
        diff = pass_diff(session, 0, 2)
        assert diff.across_turns and diff.walked == 2
        prompt = _by_id(diff, "system-prompt")
        assert prompt["billing"].change == "left"
        assert prompt["billing"].why == "the cursor moved billing → refund by route"
        assert prompt["wire-format"].change == "came-and-went"
        assert "spent at T1·I2" in str(prompt["wire-format"].why_left)
        assert prompt["refund"].label == "T2·I1"
        assert "across turns: turn 1 → turn 2" in _words(session, diff)
        assert [m.what for m in diff.messages] == ["assistant reply", "user message"]
        changed = [segment for segment in diff.segments if segment.change == "changed"]
        assert [(s.injection_id, s.diff[-1]) for s in changed] == [("tone", "+and keep it brief")]
        assert {(s.change, s.injection_id) for s in diff.segments} == {
            ("changed", "tone"),
            ("added", "refund"),
            ("removed", "billing"),
        }
        assert "+and keep it brief" in _words(session, diff)

    def test_across_runs_nothing_is_walked(self, tmp_path: Path) -> None:
        path = tmp_path / "runs.fptrace.jsonl"
        write_two_runs(path)
        session = load_session(path)
        assert len(session.iterations) == 2
        diff = pass_diff(session, 0, 1)
        assert diff.across_runs and diff.cursor_steps == [] and diff.leases == []
        prompt = _by_id(diff, "system-prompt")
        assert prompt["refund"].change == "entered"
        assert "another run" in prompt["billing"].why
        assert "across runs: run-a → run-b" in _words(session, diff)

    def test_passes_without_slot_routing_compare_their_active_sets(self, tmp_path: Path) -> None:
        script, _lines = support_run()
        path = script.write(tmp_path / "support-run.fptrace.jsonl")
        session = load_session(path)
        diff = pass_diff(session, 0, 3)
        assert list(diff.slots) == [ACTIVE]
        changes = _by_id(diff, ACTIVE)
        assert changes["style"].change == "entered"
        assert changes["triage"].change == "left"
        assert changes["wire-format"].change == "came-and-went"
        assert str(changes["wire-format"].why_left).startswith("its next-call lease")
        assert next(note.changes for note in diff.maps)[0][1] == "parked"
        assert "no slot routing" in _words(session, diff)

    def test_a_long_walk_is_cut_and_says_so(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from fpdebug.views import pass_diff as module

        monkeypatch.setattr(module, "MAX_WALK", 2)
        session = load_session(sample("support"))
        diff = pass_diff(session, 0, 4)
        assert diff.walk_cut and diff.walked == 2  # two passes, then B
        assert "the walk between A and B was cut" in _words(session, diff)
        assert _by_id(diff, "system-prompt")["refund"].change == "entered"

    def test_every_pair_of_a_hostile_trace_is_shown_without_error(
        self, hostile_trace: tuple[Path, dict[str, int]]
    ) -> None:
        session = load_session(hostile_trace[0])
        rows = range(len(session.iterations))
        assert len(rows) >= 2
        for a in rows:
            for b in rows:
                diff = pass_diff(session, a, b)
                words = _words(session, diff)
                assert "\x1b" not in words  # control sequences arrive as visible escapes


# ----------------------------------------------------------------------------------------------
# In the app


def _diff_text(screen: TraceScreen) -> str:
    return " ".join(" ".join(screen.query_one(DiffView).text_lines()).split())


async def _from_the_first_pass(pilot: Pilot[object], screen: TraceScreen) -> None:
    """Back to the Passes view on the first iteration, as at launch (no mark is left by the checks)."""
    await pilot.press("1", "g")
    assert await wait_for(pilot, lambda: screen.view == "passes" and screen.selected == 0)
    assert screen.query_one(DiffView).mark is None


async def mark_a_then_select_b(pilot: Pilot[object], screen: TraceScreen) -> None:
    await pilot.press("j", "m", "j", "j", "6")
    await pilot.pause()
    view = screen.query_one(DiffView)
    assert screen.view == "diff" and view.mark == 1 and view.pair == (1, 3)
    text = _diff_text(screen)
    assert "Diff A T1·I2 → B T1·I4" in text
    assert "A is the marked iteration" in text
    assert "± refund-policy (instructions) came and went between A and B" in text
    # ] walks B while A stays
    await pilot.press("right_square_bracket")
    await pilot.pause()
    assert view.pair == (1, 4) and "B T1·I5" in _diff_text(screen)
    # m on the marked pass clears the mark: A becomes the pass before B again
    await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket", "m")
    await pilot.pause()
    assert view.mark is None and view.pair == (0, 1)
    assert "A is the pass before B" in _diff_text(screen)


async def without_a_mark_each_pass_is_compared_with_the_one_before(
    pilot: Pilot[object], screen: TraceScreen
) -> None:
    await _from_the_first_pass(pilot, screen)
    await pilot.press("6")
    await pilot.pause()
    assert "The first pass of a run has no pass before it" in _diff_text(screen)
    await pilot.press("right_square_bracket")
    await pilot.pause()
    assert "Diff A T1·I1 → B T1·I2" in _diff_text(screen)


async def palette_one_iteration_pairs_it_with_the_selection(
    pilot: Pilot[object], screen: TraceScreen
) -> None:
    await _from_the_first_pass(pilot, screen)
    said = record_notices(pilot.app)
    await pilot.press("G")
    await run_palette(pilot, "diff: 1", offered="diff: iteration 1 vs iteration 5")
    await wait_for(pilot, lambda: screen.view == "diff")
    await pilot.pause()
    assert screen.query_one(DiffView).pair == (0, 4)
    await run_palette(pilot, "diff: iteration 9 vs 2", offered="diff: iteration 9 vs iteration 2")
    # The refusal is a notification, posted after the palette closes: wait for it.
    assert await wait_for(pilot, lambda: any("No iteration 9" in notice for notice in said))
    assert screen.query_one(DiffView).pair == (0, 4)  # nothing changed


async def palette_diff_iteration_a_vs_b(pilot: Pilot[object], screen: TraceScreen) -> None:
    await run_palette(pilot, "diff: iteration 4 vs 2", offered="diff: iteration 4 vs iteration 2")
    await wait_for(pilot, lambda: screen.view == "diff" and screen.query_one(DiffView).mark == 3)
    await pilot.pause()
    view = screen.query_one(DiffView)
    assert screen.selected == 1 and view.mark == 3
    text = _diff_text(screen)
    assert "Diff A T1·I2 → B T1·I4" in text and "A was the later pass" in text


async def the_same_iteration_twice_says_identical(pilot: Pilot[object], screen: TraceScreen) -> None:
    screen.compare(2, 2)
    await pilot.pause()
    assert "Identical A and B are the same pass" in _diff_text(screen)


async def enter_on_a_why_row_jumps_to_its_pass(pilot: Pilot[object], screen: TraceScreen) -> None:
    screen.compare(1, 3)
    await pilot.pause()
    view = screen.query_one(DiffView)
    assert view.has_focus
    texts = view.link_texts()
    target = next(i for i, text in enumerate(texts) if text.startswith("entered at T1·I3"))
    for _ in range(target + 1):
        await pilot.press("j")
    assert view.link == target and view.current_jump is not None
    await pilot.press("enter")
    await pilot.pause()
    assert screen.view == "passes" and screen.selected == 2  # T1·I3


@pytest.mark.anyio
class TestDiffView:
    async def test_marks_brackets_palette_and_jumps_in_one_session(self) -> None:
        async with opened(sample("support")) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                mark_a_then_select_b,  # first: it starts from launch
                without_a_mark_each_pass_is_compared_with_the_one_before,
                palette_one_iteration_pairs_it_with_the_selection,
                palette_diff_iteration_a_vs_b,  # after the one above: it sets the mark anew
                the_same_iteration_twice_says_identical,
                enter_on_a_why_row_jumps_to_its_pass,
            )

    async def test_the_screen_names_the_tools_offered_on_both_calls(self) -> None:
        async with opened(sample("planted-fact")) as (pilot, _screen):
            await pilot.press("j", "6")
            assert await wait_for(pilot, lambda: "tools offered" in screen_text(pilot.app))
            drawn = screen_text(pilot.app)
            assert "no injection on either side; offered on both calls: lookup_order" in drawn
            assert "tools offered  on both calls: lookup_order" in drawn

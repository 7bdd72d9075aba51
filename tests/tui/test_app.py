"""Pilot tests of every interaction of the debugger: open, navigate, views, search, palette, help, follow."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from textual import events
from textual.app import App
from textual.command import CommandInput, CommandList, CommandPalette
from textual.message import Message
from textual.pilot import Pilot

from fpdebug.cli import main
from fpdebug.trace.schema import RunEndEvent
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.app import FpdebugApp, TraceSource, binding_ids, keymap_ids
from fpdebug.tui.commands import PaletteCommand, fixed_commands, parametric_command
from fpdebug.tui.drive import DriveApp
from fpdebug.tui.messages import LoadFinished, TraceGrew
from fpdebug.tui.screens.help_screen import HelpDocument, HelpScreen
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.calls import CallView
from fpdebug.tui.widgets.events import EventDetail, EventList
from fpdebug.tui.widgets.inspector import PassInspector
from fpdebug.tui.widgets.leases import LeaseGantt
from fpdebug.tui.widgets.timeline import IterationTimeline
from tests.conftest import T0
from tests.tui.helpers import (
    NARROW,
    back_to_the_first_pass,
    opened,
    run_checks,
    run_palette,
    screen_segments,
    screen_text,
    wait_for,
)
from tests.tui.traces import MARKUP, grow, sample

pytestmark = pytest.mark.anyio


def type_at_once(app: App[object], *keys: str) -> None:
    """Queue key presses back to back, as a terminal delivers fast typing (``pilot.press`` waits
    for the app to go idle after each key, which hides what a key does to the next one)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def _inspector_text(screen: TraceScreen) -> str:
    """The inspector's rows joined into one line of words (wrapping does not split phrases)."""
    return " ".join(" ".join(screen.query_one(PassInspector).text_lines()).split())


class TestOpen:
    async def test_a_saved_trace_is_read_in_slices(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from fpdebug.tui.screens import loader

        monkeypatch.setattr(loader, "FIRST_SLICE", 6)
        monkeypatch.setattr(loader, "FIRST_CHUNK", 512)
        grew: list[int] = []

        def hook(message: Message) -> None:
            if isinstance(message, TraceGrew):
                grew.append(1)

        async with opened(sample("support"), message_hook=hook) as (_, screen):
            assert screen.timeline.total == 5
        assert len(grew) >= 2  # the first slice, then the rest


class TestNavigation:
    async def test_keys_typed_right_after_a_view_switch_go_to_the_new_view(self) -> None:
        async with opened(sample("support"), size=NARROW) as (pilot, screen):
            app = pilot.app
            assert screen.selected == 0
            type_at_once(app, "3", "G")  # G is queued before 3 is handled, as a terminal sends them
            await pilot.pause()
            calls = screen.query_one("#view-calls", CallView)
            assert screen.view == "calls" and app.focused is calls
            assert screen.selected == 0  # the timeline did not take the G
            assert calls.max_scroll_y > 0  # and G scrolled it to the bottom (animated)
            assert await wait_for(pilot, lambda: calls.scroll_y == calls.max_scroll_y)
            type_at_once(app, "4", "G")
            await pilot.pause()
            events = screen.query_one(EventList)
            assert app.focused is events and events.cursor == screen.session.lines - 1
            type_at_once(app, "1", "G")
            await pilot.pause()
            assert app.focused is screen.timeline and screen.selected == screen.timeline.total - 1


class TestRepaint:
    """A new selection is painted in one frame: documents change length without a screen layout."""

    async def test_a_jump_changes_the_inspector_without_a_layout(self) -> None:
        async with opened(sample("support"), size=(160, 30)) as (pilot, screen):
            inspector = screen.query_one(PassInspector)
            layouts: list[object] = []
            screen.screen_layout_refresh_signal.subscribe(inspector, layouts.append)
            heights: set[int] = set()
            for row in (2, 0, 4, 1, 3):
                screen.select_row(row)
                assert await wait_for(pilot, lambda: inspector.row == row)
                await pilot.pause()
                height = inspector.document_height
                heights.add(height)
                # the scroll range and the scrollbar still follow the document
                assert inspector.virtual_size.height == height
                assert inspector.vertical_scrollbar.window_virtual_size == height
                assert inspector.max_scroll_y == max(height - inspector.scrollable_content_region.height, 0)
            assert len(heights) > 1 and layouts == []
            inspector.focus()
            await pilot.press("G")  # the last row of the last document is reachable
            last = inspector.text_lines()[-1].strip()
            assert await wait_for(pilot, lambda: last in screen_text(pilot.app))


async def palette_offers(pilot: Pilot[object], typed: str) -> list[str]:
    """What the palette lists for ``typed`` (each command with its help), once the list settles."""
    await pilot.press("ctrl+p")
    assert await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
    pilot.app.screen.query_one(CommandInput).value = typed
    options = pilot.app.screen.query_one(CommandList)
    assert await wait_for(pilot, lambda: options.option_count > 0)
    await pilot.pause(0.3)  # every provider has answered (they answer within milliseconds)
    offered = []
    for index in range(options.option_count):
        prompt = options.get_option_at_index(index).prompt
        offered.append(" ".join(getattr(prompt, "plain", str(prompt)).split()))
    await pilot.press("escape")
    assert await wait_for(pilot, lambda: not isinstance(pilot.app.screen, CommandPalette))
    return offered


# ----------------------------------------------------------------------------------------------
# Shared sessions: starting the app and loading the trace is most of a pilot test's time, so the
# checks that open the same trace at the same size run one after another in one session
# (``run_checks`` names the check that failed). A check that needs the launch state sets it up.


async def rows_appear_and_the_first_iteration_is_explained(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    assert screen.timeline.total == 5
    assert screen.selected == 0
    assert "Iteration 1 · turn 1 · run sample-support" in _inspector_text(screen)
    assert any(isinstance(message, TraceGrew) for message in seen)
    assert any(isinstance(message, LoadFinished) for message in seen)
    text = screen_text(pilot.app)
    assert "run sample-support" in text and "■ completed" in text
    assert "1,920 in / 74 out tokens" in text


async def keys_move_the_cursor_and_the_inspector_follows(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("j", "j")
    assert screen.selected == 2
    assert "Iteration 3" in _inspector_text(screen)
    assert "lease until-skill-exit granted by check_policy" in _inspector_text(screen)
    await pilot.press("G")
    assert screen.selected == 4
    await pilot.press("k")
    assert screen.selected == 3
    await pilot.press("g")
    assert screen.selected == 0
    await pilot.press("down", "end", "home")
    assert screen.selected == 0


async def brackets_step_iterations_from_any_view(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("3", "right_square_bracket", "right_square_bracket")
    await pilot.pause()
    assert screen.view == "calls" and screen.selected == 2
    lines = screen.query_one(CallView).text_lines()
    assert lines[0].startswith("Call 3 · scripted / scripted-support · T1·I3")
    assert any("[3] instructions · refund-policy" in line for line in lines)
    await pilot.press("left_square_bracket")
    assert screen.selected == 1


async def enter_opens_the_call_and_views_switch_by_key_and_click(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("enter")
    await pilot.pause()
    assert screen.view == "calls"
    await pilot.press("2")
    assert screen.view == "leases"
    await pilot.press("4")
    assert screen.view == "events"
    await pilot.click("#tab-passes")
    await pilot.pause()
    assert screen.view == "passes"


async def a_mouse_click_selects_a_row(pilot: Pilot[object], screen: TraceScreen, seen: list[Message]) -> None:
    await pilot.click("#timeline", offset=(3, 3))
    await pilot.pause()
    assert screen.selected == 3


async def events_and_timeline_stay_in_step(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("j", "4")
    await pilot.pause()
    events = screen.query_one(EventList)
    assert events.cursor == screen.session.iterations[1].first_line
    await wait_for(pilot, lambda: screen.query_one(EventDetail).line == events.cursor)
    for _ in range(7):
        await pilot.press("j")
    assert screen.selected == screen.session.row_at_line(events.cursor)
    assert screen.selected == 2


async def opening_a_lease_selects_the_pass_that_pruned_it(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("2")
    await pilot.pause()
    gantt = screen.query_one(LeaseGantt)
    assert gantt.cursor == 0
    assert "tenure-ended T1·I4" in screen_text(pilot.app)
    await pilot.press("enter")
    await pilot.pause()
    assert screen.view == "passes" and screen.selected == 3


async def a_filter_is_listed_once_and_says_what_it_keeps_in_the_view_on_show(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    offered = await palette_offers(pilot, "filter: kind lease_prune")
    same = [text for text in offered if text.startswith("filter: kind lease_prune")]
    assert same == [
        "filter: kind lease_prune Show only iterations where a lease was pruned (the Passes view)"
    ]
    await pilot.press("4")
    offered = await palette_offers(pilot, "filter: kind lease_prune")
    same = [text for text in offered if text.startswith("filter: kind lease_prune")]
    assert same == ["filter: kind lease_prune Show only lease_prune lines (the Events view)"]
    await pilot.press("2")
    offered = await palette_offers(pilot, "filter: kind:lease_prune")  # the same filter, typed
    same = [text for text in offered if "lease_prune" in text and text.startswith("filter:")]
    assert same == ["filter: kind lease_prune Show only leases that were pruned (the Leases view)"]


async def each_view_is_offered_only_the_filters_that_mean_something_there(
    pilot: Pilot[object], screen: TraceScreen, seen: list[Message]
) -> None:
    await pilot.press("2")
    texts = [command.text for command in fixed_commands(screen)]
    assert "filter: kind lease_prune" in texts and "filter: badge park" not in texts
    await pilot.press("7")
    texts = [command.text for command in fixed_commands(screen)]
    assert not [text for text in texts if text.startswith("filter:")]  # not even filter: clear
    offered = await palette_offers(pilot, "clear")  # "diff: clear mark" is, "filter: clear" is not
    assert any(text.startswith("diff: clear mark") for text in offered)
    assert not [text for text in offered if text.startswith("filter:")]
    assert parametric_command(screen, "filter: refund") is None  # the Backtrack view has no rows
    await pilot.press("4")
    texts = [command.text for command in fixed_commands(screen)]
    assert texts.count("filter: kind lease_prune") == 1 and "filter: badge park" in texts
    assert "filter: clear" in texts
    # what the Events view's filter of a command keeps is what its help says
    await run_palette(pilot, "filter: kind lease_prune")
    events = screen.query_one(EventList)
    assert await wait_for(pilot, lambda: events.row_filter is not None and events.row_filter.done)
    kept = events.row_filter.rows  # type: ignore[union-attr]
    assert kept and {screen.session.line_kind(line) for line in kept} == {"lease_prune"}


async def slash_filters_rows_and_n_cycles_through_matches(
    pilot: Pilot[object], screen: TraceScreen, **_: object
) -> None:
    timeline = screen.query_one(IterationTimeline)
    await pilot.press("slash", *"kind:lease_prune")
    await wait_for(pilot, lambda: timeline.row_filter is not None and timeline.row_filter.done)
    await pilot.press("enter")
    await pilot.pause()
    assert timeline.visible_count == 2
    assert [timeline.row_at(i) for i in range(2)] == [1, 2]
    assert screen.selected == 1
    assert "filter kind:lease_prune 2 matches" in screen_text(pilot.app)
    await pilot.press("n")
    assert screen.selected == 2
    await pilot.press("n")
    assert screen.selected == 1
    await pilot.press("N")
    assert screen.selected == 2
    await pilot.press("escape")
    assert timeline.row_filter is None and timeline.visible_count == 4


async def brackets_walk_the_filtered_timeline(pilot: Pilot[object], screen: TraceScreen, **_: object) -> None:
    screen.apply_filter(screen.timeline, "badge:grant")
    await wait_for(pilot, lambda: screen.timeline.row_filter.done)  # type: ignore[union-attr]
    await pilot.pause()
    await pilot.press("3")
    assert screen.selected == 0
    await pilot.press("right_square_bracket")
    assert screen.selected == 2  # iteration 2 has no grant: it is hidden


async def the_events_view_has_its_own_filter(
    pilot: Pilot[object], screen: TraceScreen, at: dict[str, int], **_: object
) -> None:
    await pilot.press("4", "slash", *"kind:lease_grant", "enter")
    events = screen.query_one(EventList)
    await wait_for(pilot, lambda: events.row_filter is not None and events.row_filter.done)
    await pilot.pause()
    assert [events.row_at(i) for i in range(events.visible_count)] == [
        at["grant1"],
        at["grant2"],
        at["grant3"],
    ]
    assert screen.timeline.row_filter is None


async def typing_refines_and_an_empty_query_shows_everything(
    pilot: Pilot[object], screen: TraceScreen, **_: object
) -> None:
    timeline = screen.timeline
    await pilot.press("slash", *"fetch")
    await wait_for(pilot, lambda: timeline.row_filter is not None and timeline.row_filter.done)
    await pilot.pause()
    assert timeline.visible_count == 3  # the fetch call, and the two prunes of its leases
    await pilot.press(*["backspace"] * 5, *"refund")
    await wait_for(
        pilot,
        lambda: (
            timeline.row_filter is not None
            and timeline.row_filter.done
            and timeline.row_filter.query.text == "refund"
        ),
    )
    await pilot.pause()
    assert [timeline.row_at(i) for i in range(timeline.visible_count)] == [2]
    await pilot.press(*["backspace"] * 6)
    await pilot.pause()
    assert timeline.row_filter is None and timeline.visible_count == 4


async def go_view_and_filter_commands(pilot: Pilot[object], screen: TraceScreen, **_: object) -> None:
    await run_palette(pilot, "go: iteration 3")
    await wait_for(pilot, lambda: screen.selected == 2)
    assert screen.selected == 2
    await run_palette(pilot, "view: leases")
    assert await wait_for(pilot, lambda: screen.view == "leases")
    await pilot.press("1")
    await run_palette(pilot, "filter: kind lease_prune")
    assert await wait_for(
        pilot, lambda: screen.timeline.row_filter is not None and screen.timeline.row_filter.done
    )
    assert screen.timeline.row_filter.query.kinds == ("lease_prune",)  # type: ignore[union-attr]


async def huge_contents_are_collapsed_until_expanded(
    pilot: Pilot[object], screen: TraceScreen, **_: object
) -> None:
    await pilot.press("3")
    await pilot.pause()
    call = screen.query_one(CallView)
    collapsed = call.document_height
    assert collapsed < 200
    assert "press e to expand" in screen_text(pilot.app)
    await pilot.press("e")
    await pilot.pause()
    assert call.expanded and call.document_height > 70_000  # every row of 5 MB, wrapped
    await pilot.press("G")  # the last rows render at once
    await pilot.pause()
    await pilot.press("e")
    assert call.document_height == collapsed


async def the_inspector_flags_a_line_that_breaks_the_schema(
    pilot: Pilot[object], screen: TraceScreen, at: dict[str, int], **_: object
) -> None:
    await pilot.press("G")
    text = _inspector_text(screen)
    assert f"line {at['wrong_types']} invalid record: pass record does not match the schema" in text
    assert "no pass record in this iteration" in text


async def bad_lines_are_rows_not_crashes(
    pilot: Pilot[object], screen: TraceScreen, at: dict[str, int], **_: object
) -> None:
    await pilot.press("4", "G")
    assert await wait_for(pilot, lambda: screen.query_one(EventDetail).line == at["opaque"])
    await pilot.pause()
    text = screen_text(pilot.app)
    assert "INVALID" in text and "not valid JSON" in text and "not valid UTF-8" in text
    assert "pass record does not match the schema" in text
    assert "telemetry_v9" in text
    assert screen.query_one(EventDetail).line == at["opaque"]
    # the wrong-typed pass reads as a pass from its facts; validated in full it is invalid too
    assert "3 invalid · 1 opaque" in text


async def a_detail_that_outgrows_its_pane_gets_a_scrollbar(
    pilot: Pilot[object], screen: TraceScreen, at: dict[str, int], **_: object
) -> None:
    detail = screen.query_one(EventDetail)
    await pilot.press("4")
    screen.query_one(EventList).move_to_row(at["run_end"])
    assert await wait_for(pilot, lambda: detail.line == at["run_end"])
    await pilot.pause()
    assert not detail.show_vertical_scrollbar  # a short record fits
    screen.query_one(EventList).move_to_row(at["tool"])  # 5 MB, collapsed to a few screens
    assert await wait_for(pilot, lambda: detail.line == at["tool"] and detail.show_vertical_scrollbar)
    assert detail.max_scroll_y == detail.document_height - detail.scrollable_content_region.height


async def hostile_content_is_inert_in_every_view(
    pilot: Pilot[object], screen: TraceScreen, **_: object
) -> None:
    for keys in (("1",), ("3",), ("3", "e"), ("4",), ("4", "G"), ("2",), ("question_mark",)):
        await pilot.press(*keys)
        await pilot.pause()
        for segment in screen_segments(pilot.app):
            assert not any(
                ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E for c in segment
            ), (keys, segment)
        if keys == ("question_mark",):
            await pilot.press("escape")
    await pilot.press("1")
    text = screen_text(pilot.app)
    assert MARKUP in text  # literal, not styled and not a link
    assert "\\x1b[2J" in text or "\\x1b" in text


class TestSharedSessions:
    async def test_open_navigate_and_the_palette_filters_on_the_support_sample(self) -> None:
        seen: list[Message] = []
        async with opened(sample("support"), message_hook=seen.append) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                rows_appear_and_the_first_iteration_is_explained,  # first: what the launch shows
                keys_move_the_cursor_and_the_inspector_follows,
                brackets_step_iterations_from_any_view,
                back_to_the_first_pass,
                enter_opens_the_call_and_views_switch_by_key_and_click,
                back_to_the_first_pass,
                a_mouse_click_selects_a_row,
                back_to_the_first_pass,
                events_and_timeline_stay_in_step,
                back_to_the_first_pass,
                opening_a_lease_selects_the_pass_that_pruned_it,
                back_to_the_first_pass,
                a_filter_is_listed_once_and_says_what_it_keeps_in_the_view_on_show,
                each_view_is_offered_only_the_filters_that_mean_something_there,
                seen=seen,
            )

    async def test_search_and_the_palette_on_the_support_run(
        self, support_run_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, at = support_run_trace
        async with opened(path) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                slash_filters_rows_and_n_cycles_through_matches,
                back_to_the_first_pass,
                brackets_walk_the_filtered_timeline,
                back_to_the_first_pass,
                the_events_view_has_its_own_filter,
                back_to_the_first_pass,
                typing_refines_and_an_empty_query_shows_everything,
                back_to_the_first_pass,
                go_view_and_filter_commands,
                at=at,
            )

    async def test_untrusted_content_on_the_hostile_trace(
        self, hostile_trace: tuple[Path, dict[str, int]]
    ) -> None:
        path, at = hostile_trace  # 5 MB strings: one load serves every check
        async with opened(path) as (pilot, screen):
            await run_checks(
                pilot,
                screen,
                huge_contents_are_collapsed_until_expanded,  # first: iteration 1 holds the huge call
                back_to_the_first_pass,
                the_inspector_flags_a_line_that_breaks_the_schema,
                bad_lines_are_rows_not_crashes,
                a_detail_that_outgrows_its_pane_gets_a_scrollbar,
                back_to_the_first_pass,
                hostile_content_is_inert_in_every_view,  # last: it leaves the huge call expanded
                at=at,
            )


class TestHelpAndKeymap:
    async def test_help_lists_every_binding(self) -> None:
        async with opened(sample("leases")) as (pilot, _screen):
            app = pilot.app
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            text = "\n".join(app.screen.query_one(HelpDocument).text_lines())
            for binding_id in binding_ids():
                assert binding_id in text
            assert "keymap.toml" in text and "go: iteration 12" in text
            await pilot.press("escape")
            assert await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen))

    async def test_a_keymap_remaps_keys(self) -> None:
        # run-step is drive mode's: the viewer has no such binding and leaves it alone
        keymap = {"next-iteration": "l", "cursor-down": "ctrl+n", "run-step": "x"}
        async with opened(sample("support"), keymap=keymap) as (pilot, screen):
            app = pilot.app
            await pilot.press("l")
            assert screen.selected == 1
            await pilot.press("ctrl+n")
            assert screen.selected == 2
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            text = "\n".join(app.screen.query_one(HelpDocument).text_lines())
            assert any(
                line.strip().startswith("l ") and "next-iteration" in line for line in text.splitlines()
            )

    def test_every_binding_has_an_id_and_a_tooltip(self) -> None:
        from textual.binding import Binding

        for _, bindings in FpdebugApp.binding_groups():
            for binding in bindings:
                assert isinstance(binding, Binding) and binding.id and binding.tooltip, binding


def _copy(name: str, tmp_path: Path, *, drop_last: int = 0) -> Path:
    path = tmp_path / f"{name}.fptrace.jsonl"
    shutil.copy(sample(name), path)
    if drop_last:
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-drop_last]))
    return path


class TestFollow:
    async def test_new_events_show_quickly_and_the_end_is_followed(self, tmp_path: Path) -> None:
        path = _copy("leases", tmp_path, drop_last=2)  # no turn_end / run_end yet
        seen: list[Message] = []
        async with opened(path, follow=True, message_hook=seen.append) as (pilot, screen):
            assert await wait_for(pilot, lambda: "run in progress" in screen_text(pilot.app))
            rows = screen.timeline.total
            assert rows > 1 and screen.selected == rows - 1  # it opens on the newest iteration
            run_id = screen.session.model.runs[0].run_id
            started = time.perf_counter()
            grow(path, run_id=run_id, first_seq=screen.session.lines, iteration=1, turn=2)
            assert await wait_for(pilot, lambda: screen.timeline.total == rows + 1, step=0.005)
            elapsed = time.perf_counter() - started
            assert elapsed < 3.0  # about 20 ms on an idle machine; CI runs two workers on two loaded cores
            assert await wait_for(pilot, lambda: screen.selected == rows)  # it was on the end: it followed
            assert any(isinstance(message, TraceGrew) and message.lines for message in seen)

    async def test_new_rows_are_counted_when_the_user_looks_elsewhere(self, tmp_path: Path) -> None:
        path = _copy("leases", tmp_path, drop_last=2)
        async with opened(path, follow=True) as (pilot, screen):
            await pilot.press("g")
            run_id = screen.session.model.runs[0].run_id
            seq = grow(path, run_id=run_id, first_seq=screen.session.lines, iteration=1, turn=2)
            grow(path, run_id=run_id, first_seq=seq, iteration=2, turn=2)
            assert await wait_for(pilot, lambda: screen.new_rows == 2)
            assert screen.selected == 0
            assert await wait_for(pilot, lambda: "+2 new (G to jump)" in screen_text(pilot.app))
            await pilot.press("G")
            assert screen.new_rows == 0 and screen.selected == screen.timeline.total - 1

    async def test_a_run_that_ends_says_so(self, tmp_path: Path) -> None:
        path = _copy("leases", tmp_path, drop_last=1)
        async with opened(path, follow=True) as (pilot, screen):
            assert await wait_for(pilot, lambda: "run in progress" in screen_text(pilot.app))
            run_id = screen.session.model.runs[0].run_id
            with TraceWriter.resume(path, durability="none") as writer:
                writer.append(RunEndEvent(seq=writer.next_seq, ts=T0, run_id=run_id, status="completed"))
            assert await wait_for(pilot, lambda: "run ended: completed" in screen_text(pilot.app))

    async def test_pause_and_resume_following(self, tmp_path: Path) -> None:
        path = _copy("leases", tmp_path, drop_last=2)
        async with opened(path, follow=True) as (pilot, screen):
            await pilot.press("f")
            assert not screen.following
            assert await wait_for(pilot, lambda: "paused" in screen_text(pilot.app))
            await pilot.press("G")
            run_id = screen.session.model.runs[0].run_id
            grow(path, run_id=run_id, first_seq=screen.session.lines, iteration=1, turn=2)
            assert await wait_for(pilot, lambda: screen.new_rows == 1)
            await pilot.press("f")
            assert screen.following and screen.selected == screen.timeline.total - 1

    @pytest.mark.parametrize("how", ["mv", "cp"])
    async def test_a_replaced_file_is_reported_in_the_status_line(self, tmp_path: Path, how: str) -> None:
        # Issue 18 item 4: the old code kept "follow ●" over the old content (mv) or spliced the
        # new file's lines onto the old ones (cp).
        path = _copy("leases", tmp_path, drop_last=2)
        other = _copy("support", tmp_path)
        async with opened(path, follow=True) as (pilot, screen):
            assert await wait_for(pilot, lambda: "run in progress" in screen_text(pilot.app))
            lines = screen.session.lines
            if how == "mv":
                other.replace(path)
            else:
                shutil.copyfile(other, path)
            assert await wait_for(pilot, lambda: "the file was replaced" in screen_text(pilot.app))
            assert "follow ●" not in screen_text(pilot.app)
            assert screen.session.lines == lines and not screen.following

    async def test_follow_a_file_whose_header_has_not_arrived(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.fptrace.jsonl"
        path.touch()
        async with opened(path, follow=True) as (pilot, screen):
            assert screen.timeline.total == 0
            path.write_bytes(sample("leases").read_bytes())
            assert await wait_for(pilot, lambda: screen.timeline.total == 3)
            assert await wait_for(pilot, lambda: screen.selected == 2)  # the newest, as rows arrive


class TestViewCommand:
    def test_missing_trace(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["view", str(tmp_path / "nope.jsonl")]) == 2
        err = capsys.readouterr().err
        assert "no such file" in err and "Traceback" not in err

    def test_not_a_trace(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "x.jsonl"
        path.write_text('{"hello": 1}\n', encoding="utf-8")
        assert main(["view", str(path)]) == 2
        assert "not an fpdebug trace header" in capsys.readouterr().err

    def test_newer_schema(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "x.jsonl"
        path.write_text(
            '{"kind":"trace_header","format":"fpdebug.trace","schema_version":99,"producer":"x",'
            '"created":"2026-01-01T00:00:00Z"}\n',
            encoding="utf-8",
        )
        assert main(["view", str(path)]) == 2
        assert "newer" in capsys.readouterr().err

    def test_bad_keymap(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        keymap = tmp_path / "k.toml"
        keymap.write_text('[keys]\nno-such-binding = "x"\n', encoding="utf-8")
        assert main(["view", str(sample("leases")), "--keymap", str(keymap)]) == 2
        assert "unknown binding id 'no-such-binding'" in capsys.readouterr().err

    def test_one_keymap_serves_the_viewer_and_drive_mode(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        keymap = tmp_path / "k.toml"
        keymap.write_text(
            '[keys]\nrun-step = "n"\nbreakpoints-close = "x"\nnext-iteration = "l"\n', encoding="utf-8"
        )
        ran: list[FpdebugApp] = []
        monkeypatch.setattr(FpdebugApp, "run", lambda self, *args, **kwargs: ran.append(self))
        assert main(["view", str(sample("leases")), "--keymap", str(keymap)]) == 0
        assert ran[0].keymap == {"run-step": "n", "breakpoints-close": "x", "next-iteration": "l"}
        assert binding_ids(DriveApp) <= keymap_ids() and binding_ids() <= keymap_ids()
        assert {"run-step", "run-toggle", "run-breakpoints", "breakpoints-close"} <= keymap_ids()


class _FakeController:
    """A drive-mode controller that writes a run into the followed file when started."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = False
        self.stopped = False
        self.stepped = 0

    def start(self, app: FpdebugApp) -> None:
        self.started = True
        grow(self.path, run_id="drive", first_seq=1, iteration=1)

    def stop(self) -> None:
        self.stopped = True

    def commands(self) -> list[PaletteCommand]:
        return [PaletteCommand("run: step", "Run one pass", self.step)]

    def step(self) -> None:
        self.stepped += 1


class TestDriveMode:
    async def test_a_controller_is_started_followed_and_stopped(self, tmp_path: Path) -> None:
        path = tmp_path / "drive.fptrace.jsonl"
        TraceWriter.create(path, durability="none").close()
        controller = _FakeController(path)
        async with opened(TraceSource(path, "drive"), controller=controller) as (pilot, screen):
            assert screen.mode == "drive" and controller.started
            assert await wait_for(pilot, lambda: screen.timeline.total == 1)
            assert await wait_for(pilot, lambda: "drive ●" in screen_text(pilot.app))
            await run_palette(pilot, "run: step")
            assert await wait_for(pilot, lambda: controller.stepped == 1)
        assert controller.stopped

"""Keys that never surprise (issue 20): ``ctrl+d``/``ctrl+u`` page documents as they page lists, and the
breakpoints menu moves with ``j``/``k`` like every other list. Read from the drawn screen.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from rich.color import Color
from rich.segment import Segment
from textual.app import App
from textual.pilot import Pilot

from fpdebug.tui.screens.trace_screen import TraceScreen
from tests.tui.helpers import SIZE, back_to_the_first_pass, opened, run_checks, screen_text, wait_for
from tests.tui.test_drive import LONG, make_app, paused_at
from tests.tui.traces import sample


def _calls_top(text: str) -> str:
    """The first row of the Calls document as drawn (below the tab bar and the box's top border)."""
    rows = text.splitlines()
    border = next(i for i, row in enumerate(rows) if row.startswith("╭"))
    return rows[border + 1]


@pytest.mark.anyio
class TestKeys:
    async def test_ctrl_d_and_ctrl_u_page_a_document(self) -> None:
        async with opened(sample("support"), size=(120, 24)) as (
            pilot,
            _screen,
        ):  # a call longer than the screen
            await pilot.press("3")
            assert await wait_for(pilot, lambda: "│ Call 1 · " in _calls_top(screen_text(pilot.app)))
            top = _calls_top(screen_text(pilot.app))
            await pilot.press("ctrl+d")
            assert await wait_for(pilot, lambda: _calls_top(screen_text(pilot.app)) != top), (
                "ctrl+d did not page"
            )
            await pilot.press("ctrl+u")
            assert await wait_for(pilot, lambda: _calls_top(screen_text(pilot.app)) == top), (
                "ctrl+u did not page"
            )

    async def test_j_and_k_move_in_the_breakpoints_menu(self, tmp_path: Path) -> None:
        app, driver = make_app(tmp_path, "zone-trap")
        async with app.run_test(size=SIZE) as pilot:
            await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
            await pilot.press("b")
            assert await wait_for(pilot, lambda: "Breakpoints · 0 set" in screen_text(app), timeout=LONG)
            await pilot.press("j", "space")
            assert await wait_for(pilot, lambda: "Breakpoints · 1 set" in screen_text(app))
            # k moved to another entry: space sets a second breakpoint instead of clearing the first
            await pilot.press("k", "space")
            assert await wait_for(pilot, lambda: "Breakpoints · 2 set" in screen_text(app))


def _contrast(segment: Segment) -> float:
    """The WCAG contrast ratio of a drawn segment's text colour on its background."""
    style = segment.style
    assert style is not None and style.color is not None and style.bgcolor is not None

    def luminance(color: Color) -> float:
        channels = []
        for value in color.get_truecolor():
            c = value / 255
            channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
        red, green, blue = channels
        return 0.2126 * red + 0.7152 * green + 0.0722 * blue

    lighter, darker = sorted((luminance(style.color), luminance(style.bgcolor)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _box_of(app: App[object], label: str) -> Segment:
    """The drawn inner segment (``X``) of the check box on the menu row of ``label``."""
    for strip in app.screen._compositor.render_strips():
        if label in "".join(segment.text for segment in strip):
            boxes = [segment for segment in strip if segment.text == "X"]
            assert boxes, f"no check box drawn on the row of {label}"
            return boxes[0]
    raise AssertionError(f"no row of {label} on screen")


@pytest.mark.anyio
async def test_the_breakpoints_menu_reads_its_boxes_searches_and_refuses_unknown_names(
    tmp_path: Path,
) -> None:
    """The unchecked box is readable (highlighted or not); ``/`` filters the entries; a typed breakpoint
    the run does not declare is refused with the nearest name, a declared one is set."""
    app, driver = make_app(tmp_path, "support")
    async with app.run_test(size=SIZE) as pilot:
        await paused_at(pilot, app, driver, lambda kind, it: kind == "pass")
        await pilot.press("b")
        assert await wait_for(pilot, lambda: "Breakpoints · 0 set" in screen_text(app), timeout=LONG)
        # lease_prune is the highlighted row, park a plain one: both boxes unchecked, both readable
        for label in ("lease_prune", "park  "):
            assert _contrast(_box_of(app, label)) >= 4.5, f"the unchecked box of {label} is unreadable"
        await pilot.press("slash", *"refund")
        assert await wait_for(pilot, lambda: "tool issue_refund" in screen_text(app))
        assert "lease_prune" not in screen_text(app)  # filtered out, as / filters every list
        await pilot.press("ctrl+a", "ctrl+k", *"tool:issue_refnd", "enter")
        assert await wait_for(pilot, lambda: "(did you mean 'issue_refund'?)" in screen_text(app))
        assert "Breakpoints · 0 set" in screen_text(app) and not driver.gate.breakpoints
        await pilot.press("ctrl+a", "ctrl+k", *"cursor:nowhere", "enter")
        assert await wait_for(pilot, lambda: "'nowhere' is not a skill of the map" in screen_text(app))
        await pilot.press("ctrl+a", "ctrl+k", *"tool:issue_refund", "enter")
        assert await wait_for(pilot, lambda: "Breakpoints · 1 set" in screen_text(app))
        assert "breakpoint tool issue_refund set" in screen_text(app)


def _standing_out(app: App[object]) -> set[str]:
    """The text of every segment drawn on another background than most of its row, in the box rows."""
    found = set()
    for strip in app.screen._compositor.render_strips():
        segments = [segment for segment in strip if segment.style is not None]
        if not segments or not segments[0].text.startswith("│"):
            continue
        cells: Counter[object] = Counter()
        for segment in segments:
            cells[segment.style.bgcolor if segment.style else None] += len(segment.text)
        usual = cells.most_common(1)[0][0]
        for segment in segments:
            text = segment.text.strip().lower()
            if segment.style and segment.style.bgcolor != usual and text.strip("│▁▂▃▄▅▆▇█▊▎▌▐"):
                found.add(text)
    return found


def _cursor_rows(app: App[object]) -> list[str]:
    """The box rows drawn on another background than most box rows (a link cursor's rows)."""
    rows: list[tuple[str, object]] = []
    for strip in app.screen._compositor.render_strips():
        segments = [segment for segment in strip if segment.style is not None]
        if not segments or not segments[0].text.startswith("│"):
            continue
        cells: Counter[object] = Counter()
        for segment in segments[1:-2]:  # inside the border, the scrollbar left out
            cells[segment.style.bgcolor if segment.style else None] += len(segment.text)
        if cells:
            rows.append(("".join(segment.text for segment in segments), cells.most_common(1)[0][0]))
    usual = Counter(background for _text, background in rows).most_common(1)[0][0]
    return [text for text, background in rows if background != usual]


def _highlighted(app: App[object], word: str) -> list[str]:
    """Each drawn row where ``word`` stands out: its segment's background differs from the one before."""
    rows = []
    for strip in app.screen._compositor.render_strips():
        segments = list(strip)
        for before, segment in itertools.pairwise(segments):
            stands_out = segment.style and before.style and segment.style.bgcolor != before.style.bgcolor
            if segment.text.lower() == word and stands_out:
                rows.append("".join(part.text for part in segments))
    return rows


async def slash_searches_documents_as_it_filters_lists(pilot: Pilot[object], _screen: TraceScreen) -> None:
    """``/`` in a document (Calls) highlights every match and jumps to the first; ``n`` walks them;
    ``escape`` ends the search. The help is a document too: ``/`` there finds a key."""
    app = pilot.app
    await pilot.press("3")
    assert await wait_for(pilot, lambda: "│ Call 1 · " in _calls_top(screen_text(app)))
    await pilot.press("slash", *"refund")
    assert await wait_for(pilot, lambda: "search refund 4 matches (1/4)" in screen_text(app))
    assert any("Please refund the duplicate" in row for row in _highlighted(app, "refund"))
    # what was typed on the way ("r", "re"…) left no mark: only the query's matches stand out
    assert _standing_out(app) == {"refund"}, _standing_out(app)
    await pilot.press("enter", "n")
    assert await wait_for(pilot, lambda: "search refund 4 matches (2/4)" in screen_text(app))
    await pilot.press("N", "N")
    assert await wait_for(pilot, lambda: "search refund 4 matches (4/4)" in screen_text(app)), "N wraps"
    await pilot.press("escape")
    assert await wait_for(pilot, lambda: "search refund" not in screen_text(app))
    assert not _highlighted(app, "refund")
    # In a document of links (the diff), the link cursor follows the match: enter jumps where it says.
    await pilot.press("1", "g", "j", "j", "j", "6")
    assert await wait_for(pilot, lambda: "Diff A T1·I3  →  B T1·I4" in screen_text(app))
    await pilot.press("slash", *"fetch_invoice", "enter")
    assert await wait_for(pilot, lambda: "search fetch_invoice 3 matches (1/3)" in screen_text(app))
    cursor = _cursor_rows(app)
    assert cursor and "granted by fetch_invoice call_3" in cursor[0], cursor
    await pilot.press("enter")
    assert await wait_for(pilot, lambda: "Diff A T1·I3" not in screen_text(app)), "enter did not jump"
    await pilot.press("question_mark")
    assert await wait_for(pilot, lambda: "fpdebug keys" in screen_text(app))
    assert "backtrack-bisect" not in screen_text(app)  # far below the first screen of the help
    await pilot.press("slash", *"bisect", "enter")
    assert await wait_for(pilot, lambda: bool(_highlighted(app, "bisect")))
    assert any("backtrack-bisect" in row for row in _highlighted(app, "bisect"))


async def ctrl_c_quits_as_q_does_and_copies_a_selection_first(
    pilot: Pilot[object], _screen: TraceScreen
) -> None:
    """``ctrl+c`` leaves the debugger as ``q`` does (it showed Textual's "Press q to quit" and stayed);
    the help lists it on ``q``'s row; with text selected in a field it copies, as Textual's fields do."""
    app = pilot.app
    await pilot.press("question_mark")
    assert await wait_for(pilot, lambda: "fpdebug keys" in screen_text(app))
    quit_row = next(row for row in screen_text(app).splitlines() if "Leave fpdebug" in row)
    assert "q / ctrl+c" in quit_row, quit_row
    await pilot.press("escape")
    assert await wait_for(pilot, lambda: "fpdebug keys" not in screen_text(app))
    # A selection in the search prompt: ctrl+c copies it, and the debugger stays.
    await pilot.press("slash", *"refund", "shift+home")
    await pilot.press("ctrl+c")
    assert await wait_for(pilot, lambda: app.clipboard == "refund")
    await pilot.pause()
    assert not app._exit
    text = screen_text(app)
    assert "refund" in text.splitlines()[-2] and "to quit" not in text  # the prompt, and no hint
    # Nothing selected: ctrl+c quits at once, with no hint to press another key.
    await pilot.press("escape", "ctrl+c")
    assert await wait_for(pilot, lambda: app._exit)


async def _back_from_the_help(pilot: Pilot[object], screen: TraceScreen) -> None:
    """Close the help (and its search), then go back to the first pass as at launch."""
    for _ in range(3):
        if pilot.app.screen is screen:
            break
        await pilot.press("escape")
        await pilot.pause()
    assert await wait_for(pilot, lambda: pilot.app.screen is screen), "the help did not close"
    await back_to_the_first_pass(pilot, screen)


@pytest.mark.anyio
async def test_document_search_then_ctrl_c_in_one_session() -> None:
    """The two checks share one session of the support sample at 120x30 (``run_checks`` names a
    failing one); ``ctrl+c`` quits the app, so its check comes last."""
    async with opened(sample("support"), size=(120, 30)) as (pilot, screen):
        await run_checks(
            pilot,
            screen,
            slash_searches_documents_as_it_filters_lists,  # first: from launch
            _back_from_the_help,
            ctrl_c_quits_as_q_does_and_copies_a_selection_first,
        )

"""Helpers of the TUI tests: open the app, read the screen as text, wait (never a bare sleep), load traces."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from textual.app import App
from textual.command import CommandInput, CommandList, CommandPalette
from textual.message import Message
from textual.pilot import Pilot

from fpdebug.trace.reader import TraceReader
from fpdebug.tui.app import FpdebugApp, RunController, TraceSource
from fpdebug.tui.screens.trace_screen import TraceScreen
from fpdebug.tui.widgets.document import Block, TextBlock
from fpdebug.views.session import TraceSession

SIZE = WIDE = (160, 48)
"""The terminal of most pilot tests and snapshots (columns, rows)."""

NARROW = (100, 30)
"""A narrow terminal for snapshots."""

WAIT = 20.0
"""Seconds a pilot test waits for something before it fails: generous, CI runs two workers on two
loaded cores, and a condition that holds returns at once anyway."""


def screen_text(app: App[object]) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def screen_segments(app: App[object]) -> list[str]:
    """Every text segment the screen is made of (what reaches the terminal between style codes)."""
    strips = app.screen._compositor.render_strips()
    return [segment.text for strip in strips for segment in strip]


async def wait_for(
    pilot: Pilot[object], condition: Callable[[], bool], *, timeout: float = WAIT, step: float = 0.01
) -> bool:
    """Poll ``condition`` (pausing the pilot between polls) until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        await pilot.pause(step)
    return True


async def loaded(pilot: Pilot[object], *, timeout: float = WAIT) -> None:
    """Wait for the first load and for the screen to settle.

    A saved trace's workers are finite: wait for all of them. A followed or driven file's tail
    worker never ends: wait for the screen's ``loaded`` flag only.
    """
    screen = pilot.app.screen_stack[0]
    if getattr(screen, "mode", "replay") == "replay":
        await asyncio.wait_for(pilot.app.workers.wait_for_complete(), timeout)
    await pilot.pause()
    assert await wait_for(pilot, lambda: getattr(screen, "loaded", True), timeout=timeout), "never loaded"
    await pilot.pause()


def trace_screen(app: App[object]) -> TraceScreen:
    """The app's trace screen (under any modal on top of it)."""
    screen = app.screen_stack[0]
    assert isinstance(screen, TraceScreen)
    return screen


def record_notices(app: App[object]) -> list[str]:
    """Every notification ``app`` posts from now on, in order.

    ``app._notifications`` drops a notice once its timeout (a few seconds) expires; a test starved
    of CPU can look after that. The record keeps what was said.
    """
    said: list[str] = []
    post = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        said.append(str(message))
        post(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return said


@asynccontextmanager
async def opened(
    source: TraceSource | str | os.PathLike[str],
    *,
    size: tuple[int, int] = SIZE,
    message_hook: Callable[[Message], None] | None = None,
    follow: bool = False,
    keymap: dict[str, str] | None = None,
    controller: RunController | None = None,
) -> AsyncIterator[tuple[Pilot[object], TraceScreen]]:
    """Run the debugger on ``source`` headless; yield its pilot and trace screen once the first load is done.

    Args:
        source: The trace.
        size: The terminal.
        message_hook: Sees every message the app handles.
        follow: Follow the file.
        keymap: Binding id → keys.
        controller: A drive-mode run controller.
    """
    app = FpdebugApp(source, follow=follow, keymap=keymap, controller=controller)
    async with app.run_test(size=size, message_hook=message_hook) as pilot:
        await loaded(pilot)
        yield pilot, trace_screen(app)


async def run_palette(pilot: Pilot[object], command: str, *, offered: str | None = None) -> None:
    """Run a palette command: open the palette, enter the text at once, wait for it on top, press enter.

    Args:
        pilot: The app's pilot.
        command: What is typed.
        offered: The text of the command that must be on top (``command`` itself by default).
    """
    want = command if offered is None else offered
    await pilot.press("ctrl+p")
    assert await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette)), "no palette"
    pilot.app.screen.query_one(CommandInput).value = command
    options = pilot.app.screen.query_one(CommandList)

    def on_top() -> bool:
        if options.option_count == 0 or options.highlighted is None:
            return False
        prompt = options.get_option_at_index(options.highlighted).prompt
        return want in getattr(prompt, "plain", str(prompt))

    assert await wait_for(pilot, on_top), f"{want!r} is not offered for {command!r}"
    await pilot.press("enter")
    assert await wait_for(pilot, lambda: not isinstance(pilot.app.screen, CommandPalette))
    await pilot.pause()


def snapshot_keys(*keys: str, quiet: bool = False) -> Callable[[Pilot[object]], Awaitable[None]]:
    """A snapshot's ``run_before``: wait for the trace to load, press ``keys`` with animations off.

    Args:
        keys: Pressed one by one, the screen settling after each.
        quiet: Dismiss the notifications (a "marked as A" toast would cover the view).
    """

    async def run_before(pilot: Pilot[object]) -> None:
        pilot.app.animation_level = "none"
        await loaded(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await asyncio.wait_for(pilot.app.workers.wait_for_complete(), WAIT)
        await pilot.pause()
        if quiet:
            pilot.app.clear_notifications()
            await pilot.pause()

    return run_before


def load_session(
    source: Path | TraceReader, *, chunk_size: int | None = None, limit: int | None = None
) -> TraceSession:
    """A session with the whole file indexed and modelled, by the app's own loading steps.

    Args:
        source: The trace, or a reader of it (that the caller closes).
        chunk_size: Bytes per index step (the app's default when ``None``).
        limit: Lines per model step (the app's default when ``None``).
    """
    reader = source if isinstance(source, TraceReader) else TraceReader(source, index=False)
    session = TraceSession(reader)
    index = {} if chunk_size is None else {"chunk_size": chunk_size}
    model = {} if limit is None else {"limit": limit}
    session.index_step(**index)
    while not session.index_done:
        session.index_step(**index)
    while session.model_step(**model):
        pass
    return session


def document_text(blocks: Iterable[Block]) -> str:
    """The text lines of a built document (its untrusted contents left out), one per line."""
    return "\n".join(block.text.plain for block in blocks if isinstance(block, TextBlock))


Check = Callable[..., Awaitable[None]]
"""One check of a shared app session: called with the pilot, the trace screen and the session's context."""


async def run_checks(pilot: Pilot[object], screen: TraceScreen, *checks: Check, **context: Any) -> None:
    """Run several checks, in order, in one app session; a failure says which check it was.

    Starting the app and loading the trace is most of a pilot test's time: checks that open the same
    trace at the same size share one session instead. Each check still drives keys and reads what is
    drawn; each starts from where the one before left the screen, so a check sets up what it needs.

    Args:
        pilot: The app's pilot.
        screen: Its trace screen.
        checks: Called in order as ``check(pilot, screen, **context)``.
        context: What the checks need besides (the notable lines of the trace, say).
    """
    for number, check in enumerate(checks, 1):
        try:
            await check(pilot, screen, **context)
        except Exception as error:
            error.add_note(f"in check {number} of the shared session, {check.__name__!r}")
            raise


async def back_to_the_first_pass(pilot: Pilot[object], screen: TraceScreen, **_: object) -> None:
    """The Passes view on the first iteration with no filter, as at launch."""
    if screen.has_class("-searching"):  # a filter prompt is still open: close it first
        await pilot.press("escape")
        assert await wait_for(pilot, lambda: not screen.has_class("-searching"))
    await pilot.press("1")
    assert await wait_for(pilot, lambda: screen.view == "passes")
    screen.clear_filter(screen.timeline)  # a setup step: the checks test the keys that clear one
    await pilot.press("g")
    assert await wait_for(pilot, lambda: screen.selected == 0 and screen.timeline.row_filter is None)

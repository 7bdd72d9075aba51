"""Helpers of the pilot tests: read the screen as text, wait for a condition without bare sleeps."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App
from textual.pilot import Pilot


def screen_text(app: App[object]) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def screen_segments(app: App[object]) -> list[str]:
    """Every text segment the screen is made of (what reaches the terminal between style codes)."""
    strips = app.screen._compositor.render_strips()
    return [segment.text for strip in strips for segment in strip]


async def wait_for(
    pilot: Pilot[object], condition: Callable[[], bool], *, timeout: float = 5.0, step: float = 0.01
) -> bool:
    """Poll ``condition`` (pausing the pilot between polls) until it holds or ``timeout`` passes."""
    loops = int(timeout / step)
    for _ in range(loops):
        if condition():
            return True
        await pilot.pause(step)
    return condition()


async def loaded(pilot: Pilot[object]) -> None:
    """Wait for the first load (a finite worker) and the screen to settle."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", True))
    await pilot.pause()

"""The cyclic garbage collector, paused over the debugger's start-up (issue 20).

Starting ``fpdebug view`` creates hundreds of thousands of long-lived objects (modules, classes,
the trace schema, the screen's widgets) and next to no cyclic garbage; the collector walked them
about 250 times before the first full screen, 0.12 s of CPU on the machine of
docs/guide/performance.md. ``fpdebug view`` pauses it before its imports; the trace screen resumes
it once the first screen is up (the loader, if it stopped waiting for that), freezing what start-up
made (``gc.freeze``: moved out of the collector's view, as the app does again after its load). Standard library only, so
the command can pause the collector before anything heavy is imported.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["pause", "paused", "resume"]

_lock = threading.Lock()
_paused = False


def pause() -> None:
    """Turn the collector off until :func:`resume` (nothing, if it is off already: not ours to resume)."""
    global _paused
    with _lock:
        if gc.isenabled():
            gc.disable()
            _paused = True


def resume() -> None:
    """Freeze what exists and turn the collector back on, if :func:`pause` turned it off (any thread, repeatedly)."""
    global _paused
    with _lock:
        if _paused:
            _paused = False
            # Everything made so far lives as long as the app: out of the collector's view with it,
            # or the first collection walks all of it at once (as costly as the ones skipped).
            gc.freeze()
            gc.enable()


def paused() -> bool:
    """Whether :func:`pause` turned the collector off and it was not resumed yet."""
    return _paused

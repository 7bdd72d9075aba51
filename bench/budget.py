"""How long each step of ``python -m bench`` takes on an idle 2-core machine, and the run's ETA.

The cost model is the bench's own measurements turned into rates (see "Duration" in
``docs/guide/performance.md``): every whole-file command as a multiple of the orjson parse of the
same file (what row 8 measures), the parse, the app's full load and the trace generators per
event, and a fixed cost per fresh interpreter. It prints an estimate per step and for the whole
run before anything is measured, and the ETA after each step corrects it by how fast the run has
been so far against the model (a loaded machine runs every step slower alike).

The command multiples are today's (:data:`COMMAND_X`, measured on the 100k traces); at the sizes
where :func:`bench.commands.measure` stops a command past ``stop_ratio`` times the parse, a
command costs at most that, so the run's length is bounded whatever a command costs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["SHAPE_COSTS", "Eta", "Shape", "commands_s", "duration"]

START_S = 0.7
"""One fresh interpreter that imports fpdebug's trace layer (a command child, a probe)."""
APP_START_S = 1.6
"""One fresh interpreter that imports the app and shows its first screen."""


@dataclass(frozen=True)
class Shape:
    """Per-event costs of one trace shape, in seconds on an idle 2-core machine."""

    bytes_per_event: float
    parse_s: float
    """orjson parse of one line, wall, after imports."""
    load_s: float
    """The app's full load, per event."""
    generate_s: float
    """Writing one event of a new trace (the generator), for the 10M traces."""
    command_x: dict[str, float] = field(default_factory=dict)
    """Each command's wall as a multiple of the parse (row 8, 100k, the last full measurement)."""


SHAPE_COSTS: dict[str, Shape] = {
    # demo: 700 B/event; the parse 3.1 us a line (issue 22's 1M figure); the full load 21 s at 1M
    # (issue 22). Command multiples: CPU / parse at 100k (round 3, 2026-12-02; on an idle machine
    # wall = CPU for one process), validate's halved by its two workers and a third added back.
    "demo": Shape(
        700,
        3.1e-6,
        25e-6,
        5e-6,
        {"validate": 4.5, "summary": 18.0, "report": 29.5, "export": 35.5, "backtrack": 4.9, "model": 3.8},
    ),
    # synthetic: 2 KB/event, the parse 3.8 us a line (the first round's 1M figure)
    "synthetic": Shape(
        2000,
        3.8e-6,
        30e-6,
        18e-6,
        {"validate": 4.5, "summary": 11.5, "report": 15.3, "export": 28.8, "backtrack": 3.2, "model": 2.6},
    ),
}


def commands_s(shape: str, events: int, repeat: int, names: Sequence[str], stop_ratio: float | None) -> float:
    """The commands step: per pair, two interpreters, the parse, and the command (capped by the stop)."""
    cost = SHAPE_COSTS[shape]
    parse = cost.parse_s * events
    total = 0.0
    for name in names:
        x = cost.command_x.get(name, 10.0)
        command = parse * x if stop_ratio is None or x <= stop_ratio else parse * stop_ratio + 5.0
        total += repeat * (2 * START_S + 0.3 + parse + command)  # 0.3 s: a command's fixed start-up work
    return total


def duration(kind: str, shape: str, events: int, repeat: int, **extra: object) -> float:
    """Estimated seconds of one step (``kind``: index, commands, tui, jump, follow, cold-start,
    writer, recording, generate), on an idle 2-core machine."""
    cost = SHAPE_COSTS.get(shape, SHAPE_COSTS["demo"])
    size = cost.bytes_per_event * events
    load = cost.load_s * events
    estimates: dict[str, Callable[[], float]] = {
        # wc -l, a cold open and a reopen: scans at about 2 GB/s, the reopen reads the index
        "index": lambda: repeat * (3 * START_S + 2 * size / 2e9),
        "commands": lambda: commands_s(
            shape,
            events,
            repeat,
            extra.get("names", ()),  # type: ignore[arg-type]
            extra.get("stop_ratio"),  # type: ignore[arg-type]
        ),
        # three first screens a round; then imports only, and a full load with 20 jumps
        "tui": lambda: (
            repeat * (3 * APP_START_S + START_S + APP_START_S + 3 + min(load, _f(extra, "load_timeout")))
        ),
        "jump": lambda: APP_START_S + load + 5,
        "follow": lambda: 15.0,
        "cold-start": lambda: (max(repeat, 3) + 1) * 2.6,
        "writer": lambda: 3.0,
        # 7 rounds of 4 variants (20 s), bytes per iteration at 10/100/1,000 iterations (74 s of wall
        # on a loaded machine, 13 s of it CPU: it waits more than it works), the per-event costs
        "recording": lambda: 100.0,
        "generate": lambda: events * cost.generate_s + 2 * size / 1e9,  # write it, read it once (warm)
    }
    return estimates[kind]()


def _f(extra: dict[str, object], key: str) -> float:
    value = extra.get(key)
    return float(value) if isinstance(value, int | float) else float("inf")


class Eta:
    """The run's ETA: the model's estimate of what is left, scaled by how the run has gone so far."""

    def __init__(self, estimates: Sequence[float]) -> None:
        self.estimates = list(estimates)
        self.started = time.perf_counter()
        self.done = 0

    @property
    def total(self) -> float:
        """The model's estimate of the whole run, in seconds."""
        return sum(self.estimates)

    def step_done(self) -> None:
        """One more step finished."""
        self.done += 1

    def remaining(self, now: float | None = None) -> float:
        """Seconds left: the model's estimate of the remaining steps x (actual / estimated so far)."""
        elapsed = (time.perf_counter() if now is None else now) - self.started
        spent = sum(self.estimates[: self.done])
        pace = elapsed / spent if spent > 0 and self.done else 1.0
        return sum(self.estimates[self.done :]) * max(pace, 0.25)

    def line(self, name: str, took: float) -> str:
        """The progress line after a step."""
        return (
            f"[{self.done}/{len(self.estimates)}] {name}: {took:.1f} s "
            f"(estimated {self.estimates[self.done - 1]:.0f} s); ETA {self.remaining() / 60:.1f} min"
        )

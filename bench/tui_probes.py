"""Figures that need the Textual app (first screen, jump, RSS while viewing, follow latency)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.run import Figure

__all__ = ["figures"]


def figures(small: Path, big: Path, *, repeat: int, child: Callable[..., dict[str, object]]) -> list[Figure]:
    """Items 2, 3, 4 and 6 of issue 8 (pending until the app's public API lands)."""
    pending = "pending: the TUI is not committed yet"
    return [
        Figure("2", "first screen", pending, "", target="< 0.5 s, 1M/10k <= 1.5"),
        Figure("3", "jump to a random iteration + pass inspector", pending, "", target="median < 50 ms"),
        Figure("4", "peak RSS while viewing", pending, "", target="< 25 % of the file"),
        Figure("6", "follow latency", pending, "", target="median < 100 ms"),
    ]

"""Turning untrusted trace strings into Rich ``Text`` safely: clipped, inert, never parsed as markup.

Every string that comes from a trace (ids, prompts, replies, tool results, error messages) reaches
the screen through :func:`plain` or :func:`para`: the string is clipped first (so a 5 MB result costs
nothing to show as one row), made inert (control sequences and bidi overrides become visible
escapes) and wrapped in ``rich.text.Text`` as plain characters, so ``[bold red]`` stays literal.

:class:`Palette` carries the semantic styles (heading, dim, good, bad…) that builders apply; a widget
builds one from its component classes so the built-in themes apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
from rich.style import Style
from rich.text import Text

from fpdebug.trace.inert import inert, inert_line

__all__ = [
    "ROW_CLIP",
    "Palette",
    "clip",
    "compact_json",
    "counted",
    "human_bytes",
    "join",
    "number",
    "para",
    "plain",
    "pretty_json",
]

ROW_CLIP = 400
"""Characters of a trace string kept for a one-row display (the row is cropped to the width anyway)."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when it was cut."""
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(text: object, style: Style | str = "", *, limit: int = ROW_CLIP) -> Text:
    """One display row of untrusted text: clipped, inert, newlines folded to ``⏎``.

    Args:
        text: Anything; non-strings are shown with ``str()``.
        style: The style of the whole text.
        limit: How many characters to keep.
    """
    return Text(inert_line(clip(str(text), limit)), style=style, no_wrap=True, end="")


def para(text: object, style: Style | str = "") -> Text:
    """Multi-line untrusted text, made inert (newlines kept). The caller bounds its size."""
    return Text(inert(str(text)), style=style, end="")


def join(parts: list[Text], separator: str = ", ", style: Style | str = "") -> Text:
    """Join Texts with a plain separator."""
    return Text(separator, style=style, end="").join(parts)


def compact_json(value: object) -> str:
    """``value`` as one line of JSON (``str()`` when it is not JSON-serialisable)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


def pretty_json(value: object) -> str:
    """``value`` as indented JSON (``str()`` when it is not JSON-serialisable)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


def number(value: float) -> str:
    """An integer with thousands separators (``12,345``); floats keep one decimal."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def counted(value: int, word: str, plural: str | None = None) -> str:
    """``1 iteration``, ``2 iterations``: a number (as :func:`number` writes it) and the word it counts.

    Args:
        value: How many.
        word: The singular.
        plural: The plural when it is not ``word + "s"``.
    """
    return f"{number(value)} {word if value == 1 else plural or word + 's'}"


def human_bytes(size: int) -> str:
    """``1.2 MB``-style size."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class Palette:
    """Semantic styles for builders of rows and documents (filled from a widget's component classes)."""

    heading: Style = field(default_factory=lambda: Style(bold=True))
    """Section titles."""
    key: Style = field(default_factory=lambda: Style(bold=True))
    """Labels in ``label value`` lines."""
    dim: Style = field(default_factory=lambda: Style(dim=True))
    """Secondary facts."""
    accent: Style = field(default_factory=lambda: Style(bold=True))
    """Ids and names the eye should find."""
    good: Style = field(default_factory=Style)
    """Served, accepted, engaged."""
    bad: Style = field(default_factory=Style)
    """Pruned, refused, parked, failed, invalid."""
    warn: Style = field(default_factory=Style)
    """Conflicts, rejected picks, tentative strengths."""
    match: Style = field(default_factory=lambda: Style(reverse=True))
    """Search matches."""

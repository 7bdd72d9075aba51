"""Make untrusted trace text inert before it reaches a terminal.

Prompts, replies and tool results are written by models and tools, so a trace can carry ANSI
CSI/OSC sequences (clear screen, OSC 52 clipboard writes, OSC 8 links, title changes), carriage
returns that overwrite a line, or bidi overrides that reorder what a reader sees. Every view and
every CLI printout passes such text through :func:`inert`, which replaces each of those code points
with a visible escape (``\\x1b``, ``\\u202e``) so the text is shown, never obeyed.

Rich markup is a separate concern: the TUI builds ``rich.text.Text`` objects from plain strings
and never parses trace text as markup.
"""

from __future__ import annotations

import re

__all__ = ["inert", "inert_line"]

_UNSAFE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f"  # C0 controls except tab and newline, DEL (ESC is \x1b)
    "\x80-\x9f"  # C1 controls (8-bit CSI is \x9b, OSC is \x9d)
    "\u061c\u200e\u200f"  # bidi marks
    "\u202a-\u202e\u2066-\u2069"  # bidi embeddings, overrides and isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ufff9-\ufffb"  # interlinear annotation controls
    "]"
)
_LINE_BREAKS = re.compile("[\n\t]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """Return ``text`` with every terminal control and bidi code point made visible.

    Newlines and tabs are kept, so multi-line content stays multi-line.

    Args:
        text: Untrusted text from a trace.

    Returns:
        Text that a terminal displays literally.
    """
    return _UNSAFE.sub(_escape, text)


def inert_line(text: str) -> str:
    """Like :func:`inert`, and also fold newlines to ``⏎`` and tabs to a space: one display row."""
    return _LINE_BREAKS.sub(lambda m: "⏎" if m.group() == "\n" else " ", inert(text))

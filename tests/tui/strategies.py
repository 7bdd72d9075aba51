"""Hypothesis strategies and renderers of the TUI's property tests: hostile text, bad lines, fuzz traces."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from hypothesis import strategies as st
from rich.console import Console

from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import (
    EVENT_KINDS,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    PromptSegment,
    ToolResultEvent,
    TraceEvent,
)
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.document import Block
from tests.conftest import T0

CONSOLE = Console(width=90, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
"""The console documents are rendered with (90 columns, no colour, no output)."""

PALETTE = Palette()
"""Plain styles."""

PIECES = ["[bold red]", "[/]", "[link=http://e]", "\x1b[2J", "\x1b]52;c;x\x07", "\u202e", "\x9b", "\n", "\t"]
nasty_text = st.lists(
    st.one_of(st.text(st.characters(codec="utf-8"), max_size=30), st.sampled_from(PIECES)), max_size=12
).map("".join)
"""Strings holding Rich markup, terminal controls, bidi overrides and odd Unicode."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | nasty_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(nasty_text, children, max_size=4),
    max_leaves=12,
)
"""Any JSON value (hostile strings included)."""

bad_lines = st.one_of(
    st.binary(max_size=200).filter(lambda raw: b"\n" not in raw),
    st.builds(
        # json, not orjson: integers beyond 64 bits must reach the reader too
        lambda kind, fields: json.dumps(
            {"kind": kind, "seq": 2, "run_id": "r", "turn": 1, "iteration": 1, **fields}, ensure_ascii=False
        ).encode(),
        st.sampled_from([*sorted(EVENT_KINDS), "unknown_kind"]),
        st.dictionaries(
            st.sampled_from(["active_ids", "request", "lease", "pruned", "records", "result"]),
            json_values,
            max_size=3,
        ),
    ),
)
"""Lines a trace must survive: random bytes, and records of any kind with fields of the wrong shape."""

RAW = ("\x1b", "\x9b", "\u202e")
"""Characters that must never reach the screen raw."""


def valid_events(text: str, run_id: str) -> list[TraceEvent]:
    """One iteration (a pass, an LLM call, a tool result) whose every string is ``text``."""

    def env(seq: int) -> dict[str, object]:
        return {"seq": seq, "ts": T0, "run_id": run_id, "turn": 1, "iteration": 1}

    return [
        PassEvent(**env(1), active_ids=[text, "x"], evaluated_total=2),
        LlmCallEvent(
            **env(2),
            call_index=1,
            provider=text,
            model=text,
            request=LlmRequest(
                system_prompt=[PromptSegment(source=text, injection_id=text, text=text)],
                messages=[Message(role="user", content=text)],
            ),
            response=LlmResponse(content=text),
            route="tool-calls",
        ),
        ToolResultEvent(**env(3), tool_call_id=text, tool_name=text, args={text: text}, result=text),
    ]


def write_fuzz_trace(path: Path, events: Sequence[TraceEvent], lines: Iterable[bytes]) -> Path:
    """``events`` written as the engine writes them, then ``lines`` appended raw (``path`` is replaced)."""
    path.unlink(missing_ok=True)
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(events)
    with path.open("ab") as handle:
        for line in lines:
            handle.write(line + b"\n")
    return path


def rendered(blocks: Iterable[Block], *, width: int = 90, rows: int = 50) -> str:
    """Every row of a document, collapsed and expanded (at most ``rows`` of each block), as text."""
    shown = []
    for block in blocks:
        for expanded in (False, True):
            for y in range(min(block.height(CONSOLE, width, expanded), rows)):
                shown.append(block.row(CONSOLE, width, expanded, y).plain)
    return "\n".join(shown)

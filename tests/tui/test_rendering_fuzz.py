"""Property tests: whatever the lines of a trace hold, every view's builder renders them without raising.

The builders (timeline rows' facts and badges, the pass inspector, the call view, event rows and
details, lease rows) are driven directly, without a terminal, over traces made of random bytes,
JSON of the wrong shape and valid events whose strings hold markup, controls and odd Unicode.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    EVENT_KINDS,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    PromptSegment,
    ToolResultEvent,
)
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.session import TraceSession
from fpdebug.tui.text import Palette
from fpdebug.tui.widgets.calls import call_document
from fpdebug.tui.widgets.document import Block
from fpdebug.tui.widgets.events import event_document, summarize
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.leases import lease_document
from tests.conftest import T0

CONSOLE = Console(width=90, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
PALETTE = Palette()

PIECES = ["[bold red]", "[/]", "[link=http://e]", "\x1b[2J", "\x1b]52;c;x\x07", "\u202e", "\x9b", "\n", "\t"]
nasty_text = st.lists(
    st.one_of(st.text(st.characters(codec="utf-8"), max_size=30), st.sampled_from(PIECES)), max_size=12
).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | nasty_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(nasty_text, children, max_size=4),
    max_leaves=12,
)
bad_lines = st.one_of(
    st.binary(max_size=200).filter(lambda raw: b"\n" not in raw),
    st.builds(
        # json, not orjson: integers beyond 64 bits must reach the reader too
        lambda kind, fields: json.dumps(
            {"kind": kind, "seq": 2, "run_id": "r", "turn": 1, "iteration": 1, **fields}, ensure_ascii=False
        ).encode(),
        st.sampled_from(sorted(EVENT_KINDS) + ["unknown_kind"]),
        st.dictionaries(
            st.sampled_from(["active_ids", "request", "lease", "pruned", "records", "result"]),
            json_values,
            max_size=3,
        ),
    ),
)


def _valid_events(text: str, run_id: str) -> list[object]:
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


def _render(blocks: list[Block]) -> None:
    for block in blocks:
        for expanded in (False, True):
            for y in range(min(block.height(CONSOLE, 90, expanded), 50)):
                block.row(CONSOLE, 90, expanded, y).plain  # noqa: B018 - rendering is the test


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=nasty_text, run_id=nasty_text, lines=st.lists(bad_lines, max_size=5))
def test_every_builder_survives_any_trace(tmp_path: Path, text: str, run_id: str, lines: list[bytes]) -> None:
    path = tmp_path / "fuzz.fptrace.jsonl"
    path.unlink(missing_ok=True)
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(_valid_events(text, run_id))  # type: ignore[arg-type]
    with path.open("ab") as handle:
        for line in lines:
            handle.write(line + b"\n")
    with TraceReader(path, index=False) as reader:
        session = TraceSession(reader)
        while not session.index_done:
            session.index_step()
        while session.model_step():
            pass
        for row, iteration in enumerate(session.iterations):
            session.facts(row)
            session.badges(row)
            session.label(iteration)
            _render(inspect_iteration(session, iteration, PALETTE))
            _render(call_document(session, iteration, PALETTE))
        for line in range(session.lines):
            summarize(session.record(line))
            _render(event_document(session, line, PALETTE))
        for lease in session.leases:
            _render(lease_document(session, lease, PALETTE))

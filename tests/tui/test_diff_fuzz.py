"""Property test: the pass diff, the call view's provenance and the backtrack document survive any trace.

Random traces as in ``test_rendering_fuzz`` (valid events whose strings hold markup, controls and odd
Unicode, then random bytes and JSON of the wrong shape), plus honesty rows (argument rows and an
answer assessment) whose ids and values are just as hostile. Every pair of passes is diffed, every
call explained; what cannot be explained must fail with an ``FpdebugError`` (the pane shows it), and
nothing rendered may carry a raw control character.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.backtrack import explain
from fpdebug.errors import FpdebugError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    FindingEvent,
    StatedValue,
    ToolCallRecord,
)
from fpdebug.trace.writer import TraceWriter
from fpdebug.tui.pass_diff import pass_diff
from fpdebug.tui.session import TraceSession
from fpdebug.tui.widgets.backtrack_report import PaneState, backtrack_document, find_assessment
from fpdebug.tui.widgets.calls import call_document
from fpdebug.tui.widgets.diff import diff_document
from tests.conftest import T0
from tests.tui.test_rendering_fuzz import CONSOLE, PALETTE, _valid_events, bad_lines, nasty_text

_RAW = ("\x1b", "\x9b", "\u202e")


def _rows(blocks: list[object]) -> str:
    rows = []
    for block in blocks:
        for expanded in (False, True):
            for y in range(min(block.height(CONSOLE, 90, expanded), 50)):  # type: ignore[attr-defined]
                rows.append(block.row(CONSOLE, 90, expanded, y).plain)  # type: ignore[attr-defined]
    return "\n".join(rows)


def _honest_events(text: str, run_id: str) -> list[object]:
    events = _valid_events(text, run_id)
    call = events[1]
    reply = call.response.model_copy(  # type: ignore[attr-defined]
        update={"tool_calls": [ToolCallRecord(id=text, name=text, args={text: text})]}
    )
    events[1] = call.model_copy(update={"response": reply})  # type: ignore[attr-defined]

    def env(seq: int) -> dict[str, object]:
        return {"seq": seq, "ts": T0, "run_id": run_id, "turn": 1, "iteration": 1}

    events += [
        FindingEvent(**env(4), layer="inputs", rows=[
            ArgumentRow(tool_call_id=text, tool_name=text, path=text, value=text, source="tool-result",
                        source_tool_call_id=text, source_path=text, refused_reference=text),
            ArgumentRow(
                tool_call_id=text, tool_name=text, path=text, value=None, source="nowhere", hidden=True
            ),
        ]),
        FindingEvent(**env(5), layer="answer", rows=[AnswerAssessmentRow(
            reads=["history"],
            values=[StatedValue(text=text, kind="quoted", supported=True,
                                supported_by=[f"tool:{text}", "user", f"external:{text}", text]),
                    StatedValue(text=text, kind="id", supported=False)],
            standing_line=text,
        )]),
    ]
    return events


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=nasty_text, run_id=nasty_text, lines=st.lists(bad_lines, max_size=5))
def test_diff_provenance_and_pane_survive_any_trace(
    tmp_path: Path, text: str, run_id: str, lines: list[bytes]
) -> None:
    path = tmp_path / "fuzz.fptrace.jsonl"
    path.unlink(missing_ok=True)
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(_honest_events(text, run_id))  # type: ignore[arg-type]
    with path.open("ab") as handle:
        for line in lines:
            handle.write(line + b"\n")
    with TraceReader(path, index=False) as reader:
        session = TraceSession(reader)
        while not session.index_done:
            session.index_step()
        while session.model_step():
            pass
        rows = range(len(session.iterations))
        shown = []
        for a in rows:
            shown.append(_rows(call_document(session, session.iterations[a], PALETTE)))
            for b in rows:
                shown.append(_rows(diff_document(session, pass_diff(session, a, b), PALETTE, marked=True)))
        for iteration in session.iterations:
            for line in iteration.llm_lines:
                try:
                    report = explain(path, line=line).report
                except FpdebugError as error:
                    shown.append(_rows(backtrack_document(None, PaneState(error=str(error)), None, PALETTE)))
                    continue
                assessment = find_assessment(session, line)
                shown.append(_rows(backtrack_document(report, PaneState(), assessment, PALETTE)))
        for text_shown in shown:
            assert not any(raw in text_shown for raw in _RAW)

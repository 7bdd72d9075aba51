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
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    FindingEvent,
    StatedValue,
    ToolCallRecord,
    TraceEvent,
)
from fpdebug.tui.widgets.backtrack_report import PaneState, backtrack_document, find_assessment
from fpdebug.tui.widgets.calls import call_document
from fpdebug.tui.widgets.diff import diff_document
from fpdebug.views.pass_diff import pass_diff
from tests.conftest import T0
from tests.tui.helpers import load_session
from tests.tui.strategies import (
    PALETTE,
    RAW,
    bad_lines,
    nasty_text,
    rendered,
    valid_events,
    write_fuzz_trace,
)


def _honest_events(text: str, run_id: str) -> list[TraceEvent]:
    events = valid_events(text, run_id)
    call = events[1]
    reply = call.response.model_copy(  # type: ignore[attr-defined]
        update={"tool_calls": [ToolCallRecord(id=text, name=text, args={text: text})]}
    )
    events[1] = call.model_copy(update={"response": reply})  # type: ignore[attr-defined]

    def env(seq: int) -> dict[str, object]:
        return {"seq": seq, "ts": T0, "run_id": run_id, "turn": 1, "iteration": 1}

    events += [
        FindingEvent(
            **env(4),
            layer="inputs",
            rows=[
                ArgumentRow(
                    tool_call_id=text,
                    tool_name=text,
                    path=text,
                    value=text,
                    source="tool-result",
                    source_tool_call_id=text,
                    source_path=text,
                    refused_reference=text,
                ),
                ArgumentRow(
                    tool_call_id=text, tool_name=text, path=text, value=None, source="nowhere", hidden=True
                ),
            ],
        ),
        FindingEvent(
            **env(5),
            layer="answer",
            rows=[
                AnswerAssessmentRow(
                    reads=["history"],
                    values=[
                        StatedValue(
                            text=text,
                            kind="quoted",
                            supported=True,
                            supported_by=[f"tool:{text}", "user", f"external:{text}", text],
                        ),
                        StatedValue(text=text, kind="id", supported=False),
                    ],
                    standing_line=text,
                )
            ],
        ),
    ]
    return events


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=nasty_text, run_id=nasty_text, lines=st.lists(bad_lines, max_size=5))
def test_diff_provenance_and_pane_survive_any_trace(
    tmp_path: Path, text: str, run_id: str, lines: list[bytes]
) -> None:
    path = write_fuzz_trace(tmp_path / "fuzz.fptrace.jsonl", _honest_events(text, run_id), lines)
    with TraceReader(path, index=False) as reader:
        session = load_session(reader)
        rows = range(len(session.iterations))
        shown = []
        for a in rows:
            shown.append(rendered(call_document(session, session.iterations[a], PALETTE)))
            for b in rows:
                shown.append(rendered(diff_document(session, pass_diff(session, a, b), PALETTE, marked=True)))
        for iteration in session.iterations:
            for line in iteration.llm_lines:
                try:
                    report = explain(path, line=line).report
                except FpdebugError as error:
                    refused = PaneState(error=str(error))
                    shown.append(rendered(backtrack_document(None, refused, None, PALETTE)))
                    continue
                assessment = find_assessment(session, line)
                shown.append(rendered(backtrack_document(report, PaneState(), assessment, PALETTE)))
        for text_shown in shown:
            assert not any(raw in text_shown for raw in RAW)

"""Property tests: whatever the lines of a trace hold, every view's builder renders them without raising.

The builders (timeline rows' facts and badges, the pass inspector, the call view, event rows and
details, lease rows) are driven directly, without a terminal, over traces made of random bytes,
JSON of the wrong shape and valid events whose strings hold markup, controls and odd Unicode.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.trace.reader import TraceReader
from fpdebug.tui.widgets.calls import call_document
from fpdebug.tui.widgets.events import event_document, summarize
from fpdebug.tui.widgets.inspector import inspect_iteration
from fpdebug.tui.widgets.leases import lease_document
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=nasty_text, run_id=nasty_text, lines=st.lists(bad_lines, max_size=5))
def test_every_builder_survives_any_trace(tmp_path: Path, text: str, run_id: str, lines: list[bytes]) -> None:
    path = write_fuzz_trace(tmp_path / "fuzz.fptrace.jsonl", valid_events(text, run_id), lines)
    with TraceReader(path, index=False) as reader:
        session = load_session(reader)
        shown: list[str] = []
        for row, iteration in enumerate(session.iterations):
            session.facts(row)
            session.badges(row)
            session.label(iteration)
            shown.append(rendered(inspect_iteration(session, iteration, PALETTE)))
            shown.append(rendered(call_document(session, iteration, PALETTE)))
        for line in range(session.lines):
            summarize(session.record(line))  # raw by design: its callers make it inert
            shown.append(rendered(event_document(session, line, PALETTE)))
        for lease in session.leases:
            shown.append(rendered(lease_document(session, lease, PALETTE)))
        for text_shown in shown:
            assert not any(raw in text_shown for raw in RAW)

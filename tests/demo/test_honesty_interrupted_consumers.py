"""What reads an interrupted honesty run's trace: ``fpdebug summary``, ``fpdebug report``,
``fpdebug backtrack`` and the debugger's answer assessment, at every point the run can be stopped.

None of them may crash; each says only what the trace holds (an answer assessed before the run was
stopped is shown, one the run never reached is not invented) and the report says the run did not
complete.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpdebug.backtrack import explain
from fpdebug.cli import main
from fpdebug.errors import FpdebugError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent
from fpdebug.tui.widgets.backtrack_report import PaneState, backtrack_document, find_assessment
from tests.engine.test_honesty_interrupted import run_stopped
from tests.tui.helpers import load_session
from tests.tui.strategies import PALETTE, rendered


def test_every_reader_survives_the_unsupported_amount_run_stopped_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, complete = run_stopped("unsupported-amount", tmp_path / "complete.jsonl")
    for at in range(1, len(complete) - 1):
        path = tmp_path / f"stop-{at}.jsonl"
        _, _, events = run_stopped("unsupported-amount", path, at=at)
        answers = [
            row
            for e in events
            if isinstance(e, FindingEvent)
            for row in e.rows
            if isinstance(row, AnswerAssessmentRow)
        ]
        assessed = bool(answers)

        assert main(["summary", "--json", str(path)]) == 0
        (run,) = json.loads(capsys.readouterr().out)["runs"]
        assert (run["status"], run["answers_assessed"], run["unsupported_values"]) == (
            "interrupted",
            len(answers),
            1 if assessed else 0,
        ), at

        assert main(["report", "--format", "json", str(path)]) == 0
        (reported,) = json.loads(capsys.readouterr().out)["runs"]
        expected = [["$75.00"]] if assessed else []
        assert [row["values"] for row in reported["unsupported_values"]] == expected, at
        assert main(["report", str(path)]) == 0
        markdown = capsys.readouterr().out
        note = "_The run did not complete (interrupted): a turn it stopped in may have no assessment._"
        assert note in markdown, at
        assert ("| 1.2 | 4 | 1 | $75.00 |" in markdown) is assessed, at

        # The backtrack of the last reply: refused with a clear error when there is none, else the
        # unsupported value exactly when the answer layer had assessed it.
        code = main(["backtrack", "--no-save", str(path)])
        out, err = capsys.readouterr()
        if not any(e.kind == "llm_call" for e in events):
            assert code == 2 and "no llm_call with a reply" in err, at
            continue
        assert code == 0, at
        assert ("unsupported-value '$75.00'" in out) is assessed, at

        with TraceReader(path, index=False) as reader:
            session = load_session(reader)
            for iteration in session.iterations:
                for line in iteration.llm_lines:
                    try:
                        report = explain(path, line=line).report
                    except FpdebugError:
                        continue
                    assessment = find_assessment(session, line)
                    shown = rendered(backtrack_document(report, PaneState(), assessment, PALETTE))
                    if assessment is not None:
                        assert assessed and "Answer assessment" in shown, at
                        unsupported = [
                            item.value.text for item in assessment.values if not item.value.supported
                        ]
                        assert unsupported == ["$75.00"], at

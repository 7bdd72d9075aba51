"""Run reports: golden files for each demo trace, facts checked against the raw trace, hostile text, sidecars.

The sidecar tests run ``fpdebug backtrack`` on a copy of the planted-fact sample in ``tmp_path`` (the
scripted reruns are seeded, so their verdicts are the same every time).

The golden files under ``tests/export/golden/`` were generated from the committed sample traces and
read line by line against the scenarios (SCENARIOS.md, docs/context-model.md §4.4 and §6.6). After a deliberate change
to the report, regenerate them with ``FPDEBUG_UPDATE_GOLDEN=1 pytest tests/export/test_report.py`` and
review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fpdebug.backtrack.ablation import ProbeStats, SimilarityStats
from fpdebug.backtrack.provenance import HonestyFlag, ReadProblems
from fpdebug.backtrack.session import backtrack, explain
from fpdebug.backtrack.sidecar import SidecarWriter, sidecar_path_for
from fpdebug.cli import main
from fpdebug.export.report import report_trace
from fpdebug.export.report_markdown import md_cell, render_markdown
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    CursorMoveEvent,
    ErrorInfo,
    FindingEvent,
    LlmCallEvent,
    LlmRequest,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StatedValue,
    StoppedEarly,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from tests.backtrack.traces import copy_sample, demo_loader
from tests.export.otlp_helpers import SAMPLES, raw_records
from tests.trace.samples import Script, support_run

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("FPDEBUG_UPDATE_GOLDEN") == "1"


def scenario(path: Path) -> str:
    return path.name.split(".")[0]


def check_golden(name: str, text: str) -> None:
    golden = GOLDEN / name
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"missing golden file {golden} (FPDEBUG_UPDATE_GOLDEN=1 writes it)"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("sample", SAMPLES, ids=scenario)
def test_markdown_report_matches_its_golden_file(sample: Path) -> None:
    check_golden(f"{scenario(sample)}.report.md", render_markdown(report_trace(sample, find_sidecar=False)))


@pytest.mark.parametrize("sample", SAMPLES, ids=scenario)
def test_json_report_matches_its_golden_file(sample: Path) -> None:
    report = report_trace(sample, find_sidecar=False)
    check_golden(f"{scenario(sample)}.report.json", json.dumps(report, indent=2, ensure_ascii=True) + "\n")


@pytest.mark.parametrize("sample", SAMPLES, ids=scenario)
def test_the_report_agrees_with_the_raw_trace(sample: Path) -> None:
    records = raw_records(sample)
    (run,) = report_trace(sample, find_sidecar=False)["runs"]
    run_end = next(r for r in records if r["kind"] == "run_end")
    assert run["status"] == run_end["status"]
    assert (run["input_tokens"], run["output_tokens"]) == (run_end["input_tokens"], run_end["output_tokens"])
    iterations = sorted({(r["turn"], r["iteration"]) for r in records if r.get("iteration") is not None})
    assert [(row["turn"], row["iteration"]) for row in run["timeline"]] == iterations
    for row in run["timeline"]:
        where = (row["turn"], row["iteration"])
        here = [r for r in records if (r.get("turn"), r.get("iteration")) == where]
        assert row["tool_calls"] == [r["tool_name"] for r in here if r["kind"] == "tool_result"]
        passes = [r for r in here if r["kind"] == "pass"]
        assert row["active_count"] == len(passes[0]["active_ids"])
        assert row["leases_served"] == passes[0].get("lease_active_ids", [])
    grants = [r["lease"] for r in records if r["kind"] == "lease_grant"]
    assert [(lease["instruction_id"], lease["granted_by_call"]) for lease in run["leases"]] == [
        (grant["instruction_id"], grant["tool_call_id"]) for grant in grants
    ]
    prunes = [r for r in records if r["kind"] == "lease_prune"]
    pruned = {p["instruction_id"]: p["reason"] for r in prunes for p in r["pruned"]}
    assert {lease["instruction_id"]: lease["state"] for lease in run["leases"]} == {
        grant["instruction_id"]: pruned.get(grant["instruction_id"], "alive") for grant in grants
    }


def test_the_zone_trap_report_shows_the_park_on_pass_4_and_the_re_engagement_on_pass_5() -> None:
    path = next(p for p in SAMPLES if scenario(p) == "zone-trap")
    (run,) = report_trace(path, find_sidecar=False)["runs"]
    changes = [(row["iteration"], row["change"]) for row in run["map_changes"]]
    assert (4, "parked") in changes and (5, "reengaged") in changes
    assert run["maps"] == [{"map_id": "skill-map", "standing": "engaged", "parks": 1, "reengagements": 1}]
    assert "parked" in run["timeline"][3]["badges"]


def test_the_support_report_shows_both_leases_and_how_each_ended() -> None:
    path = next(p for p in SAMPLES if scenario(p) == "support")
    text = render_markdown(report_trace(path, find_sidecar=False))
    assert (
        "| wire-format | next-call | billing | fetch\\_invoice (call\\_3) | 1.2 | 1.3 | spent at 1.3"
    ) in text
    assert (
        "| refund-policy | until-skill-exit | billing | check\\_policy (call\\_2) | 1.2 | 1.3 "
        "| tenure-ended at 1.4"
    ) in text


def test_routing_trouble_and_engagement_from_a_hand_built_run(tmp_path: Path) -> None:
    script, _ = support_run()
    path = script.write(tmp_path / "support.jsonl")
    report = report_trace(path)
    (run,) = report["runs"]
    assert run["route_conflicts"] == [
        {
            "turn": 1,
            "iteration": 2,
            "from_skill": "triage",
            "winner": "scan → billing",
            "losers": ["lookup → faq"],
            "source": None,
        }
    ]
    assert [(row["requested"], row["allowed"]) for row in run["rejected_picks"]] == [("faq", ["triage"])]
    assert [(row["volunteered"], row["won"]) for row in run["superseded_reroutes"]] == [("faq", "billing")]
    badges = {row["iteration"]: row["badges"] for row in run["timeline"]}
    assert "route conflict" in badges[2] and "pick rejected" in badges[3] and "parked" in badges[3]
    assert "reengaged" in badges[4] and "reroute superseded" in badges[4]
    assert report["backtrack"] is None
    text = render_markdown(report)
    assert "## Route conflicts\n\n| turn.iter | from | winner | losers | source |" in text
    assert "| 1.2 | triage | scan → billing | lookup → faq | – |" in text


def failing_run() -> Script:
    s = Script("r|1")
    s.add(RunStartEvent, turn=None, agent_name="ops", provider="scripted", model="m", max_iterations=3)
    s.turn = 1
    s.add(TurnStartEvent, user_message="go")
    moves = [("a", "b"), ("b", "a"), ("a", "b")]
    for iteration, (start, end) in enumerate(moves, start=1):
        s.add(PassEvent, iteration=iteration, active_ids=["x"], evaluated_total=1)
        s.add(
            CursorMoveEvent,
            iteration=iteration,
            from_skill=start,
            to_skill=end,
            by="route",
            strength="structural",
        )
        s.add(
            LlmCallEvent,
            iteration=iteration,
            call_index=iteration,
            provider="scripted",
            model="m",
            request=LlmRequest(),
            route="tool-calls",
        )
        s.add(
            ToolResultEvent,
            iteration=iteration,
            tool_call_id=f"c{iteration}",
            tool_name="read_skill",
            result="no",
            status="invalid",
        )
        s.add(SkillRejectedEvent, iteration=iteration, requested_id="zz", allowed=["a"])
    s.add(
        FindingEvent,
        iteration=3,
        layer="answer",
        rows=[
            AnswerAssessmentRow(
                reads=["history"],
                values=[
                    StatedValue(text="$5", kind="amount", supported=True),
                    StatedValue(text="$9", kind="amount", supported=False),
                ],
            )
        ],
    )
    s.add(
        TurnEndEvent,
        final_content="",
        iteration_count=3,
        stopped_early=StoppedEarly(
            reason="max-iterations", iteration=3, pending_tool_calls=1, answer_was_empty=True
        ),
    )
    s.add(
        LlmCallEvent,
        iteration=1,
        turn=2,
        call_index=4,
        provider="scripted",
        model="m",
        request=LlmRequest(),
        error=ErrorInfo(type="ProviderError", message="HTTP 500"),
    )
    s.turn = None
    s.add(RunEndEvent, status="failed", error=ErrorInfo(type="ProviderError", message="HTTP 500"))
    return s


def test_failures_trips_and_unsupported_values_are_reported(tmp_path: Path) -> None:
    path = failing_run().write(tmp_path / "failing.jsonl")
    (run,) = report_trace(path)["runs"]
    assert run["status"] == "failed" and run["error"] == "ProviderError: HTTP 500"
    badges = [row["badges"] for row in run["timeline"]]
    assert badges[2][-1] == "stopped early (max-iterations)"
    # a→b, b→a, a→b lands a, b, a, b: the route recorder's ping-pong trip, on the fourth landing
    assert "ping-pong" in badges[2] and "ping-pong" not in badges[1]
    assert "rejected ×3" in badges[2] and "rejected ×3" not in badges[1] and "tool failed" in badges[0]
    assert "call failed" in badges[3]
    assert run["unsupported_values"] == [
        {"turn": 1, "iteration": 3, "stated": 2, "unsupported": 1, "values": ["$9"]}
    ]
    text = render_markdown(report_trace(path))
    assert "| 1.3 | 2 | 1 | $9 |" in text  # the value itself, not only its count; "$5" was supported
    assert "$5" not in text
    assert "read\\_skill ✗" in text


HOSTILE = "a|b`c\x1b[2J\u202eevil\n[link](http://x) <b>*x*</b>"


def test_hostile_text_is_inert_and_escaped(tmp_path: Path) -> None:
    s = Script(HOSTILE)
    s.add(RunStartEvent, turn=None, agent_name=HOSTILE, provider="scripted", model=HOSTILE, max_iterations=2)
    s.turn = 1
    s.add(TurnStartEvent, user_message=HOSTILE)
    s.add(PassEvent, iteration=1, active_ids=[HOSTILE], evaluated_total=1)
    s.add(ToolResultEvent, iteration=1, tool_call_id=HOSTILE, tool_name=HOSTILE, result=HOSTILE)
    s.add(SkillRejectedEvent, iteration=1, requested_id=HOSTILE, allowed=[HOSTILE])
    s.add(
        FindingEvent,
        iteration=1,
        layer="answer",
        rows=[
            AnswerAssessmentRow(
                reads=["history"], values=[StatedValue(text=HOSTILE, kind="quoted", supported=False)]
            )
        ],
    )
    s.add(TurnEndEvent, final_content=HOSTILE, iteration_count=1)
    s.turn = None
    s.add(RunEndEvent, status="failed", error=ErrorInfo(type="X", message=HOSTILE))
    path = s.write(tmp_path / "hostile.jsonl")
    text = render_markdown(report_trace(path))
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J" not in text  # the escape's bracket is escaped too
    assert "\\x1b\\[2J" in text and "\\u202e" in text
    # Every pipe that is not escaped is a cell border: each row has exactly its header's cells.
    lines = text.splitlines()
    tables = 0
    for number, line in enumerate(lines[:-1]):
        if line.startswith("| ") and lines[number + 1].startswith("|---"):
            tables += 1
            width = len(cells(line))
            for row in lines[number + 2 :]:
                if not row.startswith("|"):
                    break
                assert len(cells(row)) == width, row
    assert tables == 4  # the header, the timeline, the rejected picks, the unsupported values
    # No live markup: every bracket, angle bracket and emphasis mark from the trace is escaped.
    assert not re.search(r"(?<!\\)[<>\[\]`*]", "".join(c for line in lines for c in cells(line)[1:-1]))


def cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line)


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("plain", "plain"),
        ("a|b", "a\\|b"),
        ("x`y", "x\\`y"),
        ("two\nlines", "two⏎lines"),
        (None, "–"),
        ("", "–"),
        ("\x07bell", "\\\\x07bell"),
    ],
)
def test_md_cell(text: str | None, cell: str) -> None:
    assert md_cell(text) == cell


# ----------------------------------------------------------------------------------------------
# The backtrack sidecar, as ``fpdebug backtrack`` writes it


def backtracked_sample(tmp_path: Path, *args: str) -> Path:
    """A copy of the planted-fact sample with a real sidecar beside it (never beside the committed one)."""
    trace = copy_sample("planted-fact", tmp_path)
    assert main(["backtrack", str(trace), *args]) == 0
    assert sidecar_path_for(trace).is_file()
    return trace


def test_a_real_backtrack_sidecar_matches_its_golden_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = backtracked_sample(tmp_path, "--ablate", "--bisect")
    capsys.readouterr()
    report = report_trace(trace)
    # The sidecar holds a random id and a wall-clock time per backtrack; the report shows neither,
    # so its bytes are the same for every run of the scripted reruns.
    check_golden("planted-fact.backtracked.report.md", render_markdown(report))
    as_json = json.dumps(report, indent=2, ensure_ascii=True) + "\n"
    check_golden("planted-fact.backtracked.report.json", as_json)
    # The command writes the Markdown run by run (fpdebug/export/report_stream.py): the same bytes.
    out = tmp_path / "report.md"
    assert main(["report", str(trace), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (GOLDEN / "planted-fact.backtracked.report.md").read_text(
        encoding="utf-8"
    )


def test_the_report_shows_what_the_backtracker_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = backtracked_sample(tmp_path, "--ablate", "--bisect")
    capsys.readouterr()
    lines = [json.loads(line) for line in sidecar_path_for(trace).read_text(encoding="utf-8").splitlines()]
    section = report_trace(trace)["backtrack"]
    assert section is not None
    assert (section["path"], section["unreadable_lines"], section["torn_tail"]) == (
        sidecar_path_for(trace).name,
        0,
        False,
    )
    (saved,) = section["backtracks"]
    report_line = lines[0]
    assert report_line["record"] == "report"
    assert (saved["claim"], saved["call_seq"], saved["call_index"], saved["run_id"]) == (
        report_line["report"]["claim"],
        report_line["call_seq"],
        report_line["call_index"],
        report_line["report"]["run_id"],
    )
    assert saved["in_trace"] and saved["status"] == "finished" and saved["mode"] == "causal"
    baseline = next(line for line in lines if line["record"] == "baseline")["stats"]
    assert saved["baseline"] == f"{baseline['flips']}/{baseline['samples']} flipped with no ablation"
    assert saved["baseline_stable"] is True
    assert [
        (v["source"], v["label"], v["verdict"], v["tier"], v["flips"], v["samples"], v["claim"])
        for v in saved["verdicts"]
    ] == [
        (
            line["source"],
            line["verdict"]["label"],
            line["verdict"]["kind"],
            line["verdict"]["tier"],
            line["verdict"]["flips"],
            line["verdict"]["samples"],
            line["verdict"]["claim"],
        )
        for line in lines
        if line["record"] == "verdict"
    ]
    confirmed = [v["label"] for v in saved["verdicts"] if v["verdict"] == "confirmed"]
    assert confirmed == ["injection 'vip-override'"]
    bisect = next(line for line in lines if line["record"] == "bisect")["bisect"]
    assert saved["bisect"] is not None and saved["bisect"]["culprits"] == bisect["culprits"] == [
        ["injection 'vip-override'"]
    ]
    assert saved["runs_used"] == lines[-1]["runs_used"]
    text = render_markdown(report_trace(trace))
    assert "### Backtrack 1: llm\\_call #2 (seq 7, turn.iter 1.2)" in text
    assert "| sample-planted-fact | causal | finished | 0/3 flipped with no ablation (stable) |" in text
    assert "| injection 'vip-override' | ablating | confirmed | causal | 3/3 | CAUSAL: ablating" in text
    assert "| confirmed | causal | {injection 'vip-override'} | 6 | 18 |" in text
    assert "skipped" not in text and "half a record" not in text


def test_the_target_warning_and_honesty_notes_of_a_backtrack_reach_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = copy_sample("planted-fact", tmp_path)
    lines = trace.read_bytes().splitlines(keepends=True)
    final = max(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "llm_call")
    lines[final] = b'{"kind": "llm_call", "seq": \x00garbled\n'  # the final answer's record, unreadable
    trace.write_bytes(b"".join(lines))
    assert main(["backtrack", str(trace)]) == 1  # it explains an earlier call, and says so
    printed = capsys.readouterr().out
    saved = json.loads(sidecar_path_for(trace).read_text(encoding="utf-8").splitlines()[0])["report"]
    target = saved["target_note"]
    trace_note = ReadProblems.model_validate(saved["read_problems"]).note
    assert target and f"⚠ target: {target}" in printed
    assert saved["read_problems"]["invalid"] == 1 and trace_note
    # A second backtrack carrying an honesty flag (a baseline that flipped with nothing removed).
    flagged = explain(trace).report
    flag = HonestyFlag(flag="baseline-unstable", note="1/3 reruns flipped with nothing removed")
    SidecarWriter(trace, flagged.model_copy(update={"flags": [flag]})).end("complete")
    section = report_trace(trace)["backtrack"]
    assert section is not None
    first, second = section["backtracks"]
    assert (first["target_note"], first["trace_note"], first["flags"]) == (target, trace_note, [])
    assert second["target_note"] == target and second["flags"] == [{"flag": flag.flag, "note": flag.note}]
    text = render_markdown(report_trace(trace))
    claim = f"\n{md_cell(saved['claim'])}\n"
    first_md, second_md = text.split("### Backtrack 2")
    for warning in (f"⚠ target: {md_cell(target)}", f"⚠ trace: {md_cell(trace_note)}"):
        assert first_md.index(warning) < first_md.index(claim)  # read before the claim
    assert second_md.index(f"⚠ baseline-unstable: {flag.note}") < second_md.index(claim)
    as_json = json.dumps(report_trace(trace))
    assert as_json.index('"target_note"') < as_json.index('"claim"')


def test_only_real_junk_is_counted_and_every_backtrack_keeps_its_status(tmp_path: Path) -> None:
    trace = copy_sample("planted-fact", tmp_path)
    # A backtrack with no reruns writes only its report and end records: nothing to skip.
    assert main(["backtrack", str(trace)]) == 0
    section = report_trace(trace)["backtrack"]
    assert section is not None and section["unreadable_lines"] == 0 and not section["torn_tail"]
    assert [(b["status"], b["mode"], b["verdicts"], b["baseline"]) for b in section["backtracks"]] == [
        ("finished", "correlational", [], None)
    ]
    # A cancelled one keeps what finished; one that never wrote its end record is unfinished.
    done: list[int] = []
    backtrack(
        trace,
        ablate=True,
        load_module=demo_loader,
        progress=lambda d, _: done.append(d),
        cancelled=lambda: len(done) >= 6,
    )
    writer = SidecarWriter(trace, explain(trace).report)
    writer.baseline(
        ProbeStats(samples=3, flips=1, similarity=SimilarityStats(mean=0.6, min=0.0, max=1.0, stdev=0.4))
    )
    with sidecar_path_for(trace).open("ab") as file:
        file.write(b'not json\n["a", "list"]\n{"record": "verdict", "id": "nobody"}\n{"record": "verd')
    section = report_trace(trace)["backtrack"]
    assert section is not None
    assert section["unreadable_lines"] == 3 and section["torn_tail"]
    assert [b["status"] for b in section["backtracks"]] == ["finished", "cancelled", "unfinished"]
    cancelled, unfinished = section["backtracks"][1:]
    assert len(cancelled["verdicts"]) == 1 and cancelled["baseline_stable"] is True
    assert (unfinished["baseline"], unfinished["baseline_stable"], unfinished["mode"]) == (
        "1/3 flipped with no ablation",
        False,
        "correlational",
    )
    text = render_markdown(report_trace(trace))
    assert "From planted-fact.fptrace.jsonl.backtrack.jsonl: 3 saved backtracks." in text
    assert "3 line(s) of the sidecar are not backtrack records and were skipped." in text
    assert "The sidecar ends in half a record" in text
    assert "### Backtrack 3: llm\\_call #2 (seq 7, turn.iter 1.2)" in text
    assert "| correlational | unfinished | 1/3 flipped with no ablation (UNSTABLE) |" in text
    assert "_No verdicts: no reruns (chains and rankings only)._" in text


def test_a_sidecar_of_another_trace_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted = backtracked_sample(tmp_path)
    other = failing_run().write(tmp_path / "other.fptrace.jsonl")
    assert report_trace(other)["backtrack"] is None  # nothing beside it
    section = report_trace(other, sidecar=sidecar_path_for(planted))["backtrack"]
    assert section is not None and [b["in_trace"] for b in section["backtracks"]] == [False]
    text = render_markdown(report_trace(other, sidecar=sidecar_path_for(planted)))
    assert "⚠ Run sample-planted-fact is not in this trace" in text

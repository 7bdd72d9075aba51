"""The diff of two runs: alignment, the first divergence named at its stage, and its consequences.

Each pair is one demo run as it is and once with one thing changed (see ``run_diff_helpers``).
"""

from __future__ import annotations

import json
from pathlib import Path

from fpdebug.demo import support
from fpdebug.views.run_diff import SCHEMA, VERSION
from fpdebug.views.run_diff.text import render
from tests.views.run_diff_helpers import (
    diff_of,
    leases_other_rate,
    leases_without_grant,
    run,
    support_on_another_model,
    support_without_tone,
    variant,
)


def test_two_runs_of_one_scenario_are_identical(tmp_path: Path) -> None:
    a = run("support", tmp_path / "a.jsonl", run_id="first")
    b = run("support", tmp_path / "b.jsonl", run_id="second")  # another run id: not a difference
    diff = diff_of(a, b)
    assert diff.identical and diff.first is None and not diff.declared
    labels = [point.label for point in diff.points]
    assert labels == ["T1 start", *(f"T1·I{n}" for n in range(1, 6)), "T1 end", "run end"]
    assert render(diff).splitlines()[-1] == "identical: the two runs agree at every point (8 compared)"


def test_an_injection_left_out_diverges_at_the_first_pass_with_its_reason(tmp_path: Path) -> None:
    diff = diff_of(run("support", tmp_path / "a.jsonl"), run(support_without_tone(), tmp_path / "b.jsonl"))
    assert not diff.identical
    first = diff.first
    assert first is not None and (first.label, first.first_stage) == ("T1·I1", "context")
    named = first.differences[0]
    assert (named.kind, named.subject, named.b) == ("injection", "tone", "not active")
    assert named.a == "active (steering; its trigger is always)"
    assert "in A its trigger is always" in named.why
    assert "B does not declare it: its run left it out (run_start.options.without)" in named.why
    # Its consequence on the same pass: the request lost the steering segment.
    segment = next(d for d in first.differences if d.stage == "request")
    assert (segment.kind, segment.subject, segment.a, segment.b) == (
        "segment",
        "steering tone",
        "Be brief and friendly.",
        None,
    )
    # The declaration says why, beside the divergence.
    assert [(d.kind, d.subject) for d in diff.declared] == [("injection", "tone"), ("option", "without")]
    # Pass by pass: every later pass still lacks it; the answer and the end are the same.
    later = {point.label: point for point in diff.consequences()}
    assert [d.subject for d in later["T1·I4"].differences] == ["tone", "steering tone"]
    assert later["T1 end"].identical and later["run end"].identical
    text = render(diff)
    assert "first divergence: T1·I1, context pass" in text
    assert "  T1 end   identical" in text


def test_a_different_tool_result_is_named_with_its_line_diff(tmp_path: Path) -> None:
    diff = diff_of(run("leases", tmp_path / "a.jsonl"), run(leases_other_rate(), tmp_path / "b.jsonl"))
    first = diff.first
    assert first is not None and (first.label, first.first_stage) == ("T1·I1", "tools")
    [result] = first.differences
    assert (result.kind, result.subject) == ("tool-result", "fetch (result 1)")
    assert result.a is not None and "1.0800" in result.a
    assert result.b is not None and "1.0900" in result.b
    assert any(line.startswith("-") and "1.0800" in line for line in result.detail)
    assert any(line.startswith("+") and "1.0900" in line for line in result.detail)
    # The next request carries the other result: a tool message in each run only.
    second = next(point for point in diff.points if point.label == "T1·I2")
    assert [(d.stage, d.kind) for d in second.differences] == [("request", "message"), ("request", "message")]
    assert {d.subject for d in second.differences} == {"tool result of fetch #1"}


def test_a_different_model_is_named_at_the_first_request(tmp_path: Path) -> None:
    diff = diff_of(
        run("support", tmp_path / "a.jsonl"), run(support_on_another_model(), tmp_path / "b.jsonl")
    )
    assert [(d.kind, d.a, d.b) for d in diff.declared] == [("model", "scripted-support", "scripted-other")]
    first = diff.first
    assert first is not None and (first.label, first.first_stage) == ("T1·I1", "request")
    assert [(d.kind, d.a, d.b) for d in first.differences] == [
        ("model", "scripted-support", "scripted-other")
    ]


def test_a_lease_granted_in_one_run_only(tmp_path: Path) -> None:
    diff = diff_of(run("leases", tmp_path / "a.jsonl"), run(leases_without_grant(), tmp_path / "b.jsonl"))
    first = diff.first
    assert first is not None and (first.label, first.first_stage) == ("T1·I1", "tools")
    assert [(d.kind, d.a, d.b) for d in first.differences] == [
        ("tool-effects", "require-instruction wire-format next-call accepted", "none"),
        ("lease-granted", "next-call lease granted by fetch", None),
    ]
    assert first.differences[1].why == "a lease granted in one run only"
    # On the next pass the lease serves A only (and is spent there), so its instruction rides A only.
    second = next(point for point in diff.points if point.label == "T1·I2")
    context = [(d.kind, d.subject, d.b) for d in second.differences if d.stage == "context"]
    assert context == [
        ("lease-pruned", "wire-format", None),
        ("lease-serving", "wire-format", None),
        ("injection", "wire-format", "not active"),
    ]
    injection = second.differences[2]
    # The call that granted it is named by position (#1), not by the id the model gave it.
    assert (
        injection.a
        == "active (instructions; lease next-call granted by fetch (call #1, iteration 1), tenant (no tenant))"
    )
    assert injection.why.startswith("in A lease next-call granted by fetch")
    assert injection.why.endswith("in B its trigger (rule) did not fire")
    assert second.differences[0].a == "next-call lease spent at evaluate"
    third = next(point for point in diff.points if point.label == "T1·I3")
    assert third.identical


def test_extra_passes_are_said_per_side(tmp_path: Path) -> None:
    a = run("leases", tmp_path / "a.jsonl")
    b = run("support", tmp_path / "b.jsonl")
    diff = diff_of(a, b)
    lone = [point for point in diff.points if point.present != "both"]
    assert [(point.label, point.present) for point in lone] == [("T1·I4", "b"), ("T1·I5", "b")]
    assert "A's turn 1 has 3 iteration(s), B's 5" in lone[0].differences[0].why
    skill_map = next(d for d in diff.declared if d.kind == "skill-map")
    assert (skill_map.a, skill_map.b) == (None, "3 skill(s) (triage, billing, refund), 2 route(s)")
    assert skill_map.detail[0] == "@@ -0,0 +1,31 @@"


def test_the_json_form_is_the_same_for_two_runs_of_one_pair(tmp_path: Path) -> None:
    first = diff_of(
        run("support", tmp_path / "a1.jsonl", "x1"), run(support_without_tone(), tmp_path / "b1.jsonl")
    )
    again = diff_of(
        run("support", tmp_path / "a2.jsonl", "y2"), run(support_without_tone(), tmp_path / "b2.jsonl")
    )
    dumped = json.dumps(first.as_json(), sort_keys=True)
    assert dumped == json.dumps(again.as_json(), sort_keys=True)
    document = first.as_json()
    assert (document["schema"], document["version"]) == (SCHEMA, VERSION)
    assert "a1.jsonl" not in dumped and "x1" not in dumped  # no paths, no run ids


def test_a_cursor_that_moved_elsewhere(tmp_path: Path) -> None:
    a = run("support", tmp_path / "a.jsonl")
    b = run("support", tmp_path / "b.jsonl")
    # B's second pass records the route to refund instead of billing (an edited recording).
    moved = b.read_bytes().replace(
        b'"from_skill":"triage","to_skill":"billing"', b'"from_skill":"triage","to_skill":"refund"'
    )
    assert moved != b.read_bytes()
    b.write_bytes(moved)
    first = diff_of(a, b).first
    assert first is not None and (first.label, first.first_stage) == ("T1·I2", "context")
    cursor = first.differences[0]
    assert (cursor.kind, cursor.a, cursor.b) == (
        "cursor",
        "triage → billing by route",
        "triage → refund by route",
    )
    assert cursor.why == "the cursor is on billing in A and on refund in B"


def test_a_prompt_segment_whose_text_changed(tmp_path: Path) -> None:
    rewritten = variant(
        support, lambda: support.build_agent().system_prompt("You are a terse support agent.")
    )
    diff = diff_of(run("support", tmp_path / "a.jsonl"), run(rewritten, tmp_path / "b.jsonl"))
    assert [d.kind for d in diff.declared] == ["system-prompt"]
    first = diff.first
    assert first is not None and (first.label, first.first_stage) == ("T1·I1", "request")
    [segment] = first.differences
    assert (segment.kind, segment.subject, segment.why) == ("segment", "base", "its text changed")
    assert segment.a == "You are a customer support agent for an online shop."
    assert segment.b == "You are a terse support agent."
    assert segment.detail == (
        "@@ -1 +1 @@",
        "-You are a customer support agent for an online shop.",
        "+You are a terse support agent.",
    )


def test_a_map_that_stands_differently(tmp_path: Path) -> None:
    a = run("zone-trap", tmp_path / "a.jsonl")
    b = run("zone-trap", tmp_path / "b.jsonl")
    parked = b'"standing":"parked","by":"lexical","since":4'
    assert parked in b.read_bytes()
    b.write_bytes(b.read_bytes().replace(parked, b'"standing":"engaged","by":"lexical","since":4'))
    first = diff_of(a, b).first
    assert first is not None and (first.label, first.first_stage) == ("T1·I4", "context")
    assert [(d.kind, d.subject, d.a, d.b) for d in first.differences] == [
        ("map", "skill-map", "parked by lexical, at zone-audit", "engaged by lexical, at zone-audit")
    ]

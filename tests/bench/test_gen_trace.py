"""The benchmark trace generator writes valid traces with the mix the figures assume."""

from __future__ import annotations

from pathlib import Path

from bench.gen_trace import check_lines, generate
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader


def test_generated_trace_validates_byte_for_byte_with_a_realistic_mix(tmp_path: Path) -> None:
    path = tmp_path / "synthetic.fptrace.jsonl"
    stats = generate(path, 3000, seed=7)

    # Every line is exactly what the real writer would have written for the same event.
    lines = path.read_bytes().splitlines(keepends=True)
    assert check_lines(lines[1:]) == stats.events == len(lines) - 1 >= 3000

    # The reader (what `fpdebug validate` runs) finds nothing wrong: header, seq, every record.
    with TraceReader(path) as reader:
        assert reader.problems() == []
        model = RunModel.build(reader)

    # The mix the figures rely on: several runs of several turns, ~20 injections per pass,
    # prompts of about 4 KB, leases granted and pruned both ways, parks and re-engagements.
    assert len(model.runs) >= 5 and all(len(run.turns) >= 3 for run in model.runs)
    kinds = set(model.counts)
    assert {
        "pass",
        "cursor_move",
        "engagement",
        "llm_call",
        "tool_result",
        "lease_grant",
        "lease_prune",
        "turn_start",
        "turn_end",
        "run_start",
        "run_end",
    } <= kinds
    leases = [lease for run in model.runs for lease in run.leases]
    assert {lease.state for lease in leases} >= {"spent", "tenure-ended"}
    assert all(lease.grant_line is not None for lease in leases)
    assert sum(run.parks for run in model.runs) > 0 and sum(run.reengagements for run in model.runs) > 0
    with TraceReader(path) as reader:
        call = reader[next(i for i, line in enumerate(lines) if b'"kind":"llm_call"' in line[:20])]
        prompt = sum(len(segment.text) for segment in call.request.system_prompt)
        tagged = [segment.injection_id for segment in call.request.system_prompt if segment.source != "base"]
        assert 3000 <= prompt <= 6000 and len(tagged) >= 5 and None not in tagged
        first_pass = reader[model.runs[0].turns[0].iterations[0].pass_line]
        assert first_pass.evaluated_total == 20 and len(first_pass.active_ids) >= 5

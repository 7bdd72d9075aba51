"""RunModel from line facts: the same model as from full validation, at a known and documented price."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from fpdebug.trace import schema
from fpdebug.trace.facts import FACTS_MODELS
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0
from tests.trace.samples import Script, every_kind, support_run

_EVENT_MODELS = {
    model.model_fields["kind"].default: model
    for model in typing.get_args(typing.get_args(schema.TraceEvent)[0])
}


@pytest.mark.parametrize("facts", FACTS_MODELS, ids=lambda model: model.__name__)
def test_every_fact_has_the_schema_field_name_and_type(facts: type) -> None:
    kind = typing.get_args(facts.model_fields["kind"].annotation)[0]
    event = _EVENT_MODELS[kind]
    for name, field in facts.model_fields.items():
        assert name in event.model_fields, f"{kind}.{name} is not a schema field"
        if name in ("kind", "response"):
            continue  # the literal itself; the reply's facts are a sub-model of LlmResponse's fields
        assert field.annotation == event.model_fields[name].annotation, f"{kind}.{name}"
        assert field.is_required() == event.model_fields[name].is_required(), f"{kind}.{name}"
    response = facts.model_fields.get("response")
    if response is not None:
        usage = typing.get_args(response.annotation)[0].model_fields["usage"]
        assert usage.annotation == schema.LlmResponse.model_fields["usage"].annotation
    assert {model.model_fields["kind"].annotation for model in FACTS_MODELS} == {
        model.model_fields["kind"].annotation for model in _EVENT_MODELS.values()
    }


def _shape(value: object) -> object:
    """Every field of the model's objects, recursively, as plain tuples (they compare by identity)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *(_shape(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return tuple(sorted((key, _shape(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_shape(item) for item in value)
    if hasattr(value, "tolist"):  # array('q')
        return tuple(value.tolist())  # type: ignore[union-attr]
    return value


def _model_shape(model: RunModel) -> object:
    return (model.lines_fed, model.counts, model.invalid_lines, model.opaque_lines, _shape(model.runs))


def test_facts_build_the_same_model_as_full_validation(tmp_path: Path) -> None:
    script, _ = support_run()
    # A second run with one event of every kind, every sub-record filled in.
    second = every_kind(T0, first_seq=len(script.events) + 1)
    path = tmp_path / "two-runs.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append_many([*script.events, *second])
    with path.open("ab") as handle:  # an unknown kind and a corrupt line, both after the runs
        handle.write(b'{"kind":"teleport","seq":99}\n{"kind":"pass",\n')
    fast = RunModel.build(TraceReader(path))
    full = RunModel.build(TraceReader(path), validate=True)
    assert _model_shape(fast) == _model_shape(full)
    assert fast.runs[0].leases and fast.runs[0].maps and fast.invalid_lines and fast.opaque_lines


def test_a_schema_error_in_an_unread_field_is_caught_when_read_or_when_validating(tmp_path: Path) -> None:
    script, _ = support_run()
    path = script.write(tmp_path / "support.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    tool = next(i for i, line in enumerate(lines) if b'"kind":"tool_result"' in line)
    lines[tool] = lines[tool].replace(b'"result":', b'"resultat":')  # well-formed JSON, wrong field
    path.write_bytes(b"".join(lines))

    fast = RunModel.build(TraceReader(path))
    assert fast.invalid_lines == []
    assert fast.counts["tool_result"] == script_count(script, "tool_result")
    assert isinstance(fast.record(tool), InvalidRecord)  # reading the line tells the truth
    full = RunModel.build(TraceReader(path), validate=True)
    assert full.invalid_lines == [tool]
    assert [p.line for p in TraceReader(path).problems()] == [tool]


def test_a_torn_fragment_with_a_whole_envelope_is_invalid_either_way(tmp_path: Path) -> None:
    script, _ = support_run()
    # Version 1: a version 2 writer that resumes after a torn record refers to nothing before it,
    # so no later record refers to the fragment (tests/trace/test_compact.py); here it is mid-file.
    path = script.write(tmp_path / "support.jsonl", schema_version=1)
    lines = path.read_bytes().splitlines(keepends=True)
    torn = next(i for i, line in enumerate(lines) if b'"kind":"llm_call"' in line)
    lines[torn] = lines[torn][: len(lines[torn]) // 2] + b"\n"  # a crash mid-record, closed by resume
    path.write_bytes(b"".join(lines))
    for validate in (False, True):
        model = RunModel.build(TraceReader(path), validate=validate)
        assert model.invalid_lines == [torn]
        assert model.counts["llm_call"] == script_count(script, "llm_call") - 1


def script_count(script: Script, kind: str) -> int:
    return sum(1 for event in script.events if event.kind == kind)


def test_iterations_are_listed_in_first_line_order_and_runs_numbered(tmp_path: Path) -> None:
    script, _ = support_run()
    second = every_kind(T0, first_seq=len(script.events) + 1)
    path = tmp_path / "two-runs.jsonl"
    with TraceWriter.create(path) as writer:
        writer.append_many([*script.events, *second])
    reader = TraceReader(path)
    model = RunModel(reader)
    seen: list[int] = []
    while model.update(limit=7):  # in slices, as a viewer builds it
        seen.append(len(model.all_iterations))
    rows = model.all_iterations
    assert [iteration.first_line for iteration in rows] == sorted(i.first_line for i in model.iterations())
    assert len(rows) == len(set(map(id, rows))) == sum(1 for _ in model.iterations())
    assert seen == sorted(seen) and seen[0] < seen[-1]
    assert [(run.run_id, run.number) for run in model.runs] == [("r1", 1), ("run-1", 2)]

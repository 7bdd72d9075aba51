"""The schema builds its validators when first used, and reading a line by its kind changes no verdict.

Importing the trace package used to build a validator for every model and both unions (a third of
the viewer's start-up, issue 20). Now each is built the first time it validates, and
:func:`~fpdebug.trace.records.classify_line` validates a line in the writer's layout with its kind's
model alone, leaving every other line, and every line that does not validate, to the union as
before. These tests pin both: nothing is built at import, and every line, good or bad, classifies
exactly as the union alone classifies it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from fpdebug.trace import records
from fpdebug.trace.records import classify_line
from fpdebug.trace.schema import EVENT_KINDS, EVENT_MODELS
from fpdebug.trace.writer import dump_record
from tests.trace.samples import every_kind

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_trace_package_builds_no_validator() -> None:
    code = (
        "from fpdebug.trace import schema, facts\n"
        "import fpdebug.trace\n"
        "built = [m.__name__ for m in schema.EVENT_MODELS.values() if m.__pydantic_complete__]\n"
        "built += [m.__name__ for m in facts.FACTS_MODELS if m.__pydantic_complete__]\n"
        "built += [a for a in ('EVENT_ADAPTER',) if schema.EVENT_ADAPTER.pydantic_complete]\n"
        "built += [a for a in ('FACTS_ADAPTER',) if facts.FACTS_ADAPTER.pydantic_complete]\n"
        "built += ['TraceHeader'] if schema.TraceHeader.__pydantic_complete__ else []\n"
        "print(built)\n"
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_kind_has_its_model() -> None:
    assert set(EVENT_MODELS) == EVENT_KINDS
    for kind, model in EVENT_MODELS.items():
        assert model.model_fields["kind"].default == kind


def _by_union(line: int, raw: bytes, monkeypatch: pytest.MonkeyPatch) -> object:
    """How the line classified before the kind's own model was tried: through the union alone."""
    with monkeypatch.context() as patched:
        patched.setattr(records, "_validate_by_kind", lambda raw: None)
        return classify_line(line, 100, raw)


def _good_lines() -> list[bytes]:
    return [dump_record(event) for event in every_kind(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))]


def _bad_lines() -> list[bytes]:
    """Lines that open as the writer writes them but break the schema, each in another way."""
    good = {orjson.loads(raw)["kind"]: orjson.loads(raw) for raw in _good_lines()}
    call, tool = good["llm_call"], good["tool_result"]
    first = orjson.dumps(call)
    assert first.startswith(b'{"kind":"llm_call"')
    return [
        orjson.dumps({**call, "seq": 0}),  # out of range
        orjson.dumps({**call, "seq": "one"}),  # wrong type
        orjson.dumps({**call, "surprise": 1}),  # extra field
        orjson.dumps({k: v for k, v in tool.items() if k != "result"}),  # missing field
        orjson.dumps({**call, "ts": "2300-01-01T00:00:00Z"}),  # out of time range
        orjson.dumps({**call, "kind": "no_such_kind"}),  # unknown kind: opaque
        b'{"kind":"llm_call"}',  # nothing but the kind
        b'{"kind":"llm_call",',  # not JSON
        b'{"kind":"llm_call", "seq": 1}',  # a space: not the writer's bytes, and wrong
        b'{"kind":"llm\\u005fcall"' + first[len(b'{"kind":"llm_call"') :],  # an escaped kind: valid
        first[:-1] + b',"kind":"pass"}',  # the kind twice, the last one another kind
        first[:-1] + b',"kind":"llm_call"}',  # the kind twice, the same
        orjson.dumps({**good["pass"], "kind": "llm_call"}),  # a pass's fields under llm_call
        first.replace(b'"run_id":', b'"run_id":"\\ud83c","x":', 1),  # a lone surrogate (and extra)
        first.replace(b'"seq":', b'"seq":1e400,"y":', 1),  # non-finite (and extra)
        orjson.dumps({**tool, "result": {"amount": 1}})[:-1] + b',"z":NaN}',  # NaN
        b'{"kind":' + b'"' + b"x" * 100 + b'"}',  # a kind longer than a peek
        b'{"kind":"\xff\xfe"}',  # not UTF-8
    ]


def test_a_good_line_of_every_kind_classifies_as_through_the_union(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _good_lines()
    assert {orjson.loads(raw)["kind"] for raw in lines} == EVENT_KINDS
    for number, raw in enumerate(lines, start=1):
        assert raw.startswith(b'{"kind":"')  # the writer's layout: the kind's own model reads it
        record = classify_line(number, 100, raw)
        assert type(record) is EVENT_MODELS[orjson.loads(raw)["kind"]]
        assert record == _by_union(number, raw, monkeypatch)


def test_a_bad_line_is_reported_exactly_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    for number, raw in enumerate(_bad_lines(), start=1):
        record = classify_line(number, 100, raw)
        assert record == _by_union(number, raw, monkeypatch), raw
    # And they are bad: all but the escaped kind and the same kind twice (which the union reads too).
    verdicts = [type(classify_line(n, 100, raw)).__name__ for n, raw in enumerate(_bad_lines(), start=1)]
    assert verdicts.count("LlmCallEvent") == 2
    assert verdicts.count("OpaqueRecord") >= 1
    assert set(verdicts) <= {"InvalidRecord", "OpaqueRecord", "LlmCallEvent"}


def test_the_sample_traces_classify_as_through_the_union(monkeypatch: pytest.MonkeyPatch) -> None:
    for trace in sorted((ROOT / "sample_traces").glob("*.fptrace.jsonl")):
        for number, raw in enumerate(trace.read_bytes().splitlines()[1:], start=1):
            assert classify_line(number, 0, raw) == _by_union(number, raw, monkeypatch), (trace.name, number)

"""Pathological sizes: a file of blank lines validates in time proportional to its lines, cheaply.

On the old code 1 MB of blank lines took ``validate`` 10.6 s: every blank line went through the
schema (a pydantic error built and explained for nothing) and every printed problem line looked the
redactor up again from the environment. Counting those calls is deterministic where a wall-clock
bound on a shared machine is not; the figures are in docs/guide/reliability.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.trace import records
from fpdebug.trace.redact import Redactor
from fpdebug.trace.writer import TraceWriter

BLANK_LINES = 20_000


@pytest.fixture
def blank_trace(tmp_path: Path) -> Path:
    path = tmp_path / "blank.fptrace.jsonl"
    TraceWriter.create(path).close()
    with path.open("ab") as handle:
        handle.write(b"\n" * BLANK_LINES)
    return path


class Counting:
    def __init__(self, inner: object) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def validate_json(self, *args: object, **kwargs: object) -> object:
        self.calls += 1
        return self.inner.validate_json(*args, **kwargs)  # type: ignore[attr-defined]


def test_blank_lines_are_not_run_through_the_schema(
    blank_trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    adapter = Counting(records.EVENT_ADAPTER)  # type: ignore[attr-defined]
    monkeypatch.setattr(records, "EVENT_ADAPTER", adapter)
    assert main(["validate", str(blank_trace)]) == 1
    out = capsys.readouterr().out
    assert out.count(": empty line\n") == BLANK_LINES
    assert adapter.calls == 0


def test_the_terminal_redactor_is_looked_up_once_per_stream_not_per_line(
    blank_trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = 0
    original = Redactor.from_env.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Redactor], *args: object, **kwargs: object) -> Redactor:
        nonlocal calls
        calls += 1
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Redactor, "from_env", classmethod(counted))
    assert main(["validate", str(blank_trace)]) == 1
    assert capsys.readouterr().out.count("\n") == BLANK_LINES
    assert calls <= 10

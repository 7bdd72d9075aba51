"""``fpdebug import``, ``fpdebug view`` of a foreign file, and ``fpdebug schema``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.commands.schema import render
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, TurnEndEvent

ROOT = Path(__file__).resolve().parents[2]
OTLP = ROOT / "tests" / "ingest" / "fixtures" / "otlp"
AGENTFOOTPRINT = ROOT / "tests" / "ingest" / "fixtures" / "agentfootprint"
FINAL = "Tokyo is warmer right now: it is 22°C and sunny in Tokyo versus 15°C and cloudy in Paris, a difference of 7°C."


def _final_answers(path: Path) -> list[str]:
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return [r.final_content for r in reader if isinstance(r, TurnEndEvent)]


@pytest.mark.parametrize(
    "fixture", ["openai_v2_latest.otlp.json", "anthropic_sdk.otlp.pb", "pydantic_ai_v5.otlp.pb"]
)
def test_import_writes_a_valid_trace(
    tmp_path: Path, fixture: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.fptrace.jsonl"
    assert main(["import", str(OTLP / fixture), "-o", str(out)]) == 0
    assert "imported from otlp: 1 run(s)" in capsys.readouterr().out
    assert _final_answers(out) == [FINAL]
    assert out.stat().st_mode & 0o777 == 0o600
    assert main(["validate", str(out)]) == 0


def test_the_format_is_told_by_content_not_extension(tmp_path: Path) -> None:
    disguised = tmp_path / "looks-like.json"
    shutil.copy(OTLP / "openai_openinference.otlp.pb", disguised)
    out = tmp_path / "run.fptrace.jsonl"
    assert main(["import", str(disguised), "-o", str(out)]) == 0
    assert _final_answers(out) == [FINAL]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"not": "otlp"}', "JSON that is not"),
        (b"\x0a\xff\xff\xff\x0f", "truncated or corrupt"),
        (b"{ broken", "does not parse"),
        (b"", "empty file"),
    ],
)
def test_bad_sources_exit_2_and_write_nothing(
    tmp_path: Path, content: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.dat"
    source.write_bytes(content)
    out = tmp_path / "out.fptrace.jsonl"
    assert main(["import", str(source), "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.dat"]


def test_a_failed_import_keeps_the_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "out.fptrace.jsonl"
    out.write_text("previous\n")
    source = tmp_path / "cut.pb"
    source.write_bytes((OTLP / "anthropic_sdk.otlp.pb").read_bytes()[:-5])
    assert main(["import", str(source), "-o", str(out)]) == 2
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.pb", "out.fptrace.jsonl"]


def test_missing_source_and_fpdebug_trace_source_are_errors(tmp_path: Path) -> None:
    out = tmp_path / "out.fptrace.jsonl"
    assert main(["import", str(tmp_path / "nope.json"), "-o", str(out)]) == 2
    trace = ROOT / "sample_traces" / "support.fptrace.jsonl"
    assert main(["import", str(trace), "-o", str(out)]) == 2
    assert not out.exists()


def test_traces_and_logs_files_import_together(tmp_path: Path) -> None:
    out = tmp_path / "run.fptrace.jsonl"
    sources = [OTLP / "openai_v2_latest.otlp.json", OTLP / "pydantic_ai_v5.otlp.pb"]
    assert main(["import", *map(str, sources), "-o", str(out)]) == 0
    assert _final_answers(out) == [FINAL, FINAL]  # two OTel traces: two runs in one file


def test_progress_bar_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.fptrace.jsonl"
    assert main(["import", str(OTLP / "openai_v2_latest.otlp.json"), "-o", str(out), "--progress"]) == 0
    assert "importing [" in capsys.readouterr().err


def test_agentfootprint_recording_is_detected_and_imported(tmp_path: Path) -> None:
    recording = AGENTFOOTPRINT / "support-refund.recording.json"
    disguised = tmp_path / "recording.bin"
    shutil.copy(recording, disguised)
    out = tmp_path / "af.fptrace.jsonl"
    assert main(["import", str(disguised), "-o", str(out)]) == 0
    with TraceReader(out) as reader:
        assert reader.header.source is not None
        assert reader.header.source.format.startswith("agentfootprint")
        assert any(isinstance(r, LlmCallEvent) for r in reader)


def test_view_of_a_foreign_file_opens_its_cached_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fpdebug.tui.app import FpdebugApp

    seen: list[Path] = []
    monkeypatch.setattr(FpdebugApp, "run", lambda app: seen.append(Path(app.source.path)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    foreign = tmp_path / "spans.bin"
    shutil.copy(OTLP / "anthropic_sdk.otlp.pb", foreign)
    assert main(["view", str(foreign)]) == 0
    assert main(["view", str(foreign)]) == 0  # the second time from the cache
    assert seen[0] == seen[1] and seen[0].parent == tmp_path / "cache" / "fpdebug" / "imports"
    assert len(list(seen[0].parent.iterdir())) == 1
    assert _final_answers(seen[0]) == [FINAL]
    assert main(["view", str(foreign), "--follow"]) == 2
    native = ROOT / "sample_traces" / "support.fptrace.jsonl"
    assert main(["view", str(native)]) == 0
    assert seen[-1] == native


def test_schema_prints_the_committed_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    committed = (ROOT / "docs" / "trace-schema.json").read_text(encoding="utf-8")
    assert printed == render() == committed, "run: fpdebug schema -o docs/trace-schema.json"
    schema = json.loads(printed)
    header, event = schema["anyOf"]
    assert header == {"$ref": "#/$defs/TraceHeader"}
    assert event["discriminator"]["mapping"]["llm_call"] == "#/$defs/LlmCallEvent"
    assert "LlmCallEvent" in schema["$defs"] and "ImportSource" in schema["$defs"]


def test_agentfootprint_dispatch_writes_whole_or_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's side of the agentfootprint importer, with a stand-in for its module."""
    import sys
    import types

    from fpdebug.errors import FpdebugError

    calls: list[tuple[str, str | None]] = []

    def import_agentfootprint(obj: dict[str, object], out: Path, *, source_name: str | None = None) -> object:
        calls.append((out.name, source_name))
        if obj.get("fail"):
            out.write_text("half")
            raise FpdebugError("droppedEvents of another kind")
        shutil.copy(ROOT / "sample_traces" / "support.fptrace.jsonl", out)
        return types.SimpleNamespace(describe=lambda: "1 run")

    fake = types.ModuleType("fpdebug.ingest.agentfootprint")
    fake.looks_like_agentfootprint = lambda obj: isinstance(obj, dict) and "snapshot" in obj  # type: ignore[attr-defined]
    fake.import_agentfootprint = import_agentfootprint  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fpdebug.ingest.agentfootprint", fake)
    source = tmp_path / "rec.json"
    source.write_text(json.dumps({"snapshot": {}, "events": [], "structure": {}}))
    out = tmp_path / "out.fptrace.jsonl"
    assert main(["import", str(source), "-o", str(out)]) == 0
    assert calls[0][1] == "rec.json" and calls[0][0] != out.name  # written to a temporary file first
    assert out.read_bytes() == (ROOT / "sample_traces" / "support.fptrace.jsonl").read_bytes()
    source.write_text(json.dumps({"snapshot": {}, "fail": True}))
    assert main(["import", str(source), "-o", str(tmp_path / "new.fptrace.jsonl")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fptrace.jsonl", "rec.json"]
    otlp = OTLP / "openai_v2_latest.otlp.json"
    assert main(["import", str(source), str(otlp), "-o", str(tmp_path / "mixed.fptrace.jsonl")]) == 2


def test_view_errors_name_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01\x02 not a trace\n")
    assert main(["view", str(garbage)]) == 2
    assert "not an fpdebug trace header" in capsys.readouterr().err
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}')
    assert main(["view", str(damaged)]) == 2
    assert "not a valid OTLP/JSON" in capsys.readouterr().err

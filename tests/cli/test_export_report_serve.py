"""``fpdebug export``, ``fpdebug report`` and ``fpdebug serve`` from the command line."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from fpdebug.cli import main
from tests.export.otlp_helpers import SAMPLES, attrs, parse_otlp_json, raw_records, spans_of
from tests.export.receiver import OtlpReceiver

GOLDEN = Path(__file__).resolve().parents[1] / "export" / "golden"


def sample(name: str) -> Path:
    return next(path for path in SAMPLES if path.name.startswith(f"{name}."))


@pytest.fixture
def support(tmp_path: Path) -> Path:
    """A copy of the support sample in a directory of its own (no sidecar beside it)."""
    return Path(shutil.copy(sample("support"), tmp_path / "support.fptrace.jsonl"))


# ----------------------------------------------------------------------------------------------
# export


def test_export_writes_otlp_json_to_stdout_or_to_a_private_file(
    support: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(support)]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "support.otlp.json"
    assert main(["export", str(support), "--format", "otlp-json", "-o", str(out)]) == 0
    assert out.read_text() == printed
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    spans = spans_of(parse_otlp_json(printed))
    assert len(spans) == sum(r["kind"] in ("run_start", "turn_start", "llm_call", "tool_result")
                             for r in raw_records(support))


def test_export_leaves_content_out_unless_asked(support: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user_message = next(r for r in raw_records(support) if r["kind"] == "turn_start")["user_message"]
    main(["export", str(support)])
    assert user_message not in capsys.readouterr().out
    main(["export", str(support), "--include-content"])
    assert user_message in capsys.readouterr().out


def test_export_sends_to_a_collector_and_can_keep_a_file_too(
    support: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "copy.json"
    with OtlpReceiver() as receiver:
        code = main(["export", str(support), "--endpoint", receiver.endpoint, "--header", "x-api-key=k1",
                     "--service-name", "support-bot", "-o", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    spans = receiver.spans
    assert f"sent {len(spans)} span(s) to {receiver.endpoint}/v1/traces" in captured.err
    assert captured.out == ""
    assert receiver.requests[0].headers["x-api-key"] == "k1"
    resource = attrs(receiver.received[0].resource_spans[0].resource.attributes)
    assert resource["service.name"] == "support-bot"
    assert len(spans_of(parse_otlp_json(out.read_text()))) == len(spans)


def test_export_errors_are_one_line_and_exit_2(support: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OtlpReceiver(status=400) as receiver:
        assert main(["export", str(support), "--endpoint", receiver.endpoint]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fpdebug export: error: ") and "did not accept" in err and "Traceback" not in err
    assert main(["export", str(support), "--endpoint", "localhost:4318"]) == 2
    assert "not an OTLP/HTTP endpoint" in capsys.readouterr().err
    assert main(["export", str(support), "--endpoint", "http://127.0.0.1:9", "--header", "sk-secret"]) == 2
    err = capsys.readouterr().err
    assert "KEY=VALUE" in err
    assert main(["export", str(support), "-o", str(support)]) == 2
    assert "refusing to overwrite the trace" in capsys.readouterr().err
    assert main(["export", str(support.with_name("missing.jsonl"))]) == 2


def test_export_skips_bad_lines_and_says_so(support: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with support.open("ab") as handle:
        handle.write(b'{"kind":"warp_drive","seq":999}\n{not json\n')
    assert main(["export", str(support)]) == 0
    captured = capsys.readouterr()
    assert "2 invalid or unknown line(s)" in captured.err
    assert spans_of(parse_otlp_json(captured.out))


# ----------------------------------------------------------------------------------------------
# report


@pytest.mark.parametrize("name", ["support", "zone-trap", "planted-fact", "leases"])
def test_report_prints_the_golden_markdown(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = Path(shutil.copy(sample(name), tmp_path / sample(name).name))
    assert main(["report", str(trace)]) == 0
    assert capsys.readouterr().out == (GOLDEN / f"{name}.report.md").read_text(encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["report", str(trace), "--format", "json", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (GOLDEN / f"{name}.report.json").read_text(encoding="utf-8")


def test_report_includes_a_sidecar_beside_the_trace(
    support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = {"kind": "confirmed", "tier": "causal", "label": "wire-format", "flips": 3, "samples": 3,
               "claim": "CAUSAL: \x1b]52;c;aGk=\x07 ablating wire-format flipped 3/3"}
    sidecar = support.with_name(support.name + ".backtrack.jsonl")
    sidecar.write_text(json.dumps({"decided_at": 5, "verdicts": [verdict]}) + "\n", encoding="utf-8")
    assert main(["report", str(support)]) == 0
    out = capsys.readouterr().out
    assert "## Backtrack verdicts\n\nFrom support.fptrace.jsonl.backtrack.jsonl." in out
    assert "| 5 | wire-format | confirmed | causal | 3/3 | CAUSAL: \\\\x1b\\]52;c;aGk=\\\\x07 ablating" in out
    assert "\x1b" not in out and "\x07" not in out


def test_report_refuses_a_missing_sidecar_it_was_given(
    support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(support), "--backtrack", str(support.with_name("nope.jsonl"))]) == 2
    assert "no backtrack sidecar" in capsys.readouterr().err

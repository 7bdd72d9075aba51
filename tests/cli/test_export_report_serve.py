"""``fpdebug export``, ``fpdebug report`` and ``fpdebug serve`` from the command line."""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fpdebug.backtrack.ablation import AblationVerdict, ProbeStats, SimilarityStats
from fpdebug.backtrack.session import explain
from fpdebug.backtrack.sidecar import SidecarWriter, VerdictRecord
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
    assert len(spans) == sum(
        r["kind"] in ("run_start", "turn_start", "llm_call", "tool_result") for r in raw_records(support)
    )


@pytest.mark.parametrize(
    "command",
    [["export", "--include-content"], ["report"], ["report", "--format", "json"]],
    ids=["export", "report-md", "report-json"],
)
def test_an_output_file_is_0600_whatever_the_umask_and_also_when_it_existed(
    command: list[str], support: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh, existing = tmp_path / "fresh.out", tmp_path / "existing.out"
    existing.write_text("an older, world-readable file\n")
    existing.chmod(0o644)
    old_umask = os.umask(0)
    try:
        for out in (fresh, existing):
            assert main([command[0], str(support), *command[1:], "-o", str(out)]) == 0
    finally:
        os.umask(old_umask)
    capsys.readouterr()
    for out in (fresh, existing):
        assert stat.S_IMODE(out.stat().st_mode) == 0o600, out.name
        assert out.read_bytes() == fresh.read_bytes() != b""


def test_an_output_that_is_not_a_regular_file_keeps_its_mode(
    support: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo, 0o644)
    os.chmod(fifo, 0o644)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    try:
        assert main(["report", str(support), "-o", str(fifo)]) == 0
    finally:
        reader.join(timeout=10)
    capsys.readouterr()
    assert received and received[0].startswith(b"#")
    assert stat.S_IMODE(fifo.stat().st_mode) == 0o644


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
        code = main(
            [
                "export",
                str(support),
                "--endpoint",
                receiver.endpoint,
                "--header",
                "x-api-key=k1",
                "--service-name",
                "support-bot",
                "-o",
                str(out),
            ]
        )
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
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_report_never_overwrites_its_trace(support: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = support.read_bytes()
    assert main(["report", str(support), "-o", str(support)]) == 2
    assert "refusing to overwrite the trace itself" in capsys.readouterr().err
    assert support.read_bytes() == before


def test_report_includes_a_sidecar_beside_the_trace(
    support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "CAUSAL: \x1b]52;c;aGk=\x07 ablating wire-format flipped 3/3"
    report = explain(support).report.model_copy(update={"claim": "why |this|? \x1b[2J"})
    writer = SidecarWriter(support, report)
    verdict = AblationVerdict(
        kind="confirmed",
        tier="causal",
        label="injection 'wire-format'",
        action="ablating",
        flips=3,
        samples=3,
        claim=hostile,
    )
    stats = ProbeStats(samples=3, flips=3, similarity=SimilarityStats(mean=0.1, min=0.0, max=0.2, stdev=0.1))
    writer.baseline(stats.model_copy(update={"flips": 0}))
    writer.append(
        VerdictRecord(
            id=writer.id,
            source="injection:wire-format",
            action="ablating",
            verdict=verdict,
            stats=stats,
            call_index=report.call_index,
            call_line=report.call_line,
            call_seq=report.call_seq,
        )
    )
    writer.end("complete", runs_used=6)
    assert main(["report", str(support)]) == 0
    out = capsys.readouterr().out
    assert "## Backtrack verdicts\n\nFrom support.fptrace.jsonl.backtrack.jsonl: 1 saved backtrack." in out
    assert f"(seq {report.call_seq}, turn.iter {report.turn}.{report.iteration})" in out
    assert "why \\|this\\|? \\\\x1b\\[2J" in out
    assert (
        "| injection 'wire-format' | ablating | confirmed | causal | 3/3 "
        "| CAUSAL: \\\\x1b\\]52;c;aGk=\\\\x07 ablating"
    ) in out
    assert "\x1b" not in out and "\x07" not in out and "skipped" not in out


def test_report_refuses_a_missing_sidecar_it_was_given(
    support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(support), "--backtrack", str(support.with_name("nope.jsonl"))]) == 2
    assert "no backtrack sidecar" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# serve


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read().decode("utf-8")


@contextmanager
def serving(trace: Path, tmp_path: Path) -> Iterator[tuple[int, str]]:
    """``fpdebug serve TRACE`` on a free loopback port: its port and the URL it printed."""
    port = free_port()
    log_path = tmp_path / "serve.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "fpdebug", "serve", str(trace), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 90  # a loaded CI machine takes long to import aiohttp and Textual
        url = None
        while time.monotonic() < deadline and process.poll() is None and url is None:
            found = re.search(r"open (http://\S+/)\n", log_path.read_text(errors="replace"))
            url = found.group(1) if found else None
            time.sleep(0.1)
        assert url is not None, log_path.read_text(errors="replace")
        yield port, url
    finally:
        process.terminate()
        code = process.wait(timeout=15)
        log.close()
    assert code == 0, log_path.read_text(errors="replace")


def raw_request(port: int, path: str, headers: dict[str, str]) -> str:
    """Send one GET as an attacker would (any headers, no browser), and return the status line."""
    lines = [f"GET {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items()), "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall("\r\n".join(lines).encode())
        return sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def upgrade(port: int, path: str, origin: str | None, host: str | None = None) -> str:
    headers = {
        "Host": host or f"127.0.0.1:{port}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }
    if origin is not None:
        headers["Origin"] = origin
    return raw_request(port, path, headers)


def test_serve_answers_on_loopback_with_the_textual_serve_page(support: Path, tmp_path: Path) -> None:
    with serving(support, tmp_path) as (port, url):
        token = url.rstrip("/").rsplit("/", 1)[1]
        assert len(token) >= 32 and url == f"http://127.0.0.1:{port}/{token}/"
        status, page = get(url)
        assert status == 200
        assert page.lstrip().startswith("<!DOCTYPE html>")
        assert f"http://127.0.0.1:{port}/static/js/textual.js" in page  # textual-serve's client
        assert f"ws://127.0.0.1:{port}/{token}/ws" in page  # the socket is behind the token too
        assert "fpdebug support.fptrace.jsonl" in page  # our title


def test_serve_refuses_what_a_hostile_page_or_user_would_send(support: Path, tmp_path: Path) -> None:
    with serving(support, tmp_path) as (port, url):
        token = url.rstrip("/").rsplit("/", 1)[1]
        own = f"http://127.0.0.1:{port}"
        # The user's own browser, on the printed URL, gets the socket.
        assert " 101 " in upgrade(port, f"/{token}/ws?width=80&height=24", own)
        # Another web page the user has open: refused, even with the token.
        assert " 403 " in upgrade(port, f"/{token}/ws?width=80&height=24", "http://evil.example")
        assert " 403 " in upgrade(port, f"/{token}/ws", f"http://127.0.0.1:{port + 1}")
        # Any client without the token, or with a wrong one: nothing.
        assert " 404 " in upgrade(port, "/ws?width=80&height=24", own)
        assert " 404 " in upgrade(port, "/ws?width=80&height=24", None)
        wrong = token[:-1] + ("y" if token.endswith("x") else "x")  # one character off
        assert " 404 " in upgrade(port, f"/{wrong}/ws", own)
        assert " 404 " in raw_request(port, "/", {"Host": f"127.0.0.1:{port}"})
        # DNS rebinding: a name that resolves here is still not the server's own Host.
        assert " 403 " in upgrade(port, f"/{token}/ws", None, host=f"evil.example:{port}")
        assert " 403 " in raw_request(port, f"/{token}/", {"Host": "evil.example"})
        # The static client files carry nothing of the trace and stay public.
        assert " 200 " in raw_request(port, "/static/js/textual.js", {"Host": f"localhost:{port}"})


def test_each_browser_tab_runs_fpdebug_view_on_the_trace_with_this_python() -> None:
    import shlex

    from fpdebug.commands.serve import view_command

    words = shlex.split(view_command("/tmp/my traces/run; rm -rf ~.jsonl"))
    assert words == [sys.executable, "-m", "fpdebug", "view", "/tmp/my traces/run; rm -rf ~.jsonl"]
    assert shlex.split(view_command(None)) == [sys.executable, "-m", "fpdebug", "demo"]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "example.com", "::"])
def test_serve_refuses_a_host_that_is_not_loopback(
    host: str, support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(support), "--host", host, "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and "--allow-remote" in err


def test_serve_checks_its_trace_and_port_before_listening(
    support: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(support.with_name("missing.jsonl"))]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["serve", str(support), "--port", "0"]) == 2
    assert "--port must be between 1 and 65535" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("10.0.0.1", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    from fpdebug.commands.serve import is_loopback

    assert is_loopback(host) is loopback

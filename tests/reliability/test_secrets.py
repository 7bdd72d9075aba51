"""No secret reaches the disk: trace, backtrack sidecar, OTLP export, report (issue 9 §3).

A key is planted in a tool result, in the headers a tool returns, in the model's answer and in a
provider error that echoes the request's Authorization header, in real agent runs; then every file
fpdebug writes about those runs is searched for the secret bytes. Traces are created ``0600``:
``tests/trace/test_writer.py::test_files_are_created_private_whatever_the_umask``. The Redactor's
own rules are in ``test_redact.py``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from fpdebug.cli import main
from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.openai import OpenAIProvider
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.redact import ENV_LIST_VAR, REPLACEMENT
from tests.fakeservers import FakeResponse, FakeServer, openai_error

# Built at run time, so that no file of the test (nor its bytecode) holds them.
KEY = "sk-ant-api03-" + "".join(chr(65 + (i * 7) % 26) + str(i % 10) for i in range(24))
TOKEN = "tok_" + "".join(chr(97 + (i * 5) % 26) for i in range(18))  # no shape: only its context tells
DB_PASSWORD = "pw-" + "x7" * 8  # no shape, no context: only the configured variable tells
SECRETS = {"key": KEY, "token": TOKEN, "db password": DB_PASSWORD}

MODULE = '''
"""An agent whose tool leaks a key, a bearer token and a password."""
import json
import os

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply

USER_MESSAGES = ["Check the billing API"]


def http_get(url: str) -> str:
    """Fetch a URL and return the response with its headers.

    Args:
        url: The URL.
    """
    key, token, password = os.environ["PLANTED_KEY"], os.environ["PLANTED_TOKEN"], os.environ["PLANTED_DB"]
    return json.dumps({
        "request_headers": {"Authorization": "Bearer " + token, "x-api-key": key},
        "body": "ok; connected to the database with " + password + "; your key is " + key,
    })


def build_agent() -> Agent:
    return Agent("leaky").system_prompt("You check APIs.").tools(http_get).max_iterations(4)


def scripted_provider() -> ScriptedProvider:
    key = os.environ["PLANTED_KEY"]
    return ScriptedProvider([
        ScriptedReply.tool_call("http_get", {"url": "https://billing.example/v1/status"}),
        "The billing API answered; the key it uses is " + key + ".",
    ])
'''


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The secrets in the environment (the password's variable named in FPDEBUG_REDACT_ENV)."""
    monkeypatch.setenv("PLANTED_KEY", KEY)
    monkeypatch.setenv("PLANTED_TOKEN", TOKEN)
    monkeypatch.setenv("PLANTED_DB", DB_PASSWORD)
    monkeypatch.setenv(ENV_LIST_VAR, "PLANTED_DB")
    module = tmp_path / "leaky.py"
    module.write_text(MODULE)
    return module


def _files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def _leaks(root: Path) -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(root)), name)
        for path in _files(root)
        for name, secret in SECRETS.items()
        if secret.encode() in path.read_bytes()
    ]


def test_no_secret_reaches_any_file_fpdebug_writes(
    planted: Path, tmp_path: Path, fake_server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    trace = out / "leaky.fptrace.jsonl"
    # 1. A scripted run: the tool returns the key, a bearer token and the password; the model repeats the key.
    assert main(["run", str(planted), "--trace", str(trace)]) == 0
    # 2. A live run whose provider error echoes the request's headers (a hostile or broken server).
    fake_server.handler = lambda request: FakeResponse(
        401, openai_error(f"invalid credentials: Authorization: Bearer {TOKEN}; x-api-key: {KEY}")
    )
    failed = out / "live.fptrace.jsonl"
    provider = OpenAIProvider(
        "gpt-test", api_key="sk-test-own-key-0123456789", base_url=f"{fake_server.url}/v1", max_retries=0
    )
    with TraceFileSink.create(failed) as sink:
        result = Agent("live").run("hi", provider=provider, sink=sink)
    assert result.status == "failed" and result.error is not None
    assert KEY in result.error.message and TOKEN in result.error.message  # in memory it is all there
    # 3. A backtrack with reruns (their answers repeat the key) into the sidecar; the run came from a
    # user's module, which reruns import only when named.
    assert main(["backtrack", str(trace), "--ablate", "--samples", "2", "--module", str(planted)]) == 0
    sidecar = out / "leaky.fptrace.jsonl.backtrack.jsonl"
    # 4. Exports with content, and reports.
    for source in (trace, failed):
        assert main(["export", str(source), "--include-content", "-o", str(source) + ".otlp.json"]) == 0
        assert main(["report", str(source), "-o", str(source) + ".report.md"]) == 0
        assert main(["report", str(source), "--format", "json", "-o", str(source) + ".report.json"]) == 0
    capsys.readouterr()

    written = {path.name for path in _files(out)}
    assert {
        trace.name,
        failed.name,
        sidecar.name,
        "leaky.fptrace.jsonl.otlp.json",
        "live.fptrace.jsonl.otlp.json",
        "leaky.fptrace.jsonl.report.md",
    } <= written
    assert _leaks(tmp_path) == []
    # Redacted, not dropped: the places where the secrets were now say so.
    for path in (trace, failed, sidecar, Path(str(trace) + ".otlp.json"), Path(str(failed) + ".otlp.json")):
        assert REPLACEMENT.encode() in path.read_bytes(), path.name
    assert stat.S_IMODE(os.stat(trace).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(sidecar).st_mode) == 0o600


def test_sidecars_exports_and_reports_redact_on_their_own(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defence in depth: from a trace written WITHOUT redaction (an older fpdebug, ``Redactor.off()``),
    the backtrack sidecar, the OTLP export and the reports still hold no secret."""
    from fpdebug.trace import writer as writer_module
    from fpdebug.trace.redact import Redactor

    raw = tmp_path / "raw"
    raw.mkdir()
    trace = raw / "leaky.fptrace.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(writer_module, "default_redactor", Redactor.off)
        assert main(["run", str(planted), "--trace", str(trace)]) == 0
    assert KEY.encode() in trace.read_bytes() and TOKEN.encode() in trace.read_bytes()  # the control
    assert main(["backtrack", str(trace), "--ablate", "--samples", "2", "--module", str(planted)]) == 0
    assert main(["export", str(trace), "--include-content", "-o", str(raw / "export.json")]) == 0
    assert main(["report", str(trace), "--format", "json", "-o", str(raw / "report.json")]) == 0
    capsys.readouterr()
    trace.unlink()  # the one file written unredacted on purpose
    assert {path.name for path in _files(raw)} == {
        "leaky.fptrace.jsonl.backtrack.jsonl",
        "export.json",
        "report.json",
    }
    assert _leaks(raw) == []
    for name in ("leaky.fptrace.jsonl.backtrack.jsonl", "export.json"):
        assert REPLACEMENT.encode() in (raw / name).read_bytes(), name


PIN = "".join(str((i * 3 + 4) % 10) for i in range(9))  # a numeric secret: digits only, no shape

LOGIN_MODULE = '''
"""An agent whose model logs in with a numeric password and a null token."""
import os

from fpdebug.engine.agent import Agent
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.tools import tool

USER_MESSAGES = ["Log me in"]


@tool(description="Log in.")
def login(user: str, password: int, token: str | None = None) -> str:
    return "logged in"


def build_agent() -> Agent:
    return Agent("login").system_prompt("You log users in.").tools(login)


def scripted_provider() -> ScriptedProvider:
    pin = int(os.environ["PLANTED_PIN"])
    return ScriptedProvider([
        ScriptedReply.tool_call("login", {"user": "dana", "password": pin, "token": None}),
        "You are logged in.",
    ])
'''


@pytest.fixture
def login_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PLANTED_PIN", PIN)
    module = tmp_path / "login.py"
    module.write_text(LOGIN_MODULE)
    return module


def test_a_numeric_password_and_a_null_token_are_redacted_and_no_record_is_lost(
    login_module: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "login.fptrace.jsonl"
    assert main(["run", str(login_module), "--trace", str(trace)]) == 0
    assert PIN.encode() not in trace.read_bytes()
    lines = trace.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]  # every line is JSON
    assert main(["validate", str(trace)]) == 0
    capsys.readouterr()
    assert main(["summary", str(trace), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["problems"] == 0 and summary["invalid_lines"] == []
    assert [(run["llm_calls"], run["tool_results"]) for run in summary["runs"]] == [(2, 1)]
    kinds = [r["kind"] for r in records]
    assert kinds.count("llm_call") == 2 and kinds.count("tool_result") == 1 and kinds[-1] == "run_end"
    result = next(r for r in records if r["kind"] == "tool_result")
    assert result["args"] == {"user": "dana", "password": REPLACEMENT, "token": REPLACEMENT}


def test_an_export_of_an_unredacted_trace_holds_no_numeric_secret(
    login_module: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """OTLP key/values carry numbers as ``intValue``: a secret-named key's number is redacted too."""
    from fpdebug.trace import writer as writer_module
    from fpdebug.trace.redact import Redactor

    trace = tmp_path / "raw.fptrace.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(writer_module, "default_redactor", Redactor.off)
        assert main(["run", str(login_module), "--trace", str(trace)]) == 0
    assert f'"password":{PIN}'.encode() in trace.read_bytes()  # the control: written as it is
    export = tmp_path / "export.json"
    assert main(["export", str(trace), "--include-content", "-o", str(export)]) == 0
    assert main(["report", str(trace), "--format", "json", "-o", str(tmp_path / "report.json")]) == 0
    capsys.readouterr()
    for path in (export, tmp_path / "report.json"):
        assert PIN.encode() not in path.read_bytes(), path.name
    # Tool arguments are exported as a JSON string (what backends parse): the secret is redacted in it.
    arguments = [
        json.loads(kv["value"]["stringValue"])  # type: ignore[index]
        for kv in _key_values(json.loads(export.read_text()))
        if kv["key"] == "gen_ai.tool.call.arguments"
    ]
    passwords = [args["password"] for args in arguments if "password" in args]
    assert passwords and all(value == REPLACEMENT for value in passwords)


def _key_values(node: object) -> list[dict[str, object]]:
    """Every OTLP ``{"key": …, "value": …}`` pair of an export, at any depth."""
    if isinstance(node, list):
        return [kv for item in node for kv in _key_values(item)]
    if isinstance(node, dict):
        own = [node] if set(node) == {"key", "value"} else []
        return own + [kv for value in node.values() for kv in _key_values(value)]
    return []


def test_no_secret_reaches_the_terminal(
    planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The model's final answer repeats the key, and every rerun's answer does too: `run` and
    # `backtrack` print them. The files were clean before; the terminal was not.
    trace = tmp_path / "leaky.fptrace.jsonl"
    assert main(["run", str(planted), "--trace", str(trace)]) == 0
    assert main(["backtrack", str(trace), "--ablate", "--samples", "2", "--module", str(planted)]) == 0
    assert main(["summary", str(trace)]) == 0
    printed = capsys.readouterr()
    shown = printed.out + printed.err
    assert [name for name, secret in SECRETS.items() if secret in shown] == []
    assert REPLACEMENT in shown  # redacted where the key was, not dropped
    # JSON on stdout stays the same valid JSON.
    assert main(["summary", str(trace), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary and KEY not in json.dumps(summary)


def test_an_error_message_is_redacted_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / f"{KEY}.fptrace.jsonl"
    assert main(["validate", str(missing)]) == 2
    err = capsys.readouterr().err
    assert KEY not in err and REPLACEMENT in err and "no such file" in err


def test_a_redacted_trace_still_replays_to_the_same_answer(
    planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The tool returns the key, the trace holds "[redacted]" where it was: the replay's live request
    # holds the key again, and matches the recording once redacted the same way.
    trace, again = tmp_path / "leaky.fptrace.jsonl", tmp_path / "again.fptrace.jsonl"
    assert main(["run", str(planted), "--trace", str(trace)]) == 0
    assert (
        main(
            ["run", str(planted), "--provider", "replay", "--replay-from", str(trace), "--trace", str(again)]
        )
        == 0
    ), capsys.readouterr().err
    capsys.readouterr()
    answers = [
        json.loads(line)["final_content"]
        for path in (trace, again)
        for line in path.read_text().splitlines()
        if '"turn_end"' in line
    ]
    assert len(answers) == 2 and answers[0] == answers[1] and REPLACEMENT in answers[0]

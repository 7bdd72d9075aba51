"""Check fpdebug's export against a real Arize Phoenix, offline, through Phoenix's own GraphQL API.

Not part of the test suite (it needs Phoenix, a large install). Run it by hand::

    python -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix
    PYTHONPATH=$PWD python bench/phoenix_check.py --phoenix /tmp/phx/bin/phoenix

What it does:

1. starts ``phoenix serve`` on 127.0.0.1 (a free port, a temporary working dir, telemetry off);
2. runs the ``support`` demo (scripted) and rewrites its trace as if ``claude-sonnet-4-5`` had
   answered with cache reads and writes (the scripted model has no price; the rewrite is the only
   synthetic step, and it is said so in the output);
3. replays that trace with ``--provider replay`` (same run id, a new trace file);
4. exports both with ``--include-content`` to Phoenix's OTLP/HTTP endpoint;
5. reads back through ``/graphql`` that every LLM span has its input and output messages, its
   tokens and a cost (Phoenix's own, compared with fpdebug's ``fpdebug.cost.usd``), and that the
   replay is a second trace.

Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

SPANS_QUERY = """query($id: ID!) { node(id: $id) { ... on Project {
  spans(first: 1000) { edges { node {
    name spanKind context { traceId spanId } tokenCountPrompt tokenCountCompletion
    costSummary { total { cost } } attributes
  } } } } } }"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def graphql(base: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        base + "/graphql", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        document: dict[str, Any] = json.load(answer)
    if document.get("errors"):
        raise RuntimeError(f"GraphQL errors: {document['errors']}")
    return document["data"]


def fpdebug(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "fpdebug", *args], capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


def priced_copy(source: Path, target: Path) -> None:
    """The scripted trace as if claude-sonnet-4-5 had answered (with cache reads and writes)."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] in ("run_start", "llm_call"):
            record["provider"], record["model"] = "anthropic", "claude-sonnet-4-5"
        if record["kind"] == "llm_call" and record.get("response"):
            usage = record["response"]["usage"]
            usage["cache_read_tokens"], usage["cache_write_tokens"] = 100, 50
            record["response"]["id"] = f"msg_{record['seq']}"
            record["response"]["model"] = "claude-sonnet-4-5-20250929"
        lines.append(json.dumps(record, separators=(",", ":")))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def wait_for(base: str, process: subprocess.Popen[bytes], seconds: float = 180.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"phoenix exited with {process.returncode}")
        try:
            graphql(base, "{ projects { edges { node { id } } } }")
            return
        except OSError:
            time.sleep(1)
    raise RuntimeError("phoenix did not start in time")


def check(base: str, trace_files: dict[str, Path]) -> list[str]:
    """Every check's outcome, one line each; a line starting with FAIL is a failed check."""
    out: list[str] = []
    projects = graphql(base, "{ projects { edges { node { id name traceCount } } } }")["projects"]["edges"]
    project = next(edge["node"] for edge in projects if edge["node"]["name"] == "default")
    spans = [
        edge["node"] for edge in graphql(base, SPANS_QUERY, {"id": project["id"]})["node"]["spans"]["edges"]
    ]
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(span["context"]["traceId"], []).append(span)
    out.append(
        f"Phoenix holds {len(spans)} spans in {len(traces)} traces (project traceCount {project['traceCount']})"
    )
    verdict = "ok  " if len(traces) == len(trace_files) else "FAIL"
    out.append(f"{verdict} one trace per exported file ({len(trace_files)} files: {', '.join(trace_files)})")
    for trace_id, members in sorted(traces.items(), key=lambda item: -len(item[1])):
        out += check_trace(trace_id, members)
    return out


def llm_span_line(span: dict[str, Any]) -> tuple[str, bool, bool, bool]:
    """One LLM span's line, and whether it shows messages, tokens and a cost."""
    attributes = json.loads(span["attributes"])
    llm_attrs = attributes.get("llm", {})
    messages = bool(llm_attrs.get("input_messages") and llm_attrs.get("output_messages"))
    tokens = bool(span["tokenCountPrompt"]) and span["tokenCountCompletion"] is not None
    phoenix_cost = (span["costSummary"] or {}).get("total", {}).get("cost")
    ours = attributes.get("fpdebug", {}).get("cost", {})
    line = (
        f"     {span['name']}: prompt {span['tokenCountPrompt']} / completion {span['tokenCountCompletion']}, "
        f"Phoenix cost {phoenix_cost}, fpdebug cost {ours.get('usd', ours.get('unpriced'))}"
    )
    return line, messages, tokens, phoenix_cost is not None or bool(ours)


def check_trace(trace_id: str, members: list[dict[str, Any]]) -> list[str]:
    """One trace's LLM spans: each one's numbers, then how many show messages, tokens and a cost."""
    llm = [span for span in members if span["spanKind"] == "llm"]
    checked = [llm_span_line(span) for span in llm]
    out = [line for line, *_ in checked]
    root = next((span["name"] for span in members if span["name"].startswith("run ")), "?")
    provider = next(
        (json.loads(s["attributes"]).get("gen_ai", {}).get("provider", {}).get("name") for s in llm), None
    )
    out.append(f"trace {trace_id} ({root}, provider {provider}): {len(members)} spans, {len(llm)} LLM spans")
    for index, label in ((1, "messages"), (2, "tokens"), (3, "a cost")):
        count = sum(1 for row in checked if row[index])
        verdict = "ok  " if llm and count == len(llm) else "FAIL"
        out.append(f"{verdict} {count}/{len(llm)} LLM spans show {label}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phoenix", default="/tmp/phx/bin/phoenix", help="the phoenix executable")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fpdebug-phoenix-") as scratch:
        work = Path(scratch)
        port, grpc_port = free_port(), free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(work / "phoenix"),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        log = (work / "phoenix.log").open("wb")
        process = subprocess.Popen([args.phoenix, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(base, process)
            print(f"phoenix up at {base} (working dir {work / 'phoenix'})")
            fpdebug("run", "support", "--trace", str(work / "scripted.jsonl"))
            priced_copy(work / "scripted.jsonl", work / "original.jsonl")
            print("synthetic step: the scripted support run rewritten as claude-sonnet-4-5 with cache tokens")
            fpdebug(
                "run", "support", "--provider", "replay", "--replay-from", str(work / "original.jsonl"),
                "--trace", str(work / "replay.jsonl"),
            )  # fmt: skip
            files = {"original": work / "original.jsonl", "replay": work / "replay.jsonl"}
            for name, path in files.items():
                print(f"{name}: {fpdebug('summary', str(path)).splitlines()[4].strip()}")
                print(fpdebug("export", str(path), "--include-content", "--endpoint", base).strip())
            time.sleep(3)  # Phoenix ingests OTLP asynchronously
            lines = check(base, files)
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()
    print("\n".join(lines))
    return 1 if any(line.startswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())

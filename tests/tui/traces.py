"""Traces for the TUI tests: the committed samples, a feature-rich hand-built run, a hostile trace."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson

from fpdebug.trace.clock import FixedClock
from fpdebug.trace.schema import (
    LeaseGrantEvent,
    LeaseRecord,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    PromptSegment,
    RunEndEvent,
    RunStartEvent,
    ToolResultEvent,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from fpdebug.trace.writer import TraceWriter
from tests.conftest import T0
from tests.trace.samples import Script, support_run

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
"""The committed sample traces (``fpdebug demo --write-samples sample_traces``)."""

HUGE = 5 * 1024 * 1024
"""The size of the hostile trace's big strings."""

MARKUP = "[bold red]x[/] [link=http://e]click[/link]"
"""Rich markup that must be shown literally."""

CONTROLS = (
    "\x1b[2J\x1b]52;c;aGk=\x07\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\\x1b]0;title\x07\u202eevil\x9b31m"
)
"""Clear screen, OSC 52 clipboard write, OSC 8 link, a title change, a bidi override, 8-bit CSI."""


def sample(name: str) -> Path:
    """A committed sample trace."""
    return SAMPLES / f"{name}.fptrace.jsonl"


def write_support_run(path: Path) -> dict[str, int]:
    """The trace tests' four-iteration run (leases, a park, a conflict, a rejected pick); returns lines."""
    script, lines = support_run()
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(script.events)
    return lines


def _raw_line(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data + b"\n")


def write_hostile(path: Path, *, huge: int = HUGE) -> dict[str, int]:
    """A trace with every kind of bad content a viewer must survive.

    Iteration 1 has a tool result and a prompt of ``huge`` characters, markup and control sequences
    in prompts, replies, results and ids; after the valid records come an invalid JSON line, a
    truncated UTF-8 line, a record with wrong types and an unknown kind.

    Returns:
        Line numbers of the notable records.
    """
    s = Script(run_id=f"run {MARKUP}")
    at: dict[str, int] = {}
    at["run_start"] = s.add(
        RunStartEvent, turn=None, provider="scripted", model=f"m{CONTROLS}", max_iterations=4
    )
    s.turn = 1
    at["turn_start"] = s.add(TurnStartEvent, user_message=f"hello {MARKUP} {CONTROLS}")
    at["pass"] = s.add(
        PassEvent, iteration=1, active_ids=[f"id{MARKUP}", f"ctl{CONTROLS}"], evaluated_total=2
    )
    big = ("A" * 70 + "\n") * (huge // 71)
    at["llm"] = s.add(
        LlmCallEvent,
        iteration=1,
        call_index=1,
        provider="scripted",
        model="m",
        request=LlmRequest(
            system_prompt=[
                PromptSegment(source="base", text=f"sys {MARKUP}"),
                PromptSegment(source="steering", injection_id=MARKUP, text=big),
            ],
            messages=[Message(role="user", content=f"hi {CONTROLS}")],
        ),
        response=LlmResponse(
            content=f"reply {MARKUP} {CONTROLS}", usage=Usage(input_tokens=1, output_tokens=1)
        ),
        route="tool-calls",
    )
    at["tool"] = s.add(
        ToolResultEvent,
        iteration=1,
        tool_call_id="c1",
        tool_name=f"t{MARKUP}",
        result="R" * huge + MARKUP + CONTROLS,
    )
    at["pass2"] = s.add(PassEvent, iteration=2, active_ids=["a"], evaluated_total=1)
    at["turn_end"] = s.add(TurnEndEvent, iteration=None, final_content=f"done {MARKUP}", iteration_count=2)
    s.turn = None
    at["run_end"] = s.add(RunEndEvent, status="completed", turns=1)
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(s.events)
    line = len(s.events) + 1
    _raw_line(path, b'{"kind": "pass", "seq": ' + str(line).encode() + b", this is not json")
    at["invalid_json"] = line
    _raw_line(path, b'{"kind":"note","text":"caf' + b"\xc3")  # truncated UTF-8
    at["bad_utf8"] = line + 1
    wrong = {
        "kind": "pass",
        "seq": line + 2,
        "ts": (T0 + timedelta(seconds=1)).isoformat(),
        "run_id": "r",
        "turn": 1,
        "iteration": 2,
        "active_ids": "not a list",
        "evaluated_total": "many",
    }
    _raw_line(path, orjson.dumps(wrong))
    at["wrong_types"] = line + 2
    opaque = {
        "kind": "telemetry_v9",
        "seq": line + 3,
        "ts": T0.isoformat(),
        "run_id": "r",
        "payload": {"note": MARKUP + CONTROLS},
    }
    _raw_line(path, orjson.dumps(opaque))
    at["opaque"] = line + 3
    return at


def grow(path: Path, *, run_id: str, first_seq: int, iteration: int, turn: int = 1) -> int:
    """Append one iteration (a pass and a final call) to a followed trace; return the next seq."""
    events = [
        PassEvent(
            seq=first_seq,
            ts=T0,
            run_id=run_id,
            turn=turn,
            iteration=iteration,
            active_ids=["x"],
            evaluated_total=1,
        ),
        LlmCallEvent(
            seq=first_seq + 1,
            ts=T0,
            run_id=run_id,
            turn=turn,
            iteration=iteration,
            call_index=iteration,
            provider="scripted",
            model="m",
            request=LlmRequest(),
            response=LlmResponse(content="ok"),
            route="tool-calls",
        ),
    ]
    with TraceWriter.resume(path, durability="none") as writer:
        writer.append_many(events)
    return first_seq + 2


def write_runs(path: Path, passes: list[tuple[str, int, int]]) -> None:
    """Several runs in one file, interleaved as ``passes`` says.

    Each ``(run id, turn, iteration)`` is a ``pass`` of that iteration followed by a lease grant of
    its batch; a run's first one is preceded by its ``run_start``.
    """
    events: list[TraceEvent] = []
    started: set[str] = set()

    def envelope(run_id: str, turn: int | None, iteration: int | None) -> dict[str, object]:
        seq = len(events) + 1
        return {
            "seq": seq,
            "ts": T0 + timedelta(milliseconds=seq),
            "run_id": run_id,
            "turn": turn,
            "iteration": iteration,
        }

    for run_id, turn, iteration in passes:
        if run_id not in started:
            started.add(run_id)
            events.append(
                RunStartEvent(
                    **envelope(run_id, None, None),
                    provider="scripted",
                    model=f"model-{run_id}",
                    max_iterations=9,
                )
            )
        events.append(PassEvent(**envelope(run_id, turn, iteration), active_ids=["x"], evaluated_total=1))
        lease = LeaseRecord(
            instruction_id=f"{run_id}-{turn}-{iteration}",
            delivery_lease="next-call",
            tool_name="fetch",
            iteration=iteration,
        )
        events.append(LeaseGrantEvent(**envelope(run_id, turn, iteration), lease=lease))
    with TraceWriter.create(path, durability="none", clock=FixedClock(T0)) as writer:
        writer.append_many(events)


def write_schema_break(path: Path) -> int:
    """The support sample with one field added to iteration 2's ``llm_call``; returns that line.

    The line is valid JSON of a known kind and its facts (what the model reads) are intact: only
    the full schema, which forbids unknown fields, says it is invalid.
    """
    lines = sample("support").read_bytes().splitlines()
    for number, raw in enumerate(lines[1:], start=1):
        data = orjson.loads(raw)
        if data["kind"] == "llm_call" and data.get("iteration") == 2:
            data["surprise"] = "an extra field"
            lines[number] = orjson.dumps(data)
            path.write_bytes(b"\n".join(lines) + b"\n")
            return number
    raise AssertionError("the support sample has no llm_call in iteration 2")

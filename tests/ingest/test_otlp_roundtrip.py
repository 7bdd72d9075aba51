"""Round trip: ``fpdebug run`` → ``fpdebug export --format otlp-json`` → ``fpdebug import`` keeps the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fpdebug.cli import main
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import LlmCallEvent, RunStartEvent, ToolResultEvent, TurnEndEvent, TurnStartEvent


def _records(path: Path) -> list[Any]:
    with TraceReader(path) as reader:
        assert reader.problems() == []
        return list(reader)[1:]


def _call(event: LlmCallEvent) -> dict[str, Any]:
    request, response = event.request, event.response
    assert response is not None
    return {
        "turn": event.turn,
        "iteration": event.iteration,
        "call_index": event.call_index,
        "provider": event.provider,
        "model": event.model,
        "route": event.route,
        "system_prompt": [segment.text for segment in request.system_prompt],
        "messages": [
            (m.role, m.content, m.tool_call_id, m.tool_name, [c.model_dump() for c in m.tool_calls or ()])
            for m in request.messages
        ],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "content": response.content,
        "tool_calls": [call.model_dump() for call in response.tool_calls],
        "stop_reason": response.stop_reason,
        "usage": response.usage.model_dump(),
    }


def _tool(event: ToolResultEvent) -> dict[str, Any]:
    return {
        "turn": event.turn,
        "iteration": event.iteration,
        "id": event.tool_call_id,
        "name": event.tool_name,
        "args": event.args,
        "result": event.result,
        "status": event.status,
    }


@pytest.mark.parametrize("demo", ["support", "leases"])
def test_export_then_import_keeps_calls_tool_results_and_the_answer(tmp_path: Path, demo: str) -> None:
    native = tmp_path / "native.fptrace.jsonl"
    exported = tmp_path / "native.otlp.json"
    back = tmp_path / "back.fptrace.jsonl"
    assert main(["run", demo, "--trace", str(native)]) == 0
    assert (
        main(["export", str(native), "--format", "otlp-json", "--include-content", "-o", str(exported)]) == 0
    )
    assert main(["import", str(exported), "-o", str(back)]) == 0
    before, after = _records(native), _records(back)

    assert [_call(e) for e in after if isinstance(e, LlmCallEvent)] == [
        _call(e) for e in before if isinstance(e, LlmCallEvent)
    ]
    assert [_tool(e) for e in after if isinstance(e, ToolResultEvent)] == [
        _tool(e) for e in before if isinstance(e, ToolResultEvent)
    ]
    # end_state is the engine's carriers at the end of a turn: OTLP spans carry no such thing, so the
    # imported turn_end has none (the engine's state is not rebuilt from spans).
    skip = {"seq", "ts", "run_id", "end_state"}
    for kind in (TurnStartEvent, TurnEndEvent):
        assert [e.model_dump(exclude=skip) for e in after if isinstance(e, kind)] == [
            e.model_dump(exclude=skip) for e in before if isinstance(e, kind)
        ]
    (start,) = [e for e in before if isinstance(e, RunStartEvent)]
    assert {e.run_id for e in after} == {start.run_id}  # fpdebug.run.id names the run again

"""One truth for cost: ``summary --json``, ``report``, the TUI (header and timeline rows) and the OTLP
export state the same tokens and dollars for a run with cache reads and writes, and those dollars are
genai-prices' own for those tokens. An unknown model says "unknown price" on every surface, never $0.

One trace holds three runs, so a single Pilot run reads all of them:

- an Anthropic-style call record whose ``input_tokens`` leaves the cache reads and writes out (no
  ``input_includes_cache`` marker: how traces were recorded before issue 17), two iterations;
- an OpenAI-style one whose ``input_tokens`` already counts them (``input_includes_cache=True``);
- a model the price table does not know.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from fpdebug.cli import main
from fpdebug.engine.sink import MemorySink
from fpdebug.export.stream import OtlpStreamSink
from fpdebug.trace.cost import format_dollars
from fpdebug.trace.schema import (
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    RunEndEvent,
    RunStartEvent,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from fpdebug.tui.widgets.timeline import compact_dollars
from tests.conftest import T0
from tests.trace.samples import Script
from tests.tui.helpers import opened, screen_text, wait_for

# (run id, provider, model, the usage of each iteration's call)
RUNS: list[tuple[str, str, str, list[Usage]]] = [
    (
        "anthropic-run",
        "anthropic",
        "claude-sonnet-4-5",
        [
            Usage(input_tokens=500, cache_read_tokens=2000, cache_write_tokens=300, output_tokens=100),
            Usage(input_tokens=40, cache_read_tokens=2300, output_tokens=50),
        ],
    ),
    (
        "openai-run",
        "openai",
        "gpt-4o",
        [
            Usage(
                input_tokens=3000,
                cache_read_tokens=1024,
                cache_write_tokens=200,
                output_tokens=80,
                input_includes_cache=True,
            )
        ],
    ),
    ("unknown-run", "openai", "no-such-model-x", [Usage(input_tokens=700, output_tokens=20)]),
]
PRICED = RUNS[:2]
UNKNOWN = RUNS[2]
ZERO = re.compile(r"\$\.?0(\.0*)?(?![\d.])")
"""A made-up zero: ``$0``, ``$0.00``, ``$.0000`` (no call here is free)."""


def inclusive_input(provider: str, usage: Usage) -> int:
    """Input tokens by the OTel GenAI convention, worked out here from the raw fields, not by fpdebug."""
    cache = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    return usage.input_tokens if usage.input_includes_cache else usage.input_tokens + cache


def genai_dollars(provider: str, model: str, usage: Usage) -> Decimal:
    """What genai-prices itself says the call cost (input inclusive of cache, as it expects)."""
    priced = calc_price(
        PriceUsage(
            input_tokens=inclusive_input(provider, usage),
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
        ),
        model,
        provider_id=provider,
        genai_request_timestamp=T0,
    )
    return priced.total_price


EXPECTED = {
    run_id: {
        "input": sum(inclusive_input(provider, usage) for usage in usages),
        "output": sum(usage.output_tokens for usage in usages),
        "dollars": sum((genai_dollars(provider, model, usage) for usage in usages), Decimal(0)),
        "rows": [genai_dollars(provider, model, usage) for usage in usages],
    }
    for run_id, provider, model, usages in PRICED
}


def build_trace() -> Script:
    """The three runs, as the engine would record them (turn_end and run_end sum the raw input)."""
    s = Script()
    for run_id, provider, model, usages in RUNS:
        s.run_id = run_id
        s.turn = None
        s.add(RunStartEvent, agent_name="a", provider=provider, model=model, max_iterations=3)
        s.turn = 1
        s.add(TurnStartEvent, user_message="hi")
        for number, usage in enumerate(usages, start=1):
            s.add(
                LlmCallEvent,
                iteration=number,
                call_index=number,
                provider=provider,
                model=model,
                request=LlmRequest(messages=[Message(role="user", content="hi")]),
                response=LlmResponse(content="ok", usage=usage),
                route="final" if number == len(usages) else "tool-calls",
            )
        raw_in = sum(usage.input_tokens for usage in usages)
        out = sum(usage.output_tokens for usage in usages)
        s.add(
            TurnEndEvent,
            final_content="ok",
            iteration_count=len(usages),
            input_tokens=raw_in,
            output_tokens=out,
        )
        s.turn = None
        s.add(RunEndEvent, status="completed", turns=1, input_tokens=raw_in, output_tokens=out)
    return s


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Script, Path]:
    script = build_trace()
    return script, script.write(tmp_path_factory.mktemp("cost") / "cached.jsonl")


def test_the_table_prices_the_cache_apart() -> None:
    """The fixture is worth its name: cache reads and writes move the price (else agreement proves little)."""
    anthropic = EXPECTED["anthropic-run"]
    assert anthropic["input"] == 5140
    flat = calc_price(
        PriceUsage(input_tokens=5140, output_tokens=150), "claude-sonnet-4-5", provider_id="anthropic"
    )
    assert anthropic["dollars"] != flat.total_price
    assert EXPECTED["openai-run"]["input"] == 3000


def test_summary_json_states_the_tokens_and_the_dollars(
    trace: tuple[Script, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = trace
    assert main(["summary", "--json", str(path)]) == 0
    runs = {run["run_id"]: run for run in json.loads(capsys.readouterr().out)["runs"]}
    for run_id, expected in EXPECTED.items():
        run = runs[run_id]
        assert (run["input_tokens"], run["output_tokens"]) == (expected["input"], expected["output"])
        assert run["cost"]["usd"] == float(expected["dollars"])
        assert run["cost"]["text"] == format_dollars(expected["dollars"])
    unknown = runs[UNKNOWN[0]]["cost"]
    assert unknown["usd"] is None and unknown["text"] == "unknown price"


def test_the_markdown_report_states_the_tokens_and_the_dollars(
    trace: tuple[Script, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = trace
    assert main(["report", str(path)]) == 0
    markdown = capsys.readouterr().out
    for run_id, provider, model, _usages in PRICED:
        expected = EXPECTED[run_id]
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {run_id} |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[2:4] == [provider, model]
        assert cells[-3:] == [
            str(expected["input"]),
            str(expected["output"]),
            format_dollars(expected["dollars"]),
        ]
    # The per-iteration timeline rows of the report price each call alone.
    for dollars in EXPECTED["anthropic-run"]["rows"]:
        assert f"| {format_dollars(dollars)} |" in markdown
    unknown = next(line for line in markdown.splitlines() if line.startswith(f"| {UNKNOWN[0]} |"))
    assert unknown.rstrip().endswith("| unknown price |")
    assert not ZERO.search(markdown)


def test_the_otlp_export_states_the_tokens_and_the_dollars(trace: tuple[Script, Path]) -> None:
    script, _ = trace
    exporter = InMemorySpanExporter()
    sink = OtlpStreamSink(MemorySink(), exporter=exporter, schedule_delay_millis=10)
    for event in script.events:
        sink.emit(event)
    sink.close()
    spans: dict[str, list[dict[str, Any]]] = {}
    for span in exporter.get_finished_spans():
        attributes = dict(span.attributes or {})
        spans.setdefault(str(attributes["gen_ai.conversation.id"]), []).append(
            {"name": span.name, **attributes}
        )
    for run_id, expected in EXPECTED.items():
        chats = [s for s in spans[run_id] if s["name"].startswith("chat ")]
        (turn,) = [s for s in spans[run_id] if s["name"].startswith("invoke_agent ")]
        (root,) = [s for s in spans[run_id] if s["name"].startswith("run ")]
        assert sum(chat["gen_ai.usage.input_tokens"] for chat in chats) == expected["input"]
        assert turn["gen_ai.usage.input_tokens"] == expected["input"]
        assert root["fpdebug.run.input_tokens"] == expected["input"]
        assert root["fpdebug.run.output_tokens"] == turn["gen_ai.usage.output_tokens"] == expected["output"]
        assert [chat["gen_ai.usage.cost"] for chat in chats] == [float(d) for d in expected["rows"]]
        assert turn["fpdebug.cost.usd"] == root["fpdebug.cost.usd"] == float(expected["dollars"])
    for span in spans[UNKNOWN[0]]:
        if span["name"].startswith(("chat ", "invoke_agent ", "run ")):
            assert span["fpdebug.cost.unpriced"] == "unknown price", span["name"]
            assert "fpdebug.cost.usd" not in span and "gen_ai.usage.cost" not in span


def _header_facts(text: str) -> tuple[int, int, str]:
    """Tokens in, out and the cost from the header's second line (``5,140 in / 150 out tokens · … · $x``)."""
    line = next(line for line in text.splitlines() if " out tokens " in line)
    found = re.search(r"([\d,]+) in / ([\d,]+) out tokens .*· (\S.*?)\s*$", line)
    assert found, line
    return int(found[1].replace(",", "")), int(found[2].replace(",", "")), found[3]


def _timeline_cost(text: str, label: str) -> str:
    """The cost cell of the timeline row labelled ``label`` (the cell after the route)."""
    row = next(line for line in text.splitlines() if line.lstrip("│").startswith(label + " "))
    cells = row.split("│")[1].split()
    route = next(index for index, cell in enumerate(cells) if cell in ("tools", "final"))
    return cells[route + 1]


@pytest.mark.anyio
async def test_the_tui_header_and_timeline_rows_state_the_tokens_and_the_dollars(
    trace: tuple[Script, Path],
) -> None:
    _, path = trace
    async with opened(path) as (pilot, _screen):
        app = pilot.app
        shown: dict[str, tuple[int, int, str]] = {}
        text = ""
        for presses, run_id in ((0, "anthropic-run"), (2, "openai-run"), (1, UNKNOWN[0])):
            await pilot.press(*"j" * presses)
            assert await wait_for(pilot, lambda run_id=run_id: f"run {run_id}" in screen_text(app))
            text = screen_text(app)
            shown[run_id] = _header_facts(text)
        assert "cost" in text.splitlines()[5]  # the timeline's column title
        for run_id, expected in EXPECTED.items():
            assert shown[run_id] == (
                expected["input"],
                expected["output"],
                format_dollars(expected["dollars"]),
            )
        assert shown[UNKNOWN[0]][2] == "unknown price"
        rows = {"1:T1·I1": 0, "1:T1·I2": 1}
        for label, index in rows.items():
            assert _timeline_cost(text, label) == compact_dollars(EXPECTED["anthropic-run"]["rows"][index])
        assert _timeline_cost(text, "2:T1·I1") == compact_dollars(EXPECTED["openai-run"]["dollars"])
        assert _timeline_cost(text, "3:T1·I1") == "—"
        assert not ZERO.search(text)

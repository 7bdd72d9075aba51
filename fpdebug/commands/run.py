"""``fpdebug run SCENARIO_OR_MODULE``: run a demo scenario or your own agent module and write its trace."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdebug.demo.registry import ScenarioRun
    from fpdebug.engine.sink import EventSink
    from fpdebug.export.stream import OtlpStreamSink

HELP = "Run a demo scenario or your own agent module (build_agent()) and write its trace."

PROVIDER_CHOICES = ("scripted", "replay", "anthropic", "openai")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_provider_arguments(parser: argparse.ArgumentParser) -> None:
    """``--provider``, ``--model``, ``--base-url`` (shared with ``fpdebug demo``)."""
    parser.add_argument(
        "--provider",
        choices=PROVIDER_CHOICES,
        default="scripted",
        help="the model: the scenario's scripted one (default), a replay of a trace, or a live one",
    )
    parser.add_argument("--model", metavar="M", help="the model name (required for anthropic and openai)")
    parser.add_argument(
        "--base-url", metavar="URL", help="another endpoint for a live provider (OpenAI-compatible servers)"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the target, the provider options, the trace path and the run's inputs."""
    parser.add_argument(
        "target",
        metavar="SCENARIO_OR_MODULE",
        help="a demo scenario (see fpdebug demo --list), a .py file, or a dotted module with build_agent()",
    )
    add_provider_arguments(parser)
    parser.add_argument("--replay-from", metavar="TRACE", help="with --provider replay: the trace to replay")
    parser.add_argument("--replay-run", metavar="RUN_ID", help="the run to replay when TRACE holds several")
    parser.add_argument(
        "--trace", metavar="PATH", help="where to write the trace (default: NAME-TIMESTAMP.fptrace.jsonl)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the trace file if it exists")
    parser.add_argument(
        "--message",
        dest="messages",
        metavar="TEXT",
        nargs="+",
        action="extend",
        help="the user message(s), one turn each (default: the scenario's USER_MESSAGES)",
    )
    parser.add_argument(
        "--max-iterations", type=positive_int, metavar="N", help="the per-turn iteration limit"
    )
    parser.add_argument(
        "--run-id", metavar="ID", help="the run's id (default: random; a replay keeps the recorded one)"
    )
    parser.add_argument(
        "--otlp",
        metavar="URL",
        help="also stream the run's spans over OTLP/HTTP to a collector (e.g. http://127.0.0.1:4318)",
    )
    parser.epilog = (
        "A module for `fpdebug run` defines build_agent() -> fpdebug.engine.agent.Agent and, to run "
        "offline, scripted_provider(); USER_MESSAGES gives its default turns. Live providers read "
        "ANTHROPIC_API_KEY / OPENAI_API_KEY. Exit codes: 0 the run completed, 2 it failed (the trace "
        "still records everything up to the failure), 130 interrupted."
    )


def default_trace_path(name: str, directory: str | Path = ".") -> Path:
    """A new file name for a run's trace: ``NAME-YYYYmmddTHHMMSSZ.fptrace.jsonl``, never an existing file."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).stem if name.endswith(".py") else name).strip("-.")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path(directory) / f"{stem or 'run'}-{stamp}"
    path = base.with_name(base.name + ".fptrace.jsonl")
    counter = 2
    while path.exists():
        path = base.with_name(f"{base.name}-{counter}.fptrace.jsonl")
        counter += 1
    return path


def summary_lines(run: ScenarioRun) -> list[str]:
    """Where the trace went, then one paragraph: status, turns, iterations, tokens, the final answer."""
    from fpdebug.trace.inert import inert_line

    result = run.result
    turns, iterations = len(result.turns), result.iterations
    parts = [
        f"Run {inert_line(result.run_id)} of {inert_line(run.scenario.name)} {result.status}:",
        f"{turns} turn{'s' if turns != 1 else ''}, {iterations} iteration{'s' if iterations != 1 else ''},",
        f"{result.input_tokens} tokens in, {result.output_tokens} out.",
    ]
    stopped = [t for t in result.turns if t.stopped_early is not None]
    if stopped:
        parts.append(f"{len(stopped)} turn(s) stopped early at the iteration limit.")
    if result.error is not None:
        parts.append(f"Error: {inert_line(result.error.type)}: {inert_line(result.error.message)}.")
    answer = result.content
    parts.append(f"Final answer: {inert_line(answer)}" if answer else "No final answer.")
    return [f"trace: {inert_line(str(run.trace_path))}", " ".join(parts)]


def finish(run: ScenarioRun) -> int:
    """Print the summary; return the exit code, or raise the failure for ``cli.main`` to report."""
    from fpdebug.errors import FpdebugError

    for line in summary_lines(run):
        print(line)
    result = run.result
    if result.status == "completed":
        return 0
    if result.status == "interrupted":
        return 130
    if isinstance(result.exception, FpdebugError):
        raise result.exception
    error = result.error
    raise FpdebugError(f"the run failed: {error.type}: {error.message}" if error else "the run failed")


def run(args: argparse.Namespace) -> int:
    """Load the target, build the provider, run, write the trace, print the summary."""
    from fpdebug.demo.registry import load_target, make_provider, run_target

    scenario = load_target(args.target)
    provider = make_provider(
        args.provider,
        scenario=scenario,
        model=args.model,
        base_url=args.base_url,
        replay_from=args.replay_from,
        replay_run_id=args.replay_run,
    )
    trace = Path(args.trace) if args.trace else default_trace_path(scenario.name)
    streams: list[OtlpStreamSink] = []

    def stream_to_collector(sink: EventSink) -> EventSink:
        from fpdebug.export.stream import OtlpStreamSink

        streams.append(OtlpStreamSink(sink, args.otlp))
        return streams[-1]

    result = run_target(
        scenario,
        trace_path=trace,
        provider=provider,
        run_id=args.run_id,
        messages=args.messages,
        max_iterations=args.max_iterations,
        overwrite=args.overwrite,
        wrap_sink=stream_to_collector if args.otlp else None,
    )
    for stream in streams:
        print(f"otlp: {stream.exported} span(s) exported, {stream.failed} failed")
    return finish(result)

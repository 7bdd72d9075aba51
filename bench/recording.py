"""Recording probes: what writing the trace costs a run, and how many bytes an iteration takes.

``python -m bench.recording NAME ARGS…`` prints one JSON object on its last line (as
:mod:`bench.probes` does); :mod:`bench.run` starts them in a child process each.

- ``record``: the scripted benchmark agent into the null sink and into trace files with each
  durability policy (``none``, ``batch``, ``every``). The variants take turns in rounds, in a
  rotating order; each round gives one ratio per policy (its time / the null sink's in the same
  round), and the figure is the median of those ratios, for wall time and for CPU time (the
  process's, every thread included: the writer's sync thread counts). A neighbour's load on a shared
  machine then lands on the variants of one round alike, and a bad round moves no median.
- ``bytes-per-iteration``: one conversation of 10, 100 and 1,000 iterations (2, 20 and 200 user
  turns of the support script in a single run), written with ``durability="none"``: trace bytes
  divided by iterations, for each schema version asked (``--versions``; version 2 stores each
  prompt segment, message and tool once). Flat means an iteration costs the same however long the
  run is.

- ``stages``: the same alternated rounds, for where recording's CPU goes in the run itself: the
  null sink, then each event serialised only, serialised and redacted, and also written (one
  ``os.write``), then the writer itself under ``none`` and ``batch``; the median ratio of each to the
  null sink.

``record --versions 1,2`` adds a ``<policy>-v1`` variant per policy to the same rounds (version 1:
every request in full), so the two formats are compared against the same null-sink rounds.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.probes import Probe, main
from fpdebug.trace.schema import LlmCallEvent, TraceEvent
from fpdebug.trace.writer import Durability

__all__ = ["RECORDING_PROBES"]

POLICIES: tuple[Durability, ...] = ("none", "batch", "every")


def _record(args: argparse.Namespace) -> dict[str, object]:
    """Alternated rounds of null / none / batch / every; median ratios of wall and CPU time."""
    from bench.scenario import bench_agent, run_iterations
    from fpdebug.engine import EventSink, NullSink, TraceFileSink

    agent = bench_agent()
    agent.check()  # compile now, outside the timing
    run_iterations(agent, 40, sink=NullSink())  # warm the code paths every variant shares
    versions = [int(v) for v in args.versions.split(",")]
    policies = [
        f"{policy}{'' if version == 2 else f'-v{version}'}"
        for version in versions
        for policy in POLICIES
        if policy in args.policies.split(",")
    ]
    null = NullSink()
    sinks: dict[str, EventSink] = {"null": null}
    for name in policies:
        policy, _, version = name.partition("-v")
        sinks[name] = TraceFileSink.create(
            args.out.with_suffix(f".{name}.jsonl"),
            durability=policy,  # type: ignore[arg-type]
            overwrite=True,
            schema_version=int(version or 2),
        )
    names = list(sinks)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    iterations = 0
    for round_ in range(args.rounds):
        shift = round_ % len(names)
        for variant in names[shift:] + names[:shift]:
            gc.collect()
            started, started_cpu = time.perf_counter(), time.process_time()
            _, done = run_iterations(agent, args.per_round, sink=sinks[variant])
            wall[variant].append(time.perf_counter() - started)
            cpu[variant].append(time.process_time() - started_cpu)
            if variant == "null":
                iterations += done
    for name in policies:
        sinks[name].close()
    result: dict[str, object] = {
        "iterations": iterations,
        "events": null.count,
        "rounds": args.rounds,
        "per_round": args.per_round,
        "bytes": args.out.with_suffix(f".{policies[0]}.jsonl").stat().st_size if policies else 0,
        "wall_s": wall,
        "cpu_s": cpu,
    }
    for name in policies:
        result[f"{name}_wall_x"] = statistics.median(
            w / b for w, b in zip(wall[name], wall["null"], strict=True)
        )
        result[f"{name}_cpu_x"] = statistics.median(
            c / b for c, b in zip(cpu[name], cpu["null"], strict=True)
        )
        args.out.with_suffix(f".{name}.jsonl").unlink()
    return result


def _bytes_per_iteration(args: argparse.Namespace) -> dict[str, object]:
    """Trace bytes per iteration of one run of each length (the header excluded)."""
    from bench.scenario import bench_agent
    from fpdebug.demo import support
    from fpdebug.engine import TraceFileSink

    agent = bench_agent().max_iterations(10**6)
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="fpdebug-bytes-") as folder:
        for count, version in [(c, v) for v in args.versions for c in args.iterations]:
            path = Path(folder) / f"run-{count}.fptrace.jsonl"
            with TraceFileSink.create(path, durability="none", schema_version=version) as sink:
                header = sink.writer.size
                started = time.perf_counter()
                run = agent.run(
                    list(support.USER_MESSAGES) * max(count // 5, 1),
                    provider=support.scripted_provider(),
                    sink=sink,
                    run_id=f"bytes-{count}",
                )
                seconds = time.perf_counter() - started
            if run.status != "completed":
                raise RuntimeError(f"the {count}-iteration run ended {run.status}: {run.error}")
            size = path.stat().st_size - header
            result[str(count) if version == 2 else f"{count}-v{version}"] = {
                "iterations": run.iterations,
                "bytes": size,
                "bytes_per_iteration": size / run.iterations,
                "seconds": seconds,
            }
            path.unlink()
    return result


class _StageSink:
    """Does the first stages of what the writer does to each event, on the caller's thread: turn it
    into its version 2 line (``serialise``), then pass it through the default redactor
    (``redact``), then ``os.write`` it to an ``O_APPEND`` file (``write``). No lock, no checks, no
    fsync: the full writer is the ``none`` and ``batch`` variants beside it."""

    def __init__(self, stage: str, path: Path) -> None:
        from fpdebug.trace.compact import RequestEncoder
        from fpdebug.trace.redact import default_redactor

        self.stage = stage
        self.encoder = RequestEncoder()
        self.redact = default_redactor().redact_line
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self.path = path
        self.next_seq = 1

    def emit(self, event: TraceEvent) -> None:
        """Serialise, and redact and write as far as the stage goes."""
        from fpdebug.trace.writer import dump_record

        line = self.encoder.encode(event) if isinstance(event, LlmCallEvent) else None
        if line is None:
            line = dump_record(event)
            if event.kind == "run_end":
                self.encoder.forget_run(event.run_id)
        if self.stage != "serialise":
            line = self.redact(line)
            if self.stage == "write":
                os.write(self.fd, line)
        self.next_seq += 1

    def close(self) -> None:
        """Close and remove the file."""
        os.close(self.fd)
        self.path.unlink()


def _stages(args: argparse.Namespace) -> dict[str, object]:
    """Alternated rounds of the null sink, each stage of recording, and the writer under none / batch."""
    from bench.scenario import bench_agent, run_iterations
    from fpdebug.engine import EventSink, NullSink, TraceFileSink

    agent = bench_agent()
    agent.check()
    run_iterations(agent, 40, sink=NullSink())
    sinks: dict[str, EventSink] = {"null": NullSink()}
    for stage in ("serialise", "redact", "write"):
        sinks[stage] = _StageSink(stage, args.out.with_suffix(f".{stage}.jsonl"))
    for policy in ("none", "batch"):
        sinks[policy] = TraceFileSink.create(
            args.out.with_suffix(f".{policy}.jsonl"), durability=policy, overwrite=True
        )
    names = list(sinks)
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        shift = round_ % len(names)
        for variant in names[shift:] + names[:shift]:
            gc.collect()
            started = time.process_time()
            run_iterations(agent, args.per_round, sink=sinks[variant])
            cpu[variant].append(time.process_time() - started)
    for name in names[1:]:
        sinks[name].close()
    for policy in ("none", "batch"):
        args.out.with_suffix(f".{policy}.jsonl").unlink()
    return {
        "rounds": args.rounds,
        "per_round": args.per_round,
        "null_cpu_ms": statistics.median(cpu["null"]) * 1e3,
        **{
            f"{name}_cpu_x": statistics.median(c / b for c, b in zip(cpu[name], cpu["null"], strict=True))
            for name in names[1:]
        },
    }


RECORDING_PROBES: dict[str, Probe] = {
    "record": (
        _record,
        lambda p: (
            p.add_argument("--per-round", type=int, default=100),
            p.add_argument("--rounds", type=int, default=7),
            p.add_argument("--policies", default=",".join(POLICIES)),
            p.add_argument("--versions", default="2", help="schema versions, comma-separated (1,2)"),
            p.add_argument("--out", type=Path, required=True),
        ),
    ),
    "stages": (
        _stages,
        lambda p: (
            p.add_argument("--per-round", type=int, default=60),
            p.add_argument("--rounds", type=int, default=11),
            p.add_argument("--out", type=Path, required=True),
        ),
    ),
    "bytes-per-iteration": (
        _bytes_per_iteration,
        lambda p: (
            p.add_argument("--iterations", type=int, nargs="+", default=[10, 100, 1000]),
            p.add_argument("--versions", type=int, nargs="+", default=[2]),
        ),
    ),
}
"""Probe name → (function, argument declarations)."""


if __name__ == "__main__":
    sys.exit(main(probes=RECORDING_PROBES))

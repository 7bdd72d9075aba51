"""Measurements that run in a child process of their own (clean memory, no warm caches of the parent).

Each probe is ``python -m bench.probes NAME ARGS…`` and prints one JSON object on its last line of
stdout; :mod:`bench.run` starts them and reads that line. Timings are taken inside the child, after
its imports, unless a probe says otherwise.

Probes of the trace layer and the engine live here; those that open the Textual app are in
:mod:`bench.tui_probes`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeAlias

__all__ = ["PROBES", "Probe", "current_rss_mb", "main", "peak_rss_mb"]


def current_rss_mb() -> float:
    """This process's resident set size now, in MB (from ``/proc/self/status``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    """This process's peak resident set size since its ``exec``, in MB (``VmHWM``).

    Not ``ru_maxrss``: Linux keeps that across ``execve`` and seeds it with the address space the
    process had before (a forked child's copy of its parent), so a child of a big process reads
    its parent's peak. ``VmHWM`` belongs to the address space the ``exec`` created.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux: the best there is


def _model(args: argparse.Namespace) -> dict[str, object]:
    """Build a RunModel over the whole trace: time, and memory held by the model and the index."""
    from fpdebug.trace.model import RunModel
    from fpdebug.trace.reader import TraceReader

    gc.collect()
    before = current_rss_mb()
    started = time.perf_counter()
    reader = TraceReader(args.path)
    model = RunModel.build(reader, validate=args.validate)
    seconds = time.perf_counter() - started
    gc.collect()
    return {
        "seconds": seconds,
        "held_mb": current_rss_mb() - before,
        "peak_mb": peak_rss_mb(),
        "events": model.events,
        "iterations": sum(1 for _ in model.iterations()),
        "runs": len(model.runs),
    }


def _parse(args: argparse.Namespace) -> dict[str, object]:
    """The JSON floor: read every line (blocks of ``pread``) and ``orjson.loads`` it, nothing else."""
    import orjson

    from fpdebug.trace.reader import TraceReader

    started = time.perf_counter()
    reader = TraceReader(args.path)
    loads = orjson.loads
    count = 0
    for _, _, raw in reader.iter_raw(1):
        loads(raw)
        count += 1
    return {"seconds": time.perf_counter() - started, "events": count}


def _record(args: argparse.Namespace) -> dict[str, object]:
    """The scripted benchmark agent for N iterations into the null sink and into trace files.

    The three variants (null sink, trace file with ``batch`` durability, trace file with ``none``)
    take turns in blocks of ``N / blocks`` iterations, in a rotating order, and each variant's
    blocks are summed: a neighbour's load on a shared machine lands on all three alike instead of
    on whichever happened to run at the wrong moment. Each file sink stays open across its blocks
    (one trace file per variant, as one long recording).
    """
    from bench.scenario import bench_agent, run_iterations
    from fpdebug.engine import EventSink, NullSink, TraceFileSink

    agent = bench_agent()
    agent.check()  # compile now, outside the timing
    run_iterations(agent, 40, sink=NullSink())  # warm the code paths every variant shares
    null = NullSink()
    sinks: dict[str, EventSink] = {
        "null": null,
        **{
            name: TraceFileSink.create(
                args.out.with_suffix(f".{name}.jsonl"), durability=name, overwrite=True
            )
            for name in ("batch", "none")
        },
    }
    seconds = dict.fromkeys(sinks, 0.0)
    iterations = dict.fromkeys(sinks, 0)
    per_block = max(args.iterations // args.blocks, 1)
    names = list(sinks)
    for block in range(args.blocks):
        for name in names[block % 3 :] + names[: block % 3]:
            gc.collect()
            started = time.perf_counter()
            _, done = run_iterations(agent, per_block, sink=sinks[name])
            seconds[name] += time.perf_counter() - started
            iterations[name] += done
    for name in ("batch", "none"):
        started = time.perf_counter()
        sinks[name].close()  # the final fsync belongs to the recording
        seconds[name] += time.perf_counter() - started
    files = {name: args.out.with_suffix(f".{name}.jsonl") for name in ("batch", "none")}
    result: dict[str, object] = {
        "seconds": seconds,
        "iterations": iterations["null"],
        "events": null.count,
        "bytes": files["batch"].stat().st_size,
    }
    for path in files.values():
        path.unlink()
    return result


def _record_costs(args: argparse.Namespace) -> dict[str, object]:
    """Where a recorded event's time goes: the engine, serialising it, writing it, its share of fsyncs.

    The run goes to the null sink (the engine's own cost), then again to a memory sink whose events
    are serialised with the writer's ``dump_record``, passed through its default redactor, and
    written with one ``os.write`` each to an ``O_APPEND`` file with an ``fdatasync`` every 64
    records (the default ``batch`` policy), every write and every fdatasync timed on its own.
    """
    from bench.scenario import bench_agent, run_iterations
    from fpdebug.engine import MemorySink, NullSink
    from fpdebug.trace.redact import default_redactor
    from fpdebug.trace.writer import DEFAULT_BATCH_SIZE, dump_record

    agent = bench_agent()
    run_iterations(agent, 40, sink=NullSink())
    # The engine's own cost with the null sink: a memory sink would keep every event alive, and
    # the growing heap makes the garbage collector (so the engine) slower than in a real run.
    null = NullSink()
    started = time.perf_counter()
    run_iterations(agent, args.iterations, sink=null)
    engine = time.perf_counter() - started
    sink = MemorySink()
    run_iterations(agent, args.iterations, sink=sink)
    events = sink.events
    started = time.perf_counter()
    lines = [dump_record(event) for event in events]
    dump = time.perf_counter() - started
    redact_line = default_redactor().redact_line  # what the writer runs over every line by default
    started = time.perf_counter()
    lines = [redact_line(line) for line in lines]
    redact = time.perf_counter() - started
    # One pass as the writer does it under the default policy: one write per record, and an
    # fdatasync every DEFAULT_BATCH_SIZE records. Each call is timed on its own (not as the
    # difference of two passes, which depends on what the page cache held for each).
    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    write = sync = 0.0
    syncs = 0
    clock = time.perf_counter
    try:
        for k, line in enumerate(lines, 1):
            started = clock()
            os.write(fd, line)
            write += clock() - started
            if k % DEFAULT_BATCH_SIZE == 0:
                started = clock()
                os.fdatasync(fd)
                sync += clock() - started
                syncs += 1
    finally:
        os.close(fd)
        os.unlink(args.out)
    count = len(events)
    return {
        "events": count,
        "bytes": sum(map(len, lines)),
        "engine_us": engine / null.count * 1e6,
        "dump_us": dump / count * 1e6,
        "redact_us": redact / count * 1e6,
        "write_us": write / count * 1e6,
        "fsync_us": sync / count * 1e6,
        "fsync_ms_each": sync / max(syncs, 1) * 1e3,
    }


def _writer(args: argparse.Namespace) -> dict[str, object]:
    """TraceWriter.append throughput on real events (those of a trace), and the serialisation alone."""
    from fpdebug.trace.reader import TraceReader
    from fpdebug.trace.writer import TraceWriter, dump_record

    with TraceReader(args.path) as reader:
        events = [record for _, record in reader.iter_records(1)]
    gc.collect()
    dump_seconds = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        size = sum(len(dump_record(event)) for event in events)
        dump_seconds = min(dump_seconds, time.perf_counter() - started)
    results: dict[str, object] = {"events": len(events), "bytes": size, "dump_seconds": dump_seconds}
    for durability in ("batch", "none"):
        best = float("inf")
        for _ in range(3):  # the best of three: the cost of the work, not of a noisy neighbour
            started = time.perf_counter()
            with TraceWriter.create(args.out, durability=durability, overwrite=True) as writer:
                for event in events:
                    writer.append(event)
            best = min(best, time.perf_counter() - started)
        results[f"{durability}_seconds"] = best
    os.unlink(args.out)
    return results


Probe: TypeAlias = tuple[
    Callable[[argparse.Namespace], dict[str, object]], Callable[[argparse.ArgumentParser], object]
]
"""A probe: the function that measures, and the declaration of its arguments."""

PROBES: dict[str, Probe] = {
    "model": (_model, lambda p: (p.add_argument("path"), p.add_argument("--validate", action="store_true"))),
    "parse": (_parse, lambda p: p.add_argument("path")),
    "record": (
        _record,
        lambda p: (
            p.add_argument("--iterations", type=int, required=True),
            p.add_argument("--blocks", type=int, default=10),
            p.add_argument("--out", type=Path, required=True),
        ),
    ),
    "record-costs": (
        _record_costs,
        lambda p: (
            p.add_argument("--iterations", type=int, required=True),
            p.add_argument("--out", type=Path, required=True),
        ),
    ),
    "writer": (
        _writer,
        lambda p: (
            p.add_argument("path"),
            p.add_argument("--out", type=Path, required=True),
        ),
    ),
}
"""Probe name → (function, argument declarations)."""


def main(argv: Sequence[str] | None = None, *, probes: dict[str, Probe] | None = None) -> int:
    """Run one probe and print its JSON result as the last line.

    Args:
        argv: The arguments (``sys.argv[1:]`` by default).
        probes: The probe table (:data:`PROBES` by default).
    """
    table = PROBES if probes is None else probes
    parser = argparse.ArgumentParser(prog="python -m bench.probes")
    commands = parser.add_subparsers(dest="probe", required=True)
    for name, (_, declare) in table.items():
        declare(commands.add_parser(name))
    args = parser.parse_args(argv)
    result = table[args.probe][0](args)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

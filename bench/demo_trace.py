"""A demo-shaped trace of any size: the real demo runs repeated, every event body byte for byte.

The synthetic generator (:mod:`bench.gen_trace`) writes long runs of about 2 KB per event; the
scripted demos (``sample_traces/``, what ``fpdebug demo`` records) are short runs of about 850 bytes
per event, which is what a trace of many small runs looks like. This builds a trace of ``events``
lines by repeating the seven demo runs in turn, each copy a run of its own: the envelope is
renumbered (``seq`` counts on across the file, ``run_id`` gets a ``-NNNNNN`` suffix, ``ts`` moves
on by one millisecond per event) and everything after it is the demo's bytes, unchanged. Every line
is what the writer would write for that event (the envelope's keys are its first keys, in order).

Usage::

    .venv/bin/python -m bench.demo_trace --events 100000   # prints the cached path
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.gen_trace import OUT_DIR

__all__ = ["DEMO_VERSION", "SAMPLES", "demo_trace_path", "ensure_demo_trace", "iter_demo_lines"]

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"
DEMO_VERSION = 1
"""Bumped whenever the bytes this writes change (the cache key)."""

_ENVELOPE = re.compile(rb'^\{"kind":"([a-z_]+)","seq":(\d+),"ts":"([^"]+)","run_id":"([^"]+)"')
_START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _bodies() -> list[list[tuple[bytes, bytes]]]:
    """Each demo run as a list of ``(kind, rest of the line after the envelope)``."""
    runs: list[list[tuple[bytes, bytes]]] = []
    for path in sorted(SAMPLES.glob("*.fptrace.jsonl")):
        events: list[tuple[bytes, bytes]] = []
        for raw in path.read_bytes().splitlines()[1:]:
            match = _ENVELOPE.match(raw)
            if match is None:
                raise ValueError(f"{path}: a line without the writer's envelope: {raw[:80]!r}")
            events.append((match.group(1), raw[match.end() :]))
        runs.append(events)
    return runs


def _ts(seq: int) -> bytes:
    # pydantic prints a UTC datetime with microseconds as ...T12:00:00.001000Z
    moment = _START + timedelta(milliseconds=seq)
    # ...and a whole second without its fraction, as ...T12:00:01Z
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if moment.microsecond else "%Y-%m-%dT%H:%M:%SZ")
    return text.encode("ascii")


def iter_demo_lines(events: int) -> Iterator[bytes]:
    """The header line, then ``events`` event lines (each with its newline)."""
    yield (
        b'{"kind":"trace_header","format":"fpdebug.trace","schema_version":1,"producer":"fpdebug 0.1.0",'
        b'"created":"2026-01-01T12:00:00Z"}\n'
    )
    runs = _bodies()
    seq = 0
    copy = 0
    while seq < events:
        events_of_run = runs[copy % len(runs)]
        run_id = f"demo-{copy:06d}".encode("ascii")
        for kind, rest in events_of_run:
            seq += 1
            yield b'{"kind":"%s","seq":%d,"ts":"%s","run_id":"%s"%s\n' % (kind, seq, _ts(seq), run_id, rest)
        copy += 1


def demo_trace_path(events: int, *, out_dir: Path = OUT_DIR) -> Path:
    """Where the cached demo-shaped trace of about ``events`` events lives."""
    return out_dir / f"demo-{events}-v{DEMO_VERSION}.fptrace.jsonl"


def ensure_demo_trace(events: int, *, out_dir: Path = OUT_DIR) -> Path:
    """The cached demo-shaped trace of about ``events`` events (whole runs), written first when missing."""
    path = demo_trace_path(events, out_dir=out_dir)
    if not path.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with partial.open("wb") as out:
            for line in iter_demo_lines(events):
                out.write(line)
        partial.replace(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.demo_trace --events N``: build (or find) the trace and print its path."""
    parser = argparse.ArgumentParser(prog="python -m bench.demo_trace", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000, help="about how many events (default 10000)")
    args = parser.parse_args(argv)
    print(ensure_demo_trace(args.events))
    return 0


if __name__ == "__main__":
    sys.exit(main())

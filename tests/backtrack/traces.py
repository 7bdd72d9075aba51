"""Traces the backtrack tests explain: the committed demo samples, and fresh planted-fact variants."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from fpdebug.backtrack.provenance import Provenance, trace_provenance
from fpdebug.demo import load_target, planted_fact
from fpdebug.engine.sink import TraceFileSink
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from tests.conftest import T0

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def sample(name: str) -> Path:
    """A committed sample trace (read only: never write beside it in a test)."""
    return SAMPLES / f"{name}.fptrace.jsonl"


def copy_sample(name: str, directory: Path) -> Path:
    """A private copy of a sample, so a sidecar can be written beside it."""
    target = directory / f"{name}.fptrace.jsonl"
    shutil.copyfile(sample(name), target)
    return target


def planted_trace(directory: Path, variant: str = "single") -> Path:
    """A fresh planted-fact run of one variant (recorded like ``fpdebug demo`` records it)."""
    path = directory / f"planted-{variant}.fptrace.jsonl"
    agent = planted_fact.build_agent(variant=variant)  # type: ignore[arg-type]
    clock = FixedClock(T0)
    provider = planted_fact.scripted_provider(variant=variant)  # type: ignore[arg-type]
    with TraceFileSink.create(path, clock=clock, durability="none") as sink:
        agent.run(
            list(planted_fact.USER_MESSAGES),
            provider=provider,
            sink=sink,
            clock=clock,
            run_id=f"planted-{variant}",
            options={"scenario": "planted-fact"},
        )
    return path


def provenance_of(path: Path, seq: int | None = None, **kwargs: Any) -> Provenance:
    """The provenance of one call of a trace."""
    with TraceReader(path) as reader:
        return trace_provenance(RunModel.build(reader), seq=seq, trace=str(path), **kwargs)


def records(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file, parsed."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def event(path: Path, seq: int) -> dict[str, Any]:
    """The trace record with this seq (read independently of the code under test)."""
    return next(r for r in records(path) if r.get("seq") == seq)


def events(path: Path, kind: str) -> list[dict[str, Any]]:
    """The trace records of one kind, in file order."""
    return [r for r in records(path) if r.get("kind") == kind]


def demo_loader(name: str) -> ModuleType:
    """What the CLI passes as the module loader."""
    return load_target(name).module

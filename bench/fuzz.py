"""Bad-input fuzzing of the reader, every CLI command that reads a trace, and the debugger's rendering.

Four targets, each fed traces built by hypothesis strategies: good records (every kind of text,
markup and control sequences included) interleaved with garbage lines of every shape a damaged or
hostile file has (random bytes, truncated UTF-8, nesting beyond any parser's limit, integers beyond
64 bits, valid JSON with wrong types, unknown kinds, a second header, empty lines, NUL bytes):

- ``reader``: :class:`~fpdebug.trace.reader.TraceReader` never raises on a bad line, every good
  record reads back equal at its line, ``problems()`` and :class:`~fpdebug.trace.model.RunModel`
  finish;
- ``cli``: ``fpdebug validate``, ``fpdebug summary [--json]`` and ``fpdebug backtrack [--json]``
  (no reruns; its sidecar written and read back) through ``cli.main`` never let an exception out,
  exit 0, 1 or 2, and print nothing a terminal would obey;
- ``commands``: every other command that reads a trace, through ``cli.main``: ``report`` (Markdown
  and JSON), ``export -o FILE``, ``diff`` (the case against itself and against a known-good trace,
  text and JSON, with and without ``--partial``; it opens a file as ``view`` does), ``ledger [--json]``
  and ``import`` (the case, with and without its header, as a foreign file): each exits with one of
  its documented codes, never lets an exception out, says why on stderr when it stops (exit 2),
  prints nothing a terminal would obey, and writes valid JSON where it promises JSON (an import that
  succeeds writes a trace that reads; a refused one writes nothing); the Markdown report written run
  by run is byte for byte the one rendered from a model of the whole file. ``view``'s screen is the
  ``render`` target's;
- ``render``: the debugger's row and document builders (timeline and event rows, the pass
  inspector, the call view, the event detail) render every record without an exception and
  without a control or bidi character.

The tests run each target for a few seconds (``tests/reliability/test_fuzz.py``). The long run::

    .venv/bin/python -m bench.fuzz --minutes 5            # all targets, round-robin
    .venv/bin/python -m bench.fuzz --minutes 1 --target render

prints, per target, how many inputs it tried and how many failed; each failing input is saved under
``bench/out/fuzz-failures/`` with its traceback. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, TypeAlias

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.cli import build_parser
from fpdebug.cli import main as cli_main
from fpdebug.errors import TraceFormatError
from fpdebug.trace.model import RunModel
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.records import InvalidRecord, OpaqueRecord
from fpdebug.trace.redact import Redactor
from fpdebug.trace.schema import (
    ErrorInfo,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
    TraceHeader,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
)
from fpdebug.trace.writer import TraceWriter, dump_record

__all__ = [
    "TARGETS",
    "Case",
    "UnsafeText",
    "cases",
    "check_backtrack",
    "check_cli",
    "check_commands",
    "check_reader",
    "check_render",
    "unsafe_characters",
    "write_case",
]

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
OUT = Path(__file__).resolve().parent / "out" / "fuzz-failures"

# ----------------------------------------------------------------------------------------------
# What a terminal must never receive


class UnsafeText(AssertionError):
    """Text bound for the terminal holds a control, escape or bidi character."""


_UNSAFE = frozenset(
    [
        *map(chr, range(0x09)),
        *map(chr, range(0x0B, 0x20)),
        *map(chr, range(0x7F, 0xA0)),
        "\u061c",
        "\u200e",
        "\u200f",
        *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x206A)),
        "\u2028",
        "\u2029",
        "\ufff9",
        "\ufffa",
        "\ufffb",
    ]
)


def unsafe_characters(text: str, *, newlines: bool = True) -> set[str]:
    """The characters of ``text`` a terminal would obey rather than show (tab always allowed)."""
    found = {c for c in text if c in _UNSAFE}
    if not newlines and "\n" in text:
        found.add("\n")
    return found


# ----------------------------------------------------------------------------------------------
# Inputs

HOSTILE = [
    "[bold red]x[/]",
    "[link=http://e]click[/link]",
    "\x1b[2J",
    "\x1b]52;c;aGk=\x07",
    "\x1b]8;;http://e\x1b\\",
    "\x1b]0;title\x07",
    "\u202eevil",
    "\x9b31m",
    "\r",
    "\x00",
    "é",
    "💥",
    "\u2028",
    "\\",
    '"',
]
texts = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(HOSTILE), max_size=6).map("".join))
small = st.integers(min_value=0, max_value=10**6)


def _envelope(seq: int, body: dict[str, object]) -> dict[str, object]:
    return {"seq": seq, "ts": T0 + timedelta(milliseconds=seq), "run_id": "fuzz", **body}


# A good record: a kind and its fields (seq and the envelope are added when the case is written).
good_bodies: st.SearchStrategy[tuple[type[TraceEvent], dict[str, object]]] = st.one_of(
    st.tuples(
        st.just(RunStartEvent),
        st.fixed_dictionaries(
            {
                "provider": texts,
                "model": texts,
                "max_iterations": small,
                "system_prompt": texts,
            }
        ),
    ),
    st.tuples(st.just(TurnStartEvent), st.fixed_dictionaries({"turn": st.just(1), "user_message": texts})),
    st.tuples(
        st.just(PassEvent),
        st.fixed_dictionaries(
            {
                "turn": st.just(1),
                "iteration": st.integers(1, 4),
                "active_ids": st.lists(texts, max_size=3),
                "evaluated_total": small,
            }
        ),
    ),
    st.tuples(
        st.just(LlmCallEvent),
        st.fixed_dictionaries(
            {
                "turn": st.just(1),
                "iteration": st.integers(1, 4),
                "call_index": st.integers(1, 9) | st.just(2**70),
                "provider": texts,
                "model": texts,
                "request": st.builds(
                    LlmRequest,
                    messages=st.lists(
                        st.builds(
                            Message, role=st.sampled_from(["user", "assistant", "tool"]), content=texts
                        ),
                        max_size=3,
                    ),
                ),
                "response": st.none()
                | st.builds(
                    LlmResponse,
                    content=texts,
                    tool_calls=st.lists(
                        st.builds(
                            ToolCallRecord,
                            id=texts,
                            name=texts,
                            args=st.dictionaries(texts, st.integers(-(2**80), 2**80) | texts, max_size=2),
                        ),
                        max_size=2,
                    ),
                    usage=st.builds(Usage, input_tokens=small, output_tokens=small),
                ),
                "error": st.none()
                | st.builds(ErrorInfo, type=texts, message=texts, status=st.none() | small),
                "route": st.none() | st.sampled_from(["tool-calls", "final"]),
            }
        ),
    ),
    st.tuples(
        st.just(ToolResultEvent),
        st.fixed_dictionaries(
            {
                # An iteration beyond 64 bits is valid JSON and a valid record: the backtrack's sidecar holds it.
                "turn": st.just(1),
                "iteration": st.integers(1, 4) | st.just(2**70),
                "tool_call_id": texts,
                "tool_name": texts,
                "args": st.dictionaries(
                    texts, st.integers(-(2**100), 2**100) | texts | st.booleans(), max_size=3
                ),
                "result": texts,
                "status": st.none() | st.sampled_from(["success", "failure", "invalid"]),
            }
        ),
    ),
    st.tuples(
        st.just(TurnEndEvent),
        st.fixed_dictionaries(
            {
                "turn": st.just(1),
                "final_content": texts,
                "iteration_count": st.integers(1, 4),
            }
        ),
    ),
    st.tuples(
        st.just(RunEndEvent),
        st.fixed_dictionaries(
            {
                "status": st.sampled_from(["completed", "failed", "interrupted"]),
                "error": st.none() | st.builds(ErrorInfo, type=texts, message=texts),
            }
        ),
    ),
)

_SAMPLE = dump_record(
    ToolResultEvent(
        seq=1,
        ts=T0,
        run_id="fuzz",
        turn=1,
        iteration=1,
        tool_call_id="c",
        tool_name="t",
        result="café ünïcödé 💥 payload",
        args={"n": 1},
    )
).rstrip(b"\n")
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**200), 2**200) | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)
_KINDS = st.sampled_from(["pass", "llm_call", "tool_result", "run_end", "turn_start", "run_start"])


def _json_line(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _nested(depth: int, opener: str) -> bytes:
    # Deeper than orjson (1024) and pydantic's parser accept, inside an otherwise plausible record.
    inner = '{"a":' * depth + "1" + "}" * depth if opener == "{" else "[" * depth + "]" * depth
    return ('{"kind":"tool_result","seq":1,"args":' + inner + "}").encode()


garbage_lines: st.SearchStrategy[bytes] = st.one_of(
    st.binary(max_size=200),  # may hold newlines: then it is several bad lines
    st.integers(1, len(_SAMPLE) - 1).map(lambda cut: _SAMPLE[:cut]),  # truncated, mid-character too
    st.tuples(st.integers(600, 20_000), st.sampled_from(["[", "{"])).map(lambda t: _nested(*t)),
    st.integers(2**64, 2**400).map(lambda n: f'{{"kind":"pass","seq":{n},"evaluated_total":{-n}}}'.encode()),
    st.tuples(_KINDS, st.dictionaries(texts, _JSON, max_size=5)).map(
        lambda t: _json_line({"kind": t[0], "seq": 1, **t[1]})  # a known kind with wrong fields
    ),
    st.tuples(_KINDS, _JSON).map(lambda t: _json_line({"kind": t[0], "seq": "one", "ts": t[1], "run_id": 5})),
    texts.map(lambda kind: _json_line({"kind": "x-" + kind, "seq": 2, "data": kind})),  # unknown kind
    _JSON.map(_json_line),
    st.just(dump_record(TraceHeader(producer="again", created=T0)).rstrip(b"\n")),  # a second header
    st.sampled_from(
        [b"", b"   ", b"\x00\x00", b"\r", b"{", b'{"kind":', b"null", b"[]", b'"kind"', b"1e999"]
    ),
)

Good: TypeAlias = tuple[type[TraceEvent], dict[str, object]]
Item: TypeAlias = tuple[Literal["good"], Good] | tuple[Literal["bad"], bytes]


@dataclass
class Case:
    """One fuzz input: the header's shape and the lines after it."""

    items: list[Item]
    """Good records and garbage lines, in file order."""
    header: Literal["good", "garbage", "newer", "empty", "unfinished"] = "good"
    """A valid header, a first line that is not one, a newer schema, an empty file, or a header
    without its newline (the lines are not written after the last three)."""
    tail: bytes = b""
    """Bytes after the last newline (a torn record)."""
    expected: dict[int, TraceEvent] = field(default_factory=dict)
    """Filled by :func:`write_case`: line number → the good record written there."""


cases: st.SearchStrategy[Case] = st.builds(
    Case,
    items=st.lists(
        st.one_of(st.tuples(st.just("good"), good_bodies), st.tuples(st.just("bad"), garbage_lines)),
        max_size=14,
    ),
    header=st.sampled_from(["good"] * 5 + ["garbage", "newer", "empty", "unfinished"]),
    tail=st.one_of(st.just(b""), st.binary(max_size=40).filter(lambda b: b"\n" not in b)),
)


def write_case(case: Case, path: Path) -> None:
    """Write the case as a trace file (good records through the writer, unredacted, garbage raw)."""
    case.expected.clear()
    if path.exists():
        path.unlink()
    with TraceWriter.create(path, durability="none", clock=_Clock(), redactor=Redactor.off()):
        pass
    data = bytearray(path.read_bytes())
    if case.header == "empty":
        path.write_bytes(b"")
        return
    if case.header == "unfinished":
        path.write_bytes(bytes(data).rstrip(b"\n"))
        return
    if case.header == "garbage":
        data = bytearray(b"not a header at all\n")
    elif case.header == "newer":
        data = bytearray(b'{"kind":"trace_header","format":"fpdebug.trace","schema_version":999}\n')
    line = 1
    for kind, payload in case.items:
        if kind == "good":
            cls, body = payload  # type: ignore[misc]
            event = cls(**_envelope(line, body))  # type: ignore[arg-type]
            data += dump_record(event)
            case.expected[line] = event
            line += 1
        else:
            raw = payload  # type: ignore[assignment]
            data += raw + b"\n"  # type: ignore[operator]
            line += raw.count(b"\n") + 1  # type: ignore[union-attr]
    path.write_bytes(bytes(data) + case.tail)


class _Clock:
    def now(self) -> datetime:
        return T0


# ----------------------------------------------------------------------------------------------
# Targets


def check_reader(case: Case, path: Path) -> None:
    """Every good record reads back equal at its line; nothing raises on the rest."""
    write_case(case, path)
    if case.header != "good":
        try:
            TraceReader(path).close()
        except TraceFormatError:  # TraceVersionError included: the one clear refusal
            return
        raise AssertionError(f"a file with a {case.header} first line was opened as a trace")
    with TraceReader(path) as reader:
        for line, event in case.expected.items():
            assert reader[line] == event, (line, reader[line], event)
        records = list(reader.iter_records(0))
        assert len(records) == len(reader)
        for line, record in records[1:]:
            assert isinstance(record, InvalidRecord | OpaqueRecord) or record.kind in {
                "run_start",
                "turn_start",
                "pass",
                "llm_call",
                "tool_result",
                "turn_end",
                "run_end",
            }, record
            if isinstance(record, InvalidRecord):
                assert record.line == line and len(record.preview) <= 4 * 200
        problems = reader.problems()
        assert all(p.code in ("invalid", "unknown-kind", "seq", "torn-tail") for p in problems)
        assert (reader.torn_tail() is not None) == bool(case.tail)
        RunModel.build(reader)
        RunModel.build(reader, validate=True)


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """``cli.main(argv)``'s exit code, stdout and stderr, with the parser built once: building it
    imports every command module and costs more than most commands on a small case."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _parsed_once():
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _parsed_once() -> Iterator[None]:
    import fpdebug.cli as cli

    built = cli.build_parser
    cli.build_parser = _parser  # main() looks the name up at call time
    try:
        yield
    finally:
        cli.build_parser = built


def check_cli(case: Case, path: Path) -> None:
    """validate, summary and backtrack: exit 0/1/2, no exception, nothing unsafe printed."""
    write_case(case, path)
    code, out, err = _cli(["validate", str(path)])
    assert code in (0, 1, 2), code
    if case.header == "newer":
        assert code == 2 and "newer" in err
    elif case.header != "good":
        assert code == 1 and ":0: offset 0: " in out
    else:
        clean = not case.tail and all(kind == "good" for kind, _ in case.items)
        expected = 0 if clean or _only_valid_garbage(path) else 1
        assert code == expected, (code, out)
    for text in (out, err):
        if unsafe_characters(text):
            raise UnsafeText(f"validate printed {unsafe_characters(text)!r}")
    for argv in (["summary", str(path)], ["summary", "--json", str(path)]):
        code, out, err = _cli(argv)
        assert code == (0 if case.header == "good" else 2), (argv, code, err)
        if code == 0 and "--json" in argv:
            json.loads(out)
        for text in (out, err):
            if unsafe_characters(text):
                raise UnsafeText(f"{argv[0]} printed {unsafe_characters(text)!r}")
    check_backtrack(case, path)


def check_backtrack(case: Case, path: Path) -> None:
    """backtrack without reruns, text and JSON: exit 0/1/2, its sidecar readable, nothing unsafe printed."""
    from fpdebug.backtrack import load_sidecar, sidecar_path_for

    sidecar = sidecar_path_for(path)
    sidecar.unlink(missing_ok=True)
    try:
        for argv in (["backtrack", str(path)], ["backtrack", "--json", "--no-save", str(path)]):
            code, out, err = _cli(argv)
            assert code in (0, 1, 2) and (code == 2 or case.header == "good"), (argv, code, err)
            assert (code == 2) == bool(err), (argv, code, err)  # an error says why; a report is quiet
            if code != 2 and "--json" in argv:
                json.loads(out)
            for text in (out, err):
                if unsafe_characters(text):
                    raise UnsafeText(f"backtrack printed {unsafe_characters(text)!r}")
        if sidecar.exists():
            saved = load_sidecar(sidecar)
            assert saved.unreadable_lines == 0 and [b.status for b in saved.backtracks] == ["complete"], saved
    finally:
        sidecar.unlink(missing_ok=True)


def _good_trace(directory: Path) -> Path:
    """A small valid trace (one finished run) beside the case: the other side of ``diff``."""
    good = directory / "known-good.fptrace.jsonl"
    if not good.exists():
        with TraceWriter.create(good, durability="none", clock=_Clock(), redactor=Redactor.off()) as writer:
            for seq, (cls, body) in enumerate(
                [
                    (
                        RunStartEvent,
                        {"provider": "p", "model": "m", "max_iterations": 3, "system_prompt": "s"},
                    ),
                    (TurnStartEvent, {"turn": 1, "user_message": "hi"}),
                    (PassEvent, {"turn": 1, "iteration": 1, "active_ids": ["a"], "evaluated_total": 1}),
                    (TurnEndEvent, {"turn": 1, "final_content": "done", "iteration_count": 1}),
                    (RunEndEvent, {"status": "completed"}),
                ],
                start=1,
            ):
                writer.append(cls(**_envelope(seq, body)))  # type: ignore[arg-type]
    return good


def _printed(command: str, *texts: str) -> None:
    for text in texts:
        if unsafe_characters(text):
            raise UnsafeText(f"{command} printed {unsafe_characters(text)!r}")


def _quiet_error(argv: list[str], code: int, err: str) -> None:
    # An error (exit 2) says why on stderr, in one line of its own, and never as a traceback.
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        assert err.startswith(f"fpdebug {argv[0]}: error: "), (argv, err)


def check_commands(case: Case, path: Path) -> None:
    """report, export, diff, ledger and import (and view's opening of a file, which diff shares) on
    the case: each exits with one of its documented codes, never raises, prints nothing a terminal
    would obey, and writes valid JSON where it promises JSON."""
    write_case(case, path)
    work = path.parent
    good = _good_trace(work)
    readable = case.header == "good"
    for fmt in ("md", "json"):  # report: 0 written, 2 an error that stopped it
        argv = ["report", "--format", fmt, str(path)]
        code, out, err = _cli(argv)
        assert code in (0, 2) and (code == 2 or readable), (argv, code, err)
        _quiet_error(argv, code, err)
        if code == 0 and fmt == "json":
            json.loads(out)
        _printed("report", out, err)
    if readable:
        _check_streamed_report(path)
    exported = work / "case.otlp.json"  # export: 0 written, 2 an error (to a file: no endpoint)
    exported.unlink(missing_ok=True)
    argv = ["export", "-o", str(exported), str(path)]
    code, out, err = _cli(argv)
    assert code in (0, 2) and (code == 2 or readable), (argv, code, err)
    _quiet_error(argv, code, err)
    if code == 0:
        json.loads(exported.read_text(encoding="ascii"))
    _printed("export", out, err)
    # diff: 0 identical, 1 different, 2 bad input; the case against itself and a known-good trace.
    for a, b, extra in (
        (path, path, ["--json"]),
        (path, path, ["--partial"]),
        (good, path, []),
        (path, good, ["--partial", "--json"]),
    ):
        argv = ["diff", *extra, str(a), str(b)]
        code, out, err = _cli(argv)
        assert code in (0, 1, 2), (argv, code, err)
        _quiet_error(argv, code, err)
        if code != 2 and "--json" in extra:
            json.loads(out)
        _printed("diff", out, err)
    for extra in ([], ["--json"]):  # ledger: 0 always (a file it cannot meter is listed as skipped)
        argv = ["ledger", *extra, str(path)]
        code, out, err = _cli(argv)
        assert code == 0, (argv, code, err)
        if "--json" in extra:
            json.loads(out)
        _printed("ledger", out, err)
    _check_import(path, work / "imported.fptrace.jsonl")
    # Without its header the case is JSON Lines of garbage and records: the importers' detection is tried.
    headless = work / "case.jsonl"
    headless.write_bytes(path.read_bytes().partition(b"\n")[2])
    _check_import(headless, work / "imported.fptrace.jsonl")


def _check_streamed_report(path: Path) -> None:
    """The Markdown report written run by run is byte for byte the one rendered from the whole model."""
    from fpdebug.export.report import report_trace
    from fpdebug.export.report_markdown import render_markdown
    from fpdebug.export.report_stream import write_markdown_report
    from fpdebug.trace.redact import default_redactor

    redactor = default_redactor()
    whole = render_markdown(redactor.redact_value(report_trace(path, find_sidecar=False)))
    pieces: list[str] = []
    with TraceReader(path) as reader:
        write_markdown_report(reader, pieces.append, name=path.name, redactor=redactor)
    assert "".join(pieces) == whole, "the streamed report differs from the whole one"


def _check_import(path: Path, out: Path) -> None:
    """The case as a foreign file: refused (2, nothing written) or imported into a trace that reads."""
    out.unlink(missing_ok=True)
    argv = ["import", "--no-progress", "-o", str(out), str(path)]
    code, stdout, err = _cli(argv)
    assert code in (0, 2), (argv, code, err)
    _quiet_error(argv, code, err)
    _printed("import", stdout, err)
    if code == 2:
        assert not out.exists(), "a refused import left its output behind"
        return
    with TraceReader(out) as reader:
        list(reader.iter_records(0))
        RunModel.build(reader)


def _only_valid_garbage(path: Path) -> bool:
    # A garbage generator can, rarely, produce a line that is a valid record: then validate is right.
    with TraceReader(path) as reader:
        return reader.problems() == []


def check_render(case: Case, path: Path) -> None:
    """The debugger's builders render every row and document of the trace, all of it inert."""
    from rich.console import Console

    from fpdebug.tui.text import Palette
    from fpdebug.tui.widgets.calls import call_document
    from fpdebug.tui.widgets.events import EventList, event_document, summarize
    from fpdebug.tui.widgets.inspector import inspect_iteration
    from fpdebug.tui.widgets.timeline import IterationTimeline
    from fpdebug.views.session import TraceSession

    write_case(case, path)
    if case.header != "good":
        return
    palette = Palette()
    console = Console(width=100, color_system=None, legacy_windows=False)
    with TraceReader(path, index=False) as reader:
        session = TraceSession(reader)
        while not session.index_done:
            session.index_step()
        while session.model_step():
            pass
        events, timeline = EventList(session), IterationTimeline(session)
        events._palette = timeline._palette = palette  # what mounting would compute from the theme
        rows: list[str] = []
        for line in range(session.lines):
            summarize(session.record(line))  # raw untrusted text by design: its callers make it inert
            rows.append(events.render_row(line, 120).plain)
            rows.extend(_document(event_document(session, line, palette), console))
        for row, iteration in enumerate(session.iterations):
            rows.append(timeline.render_row(row, 120).plain)
            rows.extend(_document(inspect_iteration(session, iteration, palette), console))
            rows.extend(_document(call_document(session, iteration, palette), console))
        for text in rows:
            if unsafe_characters(text, newlines=False):
                found = unsafe_characters(text, newlines=False)
                raise UnsafeText(f"a rendered row holds {found!r}: {text!r}")


def _document(blocks: list[object], console: object) -> list[str]:
    rows: list[str] = []
    for block in blocks:
        for expanded in (False, True):
            height = block.height(console, 100, expanded)  # type: ignore[attr-defined]
            for y in range(min(height, 400)):
                rows.append(block.row(console, 100, expanded, y).plain)  # type: ignore[attr-defined]
    return rows


TARGETS: dict[str, Callable[[Case, Path], None]] = {
    "reader": check_reader,
    "cli": check_cli,
    "commands": check_commands,
    "render": check_render,
}
"""Each fuzz target by name."""


# ----------------------------------------------------------------------------------------------
# The long run


@dataclass
class Tally:
    """What one target did."""

    tried: int = 0
    failed: int = 0
    seconds: float = 0.0


def _run_batch(name: str, path: Path, tally: Tally, examples: int) -> None:
    target = TARGETS[name]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases)
    def batch(case: Case) -> None:
        tally.tried += 1
        try:
            target(case, path)
        except Exception:
            tally.failed += 1
            _save(name, case, path, traceback.format_exc())

    batch()


def _save(name: str, case: Case, path: Path, trace: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"{name}-{int(time.time() * 1000)}"
    if path.exists():
        stem.with_suffix(".jsonl").write_bytes(path.read_bytes())
    stem.with_suffix(".txt").write_text(trace)
    print(f"  FAILED ({name}): input saved to {stem.with_suffix('.jsonl')}", file=sys.stderr)


def run(minutes: float, targets: list[str]) -> dict[str, Tally]:
    """Fuzz the targets round-robin for ``minutes``; return what each one did."""
    tallies = {name: Tally() for name in targets}
    deadline = time.monotonic() + minutes * 60
    with tempfile.TemporaryDirectory(prefix="fpdebug-fuzz-") as directory:
        path = Path(directory) / "case.fptrace.jsonl"
        # diff and report cache foreign imports and sidecars there: keep them out of the user's cache.
        os.environ["XDG_CACHE_HOME"] = str(Path(directory) / "cache")
        while time.monotonic() < deadline:
            for name in targets:
                started = time.monotonic()
                _run_batch(name, path, tallies[name], examples=100)
                tallies[name].seconds += time.monotonic() - started
                if time.monotonic() >= deadline:
                    break
    return tallies


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, fuzz, print the tally; exit 1 when anything failed."""
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to run (default 5)")
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all", help="what to fuzz")
    args = parser.parse_args(argv)
    targets = list(TARGETS) if args.target == "all" else [args.target]
    os.environ.setdefault("FPDEBUG_BLOCK_LIVE_CALLS", "1")
    tallies = run(args.minutes, targets)
    total = sum(t.tried for t in tallies.values())
    failed = sum(t.failed for t in tallies.values())
    for name, tally in tallies.items():
        rate = tally.tried / tally.seconds if tally.seconds else 0.0
        print(f"{name:<8} {tally.tried:>8} inputs  {tally.failed:>4} failed  ({rate:,.0f} inputs/s)")
    print(f"{'total':<8} {total:>8} inputs  {failed:>4} failed  in {args.minutes:g} min")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

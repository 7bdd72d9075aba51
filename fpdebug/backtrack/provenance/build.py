"""The chain builder's entry point: :func:`trace_provenance` of one ``llm_call``.

It reads the run once (:class:`~.index.RunIndex`), then walks the explained request piece by piece
(:class:`~.pieces.Pieces`, which asks :class:`~.admission.Admissions` why each rode and
:class:`~.chains.Chains` for its hops), lists what was available but not sent
(:class:`~.missing.Missing`), groups the ranking's input (:class:`~.suspects.Suspects`) and reads
the answer layer's findings. The honesty flags are raised in that order.
"""

from __future__ import annotations

from collections.abc import Iterable

from fpdebug.backtrack.provenance.admission import Admissions
from fpdebug.backtrack.provenance.calls import default_call, find_call_line, recorded_call, render_answer
from fpdebug.backtrack.provenance.chains import Chains
from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.index import RunIndex
from fpdebug.backtrack.provenance.missing import Missing
from fpdebug.backtrack.provenance.models import HonestyFlag, Provenance, ReadProblems, UnsupportedValue
from fpdebug.backtrack.provenance.pieces import Pieces
from fpdebug.backtrack.provenance.suspects import Suspects
from fpdebug.errors import BacktrackError
from fpdebug.trace.model import Run, RunModel
from fpdebug.trace.schema import AnswerAssessmentRow, FindingEvent, LlmCallEvent, RunStartEvent, StatedValue


def trace_provenance(
    model: RunModel,
    *,
    line: int | None = None,
    seq: int | None = None,
    trace: str | None = None,
    max_hops: int = 16,
) -> Provenance:
    """The provenance of one ``llm_call`` (see the module docstring).

    Deterministic: the same trace and call give the same result.

    Args:
        model: A model built over the trace's reader (``RunModel.build(reader)``).
        line: The call's line.
        seq: The call's seq (``fpdebug backtrack --call SEQ``).
        trace: The trace path, recorded in the result.
        max_hops: Longest chain kept per piece; a longer one is cut and flagged ``slice-truncated``.

    Returns:
        The call's pieces, why each rode, the chains, the missing-context candidates, and the
        ranking's input pieces.

    Raises:
        BacktrackError: No such call, no llm_call in the trace, or a call that failed.
    """
    if max_hops < 3:
        raise BacktrackError(f"max_hops must be at least 3 (READ, LANDED, BORN), got {max_hops}")
    default = default_call(model) if line is None and seq is None else None
    call_line = default.line if default is not None else find_call_line(model, line=line, seq=seq)
    call = recorded_call(model, call_line)
    assert call.response is not None  # find_call_line refuses failed calls
    run = model.run(call.run_id)
    if run is None or call.iteration is None:
        raise BacktrackError(f"the llm_call at seq {call.seq} belongs to no iteration of a run")
    context = _call_context(model, run, call_line, call)
    index, run_start = context.index, context.run_start
    chains = Chains(context, max_hops)
    pieces = Pieces(context, Admissions(context), chains).all()
    missing = Missing(context).all({p.injection_id for p in pieces if p.injection_id is not None})
    answers = {line_: render_answer(c.response) for line_, c in index.calls if c.response is not None}
    suspects, origins = Suspects(context, chains, answers).all(pieces, missing)
    assessed, unsupported = _answer_findings(context)
    final = call.route == "final" or (call.route is None and not call.response.tool_calls)
    return Provenance(
        trace=trace,
        run_id=call.run_id,
        agent=run.agent_name,
        provider=call.provider,
        model=call.model,
        turn=call.turn,
        iteration=call.iteration,
        call_line=call_line,
        call_seq=call.seq,
        call_index=call.call_index,
        route=call.route,
        final=final,
        answer=render_answer(call.response),
        request=call.request,
        pieces=pieces,
        missing=missing,
        suspects=suspects,
        origins=origins,
        unsupported=unsupported if final else [],
        assessed=assessed and final,
        flags=[
            HonestyFlag.model_validate({"flag": name, "note": note}) for name, note in context.flags.items()
        ],
        declared_order=[d.id for d in run_start.injections] if run_start else [],
        declared=list(run_start.injections) if run_start else [],
        known_tools=context.known_tools(),
        run_start_line=run.start_line,
        target_note=default.note(call) if default is not None else None,
        read_problems=ReadProblems.of(model),
    )


def _call_context(model: RunModel, run: Run, call_line: int, call: LlmCallEvent) -> CallContext:
    """The explained call's context, with the flags for what the run itself does not let us read."""
    start = model.record(run.start_line) if run.start_line is not None else None
    run_start = start if isinstance(start, RunStartEvent) else None
    index = RunIndex.build(model, run, call_line)
    context = CallContext(
        model=model,
        index=index,
        call_line=call_line,
        call=call,
        run_start=run_start,
        pass_=index.pass_of(call.turn, call.iteration),
    )
    if run_start is None:
        context.flag("untracked-sources", "the run has no readable run_start: declarations are unknown")
    for problem in index.untracked:
        context.flag("untracked-sources", problem)
    return context


def _answer_findings(context: CallContext) -> tuple[bool, list[UnsupportedValue]]:
    """Whether the answer layer assessed the call's answer, and the values it found no source for."""
    turn = context.index.run.turn(context.turn) if context.turn is not None else None
    if turn is None:
        return False, []
    lines = list(turn.lines)
    for iteration in turn.iterations:
        lines.extend(iteration.finding_lines)
    assessed = False
    found: list[UnsupportedValue] = []
    for line in sorted(set(lines)):
        record = context.model.record(line)
        if not isinstance(record, FindingEvent) or record.layer != "answer":
            continue
        if record.iteration is not None and record.iteration != context.iteration:
            continue
        for row in record.rows:
            if isinstance(row, AnswerAssessmentRow):
                assessed = True
                found.extend(_unsupported(row.values, line))
    return assessed, found


def _unsupported(values: Iterable[StatedValue], line: int) -> list[UnsupportedValue]:
    return [
        UnsupportedValue(text=v.text, value_kind=v.kind, start=v.start, end=v.end, line=line)
        for v in values
        if not v.supported
    ]

"""Choosing the call to explain: by line or seq, or by default the final answer of the last turn.

A backtrack must never quietly explain another call than the one the user asked about: when the
final answer's own call cannot be explained, :class:`DefaultCall` says why (docs/backtracking.md §9.2).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from fpdebug.errors import BacktrackError
from fpdebug.trace.model import RunModel
from fpdebug.trace.schema import LlmCallEvent, LlmResponse, ToolCallRecord, TurnEndEvent

# ----------------------------------------------------------------------------------------------
# Answers


def render_answer(response: LlmResponse) -> str:
    """What a call answered, as one text: its content, then ``→ tool(args)`` for each tool call.

    Call ids are left out (they are bookkeeping, not an answer); arguments are JSON with sorted keys,
    so two replies asking for the same calls render the same.

    Args:
        response: The reply.

    Returns:
        The content alone for a final answer; otherwise the content (if any) and the calls.
    """
    if not response.tool_calls:
        return response.content
    calls = "; ".join(_render_call(call) for call in response.tool_calls)
    content = response.content.rstrip()
    return f"{content}\n→ {calls}" if content else f"→ {calls}"


def _render_call(call: ToolCallRecord) -> str:
    if call.raw_args is not None:
        return f"{call.name}({call.raw_args})"
    return f"{call.name}({json.dumps(call.args, sort_keys=True, ensure_ascii=False)})"


# ----------------------------------------------------------------------------------------------
# Choosing the call


def call_lines(model: RunModel) -> Iterator[int]:
    """Every ``llm_call`` line of the trace, in file order."""
    lines: list[int] = []
    for run in model.runs:
        for iteration in run.iterations():
            lines.extend(iteration.llm_lines)
    yield from sorted(lines)


@dataclass(frozen=True)
class DefaultCall:
    """The call explained by default, and why it is not the final answer, when it is not."""

    line: int
    """The ``llm_call`` line."""
    problem: str | None = None
    """Why the final answer's own call could not be explained (unreadable, torn, failed, missing), or
    that a later call is unreadable; ``None`` when the explained call is the final answer as recorded
    (or the latest answer of a run still in progress, with nothing unreadable after it)."""
    fell_back: bool = False
    """The line is not the ended turn's final call (an earlier call with a reply was taken)."""

    def note(self, call: LlmCallEvent) -> str | None:
        """The warning to show with the explanation of ``call`` (this default's call), if any."""
        if self.problem is None:
            return None
        if not self.fell_back:
            return f"{self.problem}: it may have held a later answer than the one explained here"
        return (
            f"this is not the last answer the trace recorded: {self.problem}. Explaining llm_call "
            f"#{call.call_index} (seq {call.seq}), the latest call with a readable reply, instead; "
            "name the call to explain with --call SEQ (B on a calls row in the debugger)"
        )


def _reply_line(model: RunModel, lines: Iterable[int]) -> int | None:
    for line in lines:
        record = model.record(line)
        if isinstance(record, LlmCallEvent) and record.response is not None:
            return line
    return None


def _clipped(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _damage_after(model: RunModel, line: int, *, fallback: bool) -> str | None:
    """What after ``line`` may have been a later answer: unreadable calls, failed calls, a torn tail."""
    unreadable = _unreadable_after(model, line, fallback=fallback)
    found = [unreadable] if unreadable is not None else []
    if fallback:
        found.extend(_unanswered_after(model, line))
    return "; ".join(found) or None


def _unreadable_after(model: RunModel, line: int, *, fallback: bool) -> str | None:
    """The last unreadable ``llm_call`` after ``line`` (or, on a fallback, any record that may be a
    ``turn_end``), and how many more there are."""
    unreadable = []
    for bad in model.invalid_lines:
        if bad <= line:
            continue
        record = model.record(bad)
        kind = getattr(record, "kind", None)
        if kind == "llm_call" or (fallback and kind in (None, "turn_end")):
            unreadable.append((bad, kind, getattr(record, "error", "")))
    if not unreadable:
        return None
    bad, kind, error = unreadable[-1]
    what = f"the {kind} record" if kind else "the record"
    more = f" (and {len(unreadable) - 1} more unreadable line(s) after it)" if len(unreadable) > 1 else ""
    return f"{what} at line {bad} is unreadable ({_clipped(error, 120)}){more}"


def _unanswered_after(model: RunModel, line: int) -> list[str]:
    """A later ``llm_call`` without a reply, and a torn tail: answers that may have been lost."""
    found: list[str] = []
    failed = sorted(
        later
        for run in model.runs
        for iteration in run.iterations()
        for later in iteration.llm_lines
        if later > line
    )
    if failed:
        record = model.record(failed[-1])
        error = record.error if isinstance(record, LlmCallEvent) else None
        why = f" ({_clipped(f'{error.type}: {error.message}')})" if error is not None and error.type else ""
        found.append(f"the llm_call at line {failed[-1]} has no reply{why}")
    torn = getattr(model.source, "torn_tail", None)
    tail = torn() if callable(torn) else None
    if tail is not None:
        found.append(
            f"the trace ends in a torn record at line {tail.line} ({tail.length} bytes after "
            "the last newline: a writer stopped mid-record, or is still writing)"
        )
    return found


def default_call(model: RunModel) -> DefaultCall:
    """The call that produced the final answer of the last turn, and what kept it from being explained.

    The last run's last turn that ended: the ``llm_call`` of its final iteration that routed
    ``final``. A run whose last turn did not end falls back to its latest call that has a reply.
    When the explained call is not that final answer because the final call is unreadable, torn,
    failed or missing (or a later ``llm_call`` is unreadable), :attr:`DefaultCall.problem` says so:
    a backtrack must never quietly explain another call than the one the user asked about.

    Raises:
        BacktrackError: The trace has no ``llm_call`` with a reply.
    """
    skipped: list[str] = []
    for run in reversed(model.runs):
        for turn in reversed(run.turns):
            if turn.end_line is not None:
                end = model.record(turn.end_line)
                number = end.iteration_count if isinstance(end, TurnEndEvent) else None
                iteration = turn.iteration(number) if number is not None else None
                line = _reply_line(model, reversed(iteration.llm_lines)) if iteration is not None else None
                if line is not None:
                    return DefaultCall(line, _damage_after(model, line, fallback=False), fell_back=False)
                if number is None:
                    skipped.append(
                        f"the turn_end of turn {turn.number} at line {turn.end_line} is unreadable"
                    )
                else:
                    skipped.append(
                        f"turn {turn.number} ended after iteration {number}, but no llm_call "
                        "with a reply was read in that iteration"
                    )
            line = _reply_line(
                model,
                (line for iteration in reversed(turn.iterations) for line in reversed(iteration.llm_lines)),
            )
            if line is not None:
                damage = _damage_after(model, line, fallback=True)
                problems = [*skipped, damage] if damage else skipped
                return DefaultCall(line, "; ".join(problems) or None, fell_back=True)
    raise BacktrackError("the trace has no llm_call with a reply: there is no answer to explain")


def default_call_line(model: RunModel) -> int:
    """The call that produced the final answer of the last turn (the default to explain).

    The line of :func:`default_call` (which also says why, when it is not the final answer).

    Raises:
        BacktrackError: The trace has no ``llm_call`` with a reply.
    """
    return default_call(model).line


def find_call_line(model: RunModel, *, line: int | None = None, seq: int | None = None) -> int:
    """The line of the ``llm_call`` to explain.

    Args:
        model: The trace's model (built over a reader).
        line: The record's line.
        seq: The record's ``seq`` (equal to its line in a healthy trace).

    Returns:
        The line; the default call (:func:`default_call_line`) when neither is given.

    Raises:
        BacktrackError: The line or seq is not an ``llm_call`` (the message lists the calls), or the
            call failed and has no reply.
    """
    if line is None and seq is None:
        return default_call_line(model)
    found: int | None = None
    if line is not None:
        found = line if 0 < line < model.lines_fed else None
        what = f"line {line}"
    else:
        what = f"seq {seq}"
        assert seq is not None
        if 0 < seq < model.lines_fed and getattr(model.record(seq), "seq", None) == seq:
            found = seq
        else:  # a damaged trace: seq and line disagree, so look the seq up among the calls
            found = next((c for c in call_lines(model) if getattr(model.record(c), "seq", None) == seq), None)
    record = model.record(found) if found is not None else None
    if not isinstance(record, LlmCallEvent):
        seqs = [str(getattr(model.record(c), "seq", c)) for c in call_lines(model)]
        if not seqs:
            raise BacktrackError("the trace has no llm_call record: there is no answer to explain")
        kind = getattr(record, "kind", None) if record is not None else None
        is_what = f" is a {kind} record," if kind else " is not in the trace;"
        shown = ", ".join(seqs[:20]) + (", …" if len(seqs) > 20 else "")
        raise BacktrackError(f"{what}{is_what} not an llm_call; the llm_call seqs are: {shown}")
    assert found is not None
    if record.response is None:
        error = f" ({record.error.type}: {record.error.message})" if record.error is not None else ""
        raise BacktrackError(f"the llm_call at seq {record.seq} failed{error}: there is no answer to explain")
    return found


def recorded_call(model: RunModel, line: int) -> LlmCallEvent:
    """The ``llm_call`` record on ``line``.

    Raises:
        BacktrackError: The line holds something else.
    """
    record = model.record(line)
    if not isinstance(record, LlmCallEvent):
        raise BacktrackError(f"line {line} is not an llm_call record")
    return record

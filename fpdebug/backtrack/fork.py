"""A fork from any pass: the recorded run up to pass N, then edits, then a new continuation.

This is the recordedChat ``fork`` of docs/backtracking.md §9.12, generalised to any pass of a run.

**Pass N** is the Evaluate pass the debugger shows as ``pass N``: the ``iteration`` N of one turn
(1-based), whose LLM call is the ``llm_call`` recorded at ``turn T, iteration N``. The calls
*before* the fork point are every call of the run's earlier turns and the calls of iterations
``1..N-1`` of turn T.

How a fork runs (:func:`run_fork`):

1. The parent run's agent is rebuilt from its recorded scenario or module (``run_start.options``,
   loaded through the caller's :data:`~fpdebug.backtrack.rerun.ModuleLoader`, as a rerun loads it).
   An imported run (agentfootprint, OTLP) recorded no such configuration and is refused.
2. It runs the parent's user messages again. Its provider (:class:`ForkProvider`) answers the
   calls before the fork point from the recording, through the replay provider: each request must
   equal the recorded one, byte for byte, and nothing is live.
3. From pass N on, every composed request passes the edits (:func:`edit_request`, through
   :meth:`~fpdebug.engine.agent.Agent.edit_requests`), so the ``llm_call`` records what was sent;
   the model is the continuation chosen: ``replay`` (the recording answers while the requests still
   match it; the first that does not ends the run with ``diverged at call K``), ``scripted`` (the
   scenario's scripted model) or a live one (only when the caller allows it).
4. The new trace's ``run_start.fork_of`` names the parent trace, run, turn, pass, edits and the
   continuation's provider.

The edits (:class:`ForkEdit`), each checked against what the parent run declared and recorded
(:func:`check_edits`): ``drop-injection`` (active at pass N: its segments, messages and tools leave
every request from N on), ``add-injection`` (declared, not active at N: its declared content joins
every request from N on), ``tool-result`` (a call answered before N: its result's text in every
request from N on), ``grant-lease`` (a declared injection: served at pass N only, as a ``next-call``
lease serves one pass), ``revoke-lease`` (a lease granted before N in the turn: its injection leaves
every request from N on), ``model`` / ``provider`` (the continuation's), ``user-message`` (at
pass 1 the turn starts with it; at a later pass the turn's message in every request from N on). The
``llm_call`` shows what the model was actually sent; the ``pass`` events from N on record the
injection edits (:mod:`fpdebug.backtrack.fork_passes`: a dropped injection skipped as ``fork-edit``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from fpdebug.backtrack.rerun import apply_specs
from fpdebug.backtrack.suspects import InjectionSpec, RestoreSpec
from fpdebug.errors import BacktrackError
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AskAnswerEvent,
    ForkEditKind,
    ForkEditRecord,
    LeaseGrantEvent,
    LlmCallEvent,
    LlmRequest,
    RunStartEvent,
    ToolSchema,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "EDIT_KINDS",
    "EditKind",
    "ForkEdit",
    "ForkPoint",
    "check_edits",
    "edit_request",
    "load_fork_point",
]

EditKind = ForkEditKind
"""What a fork may edit at its pass (the trace records the same kinds)."""

EDIT_KINDS: tuple[str, ...] = get_args(EditKind)
"""Every edit kind, in the order the guide lists them."""


@dataclass(frozen=True)
class ForkEdit:
    """One edit at the fork's pass."""

    kind: EditKind
    """What is edited."""
    target: str | None = None
    """The injection, lease (its injection id) or tool call id; ``None`` for model, provider, user message."""
    value: str | None = None
    """The new text (tool result, user message) or name (model, provider)."""

    def record(self) -> ForkEditRecord:
        """The edit as ``run_start.fork_of.edits`` records it."""
        return ForkEditRecord(kind=self.kind, target=self.target, value=self.value)

    def describe(self) -> str:
        """``drop-injection refund-policy``, ``tool-result call_2 = '…'``, ``model = 'm'``."""
        parts: list[str] = [self.kind]
        if self.target is not None:
            parts.append(self.target)
        if self.value is not None:
            shown = self.value if len(self.value) <= 60 else self.value[:59] + "…"
            parts.append(f"= {shown!r}")
        return " ".join(parts)


@dataclass(frozen=True)
class ForkPoint:
    """What the parent recorded up to and at the fork's pass (:func:`load_fork_point`)."""

    trace: Path
    """The parent trace."""
    run_start: RunStartEvent
    """The parent run's declaration."""
    turn: int
    """The fork's turn."""
    at_pass: int
    """The fork's pass (the iteration of that turn)."""
    calls: tuple[LlmCallEvent, ...]
    """Every call of the parent run, in order."""
    before: int
    """How many of them come before the fork point (they replay)."""
    user_messages: tuple[str, ...]
    """The parent's user messages, one per turn."""
    leases: tuple[str, ...]
    """Injection ids leased in the fork's turn before its pass (what ``revoke-lease`` may name)."""
    final_answers: tuple[str, ...]
    """The parent's final answers, one per finished turn."""
    user_answers: tuple[AskAnswerEvent, ...] = ()
    """The user's answers to the parent's argument asks, in order (the fork gives them again)."""

    @property
    def request(self) -> LlmRequest:
        """The request the parent sent at the fork's pass."""
        return self.calls[self.before].request

    @property
    def run_id(self) -> str:
        """The parent run's id."""
        return self.run_start.run_id

    def active(self) -> list[str]:
        """Injection ids that contributed to the request at the fork's pass, in request order."""
        request = self.request
        ids = [s.injection_id for s in request.system_prompt]
        ids += [m.injection_id for m in request.messages]
        ids += [t.injection_id for t in request.tools]
        return list(dict.fromkeys(i for i in ids if i is not None))

    def answered_calls(self) -> list[str]:
        """Tool call ids whose results the request at the fork's pass carries."""
        return [m.tool_call_id for m in self.request.messages if m.role == "tool" and m.tool_call_id]

    def choices(self) -> dict[str, list[str]]:
        """What each targeted edit may name at this pass (for an edit screen, and for messages).

        ``drop-injection``: the active injections; ``add-injection`` and ``grant-lease``: the declared
        ones not active that a request can take (not templated, something to send);
        ``revoke-lease``: the leases granted before the pass; ``tool-result``: the answered calls.
        """
        active = set(self.active())
        addable = [
            d.id
            for d in self.run_start.injections
            if d.id not in active and not d.templated and (d.system_prompt or d.messages or d.tool_names)
        ]
        return {
            "drop-injection": self.active(),
            "add-injection": addable,
            "grant-lease": list(addable),
            "revoke-lease": list(self.leases),
            "tool-result": self.answered_calls(),
        }

    def known_tools(self) -> list[ToolSchema]:
        """Every tool schema the run declared or offered (for restorations)."""
        tools = list(self.run_start.tools)
        for call in self.calls:
            tools += [t for t in call.request.tools if all(t.name != k.name for k in tools)]
        return tools


# ----------------------------------------------------------------------------------------------
# Loading the fork point


def _refuse_imported(reader: TraceReader, trace: Path) -> None:
    source = reader.header.source
    if source is not None:
        raise BacktrackError(
            f"{trace.name} was imported from {source.format}: the run's configuration (its agent, tools "
            "and scripted model) was not recorded in a form fpdebug can rebuild, so it cannot be forked; "
            "fork a run fpdebug's engine wrote (fpdebug run / fpdebug demo)"
        )


def _pick_run(starts: Sequence[RunStartEvent], run_id: str | None, trace: Path) -> RunStartEvent:
    ids = [s.run_id for s in starts]
    if not starts:
        raise BacktrackError(f"{trace.name} holds no run_start: there is no run to fork")
    if run_id is None:
        if len(starts) > 1:
            raise BacktrackError(
                f"{trace.name} holds {len(starts)} runs ({', '.join(ids)}); name one with --run"
            )
        return starts[0]
    for start in starts:
        if start.run_id == run_id:
            return start
    raise BacktrackError(
        f"{trace.name} has no run {run_id!r}{_suggest(run_id, ids)} (runs: {', '.join(ids)})"
    )


def _suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def load_fork_point(
    trace: str | Path, *, at_pass: int, turn: int | None = None, run_id: str | None = None
) -> ForkPoint:
    """Read what the parent recorded, and check that the fork's pass exists.

    Args:
        trace: The parent trace.
        at_pass: The pass to fork at (the iteration of the turn, 1-based).
        turn: The turn; may be omitted when the run has one turn.
        run_id: The run; may be omitted when the trace holds one run.

    Raises:
        BacktrackError: An imported trace, no such run or turn, or a pass out of range.
        TraceError: The trace cannot be read.
    """
    path = Path(trace)
    with TraceReader(path) as reader:
        _refuse_imported(reader, path)
        records = list(reader)
    starts = [r for r in records if isinstance(r, RunStartEvent)]
    start = _pick_run(starts, run_id, path)
    mine = [r for r in records if getattr(r, "run_id", None) == start.run_id]
    calls = tuple(r for r in mine if isinstance(r, LlmCallEvent))
    messages = tuple(r.user_message for r in mine if isinstance(r, TurnStartEvent))
    turn = _chosen_turn(turn, len(messages), start.run_id)
    passes = sorted({c.iteration for c in calls if c.turn == turn and c.iteration is not None})
    if at_pass not in passes:
        shown = f"passes 1..{passes[-1]}" if passes else "no recorded call"
        raise BacktrackError(
            f"pass {at_pass} is out of range: turn {turn} of run {start.run_id!r} has {shown}"
        )
    before = next(
        i
        for i, c in enumerate(calls)
        if c.turn == turn and c.iteration is not None and c.iteration >= at_pass
    )
    leases = _leases_before(mine, turn, at_pass)
    answers = tuple(r.final_content for r in mine if isinstance(r, TurnEndEvent))
    asked = tuple(r for r in mine if isinstance(r, AskAnswerEvent))
    return ForkPoint(path, start, turn, at_pass, calls, before, messages, leases, answers, asked)


def _leases_before(records: Sequence[object], turn: int, at_pass: int) -> tuple[str, ...]:
    """Injection ids a lease was granted on in ``turn`` before ``at_pass``, once each."""
    return tuple(
        dict.fromkeys(
            r.lease.instruction_id
            for r in records
            if isinstance(r, LeaseGrantEvent) and r.turn == turn and (r.iteration or 0) < at_pass
        )
    )


def _chosen_turn(turn: int | None, turns: int, run_id: str) -> int:
    if turns == 0:
        raise BacktrackError(f"run {run_id!r} recorded no turn: there is no pass to fork at")
    if turn is None:
        if turns > 1:
            raise BacktrackError(
                f"run {run_id!r} has {turns} turns; name the fork's turn with --turn 1..{turns}"
            )
        return 1
    if not 1 <= turn <= turns:
        raise BacktrackError(f"turn {turn} is out of range: run {run_id!r} has turns 1..{turns}")
    return turn


# ----------------------------------------------------------------------------------------------
# Checking the edits


def check_edits(point: ForkPoint, edits: Sequence[ForkEdit]) -> None:
    """Refuse an edit that does not fit what the parent declared and recorded at the fork's pass.

    Raises:
        BacktrackError: No edit, an unknown id (with the closest known one), an injection already
            active (or not active), a call not answered before the pass, a lease not granted, two
            edits of one thing, or an injection that cannot be restored.
    """
    if not edits:
        raise BacktrackError(
            "a fork needs at least one edit (--drop-injection, --add-injection, --tool-result, "
            "--grant-lease, --revoke-lease, --model, --provider or --user-message)"
        )
    seen: set[tuple[str, str | None]] = set()
    for edit in edits:
        key = (edit.kind, edit.target)
        if key in seen:
            raise BacktrackError(f"{edit.describe()}: given twice")
        seen.add(key)
        _check_edit(point, edit)
    # A restoration must be one the request can take (declared, not templated, something to send).
    edit_request(point.request, edits, point=point, at_fork_pass=True)


def _check_edit(point: ForkPoint, edit: ForkEdit) -> None:
    declared = [d.id for d in point.run_start.injections]
    active = point.active()
    where = f"pass {point.at_pass} of turn {point.turn}"
    target = edit.target or ""
    if edit.kind in ("drop-injection", "add-injection", "grant-lease") and target not in declared:
        raise BacktrackError(
            f"--{edit.kind} {target!r}: the run declares no such injection{_suggest(target, declared)} "
            f"(declared: {', '.join(declared) or 'none'})"
        )
    if edit.kind == "drop-injection" and target not in active:
        raise BacktrackError(
            f"--drop-injection {target!r}: it is not active at {where} (active: {', '.join(active) or 'none'})"
        )
    if edit.kind in ("add-injection", "grant-lease") and target in active:
        raise BacktrackError(f"--{edit.kind} {target!r}: it is already active at {where}")
    if edit.kind == "revoke-lease" and target not in point.leases:
        leases = list(point.leases)
        raise BacktrackError(
            f"--revoke-lease {target!r}: no lease on it was granted before {where}{_suggest(target, leases)} "
            f"(leases: {', '.join(leases) or 'none'})"
        )
    if edit.kind == "tool-result" and target not in point.answered_calls():
        calls = point.answered_calls()
        raise BacktrackError(
            f"--tool-result {target!r}: no tool call answered before {where} has that id"
            f"{_suggest(target, calls)} (calls: {', '.join(calls) or 'none'})"
        )
    if edit.kind in ("model", "provider", "user-message") and not (edit.value or "").strip():
        raise BacktrackError(f"--{edit.kind}: the value is empty")


# ----------------------------------------------------------------------------------------------
# Applying the edits


def edit_request(
    request: LlmRequest, edits: Sequence[ForkEdit], *, point: ForkPoint, at_fork_pass: bool
) -> LlmRequest:
    """``request`` with the edits applied (see the module docstring for each kind).

    Args:
        request: A request composed at or after the fork's pass.
        edits: The fork's edits.
        point: The parent's fork point (declarations, tool schemas, user message).
        at_fork_pass: The request is the fork pass's own (a granted lease serves that pass only).

    Raises:
        BacktrackError: An injection that cannot be restored.
    """
    request = _injection_edits(request, edits, point=point, at_fork_pass=at_fork_pass)
    return _message_edits(request, edits, point=point)


def _injection_edits(
    request: LlmRequest, edits: Sequence[ForkEdit], *, point: ForkPoint, at_fork_pass: bool
) -> LlmRequest:
    """Drops (injections, revoked leases) then restorations (added injections, granted leases)."""
    drops = [e.target for e in edits if e.kind in ("drop-injection", "revoke-lease") and e.target]
    adds = [e.target for e in edits if e.kind == "add-injection" and e.target]
    if at_fork_pass:
        adds += [e.target for e in edits if e.kind == "grant-lease" and e.target]
    specs: list[InjectionSpec | RestoreSpec] = []
    if drops:
        specs.append(InjectionSpec(exclude_injection_ids=drops))
    specs += [RestoreSpec(unit_kind="injection", unit_id=target) for target in adds]
    if not specs:
        return request
    return apply_specs(request, specs, declared=point.run_start.injections, known_tools=point.known_tools())


def _message_edits(request: LlmRequest, edits: Sequence[ForkEdit], *, point: ForkPoint) -> LlmRequest:
    """Replaced tool results, and the turn's replaced user message."""
    results = {e.target: e.value or "" for e in edits if e.kind == "tool-result" and e.target}
    user = next((e.value for e in edits if e.kind == "user-message"), None)
    if not results and user is None:
        return request
    recorded_user = point.user_messages[point.turn - 1]
    messages = list(request.messages)
    for index, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id in results:
            messages[index] = message.model_copy(update={"content": results[message.tool_call_id]})
    if user is not None:
        # The turn's own message is the last plain user message with the recorded text.
        at = max(
            (
                i
                for i, m in enumerate(messages)
                if m.role == "user" and m.injection_id is None and m.content == recorded_user
            ),
            default=None,
        )
        if at is not None:
            messages[at] = messages[at].model_copy(update={"content": user})
    return request.model_copy(update={"messages": messages})

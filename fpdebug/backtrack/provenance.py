"""Provenance of one LLM call, from the trace alone: every piece that rode it, why, and the chain back.

For a chosen ``llm_call`` (by line or seq; by default the call that produced the final answer of
the last turn) :func:`trace_provenance` lists every piece of context the model read, in the order
it read them:

- **system-prompt segments**: the agent's base prompt, each active injection's text, the park card;
- **messages**: the user's message (← its ``turn_start``), earlier replies (← the ``llm_call`` that
  wrote them), tool results (← their ``tool_result``), messages an injection delivered;
- **tool schemas**: the agent's own tools, a skill's tools (← its injection), ``read_skill``.

For each piece it says WHY it was there, as recorded by the pass (``pass.reasons``): its trigger
(always, rule, on-tool-return of which call, llm-activated by which ``read_skill`` call), a lease
(granted by which tool call at which iteration, delivery lease, tenant), the cursor (how it got
there: a route edge fired by which tool result, a model pick, a tool proposal, an entry and its
witness), and the engagement standing of its map. Then the chain back, hop by hop, in the walk of
the debugger's "why" pane::

    ANSWER ← READ call ← LANDED slot ← ALLOWED admission ← (GRANTED ← RETURNED ← ASKED …) ← BORN

``BORN`` is the piece's declaration in ``run_start`` (or the record that wrote it: a
``turn_start``, an earlier ``llm_call``, the kernel's ``engagement``). A chain stops at the LLM
call that asked for a tool (``ASKED``): why THAT call asked is the provenance of that call, one
``fpdebug backtrack --call SEQ`` away (one hop per iteration, docs/backtracking.md §9.2).

It also lists what was **available but not sent** at that call (skipped, parked, leases that ended
before it, declared injections whose trigger did not fire): candidates for missing context.

Everything here is correlational (docs/backtracking.md §9.1): a chain says how a piece got on the wire, never
that it changed the answer. :attr:`Provenance.suspects` feeds
:func:`~fpdebug.backtrack.suspects.rank_pieces`; only a rerun (:mod:`~fpdebug.backtrack.rerun`)
can say "because".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.suspects import EdgeHop, Piece
from fpdebug.errors import BacktrackError, FpdebugError
from fpdebug.trace.model import Iteration, Run, RunModel
from fpdebug.trace.schema import (
    ActiveReason,
    AnswerAssessmentRow,
    CursorMoveEvent,
    EngagementEvent,
    FindingEvent,
    InjectionDecl,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    Message,
    PassEvent,
    RunStartEvent,
    StatedValue,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "PARK_CARD_ID",
    "READ_SKILL",
    "Admission",
    "CallRef",
    "ContextPiece",
    "CursorOrigin",
    "DefaultCall",
    "EngagementStanding",
    "HonestyFlag",
    "HonestyFlagName",
    "Hop",
    "HopVerb",
    "LeaseOrigin",
    "MissingPiece",
    "PieceOrigin",
    "Provenance",
    "ReadProblems",
    "UnsupportedValue",
    "call_lines",
    "default_call",
    "default_call_line",
    "find_call_line",
    "recorded_call",
    "render_answer",
    "trace_provenance",
]

PARK_CARD_ID = "agentfootprint:map-status"
"""The id the kernel's park card rides under (``fpdebug.engine.evaluate.PARK_CARD_ID``)."""

READ_SKILL = "read_skill"
"""The built-in tool a skill map offers for model picks."""

HopVerb: TypeAlias = Literal[
    "READ",
    "LANDED",
    "ALLOWED",
    "GRANTED",
    "RETURNED",
    "ASKED",
    "OFFERED",
    "MOVED",
    "ENGAGED",
    "BORN",
    "TRUNCATED",
]
"""One step of a chain, read right to left from the answer: the call READ the piece, which LANDED in
a slot, was ALLOWED by a trigger, lease or cursor, whose lease was GRANTED when a tool RETURNED, which
an LLM call ASKED for, a tool that was OFFERED by an injection or the agent; the cursor MOVED; the map
stood ENGAGED; the piece was BORN in a declaration. TRUNCATED marks a chain cut by ``max_hops``."""

HonestyFlagName: TypeAlias = Literal[
    "slice-truncated",
    "untracked-sources",
    "no-control-deps",
    "no-read-tracking",
    "no-llm-call-ids",
    "baseline-unstable",
]
"""The honesty flags of docs/backtracking.md §9.1."""

Via: TypeAlias = Literal[
    "always",
    "rule",
    "cursor",
    "on-tool-return",
    "llm-activated",
    "lease",
    "park-card",
    "base",
    "user",
    "conversation",
    "tool-result",
    "registry",
    "unknown",
]
"""What admitted a piece: the pass's reason for an injection, or a baseline origin."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HonestyFlag(_Frozen):
    """A limit of what the trace lets fpdebug say (docs/backtracking.md §9.1)."""

    flag: HonestyFlagName
    """Which limit."""
    note: str
    """What it means here."""


class Hop(_Frozen):
    """One step of a piece's chain back from the call that read it."""

    verb: HopVerb
    """What this step did."""
    text: str
    """One line, in words (trace text in it is raw: display it through ``inert``)."""
    level: int = 0
    """0 on the piece's own chain; 1 for a step that explains a step of level 0 (the tool's offer)."""
    line: int | None = None
    """The trace line of the record behind the step."""
    seq: int | None = None
    """That record's ``seq``."""
    turn: int | None = None
    """Its turn."""
    iteration: int | None = None
    """Its iteration."""
    ref: str | None = None
    """The id it names (a tool call id, an injection id, a map id)."""


class CallRef(_Frozen):
    """A tool call as the trace recorded it: the result, and the LLM call that asked for it."""

    tool_name: str
    """The tool."""
    tool_call_id: str | None = None
    """The call id."""
    turn: int | None = None
    """The turn of the call."""
    iteration: int | None = None
    """The iteration whose batch ran it."""
    result_line: int | None = None
    """Its ``tool_result`` record, when found."""
    asked_line: int | None = None
    """The ``llm_call`` whose reply asked for it, when found."""
    asked_index: int | None = None
    """That call's ``call_index``."""


class LeaseOrigin(_Frozen):
    """The lease that served an injection on the explained pass."""

    instruction_id: str
    """The leased injection."""
    delivery_lease: str
    """``next-call`` or ``until-skill-exit``."""
    tenant: str | None = None
    """The tenant skill at grant (``None``: granted without one)."""
    granted_by: CallRef
    """The tool call whose effect granted it."""
    grant_line: int | None = None
    """The ``lease_grant`` record."""


class CursorOrigin(_Frozen):
    """How the cursor came to stand on a skill at the explained pass."""

    skill_id: str
    """Where the cursor stands."""
    by: str
    """The clause of the move that put it there (``entry``, ``route``, ``model-pick``…)."""
    strength: str | None = None
    """That move's strength."""
    move_line: int | None = None
    """The ``cursor_move`` record of that move."""
    turn: int | None = None
    """Its turn."""
    iteration: int | None = None
    """Its pass."""
    stays: int = 0
    """Passes the cursor then stayed (``stay``) until the explained pass."""
    from_skill: str | None = None
    """Where it came from."""
    witness: str | None = None
    """The matched text of an entry, when it carried one."""
    keyword: str | None = None
    """The keyword that matched, for keyword entries."""
    entry_kind: str | None = None
    """``entry`` moves: the entry's kind."""
    edge: str | None = None
    """``route`` moves: the edge, ``from→to``."""
    fired_by: CallRef | None = None
    """``route`` moves: the tool result whose return fired the edge; ``tool-proposal``: the proposer."""
    picked_by: CallRef | None = None
    """``model-pick`` moves: the ``read_skill`` call."""
    note: str | None = None
    """What could not be found, when something could not."""


class EngagementStanding(_Frozen):
    """A mounted map's standing after the explained pass (docs/context-model.md §6.3)."""

    map_id: str
    """The map."""
    standing: str
    """``engaged`` or ``parked``."""
    by: str
    """Eligibility: why it is served now."""
    since: int
    """When the standing began."""
    founded_by: str
    """Founding strength."""
    founded_at: int
    """Founding iteration."""
    founded_on: str | None = None
    """The member the cursor was on at founding."""
    idle: int = 0
    """Consecutive idle passes."""
    change: str | None = None
    """The change this pass (``engaged``, ``reengaged``, ``parked``…), if any."""
    reengaged_by: CallRef | None = None
    """A ``read_skill`` call whose pick re-engaged the map for this pass."""
    line: int | None = None
    """The ``engagement`` record."""


class Admission(_Frozen):
    """Why a piece rode the explained call."""

    via: Via
    """The pass's reason for an injection, or the baseline origin of any other piece."""
    trigger: str | None = None
    """The injection's declared trigger kind."""
    trigger_description: str | None = None
    """The rule's description, when the author gave one."""
    activation: CallRef | None = None
    """``on-tool-return`` / ``llm-activated``: the call that activated it."""
    lease: LeaseOrigin | None = None
    """``lease``: the lease that served it."""
    cursor: CursorOrigin | None = None
    """The cursor's standing on this piece's skill, when it is a skill-map node the cursor is on."""
    engagement: EngagementStanding | None = None
    """Its map's standing, when it is a member of a mounted map (or the park card's map)."""
    pass_line: int | None = None
    """The ``pass`` record that admitted it."""


class ContextPiece(_Frozen):
    """One piece of what the explained call sent, and how it got there."""

    id: str
    """``system-prompt[i]``, ``messages[i]`` or ``tools[i]``: its address in the request."""
    slot: Literal["system-prompt", "messages", "tools"]
    """The slot it rode in."""
    position: int
    """Its index in that slot."""
    kind: Literal[
        "base",
        "injection",
        "memory",
        "park-card",
        "user",
        "assistant",
        "tool-result",
        "tool-schema",
        "message",
    ]
    """What it is."""
    source: str
    """The flavor or baseline source (``fact``, ``skill``, ``base``, ``user``, ``registry``…)."""
    injection_id: str | None = None
    """The injection that contributed it."""
    tool_name: str | None = None
    """The tool (tool results and schemas)."""
    tool_call_id: str | None = None
    """The call a tool result answers."""
    text: str
    """The exact text the model read (a schema: its name and description)."""
    admission: Admission | None = None
    """Why it rode; ``None`` when the trace does not say (an untracked source)."""
    reason: str
    """One sentence: ``rode because …``."""
    chain: list[Hop] = Field(default_factory=list)
    """The hops from the call back to its declaration (READ first, BORN last)."""
    origin_line: int | None = None
    """The record that wrote it (pass, turn_start, llm_call, tool_result)."""
    origin_iteration: int | None = None
    """The iteration that wrote it."""
    suspect_id: str | None = None
    """The :class:`~fpdebug.backtrack.suspects.Piece` it belongs to; ``None`` for baseline context
    (the base prompt, the user's message, earlier replies, agent tool schemas), which is never a
    suspect (docs/backtracking.md §9.4)."""


class MissingPiece(_Frozen):
    """Context that was available at the explained call but NOT sent: a missing-context candidate."""

    id: str
    """``missing:injection:<id>`` or ``missing:tool:<name>`` (the ranking's piece id)."""
    kind: Literal["injection", "memory", "tool"]
    """What would be put back."""
    injection_id: str | None = None
    """The injection (injection and memory candidates)."""
    tool_name: str | None = None
    """The tool (tool candidates)."""
    flavor: str | None = None
    """The injection's flavor."""
    reason: Literal["skipped", "parked", "lease-ended", "not-triggered", "excluded", "tool-parked"]
    """Why it was not sent."""
    detail: str
    """One sentence."""
    text: str | None = None
    """What a restoration would send (the declared prompt and messages, or the tool's schema)."""
    restorable: bool
    """Whether a rerun can put it back (a templated prompt or an unknown schema cannot be)."""
    line: int | None = None
    """The record that says why (the pass, the lease prune, the engagement)."""


class PieceOrigin(_Frozen):
    """How one ranking piece (a suspect) got on the wire: what a suspect card shows."""

    piece_id: str
    """The :class:`~fpdebug.backtrack.suspects.Piece` id."""
    label: str
    """``injection 'x' (fact)``, ``tool 'lookup_order'``…"""
    reason: str
    """``rode because …`` (or ``not sent: …`` for a missing piece)."""
    chain: list[Hop] = Field(default_factory=list)
    """Its chain (the first part's, for a piece made of several parts)."""
    born: Hop | None = None
    """Its BORN hop."""


class UnsupportedValue(_Frozen):
    """A value the answer states that no source row holds (the answer layer's ``finding``)."""

    text: str
    """The value as written."""
    value_kind: str
    """``number``, ``amount``, ``date``, ``id`` or ``quoted``."""
    start: int | None = None
    """Where it starts in the answer."""
    end: int | None = None
    """Where it ends."""
    line: int
    """The ``finding`` record."""


class ReadProblems(_Frozen):
    """What the trace reader could not read, as ``fpdebug summary`` counts it: bad lines, a torn tail.

    Counted from the model the backtrack reads (its facts pass), so a line whose unread fields break
    the schema may count as a record; ``fpdebug validate`` lists every problem.
    """

    invalid: int = 0
    """Lines that are not valid records."""
    unknown_kind: int = 0
    """Lines of a kind this fpdebug does not know (kept as opaque records)."""
    torn_tail_line: int | None = None
    """The line an unfinished last record would have been (bytes after the last newline), if any."""
    torn_tail_bytes: int = 0
    """How many bytes that unfinished record has."""

    @property
    def count(self) -> int:
        """How many problems: bad lines, plus one for a torn tail."""
        return self.invalid + self.unknown_kind + (self.torn_tail_line is not None)

    @property
    def note(self) -> str | None:
        """``2 problems (1 invalid, 1 torn-tail at line 8; `fpdebug validate` lists them)``, or None."""
        parts = [f"{self.invalid} invalid"] if self.invalid else []
        if self.unknown_kind:
            parts.append(f"{self.unknown_kind} unknown-kind")
        if self.torn_tail_line is not None:
            parts.append(f"1 torn-tail at line {self.torn_tail_line}, {self.torn_tail_bytes} bytes")
        if not parts:
            return None
        return (
            f"{self.count} problem{'s' if self.count != 1 else ''} ({', '.join(parts)}; "
            "`fpdebug validate` lists them)"
        )

    @classmethod
    def of(cls, model: RunModel) -> ReadProblems:
        """The problems of the trace ``model`` was built from (its reader's torn tail included)."""
        torn = None
        tail = getattr(model.source, "torn_tail", None)
        if callable(tail):
            try:
                torn = tail()
            except FpdebugError:  # a reader closed or a file shrunk: no tail to report
                torn = None
        return cls(
            invalid=len(model.invalid_lines),
            unknown_kind=len(model.opaque_lines),
            torn_tail_line=getattr(torn, "line", None),
            torn_tail_bytes=getattr(torn, "length", 0),
        )


class Provenance(_Frozen):
    """Everything the trace says about how one LLM call's context was assembled (correlational)."""

    tier: Literal["correlational"] = "correlational"
    """Always correlational: how pieces got on the wire, never what they caused."""
    trace: str | None = None
    """The trace path, when known."""
    run_id: str
    """The run."""
    agent: str | None = None
    """The agent's name."""
    provider: str
    """The provider that answered."""
    model: str
    """The model asked."""
    turn: int | None = None
    """The call's turn."""
    iteration: int
    """The call's iteration."""
    call_line: int
    """The ``llm_call`` record."""
    call_seq: int
    """Its seq."""
    call_index: int
    """Its ``call_index`` (1-based in the run)."""
    route: str | None = None
    """``final`` or ``tool-calls``."""
    final: bool
    """Whether this call produced its turn's final answer."""
    answer: str
    """What the call answered (:func:`render_answer`)."""
    request: LlmRequest
    """The exact request (what a rerun replays)."""
    pieces: list[ContextPiece]
    """Every piece that rode, in request order."""
    missing: list[MissingPiece] = Field(default_factory=list)
    """Available but not sent."""
    suspects: list[Piece] = Field(default_factory=list)
    """The ranking's input: sent pieces (injections, memory, tools) in request order, then missing
    candidates that a rerun can restore."""
    origins: list[PieceOrigin] = Field(default_factory=list)
    """One per suspect piece, in the same order."""
    unsupported: list[UnsupportedValue] = Field(default_factory=list)
    """Values the answer states that the answer layer found no source for."""
    assessed: bool = False
    """Whether the answer layer assessed this answer (``finding`` rows exist)."""
    flags: list[HonestyFlag] = Field(default_factory=list)
    """What the trace did not let fpdebug see."""
    declared_order: list[str] = Field(default_factory=list)
    """Injection ids in declaration order (where a restored piece goes back)."""
    declared: list[InjectionDecl] = Field(default_factory=list)
    """The declared injections (what a restoration sends)."""
    known_tools: list[ToolSchema] = Field(default_factory=list)
    """Every tool schema the run offered or declared (what a tool restoration sends)."""
    run_start_line: int | None = None
    """The run's ``run_start`` record (where declarations are BORN)."""
    target_note: str | None = None
    """Why the call explained by default is not the final answer as recorded (an unreadable, torn,
    failed or missing final call): say it wherever the explanation is shown."""
    read_problems: ReadProblems = Field(default_factory=ReadProblems)
    """What the reader could not read in the trace."""

    def origin(self, piece_id: str) -> PieceOrigin | None:
        """The origin of one suspect piece, if it is one of :attr:`suspects`."""
        return next((origin for origin in self.origins if origin.piece_id == piece_id), None)

    def pieces_of(self, suspect_id: str) -> list[ContextPiece]:
        """The request pieces a suspect piece is made of."""
        return [piece for piece in self.pieces if piece.suspect_id == suspect_id]


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
    found: list[str] = []
    unreadable = []
    for bad in model.invalid_lines:
        if bad <= line:
            continue
        record = model.record(bad)
        kind = getattr(record, "kind", None)
        if kind == "llm_call" or (fallback and kind in (None, "turn_end")):
            unreadable.append((bad, kind, getattr(record, "error", "")))
    if unreadable:
        bad, kind, error = unreadable[-1]
        what = f"the {kind} record" if kind else "the record"
        more = f" (and {len(unreadable) - 1} more unreadable line(s) after it)" if len(unreadable) > 1 else ""
        found.append(f"{what} at line {bad} is unreadable ({_clipped(error, 120)}){more}")
    if fallback:
        failed = sorted(
            later
            for run in model.runs
            for iteration in run.iterations()
            for later in iteration.llm_lines
            if later > line
        )
        if failed:
            record = model.record(failed[-1])
            error = getattr(record, "error", None)
            why = f" ({_clipped(f'{error.type}: {error.message}')})" if getattr(error, "type", None) else ""
            found.append(f"the llm_call at line {failed[-1]} has no reply{why}")
        torn = getattr(model.source, "torn_tail", None)
        tail = torn() if callable(torn) else None
        if tail is not None:
            found.append(
                f"the trace ends in a torn record at line {tail.line} ({tail.length} bytes after "
                "the last newline: a writer stopped mid-record, or is still writing)"
            )
    return "; ".join(found) or None


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


# ----------------------------------------------------------------------------------------------
# Reading the run


@dataclass
class _Index:
    """What the provenance needs of the run before the explained call, read once."""

    model: RunModel
    run: Run
    call_line: int
    results: dict[str, tuple[int, ToolResultEvent]] = field(default_factory=dict)
    calls: list[tuple[int, LlmCallEvent]] = field(default_factory=list)
    turn_starts: list[tuple[int, TurnStartEvent]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, model: RunModel, run: Run, call_line: int) -> _Index:
        index = cls(model, run, call_line)
        for turn in run.turns:
            if turn.start_line is not None and turn.start_line < call_line:
                start = model.record(turn.start_line)
                if isinstance(start, TurnStartEvent):
                    index.turn_starts.append((turn.start_line, start))
            for iteration in turn.iterations:
                if iteration.first_line > call_line:
                    continue
                for line in iteration.tool_result_lines:
                    if line < call_line:
                        record = model.record(line)
                        if isinstance(record, ToolResultEvent):
                            index.results[record.tool_call_id] = (line, record)
                        else:
                            index.untracked.append(f"line {line} (a tool result) is not a valid record")
                for line in iteration.llm_lines:
                    if line <= call_line:
                        record = model.record(line)
                        if isinstance(record, LlmCallEvent):
                            index.calls.append((line, record))
                        else:
                            index.untracked.append(f"line {line} (an llm_call) is not a valid record")
        index.calls.sort(key=lambda pair: pair[0])
        return index

    def iteration(self, turn: int | None, number: int | None) -> Iteration | None:
        if turn is None or number is None:
            return None
        return self.run.iteration(turn, number)

    def record_at(self, line: int | None, kind: type[BaseModel]) -> BaseModel | None:
        if line is None:
            return None
        record = self.model.record(line)
        return record if isinstance(record, kind) else None

    def pass_of(self, turn: int | None, number: int | None) -> tuple[int, PassEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.pass_line if iteration is not None else None
        record = self.record_at(line, PassEvent)
        return (line, record) if line is not None and isinstance(record, PassEvent) else None

    def move_of(self, turn: int | None, number: int | None) -> tuple[int, CursorMoveEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.cursor_line if iteration is not None else None
        record = self.record_at(line, CursorMoveEvent)
        return (line, record) if line is not None and isinstance(record, CursorMoveEvent) else None

    def engagement_of(self, turn: int | None, number: int | None) -> tuple[int, EngagementEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.engagement_line if iteration is not None else None
        record = self.record_at(line, EngagementEvent)
        return (line, record) if line is not None and isinstance(record, EngagementEvent) else None

    def batch(self, turn: int | None, number: int | None) -> list[tuple[int, ToolResultEvent]]:
        """The tool results of one iteration's batch, in call order."""
        iteration = self.iteration(turn, number)
        if iteration is None:
            return []
        found: list[tuple[int, ToolResultEvent]] = []
        for line in iteration.tool_result_lines:
            record = self.model.record(line)
            if isinstance(record, ToolResultEvent):
                found.append((line, record))
        return found

    def call_ref(
        self,
        tool_name: str,
        tool_call_id: str | None,
        *,
        turn: int | None = None,
        iteration: int | None = None,
    ) -> CallRef:
        """A tool call, with its result and the LLM call that asked for it, found by call id."""
        result_line: int | None = None
        if tool_call_id is not None and tool_call_id in self.results:
            result_line, result = self.results[tool_call_id]
            turn, iteration = result.turn, result.iteration
            tool_name = result.tool_name
        asked_line = asked_index = None
        for line, call in reversed(self.calls):
            if call.response is not None and any(c.id == tool_call_id for c in call.response.tool_calls):
                asked_line, asked_index = line, call.call_index
                if turn is None:
                    turn, iteration = call.turn, call.iteration
                break
        return CallRef(
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            turn=turn,
            iteration=iteration,
            result_line=result_line,
            asked_line=asked_line,
            asked_index=asked_index,
        )

    def seq_of(self, line: int | None) -> int | None:
        if line is None:
            return None
        return getattr(self.model.record(line), "seq", None)

    def call_at(self, line: int | None) -> LlmCallEvent | None:
        record = self.record_at(line, LlmCallEvent)
        return record if isinstance(record, LlmCallEvent) else None


# ----------------------------------------------------------------------------------------------
# Sentences


def _call_words(ref: CallRef) -> str:
    call = f"call {ref.tool_call_id}" if ref.tool_call_id else "call"
    at = f" at iteration {ref.iteration}" if ref.iteration is not None else ""
    return f"`{ref.tool_name}` {call}{at}"


def _cursor_words(cursor: CursorOrigin) -> str:
    words = f"cursor on {cursor.skill_id} by {cursor.by}"
    if cursor.by == "route":
        edge = f"edge {cursor.edge}" if cursor.edge else "a route edge"
        words += f" ({edge} fired by {_call_words(cursor.fired_by)})" if cursor.fired_by else f" ({edge})"
    elif cursor.by == "model-pick" and cursor.picked_by is not None:
        words += f" via {_call_words(cursor.picked_by)}"
    elif cursor.by == "tool-proposal" and cursor.fired_by is not None:
        words += f" proposed by {_call_words(cursor.fired_by)}"
    elif cursor.by == "entry":
        kind = f"{cursor.entry_kind} entry" if cursor.entry_kind else "entry"
        witness = f", witness {cursor.witness!r}" if cursor.witness else ""
        words += f" ({kind}{witness})"
    if cursor.iteration is not None:
        words += f", moved at iteration {cursor.iteration}"
        if cursor.stays:
            words += f", stayed {cursor.stays} pass{'es' if cursor.stays != 1 else ''} since"
    return words


def _engagement_words(standing: EngagementStanding) -> str:
    words = f"map {standing.map_id} {standing.standing} by {standing.by} since iteration {standing.since}"
    if standing.change == "reengaged":
        words += " (re-engaged this pass"
        words += f" by {_call_words(standing.reengaged_by)})" if standing.reengaged_by else ")"
    elif standing.change:
        words += f" ({standing.change} this pass)"
    on = f" on {standing.founded_on}" if standing.founded_on else ""
    founded = f"founded by {standing.founded_by} at iteration {standing.founded_at}{on}"
    return words + f"; {founded}; idle {standing.idle}"


def _admission_words(admission: Admission) -> str:
    match admission.via:
        case "always":
            return "its trigger is always"
        case "rule":
            description = f" ({admission.trigger_description})" if admission.trigger_description else ""
            return f"its rule held{description}"
        case "cursor":
            return _cursor_words(admission.cursor) if admission.cursor else "the cursor is on it"
        case "on-tool-return":
            ref = admission.activation
            return f"{_call_words(ref)} returned" if ref else "a tool it waits for returned"
        case "llm-activated":
            ref = admission.activation
            return f"{_call_words(ref)} activated it" if ref else "the model activated it"
        case "lease":
            lease = admission.lease
            if lease is None:
                return "a lease served it"
            tenant = lease.tenant if lease.tenant is not None else "none"
            return (
                f"lease ({lease.delivery_lease}) granted by {_call_words(lease.granted_by)}, tenant {tenant}"
            )
        case "park-card":
            standing = admission.engagement
            if standing is None:
                return "a map is parked"
            return f"map {standing.map_id} is parked (idle {standing.idle})"
        case "base":
            return "it is the agent's own system prompt"
        case "user":
            return "the user said it"
        case "conversation":
            return "it is the model's own earlier reply in this conversation"
        case "tool-result":
            ref = admission.activation
            return f"{_call_words(ref)} returned it" if ref else "a tool returned it"
        case "registry":
            return "the agent offers this tool on every call"
        case "unknown":
            return "the trace does not say (an untracked source)"
    return admission.via


def _reason(admission: Admission) -> str:
    words = f"rode because {_admission_words(admission)}"
    if admission.via != "cursor" and admission.cursor is not None:
        words += f"; {_cursor_words(admission.cursor)}"
    if admission.via != "park-card" and admission.engagement is not None:
        words += f"; {_engagement_words(admission.engagement)}"
    return words


# ----------------------------------------------------------------------------------------------
# The builder


_FACTORY_WORDS = {
    "fact": "fact",
    "steering": "steering",
    "instructions": "instruction",
    "skill": "skill",
    "memory": "memory",
    "rag": "rag",
    "custom": "injection",
}


@dataclass
class _Builder:
    model: RunModel
    index: _Index
    call_line: int
    call: LlmCallEvent
    run_start: RunStartEvent | None
    pass_: tuple[int, PassEvent] | None
    max_hops: int
    flags: dict[str, str] = field(default_factory=dict)
    admissions: dict[str, Admission] = field(default_factory=dict)
    _known_tools: list[ToolSchema] | None = None

    # -- small lookups ----------------------------------------------------------------------------

    @property
    def turn(self) -> int | None:
        return self.call.turn

    @property
    def iteration(self) -> int:
        return self.call.iteration or 0

    def decl(self, injection_id: str) -> InjectionDecl | None:
        if self.run_start is None:
            return None
        return next((d for d in self.run_start.injections if d.id == injection_id), None)

    def flag(self, name: HonestyFlagName, note: str) -> None:
        self.flags.setdefault(name, note)

    def hop(
        self, verb: HopVerb, text: str, *, line: int | None = None, level: int = 0, ref: str | None = None
    ) -> Hop:
        record = self.model.record(line) if line is not None else None
        return Hop(
            verb=verb,
            text=text,
            level=level,
            line=line,
            seq=getattr(record, "seq", None),
            turn=getattr(record, "turn", None),
            iteration=getattr(record, "iteration", None),
            ref=ref,
        )

    def call_label(self, line: int | None) -> str:
        call = self.index.call_at(line)
        if call is None:
            return "an llm_call (not found)"
        return f"llm_call #{call.call_index} (seq {call.seq}, turn {call.turn}, iteration {call.iteration})"

    @property
    def run_start_line(self) -> int | None:
        return self.index.run.start_line

    # -- BORN ------------------------------------------------------------------------------------

    def born_injection(self, injection_id: str) -> Hop:
        decl = self.decl(injection_id)
        if injection_id == PARK_CARD_ID:
            engagement = self.index.engagement_of(self.turn, self.iteration)
            line = engagement[0] if engagement else None
            return self.hop(
                "BORN",
                "the park card, written by the engagement kernel for this pass (maps plan in run_start)",
                line=line,
                ref=injection_id,
            )
        if decl is None:
            self.flag("untracked-sources", f"injection {injection_id!r} is not declared in run_start")
            return self.hop(
                "BORN", f"injection {injection_id!r} (not declared in run_start)", ref=injection_id
            )
        what = _FACTORY_WORDS.get(decl.flavor, "injection")
        trigger = decl.trigger.kind + (" (skill-map node)" if decl.trigger.graph_node else "")
        return self.hop(
            "BORN",
            f"{what} {decl.id!r} declared in run_start ({decl.flavor}, trigger {trigger})",
            line=self.run_start_line,
            ref=decl.id,
        )

    def born_tool(self, tool_name: str, injection_id: str | None) -> Hop:
        if injection_id is not None:
            return self.hop(
                "BORN",
                f"tool {tool_name!r} of injection {injection_id!r}, declared in run_start",
                line=self.run_start_line,
                ref=tool_name,
            )
        if self.run_start is not None and any(t.name == tool_name for t in self.run_start.tools):
            return self.hop(
                "BORN",
                f"agent tool {tool_name!r} declared in run_start",
                line=self.run_start_line,
                ref=tool_name,
            )
        if tool_name == READ_SKILL:
            return self.hop(
                "BORN",
                "the skill map's built-in read_skill tool (skill map in run_start)",
                line=self.run_start_line,
                ref=tool_name,
            )
        owner = self.tool_owner(tool_name)
        if owner is not None:
            return self.hop(
                "BORN",
                f"tool {tool_name!r} of injection {owner!r}, declared in run_start",
                line=self.run_start_line,
                ref=tool_name,
            )
        self.flag("untracked-sources", f"tool {tool_name!r} is declared nowhere in run_start")
        return self.hop("BORN", f"tool {tool_name!r} (not declared in run_start)", ref=tool_name)

    def tool_owner(self, tool_name: str) -> str | None:
        if self.run_start is None:
            return None
        return next((d.id for d in self.run_start.injections if tool_name in d.tool_names), None)

    # -- tool calls --------------------------------------------------------------------------------

    def call_hops(self, ref: CallRef, *, verb: HopVerb = "RETURNED") -> list[Hop]:
        """RETURNED (the result) ← ASKED (the LLM call) ← OFFERED (how the tool was on offer then)."""
        hops: list[Hop] = []
        if ref.result_line is not None:
            hops.append(
                self.hop(
                    verb, f"{_call_words(ref)} (tool_result)", line=ref.result_line, ref=ref.tool_call_id
                )
            )
        else:
            self.flag("untracked-sources", f"the result of {_call_words(ref)} is not in the trace")
            hops.append(
                self.hop(
                    verb, f"{_call_words(ref)} (its tool_result is not in the trace)", ref=ref.tool_call_id
                )
            )
        if ref.asked_line is None:
            self.flag("no-llm-call-ids", f"no llm_call asked for {_call_words(ref)}")
            return hops
        hops.append(
            self.hop(
                "ASKED",
                f"{self.call_label(ref.asked_line)} asked for it; explain that call "
                f"with --call {self.index.seq_of(ref.asked_line)}",
                line=ref.asked_line,
            )
        )
        asked = self.index.call_at(ref.asked_line)
        schema = next((t for t in asked.request.tools if t.name == ref.tool_name), None) if asked else None
        if schema is None:
            hops.append(
                self.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} was not among that call's tools",
                    level=1,
                    line=ref.asked_line,
                )
            )
        elif schema.injection_id is not None:
            hops.append(
                self.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} was offered by injection {schema.injection_id!r} on that call",
                    level=1,
                    line=ref.asked_line,
                    ref=schema.injection_id,
                )
            )
        elif ref.tool_name == READ_SKILL:
            hops.append(
                self.hop(
                    "OFFERED",
                    "read_skill is offered by the skill map on every call",
                    level=1,
                    line=ref.asked_line,
                )
            )
        else:
            hops.append(
                self.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} is an agent tool, offered on every call",
                    level=1,
                    line=ref.asked_line,
                )
            )
        return hops

    # -- cursor ----------------------------------------------------------------------------------

    def cursor_origin(self, skill_id: str) -> CursorOrigin | None:
        """The move that put the cursor on ``skill_id``, walking back over ``stay`` passes."""
        turn, number = self.turn, self.iteration
        found = self.index.move_of(turn, number)
        if found is None or found[1].to_skill != skill_id:
            return None
        stays = 0
        line, move = found
        while move.by in ("stay", "continuity") and move.from_skill == skill_id:
            previous = self._previous_move(move)
            if previous is None or previous[1].to_skill != skill_id:
                break
            stays += 1
            line, move = previous
            if stays > 10_000:  # a corrupt trace cannot loop us forever
                break
        origin = CursorOrigin(
            skill_id=skill_id,
            by=move.by,
            strength=move.strength,
            move_line=line,
            turn=move.turn,
            iteration=move.iteration,
            stays=stays,
            from_skill=move.from_skill,
            witness=move.witness.text if move.witness else None,
            keyword=move.witness.keyword if move.witness else None,
        )
        previous_batch = self.index.batch(move.turn, (move.iteration or 0) - 1)
        if move.by == "route":
            return self._route_origin(origin, move, previous_batch)
        if move.by == "model-pick":
            pick = next(
                (
                    r
                    for _, r in previous_batch
                    if r.skill_gate is not None
                    and r.skill_gate.skill_id == skill_id
                    and r.skill_gate.outcome == "hop"
                ),
                None,
            )
            if pick is None:
                return origin.model_copy(update={"note": "the read_skill pick is not in the previous batch"})
            picked = self.index.call_ref(pick.tool_name, pick.tool_call_id)
            return origin.model_copy(update={"picked_by": picked})
        if move.by == "tool-proposal":
            proposer = next(
                (
                    r
                    for _, r in previous_batch
                    for e in r.effects
                    if e.kind == "propose-transition"
                    and e.outcome == "accepted"
                    and e.target_skill_id == skill_id
                ),
                None,
            )
            if proposer is None:
                note = "the accepted proposal is not in the previous batch"
                return origin.model_copy(update={"note": note})
            return origin.model_copy(
                update={"fired_by": self.index.call_ref(proposer.tool_name, proposer.tool_call_id)}
            )
        if move.by == "entry" and self.run_start is not None and self.run_start.skill_map is not None:
            entry = next((e for e in self.run_start.skill_map.entries if e.skill_id == skill_id), None)
            if entry is not None:
                return origin.model_copy(update={"entry_kind": entry.kind})
        return origin

    def _previous_move(self, move: CursorMoveEvent) -> tuple[int, CursorMoveEvent] | None:
        number = (move.iteration or 0) - 1
        if number >= 1:
            return self.index.move_of(move.turn, number)
        # The first pass of a turn: under conversation continuity the cursor carried over from the
        # previous turn's last pass.
        turns = [t for t in self.index.run.turns if move.turn is not None and t.number < move.turn]
        for turn in reversed(turns):
            for iteration in reversed(turn.iterations):
                found = self.index.move_of(turn.number, iteration.number)
                if found is not None:
                    return found
        return None

    def _route_origin(
        self, origin: CursorOrigin, move: CursorMoveEvent, batch: list[tuple[int, ToolResultEvent]]
    ) -> CursorOrigin:
        edge = f"{move.from_skill}→{move.to_skill}"
        if move.conflict is not None:
            winner = move.conflict.winner
            ref = self.index.call_ref(winner.tool_name, winner.tool_call_id)
            return origin.model_copy(update={"edge": edge, "fired_by": ref})
        edges = []
        if self.run_start is not None and self.run_start.skill_map is not None:
            edges = [
                e
                for e in self.run_start.skill_map.edges
                if e.from_skill == move.from_skill and e.to_skill == move.to_skill and e.deterministic
            ]
        for _, result in batch:
            for declared in edges:
                if _edge_matches(
                    declared.on_tool_return, declared.tool_is_pattern, declared.on_tool_status, result
                ):
                    ref = self.index.call_ref(result.tool_name, result.tool_call_id)
                    return origin.model_copy(update={"edge": edge, "fired_by": ref})
        return origin.model_copy(
            update={"edge": edge, "note": "no result of the previous batch matches a declared edge"}
        )

    def cursor_hops(self, cursor: CursorOrigin, *, level: int = 0) -> list[Hop]:
        hops = [
            self.hop("MOVED", _cursor_words(cursor), line=cursor.move_line, level=level, ref=cursor.skill_id)
        ]
        ref = cursor.fired_by or cursor.picked_by
        if ref is not None and cursor.by in ("route", "model-pick", "tool-proposal"):
            hops.extend(
                hop.model_copy(update={"level": max(hop.level, level)}) for hop in self.call_hops(ref)
            )
        return hops

    # -- engagement --------------------------------------------------------------------------------

    def engagement_for(self, injection_id: str) -> EngagementStanding | None:
        found = self.index.engagement_of(self.turn, self.iteration)
        if found is None or self.run_start is None or self.run_start.maps is None:
            return None
        line, event = found
        if injection_id == PARK_CARD_ID:
            record = next((r for r in event.records if r.standing == "parked"), None)
        else:
            maps = [m.id for m in self.run_start.maps.maps if injection_id in m.member_ids]
            record = next((r for r in event.records if r.map_id in maps), None)
        if record is None:
            return None
        change = next((c for c in event.changes if c.map_id == record.map_id), None)
        name: str | None = None
        reengaged_by: CallRef | None = None
        if change is not None:
            name = (
                "parked"
                if change.kind == "parked"
                else "reengaged"
                if change.reengaged
                else (
                    "upgraded"
                    if change.upgraded
                    else "tenant-changed"
                    if change.tenant_changed
                    else "engaged"
                )
            )
            if change.reengaged:
                members = next((m.member_ids for m in self.run_start.maps.maps if m.id == record.map_id), [])
                batch = self.index.batch(self.turn, self.iteration - 1)
                pick = next(
                    (
                        r
                        for _, r in batch
                        if r.skill_gate is not None
                        and r.skill_gate.skill_id in members
                        and r.skill_gate.outcome != "rejected"
                    ),
                    None,
                )
                if pick is not None:
                    reengaged_by = self.index.call_ref(pick.tool_name, pick.tool_call_id)
        return EngagementStanding(
            map_id=record.map_id,
            standing=record.standing,
            by=record.by,
            since=record.since,
            founded_by=record.founded_by,
            founded_at=record.founded_at,
            founded_on=record.founded_on,
            idle=record.idle,
            change=name,
            reengaged_by=reengaged_by,
            line=line,
        )

    # -- injections ----------------------------------------------------------------------------------

    def admission(self, injection_id: str) -> Admission:
        if injection_id in self.admissions:
            return self.admissions[injection_id]
        pass_line = self.pass_[0] if self.pass_ else None
        reasons: dict[str, ActiveReason] = {r.id: r for r in self.pass_[1].reasons} if self.pass_ else {}
        reason = reasons.get(injection_id)
        decl = self.decl(injection_id)
        trigger = decl.trigger.kind if decl else None
        description = decl.trigger.description if decl else None
        cursor = self.cursor_origin(injection_id)
        engagement = self.engagement_for(injection_id)
        if reason is None:
            if self.pass_ is None:
                self.flag(
                    "no-read-tracking",
                    "the explained call has no pass record: why each injection rode is not recorded",
                )
            else:
                self.flag("untracked-sources", f"the pass does not say why {injection_id!r} rode")
            admission = Admission(
                via="unknown",
                trigger=trigger,
                trigger_description=description,
                cursor=cursor,
                engagement=engagement,
                pass_line=pass_line,
            )
        else:
            activation = lease = None
            if reason.via in ("on-tool-return", "llm-activated") and reason.tool_name:
                activation = self.index.call_ref(
                    reason.tool_name, reason.tool_call_id, iteration=reason.at_iteration
                )
            elif reason.via == "lease":
                lease = self.lease_origin(injection_id, reason)
            admission = Admission(
                via=reason.via,
                trigger=trigger,
                trigger_description=description,
                activation=activation,
                lease=lease,
                cursor=cursor,
                engagement=engagement,
                pass_line=pass_line,
            )
        self.admissions[injection_id] = admission
        return admission

    def lease_origin(self, injection_id: str, reason: ActiveReason) -> LeaseOrigin:
        grant_line = None
        for lease in self.index.run.leases:
            if (
                lease.instruction_id == injection_id
                and lease.tool_call_id == reason.tool_call_id
                and lease.granted_iteration == reason.at_iteration
            ):
                grant_line = lease.grant_line
        ref = self.index.call_ref(reason.tool_name or "?", reason.tool_call_id, iteration=reason.at_iteration)
        return LeaseOrigin(
            instruction_id=injection_id,
            delivery_lease=reason.delivery_lease or "?",
            tenant=reason.tenant,
            granted_by=ref,
            grant_line=grant_line,
        )

    def admission_hops(self, injection_id: str, admission: Admission) -> list[Hop]:
        allowed = _admission_words(admission)
        if admission.via == "cursor" and admission.cursor is not None:
            allowed = (
                f"the cursor stands on {admission.cursor.skill_id}: a skill-map node rides while "
                "the cursor is on it"
            )
        hops = [self.hop("ALLOWED", allowed, line=admission.pass_line, ref=injection_id)]
        if admission.via == "lease" and admission.lease is not None:
            lease = admission.lease
            tenant = lease.tenant if lease.tenant is not None else "none"
            hops.append(
                self.hop(
                    "GRANTED",
                    f"{lease.delivery_lease} lease on {lease.instruction_id!r} granted to tenant {tenant}",
                    line=lease.grant_line,
                    ref=lease.granted_by.tool_call_id,
                )
            )
            hops.extend(self.call_hops(lease.granted_by))
        elif admission.via in ("on-tool-return", "llm-activated") and admission.activation is not None:
            hops.extend(self.call_hops(admission.activation))
        elif admission.via == "cursor" and admission.cursor is not None:
            hops.extend(self.cursor_hops(admission.cursor))
        if admission.via != "cursor" and admission.cursor is not None:
            hops.extend(self.cursor_hops(admission.cursor, level=1))
        if admission.engagement is not None:
            standing = admission.engagement
            hops.append(
                self.hop(
                    "ENGAGED",
                    _engagement_words(standing),
                    line=standing.line,
                    level=0 if admission.via == "park-card" else 1,
                    ref=standing.map_id,
                )
            )
        # The cursor's pick is often the very call that activated the piece: say each step once.
        unique: list[Hop] = []
        seen: set[tuple[str, int | None, str | None]] = set()
        for hop in hops:
            key = (hop.verb, hop.line, hop.ref)
            if hop.line is None or key not in seen:
                seen.add(key)
                unique.append(hop)
        return unique

    def bounded(self, chain: list[Hop]) -> list[Hop]:
        if len(chain) <= self.max_hops:
            return chain
        self.flag("slice-truncated", f"a chain was cut at {self.max_hops} hops (max_hops)")
        cut = chain[: self.max_hops - 2]
        return [
            *cut,
            Hop(verb="TRUNCATED", text=f"{len(chain) - len(cut) - 1} more hop(s) cut (max_hops)"),
            chain[-1],
        ]

    # -- pieces ------------------------------------------------------------------------------------

    def read_hop(self) -> Hop:
        return self.hop("READ", self.call_label(self.call_line), line=self.call_line)

    def landed_hop(self, text: str, *, ref: str | None = None) -> Hop:
        return self.hop("LANDED", text, line=self.call_line, ref=ref)

    def pieces(self) -> list[ContextPiece]:
        request = self.call.request
        pieces: list[ContextPiece] = []
        for position, segment in enumerate(request.system_prompt):
            pieces.append(self.segment_piece(position, segment.source, segment.injection_id, segment.text))
        used_calls: set[int] = set()
        for position, message in enumerate(request.messages):
            pieces.append(self.message_piece(position, message, used_calls))
        for position, schema in enumerate(request.tools):
            pieces.append(self.schema_piece(position, schema))
        return pieces

    def segment_piece(self, position: int, source: str, injection_id: str | None, text: str) -> ContextPiece:
        slot_words = f"system-prompt segment {position + 1}"
        if injection_id is None:
            admission = Admission(via="base")
            born = self.hop(
                "BORN", "the agent's system prompt, declared in run_start", line=self.run_start_line
            )
            chain = [self.read_hop(), self.landed_hop(f"{slot_words} (base)"), born]
            return ContextPiece(
                id=f"system-prompt[{position}]",
                slot="system-prompt",
                position=position,
                kind="base",
                source=source,
                text=text,
                admission=admission,
                reason=_reason(admission),
                chain=chain,
                origin_line=self.run_start_line,
            )
        admission = self.admission(injection_id)
        if injection_id == PARK_CARD_ID and admission.engagement is None:
            admission = admission.model_copy(update={"engagement": self.engagement_for(PARK_CARD_ID)})
        kind: Literal["injection", "memory", "park-card"] = (
            "park-card" if injection_id == PARK_CARD_ID else "memory" if source == "memory" else "injection"
        )
        landed = self.landed_hop(f"{slot_words} ({source} {injection_id!r})", ref=injection_id)
        chain = [
            self.read_hop(),
            landed,
            *self.admission_hops(injection_id, admission),
            self.born_injection(injection_id),
        ]
        return ContextPiece(
            id=f"system-prompt[{position}]",
            slot="system-prompt",
            position=position,
            kind=kind,
            source=source,
            injection_id=injection_id,
            text=text,
            admission=admission,
            reason=_reason(admission),
            chain=self.bounded(chain),
            origin_line=admission.pass_line,
            origin_iteration=self.iteration,
            suspect_id=_suspect_id(kind, injection_id),
        )

    def message_piece(self, position: int, message: Message, used_calls: set[int]) -> ContextPiece:
        address = f"messages[{position}]"
        landed = f"message {position + 1} ({message.role})"
        if message.injection_id is not None:
            admission = self.admission(message.injection_id)
            source = self._flavor(message.injection_id)
            kind: Literal["injection", "memory"] = "memory" if source == "memory" else "injection"
            chain = [
                self.read_hop(),
                self.landed_hop(f"{landed}, delivered by {message.injection_id!r}", ref=message.injection_id),
                *self.admission_hops(message.injection_id, admission),
                self.born_injection(message.injection_id),
            ]
            return ContextPiece(
                id=address,
                slot="messages",
                position=position,
                kind=kind,
                source=source,
                injection_id=message.injection_id,
                text=message.content,
                admission=admission,
                reason=_reason(admission),
                chain=self.bounded(chain),
                origin_line=admission.pass_line,
                origin_iteration=self.iteration,
                suspect_id=_suspect_id(kind, message.injection_id),
            )
        if message.role == "user":
            found = next(
                (
                    (line, s)
                    for line, s in reversed(self.index.turn_starts)
                    if s.user_message == message.content
                ),
                None,
            )
            if found is None:
                self.flag("untracked-sources", f"user message {position + 1} matches no turn_start")
            line = found[0] if found else None
            admission = Admission(via="user")
            chain = [
                self.read_hop(),
                self.landed_hop(landed),
                self.hop(
                    "BORN",
                    "the user's message (turn_start)" if found else "a user message (no turn_start holds it)",
                    line=line,
                ),
            ]
            return ContextPiece(
                id=address,
                slot="messages",
                position=position,
                kind="user",
                source="user",
                text=message.content,
                admission=admission,
                reason=_reason(admission),
                chain=chain,
                origin_line=line,
            )
        if message.role == "assistant":
            line = self._writer_of(message, used_calls)
            admission = Admission(via="conversation")
            if line is None:
                self.flag(
                    "untracked-sources", f"assistant message {position + 1} matches no earlier llm_call"
                )
            text = render_answer(LlmResponse(content=message.content, tool_calls=message.tool_calls or []))
            writer = self.index.call_at(line)
            chain = [
                self.read_hop(),
                self.landed_hop(landed),
                self.hop(
                    "BORN",
                    f"the reply of {self.call_label(line)}"
                    if line is not None
                    else "an earlier reply (no llm_call holds it)",
                    line=line,
                ),
            ]
            return ContextPiece(
                id=address,
                slot="messages",
                position=position,
                kind="assistant",
                source="assistant",
                text=text,
                admission=admission,
                reason=_reason(admission),
                chain=chain,
                origin_line=line,
                origin_iteration=writer.iteration if writer is not None else None,
            )
        if message.role == "tool":
            name = message.tool_name or (
                self.index.results[message.tool_call_id][1].tool_name
                if message.tool_call_id in self.index.results
                else "?"
            )
            ref = self.index.call_ref(name, message.tool_call_id)
            admission = Admission(via="tool-result", activation=ref)
            owner = (
                self.tool_owner(name)
                if not (self.run_start and any(t.name == name for t in self.run_start.tools))
                else None
            )
            chain = [
                self.read_hop(),
                self.landed_hop(f"{landed}, the result of {_call_words(ref)}", ref=message.tool_call_id),
                *self.call_hops(ref),
                self.born_tool(name, owner),
            ]
            return ContextPiece(
                id=address,
                slot="messages",
                position=position,
                kind="tool-result",
                source="tool-result",
                tool_name=name,
                tool_call_id=message.tool_call_id,
                text=message.content,
                admission=admission,
                reason=_reason(admission),
                chain=self.bounded(chain),
                origin_line=ref.result_line,
                origin_iteration=ref.iteration,
                suspect_id=f"tool:{name}",
            )
        self.flag("untracked-sources", f"message {position + 1} ({message.role}) has no recorded writer")
        admission = Admission(via="unknown")
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="message",
            source=message.role,
            text=message.content,
            admission=admission,
            reason=_reason(admission),
            chain=[self.read_hop(), self.landed_hop(landed)],
        )

    def schema_piece(self, position: int, schema: ToolSchema) -> ContextPiece:
        address = f"tools[{position}]"
        text = f"{schema.name}: {schema.description}" if schema.description else schema.name
        landed = self.landed_hop(f"tool schema {position + 1} ({schema.name!r})", ref=schema.name)
        if schema.injection_id is not None:
            admission = self.admission(schema.injection_id)
            source = self._flavor(schema.injection_id)
            kind: Literal["injection", "memory"] = "memory" if source == "memory" else "injection"
            chain = [
                self.read_hop(),
                landed,
                *self.admission_hops(schema.injection_id, admission),
                self.born_tool(schema.name, schema.injection_id),
            ]
            return ContextPiece(
                id=address,
                slot="tools",
                position=position,
                kind="tool-schema",
                source=source,
                injection_id=schema.injection_id,
                tool_name=schema.name,
                text=text,
                admission=admission,
                reason=_reason(admission),
                chain=self.bounded(chain),
                origin_line=admission.pass_line,
                origin_iteration=self.iteration,
                suspect_id=_suspect_id(kind, schema.injection_id),
            )
        admission = Admission(via="registry")
        chain = [self.read_hop(), landed, self.born_tool(schema.name, None)]
        reason = (
            "rode because the skill map offers read_skill on every call"
            if schema.name == READ_SKILL
            else _reason(admission)
        )
        return ContextPiece(
            id=address,
            slot="tools",
            position=position,
            kind="tool-schema",
            source="registry",
            tool_name=schema.name,
            text=text,
            admission=admission,
            reason=reason,
            chain=chain,
            origin_line=self.run_start_line,
        )

    def _flavor(self, injection_id: str) -> str:
        decl = self.decl(injection_id)
        return decl.flavor if decl is not None else "custom"

    def _writer_of(self, message: Message, used: set[int]) -> int | None:
        """The earlier llm_call whose reply is this assistant message (each call used once)."""
        ids = [c.id for c in message.tool_calls or []]
        for line, call in self.index.calls:
            if line >= self.call_line or line in used or call.response is None:
                continue
            if ids and [c.id for c in call.response.tool_calls] == ids:
                used.add(line)
                return line
            if not ids and not call.response.tool_calls and call.response.content == message.content:
                used.add(line)
                return line
        return None

    # -- missing context -----------------------------------------------------------------------------

    def missing(self, sent: set[str]) -> list[MissingPiece]:
        found: list[MissingPiece] = []
        listed: set[str] = set()
        pass_line, event = self.pass_ if self.pass_ else (None, None)
        active = set(event.active_ids) if event is not None else set()
        for skipped in event.skipped if event is not None else []:
            reason: Literal["parked", "skipped"] = "parked" if skipped.reason == "parked" else "skipped"
            detail = (
                f"parked: {skipped.error}"
                if reason == "parked" and skipped.error
                else f"skipped ({skipped.reason}{': ' + skipped.error if skipped.error else ''})"
            )
            found.append(self.missing_injection(skipped.id, reason, detail, pass_line))
            listed.add(skipped.id)
        engagement = self.index.engagement_of(self.turn, self.iteration)
        if engagement is not None:
            for name in engagement[1].parked_tool_names:
                schema = self.known_tool(name)
                found.append(
                    MissingPiece(
                        id=f"missing:tool:{name}",
                        kind="tool",
                        tool_name=name,
                        reason="tool-parked",
                        detail=f"tool {name!r} was taken off the wire: its map is parked",
                        text=(f"{schema.name}: {schema.description}" if schema.description else schema.name)
                        if schema
                        else None,
                        restorable=schema is not None,
                        line=engagement[0],
                    )
                )
        ended: dict[str, MissingPiece] = {}
        for lease in self.index.run.leases:
            if (
                lease.instruction_id in active
                or lease.instruction_id in listed
                or lease.prune_line is None
                or lease.prune_line > self.call_line
                or (lease.grant_line is not None and lease.grant_line > self.call_line)
            ):
                continue
            state = "spent" if lease.prune_reason == "spent" else "ended its tenure"
            when = f" at iteration {lease.pruned_iteration}" if lease.pruned_iteration is not None else ""
            tenant = lease.tenant if lease.tenant is not None else "none"
            detail = (
                f"its {lease.delivery_lease} lease (granted by `{lease.tool_name}` call "
                f"{lease.tool_call_id} at iteration {lease.granted_iteration}, tenant {tenant}) "
                f"{state}{when}"
            )
            ended[lease.instruction_id] = self.missing_injection(
                lease.instruction_id, "lease-ended", detail, lease.prune_line
            )
        found.extend(ended.values())
        listed.update(ended)
        excluded: set[str] = set()
        if self.run_start is not None:
            without = self.run_start.options.get("without")
            if isinstance(without, dict):
                excluded = {str(i) for i in without.get("injection_ids", [])}
            for decl in self.run_start.injections:
                if decl.id in active or decl.id in listed or decl.id in sent:
                    continue
                if decl.id in excluded:
                    found.append(
                        self.missing_injection(
                            decl.id,
                            "excluded",
                            "excluded from the agent (Agent.without)",
                            self.run_start_line,
                        )
                    )
                    continue
                found.append(
                    self.missing_injection(decl.id, "not-triggered", self.not_triggered(decl), pass_line)
                )
        return found

    def not_triggered(self, decl: InjectionDecl) -> str:
        trigger = decl.trigger
        if trigger.graph_node:
            move = self.index.move_of(self.turn, self.iteration)
            where = move[1].to_skill if move is not None else None
            if where is None:
                return "a skill-map node off the cursor"
            return f"a skill-map node; the cursor was on {where}"
        match trigger.kind:
            case "rule":
                described = f" ({trigger.description})" if trigger.description else ""
                return f"its rule did not hold{described}"
            case "on-tool-return":
                waited = trigger.tool_name or trigger.tool_pattern or "its tool"
                return f"no {waited!r} result in the previous batch"
            case "llm-activated":
                return f"not activated by {trigger.via_tool_name or READ_SKILL}"
            case "always":
                return "declared always, yet not active on this pass"
        return "not active on this pass"

    def missing_injection(
        self,
        injection_id: str,
        reason: Literal["skipped", "parked", "lease-ended", "not-triggered", "excluded"],
        detail: str,
        line: int | None,
    ) -> MissingPiece:
        decl = self.decl(injection_id)
        texts: list[str] = []
        if decl is not None and decl.system_prompt:
            texts.append(decl.system_prompt)
        if decl is not None and decl.messages:
            texts.extend(m.content for m in decl.messages)
        restorable = decl is not None and bool(texts) and not decl.templated
        memory = decl is not None and decl.flavor == "memory"
        kind: Literal["injection", "memory"] = "memory" if memory else "injection"
        return MissingPiece(
            id=f"missing:injection:{injection_id}",
            kind=kind,
            injection_id=injection_id,
            flavor=decl.flavor if decl else None,
            reason=reason,
            detail=detail,
            text="\n".join(texts) or None,
            restorable=restorable,
            line=line,
        )

    def known_tool(self, name: str) -> ToolSchema | None:
        for schema in self.known_tools():
            if schema.name == name:
                return schema
        return None

    def known_tools(self) -> list[ToolSchema]:
        if self._known_tools is not None:
            return self._known_tools
        seen: dict[str, ToolSchema] = {}
        if self.run_start is not None:
            for schema in self.run_start.tools:
                seen.setdefault(schema.name, schema)
        for _, call in self.index.calls:
            for schema in call.request.tools:
                seen.setdefault(schema.name, schema)
        self._known_tools = list(seen.values())
        return self._known_tools

    # -- the answer layer ------------------------------------------------------------------------------

    def unsupported(self) -> tuple[bool, list[UnsupportedValue]]:
        turn = self.index.run.turn(self.turn) if self.turn is not None else None
        if turn is None:
            return False, []
        lines = list(turn.lines)
        for iteration in turn.iterations:
            lines.extend(iteration.finding_lines)
        assessed = False
        found: list[UnsupportedValue] = []
        for line in sorted(set(lines)):
            record = self.model.record(line)
            if not isinstance(record, FindingEvent) or record.layer != "answer":
                continue
            if record.iteration is not None and record.iteration != self.iteration:
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


def _suspect_id(kind: str, injection_id: str) -> str:
    return f"memory:{injection_id}" if kind == "memory" else f"injection:{injection_id}"


def _edge_matches(
    on_tool_return: str | None, is_pattern: bool, statuses: list[str] | None, result: ToolResultEvent
) -> bool:
    if on_tool_return is not None:
        if is_pattern:
            try:
                if re.search(on_tool_return, result.tool_name) is None:
                    return False
            except re.error:
                return False
        elif on_tool_return != result.tool_name:
            return False
    if statuses:
        # A result that declared no status succeeded (docs/context-model.md §1.6: a plain return is a success).
        return (result.status or "success") in statuses
    return on_tool_return is not None


# ----------------------------------------------------------------------------------------------
# Suspect pieces


def _label(kind: str, name: str, flavor: str | None) -> str:
    return f"{kind} '{name}'" + (f" ({flavor})" if flavor else "")


def _suspects(
    builder: _Builder, pieces: list[ContextPiece], missing: list[MissingPiece], answers: dict[int, str]
) -> tuple[list[Piece], list[PieceOrigin]]:
    call_node = f"llm_call#{builder.call.call_index}"
    order: list[str] = []
    parts: dict[str, list[ContextPiece]] = {}
    for piece in pieces:
        if piece.suspect_id is None:
            continue
        if piece.suspect_id not in parts:
            order.append(piece.suspect_id)
        parts.setdefault(piece.suspect_id, []).append(piece)
    suspects: list[Piece] = []
    origins: list[PieceOrigin] = []
    for suspect_id in order:
        group = parts[suspect_id]
        first = group[0]
        asked = list(
            dict.fromkeys(
                hop.line
                for p in group
                for hop in p.chain
                if hop.verb == "ASKED" and hop.line is not None and hop.line != builder.call_line
            )
        )
        ancestors = [answers[line] for line in asked if line in answers]
        if suspect_id.startswith("tool:"):
            name = suspect_id.removeprefix("tool:")
            results = [p for p in group if p.kind == "tool-result"]
            iterations = [p.origin_iteration for p in results if p.origin_iteration is not None]
            text = "\n".join(p.text for p in results) or None
            edge = [EdgeHop(from_id=call_node, to_id=suspect_id, to_name=name, key="messages", kind="data")]
            suspects.append(
                Piece(
                    id=suspect_id,
                    kind="tool",
                    text=text,
                    tool_name=name,
                    iteration=max(iterations) if iterations else builder.iteration,
                    ancestor_texts=ancestors,
                    edge_path=edge,
                )
            )
            calls = ", ".join(p.tool_call_id or "?" for p in results)
            plural = "s" if len(results) > 1 else ""
            reason = f"rode because `{name}` returned ({calls}); the model read its result{plural}"
            born = first.chain[-1] if first.chain and first.chain[-1].verb == "BORN" else None
            origins.append(
                PieceOrigin(
                    piece_id=suspect_id,
                    label=_label("tool", name, None),
                    reason=reason,
                    chain=first.chain,
                    born=born,
                )
            )
            continue
        injection_id = first.injection_id or suspect_id.split(":", 1)[1]
        kind: Literal["injection", "memory"] = "memory" if suspect_id.startswith("memory:") else "injection"
        texts = [p.text for p in group if p.slot != "tools" and p.text]
        if not texts:
            texts = [p.text for p in group if p.text]
        flavor = builder._flavor(injection_id) if injection_id != PARK_CARD_ID else "steering"
        # The path runs from the call to the suspect: through the decision that admitted it (a
        # control hop) when something other than its own always-on trigger did, then the slot it
        # was read from (the data hop adjacent to the suspect).
        admission = first.admission
        via = admission.via if admission is not None else "unknown"
        edge: list[EdgeHop] = []
        source = call_node
        if via not in ("always", "unknown"):
            source = f"{via}:{injection_id}"
            edge.append(EdgeHop(from_id=call_node, to_id=source, kind="control", key=via))
        edge.append(
            EdgeHop(from_id=source, to_id=suspect_id, to_name=injection_id, key=first.slot, kind="data")
        )
        suspects.append(
            Piece(
                id=suspect_id,
                kind=kind,
                text="\n".join(texts) or None,
                injection_id=injection_id,
                flavor=flavor,
                iteration=builder.iteration,
                ancestor_texts=ancestors,
                edge_path=edge,
            )
        )
        born = first.chain[-1] if first.chain and first.chain[-1].verb == "BORN" else None
        origins.append(
            PieceOrigin(
                piece_id=suspect_id,
                label=_label(kind, injection_id, flavor),
                reason=first.reason,
                chain=first.chain,
                born=born,
            )
        )
    for candidate in missing:
        if not candidate.restorable:
            continue
        name = candidate.tool_name or candidate.injection_id or candidate.id
        suspects.append(
            Piece(
                id=candidate.id,
                kind=candidate.kind,
                text=candidate.text,
                tool_name=candidate.tool_name,
                injection_id=candidate.injection_id,
                flavor=candidate.flavor,
                iteration=builder.iteration,
                missing=True,
                edge_path=[
                    EdgeHop(
                        from_id=call_node,
                        to_id=candidate.id,
                        to_name=name,
                        kind="control",
                        key=candidate.reason,
                    )
                ],
            )
        )
        born = (
            builder.born_injection(candidate.injection_id)
            if candidate.injection_id
            else builder.born_tool(name, builder.tool_owner(name))
        )
        label = _label(candidate.kind, name, candidate.flavor)
        origins.append(
            PieceOrigin(
                piece_id=candidate.id,
                label=label,
                reason=f"not sent: {candidate.detail}",
                chain=[born],
                born=born,
            )
        )
    return suspects, origins


# ----------------------------------------------------------------------------------------------
# Entry point


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
    start = model.record(run.start_line) if run.start_line is not None else None
    run_start = start if isinstance(start, RunStartEvent) else None
    index = _Index.build(model, run, call_line)
    builder = _Builder(
        model=model,
        index=index,
        call_line=call_line,
        call=call,
        run_start=run_start,
        pass_=index.pass_of(call.turn, call.iteration),
        max_hops=max_hops,
    )
    if run_start is None:
        builder.flag("untracked-sources", "the run has no readable run_start: declarations are unknown")
    for problem in index.untracked:
        builder.flag("untracked-sources", problem)
    pieces = builder.pieces()
    sent = {p.injection_id for p in pieces if p.injection_id is not None}
    missing = builder.missing(sent)
    answers = {line_: render_answer(c.response) for line_, c in index.calls if c.response is not None}
    suspects, origins = _suspects(builder, pieces, missing, answers)
    assessed, unsupported = builder.unsupported()
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
            HonestyFlag.model_validate({"flag": name, "note": note}) for name, note in builder.flags.items()
        ],
        declared_order=[d.id for d in run_start.injections] if run_start else [],
        declared=list(run_start.injections) if run_start else [],
        known_tools=builder.known_tools(),
        run_start_line=run.start_line,
        target_note=default.note(call) if default is not None else None,
        read_problems=ReadProblems.of(model),
    )

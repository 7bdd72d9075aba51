"""The models of a provenance: the pieces of one call's context, why each rode, and the chains back.

Plain frozen data (docs/backtracking.md §9.2): the chain builder (:mod:`.build`) fills them from the
trace, and the report, the debugger and ``fpdebug backtrack --json`` read them.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from fpdebug.backtrack.suspects import Piece
from fpdebug.errors import FpdebugError
from fpdebug.trace.model import RunModel
from fpdebug.trace.schema import InjectionDecl, LlmRequest, Retrieval, ToolSchema

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
    "tree",
    "on-tool-return",
    "llm-activated",
    "lease",
    "park-card",
    "fork-edit",
    "base",
    "user",
    "conversation",
    "loop",
    "tool-result",
    "registry",
    "recall",
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
    tree_path: list[str] | None = None
    """``tree``: the branch labels from the decision tree's root to the leaf."""
    tree_label: str | None = None
    """``tree``: the decision tree's label."""
    cursor: CursorOrigin | None = None
    """The cursor's standing on this piece's skill, when it is a skill-map node the cursor is on."""
    engagement: EngagementStanding | None = None
    """Its map's standing, when it is a member of a mounted map (or the park card's map)."""
    retrieval: Retrieval | None = None
    """``recall``: how the chunk ranked when its rag or memory source recalled it."""
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

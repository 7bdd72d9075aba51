"""The pass diff's model: the two sides, the changes per slot, and the notes beside them (no Textual).

Built by :func:`~fpdebug.views.pass_diff.pass_diff`; read by the diff view, which passes every string
through ``inert`` (strings here come from the trace).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

SLOTS: tuple[tuple[str, str], ...] = (
    ("system_prompt", "system-prompt"),
    ("messages", "messages"),
    ("tools", "tools"),
)
"""The three slots: the pass record's field and the slot's name (docs/context-model.md §3.5)."""

ACTIVE = "active"
"""The pseudo-slot compared instead when neither pass records its slot routing (only ``active_ids``)."""


@dataclass(frozen=True)
class Side:
    """One of the two passes compared."""

    row: int
    """Its timeline row."""
    label: str
    """``T1·I2`` (``2:T1·I2`` when the trace holds several runs)."""
    run_id: str
    """Its run."""
    turn: int
    """Its turn."""
    number: int
    """Its iteration number."""
    first_line: int
    """Its first record."""
    has_pass: bool
    """Whether its ``pass`` record could be read (the slots are unknown otherwise)."""
    has_call: bool
    """Whether its ``llm_call`` record could be read (the request parts are unknown otherwise)."""
    cursor: str | None
    """The cursor after the pass."""
    active: int
    """How many injections were active."""


@dataclass(frozen=True)
class Change:
    """One id that entered or left a slot (or came and went between A and B)."""

    slot: str
    """``system-prompt``, ``messages`` or ``tools``."""
    id: str
    """The injection id."""
    change: Literal["entered", "left", "came-and-went", "kept-with-gap"]
    """What happened between A and B."""
    flavor: str | None
    """The injection's flavor (from ``run_start``)."""
    why: str
    """Why, in words (for ``came-and-went``: why it entered)."""
    line: int | None = None
    """The pass where it happened (a jump target)."""
    label: str | None = None
    """That pass's label."""
    why_left: str | None = None
    """For ``came-and-went`` and ``kept-with-gap``: why it left."""
    left_line: int | None = None
    """Where it left."""
    left_label: str | None = None
    """That pass's label."""


@dataclass(frozen=True)
class MessageChange:
    """A conversation message in one request and not in the other."""

    change: Literal["entered", "left"]
    """In B only, or in A only."""
    role: str
    """Its role."""
    what: str
    """``tool result of check_policy call_2``, ``assistant reply``…"""
    text: str
    """The content (clipped by the view)."""
    line: int | None = None
    """The record that wrote it, when it is in the walk (a jump target)."""


@dataclass(frozen=True)
class ToolChange:
    """A tool schema offered on one call and not on the other."""

    change: Literal["entered", "left"]
    """Offered on B only, or on A only."""
    name: str
    """The tool."""
    why: str
    """Why it is (no longer) offered."""


@dataclass(frozen=True)
class SegmentChange:
    """A system-prompt segment added, removed or rewritten between the two requests."""

    change: Literal["added", "removed", "changed"]
    """What happened to it."""
    source: str
    """The segment's source (``base``, ``skill``…)."""
    injection_id: str | None
    """The injection it came from."""
    position: int
    """Its 1-based position in the request that has it (B's for ``changed``)."""
    text: str
    """Its text (B's for ``changed``)."""
    diff: tuple[str, ...] = ()
    """For ``changed``: the unified line diff of A's text → B's (without the file headers)."""


@dataclass(frozen=True)
class CursorStep:
    """One cursor move between A and B."""

    label: str
    """The pass that moved it."""
    line: int | None
    """Its first record (a jump target)."""
    from_skill: str | None
    """Where it was."""
    to_skill: str | None
    """Where it went."""
    by: str | None
    """The clause that moved it."""
    strength: str | None = None
    """The move's evidence strength."""


@dataclass(frozen=True)
class LeaseNote:
    """A lease that served A or B, or was granted or pruned between them."""

    instruction_id: str
    """The injection it serves."""
    delivery_lease: str
    """``next-call`` or ``until-skill-exit``."""
    granted: str
    """``check_policy call_2 at T1·I2``."""
    at_a: bool
    """It served A."""
    at_b: bool
    """It served B."""
    granted_between: bool
    """It was granted by A's batch or a later one before B."""
    pruned: str | None
    """``tenure-ended at T1·I4 (evaluate, tenant refund)`` when pruned between A and B."""
    grant_line: int | None = None
    """The ``lease_grant`` record."""
    prune_line: int | None = None
    """The ``lease_prune`` record."""


@dataclass(frozen=True)
class MapNote:
    """A mounted map's standing at A and at B, and its changes between."""

    map_id: str
    """The map."""
    at_a: str | None
    """``engaged by explicit`` / ``parked``… at A (``None``: not recorded)."""
    at_b: str | None
    """The same at B."""
    changes: tuple[tuple[str, str, int], ...] = ()
    """``(pass label, change, engagement line)`` for every change in (A, B]."""


@dataclass
class PassDiff:
    """Two passes compared (earlier → later)."""

    a: Side
    """The earlier pass."""
    b: Side
    """The later pass."""
    swapped: bool = False
    """The user's A was the later one: the two were swapped to read forwards."""
    same: bool = False
    """A and B are the same pass."""
    across_turns: bool = False
    """A and B are in different turns of one run."""
    across_runs: bool = False
    """A and B are in different runs (nothing is walked between them)."""
    walked: int = 0
    """Passes read between A and B (B included)."""
    walk_cut: bool = False
    """The walk stopped at :data:`~fpdebug.views.pass_diff.MAX_WALK`."""
    slots: dict[str, list[Change]] = field(default_factory=dict)
    """Per slot, the ids that entered, left, or came and went (:data:`ACTIVE` when no routing is recorded)."""
    kept: dict[str, list[str]] = field(default_factory=dict)
    """Per slot, the ids in both."""
    messages: list[MessageChange] = field(default_factory=list)
    """Conversation messages in one request only."""
    messages_counts: tuple[int, int] = (0, 0)
    """How many messages each request had."""
    tools: list[ToolChange] = field(default_factory=list)
    """Tool schemas offered on one call only."""
    tools_same: list[str] = field(default_factory=list)
    """Tools offered on both calls (B's order): an agent tool is in no slot, yet it is on the wire."""
    segments: list[SegmentChange] = field(default_factory=list)
    """System-prompt segments added, removed or rewritten."""
    segments_same: int = 0
    """Segments identical in both."""
    cursor_steps: list[CursorStep] = field(default_factory=list)
    """Cursor moves in (A, B]."""
    leases: list[LeaseNote] = field(default_factory=list)
    """Leases that served A or B or were granted or pruned between."""
    maps: list[MapNote] = field(default_factory=list)
    """Mounted maps whose standing is recorded at A or B or changed between."""
    notes: list[str] = field(default_factory=list)
    """Things the diff could not read (a missing pass record…)."""

    @property
    def identical(self) -> bool:
        """Nothing differs (or A and B are the same pass)."""
        if self.same:
            return True
        return not (
            any(self.slots.values())
            or self.messages
            or self.tools
            or self.segments
            or self.cursor_steps
            or any(note.granted_between or note.pruned or note.at_a != note.at_b for note in self.leases)
            or any(note.changes or note.at_a != note.at_b for note in self.maps)
            or self.a.cursor != self.b.cursor
        )


def iter_changes(diff: PassDiff) -> Iterable[Change]:
    """Every slot change of a diff, slot by slot."""
    for changes in diff.slots.values():
        yield from changes

"""What the RunModel reads of each line: the envelope and a few fields, parsed without the rest.

A full validation builds every sub-record of a line (an ``llm_call``'s prompt segments, messages
and tool schemas; a ``pass``'s reasons, slots and deltas), and that is most of the cost of
building a model over a large trace. The model needs far less: the envelope, and for a handful of
kinds a few fields (a pass's ``lease_active_ids``, a call's ``route`` and ``usage``, a lease, an
engagement's changes and records…). Each *facts* model below declares exactly those fields, with
the schema's own types, and ignores the others: pydantic still parses the whole line (so it must
be well-formed JSON, in UTF-8, of a known kind, with a valid envelope), but builds nothing for
what it skips. Measured on a realistic 1M-event, 2 GB trace: about 2.2× faster than the full
validation.

The one thing this gives up: a line whose *unread* fields break the schema (a ``tool_result``
missing its ``result``, say) still counts as an event of its kind. Reading the line
(``reader[line]``) reports it as an :class:`~fpdebug.trace.records.InvalidRecord`, and
``fpdebug validate`` lists it; ``RunModel(reader, validate=True)`` validates every line in full.

Every facts field has the same name and type as the schema field it mirrors
(``tests/trace/test_facts.py`` checks it), so the model reads a facts object and a full event
the same way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from fpdebug.trace.schema import (
    EngagementChange,
    ErrorInfo,
    LeaseRecord,
    MapEngagementRecord,
    PrunedLease,
    RouteChoice,
    StoppedEarly,
    Usage,
)

__all__ = [
    "FACTS_ADAPTER",
    "FACTS_MODELS",
    "AskAnswerFacts",
    "CompactFacts",
    "CursorMoveFacts",
    "EngagementFacts",
    "Facts",
    "FindingFacts",
    "LeaseGrantFacts",
    "LeasePruneFacts",
    "LlmCallFacts",
    "MemoryWriteFacts",
    "OutputRetryFacts",
    "PassFacts",
    "RecallFacts",
    "RerouteSupersededFacts",
    "RouteConflictFacts",
    "RunEndFacts",
    "RunStartFacts",
    "SkillRejectedFacts",
    "StepsUnfinishedFacts",
    "ToolResultFacts",
    "TurnEndFacts",
    "TurnStartFacts",
    "WrapUpFacts",
]


class _Facts(BaseModel):
    """The envelope, validated as the schema validates it; every other field is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    seq: int = Field(ge=1)
    """As :attr:`fpdebug.trace.schema._Event.seq`."""
    ts: datetime
    """As the schema's ``ts``."""
    run_id: str
    """As the schema's ``run_id``."""
    turn: int | None = None
    """As the schema's ``turn``."""
    iteration: int | None = None
    """As the schema's ``iteration``."""


class RunStartFacts(_Facts):
    """``run_start``: who ran, on what."""

    kind: Literal["run_start"]
    agent_name: str = "agent"
    """The agent's name."""
    provider: str
    """The provider."""
    model: str
    """The model name."""
    max_iterations: int
    """The per-turn iteration limit."""


class RunEndFacts(_Facts):
    """``run_end``: how the run ended."""

    kind: Literal["run_end"]
    status: Literal["completed", "failed", "interrupted", "paused"]
    """The run's status."""
    error: ErrorInfo | None = None
    """Why it failed."""


class TurnEndFacts(_Facts):
    """``turn_end``: the iteration count and whether a limit cut the turn short."""

    kind: Literal["turn_end"]
    iteration_count: int
    """The iteration of the final pass."""
    stopped_early: StoppedEarly | None = None
    """Set when a limit cut the turn short."""
    refusal: str | None = None
    """Set when the final reply was a refusal."""


class PassFacts(_Facts):
    """``pass``: which ids a lease served (reasons, slots and deltas are skipped)."""

    kind: Literal["pass"]
    lease_active_ids: list[str] | None = None
    """Ids a lease served this pass."""


class CursorMoveFacts(_Facts):
    """``cursor_move``: from, to, by."""

    kind: Literal["cursor_move"]
    from_skill: str | None = None
    """The cursor before the pass."""
    to_skill: str | None = None
    """The cursor after the pass."""
    by: str
    """The clause that decided."""


class _ResponseFacts(BaseModel):
    """The part of an ``llm_call`` reply the model reads: its usage."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    usage: Usage = Field(default_factory=Usage)
    """Tokens used."""


class LlmCallFacts(_Facts):
    """``llm_call``: the route and the usage (the request and the reply's text are skipped)."""

    kind: Literal["llm_call"]
    provider: str
    """The provider that answered (how to read its usage's input tokens)."""
    response: _ResponseFacts | None = None
    """The reply's usage; ``None`` when the call failed."""
    route: RouteChoice | None = None
    """The route decided after the reply."""


class LeaseGrantFacts(_Facts):
    """``lease_grant``: the lease."""

    kind: Literal["lease_grant"]
    lease: LeaseRecord
    """The lease as recorded."""


class LeasePruneFacts(_Facts):
    """``lease_prune``: the site, the tenant and the pruned leases (survivors are skipped)."""

    kind: Literal["lease_prune"]
    site: Literal["evaluate", "tool-calls"]
    """The sweep of a pass, or the prune beside a grant."""
    tenant: str | None = None
    """The tenant the sweep compared against."""
    pruned: list[PrunedLease]
    """The leases removed, each with its reason."""


class EngagementFacts(_Facts):
    """``engagement``: the changes and the records after the pass (evidence and facts skipped)."""

    kind: Literal["engagement"]
    changes: list[EngagementChange] = Field(default_factory=list)
    """Engaged / parked changes this pass."""
    records: list[MapEngagementRecord] = Field(default_factory=list)
    """Every map's record after the pass."""


class TurnStartFacts(_Facts):
    """``turn_start``: the envelope only."""

    kind: Literal["turn_start"]


class ToolResultFacts(_Facts):
    """``tool_result``: the envelope only."""

    kind: Literal["tool_result"]


class FindingFacts(_Facts):
    """``finding``: the envelope only."""

    kind: Literal["finding"]


class SkillRejectedFacts(_Facts):
    """``skill_rejected``: the envelope only."""

    kind: Literal["skill_rejected"]


class RouteConflictFacts(_Facts):
    """``route_conflict``: the envelope only."""

    kind: Literal["route_conflict"]


class RerouteSupersededFacts(_Facts):
    """``reroute_superseded``: the envelope only."""

    kind: Literal["reroute_superseded"]


class StepsUnfinishedFacts(_Facts):
    """``steps_unfinished``: the envelope only."""

    kind: Literal["steps_unfinished"]


class WrapUpFacts(_Facts):
    """``wrap_up``: the envelope only."""

    kind: Literal["wrap_up"]


class CompactFacts(_Facts):
    """``compact``: the envelope only."""

    kind: Literal["compact"]


class AskAnswerFacts(_Facts):
    """``ask_answer``: the envelope only."""

    kind: Literal["ask_answer"]


class OutputRetryFacts(_Facts):
    """``output_retry``: the envelope only."""

    kind: Literal["output_retry"]


class RecallFacts(_Facts):
    """``recall``: the envelope only."""

    kind: Literal["recall"]


class MemoryWriteFacts(_Facts):
    """``memory_write``: the envelope only."""

    kind: Literal["memory_write"]


FACTS_MODELS: tuple[type[_Facts], ...] = (
    RunStartFacts,
    RunEndFacts,
    TurnStartFacts,
    TurnEndFacts,
    PassFacts,
    CursorMoveFacts,
    LlmCallFacts,
    LeaseGrantFacts,
    LeasePruneFacts,
    EngagementFacts,
    ToolResultFacts,
    FindingFacts,
    SkillRejectedFacts,
    RouteConflictFacts,
    RerouteSupersededFacts,
    StepsUnfinishedFacts,
    WrapUpFacts,
    CompactFacts,
    AskAnswerFacts,
    OutputRetryFacts,
    RecallFacts,
    MemoryWriteFacts,
)
"""One facts model per event kind."""

Facts = Annotated[
    RunStartFacts
    | RunEndFacts
    | TurnStartFacts
    | TurnEndFacts
    | PassFacts
    | CursorMoveFacts
    | LlmCallFacts
    | LeaseGrantFacts
    | LeasePruneFacts
    | EngagementFacts
    | ToolResultFacts
    | FindingFacts
    | SkillRejectedFacts
    | RouteConflictFacts
    | RerouteSupersededFacts
    | StepsUnfinishedFacts
    | WrapUpFacts
    | CompactFacts
    | AskAnswerFacts
    | OutputRetryFacts
    | RecallFacts
    | MemoryWriteFacts,
    Field(discriminator="kind"),
]
"""The facts of any event line."""

FACTS_ADAPTER: TypeAdapter[Facts] = TypeAdapter(Facts, config=ConfigDict(defer_build=True))
"""Parses one event line into its facts (raises ``ValidationError`` where the full parse would too,
except for errors in fields the facts skip)."""

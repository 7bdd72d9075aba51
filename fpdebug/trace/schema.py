"""Typed trace records: the on-disk contract, one JSON object per line.

Line 0 of a trace is a :class:`TraceHeader`. Every other line is one event: the envelope
(``seq`` dense from 1, ``ts``, ``run_id``, ``turn``, ``iteration``, ``kind``) plus the fields of its
kind. Every model is frozen; :data:`TraceEvent` is one discriminated union on ``kind``, parsed
through :data:`EVENT_ADAPTER`.

Field names are the snake_case of the words of docs/context-model.md (``foundedBy`` → ``founded_by``). Two words
that Python reserves get a suffix: a cursor move's ``from``/``to`` are ``from_skill``/``to_skill``
(the words of docs/trace-contract.md §8.5b's ``RouteHop``).

A feature a run never used writes nothing (docs/context-model.md §11, invariant 10): optional fields default to
``None`` and are left out of the JSON (the writer drops ``None``), and events such as
``lease_grant`` or ``engagement`` are simply absent from such a run.

Bump :data:`SCHEMA_VERSION` when a change would make an older reader misread a newer file.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticCustomError

__all__ = [
    "EARLIEST",
    "EVENT_ADAPTER",
    "EVENT_KINDS",
    "EVENT_MODELS",
    "FORMAT",
    "LATEST",
    "LOOP_BACK_ROUTES",
    "MAX_DURATION_MS",
    "SCHEMA_VERSION",
    "ActiveReason",
    "AnswerAssessmentRow",
    "ArgumentRow",
    "AskAnswerEvent",
    "AskRow",
    "AssumedValue",
    "BasisRow",
    "CachePrefix",
    "CallWindowRow",
    "ClockRow",
    "CompactEvent",
    "ConflictParty",
    "ContextSource",
    "CursorMoveEvent",
    "DeclaredSource",
    "DeliveryLease",
    "DurationMs",
    "EdgeDecl",
    "EffectJudgment",
    "EndState",
    "EngagementChange",
    "EngagementEvent",
    "EngagementPassFacts",
    "EntryDecl",
    "ErrorInfo",
    "EvidenceItem",
    "EvidenceStrength",
    "ExternalGround",
    "FindingEvent",
    "FindingRow",
    "ForkEditKind",
    "ForkEditRecord",
    "ForkOrigin",
    "Frozen",
    "GuardDecl",
    "HonestyArms",
    "ImportSource",
    "InjectionDecl",
    "LeaseGrantEvent",
    "LeasePruneEvent",
    "LeaseRecord",
    "LedgerDecision",
    "LlmCallEvent",
    "LlmRequest",
    "LlmResponse",
    "MalformedEffect",
    "MapEngagementRecord",
    "MapEvidence",
    "MapsPlanDecl",
    "MemoryWriteEvent",
    "Message",
    "MountedMapDecl",
    "NearTie",
    "OutputRetryEvent",
    "PassDelta",
    "PassEvent",
    "PromptSegment",
    "PrunedLease",
    "RecallEvent",
    "RecalledChunk",
    "RerouteSupersededEvent",
    "ResultRow",
    "Retrieval",
    "RouteChoice",
    "RouteConflict",
    "RouteConflictEvent",
    "RunEndEvent",
    "RunStartEvent",
    "SkillGate",
    "SkillMapDecl",
    "SkillRejectedEvent",
    "SkipReason",
    "Skipped",
    "SlotDelta",
    "SlotEntry",
    "SlotRouting",
    "StatedValue",
    "StepChange",
    "StepPointerRecord",
    "StepsUnfinishedEvent",
    "StopReason",
    "StoppedEarly",
    "ThinkingBlock",
    "Timestamp",
    "ToolCallRecord",
    "ToolPeriod",
    "ToolResultEvent",
    "ToolResultStatus",
    "ToolSchema",
    "TraceEvent",
    "TraceHeader",
    "TriggerDecl",
    "TurnEndEvent",
    "TurnStartEvent",
    "Usage",
    "Witness",
    "WrapUpEvent",
]

FORMAT: Final = "fpdebug.trace"
"""The ``format`` every trace header carries."""

SCHEMA_VERSION = 2
"""The schema version this fpdebug writes and the newest it reads. Version 2 (issue 22) stores each
prompt segment, message and tool schema of an ``llm_call`` request once and refers to it after
(:mod:`fpdebug.trace.compact`, docs/trace-contract.md §8.7); every other record is as in version 1,
and a version 1 trace reads the same."""

# ----------------------------------------------------------------------------------------------
# Closed vocabularies (docs/context-model.md §1.1, §1.6, §2.1, §4.1, §5.1, §6.1)

ContextSource: TypeAlias = Literal[
    "rag",
    "skill",
    "memory",
    "instructions",
    "steering",
    "fact",
    "custom",
    "user",
    "tool-result",
    "assistant",
    "base",
    "registry",
]
"""Where a piece of context came from: engineered flavors first, then the baseline sources."""

SkipReason: TypeAlias = Literal[
    "predicate-threw", "unknown-trigger-kind", "unknown-fact", "parked", "ledger-demoted", "fork-edit"
]
"""Why the evaluator left an injection out of a pass (closed set, docs/context-model.md §2.1;
``ledger-demoted``: the context ledger's gate demoted it, docs/backtracking.md §9.10; ``fork-edit``:
a fork's edit left it out of a pass its evaluator admitted it to, docs/guide/fork.md)."""

ToolResultStatus: TypeAlias = Literal[
    "success", "failure", "denied", "invalid", "partial", "pending", "absent"
]
"""The seven tool outcome statuses (docs/context-model.md §1.6)."""

DeliveryLease: TypeAlias = Literal["next-call", "until-skill-exit"]
"""How long a ``require-instruction`` lease serves (docs/context-model.md §4.3)."""

EvidenceStrength: TypeAlias = Literal["explicit", "structural", "semantic", "lexical", "assumed"]
"""The renewal-evidence ladder, strongest first (docs/context-model.md §6.1)."""

TriggerKind: TypeAlias = Literal["always", "rule", "on-tool-return", "llm-activated"]
"""The four trigger kinds (docs/context-model.md §1.2)."""

Slot: TypeAlias = Literal["system-prompt", "messages", "tools"]
"""The three context slots an injection can write to."""


def _is_empty(value: object) -> bool:
    """``exclude_if`` for list fields of a feature: an empty list means the feature was not used."""
    return not value


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
"""The earliest ``ts`` a trace may hold: OTLP times are unsigned nanoseconds since 1970."""

LATEST = datetime(2262, 4, 11, tzinfo=UTC)
"""The latest ``ts`` a trace may hold: nanoseconds since 1970 still fit in 63 bits up to this day."""

MAX_DURATION_MS = 1e12
"""The longest ``latency_ms`` / ``duration_ms`` a record may hold (about 31 years)."""


def _in_time_range(value: datetime) -> datetime:
    # A naive time is read as UTC, as every exporter does.
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not EARLIEST <= aware < LATEST:
        raise PydanticCustomError(
            "out_of_range",
            "time {time} is out of range (1970-01-01 to 2262-04-10: nanoseconds since 1970 in 63 bits)",
            {"time": value.isoformat()},
        )
    return value


def _in_duration_range(value: float) -> float:
    # NaN and infinity are refused before this (allow_inf_nan=False); math.isfinite is a second guard.
    if not (math.isfinite(value) and 0 <= value <= MAX_DURATION_MS):
        raise PydanticCustomError(
            "out_of_range", "duration {value} ms is out of range (0 to 1e12 ms)", {"value": value}
        )
    return value


Timestamp = Annotated[datetime, AfterValidator(_in_time_range)]
"""A ``ts``: a time OTLP can carry (see :data:`EARLIEST`, :data:`LATEST`)."""

DurationMs = Annotated[float, AfterValidator(_in_duration_range)]
"""A wall time in milliseconds: finite, from 0 to :data:`MAX_DURATION_MS`."""


class Frozen(BaseModel):
    """Base of every record and sub-record: immutable, and strict about unknown fields."""

    # allow_inf_nan=False: NaN and Infinity are not JSON; a number that overflows a double (1e400)
    # is refused with them, as "finite_number" (a non-finite problem, docs/guide/reliability.md).
    # defer_build: a model's validator is built the first time it validates, not at import. Building
    # all of them (about 70 models, twice over with the unions) was a third of the viewer's start-up,
    # and its first screen validates two or three kinds (issue 20, docs/guide/performance.md).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, defer_build=True)


# ----------------------------------------------------------------------------------------------
# Shared sub-records


class ErrorInfo(Frozen):
    """An error as recorded: its type name, message and, for HTTP errors, the status."""

    type: str
    """The exception class name (``ProviderError``, ``TimeoutError``…)."""
    message: str
    """The human-readable message, already redacted."""
    status: int | None = None
    """The HTTP status code, when the error came from an HTTP response."""


class ToolSchema(Frozen):
    """A tool as offered to the model: its name, description and JSON-schema parameters."""

    name: str
    """The name the model calls it by."""
    description: str = ""
    """The description sent to the model."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """The JSON schema of its arguments."""
    injection_id: str | None = None
    """The injection that contributed this schema (a skill's tools), or ``None`` for an agent tool."""


class ToolCallRecord(Frozen):
    """One tool call the model asked for."""

    id: str
    """The provider's tool-call id."""
    name: str
    """The tool the model named."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The parsed arguments."""
    raw_args: str | None = None
    """The argument text as the model sent it, kept only when it was not valid JSON."""


class ThinkingBlock(Frozen):
    """One thinking block of an assistant reply (Anthropic extended thinking), kept as it came.

    The API wants the assistant turn that asked for tools sent back with its thinking blocks,
    signatures intact, before the tool results; the conversation keeps them so, and the trace
    records them."""

    type: Literal["thinking", "redacted_thinking"]
    """``thinking`` (readable text and its signature) or ``redacted_thinking`` (encrypted ``data``)."""
    thinking: str | None = None
    """``thinking``: the model's reasoning text."""
    signature: str | None = None
    """``thinking``: the provider's signature over the text, sent back unchanged."""
    data: str | None = None
    """``redacted_thinking``: the encrypted reasoning, sent back unchanged."""


class Message(Frozen):
    """One message of the conversation as sent to the model."""

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks."""
    content: str = ""
    """The text (for ``tool`` messages, the result as the model reads it)."""
    tool_calls: list[ToolCallRecord] | None = None
    """The calls an assistant message asked for."""
    tool_call_id: str | None = None
    """The call a ``tool`` message answers."""
    tool_name: str | None = None
    """The tool a ``tool`` message comes from."""
    injection_id: str | None = None
    """The injection that delivered this message through the messages slot, if one did."""
    from_loop: bool | None = None
    """``user`` messages: ``True`` when the loop wrote it, not the user (a step nudge, a wrap-up
    instruction, docs/context-model.md §7.1): the framework's words, never a source of a value. Absent
    otherwise."""
    is_error: bool | None = None
    """``tool`` messages: ``True`` when the call failed or was refused (``invalid``/``failure``); sent to
    Anthropic as ``is_error``. Absent otherwise."""
    thinking: list[ThinkingBlock] | None = None
    """``assistant`` messages: the reply's thinking blocks, sent back to Anthropic before the text and
    tool calls (other providers leave them out). Absent when the reply had none."""


class Usage(Frozen):
    """Token usage of one LLM call."""

    input_tokens: int = 0
    """Prompt tokens billed."""
    output_tokens: int = 0
    """Completion tokens billed."""
    cache_read_tokens: int | None = None
    """Prompt tokens served from the provider's cache, when it reports them."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache, when it reports them."""
    reasoning_tokens: int | None = None
    """Output tokens the model spent reasoning (OpenAI reasoning, Anthropic thinking), when reported."""
    input_includes_cache: bool | None = None
    """``True``: ``input_tokens`` already counts the cache reads and writes (the OTel GenAI definition;
    every live provider records it so from this version on). Absent in older traces, where an
    Anthropic call's ``input_tokens`` left them out; read through :meth:`total_input_tokens`."""

    def total_input_tokens(self, provider: str) -> int:
        """Every input token of the call, cache reads and writes included, whatever wrote the trace.

        Args:
            provider: the ``llm_call``'s provider (``anthropic`` traces written before the
                :attr:`input_includes_cache` marker reported the cache apart).

        Returns:
            ``input_tokens``, plus the cache tokens for an unmarked Anthropic call.
        """
        if self.input_includes_cache or provider != "anthropic":
            return self.input_tokens
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)


RouteChoice: TypeAlias = Literal[
    "tool-calls", "final", "output-retry", "step-nudge", "wrap-up", "evidence-recheck"
]
"""Route's branches (docs/context-model.md §7.1): every one but ``final`` loops back to the loop head."""

LOOP_BACK_ROUTES: tuple[RouteChoice, ...] = ("output-retry", "step-nudge", "wrap-up")
"""The routes that loop back without running a tool and keep only the reply's text (the batch in place
stays). ``evidence-recheck`` also runs no tool, but the draft it sends back is assessed and kept whole."""

StopReason: TypeAlias = Literal["max-iterations", "cost-budget"]
"""The limits that cut a turn short (docs/context-model.md §7.2)."""


class StoppedEarly(Frozen):
    """Why a turn ended before the model finished asking for tools (docs/context-model.md §7.2)."""

    reason: Literal["max-iterations", "cost-budget", "interrupted"]
    """The limit that cut the turn short (``cost-budget``: :meth:`Agent.cost_budget`'s spend was reached)."""
    iteration: int
    """The iteration on which it was cut."""
    pending_tool_calls: int
    """How many tool calls the model had asked for and did not get."""
    answer_was_empty: bool
    """Whether the model's last content was empty."""
    wrapped_up: bool | None = None
    """The loop asked once more with tools off and the answer is that wrap-up reply (docs/context-model.md
    §7.2); absent when no wrap-up call ran."""
    budget_usd: float | None = None
    """``cost-budget`` only: the run's budget in US dollars."""
    spent_usd: float | None = None
    """``cost-budget`` only: what the run had spent when Route stopped, the call it cut included."""


# ----------------------------------------------------------------------------------------------
# The declared configuration (run_start)


class TriggerDecl(Frozen):
    """When an injection is active, as declared (docs/context-model.md §1.2)."""

    kind: TriggerKind
    """One of the four trigger kinds."""
    tool_name: str | None = None
    """``on-tool-return``: the exact tool name it waits for."""
    tool_pattern: str | None = None
    """``on-tool-return``: the regex (searched, not matched) over tool names."""
    via_tool_name: str | None = None
    """``llm-activated``: the activating tool, normally ``read_skill``."""
    description: str | None = None
    """``rule``: a human description of the predicate, when the author gave one."""
    graph_node: bool = False
    """True when the trigger was compiled from a skill-map node (docs/context-model.md §5.2)."""


class InjectionDecl(Frozen):
    """One declared injection of the catalog."""

    id: str
    """Unique id across the agent."""
    flavor: ContextSource
    """The observability tag (``steering``, ``instructions``, ``fact``, ``skill``…)."""
    description: str | None = None
    """The author's description; the default reason text."""
    trigger: TriggerDecl
    """When it is active."""
    slots: list[Slot]
    """The slots it writes to, in the order system-prompt, messages, tools."""
    system_prompt: str | None = None
    """The system-prompt text (a template when ``templated``)."""
    messages: list[Message] | None = None
    """Messages it contributes to the messages slot."""
    tool_names: list[str] = Field(default_factory=list)
    """Names of the tools it contributes."""
    templated: bool = False
    """``system_prompt`` is a template over ``{{action}}``, ``{{actionBudget}}``, ``{{actionsRemaining}}``."""
    surface_mode: Literal["auto", "system-prompt", "tool-only", "both"] | None = None
    """Skills: how the body reaches the model."""


class GuardDecl(Frozen):
    """One condition of an edge guard over a tool result's JSON field (ANDed with the others)."""

    field: str
    """A dotted path into the tool's JSON result."""
    op: Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in"]
    """The comparison."""
    value: Any = None
    """The value compared against."""


class EntryDecl(Frozen):
    """One entry of a skill map (docs/context-model.md §5.2)."""

    skill_id: str
    """The node it enters."""
    kind: Literal["unconditional", "when", "keywords", "regex"]
    """How the entry decides."""
    keywords: list[str] | None = None
    """``keywords`` entries: the words matched against the user message."""
    pattern: str | None = None
    """``regex`` entries: the pattern searched in the user message."""
    description: str | None = None
    """``when`` entries: a human description of the predicate."""


class EdgeDecl(Frozen):
    """One declared edge of a skill map (docs/context-model.md §5.3)."""

    from_skill: str
    """The source node; the edge fires only while the cursor is here."""
    to_skill: str
    """The target node."""
    on_tool_return: str | None = None
    """The tool name (or regex, see ``tool_is_pattern``) whose return fires the edge."""
    tool_is_pattern: bool = False
    """``on_tool_return`` is a regex searched in the tool name."""
    on_tool_status: list[ToolResultStatus] | None = None
    """The statuses that fire the edge."""
    when: str | None = None
    """A description of the ``when(result)`` predicate, when there is one."""
    guards: list[GuardDecl] = Field(default_factory=list)
    """Guard conditions over the result's fields, ANDed."""
    deterministic: bool = True
    """False for a model-only edge (reachable by ``read_skill`` but never fired by data)."""


class TreeBranchDecl(Frozen):
    """One branch of a decision tree: a condition, then a leaf skill or more branches."""

    label: str
    """The branch's label (a step of a leaf's ``path``)."""
    kind: Literal["unconditional", "when", "keywords", "regex"]
    """How the branch decides (as an entry does)."""
    keywords: list[str] | None = None
    """``keywords`` branches: the words matched against the user message."""
    pattern: str | None = None
    """``regex`` branches: the pattern searched in the user message."""
    leaf: str | None = None
    """The skill this branch ends in; absent when it has ``branches``."""
    branches: list[TreeBranchDecl] = Field(default_factory=list)
    """The branches under it, in declaration order; empty when it ends in a ``leaf``."""


class TreeDecl(Frozen):
    """A decision tree of a skill map (docs/context-model.md §5.2): no cursor, leaves by conjunction."""

    label: str
    """The tree's label (the ``label`` of its leaves' ``tree`` reasons)."""
    branches: list[TreeBranchDecl]
    """The root's branches, in declaration order."""


class SkillMapDecl(Frozen):
    """The declared skill map: nodes, entries, edges, open skills, decision trees."""

    nodes: list[str]
    """Every node id, in declaration order."""
    entries: list[EntryDecl]
    """Entries, in declaration order (the order the resolver tries them)."""
    edges: list[EdgeDecl]
    """Edges, in declaration order (the order the resolver tries them)."""
    open_skills: list[str] = Field(default_factory=list)
    """Skills reachable from anywhere by ``read_skill`` that never move the cursor."""
    trees: list[TreeDecl] | None = None
    """Decision trees, in declaration order; their leaves are nodes with no cursor. Absent when the
    map declares none."""
    entry_mode: Literal["relevance", "read"] | None = None
    """Exclusive entries: ``relevance`` (the best-scored entry is entered) or ``read`` (the model
    reads one); absent for ordinary entries."""


class MountedMapDecl(Frozen):
    """One map the engagement kernel manages (docs/context-model.md §6.3)."""

    id: str
    """The map id (``skill-map`` for the agent's graph)."""
    member_ids: list[str]
    """The injection ids whose contribution the map owns."""
    tool_names: list[str]
    """The tool names the map's members contribute."""
    non_parkable: bool = False
    """The map counts idle passes but never parks."""


class MapsPlanDecl(Frozen):
    """The engagement plan: the mounted maps and the renewal grace."""

    maps: list[MountedMapDecl]
    """Maps in plan order."""
    renewal_grace: int = 3
    """Idle passes a tentative map survives before it parks."""


class ExternalGround(Frozen):
    """A value the app vouches for (docs/honesty.md §12.1 ``external grounds``): an ``external`` source."""

    label: str
    """The app's name for the ground (shown as ``external:<label>``)."""
    value: Any = None
    """The vouched-for value: a scalar, or a text that holds values."""


class DeclaredSource(Frozen):
    """A named document the app declares as a source of argument values (a ``declared`` source)."""

    name: str
    """The source's name (shown as ``declared:<name>``)."""
    content: Any = None
    """The document: JSON data (searched by JSON path) or a text."""


class ToolPeriod(Frozen):
    """The period a tool's call covers, declared by its forms: the arguments that hold its window
    (the time layer, docs/honesty.md §12.6)."""

    start: str
    """The argument that holds the window's start (an ISO date or date-time)."""
    end: str
    """The argument that holds the window's end (an ISO date or date-time)."""
    wall_zone: Literal["app", "utc"] = "app"
    """The zone a wall time without an offset is read in: the app's (``time.appZone``) or UTC."""


class HonestyArms(Frozen):
    """Which honesty layers the agent armed (docs/honesty.md §12), and the build-time facts they read."""

    inputs: bool = False
    """The inputs layer: provenance of every tool argument."""
    results: bool = False
    """The results layer: each tool batch judged once."""
    answer: bool = False
    """The answer layer: the final answer assessed against the findings ledger."""
    argument_sources: bool = False
    """Declared argument sources are armed."""
    tool_middleware: bool = False
    """A before-tool middleware chain can rewrite arguments."""
    evidence_gate: bool | None = None
    """The evidence gate is armed (it writes ``unsupportedValues``; its revision can turn tools off)."""
    tools_off_after_revision: bool | None = None
    """The evidence gate enforces (``toolsOffAfterRevision``): an answer stating a value no source
    supports is sent back once for a revision, with the tools off (docs/honesty.md §12.5)."""
    answer_validation: bool | None = None
    """Answer validation is armed (``validated``): its report, a ``validation`` row, can withhold an
    answer from assessment."""
    hidden_argument_tools: list[str] | None = None
    """Tools that hide their arguments: while one is in reach, no row shows a value the model wrote."""
    external_grounds: list[ExternalGround] | None = None
    """Values the app vouches for, each with its label."""
    declared_sources: list[DeclaredSource] | None = None
    """Named documents the app declares as argument sources."""
    standing_line: Literal["always", "unsupported"] | None = None
    """Which prose answers get a standing line: every one, or those stating an unsupported value."""
    display_names: dict[str, str] | None = None
    """Tool names in the app's words (tool name → display name), where the app declared one."""
    app_zone: str | None = None
    """The time layer is armed (``time.appZone``): the app's IANA zone, the zone of a period form
    declaring ``wall_zone: "app"``. Absent: no ``clock`` or ``call-window`` row is ever filed."""
    periods: dict[str, ToolPeriod] | None = None
    """Under the time layer, the tools whose period declares forms (tool name → period)."""
    argument_ask: bool | None = None
    """The inputs layer asks (``argumentAsk``): an argument of a call Route will run that no source in
    reach holds is put to the user as a question, and the run pauses on that call until
    ``Conversation.resume`` supplies the value (docs/honesty.md §12.7)."""


# ----------------------------------------------------------------------------------------------
# Per-pass facts


class Skipped(Frozen):
    """An injection the evaluator left out of a pass, and why."""

    id: str
    """The injection id."""
    reason: SkipReason
    """One of the closed skip reasons."""
    error: str | None = None
    """The predicate's exception message, or the fixed sentence for ``parked``/``unknown-fact``,
    or the ledger's numbers for ``ledger-demoted``."""


class LedgerDecision(Frozen):
    """One verdict of the context ledger's gate on a pass (docs/backtracking.md §9.10)."""

    id: str
    """The gated injection id."""
    kind: Literal["injection", "skill"]
    """The ledger row it was judged by (a skill-flavored injection is judged as a skill)."""
    verdict: Literal["included", "demoted", "paroled"]
    """Whether it rode: ``paroled`` is a demotion let through (every ``refresh_every``-th)."""
    why: Literal["unknown", "few-offers", "earning", "below-floor"]
    """The policy rule that decided: not in the ledger, offered fewer than ``min_offers`` times,
    earn rate at or above the floor, or below it (demoted or paroled)."""
    offered: int = 0
    """The row's offers in the snapshot the gate holds (0 when unknown)."""
    earn_rate: float = 0.0
    """The row's earn rate in that snapshot."""
    demotions: int = 0
    """Demotion decisions so far for this piece by this gate, this one included (0 unless below the floor)."""


class ActiveReason(Frozen):
    """Why one active injection rode a pass (the provenance the backtracker starts from)."""

    id: str
    """The injection id."""
    via: Literal[
        "always",
        "rule",
        "cursor",
        "tree",
        "on-tool-return",
        "llm-activated",
        "lease",
        "park-card",
        "fork-edit",
    ]
    """What admitted it: its own trigger kind, the skill-map cursor (a compiled node trigger), a
    decision tree of the map (every predicate on the leaf's path held), a lease, the kernel's park
    card row, or a fork's edit (``add-injection``, ``grant-lease``)."""
    tool_name: str | None = None
    """``on-tool-return``: the matching tool; ``lease``: the granting tool; ``llm-activated``:
    ``read_skill`` or the proposing tool."""
    tool_call_id: str | None = None
    """The call behind ``tool_name``."""
    at_iteration: int | None = None
    """The iteration of that call (the grant, the activation, the matching batch)."""
    delivery_lease: DeliveryLease | None = None
    """``lease``: which lease served it."""
    tenant: str | None = None
    """``lease``: the lease's tenant skill (``None`` when granted without a tenant)."""
    path: list[str] | None = None
    """``tree``: the labels of the branches taken from the root to the leaf."""
    label: str | None = None
    """``tree``: the decision tree's label."""


class SlotEntry(Frozen):
    """One injection's landing in a slot (docs/context-model.md §3.5)."""

    id: str
    """The injection id."""
    source: str
    """Its flavor."""
    reason: str
    """Its description, or ``"<flavor> '<id>' active"``."""


class SlotRouting(Frozen):
    """Which active injections landed in which slot on a pass."""

    system_prompt: list[SlotEntry] = Field(default_factory=list)
    """Injections with a non-empty prompt that are not ``tool-only`` skills."""
    messages: list[SlotEntry] = Field(default_factory=list)
    """Injections that contribute messages."""
    tools: list[SlotEntry] = Field(default_factory=list)
    """Injections that contribute tools."""


class SlotDelta(Frozen):
    """How one slot's ids changed since the previous pass."""

    added: list[str] = Field(default_factory=list)
    """Ids present now and not before."""
    removed: list[str] = Field(default_factory=list)
    """Ids present before and gone now."""
    kept: list[str] = Field(default_factory=list)
    """Ids present in both."""


class PassDelta(Frozen):
    """Per-slot deltas of one pass against the previous one."""

    system_prompt: SlotDelta = Field(default_factory=SlotDelta)
    """System-prompt slot."""
    messages: SlotDelta = Field(default_factory=SlotDelta)
    """Messages slot."""
    tools: SlotDelta = Field(default_factory=SlotDelta)
    """Tools slot."""


class Witness(Frozen):
    """The text that decided a data-matched entry (bounded to 80 characters)."""

    text: str
    """The matched text, whitespace collapsed."""
    keyword: str | None = None
    """The keyword that matched, for keyword entries."""


class NearTie(Frozen):
    """A turn-start near tie (docs/context-model.md §5.1): tier 2's best score cleared the threshold but
    not the margin over the runner-up, so tier 2 did not decide and its shortlist went to tier 3."""

    best: float
    """The best tier-2 score."""
    runner_up: float
    """The second-best tier-2 score (within the margin of the best)."""


class ConflictParty(Frozen):
    """One tool result whose edge fired in a batch."""

    tool_call_id: str | None = None
    """The call whose result fired the edge."""
    tool_name: str
    """The tool."""
    target: str
    """The edge's target node."""


class RouteConflict(Frozen):
    """Two or more edges fired to different targets in one batch; the first result won."""

    winner: ConflictParty
    """The result (in call order) whose edge moved the cursor."""
    losers: list[ConflictParty]
    """The results whose edges named other targets."""


class LeaseRecord(Frozen):
    """One granted instruction lease (docs/context-model.md §4.3)."""

    instruction_id: str
    """The injection the lease serves."""
    delivery_lease: DeliveryLease
    """``next-call`` or ``until-skill-exit``."""
    skill_id: str | None = None
    """The tenant that held the tenure at grant; ``None`` when there was none."""
    tool_name: str
    """The granting tool."""
    tool_call_id: str | None = None
    """The granting call."""
    iteration: int
    """The iteration whose batch granted it."""


class PrunedLease(LeaseRecord):
    """A lease removed from the record, and why."""

    reason: Literal["spent", "tenure-ended"]
    """``spent`` for a served ``next-call``; ``tenure-ended`` when the tenant changed."""


class EngagementPassFacts(Frozen):
    """The slice of a pass the renewal feed reads (docs/context-model.md §6.2 ``EngagementPass``)."""

    current_node: str | None = None
    """The cursor after this pass's advance."""
    move_by: str | None = None
    """The clause that won the advance."""
    witness: str | None = None
    """The matched text of that clause, when it carried one."""
    tool_names: list[str] = Field(default_factory=list)
    """The previous batch's tool names, in call order."""
    pending_skill_pick: str | None = None
    """The hop the read_skill gate accepted last iteration."""
    accepted_skill_picks: list[str] = Field(default_factory=list)
    """Every read_skill pick the gate accepted on the previous pass."""
    served_last_pass: list[str] = Field(default_factory=list)
    """The ids the previous pass served."""


class EvidenceItem(Frozen):
    """One piece of renewal evidence and its strength."""

    kind: Literal["owned-tool-called", "cursor-moved", "explicit-pick", "member-activated"]
    """What produced it."""
    tool_name: str | None = None
    """``owned-tool-called``: the tool."""
    by: str | None = None
    """``cursor-moved``: the move's clause."""
    skill_id: str | None = None
    """``explicit-pick`` / ``member-activated``: the skill."""
    strength: EvidenceStrength
    """Where it sits on the ladder."""


class MapEvidence(Frozen):
    """All renewal evidence one map earned on a pass."""

    map_id: str
    """The map."""
    items: list[EvidenceItem] = Field(default_factory=list)
    """In the feed's order (owned tools, cursor move, pick, activations)."""
    strongest: EvidenceStrength | None = None
    """The strongest item's strength, ``None`` when there is none."""


class EngagementChange(Frozen):
    """A map became engaged (founded, re-engaged, upgraded, new tenant) or parked (docs/context-model.md §6.3)."""

    kind: Literal["engaged", "parked"]
    """Which way it changed."""
    map_id: str
    """The map."""
    iteration: int
    """The pass."""
    by: EvidenceStrength
    """The standing's strength after the change (for ``parked``, the strength that decayed)."""
    witness: str | None = None
    """The witness carried with the change."""
    reengaged: bool | None = None
    """A parked map came back."""
    upgraded: bool | None = None
    """Corroboration raised ``by``."""
    tenant_changed: bool | None = None
    """The cursor moved to another member."""
    at: str | None = None
    """The member the cursor is on (tenant changes)."""
    founded_by: EvidenceStrength | None = None
    """The founding strength, repeated for context."""
    idle_calls: int | None = None
    """``parked``: consecutive idle passes counted."""


class MapEngagementRecord(Frozen):
    """A map's standing after a pass: position, founding and eligibility kept apart (docs/context-model.md §6.3)."""

    map_id: str
    """The map."""
    standing: Literal["engaged", "parked"]
    """Whether its contribution rides the next call."""
    by: EvidenceStrength
    """Eligibility: why it is served now."""
    since: int
    """The iteration the current standing began (founding, park, re-engage only)."""
    founded_by: EvidenceStrength
    """Founding strength; written once."""
    founded_at: int
    """Founding iteration; written once."""
    founded_on: str | None = None
    """The member the cursor was on at founding; written once."""
    at: str | None = None
    """The member the cursor is on (observed)."""
    at_by: EvidenceStrength | None = None
    """The strength of the move that put it there."""
    at_since: int | None = None
    """When the cursor arrived on that member."""
    idle: int = 0
    """Consecutive idle passes."""
    witness: str | None = None
    """The text that founded a guess."""


class EffectJudgment(Frozen):
    """How one tool effect was judged (docs/context-model.md §4.2)."""

    kind: Literal["propose-transition", "require-instruction"]
    """The effect kind."""
    outcome: Literal["accepted", "refused", "superseded"]
    """The judgment."""
    target_skill_id: str | None = None
    """``propose-transition``: the proposed target."""
    reason: str | None = None
    """``propose-transition``: the tool's declared reason."""
    instruction_id: str | None = None
    """``require-instruction``: the leased injection."""
    delivery_lease: str | None = None
    """``require-instruction``: the lease word as given."""
    refusal_reason: str | None = None
    """Why it was refused."""
    superseded_by: Literal["earlier-proposal"] | None = None
    """Why it was superseded."""


class MalformedEffect(Frozen):
    """An effect with a known kind but bad fields; never half-applied."""

    kind: str
    """The effect's kind."""
    refusal_reason: str
    """The first failing check's sentence."""


class SkillGate(Frozen):
    """What the read_skill gate decided about one pick (docs/context-model.md §5.5)."""

    skill_id: str
    """The requested skill."""
    outcome: Literal["hop", "open", "re-engagement", "rejected"]
    """Accepted as a hop (moves the cursor next pass), as an open skill, as a re-engagement of a
    parked map member, or rejected."""


class StepPointerRecord(Frozen):
    """Where a skill's step procedure stands (docs/context-model.md §5.6)."""

    skill_id: str
    """The skill whose steps these are (the tenant)."""
    step: int
    """The current step, 1-based; ``total + 1`` means the steps are done."""
    total: int
    """How many steps the skill declares."""
    skipped: list[int] = Field(default_factory=list)
    """The steps skipped so far (moved past without being done)."""


class StepChange(Frozen):
    """What one tool result did to the step pointer (docs/context-model.md §5.6; §8.2's ``step_advanced`` /
    ``step_skipped``). Written only on a result that advanced or skipped a step."""

    outcome: Literal["step_advanced", "step_skipped"]
    """``step_advanced``: a call of the current step's tool ran clean and the step is done;
    ``step_skipped``: the model called ``skip_step`` with a reason."""
    skill_id: str
    """The skill whose procedure it is."""
    step: int
    """The 1-based step the result concerned."""
    total: int
    """How many steps the skill declares."""
    tool: str | None = None
    """The tool that step names."""
    held: bool = False
    """A skip under the skill's ``on_skip="hold"``: the step stays current (the pointer did not move)."""
    reason: str | None = None
    """The reason ``skip_step`` gave (skips only)."""
    step_pointer: StepPointerRecord
    """The pointer after this result."""


class Retrieval(Frozen):
    """How a recalled chunk ranked when it was retrieved (docs/context-model.md §1.3)."""

    score: float
    """The retriever's or store's score for the chunk."""
    rank: int = Field(ge=1)
    """Its 1-based position among the chunks its source recalled this turn."""
    threshold: float | None = None
    """The minimum score its source kept (``None``: no threshold)."""
    recall_id: str
    """The ``Agent.rag`` / ``Agent.memory`` declaration that recalled it."""


class PromptSegment(Frozen):
    """One piece of the system prompt sent, tagged by where it came from."""

    source: str
    """``base`` for the agent's own prompt, else the injection's flavor."""
    injection_id: str | None = None
    """The injection that contributed it (``None`` for the base prompt); for a recalled chunk, the
    memory entry's or retrieved chunk's id."""
    text: str
    """The exact text."""
    retrieval: Retrieval | None = None
    """Set on a recalled chunk (``source`` ``rag`` or ``memory``): its score and rank, added outside
    the evaluator (docs/context-model.md §1.3)."""


class CachePrefix(Frozen):
    """Where the stable, cacheable prefix of a request ends (recorded only when prompt caching is on).

    Stable means on every call unchanged: the agent's own prompt and tools, and the segments and
    tools of always-on injections that are not templates. A provider that caches (Anthropic's
    ``cache_prompt``) puts its breakpoints at these ends."""

    system_segments: int = Field(ge=0)
    """How many leading segments of ``system_prompt`` are stable."""
    tools: int = Field(ge=0)
    """How many leading ``tools`` are stable."""


class LlmRequest(Frozen):
    """Exactly what was sent to the model."""

    system_prompt: list[PromptSegment] = Field(default_factory=list)
    """Segments in order; the prompt sent is their texts joined by a blank line."""
    messages: list[Message] = Field(default_factory=list)
    """The conversation."""
    tools: list[ToolSchema] = Field(default_factory=list)
    """The tool schemas offered, in order."""
    temperature: float | None = None
    """Sampling temperature, when set."""
    max_tokens: int | None = None
    """Reply budget, when set."""
    seed: int | None = None
    """The seed of a seeded rerun, when there is one."""
    cache_prefix: CachePrefix | None = None
    """The stable prefix a caching provider marked for its cache; absent when caching is off."""


class LlmResponse(Frozen):
    """What the model answered."""

    content: str = ""
    """The text."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """The tool calls it asked for, in order."""
    stop_reason: str | None = None
    """The provider's stop reason."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens used."""
    id: str | None = None
    """The provider's response id (``chatcmpl-…``, ``msg_…``), when the source recorded it."""
    model: str | None = None
    """The model that answered, as the provider named it (may differ from the requested one), when recorded."""
    refusal: str | None = None
    """The model's refusal, when the provider reports one apart from the text (OpenAI's ``refusal``
    field); absent otherwise. A refusal by stop reason (``refusal``, ``content_filter``) is in
    :attr:`stop_reason`."""
    thinking: list[ThinkingBlock] | None = None
    """The reply's thinking blocks (Anthropic extended thinking), in order, signatures intact; absent
    when there were none."""


# ----------------------------------------------------------------------------------------------
# Honesty rows (docs/honesty.md §12)


class ArgumentRow(Frozen):
    """Where one tool argument's value came from (inputs layer)."""

    row: Literal["argument"] = "argument"
    tool_call_id: str
    """The call the argument belongs to."""
    tool_name: str
    """The tool called."""
    path: str
    """The argument's JSON path (``$.amount``)."""
    value: Any = None
    """The value, or ``None`` when a tool in reach hides its arguments."""
    source: Literal["user", "tool-result", "external", "declared", "nowhere"]
    """What holds the value."""
    source_tool_call_id: str | None = None
    """``tool-result``: the call whose result holds it."""
    source_tool_name: str | None = None
    """``tool-result``: that call's tool."""
    source_path: str | None = None
    """``tool-result`` / ``declared``: the JSON path in the source."""
    source_iteration: int | None = None
    """``tool-result``: the iteration of the source call."""
    source_text: str | None = None
    """A text source (not JSON): the text in it that holds the value; ``None`` when hidden."""
    label: str | None = None
    """``external``: the app's label for the ground; ``declared``: the source's name."""
    refused_reference: str | None = None
    """A source the model cited that does not hold the value (filtered out)."""
    rewritten_to: Any = None
    """A middleware rewrote the value; the call ran with this."""
    rewritten: bool | None = None
    """True when a middleware rewrote the value (set even when the values are hidden)."""
    hidden: bool = False
    """The value is withheld because a tool in reach hides its arguments."""
    dropped_from: int | None = None
    """Count of dropped ``from`` entries, when no basis row was filed."""
    answered: bool | None = None
    """The user gave this value, answering the layer's ask (``source`` is ``user``; the call ran
    with it)."""


class AskRow(Frozen):
    """The inputs layer's argument ask (``argumentAsk``): the run pauses on this call until the user
    answers (docs/honesty.md §12.7)."""

    row: Literal["ask"] = "ask"
    tool_call_id: str
    """The call the run pauses on (``pausedToolCallId``); it does not run before the answer."""
    tool_name: str
    """The tool called."""
    path: str
    """The argument asked about (its JSON path)."""
    question: str
    """The question put to the user."""
    guessed: Any = None
    """The value the model supplied, which no source in reach holds (``None`` when hidden)."""
    hidden: bool = False
    """The guess is withheld because a tool in reach hides its arguments."""


class BasisRow(Frozen):
    """A call that declared its basis (``from`` entries)."""

    row: Literal["basis"] = "basis"
    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    from_entries: list[str] = Field(default_factory=list)
    """The basis entries kept."""
    dropped_from: int = 0
    """How many ``from`` entries were dropped."""


class ResultRow(Frozen):
    """What one call of a judged batch returned (results layer)."""

    row: Literal["result"] = "result"
    batch_iteration: int
    """The iteration that dispatched the batch."""
    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    status: ToolResultStatus | None = None
    """The declared status, when the tool declared one."""
    coverage: str | None = None
    """The coverage the tool declared, when it declared one."""
    values: list[str] = Field(default_factory=list)
    """The values the result holds (numbers, amounts, dates, ids, quoted strings)."""
    values_omitted: int | None = None
    """How many more values the result holds beyond those listed (the list is bounded)."""
    beyond_now: bool | None = None
    """Under the time layer: the call's window ends after this turn's clock ``now``, so the result
    cannot cover the part of the window still to come (``time_of_batch``); absent otherwise."""


class ClockRow(Frozen):
    """A turn's clock (time layer): the instant the turn reads as "now", in the app's zone."""

    row: Literal["clock"] = "clock"
    turn: int
    """The turn whose clock it is (a clock from another turn never judges this one's calls)."""
    now: datetime
    """The clock's reading, in the app's zone."""
    zone: str
    """The app's zone (``time.appZone``)."""


class CallWindowRow(Frozen):
    """The window one call covers (time layer): its period's forms, read in their zone."""

    row: Literal["call-window"] = "call-window"
    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    start: datetime
    """Where the window starts (a date alone starts at midnight)."""
    end: datetime
    """Where the window ends (a date alone ends at the next midnight: the whole day is in it)."""
    zone: str
    """The zone its wall times were read in (the app's, or ``UTC``)."""


class StatedValue(Frozen):
    """One value the answer states, and the rows that support it."""

    text: str
    """The value as written in the answer."""
    kind: Literal["number", "amount", "date", "id", "quoted"]
    """What kind of value it is."""
    supported: bool
    """Whether any source row holds it."""
    supported_by: list[str] = Field(default_factory=list)
    """References to the supporting rows (``tool:<call id>``, ``user``, ``external:<label>``)."""
    start: int | None = None
    """Where the value's first occurrence starts in the answer (a character offset)."""
    end: int | None = None
    """Where that occurrence ends (exclusive): ``answer[start:end] == text``."""


class AssumedValue(Frozen):
    """A middleware rewrite that superseded an argument row (the "Assumed" block)."""

    tool_call_id: str
    """The call that ran with the rewrite."""
    path: str
    """The rewritten argument."""
    original: Any = None
    """The value the model supplied."""
    rewritten_to: Any = None
    """The value the call ran with."""
    removed: bool | None = None
    """True when the middleware removed the argument (the call ran without it)."""
    hidden: bool | None = None
    """True when the values are withheld because the superseded row hides them."""


class AnswerAssessmentRow(Frozen):
    """The answer layer's assessment of the final answer."""

    row: Literal["assessment"] = "assessment"
    reads: list[str]
    """The committed keys the fold read (``answer_fold_reads``)."""
    values: list[StatedValue] = Field(default_factory=list)
    """Each value the answer states."""
    assumed: list[AssumedValue] = Field(default_factory=list)
    """Middleware rewrites."""
    stopped_early: StoppedEarly | None = None
    """A limit cut the turn short."""
    standing_line: str | None = None
    """One line for a prose answer, when armed."""


class ValidationRow(Frozen):
    """Answer validation's report on the final answer (answer layer, docs/honesty.md §12.5)."""

    row: Literal["validation"] = "validation"
    withheld: bool
    """The report withholds the answer: it is never assessed."""
    reason: str | None = None
    """Why, as the app's validator said (or how the validator failed)."""


FindingRow = Annotated[
    ArgumentRow
    | AskRow
    | BasisRow
    | ClockRow
    | CallWindowRow
    | ResultRow
    | AnswerAssessmentRow
    | ValidationRow,
    Field(discriminator="row"),
]
"""Any honesty row."""


# ----------------------------------------------------------------------------------------------
# The records


class ImportSource(Frozen):
    """Where an imported trace came from: another program's recording, turned into this contract.

    A trace written by fpdebug's own engine has no source. An imported one says which format it was
    read from and which record kinds that format cannot hold, so a view shows "not recorded by
    <format>" instead of an empty pane (an OTLP run has no passes and no leases)."""

    format: Literal["agentfootprint.recording.v1", "agentfootprint.recording", "otlp"]
    """The source format, detected by content."""
    path: str | None = None
    """The file name it was imported from (a name, not a path to follow), or None when collected live."""
    producer: str | None = None
    """Who wrote the source, as far as it says (``agentfootprint 9.62``, an OTel instrumentation scope)."""
    not_recorded: tuple[str, ...] = ()
    """Record kinds the source format cannot hold (``pass``, ``lease_grant``, …): absent, not empty."""
    gaps: tuple[str, ...] = ()
    """What the source itself says it lost (``droppedEvents: 12``), in words."""


class TraceHeader(Frozen):
    """Line 0 of every trace."""

    kind: Literal["trace_header"] = "trace_header"
    format: Literal["fpdebug.trace"] = FORMAT
    """Always ``fpdebug.trace``."""
    schema_version: int = SCHEMA_VERSION
    """The schema the file was written with."""
    producer: str
    """The writing program and version (``fpdebug 0.1.0``)."""
    created: Timestamp
    """When the file was created (UTC, from the injected clock)."""
    source: ImportSource | None = None
    """Set only by an importer: the recording this trace was made from."""


class _Event(Frozen):
    """The envelope every event carries."""

    kind: str
    """The record kind; first on the line so a reader can peek at it without parsing the rest."""
    seq: int = Field(ge=1)
    """Position in the trace: dense, from 1 (line 0 is the header)."""
    ts: Timestamp
    """When the engine emitted the event (UTC, from the injected clock)."""
    run_id: str
    """The run the event belongs to."""
    turn: int | None = None
    """The 1-based turn, absent for run-level events."""
    iteration: int | None = None
    """The 1-based iteration, absent where it has no meaning."""


ForkEditKind = Literal[
    "drop-injection",
    "add-injection",
    "tool-result",
    "grant-lease",
    "revoke-lease",
    "model",
    "provider",
    "user-message",
]
"""What a fork may edit at its pass."""


class ForkEditRecord(Frozen):
    """One edit a fork applied at its pass (``fpdebug fork``, docs/guide/fork.md)."""

    kind: ForkEditKind
    """What was edited."""
    target: str | None = None
    """The injection, lease (its injection id) or tool call edited; absent for a model, provider or
    user-message edit."""
    value: str | None = None
    """The new value (a tool result's text, a model, a provider, a user message); absent for a drop,
    an add, a grant or a revoke."""


class ForkOrigin(Frozen):
    """Where a forked run came from: its parent trace and run, the pass it forked at, and the edits."""

    trace: str
    """The parent trace's file name (a name to show, not a path to follow)."""
    run_id: str
    """The parent run."""
    turn: int = Field(ge=1)
    """The turn of the fork's pass."""
    at_pass: int = Field(ge=1)
    """The iteration (the Evaluate pass) of that turn the edits apply from."""
    edits: list[ForkEditRecord] = Field(default_factory=list)
    """The edits, in the order they were given."""
    provider: str
    """The provider the run continued on from the fork's pass (``replay``, ``scripted``, a live one)."""


class RunStartEvent(_Event):
    """The agent's declared configuration."""

    kind: Literal["run_start"] = "run_start"
    agent_name: str = "agent"
    """The agent's name."""
    provider: str
    """``scripted``, ``replay``, ``anthropic``, ``openai``…"""
    model: str
    """The model name."""
    max_iterations: int
    """The per-turn iteration limit."""
    system_prompt: str = ""
    """The agent's base system prompt."""
    injections: list[InjectionDecl] = Field(default_factory=list)
    """The catalog, in declaration order."""
    tools: list[ToolSchema] = Field(default_factory=list)
    """The agent's own tools (skills' tools are on their injections)."""
    skill_map: SkillMapDecl | None = None
    """The skill map, when one is mounted."""
    maps: MapsPlanDecl | None = None
    """The engagement plan, when the kernel is mounted."""
    honesty: HonestyArms | None = None
    """The honesty arms, when any is armed."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Other settings worth seeing (temperature, scenario name…), redacted."""
    server_address: str | None = None
    """The host a live provider talked to (no scheme, credentials, path or query); absent for the
    scripted and replay providers."""
    server_port: int | None = Field(default=None, ge=0, le=65535)
    """The port a live provider talked to (the scheme's default when the URL names none)."""
    fork_of: ForkOrigin | None = None
    """Set only on a forked run (``fpdebug fork``): its parent and the edits; absent otherwise."""


class TurnStartEvent(_Event):
    """A user message starts a turn."""

    kind: Literal["turn_start"] = "turn_start"
    user_message: str
    """What the user said."""


class EndState(Frozen):
    """The carriers a turn (or a run) left at its end (docs/context-model.md §7.3): what the next turn or a
    reader starts from, recorded rather than rebuilt from grants, prunes and the last pass."""

    cursor: str | None = None
    """The skill-map cursor after the last pass (what ``continuity("conversation")`` carries on)."""
    leases: list[LeaseRecord] | None = None
    """The instruction leases still held, in grant order; absent when no lease record exists."""
    engagement: list[MapEngagementRecord] | None = None
    """Every map's engagement record; absent when the kernel is not mounted."""
    step_pointer: list[StepPointerRecord] | None = None
    """The step pointer (``[]`` when no procedure holds the tenure); absent when no skill declares steps."""


class TurnEndEvent(_Event):
    """A turn's answer and totals."""

    kind: Literal["turn_end"] = "turn_end"
    final_content: str
    """The final answer."""
    input_tokens: int = 0
    """Prompt tokens over the turn."""
    output_tokens: int = 0
    """Completion tokens over the turn."""
    iteration_count: int
    """The iteration of the final pass."""
    stopped_early: StoppedEarly | None = None
    """Set when a limit cut the turn short."""
    refusal: str | None = None
    """Set when the final reply was a refusal: the provider's word (``refusal``, ``content_filter``)
    or ``refusal`` for a reported refusal message; absent otherwise."""
    end_state: EndState | None = None
    """The carriers the turn left (cursor, leases, engagement, step pointer); absent on an agent that uses
    none of them."""


class PassEvent(_Event):
    """One Evaluate pass (docs/context-model.md §3.4, §8.3)."""

    kind: Literal["pass"] = "pass"
    active_ids: list[str]
    """Active injection ids in declaration order (the park card not included)."""
    reasons: list[ActiveReason] = Field(default_factory=list)
    """Why each active id rode, in the same order (the park card row last, when present)."""
    skipped: list[Skipped] = Field(default_factory=list)
    """Injections left out, with the reason."""
    ledger: list[LedgerDecision] | None = None
    """The context ledger gate's verdicts this pass, one per gated injection whose own trigger
    admitted it; absent when no gate decided."""
    evaluated_total: int
    """How many injections were evaluated."""
    trigger_kind_counts: dict[str, int] = Field(default_factory=dict)
    """Active injections counted by trigger kind."""
    lease_active_ids: list[str] | None = None
    """Ids a lease served this pass; absent when no lease record exists."""
    lease_survivors: list[LeaseRecord] | None = None
    """The leases the pass's sweep kept for future passes, in grant order (also when it pruned nothing);
    absent when no lease record exists."""
    parked_ids: list[str] | None = None
    """Ids the kernel suppressed this pass; absent when no map is parked."""
    served_ids: list[str] | None = None
    """Ids served (park card included); absent when the kernel is not mounted."""
    superseded_ids: list[str] | None = None
    """Conditional entries whose ``when`` matched while the cursor was elsewhere; absent when none."""
    step_pointer: list[StepPointerRecord] | None = None
    """The step pointer this pass re-keyed to its tenant (docs/context-model.md §3.4 step 4): one record, or ``[]``
    when no procedure holds the tenure; absent when no skill declares steps."""
    by_slot: SlotRouting = Field(default_factory=SlotRouting)
    """Which slot each active injection landed in."""
    delta: PassDelta = Field(default_factory=PassDelta)
    """Per-slot change against the previous pass."""


class CursorMoveEvent(_Event):
    """The cursor advance of one pass (every pass of an agent with a skill map)."""

    kind: Literal["cursor_move"] = "cursor_move"
    from_skill: str | None = None
    """The cursor before the pass."""
    to_skill: str | None = None
    """The cursor after the pass."""
    by: str
    """The clause that decided (``entry``, ``route``, ``model-pick``, ``tool-proposal``, ``stay``…)."""
    strength: EvidenceStrength
    """``strength_of_move(by)``."""
    witness: Witness | None = None
    """The matched text, for data-matched entries; the user message, for ``intent`` and ``decider``."""
    reachable: list[str] = Field(default_factory=list)
    """What the read_skill gate admits from the landed cursor."""
    conflict: RouteConflict | None = None
    """Set on ``route`` moves when edges to different targets fired."""
    guard: str | None = None
    """A description of the guard that passed, when the winning edge had one."""
    guards_closed: list[str] | None = None
    """Guarded edges from the cursor whose guards did not pass."""
    score: float | None = None
    """``intent`` moves (and a scored ``decider`` move): the turn-start classifier's score of ``to_skill``."""
    offered: list[str] | None = None
    """``decider`` moves: the menu the turn-start decider resolved out of band; ``model-pick`` moves:
    the menu outstanding to the model that the pick resolved."""
    declined_offer: bool | None = None
    """``model-pick`` moves that resolved an outstanding menu: ``True`` when the model picked off the
    menu (absent when it picked on it)."""
    near_tie: NearTie | None = None
    """Turn-start moves after a near tie: tier 2's best and runner-up scores were within the margin, so
    tier 2 did not decide; ``offered`` is the shortlist (absent otherwise)."""


class LeaseGrantEvent(_Event):
    """A ``require-instruction`` effect was accepted and a lease granted."""

    kind: Literal["lease_grant"] = "lease_grant"
    lease: LeaseRecord
    """The lease as recorded."""


class LeasePruneEvent(_Event):
    """Leases left the record (docs/context-model.md §4.3; only written when something was pruned)."""

    kind: Literal["lease_prune"] = "lease_prune"
    site: Literal["evaluate", "tool-calls"]
    """The tenure sweep of a pass, or the prune that accompanies a grant."""
    tenant: str | None = None
    """The tenant the sweep compared against."""
    pruned: list[PrunedLease]
    """The leases removed, each with its reason."""
    survivors: list[LeaseRecord] = Field(default_factory=list)
    """The leases that remain."""


class EngagementEvent(_Event):
    """The kernel's pass: evidence per map, changes, records after (every pass while mounted)."""

    kind: Literal["engagement"] = "engagement"
    pass_facts: EngagementPassFacts
    """What the renewal feed read."""
    evidence: list[MapEvidence] = Field(default_factory=list)
    """Renewal evidence per map, in plan order."""
    changes: list[EngagementChange] = Field(default_factory=list)
    """Engaged / parked changes this pass."""
    records: list[MapEngagementRecord] = Field(default_factory=list)
    """Every map's record after the pass."""
    parked_injection_ids: list[str] = Field(default_factory=list)
    """Members of parked maps, suppressed this pass."""
    parked_tool_names: list[str] = Field(default_factory=list)
    """Tools of parked maps, taken off the wire this pass."""
    park_card: str | None = None
    """The card the model saw, when a map is parked."""


class LlmCallEvent(_Event):
    """One model call: the exact request and the reply (also the replay cassette entry)."""

    kind: Literal["llm_call"] = "llm_call"
    call_index: int
    """1-based index of the call in the run."""
    provider: str
    """The provider that answered."""
    model: str
    """The model asked."""
    request: LlmRequest
    """What was sent."""
    response: LlmResponse | None = None
    """What came back; ``None`` when the call failed."""
    error: ErrorInfo | None = None
    """Why the call failed."""
    latency_ms: DurationMs = 0.0
    """Wall time of the call, from the injected clock."""
    route: RouteChoice | None = None
    """The route decided after the reply (docs/context-model.md §7.1): ``tool-calls``, ``final``, one
    of the loop's non-tool ways back, ``step-nudge`` and ``wrap-up``, or ``evidence-recheck``: the evidence
    gate sending the answer back for its revision turn (docs/honesty.md §12.5)."""


class ToolResultEvent(_Event):
    """One tool call's result as the model read it."""

    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments it ran with."""
    result: str
    """The result text the model read (an envelope's ``content``, refusals appended)."""
    status: ToolResultStatus | None = None
    """The status an envelope declared, or ``failure`` when the tool raised."""
    # Empty lists are not written: a run whose tools never return effects writes no effects keys
    # (docs/context-model.md §11.10: an absent feature writes no keys). Read back, a missing key is an empty list.
    effects: list[EffectJudgment] = Field(default_factory=list, exclude_if=_is_empty)
    """Each effect and its judgment, in declaration order (not written when there are none)."""
    malformed: list[MalformedEffect] = Field(default_factory=list, exclude_if=_is_empty)
    """Effects with bad fields (not written when there are none)."""
    skill_gate: SkillGate | None = None
    """``read_skill`` calls: what the gate decided."""
    error: ErrorInfo | None = None
    """When the tool raised or timed out."""
    duration_ms: DurationMs = 0.0
    """Wall time of the call, from the injected clock."""
    coverage: str | None = None
    """The coverage the tool declared for its result (``first 50 of 300``…), when it declared one."""
    step: StepChange | None = None
    """What this result did to the step pointer (docs/context-model.md §5.6); absent when it moved nothing (no
    procedure in progress, another tool than the current step's, a failed call, a teaching
    ``skip_step`` answer)."""


class FindingEvent(_Event):
    """Honesty rows merged in one write by one layer visit (docs/honesty.md §12.1)."""

    kind: Literal["finding"] = "finding"
    layer: Literal["inputs", "results", "answer"]
    """The layer that filed the rows."""
    rows: list[FindingRow]
    """The rows."""


class SkillRejectedEvent(_Event):
    """The read_skill gate refused a pick (docs/context-model.md §5.5)."""

    kind: Literal["skill_rejected"] = "skill_rejected"
    requested_id: str
    """The skill the model asked for."""
    current_skill_id: str | None = None
    """The cursor when it asked."""
    allowed: list[str]
    """What it could have picked."""
    tool_call_id: str | None = None
    """The refused call."""
    posture: str | None = None
    """The gate's posture, when not the default."""


class RouteConflictEvent(_Event):
    """Edges or proposals in one batch named different targets (docs/trace-contract.md §8.2)."""

    kind: Literal["route_conflict"] = "route_conflict"
    from_skill_id: str | None = None
    """The cursor the edges left from."""
    winner: ConflictParty
    """The winning result."""
    losers: list[ConflictParty]
    """The others."""
    source: Literal["tool-proposal"] | None = None
    """``tool-proposal`` when the conflict was between proposals."""


class RerouteSupersededEvent(_Event):
    """A pick or proposal the pass did not honour (docs/context-model.md §3.4 step 10)."""

    kind: Literal["reroute_superseded"] = "reroute_superseded"
    volunteered_id: str
    """What the model or tool volunteered."""
    won_id: str | None = None
    """Where the cursor went instead."""
    from_skill_id: str | None = None
    """The cursor before the pass."""
    source: Literal["tool-proposal"] | None = None
    """``tool-proposal`` when a proposal was superseded."""


class StepsUnfinishedEvent(_Event):
    """The model answered with a step procedure unfinished; Route chose ``step-nudge`` and re-asks once
    per turn (docs/context-model.md §5.6)."""

    kind: Literal["steps_unfinished"] = "steps_unfinished"
    skill_id: str
    """The stepped skill whose procedure is in progress."""
    step: int
    """The current (1-based) step."""
    total: int
    """How many steps the skill declares."""
    tool: str
    """The current step's tool."""
    skipped: list[int] = Field(default_factory=list)
    """Steps skipped so far."""
    nudge: str
    """The user message the loop added to the history: what the model reads on the re-ask."""


class WrapUpEvent(_Event):
    """The model still asked for tools at the iteration limit; Route chose ``wrap-up`` and asks once more
    with tools off (docs/context-model.md §7.2)."""

    kind: Literal["wrap_up"] = "wrap_up"
    pending_tool_calls: int
    """The tool calls asked for at the limit, which never ran."""
    answer_was_empty: bool
    """Whether the reply at the limit had no content."""
    instruction: str
    """The user message the loop added to the history: what the model reads on the wrap-up call."""
    reason: StopReason | None = None
    """The limit reached: ``cost-budget`` when the run's spend stopped the tools; absent for
    ``max-iterations``."""
    budget_usd: float | None = None
    """``cost-budget`` only: the run's budget in US dollars."""
    spent_usd: float | None = None
    """``cost-budget`` only: what the run had spent at the cut."""


class CompactEvent(_Event):
    """The window strategy folded older messages out of the history at the loop head, after the results
    layer's visit and before the pass (:meth:`Agent.window`, docs/context-model.md §7.1). The next
    ``llm_call``'s request shows the compacted history."""

    kind: Literal["compact"] = "compact"
    dropped: int = Field(ge=1)
    """How many messages were folded away."""
    kept: int = Field(ge=0)
    """How many messages the history holds after the fold."""
    dropped_at: list[int] = Field(default_factory=list)
    """The dropped messages' 0-based positions in the history before the fold."""
    limit: str
    """The window's limit: ``max_messages=N`` or ``max_tokens=N`` (tokens estimated as chars / 4)."""
    size_before: int
    """The history's size before the fold, in the limit's unit."""
    size_after: int
    """The history's size after the fold, in the limit's unit."""


class OutputRetryEvent(_Event):
    """The final reply failed the declared output schema; Route chose ``output-retry`` and re-asks
    (docs/context-model.md §7.2, :meth:`Agent.output_schema`)."""

    kind: Literal["output_retry"] = "output_retry"
    error: str
    """Why the reply was refused: the JSON or validation error, as the model reads it."""
    attempt: int
    """This re-ask's number in the turn (1 for the first)."""
    max_retries: int
    """The re-asks the agent allows per turn."""
    reask: str
    """The user message the loop added to the history: what the model reads on the re-ask."""


class AskAnswerEvent(_Event):
    """The user answered the inputs layer's argument ask: the paused call runs with this value
    (``Conversation.resume``, docs/honesty.md §12.7)."""

    kind: Literal["ask_answer"] = "ask_answer"
    tool_call_id: str
    """The paused call."""
    tool_name: str
    """Its tool."""
    path: str
    """The argument asked about."""
    answer: Any = None
    """The user's value (JSON data)."""


class RecalledChunk(Frozen):
    """One chunk a recall kept: it rides every call of the turn as its own system-prompt segment."""

    entry_id: str
    """The memory entry's or retrieved chunk's id (what ``excludeMemoryIds`` names)."""
    text: str
    """The exact text injected."""
    score: float
    """Its score."""
    rank: int = Field(ge=1)
    """Its 1-based rank among the kept chunks."""


class RecallEvent(_Event):
    """The memory READ of one ``Agent.rag`` / ``Agent.memory`` source, once per turn before the first
    pass (docs/context-model.md §1.3, §7.1): what it was asked and what it kept."""

    kind: Literal["recall"] = "recall"
    recall_id: str
    """The declaration's id."""
    flavor: Literal["rag", "memory"]
    """``rag`` (a retriever) or ``memory`` (a store written by earlier turns)."""
    query: str
    """What it was asked: the turn's user message."""
    top_k: int | None = None
    """The most chunks it keeps (``None``: no limit)."""
    threshold: float | None = None
    """The minimum score it keeps (``None``: no threshold)."""
    chunks: list[RecalledChunk] = Field(default_factory=list)
    """The chunks kept, best first: each becomes one injection of ``flavor`` in the system prompt."""
    below_threshold: int = Field(default=0, ge=0)
    """Chunks returned but dropped for scoring under ``threshold`` or past ``top_k``."""
    excluded: list[str] | None = None
    """Entry ids returned but left out because the agent was built without them (a rerun's ablation)."""


class MemoryWriteEvent(_Event):
    """The memory WRITE after the final answer (docs/context-model.md §7.1): the turn stored."""

    kind: Literal["memory_write"] = "memory_write"
    recall_id: str
    """The ``Agent.memory`` declaration whose store was written."""
    entry_id: str | None = None
    """The id the store gave the new entry (``None`` when it gave none)."""
    text: str
    """What was stored."""


class RunEndEvent(_Event):
    """How the run ended."""

    kind: Literal["run_end"] = "run_end"
    status: Literal["completed", "failed", "interrupted", "paused"]
    """Completed, failed (see ``error``), interrupted by the user, or closed while paused on an
    argument ask nobody answered (docs/honesty.md §12.7)."""
    error: ErrorInfo | None = None
    """Why it failed."""
    turns: int = 0
    """Turns run."""
    input_tokens: int = 0
    """Prompt tokens over the run."""
    output_tokens: int = 0
    """Completion tokens over the run."""
    refused_turns: list[int] | None = None
    """The turns whose final reply was a refusal (see ``turn_end.refusal``); absent when none was."""
    end_state: EndState | None = None
    """The carriers the run's last turn left, also when the run failed or was interrupted mid-turn;
    absent when the agent uses none of them or no turn ran."""


TraceEvent = Annotated[
    RunStartEvent
    | TurnStartEvent
    | TurnEndEvent
    | PassEvent
    | CursorMoveEvent
    | LeaseGrantEvent
    | LeasePruneEvent
    | EngagementEvent
    | LlmCallEvent
    | ToolResultEvent
    | FindingEvent
    | SkillRejectedEvent
    | RouteConflictEvent
    | RerouteSupersededEvent
    | StepsUnfinishedEvent
    | WrapUpEvent
    | CompactEvent
    | AskAnswerEvent
    | OutputRetryEvent
    | RecallEvent
    | MemoryWriteEvent
    | RunEndEvent,
    Field(discriminator="kind"),
]
"""Any event record (everything but the header)."""

EVENT_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent, config=ConfigDict(defer_build=True))
"""Validates and dumps :data:`TraceEvent` values (built on first use: see :data:`EVENT_MODELS`)."""

EVENT_MODELS: dict[str, type[_Event]] = {
    model.model_fields["kind"].default: model
    for model in (
        RunStartEvent,
        TurnStartEvent,
        TurnEndEvent,
        PassEvent,
        CursorMoveEvent,
        LeaseGrantEvent,
        LeasePruneEvent,
        EngagementEvent,
        LlmCallEvent,
        ToolResultEvent,
        FindingEvent,
        SkillRejectedEvent,
        RouteConflictEvent,
        RerouteSupersededEvent,
        StepsUnfinishedEvent,
        WrapUpEvent,
        CompactEvent,
        AskAnswerEvent,
        OutputRetryEvent,
        RecallEvent,
        MemoryWriteEvent,
        RunEndEvent,
    )
}
"""The model of each event kind: what :data:`EVENT_ADAPTER` dispatches to on ``kind``. A reader that
already knows a line's kind validates it with that model alone, which builds one validator instead
of the whole union's (the same result: the union runs that model's schema)."""

EVENT_KINDS: frozenset[str] = frozenset(EVENT_MODELS)
"""Every event kind this schema version knows."""

"""The honesty layers (inputs, results, answer) and the findings ledger they file into (docs/honesty.md §12).

Three optional layers make a run say where its values came from. This module is their pure core:
functions with explicit inputs and outputs that the agent loop calls at the three mount points, and
that :mod:`fpdebug.engine.honesty_replay` calls again over a saved trace. They read only what a
trace records, so assessing during the run and assessing the saved trace give the same result.

=================  ==========================================  ======================================
layer              mount point (docs/context-model.md §7.1)                   function
=================  ==========================================  ======================================
inputs             after the LLM call, before Route            :func:`judge_inputs`
results            the loop head                               :func:`results_at_loop_head`
answer             first stage of the final branch             :func:`assess_answer`
=================  ==========================================  ======================================

Each layer visit files at most ONE ``finding`` event (:func:`file_finding`); a visit with nothing to
say files nothing, and an agent that arms no layer never calls any of this.

**Inputs layer — Declare → Verify → Record → Resolve.** For every scalar of every tool call's
arguments (nested values by JSON path, ``$.items[0].sku``), the layer finds where the value came
from, in this order of preference:

1. a source the model *cited* and that holds the value (see "Citing a source" below);
2. a previous tool result of this run, newest first (the call id, tool, iteration, and the JSON path
   of the leaf that holds it when the result is JSON, else the text that holds it);
3. a user message of this run, newest first;
4. a value the app vouches for (an external ground, by label) — only when argument sources are armed;
5. a document the app declared (by name and JSON path) — only when argument sources are armed;
6. ``nowhere``: the model supplied it.

What "holds" means is in :mod:`fpdebug.engine.honesty_sources`: matching is lexical and
normalised (``1250`` is held by ``$1,250.00``, ``2024-05-01`` by ``May 1st, 2024``).

**Citing a source (the ``_from`` basis).** With argument sources armed, a call may carry one reserved
argument, ``"_from"`` (:data:`BASIS_KEY`): an entry, or a list of entries, each either a source
reference string (it grounds every argument of the call) or an object::

    {"arg": "$.order_id", "source": "tool:call_1", "path": "$.orders[0].id", "quote": "ORD-1234"}

``source`` is ``tool:<call id>``, ``user``, ``external:<label>`` or ``declared:<name>``; ``arg``
(default ``$``, the whole call) is the argument path the entry grounds, and covers every value under
it; ``path`` narrows the source to one JSON path; ``quote`` is text the model says it copied. An entry
is **kept** only if its source holds every value it grounds (at ``path`` when given) and contains its
quote. Otherwise it is **refused**: filtered out, named on each row it failed (``refused_reference``)
and counted in ``dropped_from``; the value is then searched for as if uncited. An entry that is not
well formed (unknown source kind, bad path, unknown key, an ``arg`` that names no value) is dropped and
counted too. A call that carries ``_from`` files one **basis row** (kept entries and the dropped
count) before its argument rows, and ``_from`` is stripped from what Route dispatches. Without
argument sources armed, ``_from`` is an ordinary argument.

**Hidden arguments.** While a tool that hides its arguments is in reach (offered on the call, or
called), no row of that visit shows a value the model wrote: argument rows carry ``value=None``,
``hidden=True``, no ``source_text`` and no ``rewritten_to``, and basis entries lose their quotes.
Where a value came from is still shown.

**Middleware rewrites.** A before-tool middleware that changes an argument is handed to the layer as
:class:`ArgumentRewrite` values (:func:`rewrites_of` computes them from the requested and the ran
arguments); the row then says ``rewritten=True`` and ``rewritten_to`` (the call ran with it).

**Results layer.** At the loop head, :func:`batch_to_judge` says whether the batch in place is new
(``iteration == stamp + 1``): each batch is judged once per run, never by call id. A result row per
call: status, declared coverage, the values the result holds.

**Answer layer.** One fold over exactly the committed keys :func:`answer_fold_reads` lists for the
agent's arms (:func:`assess_answer`): each value the answer states, with the sources that hold it or
marked unsupported; the Assumed block; ``stopped_early``; an optional standing line.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeAlias, cast

from fpdebug.engine.honesty_sources import (
    Hit,
    Source,
    parse_json,
    parse_json_path,
    scalar_leaves,
    source_of_declared,
    source_of_ground,
    source_of_result,
    source_of_user,
    values_in,
)
from fpdebug.engine.honesty_values import FoundValue, extract_values
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AssumedValue,
    BasisRow,
    DeclaredSource,
    ExternalGround,
    FindingEvent,
    HonestyArms,
    Message,
    ResultRow,
    StatedValue,
    StoppedEarly,
    ToolCallRecord,
    ToolResultStatus,
)

__all__ = [
    "ALWAYS_READ",
    "ANSWER_FOLD_KEYS",
    "BASIS_KEY",
    "RESULT_VALUES_LIMIT",
    "AnswerFoldKey",
    "AnswerValidation",
    "ArgumentRewrite",
    "BatchTime",
    "CallWindow",
    "Finding",
    "Grounds",
    "HonestyRow",
    "InputsConfig",
    "InputsVerdict",
    "Layer",
    "PriorResult",
    "RanCall",
    "SourcesInReach",
    "StandingLineWhen",
    "TurnClock",
    "answer_fold_reads",
    "assess_answer",
    "batch_to_judge",
    "compose_standing_line",
    "file_finding",
    "judge_inputs",
    "judge_results",
    "results_at_loop_head",
    "rewrites_of",
    "time_of_batch",
]

Layer: TypeAlias = Literal["inputs", "results", "answer"]
"""The layer that files a finding."""

HonestyRow: TypeAlias = ArgumentRow | BasisRow | ResultRow | AnswerAssessmentRow
"""Any row a layer files (``FindingEvent.rows``)."""

AnswerFoldKey: TypeAlias = Literal[
    "history",
    "turnNumber",
    "pausedToolCallId",
    "findingsLedger",
    "stoppedEarly",
    "coverageDeclared",
    "unsupportedValues",
    "answerValidation",
    "argumentAsk",
    "middlewareDecisions",
]
"""A committed key the answer layer's fold can read (the reference's names, docs/honesty.md §12.4)."""

ALWAYS_READ: tuple[AnswerFoldKey, ...] = (
    "history",
    "turnNumber",
    "pausedToolCallId",
    "findingsLedger",
    "stoppedEarly",
)
"""The keys every agent's fold reads: the seed and the Route decider write them on every agent."""

ANSWER_FOLD_KEYS: tuple[AnswerFoldKey, ...] = (
    *ALWAYS_READ,
    "coverageDeclared",
    "unsupportedValues",
    "answerValidation",
    "argumentAsk",
    "middlewareDecisions",
)
"""Every key the fold can read, in the order :func:`answer_fold_reads` appends them."""

BASIS_KEY = "_from"
"""The reserved argument through which a model cites its sources (armed argument sources only)."""

RESULT_VALUES_LIMIT = 100
"""A result row lists at most this many values; the rest are counted in ``values_omitted``."""

StandingLineWhen: TypeAlias = Literal["always", "unsupported"]
"""Which prose answers get a standing line: every one, or those that state an unsupported value."""


# ----------------------------------------------------------------------------------------------
# The findings ledger


@dataclass(frozen=True)
class Finding:
    """The rows one layer visit files: one ``finding`` event, before its envelope.

    Attributes:
        layer: The layer that filed them.
        turn: The turn of the visit.
        iteration: The iteration of the visit (the loop head's, for the results layer).
        rows: The rows, in filing order.
    """

    layer: Layer
    turn: int | None
    iteration: int | None
    rows: tuple[HonestyRow, ...]

    @classmethod
    def of_event(cls, event: FindingEvent) -> Finding:
        """The finding a recorded ``finding`` event holds.

        Args:
            event: The recorded event.

        Returns:
            Its layer, turn, iteration and rows.
        """
        return cls(event.layer, event.turn, event.iteration, tuple(event.rows))

    def to_event(self, *, seq: int, ts: datetime, run_id: str) -> FindingEvent:
        """The ``finding`` event that records this finding, in the envelope the sink assigns.

        Args:
            seq: The event's position in the trace.
            ts: When it is emitted (from the injected clock).
            run_id: The run.

        Returns:
            The event.
        """
        return FindingEvent(
            seq=seq,
            ts=ts,
            run_id=run_id,
            turn=self.turn,
            iteration=self.iteration,
            layer=self.layer,
            rows=list(self.rows),
        )


def file_finding(
    layer: Layer, rows: Iterable[HonestyRow], *, turn: int | None, iteration: int | None
) -> Finding | None:
    """Merge one visit's rows into ONE finding, or nothing when the visit has nothing to say.

    Args:
        layer: The layer.
        rows: The rows its visit produced.
        turn: The turn of the visit.
        iteration: The iteration of the visit.

    Returns:
        The finding to write as one ``finding`` event, or ``None`` (write nothing).
    """
    kept = tuple(rows)
    return Finding(layer, turn, iteration, kept) if kept else None


# ----------------------------------------------------------------------------------------------
# Results layer: which batch, once


def batch_to_judge(iteration: int, stamp: object) -> int | None:
    """Which batch the loop head hands the results layer on this visit (docs/honesty.md §12.3).

    ToolCalls writes a stamp beside the batch it dispatched (the iteration that dispatched it) and
    advances the iteration by exactly one; every other way back to the loop head runs no tool and
    advances the iteration again. So the batch in place is new exactly when ``iteration ==
    stamp + 1``, and each batch is judged once per run. Never decided by tool-call id: a resumed leg
    repeats a provider's synthetic ids, and starts with no stamp.

    Args:
        iteration: The loop head's iteration.
        stamp: The stamp beside the batch in place (``None`` when there is none).

    Returns:
        The iteration that dispatched the batch to judge, or ``None`` when there is none. A stamp
        that is not an ``int`` (``True`` included) is no stamp.
    """
    if isinstance(stamp, int) and not isinstance(stamp, bool) and iteration == stamp + 1:
        return stamp
    return None


@dataclass(frozen=True)
class CallWindow:
    """A call's time row: when it ran.

    Attributes:
        tool_call_id: The call.
        start: When it started.
        end: When it ended.
    """

    tool_call_id: str
    start: datetime
    end: datetime


@dataclass(frozen=True)
class TurnClock:
    """A turn's clock row: the turn it belongs to and its ``now``.

    Attributes:
        turn: The turn whose clock it is.
        now: The instant the turn reads as "now".
    """

    turn: int
    now: datetime


@dataclass(frozen=True)
class RanCall:
    """One call of a dispatched batch, as the model read its result.

    Attributes:
        tool_call_id: The call.
        tool_name: The tool.
        result: The result text the model read.
        status: The status an envelope declared (or ``failure`` when the tool raised).
        coverage: The coverage the tool declared, when it declared one.
        window: The call's time row, under a time layer (fpdebug's loop never sets it).
    """

    tool_call_id: str
    tool_name: str
    result: str
    status: ToolResultStatus | None = None
    coverage: str | None = None
    window: CallWindow | None = None


@dataclass(frozen=True)
class BatchTime:
    """What :func:`time_of_batch` hands the result checks.

    Attributes:
        now: This turn's clock, or ``None``.
        windows: The time rows of the batch's calls that have one.
    """

    now: datetime | None = None
    windows: tuple[CallWindow, ...] = ()


def time_of_batch(clock: TurnClock | None, calls: Sequence[RanCall], *, turn: int) -> BatchTime:
    """The times the result checks may use for a batch: only this turn's clock (docs/honesty.md §12.3).

    fpdebug has no time layer: its loop hands ``clock=None``, so the answer is always the empty
    :class:`BatchTime` and no result row carries a time. The rule is kept, and tested, for the day
    a time layer arrives: a clock carried forward from an earlier turn (a restored ledger) holds an
    earlier ``now`` and must not judge this turn's calls, so it yields nothing either.

    Args:
        clock: The latest clock row in the ledger, if any.
        calls: The batch.
        turn: The turn being judged.

    Returns:
        ``now`` and the calls' windows when the clock belongs to ``turn``, else nothing.
    """
    if clock is None or clock.turn != turn:
        return BatchTime()
    return BatchTime(clock.now, tuple(c.window for c in calls if c.window is not None))


def judge_results(batch_iteration: int, calls: Sequence[RanCall]) -> list[ResultRow]:
    """One result row per call of a batch: status, declared coverage, the values it holds.

    Args:
        batch_iteration: The iteration that dispatched the batch.
        calls: The batch's calls, in call order.

    Returns:
        The rows, in call order.
    """
    rows = []
    for call in calls:
        values = values_in(call.result)
        omitted = len(values) - RESULT_VALUES_LIMIT
        rows.append(
            ResultRow(
                batch_iteration=batch_iteration,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                status=call.status,
                coverage=call.coverage,
                values=values[:RESULT_VALUES_LIMIT],
                values_omitted=omitted if omitted > 0 else None,
            )
        )
    return rows


def results_at_loop_head(iteration: int, stamp: object, calls: Sequence[RanCall]) -> list[ResultRow]:
    """The results layer's visit at the loop head: the rows to file, or none.

    Args:
        iteration: The loop head's iteration.
        stamp: The stamp ToolCalls wrote beside the batch in place (``None`` when there is none).
        calls: The batch in place.

    Returns:
        The batch's result rows when :func:`batch_to_judge` says it is new on this visit, else ``[]``.
    """
    batch = batch_to_judge(iteration, stamp)
    return [] if batch is None else judge_results(batch, calls)


# ----------------------------------------------------------------------------------------------
# Inputs layer


@dataclass(frozen=True)
class PriorResult:
    """A tool result of this run the model has read, a source for later arguments.

    Attributes:
        tool_call_id: The call.
        tool_name: The tool.
        result: The result text the model read.
        iteration: The iteration whose batch ran it.
    """

    tool_call_id: str
    tool_name: str
    result: str
    iteration: int | None = None


@dataclass(frozen=True)
class SourcesInReach:
    """What the run has shown the model so far, in the order it arrived.

    Attributes:
        results: The tool results of this run, oldest first.
        user_messages: The user messages of this run, oldest first.
    """

    results: tuple[PriorResult, ...] = ()
    user_messages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grounds:
    """The app's own sources, declared on the agent (recorded in ``run_start.honesty``).

    Attributes:
        external_grounds: Values the app vouches for, each with its label.
        declared_sources: Named documents the app declares as argument sources.
    """

    external_grounds: tuple[ExternalGround, ...] = ()
    declared_sources: tuple[DeclaredSource, ...] = ()

    @classmethod
    def from_arms(cls, arms: HonestyArms | None) -> Grounds:
        """The grounds a run recorded.

        Args:
            arms: ``run_start.honesty``.

        Returns:
            Its external grounds and declared sources.
        """
        if arms is None:
            return cls()
        return cls(tuple(arms.external_grounds or ()), tuple(arms.declared_sources or ()))

    def sources(self) -> list[Source]:
        """The grounds as sources: external grounds, then declared sources, in declaration order."""
        grounds = [source_of_ground(g) for g in self.external_grounds]
        return grounds + [source_of_declared(d) for d in self.declared_sources]


@dataclass(frozen=True)
class InputsConfig:
    """How the agent armed the inputs layer (build-time facts, all recorded in ``run_start``).

    Attributes:
        argument_sources: Declared sources are armed: the ``_from`` basis is read and the grounds
            are searched.
        grounds: The app's external grounds and declared sources.
        hidden_argument_tools: Tools that hide their arguments.
        basis_rows: File a basis row for a call that carries ``_from`` (fpdebug's ledger is the
            trace, so its loop passes ``True``); when ``False`` the dropped count rides the call's
            first argument row instead.
    """

    argument_sources: bool = False
    grounds: Grounds = field(default_factory=Grounds)
    hidden_argument_tools: frozenset[str] = frozenset()
    basis_rows: bool = True

    @classmethod
    def from_arms(cls, arms: HonestyArms | None) -> InputsConfig:
        """The configuration a run recorded in ``run_start.honesty``.

        Args:
            arms: The recorded arms.

        Returns:
            The inputs layer's configuration.
        """
        if arms is None:
            return cls()
        return cls(
            argument_sources=arms.argument_sources,
            grounds=Grounds.from_arms(arms),
            hidden_argument_tools=frozenset(arms.hidden_argument_tools or ()),
        )


@dataclass(frozen=True)
class ArgumentRewrite:
    """One middleware decision: an argument the call ran with differs from what the model asked.

    Attributes:
        tool_call_id: The call.
        path: The argument's JSON path.
        original: The value the model supplied (``None`` when the middleware added the argument).
        rewritten_to: The value the call ran with (``None`` when removed).
        removed: The middleware removed the argument.
    """

    tool_call_id: str
    path: str
    original: object = None
    rewritten_to: object = None
    removed: bool = False


def _leaf_map(args: Mapping[str, object]) -> dict[str, object]:
    return {leaf.path: leaf.value for leaf in scalar_leaves(dict(args)) if leaf.path is not None}


def rewrites_of(
    tool_call_id: str, requested: Mapping[str, object], ran: Mapping[str, object]
) -> list[ArgumentRewrite]:
    """The middleware decisions that turn the requested arguments into the ones the call ran with.

    Args:
        tool_call_id: The call.
        requested: The arguments the model asked for (without ``_from``).
        ran: The arguments the call ran with.

    Returns:
        One rewrite per scalar path whose value changed, was added or was removed, in the
        requested arguments' order, then the added paths in the ran arguments' order.
    """
    before, after = _leaf_map(requested), _leaf_map(ran)
    changes: list[ArgumentRewrite] = []
    for path, old in before.items():
        if path not in after:
            changes.append(ArgumentRewrite(tool_call_id, path, old, None, removed=True))
        elif type(after[path]) is not type(old) or after[path] != old:
            changes.append(ArgumentRewrite(tool_call_id, path, old, after[path]))
    changes.extend(ArgumentRewrite(tool_call_id, p, None, v) for p, v in after.items() if p not in before)
    return changes


@dataclass(frozen=True)
class InputsVerdict:
    """What one inputs layer visit returns.

    Attributes:
        rows: The basis and argument rows for ONE ``finding`` event (empty: write nothing).
        dispatch: Resolve: for each call id, the arguments Route may dispatch (``_from`` stripped).
        resolved: Resolve, call by call: the calls Route may dispatch, in the reply's order, each with
            its dispatch arguments (a reply that repeats a call id keeps each call's own arguments,
            which ``dispatch`` cannot).
    """

    rows: tuple[ArgumentRow | BasisRow, ...]
    dispatch: Mapping[str, dict[str, object]]
    resolved: tuple[ToolCallRecord, ...] = ()


@dataclass(frozen=True)
class _Entry:
    """One well-formed ``_from`` entry."""

    arg: str
    source: str
    path: str | None
    quote: str | None
    covers: tuple[str, ...]

    def render(self, *, quotes: bool) -> str:
        text = f"{self.arg} <- {self.reference()}"
        if self.quote is not None and quotes:
            text += f' "{self.quote}"'
        return text

    def reference(self) -> str:
        return self.source if self.path is None else f"{self.source} at {self.path}"


_ENTRY_KEYS = frozenset({"arg", "source", "path", "quote"})


def _well_formed_source(ref: object) -> bool:
    if not isinstance(ref, str):
        return False
    if ref == "user":
        return True
    kind, sep, rest = ref.partition(":")
    return bool(sep and rest) and kind in ("tool", "external", "declared")


def _covers(arg: str, leaf_path: str) -> bool:
    return leaf_path == arg or leaf_path.startswith(arg + ".") or leaf_path.startswith(arg + "[")


def _parse_basis(raw: object, leaf_paths: Sequence[str]) -> tuple[list[_Entry], int]:
    """Read ``_from``: the well-formed entries, and how many were dropped as malformed."""
    items = raw if isinstance(raw, list) else [raw]
    entries: list[_Entry] = []
    dropped = 0
    for item in items:
        if isinstance(item, str):
            item = {"source": item}
        if not isinstance(item, dict) or not set(item) <= _ENTRY_KEYS:
            dropped += 1
            continue
        arg, source = item.get("arg", "$"), item.get("source")
        path, quote = item.get("path"), item.get("quote")
        ok = (
            isinstance(arg, str)
            and parse_json_path(arg) is not None
            and _well_formed_source(source)
            and (path is None or (isinstance(path, str) and parse_json_path(path) is not None))
            and (quote is None or isinstance(quote, str))
        )
        covers = tuple(p for p in leaf_paths if ok and _covers(arg, p))
        if not ok or not covers:
            dropped += 1
            continue
        entries.append(_Entry(cast(str, arg), cast(str, source), path, quote, covers))
    return entries, dropped


def _cited_sources(ref: str, corpus: Sequence[Source]) -> list[Source]:
    """The sources a reference names (``user`` names every user message), newest first."""
    return [s for s in corpus if s.ref == ref]


def _verify(
    entry: _Entry, values: Mapping[str, object], corpus: Sequence[Source]
) -> dict[str, tuple[Source, Hit]] | None:
    """The hits that make an entry kept, or ``None`` when it is refused."""
    for source in _cited_sources(entry.source, corpus):
        if entry.quote is not None and not source.contains_text(entry.quote):
            continue
        hits: dict[str, tuple[Source, Hit]] = {}
        for leaf_path in entry.covers:
            hit = source.find(values[leaf_path], path=entry.path, cited=True)
            if hit is None:
                break
            hits[leaf_path] = (source, hit)
        else:
            return hits
    return None


def _search(value: object, corpus: Sequence[Source]) -> tuple[Source, Hit] | None:
    for source in corpus:
        hit = source.find(value)
        if hit is not None:
            return source, hit
    return None


_SNIPPET_LIMIT = 200


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET_LIMIT else text[: _SNIPPET_LIMIT - 1] + "…"


def _argument_row(
    call: ToolCallRecord,
    path: str,
    value: object,
    found: tuple[Source, Hit] | None,
    *,
    refused: list[str],
    rewrite: ArgumentRewrite | None,
    hidden: bool,
) -> ArgumentRow:
    fields: dict[str, object] = {"source": "nowhere"}
    if found is not None:
        source, hit = found
        fields["source"] = source.kind
        if source.kind == "tool-result":
            fields.update(
                source_tool_call_id=source.tool_call_id,
                source_tool_name=source.tool_name,
                source_iteration=source.iteration,
            )
        if source.kind in ("external", "declared"):
            fields["label"] = source.label
        if source.is_json:
            fields["source_path"] = hit.path
        elif not hidden:
            fields["source_text"] = _snippet(hit.text)
    if rewrite is not None:
        fields["rewritten"] = True
        if not hidden and not rewrite.removed:
            fields["rewritten_to"] = rewrite.rewritten_to
    fields.update(
        tool_call_id=call.id,
        tool_name=call.name,
        path=path,
        value=None if hidden else value,
        refused_reference=", ".join(refused) or None,
        hidden=hidden,
    )
    return ArgumentRow.model_validate(fields)


def _corpus(sources: SourcesInReach, config: InputsConfig) -> list[Source]:
    corpus = [
        source_of_result(r.tool_call_id, r.tool_name, r.iteration, r.result)
        for r in reversed(sources.results)
    ]
    corpus.extend(source_of_user(m) for m in reversed(sources.user_messages))
    if config.argument_sources:
        corpus.extend(config.grounds.sources())
    return corpus


def judge_inputs(
    calls: Sequence[ToolCallRecord],
    sources: SourcesInReach,
    *,
    config: InputsConfig | None = None,
    tools_in_reach: Collection[str] = (),
    rewrites: Sequence[ArgumentRewrite] = (),
    tools_off: bool = False,
) -> InputsVerdict:
    """The inputs layer over one LLM reply's tool calls: Declare → Verify → Record → Resolve.

    The module docstring has the rules (preference order, the ``_from`` basis, hidden arguments,
    rewrites).

    A call whose arguments did not parse (only ``raw_args``) holds no value to trace: it files no
    argument row.

    Args:
        calls: The tool calls the reply asked for, in order (their ``args`` as the model wrote them).
        sources: The tool results and user messages of this run the model has read, oldest first.
        config: How the layer is armed (argument sources, grounds, hiding tools).
        tools_in_reach: The names of the tools offered on this LLM call.
        rewrites: Middleware decisions for these calls, when they are known before dispatch.
        tools_off: The evidence gate's revision turned the tools off: Route runs none of the calls,
            so the layer asks about none of them.

    Returns:
        The rows for one ``finding`` event and the arguments Route may dispatch.
    """
    config = config or InputsConfig()
    if tools_off:
        return InputsVerdict((), {})
    corpus = _corpus(sources, config)
    hidden = bool(config.hidden_argument_tools & ({*tools_in_reach} | {c.name for c in calls}))
    by_path = {(r.tool_call_id, r.path): r for r in rewrites}
    rows: list[ArgumentRow | BasisRow] = []
    dispatch: dict[str, dict[str, object]] = {}
    resolved: list[ToolCallRecord] = []
    for call in calls:
        declares = config.argument_sources and BASIS_KEY in call.args
        body = {k: v for k, v in call.args.items() if not (declares and k == BASIS_KEY)}
        dispatch[call.id] = body
        resolved.append(call.model_copy(update={"args": body}) if declares else call)
        values = _leaf_map(body)
        entries, dropped = _parse_basis(call.args.get(BASIS_KEY), list(values)) if declares else ([], 0)
        # Verify: a kept entry grounds its values; a refused one is named on each value it failed.
        grounded: dict[str, tuple[Source, Hit]] = {}
        refused: dict[str, list[str]] = {}
        kept: list[_Entry] = []
        for entry in entries:
            hits = _verify(entry, values, corpus)
            if hits is None:
                dropped += 1
                for leaf_path in entry.covers:
                    refused.setdefault(leaf_path, []).append(entry.reference())
                continue
            kept.append(entry)
            for leaf_path, found in hits.items():
                grounded.setdefault(leaf_path, found)
        # Record.
        call_rows = [
            _argument_row(
                call,
                path,
                value,
                grounded.get(path) or _search(value, corpus),
                refused=refused.get(path, []),
                rewrite=by_path.get((call.id, path)),
                hidden=hidden,
            )
            for path, value in values.items()
        ]
        if declares and (config.basis_rows or not call_rows):
            entries_kept = [e.render(quotes=not hidden) for e in kept]
            rows.append(
                BasisRow(
                    tool_call_id=call.id, tool_name=call.name, from_entries=entries_kept, dropped_from=dropped
                )
            )
        elif declares:
            call_rows[0] = call_rows[0].model_copy(update={"dropped_from": dropped})
        rows.extend(call_rows)
    return InputsVerdict(tuple(rows), dispatch, tuple(resolved))


# ----------------------------------------------------------------------------------------------
# Answer layer


def answer_fold_reads(
    *, tools: bool, evidence_gate: bool, answer_validation: bool, inputs: bool, tool_middleware: bool
) -> list[AnswerFoldKey]:
    """Which committed keys the answer layer's fold reads, from the agent's arms (docs/honesty.md §12.4).

    A key no arm of this agent can write is never read (a tracked read of a key a run never writes
    is a phantom context source). The list over-approximates on purpose: a key an arm CAN write is
    read whether or not this run wrote it, so the in-run fold never misses a row the fold over the
    saved trace sees.

    Args:
        tools: The agent has a tool surface (``coverageDeclared``: only a tool that ran declares it).
        evidence_gate: The evidence gate is armed (``unsupportedValues``).
        answer_validation: Answer validation is armed (``answerValidation``).
        inputs: The inputs layer is armed (``argumentAsk``).
        tool_middleware: A before-tool middleware can rewrite a filled value
            (``middlewareDecisions``, read only with the inputs layer).

    Returns:
        ``history``, ``turnNumber``, ``pausedToolCallId``, ``findingsLedger``, ``stoppedEarly``, then
        each armed key in that order.
    """
    keys: list[AnswerFoldKey] = list(ALWAYS_READ)
    if tools:
        keys.append("coverageDeclared")
    if evidence_gate:
        keys.append("unsupportedValues")
    if answer_validation:
        keys.append("answerValidation")
    if inputs:
        keys.append("argumentAsk")
    if inputs and tool_middleware:
        keys.append("middlewareDecisions")
    return keys


@dataclass(frozen=True)
class AnswerValidation:
    """The answer validation report, as the fold reads it (``answerValidation``).

    Attributes:
        withheld: The report withholds the answer: it is never assessed.
        reason: Why, when the report says.
    """

    withheld: bool
    reason: str | None = None


_CATEGORY_OF = {
    "tool": "tool results",
    "user": "the user's message",
    "external": "values the app vouches for",
    "declared": "declared sources",
}
_UNSUPPORTED_SHOWN = 3


def _category(ref: str) -> str:
    return ref.split(":", 1)[0]


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def compose_standing_line(
    values: Sequence[StatedValue],
    *,
    names_of: Mapping[str, str] | None = None,
    stopped_early: StoppedEarly | None = None,
    coverage: Sequence[tuple[str, str]] = (),
    asked: bool = False,
) -> str:
    """One line that says how much of a prose answer its sources back.

    For example: ``2 of 3 values in this answer are backed by tool results (Order lookup); 1
    ($1,250.00) appears in no source.`` A value counts under its first supporting source, in the
    order tool results, the user's message, values the app vouches for, declared sources.

    Args:
        values: The assessed values.
        names_of: For each ``supported_by`` reference, the words to show it by (a tool's display
            name, a ground's label); references without one are shown by their label or omitted.
        stopped_early: A limit cut the turn short.
        coverage: ``(tool words, declared coverage)`` for each supporting call that declared one.
        asked: The inputs layer asked the user for an argument instead of calling a tool.

    Returns:
        The line.
    """
    names_of = names_of or {}
    total = len(values)
    supported = [v for v in values if v.supported]
    unsupported = [v for v in values if not v.supported]
    shown = ", ".join(v.text for v in unsupported[:_UNSUPPORTED_SHOWN])
    if len(unsupported) > _UNSUPPORTED_SHOWN:
        shown += f" and {len(unsupported) - _UNSUPPORTED_SHOWN} more"

    counts: dict[str, int] = {}
    words: dict[str, list[str]] = {}
    for value in supported:
        category = _category(value.supported_by[0])
        counts[category] = counts.get(category, 0) + 1
        for ref in value.supported_by:
            name = names_of.get(ref)
            if name and _category(ref) == category and name not in words.setdefault(category, []):
                words[category].append(name)

    def described(category: str) -> str:
        named = words.get(category)
        return _CATEGORY_OF[category] + (f" ({', '.join(named)})" if named else "")

    if len(counts) == 1:
        backing = described(next(iter(counts)))
    else:
        backing = "sources: " + ", ".join(f"{n} by {described(c)}" for c, n in counts.items())

    if total == 0:
        line = "This answer states no values to check."
    elif not unsupported:
        line = (
            f"All {total} values in this answer are backed by {backing}."
            if total > 1
            else f"The 1 value in this answer is backed by {backing}."
        )
    elif not supported:
        line = (
            f"None of the {total} values in this answer appears in any source: {shown}."
            if total > 1
            else f"The 1 value in this answer ({shown}) appears in no source."
        )
    else:
        line = (
            f"{len(supported)} of {total} values in this answer {_plural(len(supported), 'is', 'are')} "
            f"backed by {backing}; {len(unsupported)} ({shown}) "
            f"{_plural(len(unsupported), 'appears', 'appear')} in no source."
        )
    for name, declared in coverage:
        line += f" {name} declared its coverage: {declared}."
    if stopped_early is not None:
        pending = stopped_early.pending_tool_calls
        line += (
            f" The turn was cut short ({stopped_early.reason} at iteration {stopped_early.iteration}; "
            f"{pending} tool {_plural(pending, 'call', 'calls')} not run)."
        )
    if asked:
        line += " The model asked the user for an argument it could not ground."
    return line


def _is_prose(answer: str) -> bool:
    return bool(answer.strip()) and parse_json(answer) is None


def assess_answer(
    answer: str,
    committed: Mapping[str, object],
    *,
    reads: Sequence[AnswerFoldKey],
    grounds: Grounds | None = None,
    standing_line: StandingLineWhen | bool | None = None,
    display_names: Mapping[str, str] | None = None,
) -> AnswerAssessmentRow | None:
    """The answer layer's ONE fold: assess the final answer against what the run committed.

    The fold reads ``committed`` exactly once per key in ``reads`` and never any other key; a key
    that was never written reads as absent. What each key holds:

    - ``history`` (sequence of :class:`~fpdebug.trace.schema.Message`): user messages and tool
      messages (``tool:<call id>``) are sources;
    - ``turnNumber`` (int): scopes the Assumed block to this turn's argument rows;
    - ``pausedToolCallId`` (str | None): a paused call's tool message is not a source;
    - ``findingsLedger`` (sequence of :class:`Finding`): result rows are sources (they outlive a
      window that folds history away); this turn's argument rows are what a rewrite supersedes;
    - ``stoppedEarly`` (:class:`~fpdebug.trace.schema.StoppedEarly` | None): copied;
    - ``coverageDeclared`` (mapping call id → coverage): named in the standing line;
    - ``unsupportedValues`` (sequence of value texts): the evidence gate's verdicts win — such a
      value is unsupported whatever holds it;
    - ``answerValidation`` (:class:`AnswerValidation` | None): a withheld answer is never assessed;
    - ``argumentAsk`` (str | None): the inputs layer asked the user instead of calling; noted;
    - ``middlewareDecisions`` (sequence of :class:`ArgumentRewrite`): a rewrite that supersedes one
      of this turn's argument rows enters the Assumed block.

    ``grounds`` and ``display_names`` are build-time facts of the agent, not committed state.

    Args:
        answer: The model's final content.
        committed: The committed state.
        reads: The keys to read: :func:`answer_fold_reads` for the agent's arms.
        grounds: The app's external grounds and declared sources (``external:<label>``,
            ``declared:<name>``).
        standing_line: Compose a standing line for a prose answer: ``"always"`` (or ``True``), or
            ``"unsupported"`` (only when a value is unsupported). A JSON answer never gets one.
        display_names: Tool name → the app's words for it.

    Returns:
        The assessment row, or ``None`` when answer validation withheld the answer.

    Raises:
        ValueError: ``reads`` names a key the fold does not know.
    """
    unknown = [key for key in reads if key not in ANSWER_FOLD_KEYS]
    if unknown:
        raise ValueError(f"answer fold cannot read unknown committed keys: {unknown}")
    # The one and only read of committed state: everything below looks at `view`.
    view: dict[str, object] = {key: committed.get(key) for key in reads}

    validation = view.get("answerValidation")
    if isinstance(validation, AnswerValidation) and validation.withheld:
        return None
    history = cast("Sequence[Message]", view.get("history") or ())
    paused = view.get("pausedToolCallId")
    ledger = cast("Sequence[Finding]", view.get("findingsLedger") or ())
    turn = view.get("turnNumber")
    coverage = cast("Mapping[str, str]", view.get("coverageDeclared") or {})
    gate_flagged = set(cast("Iterable[str]", view.get("unsupportedValues") or ()))
    decisions = cast("Sequence[ArgumentRewrite]", view.get("middlewareDecisions") or ())
    stopped = cast("StoppedEarly | None", view.get("stoppedEarly"))
    display_names = display_names or {}

    # The sources, in the order their references are listed.
    tools: list[Source] = []
    users: list[Source] = []
    tool_name_of: dict[str, str] = {}
    for message in history:
        if message.role == "tool" and message.tool_call_id and message.tool_call_id != paused:
            tools.append(
                source_of_result(message.tool_call_id, message.tool_name or "", None, message.content)
            )
            tool_name_of.setdefault(message.tool_call_id, message.tool_name or "")
        elif message.role == "user":
            users.append(source_of_user(message.content))
    for finding in ledger:
        for row in finding.rows:
            if isinstance(row, ResultRow) and row.tool_call_id != paused:
                tools.append(
                    Source(
                        "tool-result",
                        f"tool:{row.tool_call_id}",
                        "",
                        list(row.values),
                        tool_call_id=row.tool_call_id,
                        tool_name=row.tool_name,
                    )
                )
                tool_name_of.setdefault(row.tool_call_id, row.tool_name)
    sources = [*tools, *users, *(grounds or Grounds()).sources()]

    stated: list[StatedValue] = []
    seen: set[str] = set()
    for found in extract_values(answer):
        if found.text in seen:
            continue
        seen.add(found.text)
        stated.append(_stated(found, sources, flagged=found.text in gate_flagged))

    arg_rows = {
        (row.tool_call_id, row.path): row
        for finding in ledger
        if finding.layer == "inputs" and finding.turn == turn
        for row in finding.rows
        if isinstance(row, ArgumentRow)
    }
    assumed = []
    for decision in decisions:
        row = arg_rows.get((decision.tool_call_id, decision.path))
        if row is None:
            continue
        assumed.append(
            AssumedValue(
                tool_call_id=decision.tool_call_id,
                path=decision.path,
                original=None if row.hidden else decision.original,
                rewritten_to=None if row.hidden or decision.removed else decision.rewritten_to,
                removed=True if decision.removed else None,
                hidden=True if row.hidden else None,
            )
        )

    line = None
    mode = "always" if standing_line is True else (standing_line or None)
    if mode and _is_prose(answer) and (mode == "always" or any(not v.supported for v in stated)):
        words = {f"tool:{cid}": display_names.get(name, name) for cid, name in tool_name_of.items() if name}
        words.update({s.ref: s.label for s in sources if s.label})
        cited_calls = dict.fromkeys(
            ref.partition(":")[2]
            for v in stated
            if v.supported
            for ref in v.supported_by
            if ref.startswith("tool:")
        )
        notes = [(words.get(f"tool:{cid}") or cid, coverage[cid]) for cid in cited_calls if cid in coverage]
        line = compose_standing_line(
            stated, names_of=words, stopped_early=stopped, coverage=notes, asked=bool(view.get("argumentAsk"))
        )
    return AnswerAssessmentRow(
        reads=list(reads), values=stated, assumed=assumed, stopped_early=stopped, standing_line=line
    )


def _stated(found: FoundValue, sources: Sequence[Source], *, flagged: bool) -> StatedValue:
    refs = [] if flagged else list(dict.fromkeys(s.ref for s in sources if s.states(found)))
    return StatedValue(
        text=found.text,
        kind=found.kind,
        supported=bool(refs),
        supported_by=refs,
        start=found.start,
        end=found.end,
    )

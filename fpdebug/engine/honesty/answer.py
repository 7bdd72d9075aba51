"""The answer layer: one fold over the committed state, assessing the final answer (docs/honesty.md §12.4).

One fold over exactly the committed keys :func:`answer_fold_reads` lists for the agent's arms
(:func:`assess_answer`): each value the answer states, with the sources that hold it or marked
unsupported; the Assumed block; ``stopped_early``; an optional standing line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, TypeVar

from fpdebug.engine.honesty.ask import ArgumentAsk, answer_text
from fpdebug.engine.honesty.inputs import ArgumentRewrite, Grounds
from fpdebug.engine.honesty.ledger import Finding
from fpdebug.engine.honesty.sources import Source, parse_json, source_of_result, source_of_user
from fpdebug.engine.honesty.values import FoundValue, extract_values
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AssumedValue,
    Message,
    ResultRow,
    StatedValue,
    StoppedEarly,
)

__all__ = [
    "ALWAYS_READ",
    "ANSWER_FOLD_KEYS",
    "AnswerFoldKey",
    "AnswerFoldState",
    "AnswerValidation",
    "StandingLineWhen",
    "answer_fold_reads",
    "assess_answer",
    "compose_standing_line",
    "fold_reads",
    "gate_verdict",
    "revision_ask",
]

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

StandingLineWhen: TypeAlias = Literal["always", "unsupported"]
"""Which prose answers get a standing line: every one, or those that state an unsupported value."""

_T = TypeVar("_T")


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


def fold_reads(
    *, tools: bool, evidence_gate: bool, answer_validation: bool, inputs: bool, tool_middleware: bool
) -> list[AnswerFoldKey]:
    """The keys fpdebug's answer fold reads: exactly the seed's list, :func:`answer_fold_reads`.

    Every key of it has a writer in fpdebug: the loop writes ``pausedToolCallId`` on every agent (cleared
    at each turn's start, set while a call waits for the user's answer) and the inputs layer writes
    ``argumentAsk`` (docs/honesty.md §12.7). The loop and the replay read this list.

    Args:
        tools: The agent has a tool surface.
        evidence_gate: The evidence gate is armed.
        answer_validation: Answer validation is armed.
        inputs: The inputs layer is armed.
        tool_middleware: A before-tool middleware can rewrite a filled value.

    Returns:
        The keys, in :func:`answer_fold_reads`'s order.
    """
    return answer_fold_reads(
        tools=tools,
        evidence_gate=evidence_gate,
        answer_validation=answer_validation,
        inputs=inputs,
        tool_middleware=tool_middleware,
    )


@dataclass(frozen=True)
class AnswerValidation:
    """The answer validation report, as the fold reads it (``answerValidation``).

    Attributes:
        withheld: The report withholds the answer: it is never assessed.
        reason: Why, when the report says.
    """

    withheld: bool
    reason: str | None = None


@dataclass(frozen=True)
class AnswerFoldState:
    """The committed state the answer fold reads, one typed field per key (docs/honesty.md §12.4).

    :meth:`read` is the fold's one read of committed state; every field of a key the fold does not
    read (or that was never written) holds its "absent" default.

    Attributes:
        history: ``history``: user messages and tool messages (``tool:<call id>``) are sources.
        turn_number: ``turnNumber``: scopes the Assumed block to this turn's argument rows.
        paused_tool_call_id: ``pausedToolCallId``: a paused call's tool message is not a source.
        findings_ledger: ``findingsLedger``: result rows are sources; this turn's argument rows are
            what a rewrite supersedes.
        stopped_early: ``stoppedEarly``: copied onto the row.
        coverage_declared: ``coverageDeclared``: call id → coverage, named in the standing line.
        unsupported_values: ``unsupportedValues``: the evidence gate's verdicts.
        answer_validation: ``answerValidation``: a withheld answer is never assessed.
        argument_ask: ``argumentAsk``: this turn's ask; once answered, the user's value is a source.
        middleware_decisions: ``middlewareDecisions``: rewrites that may enter the Assumed block.
    """

    history: tuple[Message, ...] = ()
    turn_number: int | None = None
    paused_tool_call_id: str | None = None
    findings_ledger: tuple[Finding, ...] = ()
    stopped_early: StoppedEarly | None = None
    coverage_declared: Mapping[str, str] = field(default_factory=dict)
    unsupported_values: frozenset[str] = frozenset()
    answer_validation: AnswerValidation | None = None
    argument_ask: ArgumentAsk | None = None
    middleware_decisions: tuple[ArgumentRewrite, ...] = ()

    @classmethod
    def read(cls, committed: Mapping[str, object], reads: Sequence[AnswerFoldKey]) -> AnswerFoldState:
        """Read each key of ``reads`` from ``committed`` exactly once, in order, and nothing else.

        A key that was never written reads as absent (``committed.get``), like a falsy value.

        Args:
            committed: The committed state, by the reference's camelCase keys.
            reads: The keys to read (:func:`answer_fold_reads`).

        Returns:
            The typed state.

        Raises:
            ValueError: ``reads`` names a key the fold does not know.
            TypeError: A key holds a value of another shape than the one documented.
        """
        unknown = [key for key in reads if key not in ANSWER_FOLD_KEYS]
        if unknown:
            raise ValueError(f"answer fold cannot read unknown committed keys: {unknown}")
        view: dict[str, object] = {key: committed.get(key) for key in reads}
        return cls(
            history=_items(view, "history", Message),
            turn_number=_optional(view, "turnNumber", int),
            paused_tool_call_id=_optional(view, "pausedToolCallId", str),
            findings_ledger=_items(view, "findingsLedger", Finding),
            stopped_early=_optional(view, "stoppedEarly", StoppedEarly),
            coverage_declared=dict(_pairs(view, "coverageDeclared")),
            unsupported_values=frozenset(_items(view, "unsupportedValues", str)),
            answer_validation=_optional(view, "answerValidation", AnswerValidation),
            argument_ask=_optional(view, "argumentAsk", ArgumentAsk),
            middleware_decisions=_items(view, "middlewareDecisions", ArgumentRewrite),
        )


def _optional(view: Mapping[str, object], key: str, kind: type[_T]) -> _T | None:
    """The value of ``key`` when it has the documented type; absent (falsy) reads as ``None``."""
    value = view.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise TypeError(f"committed {key!r} holds {type(value).__name__}, not {kind.__name__}")
    return value


def _items(view: Mapping[str, object], key: str, kind: type[_T]) -> tuple[_T, ...]:
    """The items of a sequence-valued ``key``, each of the documented type; absent reads as ``()``."""
    value = view.get(key) or ()
    if not isinstance(value, Iterable):
        raise TypeError(f"committed {key!r} holds {type(value).__name__}, not a sequence")
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"committed {key!r} holds a {type(item).__name__}, not a {kind.__name__}")
    return items


def _pairs(view: Mapping[str, object], key: str) -> Iterable[tuple[str, str]]:
    """The ``str → str`` entries of a mapping-valued ``key``; absent reads as none."""
    value = view.get(key) or {}
    if not isinstance(value, Mapping):
        raise TypeError(f"committed {key!r} holds {type(value).__name__}, not a mapping")
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise TypeError(f"committed {key!r} maps {name!r} to {text!r}, not str to str")
        yield name, text


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


def _backing(supported: Sequence[StatedValue], names_of: Mapping[str, str]) -> str:
    """What backs the supported values: one category, or each category with its count."""
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
        return described(next(iter(counts)))
    return "sources: " + ", ".join(f"{n} by {described(c)}" for c, n in counts.items())


def _verdict(
    total: int, supported: Sequence[StatedValue], unsupported: Sequence[StatedValue], backing: str
) -> str:
    """The standing line's first sentence: how many values are backed, and by what."""
    shown = ", ".join(v.text for v in unsupported[:_UNSUPPORTED_SHOWN])
    if len(unsupported) > _UNSUPPORTED_SHOWN:
        shown += f" and {len(unsupported) - _UNSUPPORTED_SHOWN} more"
    if total == 0:
        return "This answer states no values to check."
    if not unsupported:
        return (
            f"All {total} values in this answer are backed by {backing}."
            if total > 1
            else f"The 1 value in this answer is backed by {backing}."
        )
    if not supported:
        return (
            f"None of the {total} values in this answer appears in any source: {shown}."
            if total > 1
            else f"The 1 value in this answer ({shown}) appears in no source."
        )
    return (
        f"{len(supported)} of {total} values in this answer {_plural(len(supported), 'is', 'are')} "
        f"backed by {backing}; {len(unsupported)} ({shown}) "
        f"{_plural(len(unsupported), 'appears', 'appear')} in no source."
    )


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
    supported = [v for v in values if v.supported]
    unsupported = [v for v in values if not v.supported]
    line = _verdict(len(values), supported, unsupported, _backing(supported, names_of))
    for name, declared in coverage:
        line += f" {name} declared its coverage: {declared}."
    if stopped_early is not None:
        pending = stopped_early.pending_tool_calls
        line += (
            f" The turn was cut short ({stopped_early.reason} at iteration {stopped_early.iteration}; "
            f"{pending} tool {_plural(pending, 'call', 'calls')} not run)."
        )
    if asked:
        line += " The model asked the user for an argument no source held, and the call ran with the answer."
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
    - ``argumentAsk`` (:class:`~fpdebug.engine.honesty.ask.ArgumentAsk` | None): this turn's ask;
      the user's answer is a source (``user``) once given, and the standing line says a value was
      asked for;
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
        TypeError: A key read holds a value of another shape than the one listed above.
    """
    # The one and only read of committed state: everything below looks at `state`.
    state = AnswerFoldState.read(committed, reads)
    if state.answer_validation is not None and state.answer_validation.withheld:
        return None
    sources, tool_name_of = _sources(state, grounds or Grounds())
    stated = _stated_values(answer, sources, state.unsupported_values)
    line = None
    mode = "always" if standing_line is True else (standing_line or None)
    if mode and _is_prose(answer) and (mode == "always" or any(not v.supported for v in stated)):
        line = _standing_line(state, stated, sources, tool_name_of, display_names or {})
    return AnswerAssessmentRow(
        reads=list(reads),
        values=stated,
        assumed=_assumed(state),
        stopped_early=state.stopped_early,
        standing_line=line,
    )


def gate_verdict(
    answer: str,
    committed: Mapping[str, object],
    *,
    reads: Sequence[AnswerFoldKey],
    grounds: Grounds | None = None,
) -> list[str]:
    """The evidence gate: the values ``answer`` states that no source supports (``unsupportedValues``).

    The gate reads what the answer fold reads, except its own key: it judges by the sources, then
    writes its verdicts for the fold (docs/honesty.md §12.5). A JSON or empty answer is judged like
    any other.

    Args:
        answer: The model's final content (a draft, when the gate sends it back).
        committed: The committed state.
        reads: The fold's keys (:func:`fold_reads`); ``unsupportedValues`` is skipped.
        grounds: The app's external grounds and declared sources.

    Returns:
        Each unsupported value's text, in the answer's order, listed once.
    """
    state = AnswerFoldState.read(committed, [key for key in reads if key != "unsupportedValues"])
    sources, _ = _sources(state, grounds or Grounds())
    return [v.text for v in _stated_values(answer, sources, frozenset()) if not v.supported]


def revision_ask(unsupported: Sequence[str]) -> str:
    """The message the enforcing gate adds before the revision turn (a ``system`` message).

    A ``system`` message, never a ``user`` one: the values it names must not become a source that
    supports them.

    Args:
        unsupported: The gate's verdicts.

    Returns:
        The text.
    """
    return (
        "Evidence check: your answer states values that appear in no tool result, user message or "
        f"declared source: {', '.join(unsupported)}. Revise the answer: state only values a source "
        "holds, and say plainly what you do not know. Tools are off for this revision."
    )


def _sources(state: AnswerFoldState, grounds: Grounds) -> tuple[list[Source], dict[str, str]]:
    """The sources, in the order their references are listed, and each call's tool name."""
    paused = state.paused_tool_call_id
    tools: list[Source] = []
    users: list[Source] = []
    tool_name_of: dict[str, str] = {}
    for message in state.history:
        if message.role == "tool" and message.tool_call_id and message.tool_call_id != paused:
            tools.append(
                source_of_result(message.tool_call_id, message.tool_name or "", None, message.content)
            )
            tool_name_of.setdefault(message.tool_call_id, message.tool_name or "")
        elif message.role == "user":
            users.append(source_of_user(message.content))
    ask = state.argument_ask
    if ask is not None and ask.answered:
        # The user's answer to the inputs layer's ask: their word, as a message of theirs is.
        users.append(source_of_user(answer_text(ask.answer)))
    for finding in state.findings_ledger:
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
    return [*tools, *users, *grounds.sources()], tool_name_of


def _stated_values(answer: str, sources: Sequence[Source], gate_flagged: frozenset[str]) -> list[StatedValue]:
    """Each distinct value the answer states, in order, with the sources that hold it."""
    stated: list[StatedValue] = []
    seen: set[str] = set()
    for found in extract_values(answer):
        if found.text in seen:
            continue
        seen.add(found.text)
        stated.append(_stated(found, sources, flagged=found.text in gate_flagged))
    return stated


def _assumed(state: AnswerFoldState) -> list[AssumedValue]:
    """The Assumed block: each middleware rewrite that supersedes one of this turn's argument rows."""
    arg_rows = {
        (row.tool_call_id, row.path): row
        for finding in state.findings_ledger
        if finding.layer == "inputs" and finding.turn == state.turn_number
        for row in finding.rows
        if isinstance(row, ArgumentRow)
    }
    assumed = []
    for decision in state.middleware_decisions:
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
    return assumed


def _standing_line(
    state: AnswerFoldState,
    stated: Sequence[StatedValue],
    sources: Sequence[Source],
    tool_name_of: Mapping[str, str],
    display_names: Mapping[str, str],
) -> str:
    """The standing line, with each source in the app's words and the coverage its calls declared."""
    words = {f"tool:{cid}": display_names.get(name, name) for cid, name in tool_name_of.items() if name}
    words.update({s.ref: s.label for s in sources if s.label})
    cited_calls = dict.fromkeys(
        ref.partition(":")[2]
        for v in stated
        if v.supported
        for ref in v.supported_by
        if ref.startswith("tool:")
    )
    coverage = state.coverage_declared
    notes = [(words.get(f"tool:{cid}") or cid, coverage[cid]) for cid in cited_calls if cid in coverage]
    return compose_standing_line(
        stated,
        names_of=words,
        stopped_early=state.stopped_early,
        coverage=notes,
        asked=state.argument_ask is not None and state.argument_ask.answered,
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

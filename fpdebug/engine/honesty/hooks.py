"""The honesty layers armed on an agent: what ``run_start`` records and the hooks that file findings.

:class:`HonestyLayers` is the :class:`~fpdebug.engine.agent.HonestyHooks` the builder's arming
methods install (``Agent.findings()``, ``.inputs_layer()``, ``.results_layer()``,
``.answer_layer()``). It is an immutable value, like the agent that carries it: the state of one
run (the findings ledger, the tool results read so far, the declared coverage) lives in a
:class:`HonestyRun` opened per :class:`~fpdebug.engine.agent.Conversation`.

Every decision is made by the pure core (:mod:`fpdebug.engine.honesty`) from the arms this module
records in ``run_start.honesty`` and from facts the trace records, so
:func:`~fpdebug.engine.honesty.replay.recompute_findings` over the saved trace files the same rows
(the equality law, docs/honesty.md §12.4). The filing points:

=========  ===========================================================================================
results    at the loop head, before the pass: the batch ``batch_to_judge(iteration, stamp)`` names
inputs     rows judged after the LLM call and before Route; written right after the ``llm_call``
gate       the evidence gate, on a reply Route sends to ``final``, before its ``llm_call`` (§12.5)
answer     first on the final branch, before ``turn_end`` (and on a draft the gate sends back)
=========  ===========================================================================================

Each visit writes at most ONE ``finding`` event; a visit with no rows writes nothing.

**Tool middleware.** When the agent has a middleware chain (``Agent.tool_middleware``), the arms
record ``tool_middleware=True``. The chain runs after the inputs layer has judged the reply and
before its rows are written; :meth:`HonestyLayers.after_llm_record` compares each call Route
dispatches (``_from`` stripped) with the call as it will run (``loop.calls_to_run``) through
:func:`~fpdebug.engine.honesty.inputs.rewrites_of`, exactly as the replay compares the ``llm_call`` with
the ``tool_result.args`` it recorded, and re-judges the reply with those rewrites. The turn's
rewrites are the answer layer's ``middlewareDecisions``.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypeAlias

from fpdebug.engine.honesty.answer import (
    AnswerFoldKey,
    AnswerValidation,
    StandingLineWhen,
    assess_answer,
    fold_reads,
    gate_verdict,
    revision_ask,
)
from fpdebug.engine.honesty.ask import PausedVisit, answer_text, argument_ask_of, next_ask, with_answer
from fpdebug.engine.honesty.inputs import (
    ArgumentRewrite,
    Grounds,
    InputsConfig,
    PriorResult,
    SourcesInReach,
    judge_inputs,
    rewrites_of,
)
from fpdebug.engine.honesty.ledger import Finding, HonestyRow, Layer, file_finding
from fpdebug.engine.honesty.replay import tool_surface
from fpdebug.engine.honesty.results import RanCall, batch_to_judge, results_at_loop_head
from fpdebug.engine.honesty.timelayer import app_zone_of, call_windows, clock_row, turn_clock, windows_of
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import Clock
from fpdebug.trace.schema import (
    AskAnswerEvent,
    AskRow,
    CallWindowRow,
    ClockRow,
    DeclaredSource,
    ExternalGround,
    FindingEvent,
    HonestyArms,
    LlmRequest,
    LlmResponse,
    ToolCallRecord,
    ValidationRow,
)

if TYPE_CHECKING:
    from fpdebug.engine.agent import Conversation, TurnLoop

__all__ = [
    "AnswerValidator",
    "GatePosture",
    "HonestyLayers",
    "HonestyRun",
    "declared_sources_of",
    "external_grounds_of",
    "validate_answer",
]

AnswerValidator: TypeAlias = Callable[[str], "str | None"]
"""The app's answer validation: given the final answer, the reason to withhold it, or ``None``."""

GatePosture: TypeAlias = Literal["flag", "enforce"]
"""The evidence gate's posture: ``flag`` only writes its verdicts; ``enforce`` also sends an answer
stating an unsupported value back for one revision turn, with the tools off (docs/honesty.md §12.5)."""


def _json_value(value: object, where: str) -> object:
    """The value as the trace will hold it (so the run and the saved trace read the same data)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise DefinitionError(
            f"{where} must be JSON data (str, number, bool, None, list, dict): {exc}"
        ) from None


def _labelled(items: Mapping[str, object] | Iterable[object], kind: str) -> list[tuple[str, object]]:
    if isinstance(items, Mapping):
        pairs = list(items.items())
    elif isinstance(items, (str, bytes)):
        raise DefinitionError(f"{kind} must be a mapping of label to value, got {items!r}")
    else:
        pairs = []
        for item in items:
            if isinstance(item, ExternalGround):
                pairs.append((item.label, item.value))
            elif isinstance(item, DeclaredSource):
                pairs.append((item.name, item.content))
            else:
                raise DefinitionError(f"{kind} takes a mapping of label to value, got the item {item!r}")
    seen: set[str] = set()
    for label, _ in pairs:
        if not isinstance(label, str) or not label.strip():
            raise DefinitionError(f"{kind}: a label must be a non-empty string, got {label!r}")
        if label in seen:
            raise DefinitionError(f"{kind}: the label {label!r} is given twice")
        seen.add(label)
    return pairs


def external_grounds_of(
    grounds: Mapping[str, object] | Iterable[ExternalGround],
) -> tuple[ExternalGround, ...]:
    """Values the app vouches for, checked and in the form the trace records them.

    Args:
        grounds: Label → value (``{"account_balance": 1250.0}``), or :class:`ExternalGround` values.

    Returns:
        The grounds, in the order given; each value is JSON data exactly as ``run_start`` holds it.

    Raises:
        DefinitionError: A label that is empty or repeated, or a value that is not JSON data.
    """
    return tuple(
        ExternalGround(label=label, value=_json_value(value, f"external ground {label!r}"))
        for label, value in _labelled(grounds, "external_grounds")
    )


def declared_sources_of(
    sources: Mapping[str, object] | Iterable[DeclaredSource],
) -> tuple[DeclaredSource, ...]:
    """Documents the app declares as argument sources, checked and in the form the trace records them.

    Args:
        sources: Name → document (JSON data, or a text), or :class:`DeclaredSource` values.

    Returns:
        The sources, in the order given.

    Raises:
        DefinitionError: A name that is empty or repeated, or a document that is not JSON data.
    """
    return tuple(
        DeclaredSource(name=name, content=_json_value(content, f"declared source {name!r}"))
        for name, content in _labelled(sources, "declared_sources")
    )


def _standing_line(value: StandingLineWhen | bool | None) -> StandingLineWhen | None:
    if value is True:
        return "always"
    if value is False or value is None:
        return None
    if value in ("always", "unsupported"):
        return value
    raise DefinitionError(f"standing_line must be True, False, 'always' or 'unsupported', got {value!r}")


def validate_answer(validator: AnswerValidator, answer: str) -> ValidationRow:
    """Answer validation's report on ``answer``: the ``validation`` row the answer layer files first.

    A validator that raises, or returns something other than a text or ``None``, withholds the
    answer, and the row says why: an answer no check could vouch for is not assessed as if it had.

    Args:
        validator: The app's check: the reason to withhold the answer, or ``None`` to pass it.
        answer: The final answer.

    Returns:
        The report.
    """
    try:
        reason = validator(answer)
    except Exception as exc:  # the app's code: its failure is recorded, never a traceback mid-turn
        return ValidationRow(withheld=True, reason=f"the validation raised {type(exc).__name__}: {exc}")
    if reason is None:
        return ValidationRow(withheld=False)
    if not isinstance(reason, str):
        return ValidationRow(
            withheld=True, reason=f"the validation returned {type(reason).__name__}, not a text"
        )
    return ValidationRow(withheld=True, reason=reason)


@dataclass(frozen=True)
class PendingInputs:
    """One reply the inputs layer judged, waiting for its write after the ``llm_call`` record.

    Attributes:
        calls: The calls as the model wrote them.
        sources: The sources in reach when it was judged.
        tools_in_reach: The tools offered on the call.
        resolved: What Route may dispatch (``_from`` stripped when argument sources are armed).
        finding: The rows judged without any rewrite (``None``: nothing to write).
        clock: The turn's clock row, on the layer's first visit of the turn (the time layer).
        windows: The calls' ``call-window`` rows (the time layer).
    """

    calls: tuple[ToolCallRecord, ...]
    sources: SourcesInReach
    tools_in_reach: tuple[str, ...]
    resolved: tuple[ToolCallRecord, ...]
    finding: Finding | None
    clock: tuple[ClockRow, ...] = ()
    windows: tuple[CallWindowRow, ...] = ()

    def rows(self, rows: Sequence[HonestyRow]) -> tuple[HonestyRow, ...]:
        """The visit's ONE write: the clock row, the argument and basis rows, the call windows."""
        return (*self.clock, *rows, *self.windows)


def _rewrites(resolved: Sequence[ToolCallRecord], ran: Sequence[ToolCallRecord]) -> list[ArgumentRewrite]:
    """The middleware decisions: each resolved call against the call that runs under its id.

    Keyed by call id, as the replay pairs an ``llm_call``'s calls with their ``tool_result`` records.
    """
    by_id = {call.id: call for call in ran}
    return [
        rewrite
        for call in resolved
        if call.id in by_id and call.raw_args is None
        for rewrite in rewrites_of(call.id, call.args, by_id[call.id].args)
    ]


@dataclass
class HonestyRun:
    """One run's honesty state: what the layers have read and filed so far.

    Attributes:
        arms: What ``run_start`` recorded (every decision below is made from it).
        reads: The committed keys the answer layer's fold reads (``answer_fold_reads``).
        config: The inputs layer's configuration (``InputsConfig.from_arms``).
        grounds: The app's external grounds and declared sources.
        ledger: Every finding written in this run, in order (``findingsLedger``).
        prior: Every tool result the model has read in this run, oldest first.
        coverage: Call id → the coverage its tool declared (``coverageDeclared``).
        pending: The reply judged after the LLM call, written after its ``llm_call``.
        decisions: This turn's middleware rewrites (``middlewareDecisions``).
        decisions_turn: The turn :attr:`decisions` belong to.
        unsupported: The evidence gate's verdicts on the answer of this iteration
            (``unsupportedValues``), keyed by ``(turn, iteration)``.
        tools: The agent has a tool surface (a tool that ran writes ``coverageDeclared``).
        clocked: The turns whose clock row is filed (the time layer reads its clock once a turn).
        paused: The visit whose ask waits for the user's answer (docs/honesty.md §12.7).
        answers: ``(turn, call id, path)`` → each answer the user gave (``argumentAsk``).
    """

    arms: HonestyArms
    reads: tuple[AnswerFoldKey, ...]
    config: InputsConfig
    grounds: Grounds
    ledger: list[Finding] = field(default_factory=list)
    prior: list[PriorResult] = field(default_factory=list)
    coverage: dict[str, str] = field(default_factory=dict)
    pending: PendingInputs | None = None
    decisions: list[ArgumentRewrite] = field(default_factory=list)
    decisions_turn: int | None = None
    unsupported: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)
    tools: bool = False
    clocked: set[int] = field(default_factory=set)
    paused: PausedVisit | None = None
    answers: dict[tuple[int | None, str, str], object] = field(default_factory=dict)

    def committed(self, loop: TurnLoop) -> dict[str, object]:
        """The committed state the answer fold and the gate read: only keys some arm writes."""
        # Each key only where its writer is armed, so the law "a fold never reads what nothing
        # writes" is checkable: every key the fold reads is one of these.
        committed: dict[str, object] = {
            "history": tuple(loop.history),
            "turnNumber": loop.turn,
            "findingsLedger": tuple(self.ledger),
            "stoppedEarly": loop.stopped_early,  # Route writes it on every agent
            "pausedToolCallId": loop.paused_tool_call_id,  # the loop writes it on every agent
        }
        if self.arms.inputs:
            committed["argumentAsk"] = argument_ask_of(self.ledger, loop.turn, self.answers)
        if self.tools:
            committed["coverageDeclared"] = dict(self.coverage)
        if self.arms.inputs and self.arms.tool_middleware:
            committed["middlewareDecisions"] = tuple(self.decisions_of(loop.turn))
        verdicts = self.unsupported.get((loop.turn, loop.iteration))
        if verdicts is not None:
            committed["unsupportedValues"] = verdicts
        return committed

    def decisions_of(self, turn: int) -> list[ArgumentRewrite]:
        """This turn's middleware rewrites (a new turn starts with none)."""
        if self.decisions_turn != turn:
            self.decisions, self.decisions_turn = [], turn
        return self.decisions

    def file(self, loop: TurnLoop, layer: Layer, rows: Sequence[HonestyRow], *, iteration: int) -> None:
        """Write one layer visit's rows as ONE ``finding`` event (nothing when there are none)."""
        self.write(loop, file_finding(layer, rows, turn=loop.turn, iteration=iteration))

    def write(self, loop: TurnLoop, finding: Finding | None) -> None:
        """Emit a finding and add it to the ledger once the sink has accepted it."""
        if finding is None:
            return
        loop.recorder.emit(
            FindingEvent,
            turn=finding.turn,
            iteration=finding.iteration,
            layer=finding.layer,
            rows=list(finding.rows),
        )
        self.ledger.append(finding)


@dataclass(frozen=True)
class HonestyLayers:
    """Which honesty layers an agent arms (docs/honesty.md §12) and the app's facts they read.

    The agent's :class:`~fpdebug.engine.agent.HonestyHooks`: an immutable value, shared by every
    run of the agent; a run's state is a :class:`HonestyRun`. Build it with the agent's arming
    methods rather than by hand.

    Attributes:
        inputs: The inputs layer: where every tool argument came from.
        results: The results layer: each tool batch judged once.
        answer: The answer layer: each final answer assessed against the findings.
        argument_sources: Declared sources are armed: the ``_from`` citation is read (and stripped
            from what runs), and external grounds and declared sources are searched.
        external_grounds: Values the app vouches for, each with its label.
        declared_sources: Documents the app declares as argument sources, each with its name.
        standing_line: Compose a standing line for prose answers: ``always`` or only when a value is
            ``unsupported``; ``None`` composes none.
        gate_posture: The evidence gate's posture (``flag`` or ``enforce``); ``None``: not armed.
        validator: Answer validation (``validated``): the app's check of each final answer.
        app_zone: The time layer (``time.appZone``): the app's zone; ``None``: not armed.
        time_clock: The time layer's clock; ``None`` reads the run's clock (the loop's).
        ask: The argument ask (``argumentAsk``): an ungrounded argument of a call Route will run is
            put to the user, and the turn pauses on the call (docs/honesty.md §12.7).
    """

    inputs: bool = False
    results: bool = False
    answer: bool = False
    argument_sources: bool = False
    external_grounds: tuple[ExternalGround, ...] = ()
    declared_sources: tuple[DeclaredSource, ...] = ()
    standing_line: StandingLineWhen | None = None
    gate_posture: GatePosture | None = None
    validator: AnswerValidator | None = None
    app_zone: str | None = None
    time_clock: Clock | None = None
    ask: bool = False
    _runs: weakref.WeakKeyDictionary[Conversation, HonestyRun] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    @property
    def armed(self) -> bool:
        """Whether any layer is armed (an agent with none writes exactly the trace it always did)."""
        return self.inputs or self.results or self.answer

    def arm(
        self,
        *,
        inputs: bool = False,
        results: bool = False,
        answer: bool = False,
        argument_sources: bool | None = None,
        external_grounds: Mapping[str, object] | Iterable[ExternalGround] | None = None,
        declared_sources: Mapping[str, object] | Iterable[DeclaredSource] | None = None,
        standing_line: StandingLineWhen | bool | None = None,
        evidence_gate: GatePosture | None = None,
        answer_validation: AnswerValidator | None = None,
        time_zone: str | None = None,
        time_clock: Clock | None = None,
        ask: bool | None = None,
    ) -> HonestyLayers:
        """These layers with more armed: a layer once armed stays armed; an option given replaces.

        Giving external grounds or declared sources arms argument sources (they are searched only
        then), unless ``argument_sources=False`` says otherwise, which is refused.

        Args:
            inputs: Arm the inputs layer.
            results: Arm the results layer.
            answer: Arm the answer layer.
            argument_sources: Arm (``True``) or disarm (``False``) declared sources; ``None`` keeps.
            external_grounds: Replace the external grounds (label → value); ``None`` keeps.
            declared_sources: Replace the declared sources (name → document); ``None`` keeps.
            standing_line: ``True``/``"always"``, ``"unsupported"``, ``False`` (none); ``None`` keeps.
            evidence_gate: Arm the evidence gate as ``"flag"`` or ``"enforce"`` (it arms the answer
                layer, whose fold reads its verdicts); ``None`` keeps.
            answer_validation: Arm answer validation with this check (it arms the answer layer);
                ``None`` keeps.
            time_zone: Arm the time layer with the app's zone (it arms the inputs layer, which
                files its rows); ``None`` keeps.
            time_clock: The time layer's clock (``None`` keeps; unset, the run's clock is read).
            ask: Arm (``True``) or disarm (``False``) the argument ask (it arms the inputs layer);
                ``None`` keeps.

        Returns:
            The new layers.

        Raises:
            DefinitionError: A bad option.
        """
        grounds = None if external_grounds is None else external_grounds_of(external_grounds)
        declared = None if declared_sources is None else declared_sources_of(declared_sources)
        if argument_sources is not None and not isinstance(argument_sources, bool):
            raise DefinitionError(f"argument_sources must be a bool, got {argument_sources!r}")
        gives_sources = bool(grounds or declared)
        if gives_sources and argument_sources is False:
            raise DefinitionError(
                "external_grounds and declared_sources are searched only with argument_sources=True"
            )
        if evidence_gate not in (None, "flag", "enforce"):
            raise DefinitionError(f"evidence_gate must be 'flag' or 'enforce', got {evidence_gate!r}")
        zone, clock = self._armed_time(time_zone, time_clock)
        asks = self._armed_ask(ask)
        if answer_validation is not None and not callable(answer_validation):
            raise DefinitionError(f"answer_validation takes a function, got {answer_validation!r}")
        armed_sources = self.argument_sources
        if argument_sources is not None or gives_sources:
            armed_sources = bool(argument_sources) or gives_sources
        return HonestyLayers(
            # The time layer and the ask file their rows in the inputs layer: each arms it.
            inputs=any((self.inputs, bool(inputs), zone is not None, asks)),
            results=self.results or bool(results),
            answer=self.answer or bool(answer) or evidence_gate is not None or answer_validation is not None,
            argument_sources=armed_sources,
            external_grounds=self.external_grounds if grounds is None else grounds,
            declared_sources=self.declared_sources if declared is None else declared,
            standing_line=self.standing_line if standing_line is None else _standing_line(standing_line),
            gate_posture=self.gate_posture if evidence_gate is None else evidence_gate,
            validator=self.validator if answer_validation is None else answer_validation,
            app_zone=zone,
            time_clock=clock,
            ask=asks,
        )

    def _armed_ask(self, ask: bool | None) -> bool:
        """The argument ask after :meth:`arm`: an option given replaces, checked."""
        if ask is not None and not isinstance(ask, bool):
            raise DefinitionError(f"ask must be a bool, got {ask!r}")
        return self.ask if ask is None else ask

    def _armed_time(self, time_zone: str | None, time_clock: Clock | None) -> tuple[str | None, Clock | None]:
        """The time layer's zone and clock after :meth:`arm`: an option given replaces, checked."""
        zone = self.app_zone if time_zone is None else app_zone_of(time_zone)
        if time_clock is not None and not callable(getattr(time_clock, "now", None)):
            raise DefinitionError(f"time(clock=...) takes a clock with a now() method, got {time_clock!r}")
        return zone, self.time_clock if time_clock is None else time_clock

    def arms(self, tools: Iterable[Tool], *, tool_middleware: bool = False) -> HonestyArms | None:
        """What ``run_start.honesty`` records for an agent whose tools are ``tools``.

        Args:
            tools: Every tool the agent can dispatch (its own and its skills'), in declaration order.
            tool_middleware: The agent has a before-tool middleware chain.

        Returns:
            The arms, with the hiding tools and display names the tools declare; ``None`` when no
            layer is armed.
        """
        if not self.armed:
            return None
        tools = list(tools)
        hidden = [t.name for t in tools if t.hides_arguments]
        names = {t.name: t.display_name for t in tools if t.display_name is not None}
        periods = {t.name: t.period for t in tools if t.period is not None} if self.app_zone else {}
        return HonestyArms(
            inputs=self.inputs,
            results=self.results,
            answer=self.answer,
            argument_sources=self.argument_sources,
            tool_middleware=tool_middleware,
            hidden_argument_tools=hidden or None,
            external_grounds=list(self.external_grounds) or None,
            declared_sources=list(self.declared_sources) or None,
            standing_line=self.standing_line,
            display_names=names or None,
            evidence_gate=True if self.gate_posture else None,
            tools_off_after_revision=True if self.gate_posture == "enforce" else None,
            answer_validation=True if self.validator is not None else None,
            app_zone=self.app_zone,
            periods=periods or None,
            argument_ask=True if self.ask else None,
        )

    # -- HonestyHooks ----------------------------------------------------------------------------

    def run_arms(self, conversation: Conversation) -> HonestyArms | None:
        """Open this run's state and say what ``run_start`` records (``None``: no layer armed).

        Args:
            conversation: The run being opened (``run_start`` is not written yet).

        Returns:
            ``run_start.honesty``.
        """
        arms = self.arms(
            conversation.compiled.tools_by_name.values(),
            tool_middleware=bool(conversation.agent.spec.tool_middleware),
        )
        if arms is None:
            return None
        compiled = conversation.compiled
        surface = tool_surface(
            compiled.agent_tools, [injection.declaration() for injection in compiled.setup.injections]
        )
        reads = fold_reads(
            tools=surface,
            evidence_gate=bool(arms.evidence_gate),
            answer_validation=bool(arms.answer_validation),
            inputs=arms.inputs,
            tool_middleware=arms.tool_middleware,
        )
        run = HonestyRun(
            arms, tuple(reads), InputsConfig.from_arms(arms), Grounds.from_arms(arms), tools=surface
        )
        with self._lock:
            self._runs[conversation] = run
        return arms

    def _run(self, loop: TurnLoop) -> HonestyRun | None:
        with self._lock:
            return self._runs.get(loop.conversation)

    def loop_head(self, loop: TurnLoop) -> None:
        """Results layer: judge the batch in place when it is new on this visit (once per run).

        The batch also becomes a source for later arguments and its declared coverage is noted,
        whichever layers are armed.
        """
        run = self._run(loop)
        if run is None:
            return
        stamp = loop.batch_iteration
        dispatched = batch_to_judge(loop.iteration, stamp)
        batch, texts, coverage = loop.tool_results, loop.batch_texts, loop.batch_coverage
        if dispatched is None or batch is None or texts is None or coverage is None:
            return  # no batch in place, or one this run has read and judged already
        calls = [
            RanCall(entry.tool_call_id or "", entry.tool_name, text, status=entry.status, coverage=declared)
            for entry, text, declared in zip(batch, texts, coverage, strict=True)
        ]
        for call in calls:
            run.prior.append(PriorResult(call.tool_call_id, call.tool_name, call.result, dispatched))
            if call.coverage is not None:
                run.coverage[call.tool_call_id] = call.coverage
        if run.arms.results:
            if run.arms.app_zone is not None:  # the time layer: each call's window, this turn's clock
                windows = windows_of(run.ledger, loop.turn)
                calls = [replace(c, window=windows.get(c.tool_call_id)) for c in calls]
            rows = results_at_loop_head(
                loop.iteration, stamp, calls, clock=turn_clock(run.ledger), turn=loop.turn
            )
            run.file(loop, "results", rows, iteration=loop.iteration)

    def after_llm_call(self, loop: TurnLoop, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        """Inputs layer, Declare → Verify → Record → Resolve: judge every call's arguments.

        The rows wait for :meth:`after_llm_record` (they follow the ``llm_call`` they are about);
        the returned reply is what Route dispatches (``_from`` stripped when argument sources are
        armed).
        """
        run = self._run(loop)
        if run is None or not run.arms.inputs or not response.tool_calls:
            return response
        # A message the loop wrote (a nudge, a wrap-up) is not the user's word: never a source.
        users = tuple(m.content for m in loop.history if m.role == "user" and not m.from_loop)
        users += tuple(answer_text(answer) for answer in run.answers.values())  # the user's answers too
        sources = SourcesInReach(tuple(run.prior), users)
        in_reach = tuple(schema.name for schema in request.tools)
        # Route's dispatch test: a call Route will not run (a limit, or the gate's revision turned
        # the tools off) is never asked about.
        tools_off = not loop.dispatches(response)
        verdict = judge_inputs(
            response.tool_calls, sources, config=run.config, tools_in_reach=in_reach, tools_off=tools_off
        )
        pending = PendingInputs(tuple(response.tool_calls), sources, in_reach, verdict.resolved, None)
        if run.arms.app_zone is not None and not tools_off:
            pending = self._time_rows(run, loop, pending)
        run.pending = replace(
            pending,
            finding=file_finding(
                "inputs", pending.rows(verdict.rows), turn=loop.turn, iteration=loop.iteration
            ),
        )
        if tools_off:
            return response  # nothing runs, so nothing is resolved: the reply stays as the model wrote it
        if list(verdict.resolved) == list(response.tool_calls):
            return response
        return response.model_copy(update={"tool_calls": list(verdict.resolved)})

    def after_llm_record(self, loop: TurnLoop) -> None:
        """Inputs layer, the ONE write: the rows judged for the call just recorded.

        With a tool middleware, a value the middleware rewrote (``loop.calls_to_run`` against what
        Route dispatches) is judged again with the rewrite, so its row says what the call ran with.
        """
        run = self._run(loop)
        if run is None or run.pending is None:
            return
        pending, run.pending = run.pending, None
        finding = pending.finding
        rewrites = _rewrites(pending.resolved, loop.calls_to_run) if run.arms.tool_middleware else []
        if rewrites:
            run.decisions_of(loop.turn).extend(rewrites)
            verdict = judge_inputs(
                pending.calls,
                pending.sources,
                config=run.config,
                tools_in_reach=pending.tools_in_reach,
                rewrites=rewrites,
            )
            rows = pending.rows(verdict.rows)
            finding = file_finding("inputs", rows, turn=loop.turn, iteration=loop.iteration)
        if run.arms.argument_ask and loop.calls_to_run and finding is not None:
            # The ask ends the visit's ONE write: the call waits for the user (docs/honesty.md §12.7).
            ask = next_ask(finding.rows, display_names=run.arms.display_names)
            if ask is not None:
                run.paused = PausedVisit(ask, finding.rows)
                finding = replace(finding, rows=(*finding.rows, ask))
        run.write(loop, finding)

    def paused(self, loop: TurnLoop) -> AskRow | None:
        """The ask the turn pauses on (the inputs layer's last write ended with it), or ``None``."""
        run = self._run(loop)
        return None if run is None or run.paused is None else run.paused.ask

    def answer_ask(self, loop: TurnLoop, answer: object) -> AskRow | None:
        """The user answered the ask: record it, file the answered argument (and the next ask).

        ``loop.calls_to_run`` then holds the answer at the asked argument.

        Returns:
            The next ask (the turn stays paused), or ``None``: the batch runs.

        Raises:
            DefinitionError: The answer is not JSON data, or no ask waits for one.
        """
        run = self._run(loop)
        if run is None or run.paused is None:
            raise DefinitionError("no argument ask is waiting for an answer")
        answer = _json_value(answer, "the answer to an argument ask")
        ask = run.paused.ask
        loop.recorder.emit(
            AskAnswerEvent,
            turn=loop.turn,
            iteration=loop.iteration,
            tool_call_id=ask.tool_call_id,
            tool_name=ask.tool_name,
            path=ask.path,
            answer=answer,
        )
        run.answers[(loop.turn, ask.tool_call_id, ask.path)] = answer
        rows, run.paused = run.paused.answered(answer, run.arms.display_names)
        loop.calls_to_run = with_answer(loop.calls_to_run, ask.tool_call_id, ask.path, answer)
        run.file(loop, "inputs", rows, iteration=loop.iteration)
        return None if run.paused is None else run.paused.ask

    def _time_rows(self, run: HonestyRun, loop: TurnLoop, pending: PendingInputs) -> PendingInputs:
        """The time layer's rows for a visit: the turn's clock (read once a turn), the call windows.

        The clock is the layer's own (``time(clock=...)``) or, unset, the run's: the one the loop
        stamps its events with, so a run on a fixed clock files a reproducible ``now``.
        """
        zone = run.arms.app_zone
        assert zone is not None
        clock: tuple[ClockRow, ...] = ()
        if loop.turn not in run.clocked:
            run.clocked.add(loop.turn)
            now = (self.time_clock or loop.conversation.clock).now()
            clock = (clock_row(loop.turn, now, zone),)
        windows = tuple(call_windows(pending.resolved, run.arms.periods or {}, zone))
        return replace(pending, clock=clock, windows=windows)

    def evidence_gate(self, loop: TurnLoop, content: str) -> str | None:
        """The evidence gate, on a reply Route sends to ``final``: judge it, and say whether to revise.

        Writes the verdicts (``unsupportedValues``) for the answer fold of this iteration. Only the
        enforcing gate revises, once per turn: never on the revision turn itself (the tools are off
        then), so a revised answer that still states an unsupported value is flagged, not sent back.

        Returns:
            The gate's ask when the answer goes back for its revision turn (Route's ``evidence-recheck``),
            else ``None``.
        """
        run = self._run(loop)
        if run is None or not run.arms.evidence_gate:
            return None
        verdicts = gate_verdict(content, run.committed(loop), reads=run.reads, grounds=run.grounds)
        run.unsupported[(loop.turn, loop.iteration)] = tuple(verdicts)
        if verdicts and run.arms.tools_off_after_revision and not loop.tools_off:
            return revision_ask(verdicts)
        return None

    def before_final(self, loop: TurnLoop, content: str) -> None:
        """Answer layer: one fold over the committed keys this agent's arms can write."""
        run = self._run(loop)
        if run is None or not run.arms.answer:
            return
        committed = run.committed(loop)
        rows: list[HonestyRow] = []
        if self.validator is not None:
            report = validate_answer(self.validator, content)
            committed["answerValidation"] = AnswerValidation(report.withheld, report.reason)
            rows.append(report)
        row = assess_answer(
            content,
            committed,
            reads=run.reads,
            grounds=run.grounds,
            standing_line=run.arms.standing_line,
            display_names=run.arms.display_names,
        )
        if row is not None:
            rows.append(row)
        run.file(loop, "answer", rows, iteration=loop.iteration)

"""Recompute a run's honesty findings from its saved trace (the equality law of docs/honesty.md §12.4).

:func:`recompute_findings` walks one run's events in trace order and calls the same pure functions
the loop calls at the three mount points, handing them only what the trace recorded:

- **results** — a loop head visit is the first event of a ``(turn, iteration)`` pair (every event of
  an iteration follows its loop head). The stamp is the iteration of the latest batch of
  ``tool_result`` events in this turn, and starts empty at each ``turn_start``;
  :func:`~fpdebug.engine.honesty.results.results_at_loop_head` decides whether to file rows.
- **inputs** — after each ``llm_call`` whose reply asked for tools: the calls as the model wrote them,
  the tool results and user messages recorded before it, the tools offered on that call, and — with
  a tool middleware armed — the rewrites between the requested arguments and the ``args`` each
  ``tool_result`` ran with.
- **answer** — at each ``llm_call`` routed to ``final`` or ``evidence-recheck`` (a draft the evidence
  gate sent back): its reply is the answer; the committed state is rebuilt from the events before it
  (history, this turn's number, the findings recomputed so far, the ``stopped_early`` the final
  branch derives from the reply, declared coverage, this turn's rewrites, the gate's verdicts judged
  again from that state). Answer validation's report is the app's code, so it is read from the
  visit's recorded ``validation`` row. ``pausedToolCallId`` is always empty there: a paused turn
  gives no answer before its ask is answered; ``argumentAsk`` is this turn's last ``ask`` row, with
  the user's answer from its ``ask_answer`` event.
- **ask** (armed with ``argument_ask``) — an inputs visit of a call Route ran ends with the ask the
  same pure function chooses (:func:`~fpdebug.engine.honesty.ask.next_ask`); each ``ask_answer``
  event (the user's word, read as a fact like a tool's result) files the answered argument and the
  next ask, due right after it (docs/honesty.md §12.7).

- **time** (armed with ``app_zone``) — the clock is the app's, so each turn's ``now`` is read from
  the turn's recorded ``clock`` row; which visit files it (the turn's first inputs visit), the call
  windows, and each result's ``beyond_now`` are recomputed.

An interrupted run (``run_end`` ``interrupted``) or a trace cut short wrote only the findings of the
visits it finished; :func:`recompute_findings` states the rule that says which.

The build-time facts (arms, grounds, hiding tools, display names, standing line mode) come from
``run_start.honesty``; whether the agent has a tool surface comes from ``run_start``'s tools and
injections. :func:`recorded_findings` returns what the trace itself filed, for comparison.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import replace

from fpdebug.engine.agent.branches import cut_short
from fpdebug.engine.agent.limits import CostBudget, SpendMeter
from fpdebug.engine.agent.replies import truncated_calls
from fpdebug.engine.agent.window import apply_dropped
from fpdebug.engine.honesty.answer import (
    AnswerValidation,
    assess_answer,
    fold_reads,
    gate_verdict,
    revision_ask,
)
from fpdebug.engine.honesty.ask import PausedVisit, answer_text, argument_ask_of, next_ask
from fpdebug.engine.honesty.inputs import (
    BASIS_KEY,
    ArgumentRewrite,
    Grounds,
    InputsConfig,
    PriorResult,
    SourcesInReach,
    judge_inputs,
    rewrites_of,
)
from fpdebug.engine.honesty.ledger import Finding, HonestyRow, Layer, file_finding
from fpdebug.engine.honesty.results import RanCall, results_at_loop_head
from fpdebug.engine.honesty.timelayer import call_windows, clock_row, turn_clock, windows_of
from fpdebug.errors import TraceFormatError
from fpdebug.trace.schema import (
    LOOP_BACK_ROUTES,
    AskAnswerEvent,
    ClockRow,
    CompactEvent,
    FindingEvent,
    HonestyArms,
    InjectionDecl,
    LlmCallEvent,
    LlmResponse,
    Message,
    OutputRetryEvent,
    RunEndEvent,
    RunStartEvent,
    StepsUnfinishedEvent,
    StoppedEarly,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TraceEvent,
    TurnStartEvent,
    ValidationRow,
    WrapUpEvent,
)

__all__ = ["has_tool_surface", "recompute_findings", "recorded_findings", "tool_surface"]


def tool_surface(tools: Sequence[ToolSchema], injections: Sequence[InjectionDecl]) -> bool:
    """Whether an agent so declared can run a tool: its own tools, a skill's tools, or ``read_skill``.

    The loop's hooks and the replay both decide the ``tools`` arm here, from what ``run_start``
    records, so the two folds read the same keys.

    Args:
        tools: The agent's own tools (``run_start.tools``).
        injections: The catalog (``run_start.injections``).

    Returns:
        True when some tool can run (the ``tools`` arm of :func:`answer_fold_reads`).
    """
    return bool(tools) or any(inj.tool_names or inj.trigger.kind == "llm-activated" for inj in injections)


def has_tool_surface(run_start: RunStartEvent) -> bool:
    """Whether the agent can run a tool: its own tools, a skill's tools, or ``read_skill``.

    Args:
        run_start: The run's declared configuration.

    Returns:
        True when some tool can run (the ``tools`` arm of :func:`answer_fold_reads`).
    """
    return tool_surface(run_start.tools, run_start.injections)


def recorded_findings(events: Iterable[TraceEvent]) -> list[Finding]:
    """The findings a trace filed, in trace order.

    Args:
        events: One run's events.

    Returns:
        Each ``finding`` event's layer, turn, iteration and rows.
    """
    return [Finding.of_event(e) for e in events if isinstance(e, FindingEvent)]


def _run_start(events: Sequence[TraceEvent]) -> RunStartEvent:
    starts = [e for e in events if isinstance(e, RunStartEvent)]
    if len(starts) != 1:
        raise TraceFormatError(
            f"expected the events of one run (one run_start), found {len(starts)} run_start events"
        )
    strangers = {e.run_id for e in events} - {starts[0].run_id}
    if strangers:
        raise TraceFormatError(f"events of other runs are mixed in: {sorted(strangers)}")
    return starts[0]


def _requested(call: ToolCallRecord, config: InputsConfig) -> dict[str, object]:
    if config.argument_sources:
        return {k: v for k, v in call.args.items() if k != BASIS_KEY}
    return dict(call.args)


def _stopped_early(call: LlmCallEvent, reply: LlmResponse, spend: SpendMeter | None) -> StoppedEarly | None:
    """What the loop's final branch records as ``stopped_early`` for a reply routed to ``final``.

    A final reply that still asks for tools was cut by the cost budget when the run's spend (the
    recorded usages, priced as the loop priced them) had reached it, else by ``max_iterations``; any
    other final reply was the model's own answer.
    """
    if not reply.tool_calls or call.iteration is None:
        return None
    return cut_short(reply, call.iteration, spend)


def recompute_findings(events: Iterable[TraceEvent]) -> list[Finding]:
    """Every finding the armed layers filed in a run, from its saved events alone.

    The same pure functions the loop calls at its three mount points, handed only what the trace
    recorded. A run that was stopped part-way (the debugger's step gate, Ctrl-C: ``run_end``
    ``interrupted``) or whose file ends early wrote only some of its findings; the rule below says
    which, from where the run writes each finding:

    - **results** rows are the first event of their loop head (the ``(turn, iteration)`` pair), so
      they count exactly when the trace holds some event of that pair (the ``finding`` itself, or the
      ``pass`` when the visit had nothing to say).
    - **inputs** rows are written right after the ``llm_call`` they judge; **answer** rows right after
      the final reply's ``llm_call`` and its inputs rows, before ``turn_end``. Nothing else is
      written in between, so these findings are *due*: the k-th due finding counts only when the
      trace holds at least k more events of the run after the ``llm_call`` (``run_end`` excepted:
      an interrupted run writes it without finishing anything). A visit the run never finished —
      an ``llm_call`` followed by ``run_end`` or by nothing — files nothing.
    - The answer is the content of the ``llm_call`` whose route is ``final``; its ``stopped_early``
      is what the loop's final branch derives from that reply (``max-iterations`` when the reply
      still asks for tools), so an answer assessed before ``turn_end`` was written is recomputed
      the same. A turn with no final ``llm_call`` has no answer and no assessment.

    Args:
        events: One run's events, in trace order (``finding`` events, if any, are read only as
            events: evidence of how far the run got, never as rows).

    Returns:
        The findings, in the order the loop files them. Empty when no layer is armed.

    Raises:
        TraceFormatError: The events are not those of exactly one run.
    """
    events = list(events)
    run_start = _run_start(events)
    arms = run_start.honesty
    if arms is None or not (arms.inputs or arms.results or arms.answer):
        return []
    replay = _Replay(run_start, arms, events)
    for event in events:
        replay.feed(event)
    return replay.findings


class _Replay:
    """The fold of :func:`recompute_findings`: what the loop held at each event, and what it filed."""

    def __init__(self, run_start: RunStartEvent, arms: HonestyArms, events: Sequence[TraceEvent]) -> None:
        self.arms = arms
        self.config = InputsConfig.from_arms(arms)
        self.reads = fold_reads(
            tools=has_tool_surface(run_start),
            evidence_gate=bool(arms.evidence_gate),
            answer_validation=bool(arms.answer_validation),
            inputs=arms.inputs,
            tool_middleware=arms.tool_middleware,
        )
        self.ran = {
            (e.turn, e.iteration, e.tool_call_id): e for e in events if isinstance(e, ToolResultEvent)
        }
        # Answer validation is the app's code: its report is a fact the trace recorded (the answer
        # visit's `validation` row), read here as a tool's result is, never recomputed.
        self.validations = {
            (e.turn, e.iteration): row
            for e in events
            if isinstance(e, FindingEvent) and e.layer == "answer"
            for row in e.rows
            if isinstance(row, ValidationRow)
        }
        # The time layer's clock is the app's too: each turn's `now` is the recorded clock row's.
        self.clocks = {
            row.turn: row.now
            for e in events
            if isinstance(e, FindingEvent) and e.layer == "inputs"
            for row in e.rows
            if isinstance(row, ClockRow)
        }
        self.clocked: set[int] = set()
        self.findings: list[Finding] = []
        self.due: deque[Finding] = deque()  # filed by a visit, written only if the run got further
        self.prior: list[PriorResult] = []
        self.users: list[str] = []
        self.history: list[Message] = []
        self.coverage: dict[str, str] = {}
        self.batches: dict[tuple[int | None, int | None], list[RanCall]] = {}
        self.visited: set[tuple[int, int]] = set()
        self.stamp: int | None = None
        self.turn_rewrites: list[ArgumentRewrite] = []
        self.unsupported: dict[tuple[int | None, int | None], tuple[str, ...]] = {}
        self.wrapped: StoppedEarly | None = None  # the turn's wrap-up: its stopped_early
        self.paused: PausedVisit | None = None  # the visit whose ask waits for an `ask_answer`
        self.answers: dict[tuple[int | None, str, str], object] = {}
        self.answered_paths: set[tuple[int | None, int | None, str, str]] = set()
        for e in events:  # the user's answers: what a tool_result's args hold at those paths is no rewrite
            if isinstance(e, AskAnswerEvent):
                self.answered_paths.add((e.turn, e.iteration, e.tool_call_id, e.path))
        # The run's spend under its cost budget, charged with each recorded reply as the loop did.
        budget = CostBudget.from_declaration(run_start.options.get("cost_budget"))
        self.spend = SpendMeter(budget, run_start.ts) if budget is not None else None

    def file(
        self, layer: Layer, rows: Sequence[HonestyRow], turn: int | None, iteration: int | None, *, now: bool
    ) -> None:
        """File a visit's rows: at once, or as due (written only if the trace goes on)."""
        finding = file_finding(layer, rows, turn=turn, iteration=iteration)
        if finding is not None:
            (self.findings.append if now else self.due.append)(finding)

    def feed(self, event: TraceEvent) -> None:
        """Advance the fold over one event, in trace order."""
        if isinstance(event, RunEndEvent):
            return  # written even when the run finished nothing: proves no due finding
        if self.due:
            self.findings.append(self.due.popleft())  # this event was written after it: so was the finding
        if isinstance(event, TurnStartEvent):
            # A stamp never crosses a turn: a turn's first loop head has no batch to judge.
            self.stamp, self.turn_rewrites, self.wrapped = None, [], None
        self._loop_head(event)
        if isinstance(event, TurnStartEvent):
            self.users.append(event.user_message)
            self.history.append(Message(role="user", content=event.user_message))
        elif isinstance(event, LlmCallEvent) and event.response is not None:
            self._llm_call(event, event.response)
        elif isinstance(event, ToolResultEvent):
            self._tool_result(event)
        elif isinstance(event, StepsUnfinishedEvent | WrapUpEvent | OutputRetryEvent):
            self._loop_back(event)
        elif isinstance(event, AskAnswerEvent):
            self._ask_answer(event)
        elif isinstance(event, CompactEvent):
            apply_dropped(self.history, event.dropped_at)  # the window folded these away, as the loop did

    def _ask_answer(self, event: AskAnswerEvent) -> None:
        """The user answered the waiting ask: the answered argument, and the next ask, are due."""
        if self.paused is None:
            return  # an answer the layer never asked for (a hand-edited trace): it files nothing
        self.answers[(event.turn, event.tool_call_id, event.path)] = event.answer
        rows, self.paused = self.paused.answered(event.answer, self.arms.display_names)
        self.file("inputs", rows, event.turn, event.iteration, now=False)

    def _loop_back(self, event: StepsUnfinishedEvent | WrapUpEvent | OutputRetryEvent) -> None:
        """A way back that runs no tool: the loop's own message joins the history (never a source)."""
        if isinstance(event, StepsUnfinishedEvent):
            said = event.nudge
        elif isinstance(event, OutputRetryEvent):
            said = event.reask
        else:
            said = event.instruction
        self.history.append(Message(role="user", content=said, from_loop=True))
        if isinstance(event, WrapUpEvent) and event.iteration is not None:
            self.wrapped = StoppedEarly(
                reason=event.reason or "max-iterations",
                iteration=event.iteration,
                pending_tool_calls=event.pending_tool_calls,
                answer_was_empty=event.answer_was_empty,
                wrapped_up=True,
                budget_usd=event.budget_usd,
                spent_usd=event.spent_usd,
            )

    def _loop_head(self, event: TraceEvent) -> None:
        """Results layer: the first event of a ``(turn, iteration)`` pair is its loop head visit."""
        if event.turn is None or event.iteration is None or isinstance(event, RunStartEvent):
            return
        head = (event.turn, event.iteration)
        if head in self.visited:
            return
        self.visited.add(head)
        if self.arms.results:
            batch = self.batches.get((event.turn, self.stamp), [])
            ledger = (*self.findings, *self.due)
            if self.arms.app_zone is not None:
                windows = windows_of(ledger, event.turn)
                batch = [replace(c, window=windows.get(c.tool_call_id)) for c in batch]
            rows = results_at_loop_head(
                event.iteration, self.stamp, batch, clock=turn_clock(ledger), turn=event.turn
            )
            self.file("results", rows, *head, now=True)

    def _llm_call(self, event: LlmCallEvent, reply: LlmResponse) -> None:
        if self.spend is not None:
            self.spend.charge(event.provider, event.model, reply)
        calls = reply.tool_calls
        if event.route in LOOP_BACK_ROUTES:
            # The loop keeps the reply's text only (an empty one not at all): its calls never run.
            if reply.content.strip():
                self.history.append(Message(role="assistant", content=reply.content))
        else:
            self.history.append(Message(role="assistant", content=reply.content, tool_calls=calls or None))
        # Route's dispatch test: the layer never judges a call Route did not run (a limit, a loop-back
        # route, or tools off on the evidence gate's revision turn).
        if calls and self.arms.inputs and event.route == "tool-calls":
            self._inputs(event, calls)
        if event.route in ("final", "evidence-recheck") and self.arms.answer:
            self._answer(event, reply)
        if event.route == "evidence-recheck":
            # The gate's ask follows the draft: a system message, so it is no source (kept for fidelity).
            verdicts = self.unsupported.get((event.turn, event.iteration), ())
            self.history.append(Message(role="system", content=revision_ask(verdicts)))

    def _inputs(self, event: LlmCallEvent, calls: Sequence[ToolCallRecord]) -> None:
        """Inputs layer: the reply's calls, with the rewrites each ``tool_result`` ran with."""
        rewrites: list[ArgumentRewrite] = []
        if self.arms.tool_middleware:
            for call in calls:
                result = self.ran.get((event.turn, event.iteration, call.id))
                if result is not None:
                    rewrites.extend(
                        r
                        for r in rewrites_of(call.id, _requested(call, self.config), result.args)
                        if (event.turn, event.iteration, r.tool_call_id, r.path) not in self.answered_paths
                    )
        verdict = judge_inputs(
            calls,
            # The user's answers follow their messages, as the loop lists them.
            SourcesInReach(tuple(self.prior), (*self.users, *map(answer_text, self.answers.values()))),
            config=self.config,
            tools_in_reach=[t.name for t in event.request.tools],
            rewrites=rewrites,
        )
        self.turn_rewrites.extend(rewrites)
        rows: list[HonestyRow] = list(verdict.rows)
        zone = self.arms.app_zone
        if zone is not None and event.turn is not None:
            now = self.clocks.get(event.turn)
            if event.turn not in self.clocked and now is not None:
                rows.insert(0, clock_row(event.turn, now, zone))
            self.clocked.add(event.turn)
            rows.extend(call_windows(verdict.resolved, self.arms.periods or {}, zone))
        if self.arms.argument_ask and event.response is not None and not truncated_calls(event.response):
            ask = next_ask(rows, display_names=self.arms.display_names)
            if ask is not None:
                self.paused = PausedVisit(ask, tuple(rows))
                rows.append(ask)
        self.file("inputs", rows, event.turn, event.iteration, now=False)

    def _answer(self, event: LlmCallEvent, reply: LlmResponse) -> None:
        """Answer layer: the committed state rebuilt from the events before the final reply."""
        committed: dict[str, object] = {
            "history": tuple(self.history),
            "turnNumber": event.turn,
            # The ledger as the run held it: every finding before this one, inputs included.
            "findingsLedger": (*self.findings, *self.due),
            # A draft sent back for revision did not end the turn: nothing cut it short.
            "stoppedEarly": (self.wrapped or _stopped_early(event, reply, self.spend))
            if event.route == "final"
            else None,
            "coverageDeclared": dict(self.coverage),
            "middlewareDecisions": tuple(self.turn_rewrites),
            # A paused turn answers nothing before its ask is answered: no call is paused here.
            "pausedToolCallId": None,
            "argumentAsk": argument_ask_of((*self.findings, *self.due), event.turn, self.answers),
        }
        rows: list[HonestyRow] = []
        if self.arms.answer_validation:
            report = self.validations.get((event.turn, event.iteration))
            if report is None:
                return  # the run never wrote this visit (stopped before it): nothing is due
            committed["answerValidation"] = AnswerValidation(report.withheld, report.reason)
            rows.append(report)
        if self.arms.evidence_gate:
            # The gate judged this reply before its llm_call was recorded, from the same state.
            verdicts = gate_verdict(
                reply.content, committed, reads=self.reads, grounds=Grounds.from_arms(self.arms)
            )
            self.unsupported[(event.turn, event.iteration)] = tuple(verdicts)
            committed["unsupportedValues"] = tuple(verdicts)
        row = assess_answer(
            reply.content,
            committed,
            reads=self.reads,
            grounds=Grounds.from_arms(self.arms),
            standing_line=self.arms.standing_line,
            display_names=self.arms.display_names,
        )
        if row is not None:
            rows.append(row)
        self.file("answer", rows, event.turn, event.iteration, now=False)

    def _tool_result(self, event: ToolResultEvent) -> None:
        self.prior.append(PriorResult(event.tool_call_id, event.tool_name, event.result, event.iteration))
        self.history.append(
            Message(
                role="tool",
                content=event.result,
                tool_call_id=event.tool_call_id,
                tool_name=event.tool_name,
            )
        )
        self.batches.setdefault((event.turn, event.iteration), []).append(
            RanCall(
                event.tool_call_id,
                event.tool_name,
                event.result,
                status=event.status,
                coverage=event.coverage,
            )
        )
        self.stamp = event.iteration
        if event.coverage is not None:
            self.coverage[event.tool_call_id] = event.coverage

"""Recompute a run's honesty findings from its saved trace (the equality law of DOMAIN §12.4).

:func:`recompute_findings` walks one run's events in trace order and calls the same pure functions
the loop calls at the three mount points, handing them only what the trace recorded:

- **results** — a loop head visit is the first event of a ``(turn, iteration)`` pair (every event of
  an iteration follows its loop head). The stamp is the iteration of the latest batch of
  ``tool_result`` events in this turn, and starts empty at each ``turn_start``;
  :func:`~fpdebug.engine.honesty.results_at_loop_head` decides whether to file rows.
- **inputs** — after each ``llm_call`` whose reply asked for tools: the calls as the model wrote them,
  the tool results and user messages recorded before it, the tools offered on that call, and — with
  a tool middleware armed — the rewrites between the requested arguments and the ``args`` each
  ``tool_result`` ran with.
- **answer** — at each ``turn_end``: the last reply of the turn is the answer; the committed state is
  rebuilt from the events before it (history, this turn's number, the findings recomputed so far,
  ``stopped_early``, declared coverage, this turn's rewrites). fpdebug has no evidence gate, answer
  validation, argument ask or paused calls, so those keys read as absent.

The build-time facts (arms, grounds, hiding tools, display names, standing line mode) come from
``run_start.honesty``; whether the agent has a tool surface comes from ``run_start``'s tools and
injections. :func:`recorded_findings` returns what the trace itself filed, for comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fpdebug.engine.honesty import (
    ArgumentRewrite,
    BASIS_KEY,
    Finding,
    Grounds,
    HonestyRow,
    InputsConfig,
    Layer,
    PriorResult,
    RanCall,
    SourcesInReach,
    answer_fold_reads,
    assess_answer,
    file_finding,
    judge_inputs,
    results_at_loop_head,
    rewrites_of,
)
from fpdebug.errors import TraceFormatError
from fpdebug.trace.schema import (
    FindingEvent,
    InjectionDecl,
    LlmCallEvent,
    Message,
    RunEndEvent,
    RunStartEvent,
    ToolCallRecord,
    ToolResultEvent,
    ToolSchema,
    TraceEvent,
    TurnEndEvent,
    TurnStartEvent,
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
            f"expected the events of one run (one run_start), found {len(starts)} run_start events")
    strangers = {e.run_id for e in events} - {starts[0].run_id}
    if strangers:
        raise TraceFormatError(f"events of other runs are mixed in: {sorted(strangers)}")
    return starts[0]


def _requested(call: ToolCallRecord, config: InputsConfig) -> dict[str, object]:
    if config.argument_sources:
        return {k: v for k, v in call.args.items() if k != BASIS_KEY}
    return dict(call.args)


def recompute_findings(events: Iterable[TraceEvent]) -> list[Finding]:
    """Every finding the armed layers would file for a run, from its saved events alone.

    Args:
        events: One run's events, in trace order (``finding`` events, if any, are ignored except as
            evidence that a loop head was visited).

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
    config = InputsConfig.from_arms(arms)
    reads = answer_fold_reads(
        tools=has_tool_surface(run_start), evidence_gate=bool(arms.evidence_gate),
        answer_validation=bool(arms.answer_validation), inputs=arms.inputs,
        tool_middleware=arms.tool_middleware,
    )
    ran = {(e.turn, e.iteration, e.tool_call_id): e for e in events if isinstance(e, ToolResultEvent)}

    findings: list[Finding] = []
    prior: list[PriorResult] = []
    users: list[str] = []
    history: list[Message] = []
    coverage: dict[str, str] = {}
    batches: dict[tuple[int | None, int | None], list[RanCall]] = {}
    visited: set[tuple[int, int]] = set()
    stamp: int | None = None
    turn_rewrites: list[ArgumentRewrite] = []
    last_reply: LlmCallEvent | None = None

    def file(layer: Layer, rows: Sequence[HonestyRow], turn: int | None, iteration: int | None) -> None:
        finding = file_finding(layer, rows, turn=turn, iteration=iteration)
        if finding is not None:
            findings.append(finding)

    for event in events:
        if isinstance(event, TurnStartEvent):
            # A stamp never crosses a turn: a turn's first loop head has no batch to judge.
            stamp, turn_rewrites, last_reply = None, [], None
        run_level = isinstance(event, (RunStartEvent, RunEndEvent))
        if event.turn is not None and event.iteration is not None and not run_level:
            head = (event.turn, event.iteration)
            if head not in visited:
                visited.add(head)
                if arms.results:
                    batch = batches.get((event.turn, stamp), [])
                    file("results", results_at_loop_head(event.iteration, stamp, batch), *head)
        if isinstance(event, TurnStartEvent):
            users.append(event.user_message)
            history.append(Message(role="user", content=event.user_message))
        elif isinstance(event, LlmCallEvent) and event.response is not None:
            last_reply = event
            calls = event.response.tool_calls
            history.append(Message(role="assistant", content=event.response.content,
                                   tool_calls=calls or None))
            if calls and arms.inputs:
                rewrites: list[ArgumentRewrite] = []
                if arms.tool_middleware:
                    for call in calls:
                        result = ran.get((event.turn, event.iteration, call.id))
                        if result is not None:
                            rewrites.extend(rewrites_of(call.id, _requested(call, config), result.args))
                verdict = judge_inputs(
                    calls, SourcesInReach(tuple(prior), tuple(users)), config=config,
                    tools_in_reach=[t.name for t in event.request.tools], rewrites=rewrites,
                )
                turn_rewrites.extend(rewrites)
                file("inputs", verdict.rows, event.turn, event.iteration)
        elif isinstance(event, ToolResultEvent):
            prior.append(PriorResult(event.tool_call_id, event.tool_name, event.result, event.iteration))
            history.append(Message(role="tool", content=event.result, tool_call_id=event.tool_call_id,
                                   tool_name=event.tool_name))
            batches.setdefault((event.turn, event.iteration), []).append(RanCall(
                event.tool_call_id, event.tool_name, event.result, status=event.status,
                coverage=event.coverage,
            ))
            stamp = event.iteration
            if event.coverage is not None:
                coverage[event.tool_call_id] = event.coverage
        elif isinstance(event, TurnEndEvent) and arms.answer:
            reply = last_reply.response if last_reply is not None else None
            answer = reply.content if reply is not None else event.final_content
            committed = {
                "history": tuple(history), "turnNumber": event.turn, "pausedToolCallId": None,
                "findingsLedger": tuple(findings), "stoppedEarly": event.stopped_early,
                "coverageDeclared": dict(coverage), "middlewareDecisions": tuple(turn_rewrites),
            }
            row = assess_answer(answer, committed, reads=reads, grounds=Grounds.from_arms(arms),
                                standing_line=arms.standing_line, display_names=arms.display_names)
            if row is not None:
                file("answer", [row], event.turn, event.iteration_count)
    return findings

"""One turn of the ReAct loop: :class:`TurnLoop` (docs/context-model.md §7).

Per iteration: one Evaluate pass (:func:`~fpdebug.engine.evaluate.evaluate_pass`), slot
composition (:func:`~fpdebug.engine.agent.compose.compose_request`), one LLM call, the route
decision, and on the ``tool-calls`` branch the tool middleware then the batch, with the read_skill
gate, ``skip_step`` and effect judging (each ordinary call run by
:func:`~fpdebug.engine.agent.tool_call.run_tool_call`). Every fact goes to the
:class:`~fpdebug.engine.sink.EventSink` as a trace event.

Hook points for the honesty layers (docs/honesty.md §12) are marked ``HONESTY HOOK``: the results layer at
the loop head, the inputs layer after the LLM call and before Route (its rows written right after
the ``llm_call`` record), the answer layer on the final branch. They are plain method calls that do
nothing unless the agent carries :class:`~fpdebug.engine.agent.spec.HonestyHooks` (the builder's
arming methods install them), so an unarmed agent's trace is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from fpdebug.engine.agent.branches import (
    OutputRetry,
    StepNudge,
    WrapUp,
    choose_route,
    cut_short,
    loop_back_messages,
    step_nudge_due,
    tools_off,
)
from fpdebug.engine.agent.compose import compose_request
from fpdebug.engine.agent.failures import RunFailed, error_info
from fpdebug.engine.agent.limits import OutputCheck
from fpdebug.engine.agent.replies import assistant_turn, refusal_of, truncated_calls, well_formed_reply
from fpdebug.engine.agent.results import RunStatus, TurnResult, end_state_of
from fpdebug.engine.agent.spec import READ_SKILL
from fpdebug.engine.agent.tool_batch import ResolvedCalls, ToolBatch, resolve_calls
from fpdebug.engine.agent.tool_recording import ToolRecording, elapsed_ms
from fpdebug.engine.agent.turn_start import TurnPlan, menu_lead, plan_turn
from fpdebug.engine.agent.window import compact
from fpdebug.engine.effects import (
    EffectScope,
    EffectState,
    proposal_conflict,
)
from fpdebug.engine.engagement import MapEngagementRecord, parked_member_ids
from fpdebug.engine.evaluate import PassInputs, PassResult, evaluate_pass
from fpdebug.engine.injections import InjectionContext, StepPointer, TurnRoute
from fpdebug.engine.leases import InstructionLease, PendingToolTransition
from fpdebug.engine.recall import TurnMemory, read_source, with_recalled, write_sources
from fpdebug.engine.skillmap import PickCarriers
from fpdebug.engine.steps import (
    SKIP_STEP,
)
from fpdebug.engine.types import Activation, ToolResult
from fpdebug.errors import OutputValidationError, ProviderError, RunInterrupted, UnpricedCallError
from fpdebug.trace.schema import (
    AskRow,
    CompactEvent,
    CursorMoveEvent,
    EndState,
    EngagementEvent,
    ErrorInfo,
    LeasePruneEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    MemoryWriteEvent,
    Message,
    OutputRetryEvent,
    PassEvent,
    PromptSegment,
    RecallEvent,
    RerouteSupersededEvent,
    RouteChoice,
    RouteConflictEvent,
    SlotRouting,
    StepsUnfinishedEvent,
    StoppedEarly,
    ToolCallRecord,
    TurnEndEvent,
    TurnStartEvent,
    WrapUpEvent,
)

if TYPE_CHECKING:
    from fpdebug.engine.agent.conversation import Conversation


class TurnLoop(ToolRecording):
    """One turn of the ReAct loop (docs/context-model.md §7), with every carrier of docs/context-model.md §3.1 / §7.3 as an attribute.

    The honesty hooks receive this object; its public attributes are the loop's state: ``turn``,
    ``iteration``, ``user_message``, ``history`` (the conversation so far), ``tool_results`` and
    ``batch_iteration`` (the batch in place and the iteration that dispatched it), ``batch_texts``
    and ``batch_coverage`` (that batch as the model read it, and what each call declared it
    covers), ``calls_to_run`` (the calls of the reply as they will run, after the tool middleware),
    ``stopped_early`` (set on the final branch), ``activated``, ``cursor``, ``recorder`` (to emit
    ``finding`` events), ``conversation``.
    """

    def __init__(
        self,
        conversation: Conversation,
        turn: int,
        user_message: str,
        entry_scores: Mapping[str, float] | None = None,
    ) -> None:
        self.conversation = conversation
        """The run this turn belongs to."""
        self.turn = turn
        """The 1-based turn."""
        self.user_message = user_message
        """What the user said."""
        self.recorder = conversation.recorder
        """Stamps and emits the events."""
        self.spec = conversation.agent.spec
        self.compiled = conversation.compiled
        self.history = conversation.history
        """The conversation so far (shared with the run; this turn appends to it)."""
        self.iteration = 1
        """The current iteration (seed 1; every loop branch increments, final does not)."""
        # Carriers (docs/context-model.md §3.1): None means "feature unused", different from empty.
        self.cursor: str | None = conversation.cursor if self.spec.continuity == "conversation" else None
        """The skill-map cursor after the last pass."""
        self.activated: tuple[str, ...] = ()
        """Turn-cumulative ``read_skill`` activations and accepted proposal targets."""
        self.provenance: dict[str, Activation] = {}
        """Who activated each id."""
        self.pending_pick: str | None = None
        self.menu: tuple[str, ...] | None = None
        self.plan: TurnPlan | None = None
        """The turn-start cascade's verdict, asked once on iteration 1 and kept for the turn."""
        self.entry_scores = entry_scores
        """The turn's precomputed entry scores (:meth:`Conversation.send`)."""
        self.pending_transition: PendingToolTransition | None = None
        self.leases: tuple[InstructionLease, ...] | None = None
        self.accepted: tuple[str, ...] | None = None
        self.served: tuple[str, ...] | None = None
        self.engagement: tuple[MapEngagementRecord, ...] | None = None
        self.prior_by_slot: SlotRouting | None = None
        self.step_pointer: tuple[StepPointer, ...] | None = None
        self.tool_results: tuple[ToolResult, ...] | None = None
        """The batch in place (the previous tool-calls branch's results)."""
        self.batch_iteration: int | None = None
        """The iteration that dispatched :attr:`tool_results`."""
        self.batch_texts: tuple[str, ...] | None = None
        """Each result of the batch in place as the model read it (aligned with :attr:`tool_results`)."""
        self.batch_coverage: tuple[str | None, ...] | None = None
        """The coverage each call of the batch in place declared (aligned with :attr:`tool_results`)."""
        self.calls_to_run: tuple[ToolCallRecord, ...] = ()
        """The calls Route dispatches in this iteration, each with the arguments it runs with (after
        the tool middleware); empty on the final branch."""
        self.tools_off = False
        """The evidence gate's revision turned the tools off for the rest of this turn
        (docs/honesty.md §12.5): the request offers none and Route dispatches none."""
        self.stopped_early: StoppedEarly | None = None
        """Set on the final branch when a limit cut the turn short (before the answer layer reads it)."""
        self.nudged = False
        """The turn's one step nudge was spent (docs/context-model.md §5.6)."""
        self.wrapping: WrapUp | None = None
        """Set by the ``wrap-up`` branch: the next call runs with tools off and its reply is the answer."""
        self.paused: AskRow | None = None
        """The argument ask the turn waits on (docs/honesty.md §12.7); its call is ``pausedToolCallId``."""
        self._held: tuple[LlmResponse, ResolvedCalls] | None = None
        self.output_retries = 0
        """The turn's ``output-retry`` re-asks so far (:meth:`Agent.output_schema`)."""
        self.input_tokens = 0
        """Prompt tokens of this turn's calls."""
        self.output_tokens = 0
        """Completion tokens of this turn's calls."""
        self.recalled: tuple[PromptSegment, ...] = ()
        """The turn's recalled chunks (``rag`` / ``memory``), one segment each, on every call."""

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> TurnResult:
        """Run the turn to its final answer: one iteration per pass, until Route chooses ``final``."""
        self.recorder.emit(TurnStartEvent, turn=self.turn, user_message=self.user_message)
        self.history.append(Message(role="user", content=self.user_message))
        self._memory_read()
        return self._iterate()

    @property
    def paused_tool_call_id(self) -> str | None:
        """``pausedToolCallId``: the call the turn waits on, written on every agent (``None``: none)."""
        return self.paused.tool_call_id if self.paused is not None else None

    def resume(self, answer: object) -> TurnResult:
        """Continue a paused turn with the user's answer: the held batch runs with it, then the loop.

        Returns:
            The turn's result: ``paused`` again when the batch has another argument to ask about.
        """
        hooks, held = self.spec.honesty, self._held
        assert hooks is not None and held is not None, "resume() on a turn that is not paused"
        self.paused = hooks.answer_ask(self, answer)
        if self.paused is not None:
            return self.result("paused")
        (response, resolved), self._held = held, None
        self.history.append(assistant_turn(response))
        self._dispatch(replace(resolved, calls=self.calls_to_run))
        self.iteration += 1
        return self._iterate()

    def _iterate(self) -> TurnResult:
        """The iterations, until Route chooses ``final`` or the batch waits on an argument ask."""
        while True:
            self._honesty_loop_head()
            self._compact()  # after the results layer read the batch, before the pass
            result = self._evaluate()
            request = compose_request(
                self.spec,
                self.compiled,
                result,
                self.history,
                self.step_pointer,
                mark_cache_prefix=self.conversation.caches_prompt,
            )
            request = menu_lead(request, self._turn_route(), self.cursor, READ_SKILL)
            request = with_recalled(request, self.recalled)  # outside the evaluator, after its segments
            if self.tools_off or self.wrapping is not None:
                # The evidence gate's revision turn, or the wrap-up call: nothing more may run this turn.
                request = tools_off(request)
            if self.spec.request_edit is not None:
                # A fork's edits (Agent.edit_requests): the record shows the request as sent.
                request = self.spec.request_edit(request, self.turn, self.iteration)
            reply, latency_ms = self._call(request)
            response = self._honesty_inputs(request, reply)  # what Route may dispatch
            route: RouteChoice | None = self._route(response)
            output = self._check_output(response) if route == "final" else None
            if output is not None and output.error is not None:
                # The schema sends the answer back while re-asks last; past them Route decides nothing.
                route = "output-retry" if self._retry_left() else None
            ask = self._honesty_gate(response.content) if route == "final" else None
            if ask is not None:
                route = "evidence-recheck"  # the evidence gate sends the answer back for its revision turn
            self._record_llm_call(request, latency_ms=latency_ms, response=reply, route=route)
            if truncated_calls(reply) and (route == "tool-calls" or self.spec.on_truncation == "fail"):
                self.calls_to_run = ()  # none runs: a call cut short can look whole
                self._honesty_inputs_record()
                self._refuse_truncated(response, reply.stop_reason or "")
                self.iteration += 1
                continue
            resolved = self._resolve(route, response.tool_calls)
            self._honesty_inputs_record()
            if route is None:
                self._fail_output(output)
            if route == "final":
                return self._final(response, output)
            if ask is not None:
                self._revise(response, ask)
                continue
            if route != "tool-calls":  # a way back that runs no tool: the batch in place stays
                self._loop_back(route, response, output)
                self.iteration += 1
                continue
            if self._honesty_pause(response, resolved):
                return self.result("paused")  # the batch waits for the user's answer (resume)
            # The model's own request stays in the history; the tool messages say what ran.
            self.history.append(assistant_turn(response))
            self._dispatch(resolved)
            self.iteration += 1

    def result(self, status: RunStatus, *, error: ErrorInfo | None = None) -> TurnResult:
        """This turn's result as it stands (for a turn the run ended during)."""
        return TurnResult(
            turn=self.turn,
            user_message=self.user_message,
            content="",
            iterations=self.iteration,
            status=status,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            error=error,
        )

    def end_state(self) -> EndState | None:
        """The carriers this turn left as it stands (docs/context-model.md §7.3); see :func:`end_state_of`."""
        graph = self.compiled.setup.skill_map is not None
        return end_state_of(graph, self.cursor, self.leases, self.engagement, self.step_pointer)

    # -- one Evaluate pass ------------------------------------------------------------------------

    def _evaluate(self) -> PassResult:
        batch = self.tool_results
        result = evaluate_pass(
            self.compiled.setup,
            PassInputs(
                iteration=self.iteration,
                max_iterations=self.spec.max_iterations,
                user_message=self.user_message,
                history=tuple(self.history),
                last_tool_result=batch[-1] if batch else None,
                tool_results=batch,
                batch_iteration=self.batch_iteration,
                activated_injection_ids=self.activated,
                activation_provenance=dict(self.provenance),
                prior_by_slot=self.prior_by_slot,
                current_skill_id=self.cursor,
                pending_skill_pick=self.pending_pick,
                step_pointer=self.step_pointer,
                pending_tool_transition=self.pending_transition,
                instruction_leases=self.leases,
                accepted_skill_picks=self.accepted,
                served_injection_ids=self.served,
                map_engagement=self.engagement,
                turn_route=self._turn_route(),
                entry_scores=self.plan.entry_scores if self.plan is not None else self.entry_scores,
                entry_scorer=self.spec.turn_start.entry_scorer if self.spec.turn_start is not None else None,
            ),
        )
        # Outputs REPLACE the carriers (docs/context-model.md §3.2), never concatenate.
        if result.routes:
            self.cursor = result.next_skill_cursor
        if result.next_step_pointer is not None:
            self.step_pointer = result.next_step_pointer
        if result.next_instruction_leases is not None:
            self.leases = result.next_instruction_leases
        if result.engagement is not None:
            self.engagement = result.engagement.advance.next
            self.served = result.next_served_injection_ids
        self.prior_by_slot = result.by_slot
        self._record_pass(result)
        return result

    def _turn_route(self) -> TurnRoute | None:
        """The turn-start cascade's verdict (:mod:`.turn_start`): asked once, on iteration 1, and kept
        in every pass's context for the turn (the resolver honours its ``to_skill`` on iteration 1
        only; a verdict present keeps the entries' cold start off, e.g. while a menu is outstanding)."""
        graph = self.compiled.setup.skill_map
        if graph is None:
            return None
        if self.plan is None:
            carried = self.cursor if self.turn > 1 else None
            ctx = InjectionContext(
                1,
                max_iterations=self.spec.max_iterations,
                user_message=self.user_message,
                history=tuple(self.history),
                current_skill_id=carried,
                entry_scores=self.entry_scores,
            )
            self.plan = plan_turn(self.spec.turn_start, ctx, carried, graph)
            route = self.plan.route
            self.menu = route.offered if route is not None else None  # the guard posture's outstanding menu
        return self.plan.route

    def _record_pass(self, result: PassResult) -> None:
        # In the order of docs/context-model.md §3.4: the advance, the sweep, a conflict, engagement, the told-the-truth
        # checks, then the pass itself (its context.evaluated comes last).
        move = result.cursor_move_fields()
        if move is not None:
            self._emit(CursorMoveEvent, **move)
        prune = result.lease_prune_fields()
        if prune is not None:
            self._emit(LeasePruneEvent, **prune)
        conflict = result.route_conflict_fields()
        if conflict is not None:
            self._emit(RouteConflictEvent, **conflict)
        engagement = result.engagement_fields()
        if engagement is not None:
            self._emit(EngagementEvent, **engagement)
        for reroute in result.reroute_fields():
            self._emit(RerouteSupersededEvent, **reroute)
        self._emit(PassEvent, **result.pass_fields())

    # -- the LLM call ---------------------------------------------------------------------------

    def _call(self, request: LlmRequest) -> tuple[LlmResponse, float]:
        """Ask the provider; return its reply and the latency in ms (a failure is recorded here)."""
        conversation = self.conversation
        conversation.calls += 1
        start = self.recorder.now()
        try:
            response = conversation.provider.complete(request)
            if not isinstance(response, LlmResponse):
                raise ProviderError(
                    f"{conversation.provider.name}.complete() returned {type(response).__name__} "
                    f"{response!r:.80}, not an LlmResponse"
                )
            # Repaired before anything reads it: the tool receives, the conversation echoes and the
            # trace records the same arguments and text.
            response = well_formed_reply(response)
        except RunInterrupted:
            raise
        except Exception as exc:  # every provider failure is the run's failure, recorded, not a traceback
            latency_ms = elapsed_ms(start, self.recorder.now())
            error = error_info(exc)
            self._record_llm_call(request, latency_ms=latency_ms, error=error)
            raise RunFailed(error, exc) from exc
        latency_ms = elapsed_ms(start, self.recorder.now())
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        spend = conversation.spend
        unpriced = (
            spend.charge(conversation.provider.name, conversation.provider.model, response) if spend else None
        )
        if unpriced is not None:  # the budget cannot count this call, and its stance is to say so
            self._record_llm_call(request, latency_ms=latency_ms, response=response)
            raise RunFailed(unpriced, UnpricedCallError(unpriced.message))
        return response, latency_ms

    def _record_llm_call(
        self,
        request: LlmRequest,
        *,
        latency_ms: float,
        response: LlmResponse | None = None,
        route: RouteChoice | None = None,
        error: ErrorInfo | None = None,
    ) -> None:
        """Record one ``llm_call``: the request, and the reply with its route or the failure."""
        conversation = self.conversation
        self._emit(
            LlmCallEvent,
            call_index=conversation.calls,
            provider=conversation.provider.name,
            model=conversation.provider.model,
            request=request,
            response=response,
            error=error,
            latency_ms=latency_ms,
            route=route,
        )

    # -- Route, and the final branch ------------------------------------------------------------

    def dispatches(self, response: LlmResponse) -> bool:
        """Route's dispatch test: whether Route will run the calls of ``response`` this iteration.

        Tools run while the reply asks for some, the budget lasts and the evidence gate's revision
        has not turned them off. The inputs layer asks it, so it never judges a call that will not run.
        """
        return self._route(response) == "tool-calls"

    def _revise(self, response: LlmResponse, ask: str) -> None:
        """The evidence gate's revision turn (docs/honesty.md §12.5): the draft is assessed and kept
        in the history, the gate's ask follows it (a ``system`` message, so the values it names are
        no source), and the next iteration runs with the tools off."""
        self._honesty_answer(response.content)
        self.history.append(Message(role="assistant", content=response.content, thinking=response.thinking))
        self.history.append(Message(role="system", content=ask))
        self.tools_off = True
        self.iteration += 1

    def _route(self, response: LlmResponse) -> RouteChoice:
        """Route (docs/context-model.md §7.1): tools while the reply asks for some and the budget lasts;
        else a wrap-up, a step nudge, or the final branch (:func:`~fpdebug.engine.agent.branches.choose_route`)."""
        nudge: StepNudge | None = None
        if (
            self.spec.step_nudge
            and not self.nudged
            and self.wrapping is None
            and refusal_of(response) is None
        ):
            nudge = step_nudge_due(self.step_pointer, self.compiled.step_plans)
        if self.tools_off:  # the revision turn: a call the reply still asks for never runs
            return "final"
        spend = self.conversation.spend
        return choose_route(
            response,
            iteration=self.iteration,
            max_iterations=self.spec.max_iterations,
            nudge=nudge,
            wrap_up=self.spec.wrap_up and self.wrapping is None,
            over_budget=spend is not None and spend.over,
        )

    def _check_output(self, response: LlmResponse) -> OutputCheck | None:
        """The final reply against the output schema (``None`` without one, or for a refusal: a
        refusal is the model declining, and re-asking it the format would not change that)."""
        schema = self.spec.output_schema
        if schema is None or refusal_of(response) is not None:
            return None
        return schema.check(response.content)

    def _retry_left(self) -> bool:
        schema = self.spec.output_schema
        return schema is not None and self.output_retries < schema.max_retries

    def _fail_output(self, output: OutputCheck | None) -> NoReturn:
        """The reply still fails the schema and no re-ask is left: the run fails."""
        schema = self.spec.output_schema
        assert schema is not None and output is not None and output.error is not None
        message = (
            f"the final reply failed the output schema {schema.name} after {self.output_retries} "
            f"re-ask(s): {output.error}"
        )
        error = ErrorInfo(type="OutputValidationError", message=message)
        raise RunFailed(error, OutputValidationError(message))

    def _loop_back(self, route: RouteChoice, response: LlmResponse, output: OutputCheck | None) -> None:
        """The ``output-retry``, ``step-nudge`` or ``wrap-up`` branch: the reply's text and the loop's
        message join the history, and the branch is recorded (``output_retry`` / ``steps_unfinished`` /
        ``wrap_up``)."""
        schema = self.spec.output_schema
        if route == "output-retry":
            assert schema is not None and output is not None and output.error is not None
            self.output_retries += 1
            retry = OutputRetry(self.output_retries, schema, output.error)
            self.history.extend(loop_back_messages(response, retry.reask))
            self._emit(OutputRetryEvent, **retry.fields())
            return
        if route == "step-nudge":
            nudge = step_nudge_due(self.step_pointer, self.compiled.step_plans)
            assert nudge is not None  # Route chose it from this very pointer
            self.nudged = True
            self.history.extend(loop_back_messages(response, nudge.text))
            self._emit(StepsUnfinishedEvent, **nudge.fields())
            return
        self.wrapping = WrapUp(cut_short(response, self.iteration, self.conversation.spend, wrapped_up=True))
        fields = self.wrapping.fields()
        self.history.extend(loop_back_messages(response, str(fields["instruction"])))
        self._emit(WrapUpEvent, **fields)

    def _resolve(self, route: RouteChoice | None, calls: Sequence[ToolCallRecord]) -> ResolvedCalls:
        """Resolve: the calls as they will run, after the tool middleware (none on the final branch)."""
        resolved = ResolvedCalls(())
        if route == "tool-calls":
            resolved = resolve_calls(
                self.spec,
                self.compiled,
                calls,
                run_id=self.conversation.run_id,
                turn=self.turn,
                iteration=self.iteration,
            )
        self.calls_to_run = resolved.calls
        return resolved

    def _refuse_truncated(self, response: LlmResponse, stop_reason: str) -> None:
        """A reply cut at the token limit while asking for tools: record each call as ``invalid``
        (it did not run), then re-ask the model or fail the run, as ``on_truncation`` says."""
        self.history.append(assistant_turn(response))
        why = (
            f"the reply was cut at the token limit (stop_reason={stop_reason!r}) before this call was "
            "complete, so it did not run"
        )
        error = ErrorInfo(type="TruncatedToolCall", message=why)
        text = f"Error: {why}. Ask again with a shorter reply (fewer or smaller tool calls)."
        batch = self._start_batch()
        for call in response.tool_calls:
            self._record_tool_result(call, text, self.recorder.now(), status="invalid", error=error)
            batch.results.append(ToolResult(call.name, text, call.id, "invalid"))
            batch.read(text, None)
            self.history.append(
                Message(role="tool", content=text, tool_call_id=call.id, tool_name=call.name, is_error=True)
            )
        self._end_batch(batch)
        if self.spec.on_truncation == "fail":
            failure = ErrorInfo(
                type="TruncatedReply",
                message=f"the model's reply was cut at the token limit (stop_reason={stop_reason!r}) "
                f"with {len(response.tool_calls)} tool call(s); none ran (on_truncation='fail')",
            )
            raise RunFailed(failure, ProviderError(failure.message, provider=self.conversation.provider.name))

    def _final(self, response: LlmResponse, output: OutputCheck | None) -> TurnResult:
        content = response.content
        refusal = refusal_of(response)
        stopped = (
            self.wrapping.stopped
            if self.wrapping is not None
            else (
                cut_short(response, self.iteration, self.conversation.spend) if response.tool_calls else None
            )
        )
        self.stopped_early = stopped
        self._honesty_answer(content)
        self.history.append(Message(role="assistant", content=content, thinking=response.thinking))
        self._memory_write(content)
        self.recorder.emit(
            TurnEndEvent,
            turn=self.turn,
            final_content=content,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            iteration_count=self.iteration,
            stopped_early=stopped,
            refusal=refusal,
            end_state=self.end_state(),
        )
        return TurnResult(
            turn=self.turn,
            user_message=self.user_message,
            content=content,
            iterations=self.iteration,
            status="completed",
            stopped_early=stopped,
            refusal=refusal,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            output=output.value if output is not None else None,
        )

    # -- the tool-calls stage ---------------------------------------------------------------------

    def _dispatch(self, resolved: ResolvedCalls) -> None:
        """Run the batch in call order; each result becomes a tool message, and the batch the next
        pass's carriers."""
        batch = self._start_batch()
        for position, call in enumerate(resolved.calls):
            text, coverage = self._run_call(batch, call, resolved.refused.get(position))
            batch.read(text, coverage)
            # The model reads each result as a tool message, in call order; a failed or refused call
            # is flagged so a provider can say so (Anthropic's is_error).
            failed = bool(batch.results) and batch.results[-1].status in ("invalid", "failure")
            self.history.append(
                Message(
                    role="tool",
                    content=text,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    is_error=True if failed else None,
                )
            )
        self._end_batch(batch)

    def _start_batch(self) -> ToolBatch:
        """The top of the tool-calls stage (docs/context-model.md §5.5): per-batch carriers reset,
        toolResults too."""
        compiled = self.compiled
        skill_map, plan = compiled.setup.skill_map, compiled.plan
        return ToolBatch(
            carriers=PickCarriers.start_of_batch(
                self.activated,
                pending_skill_pick=self.pending_pick,
                graph=skill_map is not None,
                maps=plan is not None,
            ),
            state=EffectState(self.activated, self.leases, self.pending_transition).start_of_batch(),
            scope=EffectScope(self.iteration, self.cursor, skill_map, compiled.catalog_by_id),
            parked=parked_member_ids(plan, self.engagement) if plan is not None else frozenset(),
        )

    def _run_call(
        self, batch: ToolBatch, call: ToolCallRecord, refused: ErrorInfo | None
    ) -> tuple[str, str | None]:
        """Run one call of the batch (read_skill, skip_step or a tool); return the text read and the
        coverage it declares."""
        if call.name == READ_SKILL and self.compiled.read_skill is not None:
            pick, text, status = self._read_skill(call, batch.parked)
            if pick is not None:
                batch.apply_pick(pick)
                if pick.accepted and pick.skill_id not in self.provenance:
                    self.provenance[pick.skill_id] = Activation(READ_SKILL, self.iteration, call.id)
            batch.results.append(ToolResult(READ_SKILL, text, call.id, status))
            return text, None
        if call.name == SKIP_STEP and self.compiled.step_plans:
            text = self._skip_step(call)
            batch.results.append(ToolResult(SKIP_STEP, text, call.id))
            return text, None
        batch.state, text, coverage = self._run_tool(
            call, batch.scope, batch.state, batch.results, refused=refused
        )
        return text, coverage

    def _end_batch(self, batch: ToolBatch) -> None:
        """The batch's carriers replace the loop's; a conflict between its proposals is recorded."""
        state, carriers = batch.state, batch.carriers
        self.activated = state.activated_injection_ids
        if self.compiled.setup.skill_map is not None:
            self.pending_pick = carriers.pending_skill_pick
        if self.compiled.plan is not None:
            self.accepted = carriers.accepted_skill_picks
        self.leases = state.instruction_leases
        self.pending_transition = state.pending_tool_transition
        self.tool_results = tuple(batch.results)
        self.batch_iteration = self.iteration
        self.batch_texts = tuple(batch.texts)
        self.batch_coverage = tuple(batch.coverage)
        conflict = proposal_conflict(state, from_skill_id=self.cursor)
        if conflict is not None:
            self._emit(RouteConflictEvent, **conflict.fields())

    def _compact(self) -> None:
        """The window strategy's Compact (docs/context-model.md §7.1): nothing without Agent.window."""
        folded = None if self.spec.window is None else compact(self.history, self.spec.window)
        if folded is not None and self.spec.window is not None:
            self._emit(CompactEvent, **folded.fields(self.spec.window))

    # -- RECALL HOOKS (docs/context-model.md §1.3, §7.1): nothing happens without Agent.rag/.memory --

    def _memory_read(self) -> None:
        """The memory READ: each source asked once, before the first pass; its chunks ride every call."""
        segments: list[PromptSegment] = []
        for source in self.spec.recall:
            read = read_source(source, self.user_message, self.spec.excluded_memory)
            self._emit(RecallEvent, **read.fields)
            segments.extend(read.segments)
        self.recalled = tuple(segments)

    def _memory_write(self, answer: str) -> None:
        """The memory WRITE, after the final answer: each writing store is handed the turn."""
        memory = TurnMemory(self.turn, self.user_message, answer)
        write_sources(self.spec.recall, memory, lambda fields: self._emit(MemoryWriteEvent, **fields))

    # -- HONESTY HOOKS (docs/honesty.md §12): plain calls that do nothing on an unarmed agent -------------

    def _honesty_loop_head(self) -> None:
        # HONESTY HOOK — results layer, at the loop head (every iteration, before the pass).
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.loop_head(self)

    def _honesty_inputs(self, request: LlmRequest, response: LlmResponse) -> LlmResponse:
        # HONESTY HOOK — inputs layer, after the LLM call and before Route.
        hooks = self.spec.honesty
        if hooks is None:
            return response
        return hooks.after_llm_call(self, request, response)

    def _honesty_inputs_record(self) -> None:
        # HONESTY HOOK — inputs layer's write, right after the llm_call record.
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.after_llm_record(self)

    def _honesty_pause(self, response: LlmResponse, resolved: ResolvedCalls) -> bool:
        # HONESTY HOOK — the inputs layer's argument ask: the batch waits for the user's answer.
        hooks = self.spec.honesty
        self.paused = None if hooks is None else hooks.paused(self)
        if self.paused is not None:
            self._held = (response, resolved)
        return self.paused is not None

    def _honesty_gate(self, content: str) -> str | None:
        # HONESTY HOOK — the evidence gate, on a reply Route sends to final (a text: revise with it).
        hooks = self.spec.honesty
        return None if hooks is None else hooks.evidence_gate(self, content)

    def _honesty_answer(self, content: str) -> None:
        # HONESTY HOOK — answer layer, first on the final branch.
        hooks = self.spec.honesty
        if hooks is not None:
            hooks.before_final(self, content)

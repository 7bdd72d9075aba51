"""The :class:`Agent` builder: a fluent, copy-on-write declaration (every method returns a new agent)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack

from fpdebug.engine.agent.compile import Compiled, compile_spec
from fpdebug.engine.agent.conversation import Conversation
from fpdebug.engine.agent.limits import CostBudget, ModelPrice, OutputSchema, Unpriced
from fpdebug.engine.agent.results import RunResult
from fpdebug.engine.agent.spec import (
    AgentSpec,
    Continuity,
    HonestyHooks,
    MapsOptions,
    RequestEdit,
    ToolLike,
    TruncationPolicy,
)
from fpdebug.engine.agent.turn_start import Classifier, Decider, EntryScorer, TurnStart, checked_ranking
from fpdebug.engine.agent.window import Window
from fpdebug.engine.injections import Injection, InjectionContext
from fpdebug.engine.ledger_gate import LedgerGate, LedgerPolicy, ledger_gated
from fpdebug.engine.recall import MemoryStore, RecallSource, Retriever, recall_source
from fpdebug.engine.sink import EventSink
from fpdebug.engine.skillmap import SkillMap, declare_entry
from fpdebug.engine.tool_middleware import ToolMiddleware, check_tool_middleware
from fpdebug.engine.tools import tool
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.clock import Clock

if TYPE_CHECKING:
    from fpdebug.engine.providers.base import Provider
    from fpdebug.trace.schema import AskRow


class _LayerArms(TypedDict, total=False):
    """The keyword arguments of :meth:`HonestyLayers.arm <fpdebug.engine.honesty.hooks.HonestyLayers.arm>`."""

    inputs: bool
    results: bool
    answer: bool
    argument_sources: bool | None
    external_grounds: Mapping[str, object] | None
    declared_sources: Mapping[str, object] | None
    evidence_gate: Literal["flag", "enforce"] | None
    answer_validation: Callable[[str], str | None] | None
    standing_line: Literal["always", "unsupported"] | bool | None
    time_zone: str | None
    time_clock: Clock | None
    ask: bool | None


class Agent:
    """An agent's declared configuration: a fluent, immutable builder whose methods return new agents.

    Args:
        name: The agent's name, recorded in the trace.
    """

    __slots__ = ("_compiled", "_lock", "spec")

    def __init__(self, name: str = "agent", *, spec: AgentSpec | None = None) -> None:
        if spec is None:
            if not isinstance(name, str) or not name.strip():
                raise DefinitionError(f"an agent's name must be a non-empty string, got {name!r}")
            spec = AgentSpec(name=name)
        self.spec: AgentSpec = spec
        """The declaration."""
        self._compiled: Compiled | None = None
        self._lock = threading.Lock()

    def _with(self, **changes: object) -> Agent:
        # replace() takes each field by name, which mypy cannot match against **object; every
        # builder method validated the value it passes, and replace() refuses an unknown field.
        return Agent(spec=replace(self.spec, **changes))  # type: ignore[arg-type]

    @property
    def name(self) -> str:
        """The agent's name."""
        return self.spec.name

    def __repr__(self) -> str:
        spec = self.spec
        return (
            f"Agent({spec.name!r}, injections={len(spec.injections)}, tools={len(spec.tools)}, "
            f"skill_map={'yes' if spec.skill_map is not None else 'no'}, "
            f"max_iterations={spec.max_iterations})"
        )

    # -- builder ---------------------------------------------------------------------------------

    def system_prompt(self, text: str) -> Agent:
        """Set the base system prompt (sent first, as the ``base`` segment; empty sends no segment)."""
        if not isinstance(text, str):
            raise DefinitionError(f"system_prompt must be a string, got {text!r}")
        return self._with(system_prompt=text)

    def injections(self, *injections: Injection) -> Agent:
        """Add injections (steering, instructions, facts, skills…), in declaration order."""
        for injection in injections:
            if not isinstance(injection, Injection):
                raise DefinitionError(f"injections() takes Injection values (define_*), got {injection!r}")
        return self._with(injections=(*self.spec.injections, *injections))

    def skills(self, *skills: Injection) -> Agent:
        """Add stand-alone skills (``define_skill``): loaded by ``read_skill`` from anywhere."""
        for skill in skills:
            if not isinstance(skill, Injection) or skill.flavor != "skill":
                raise DefinitionError(f"skills() takes define_skill values, got {skill!r}")
        return self.injections(*skills)

    def tools(self, *tools: ToolLike) -> Agent:
        """Add the agent's own tools: plain functions (schema from type hints) or :class:`Tool` values."""
        built = tuple(tool(t) if not isinstance(t, Tool) else t for t in tools)
        return self._with(tools=(*self.spec.tools, *built))

    def skill_map(self, skill_map: SkillMap) -> Agent:
        """Mount a skill graph (replaces any mounted before); its nodes join the catalog."""
        if not isinstance(skill_map, SkillMap):
            raise DefinitionError(f"skill_map() takes a built SkillMap, got {skill_map!r}")
        return self._with(skill_map=skill_map)

    def maps(self, *, renewal_grace: int = 3, non_parkable: bool = False) -> Agent:
        """Mount the engagement kernel over the skill map (docs/context-model.md §6): idle guesses park.

        Args:
            renewal_grace: Idle passes a tentative map survives before it parks (integer >= 1).
            non_parkable: Count idle passes but never park.
        """
        if isinstance(renewal_grace, bool) or not isinstance(renewal_grace, int) or renewal_grace < 1:
            raise DefinitionError(f"renewalGrace must be an integer >= 1, got {renewal_grace!r}")
        return self._with(maps=MapsOptions(renewal_grace, bool(non_parkable)))

    def max_iterations(self, n: int) -> Agent:
        """Set the per-turn iteration limit (a turn that still asks for tools at it stops early)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise DefinitionError(f"max_iterations must be an integer >= 1, got {n!r}")
        return self._with(max_iterations=n)

    def tool_timeout(self, seconds: float | None) -> Agent:
        """Set the default seconds a tool call may take (``None``: no limit, tools run inline)."""
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0
        ):
            raise DefinitionError(
                f"tool_timeout must be a positive number of seconds or None, got {seconds!r}"
            )
        return self._with(tool_timeout=seconds)

    def continuity(self, mode: Continuity) -> Agent:
        """``turn`` (default): each turn starts the cursor afresh; ``conversation``: the cursor carries."""
        if mode not in ("turn", "conversation"):
            raise DefinitionError(f"continuity must be 'turn' or 'conversation', got {mode!r}")
        return self._with(continuity=mode)

    def turn_start(
        self,
        *,
        classifier: Classifier | None = None,
        threshold: float = 0.5,
        decider: Decider | None = None,
        entry_scorer: EntryScorer | None = None,
        offer_menu: bool = False,
        margin: float = 0.05,
        shortlist_band: float = 0.1,
        menu_size: int | None = 3,
    ) -> Agent:
        """Declare the turn-start cascade (docs/context-model.md §5.1): where each turn's cursor starts.

        Once per turn, before the first pass: a start rule (:meth:`start_rule`) that matches starts
        the cursor ``by: entry``; else tier 2's best score at or above ``threshold`` and at least
        ``margin`` over the runner-up starts it ``by: intent`` (a near tie hands its shortlist on
        to the next tiers); else a carried cursor holds it (``by: continuity``); else the decider picks
        from a menu ``by: decider``; else, with ``offer_menu``, the menu is left to the model; else
        the map's entries decide as usual.

        Args:
            classifier: ``f(user_message) -> {skill_id: score}``, deterministic (scores the nodes).
            threshold: The score tier 2's best skill needs.
            decider: ``f(user_message, menu) -> skill_id | None``: the menu is tier 2's
                positively scored skills, best first, else every node of the map.
            entry_scorer: ``f(ctx) -> {entry_id: score}``: tier 2 over the map's entries, from the
                first pass's context (which carries the turn's precomputed ``entry_scores``, see
                :meth:`Conversation.send`); not together with a classifier.
            offer_menu: Leave a menu nothing resolved outstanding to the model: no entry loads, the
                ``read_skill`` description leads with the menu (the scored entries, best first, else
                every entry), and the pick that resolves it records ``offered`` (``declined_offer``
                when it is off the menu).
            margin: How far tier 2's best score must lead the runner-up to decide, in [0, 1)
                (DOMAIN's ``clearWinnerMargin``, on raw scores; 0 decides on any lead).
            shortlist_band: On a near tie, the menu is the scores within this of the best, in
                [0, 1] (DOMAIN's ``shortlistBand``; the runner-up is always on it).
            menu_size: At most this many scored skills on a menu (≥ 2; ``None``: every one).

        Returns:
            A new agent. Needs a skill map (checked at compile time). Start rules declared before
            are kept.
        """
        if classifier is None and decider is None and entry_scorer is None and not offer_menu:
            raise DefinitionError(
                "turn_start() needs a classifier, an entry scorer, a decider or offer_menu=True"
            )
        for name, fn in (("classifier", classifier), ("decider", decider), ("entry scorer", entry_scorer)):
            if fn is not None and not callable(fn):
                raise DefinitionError(f"turn_start(): the {name} must be callable, got {fn!r}")
        if classifier is not None and entry_scorer is not None:
            raise DefinitionError("turn_start(): give a classifier or an entry scorer, not both (one tier 2)")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise DefinitionError(f"turn_start(): threshold must be a number, got {threshold!r}")
        if not isinstance(offer_menu, bool):
            raise DefinitionError(f"turn_start(): offer_menu must be True or False, got {offer_menu!r}")
        ranking = checked_ranking(margin, shortlist_band, menu_size)
        rules = self.spec.turn_start.rules if self.spec.turn_start is not None else ()
        start = TurnStart(classifier, float(threshold), decider, rules, entry_scorer, offer_menu, *ranking)
        return self._with(turn_start=start)

    def start_rule(
        self,
        skill_id: str,
        *,
        keywords: Sequence[str] | None = None,
        regex: str | re.Pattern[str] | None = None,
        when: Callable[[InjectionContext], object] | None = None,
        label: str | None = None,
    ) -> Agent:
        """Add a tier-1 start rule to the turn-start cascade (docs/context-model.md §5.1).

        Start rules are asked first, in declaration order, once per turn: the first that matches the
        user message starts the cursor on ``skill_id`` ``by: entry`` (before the classifier, the
        entry scorer and continuity). A keyword or regex rule records what it matched as the move's
        ``witness`` (whitespace collapsed, at most 80 characters with the "…").

        Args:
            skill_id: A node of the map (checked at compile time).
            keywords: Words matched case-insensitively as whole words in the user message.
            regex: A pattern searched in the user message (must not match the empty string).
            when: A predicate over the first pass's context; a raising one fails the run.
            label: A description.

        Returns:
            A new agent.
        """
        if keywords is None and regex is None and when is None:
            raise DefinitionError(f"start rule {skill_id!r}: give one of keywords, regex, when")
        rule = declare_entry(
            skill_id, when=when, keywords=keywords, regex=regex, label=label, what="start rule"
        )
        start = self.spec.turn_start or TurnStart()
        return self._with(turn_start=replace(start, rules=(*start.rules, rule)))

    def read_skill_posture(self, posture: Literal["rails", "guard"] | None) -> Agent:
        """Set the read_skill gate's posture for hops on the map (docs/context-model.md §5.5).

        Args:
            posture: ``rails`` refuses every hop (the map's routes alone move the cursor); ``guard``
                refuses a hop not on the turn's outstanding menu, the menu the turn-start decider
                resolved (so with no decider verdict this turn, every hop is refused); ``None``
                (the default) admits every reachable hop. Open skills and re-engagements of a
                parked map are admitted whatever the posture.

        Returns:
            A new agent. A refused pick's ``skill_rejected`` records the posture.
        """
        if posture not in ("rails", "guard", None):
            raise DefinitionError(f"read_skill_posture must be 'rails', 'guard' or None, got {posture!r}")
        return self._with(read_skill_posture=posture)

    def sampling(self, *, temperature: float | None = None, max_tokens: int | None = None) -> Agent:
        """Set the request's temperature and reply budget (``None`` leaves them to the provider)."""
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
            raise DefinitionError(f"max_tokens must be an integer, got {max_tokens!r}")
        return self._with(temperature=temperature, max_tokens=max_tokens)

    def on_truncation(self, policy: TruncationPolicy) -> Agent:
        """What a reply cut at the token limit while asking for tools leads to.

        None of its calls runs: a cut call can look whole (a refund with default arguments). Each is
        recorded as an ``invalid`` tool result saying why. Then ``reask`` (the default) lets the model
        read those results and try again on the next iteration; ``fail`` ends the run as failed
        (``TruncatedReply``).
        """
        if policy not in ("reask", "fail"):
            raise DefinitionError(f"on_truncation must be 'reask' or 'fail', got {policy!r}")
        return self._with(on_truncation=policy)

    def step_nudge(self, enabled: bool = True) -> Agent:
        """Re-ask an answer given while a declared step procedure is unfinished (on by default).

        Once per turn, while the budget lasts, Route chooses ``step-nudge`` instead of ``final``: the
        model reads which step is current and may run it, skip it with a reason, or answer again
        (docs/context-model.md §5.6). ``step_nudge(False)`` lets the model answer with steps left.
        """
        if not isinstance(enabled, bool):
            raise DefinitionError(f"step_nudge takes True or False, got {enabled!r}")
        return self._with(step_nudge=enabled)

    def wrap_up(self, enabled: bool = True) -> Agent:
        """Wrap up a turn cut short by ``max_iterations`` (docs/context-model.md §7.2).

        A reply that still asks for tools at the limit does not end the turn: its calls never run, the
        model is told so, and one more call runs at ``max_iterations + 1`` with no tool offered. That
        reply is the answer; ``stopped_early.wrapped_up`` says so (``wrap_up`` on the trace).
        """
        if not isinstance(enabled, bool):
            raise DefinitionError(f"wrap_up takes True or False, got {enabled!r}")
        return self._with(wrap_up=enabled)

    def window(
        self, *, max_messages: int | None = None, max_tokens: int | None = None, keep_first_user: bool = True
    ) -> Agent:
        """Compact the history at each loop head to fit a window (docs/context-model.md §7.1).

        Past ``max_messages`` messages (or ``max_tokens`` estimated as chars / 4), the oldest messages are
        dropped: a tool call with its results as one, never the turn's user message (nor the first
        user message while ``keep_first_user``). Each fold is a ``compact`` event.
        """
        return self._with(window=Window.declare(max_messages, max_tokens, keep_first_user))

    def cost_budget(
        self, usd: float | None, *, price: ModelPrice | None = None, unpriced: Unpriced = "fail"
    ) -> Agent:
        """Stop dispatching tools once the run has spent ``usd`` (docs/context-model.md §7.2).

        After each call, the run's spend so far (every call of every turn, priced from its usage by
        the offline price table of ``fpdebug.trace.cost``, or by ``price``) is compared with the
        budget. Once it is reached, Route runs no more tools: a reply that asks for some ends the
        turn (``final``; with :meth:`wrap_up`, one more call with tools off) and
        ``stopped_early.reason`` is ``cost-budget``, with ``budget_usd`` and ``spent_usd``. The step
        nudge is not offered past the budget; an output re-ask still is (bounded by its retries).

        Args:
            usd: The budget in US dollars (> 0); ``None`` removes it.
            price: A price declared for every call (dollars per million tokens), instead of the
                table: for a model the table does not know, a self-hosted model, a scripted run.
            unpriced: What a call nothing can price does: ``fail`` (the default) ends the run
                ``failed`` (``UnpricedCallError``); ``ignore`` counts it as unpriced, never as $0,
                and goes on. Scripted and replayed calls have no table price.

        Returns:
            A new agent; ``run_start.options["cost_budget"]`` records the budget.
        """
        if usd is None:
            return self._with(cost_budget=None)
        if isinstance(usd, bool) or not isinstance(usd, int | float) or not usd > 0:
            raise DefinitionError(f"cost_budget must be a positive number of US dollars, got {usd!r}")
        if price is not None and not isinstance(price, ModelPrice):
            raise DefinitionError(f"cost_budget(price=...) takes a ModelPrice, got {price!r}")
        if unpriced not in ("fail", "ignore"):
            raise DefinitionError(f"cost_budget(unpriced=...) must be 'fail' or 'ignore', got {unpriced!r}")
        return self._with(cost_budget=CostBudget(float(usd), price, unpriced))

    def output_schema(self, schema: object | None, *, max_retries: int = 2) -> Agent:
        """Declare the type of a final answer; a reply that does not validate is re-asked.

        A reply Route would send to ``final`` must be JSON (one surrounding Markdown code fence is
        allowed) that validates against ``schema``. One that does not routes ``output-retry``: no
        tool runs, the batch in place stays, the reply's text and a re-ask naming the error and the
        JSON Schema join the history, ``output_retry`` is recorded and the iteration advances
        (docs/context-model.md §7.2). After ``max_retries`` re-asks in a turn, a reply that still
        fails ends the run ``failed`` (``OutputValidationError``). The validated value is
        ``TurnResult.output`` / ``RunResult.output``.

        Args:
            schema: A pydantic model, a dataclass, a TypedDict or any type pydantic validates;
                ``None`` removes the declaration.
            max_retries: Re-asks per turn (>= 0).

        Returns:
            A new agent; ``run_start.options["output_schema"]`` records the schema.
        """
        if schema is None:
            return self._with(output_schema=None)
        return self._with(output_schema=OutputSchema.of(schema, max_retries))

    def edit_requests(self, edit: RequestEdit) -> Agent:
        """Rewrite every composed request before it is sent (what ``fpdebug fork`` applies).

        ``edit(request, turn, iteration)`` returns the request to send; the ``llm_call`` records
        the edited request, so the trace shows what the model was actually sent. The evaluator's
        own records (the pass, its active set) are left as they were: the edit happens after them.

        Raises:
            DefinitionError: ``edit`` is not callable.
        """
        if not callable(edit):
            raise DefinitionError(f"edit_requests() needs a function, got {type(edit).__name__}")
        return self._with(request_edit=edit)

    def options(self, **values: object) -> Agent:
        """Add free-form JSON-able settings recorded in ``run_start.options`` (``scenario="support"``…)."""
        return self._with(options=MappingProxyType({**self.spec.options, **values}))

    def tool_middleware(self, *middleware: ToolMiddleware) -> Agent:
        """Add before-tool middleware: each may rewrite a call's arguments before the tool runs.

        Each is called as ``middleware(call, context)`` with the
        :class:`~fpdebug.engine.types.ToolCall` as the previous one left it and a
        :class:`~fpdebug.engine.tool_middleware.ToolCallContext`, and returns ``None`` (no change), a
        mapping (the arguments to run with) or a ``ToolCall`` with the same id and tool. The chain
        runs in the Resolve stage (after the LLM call, once Route has chosen ``tool-calls``), over
        every call to one of the agent's tools whose arguments parsed (not ``read_skill``), before
        any tool of the batch runs. The ``llm_call`` keeps what the model asked for; the
        ``tool_result`` records the arguments the tool ran with. A middleware that raises, or
        returns something else, makes the call a ``failure`` result (``ToolMiddlewareError``; the
        tool does not run) and the loop goes on.

        Args:
            middleware: The functions, run after any added before.

        Returns:
            A new agent. With an honesty layer armed, ``run_start.honesty.tool_middleware`` is true,
            the inputs layer's rows say which values were rewritten and the answer layer lists the
            rewrites in its Assumed block.

        Raises:
            DefinitionError: One is not callable.
        """
        return self._with(tool_middleware=(*self.spec.tool_middleware, *check_tool_middleware(middleware)))

    def honesty(self, hooks: HonestyHooks | None) -> Agent:
        """Install custom honesty hooks, or with ``None`` disarm every honesty layer."""
        return self._with(honesty=hooks)

    def _arm(self, **arms: Unpack[_LayerArms]) -> Agent:
        from fpdebug.engine.honesty.hooks import HonestyLayers

        layers = self.spec.honesty if self.spec.honesty is not None else HonestyLayers()
        if not isinstance(layers, HonestyLayers):
            raise DefinitionError(
                "this agent carries custom honesty hooks (agent.honesty(hooks)); arm the built-in "
                "layers on an agent without them, or call agent.honesty(None) first"
            )
        return self._with(honesty=layers.arm(**arms))

    def findings(
        self,
        *,
        argument_sources: bool | None = None,
        external_grounds: Mapping[str, object] | None = None,
        declared_sources: Mapping[str, object] | None = None,
        standing_line: Literal["always", "unsupported"] | bool | None = None,
    ) -> Agent:
        """Arm the whole findings ledger: the inputs, results and answer layers (docs/honesty.md §12).

        Args:
            argument_sources: Read the model's ``_from`` citations (stripped before the call runs)
                and search the app's grounds and declared sources.
            external_grounds: Values the app vouches for, label → value (arms argument sources).
            declared_sources: Documents the app declares, name → JSON data or text (arms argument
                sources).
            standing_line: Compose a one-line standing for prose answers: ``True``/``"always"``,
                or ``"unsupported"`` (only when a value is unsupported).

        Returns:
            A new agent; ``run_start.honesty`` records the arms.
        """
        return self._arm(
            inputs=True,
            results=True,
            answer=True,
            argument_sources=argument_sources,
            external_grounds=external_grounds,
            declared_sources=declared_sources,
            standing_line=standing_line,
        )

    def inputs_layer(
        self,
        *,
        argument_sources: bool | None = None,
        external_grounds: Mapping[str, object] | None = None,
        declared_sources: Mapping[str, object] | None = None,
        ask: bool | None = None,
    ) -> Agent:
        """Arm the inputs layer: after each LLM call, where every tool argument's value came from.

        Args:
            argument_sources: Read ``_from`` citations and search grounds and declared sources.
            external_grounds: Values the app vouches for, label → value (arms argument sources).
            declared_sources: Documents the app declares, name → data (arms argument sources).
            ask: The argument ask (docs/honesty.md §12.7): when a call Route will run has an
                argument no source in reach holds, the call does not run; the turn pauses with a
                question for the user (``Conversation.paused``) until ``Conversation.resume(value)``.

        Returns:
            A new agent.
        """
        return self._arm(
            inputs=True,
            argument_sources=argument_sources,
            external_grounds=external_grounds,
            declared_sources=declared_sources,
            ask=ask,
        )

    def results_layer(self) -> Agent:
        """Arm the results layer: at the loop head, each tool batch judged once (status, coverage, values).

        Returns:
            A new agent.
        """
        return self._arm(results=True)

    def answer_layer(self, *, standing_line: Literal["always", "unsupported"] | bool | None = None) -> Agent:
        """Arm the answer layer: each final answer's values, supported by which rows or unsupported.

        Args:
            standing_line: ``True``/``"always"``, ``"unsupported"``, or ``False`` for no line.

        Returns:
            A new agent.
        """
        return self._arm(answer=True, standing_line=standing_line)

    def evidence_gate(self, *, enforce: bool = True) -> Agent:
        """Arm the evidence gate (docs/honesty.md §12.5); it arms the answer layer too.

        On a reply Route sends to ``final``, the gate lists the values the answer states that no
        source supports (``unsupportedValues``); the answer's assessment marks them unsupported.

        Args:
            enforce: The enforcing posture (the default): an answer stating an unsupported value is
                sent back once, Route ``evidence-recheck``, for a revision turn with the tools off
                (``toolsOffAfterRevision``). ``False`` is the flag-only posture: the verdicts are
                written and the answer stands.

        Returns:
            A new agent; ``run_start.honesty`` records ``evidence_gate`` and, enforcing,
            ``tools_off_after_revision``.
        """
        if not isinstance(enforce, bool):
            raise DefinitionError(f"evidence_gate(enforce=...) takes a bool, got {enforce!r}")
        return self._arm(evidence_gate="enforce" if enforce else "flag")

    def answer_validation(self, validator: Callable[[str], str | None]) -> Agent:
        """Arm answer validation (``validated``, docs/honesty.md §12.5); it arms the answer layer too.

        Each final answer is handed to ``validator``, which returns the reason to withhold it, or
        ``None`` to pass it. The report is the answer visit's first row (``validation``); an answer
        the report withholds is never assessed. The turn still ends with it (to re-ask a reply that
        does not parse, declare :meth:`output_schema`).

        Args:
            validator: The app's check of a final answer. One that raises withholds the answer.

        Returns:
            A new agent; ``run_start.honesty.answer_validation`` is true.
        """
        return self._arm(answer_validation=validator)

    def time(self, zone: str = "UTC", *, clock: Clock | None = None) -> Agent:
        """Arm the time layer (``.time({ zone })``, docs/honesty.md §12.6); it arms the inputs layer too.

        The inputs layer then files, in its one write, the turn's ``clock`` row (read once a turn) and
        a ``call-window`` row for each call to a tool declaring a ``period`` (the arguments holding
        its window). With the results layer armed, a result whose window ends after the turn's
        ``now`` is marked ``beyond_now``.

        Args:
            zone: The app's IANA zone (``time.appZone``): the zone of a period form whose
                ``wall_zone`` is ``"app"``, and the zone the clock row is read in.
            clock: The layer's clock (a ``FixedClock`` in tests); the run's clock by default.

        Returns:
            A new agent; ``run_start.honesty`` records ``app_zone`` and the tools' periods.

        Raises:
            DefinitionError: An unknown zone, or a clock without ``now()``.
        """
        return self._arm(time_zone=zone, time_clock=clock)

    def ledger_gate(
        self,
        rows: Iterable[Mapping[str, object]],
        *,
        policy: LedgerPolicy | None = None,
        injection_ids: Iterable[str] | None = None,
    ) -> Agent:
        """Gate injections on the context ledger's verdict (docs/backtracking.md §9.10, ``ledgerGated``).

        Every ``always`` injection (or only those named) becomes a rule on the verdict, every
        ``rule`` becomes ``original AND verdict``; ``on-tool-return`` and ``llm-activated`` ones are
        untouched. Call it after the injections are declared; skill-map nodes are not gated.

        Args:
            rows: The ledger's rows as data (``Ledger.snapshot()``, or the ``rows`` of an exported
                ledger JSON): dicts with ``kind``, ``id``, ``offered``, ``earn_rate``.
            policy: The knobs (``min_offers=5, earn_rate_floor=0.05, refresh_every=10`` by default).
            injection_ids: Gate only these ids (each must be declared); all by default.

        Returns:
            A new agent whose gate (one per call, its parole counters shared by its runs) records
            each verdict in the pass event.
        """
        gate = LedgerGate(rows, policy or LedgerPolicy())
        wanted = None if injection_ids is None else set(injection_ids)
        declared = {injection.id for injection in self.spec.injections}
        unknown = sorted((wanted or set()) - declared)
        if unknown:
            raise DefinitionError(f"ledger_gate(): no injection {', '.join(map(repr, unknown))} is declared")
        gated = tuple(
            ledger_gated(injection, gate) if wanted is None or injection.id in wanted else injection
            for injection in self.spec.injections
        )
        return self._with(injections=gated)

    def rag(
        self, id: str, retriever: Retriever, *, top_k: int | None = 3, threshold: float | None = None
    ) -> Agent:
        """Add a retriever (docs/context-model.md §1.3): asked once per turn with the user's message,
        before the first pass; each chunk scoring at least ``threshold`` (best first, at most
        ``top_k``) becomes one ``rag`` injection in the system prompt, outside the evaluator.

        Args:
            id: The source's id (unique among the agent's rag and memory sources).
            retriever: Has ``recall(query) -> [(entry_id, text, score)]``.
            top_k: The most chunks kept per turn (``None``: no limit).
            threshold: The minimum score kept (``None``: no threshold).

        Raises:
            DefinitionError: A bad id, source, ``top_k`` or threshold, or a duplicate id.
        """
        return self._recall_source(
            recall_source(id, "rag", retriever, top_k=top_k, threshold=threshold, writes=False)
        )

    def memory(
        self,
        id: str,
        store: MemoryStore | Retriever,
        *,
        top_k: int | None = 3,
        threshold: float | None = None,
        write: bool = True,
    ) -> Agent:
        """Add a memory (docs/context-model.md §1.3, §7.1): recalled like :meth:`rag` (each chunk a
        ``memory`` injection), and, with ``write``, the store is handed each turn after its final
        answer (the memory WRITE). :class:`~fpdebug.engine.recall.InMemoryStore` is a ready store.

        Args:
            id: The source's id (unique among the agent's rag and memory sources).
            store: Has ``recall(query)`` and, when ``write``, ``write(turn: TurnMemory) -> id``.
            top_k: The most chunks kept per turn (``None``: no limit).
            threshold: The minimum score kept (``None``: no threshold).
            write: Store each finished turn.

        Raises:
            DefinitionError: A bad id, store, ``top_k`` or threshold, or a duplicate id.
        """
        source = recall_source(id, "memory", store, top_k=top_k, threshold=threshold, writes=write)
        return self._recall_source(source)

    def _recall_source(self, source: RecallSource) -> Agent:
        if any(known.id == source.id for known in self.spec.recall):
            raise DefinitionError(
                f"{source.flavor}({source.id!r}): a rag or memory source with this id exists"
            )
        return self._with(recall=(*self.spec.recall, source))

    def without(
        self,
        *,
        injection_ids: Iterable[str] = (),
        tool_names: Iterable[str] = (),
        memory_ids: Iterable[str] = (),
    ) -> Agent:
        """The same agent with some context left out (what a backtrack rerun ablates).

        Args:
            injection_ids: Injections to drop from the catalog (skill-map nodes cannot be dropped).
            tool_names: Tools never offered nor dispatched (a call to one is answered as unknown).
            memory_ids: Recalled entries (``rag`` chunks or ``memory`` entries) left out of every
                recall, by entry id (``{kind: 'memory', excludeMemoryIds: [...]}``).

        Returns:
            A new agent; ``run_start.options["without"]`` records what was left out.
        """
        ids = tuple(dict.fromkeys([*self.spec.excluded_injections, *injection_ids]))
        names = tuple(dict.fromkeys([*self.spec.ignored_tools, *tool_names]))
        memory = tuple(dict.fromkeys([*self.spec.excluded_memory, *memory_ids]))
        return self._with(excluded_injections=ids, ignored_tools=names, excluded_memory=memory)

    # -- compilation -----------------------------------------------------------------------------

    def check(self) -> Agent:
        """Compile the declaration now, so mistakes surface before a run.

        Returns:
            This agent.

        Raises:
            DefinitionError: Duplicate ids or tool names, ``.maps()`` without a skill map, an
                excluded id that is not in the catalog or is a skill-map node…
        """
        self._compile()
        return self

    def _compile(self) -> Compiled:
        with self._lock:
            if self._compiled is None:
                self._compiled = compile_spec(self.spec)
            return self._compiled

    # -- running ---------------------------------------------------------------------------------

    def conversation(
        self,
        *,
        provider: Provider,
        sink: EventSink | None = None,
        clock: Clock | None = None,
        run_id: str | None = None,
        options: Mapping[str, object] | None = None,
    ) -> Conversation:
        """Open a run that takes several user messages (``run_start`` is written now).

        Args:
            provider: The model.
            sink: Where the events go; a new :class:`~fpdebug.engine.sink.MemorySink` by default.
            clock: Stamps events and measures latencies; the system clock by default.
            run_id: The run's id; a random 12-hex-digit id by default.
            options: Extra settings recorded in ``run_start.options`` for this run only.

        Returns:
            The open :class:`Conversation` (already ended ``interrupted`` if the sink stopped the run
            on its ``run_start``: ``run_end`` follows it when the sink stored it, and nothing of the
            run is written when it refused it).
        """
        return Conversation(self, provider=provider, sink=sink, clock=clock, run_id=run_id, options=options)

    def run(
        self,
        user_message: str | Sequence[str],
        *,
        provider: Provider,
        sink: EventSink | None = None,
        clock: Clock | None = None,
        run_id: str | None = None,
        options: Mapping[str, object] | None = None,
        answer: Callable[[AskRow], object] | None = None,
    ) -> RunResult:
        """Run one or several turns and end the run.

        A provider failure does not raise: it is recorded (an ``llm_call`` with ``error``, then
        ``run_end`` ``failed``) and the result's ``status`` is ``failed`` (``result.check()`` raises
        it). A sink that raises :class:`~fpdebug.errors.RunInterrupted` ends the run as
        ``interrupted``. A ``KeyboardInterrupt`` is recorded as ``interrupted`` and re-raised; any
        other exception (a sink that cannot write, a bug) is recorded as ``failed`` when the sink
        still can, and re-raised.

        Args:
            user_message: One message, or a sequence of messages (one turn each).
            provider: The model.
            sink: Where the events go; a new ``MemorySink`` by default (``result.events``).
            clock: Stamps events and measures latencies.
            run_id: The run's id.
            options: Extra settings recorded in ``run_start.options``.
            answer: The user's side of an argument ask (``inputs_layer(ask=True)``): given the ask,
                the value to resume with. Without it, a turn that pauses ends the run ``paused``;
                when it raises, the run ends ``paused`` and the exception propagates.

        Returns:
            The :class:`RunResult`.
        """
        messages = [user_message] if isinstance(user_message, str) else list(user_message)
        if not messages or not all(isinstance(m, str) for m in messages):
            raise DefinitionError("run() needs a user message (a string) or a non-empty list of them")
        conversation = self.conversation(
            provider=provider, sink=sink, clock=clock, run_id=run_id, options=options
        )
        for message in messages:
            if conversation.status != "running":
                break
            turn = conversation.send(message)
            while turn.status == "paused" and answer is not None and conversation.paused is not None:
                try:
                    value = answer(conversation.paused)
                except BaseException:
                    conversation.close()  # the ask was never answered: the run ends paused, then raise
                    raise
                turn = conversation.resume(value)
            if turn.status != "completed":
                break
        return conversation.close()

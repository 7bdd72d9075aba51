"""The agent: an immutable builder for the declared configuration, and the ReAct loop that records it all.

Declare an agent with the fluent, copy-on-write :class:`Agent` (every method returns a new agent;
an agent is a value and may be shared between threads and reruns)::

    agent = (
        Agent("support")
        .system_prompt("You are a support agent.")
        .injections(tone, refund_policy, wire_format)
        .tools(lookup_customer)                     # plain callables, or tool(fn, timeout=…)
        .skill_map(skill_map)                       # nodes, entries, routes, open skills
        .maps(renewal_grace=3)                      # the engagement kernel (docs/context-model.md §6)
        .tool_middleware(cap_refunds)               # may rewrite a call's arguments before it runs
        .max_iterations(8)
    )
    result = agent.run("Refund order A-17", provider=model, sink=sink, clock=clock, run_id="r1")

The package's modules each own one concept:

- :mod:`~fpdebug.engine.agent.spec`: what an agent declares (:class:`AgentSpec`, :class:`HonestyHooks`);
- :mod:`~fpdebug.engine.agent.builder`: the :class:`Agent` builder;
- :mod:`~fpdebug.engine.agent.compile`: a spec compiled once into what the loop needs;
- :mod:`~fpdebug.engine.agent.conversation`: an open run (:class:`Conversation`), ``run_start`` to ``run_end``;
- :mod:`~fpdebug.engine.agent.loop`: one turn of the ReAct loop (:class:`TurnLoop`, docs/context-model.md §7),
  with its collaborators :mod:`~fpdebug.engine.agent.compose` (the request's slots),
  :mod:`~fpdebug.engine.agent.tool_batch` (the tool-calls stage) and
  :mod:`~fpdebug.engine.agent.tool_call` (running one tool), :mod:`~fpdebug.engine.agent.replies`
  (the provider's reply made well formed) and :mod:`~fpdebug.engine.agent.failures` (a failure as
  the trace records it);
- :mod:`~fpdebug.engine.agent.results`: how a turn and a run ended (:class:`TurnResult`, :class:`RunResult`).
"""

from fpdebug.engine.agent.builder import Agent
from fpdebug.engine.agent.conversation import Conversation
from fpdebug.engine.agent.loop import TurnLoop
from fpdebug.engine.agent.results import RunResult, RunStatus, TurnResult
from fpdebug.engine.agent.spec import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TOOL_TIMEOUT,
    READ_SKILL,
    AgentSpec,
    Continuity,
    HonestyHooks,
    MapsOptions,
)

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_TOOL_TIMEOUT",
    "READ_SKILL",
    "Agent",
    "AgentSpec",
    "Continuity",
    "Conversation",
    "HonestyHooks",
    "MapsOptions",
    "RunResult",
    "RunStatus",
    "TurnLoop",
    "TurnResult",
]

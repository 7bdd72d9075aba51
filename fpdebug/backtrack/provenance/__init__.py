"""Provenance of one LLM call, from the trace alone: every piece that rode it, why, and the chain back.

For a chosen ``llm_call`` (by line or seq; by default the call that produced the final answer of
the last turn) :func:`trace_provenance` lists every piece of context the model read, in the order
it read them:

- **system-prompt segments**: the agent's base prompt, each active injection's text, the park card;
- **messages**: the user's message (← its ``turn_start``), earlier replies (← the ``llm_call`` that
  wrote them), tool results (← their ``tool_result``), messages an injection delivered;
- **tool schemas**: the agent's own tools, a skill's tools (← its injection), ``read_skill``.

For each piece it says WHY it was there, as recorded by the pass (``pass.reasons``): its trigger
(always, rule, on-tool-return of which call, llm-activated by which ``read_skill`` call), a lease
(granted by which tool call at which iteration, delivery lease, tenant), the cursor (how it got
there: a route edge fired by which tool result, a model pick, a tool proposal, an entry and its
witness), and the engagement standing of its map. Then the chain back, hop by hop, in the walk of
the debugger's "why" pane::

    ANSWER ← READ call ← LANDED slot ← ALLOWED admission ← (GRANTED ← RETURNED ← ASKED …) ← BORN

``BORN`` is the piece's declaration in ``run_start`` (or the record that wrote it: a
``turn_start``, an earlier ``llm_call``, the kernel's ``engagement``). A chain stops at the LLM
call that asked for a tool (``ASKED``): why THAT call asked is the provenance of that call, one
``fpdebug backtrack --call SEQ`` away (one hop per iteration, docs/backtracking.md §9.2).

It also lists what was **available but not sent** at that call (skipped, parked, leases that ended
before it, declared injections whose trigger did not fire): candidates for missing context.

Everything here is correlational (docs/backtracking.md §9.1): a chain says how a piece got on the wire, never
that it changed the answer. :attr:`Provenance.suspects` feeds
:func:`~fpdebug.backtrack.suspects.rank_pieces`; only a rerun (:mod:`~fpdebug.backtrack.rerun`)
can say "because".

The package, one concept a module: :mod:`.models` (the frozen results), :mod:`.calls` (choosing
the call; rendering an answer), :mod:`.index` (the run read once), :mod:`.build` (the entry point),
which drives the chain builder's parts: :mod:`.context` (the call and its lookups),
:mod:`.admission` (why an injection rode), :mod:`.chains` (the hops), :mod:`.pieces` (the request,
piece by piece), :mod:`.missing` (available but not sent) and :mod:`.suspects` (the ranking's input);
:mod:`.words` says it all in sentences.
"""

from fpdebug.backtrack.provenance.build import trace_provenance
from fpdebug.backtrack.provenance.calls import (
    DefaultCall,
    call_lines,
    default_call,
    default_call_line,
    find_call_line,
    recorded_call,
    render_answer,
)
from fpdebug.backtrack.provenance.models import (
    PARK_CARD_ID,
    READ_SKILL,
    Admission,
    CallRef,
    ContextPiece,
    CursorOrigin,
    EngagementStanding,
    HonestyFlag,
    HonestyFlagName,
    Hop,
    HopVerb,
    LeaseOrigin,
    MissingPiece,
    PieceOrigin,
    Provenance,
    ReadProblems,
    UnsupportedValue,
)

__all__ = [
    "PARK_CARD_ID",
    "READ_SKILL",
    "Admission",
    "CallRef",
    "ContextPiece",
    "CursorOrigin",
    "DefaultCall",
    "EngagementStanding",
    "HonestyFlag",
    "HonestyFlagName",
    "Hop",
    "HopVerb",
    "LeaseOrigin",
    "MissingPiece",
    "PieceOrigin",
    "Provenance",
    "ReadProblems",
    "UnsupportedValue",
    "call_lines",
    "default_call",
    "default_call_line",
    "find_call_line",
    "recorded_call",
    "render_answer",
    "trace_provenance",
]

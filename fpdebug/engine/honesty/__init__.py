"""The honesty layers (inputs, results, answer) and the findings ledger they file into (docs/honesty.md §12).

Three optional layers make a run say where its values came from. Their pure core is functions with
explicit inputs and outputs that the agent loop calls at the three mount points (through
:mod:`fpdebug.engine.honesty.hooks`), and that :mod:`fpdebug.engine.honesty.replay` calls again over
a saved trace. They read only what a
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

The package, one concept per module:

=================  ===========================================================================
module             concept
=================  ===========================================================================
``ledger``         :class:`Finding`: the rows one visit files, as one ``finding`` event
``inputs``         the inputs layer (:func:`judge_inputs`, the ``_from`` basis, rewrites)
``results``        the results layer (:func:`batch_to_judge`, :func:`judge_results`)
``answer``         the answer layer (:func:`answer_fold_reads`, :func:`assess_answer`)
``ask``            the argument ask and the paused call (:func:`next_ask`, :class:`ArgumentAsk`)
``sources``        what a source is and what "holds a value" means (lexical, normalised)
``values``         the values a text states (amounts, dates, identifiers)
``hooks``          :class:`~fpdebug.engine.honesty.hooks.HonestyLayers`: the layers armed on an agent
``replay``         :func:`~fpdebug.engine.honesty.replay.recompute_findings` over a saved trace
=================  ===========================================================================

This module exports the pure core (the first five); ``hooks`` and ``replay`` are imported by path,
so that importing the core never pulls in the agent loop.
"""

from __future__ import annotations

from fpdebug.engine.honesty.answer import (
    ALWAYS_READ,
    ANSWER_FOLD_KEYS,
    AnswerFoldKey,
    AnswerFoldState,
    AnswerValidation,
    StandingLineWhen,
    answer_fold_reads,
    assess_answer,
    compose_standing_line,
    fold_reads,
    gate_verdict,
    revision_ask,
)
from fpdebug.engine.honesty.ask import ArgumentAsk, PausedVisit, argument_ask_of, ask_question, next_ask
from fpdebug.engine.honesty.inputs import (
    BASIS_KEY,
    ArgumentRewrite,
    Grounds,
    InputsConfig,
    InputsVerdict,
    PriorResult,
    SourcesInReach,
    judge_inputs,
    rewrites_of,
)
from fpdebug.engine.honesty.ledger import Finding, HonestyRow, Layer, file_finding
from fpdebug.engine.honesty.results import (
    RESULT_VALUES_LIMIT,
    BatchTime,
    CallWindow,
    RanCall,
    TurnClock,
    batch_to_judge,
    judge_results,
    results_at_loop_head,
    time_of_batch,
)

__all__ = [
    "ALWAYS_READ",
    "ANSWER_FOLD_KEYS",
    "BASIS_KEY",
    "RESULT_VALUES_LIMIT",
    "AnswerFoldKey",
    "AnswerFoldState",
    "AnswerValidation",
    "ArgumentAsk",
    "ArgumentRewrite",
    "BatchTime",
    "CallWindow",
    "Finding",
    "Grounds",
    "HonestyRow",
    "InputsConfig",
    "InputsVerdict",
    "Layer",
    "PausedVisit",
    "PriorResult",
    "RanCall",
    "SourcesInReach",
    "StandingLineWhen",
    "TurnClock",
    "answer_fold_reads",
    "argument_ask_of",
    "ask_question",
    "assess_answer",
    "batch_to_judge",
    "compose_standing_line",
    "file_finding",
    "fold_reads",
    "gate_verdict",
    "judge_inputs",
    "judge_results",
    "next_ask",
    "results_at_loop_head",
    "revision_ask",
    "rewrites_of",
    "time_of_batch",
]

"""Injections: context declared as data, the four triggers, the factories and the evaluator.

An :class:`Injection` says WHAT it contributes (system-prompt text, messages, tools) and WHEN
(its trigger). :func:`evaluate_injections` decides one pass's active set in the order of
docs/context-model.md §2.1: park suppression, then lease admission, then the injection's own trigger, then the
template gate; it is pure and never raises.

The package's modules: :mod:`~fpdebug.engine.injections.triggers`, :mod:`~fpdebug.engine.injections.context`
(the pass context), :mod:`~fpdebug.engine.injections.templates`, :mod:`~fpdebug.engine.injections.injection`,
:mod:`~fpdebug.engine.injections.factories`, :mod:`~fpdebug.engine.injections.evaluator`,
:mod:`~fpdebug.engine.injections.projection` and :mod:`~fpdebug.engine.injections.step_pointer`.
"""

from fpdebug.engine.injections.context import (
    InjectionContext,
    ProposedTransition,
    Step,
    StepPointer,
    TurnRoute,
    tool_results_of,
)
from fpdebug.engine.injections.evaluator import PARKED_SENTENCE, Evaluation, evaluate_injections
from fpdebug.engine.injections.factories import (
    define_fact,
    define_injection,
    define_instruction,
    define_skill,
    define_steering,
)
from fpdebug.engine.injections.injection import ContextRole, Injection, SurfaceMode, check_unique_ids
from fpdebug.engine.injections.projection import ActiveInjection, project
from fpdebug.engine.injections.step_pointer import rekey_step_pointer, step_plans
from fpdebug.engine.injections.templates import TEMPLATE_FACTS, missing_facts, render_template, template_names
from fpdebug.engine.injections.triggers import (
    Always,
    LlmActivated,
    OnToolReturn,
    Rule,
    Trigger,
    tool_name_matches,
)

__all__ = [
    "PARKED_SENTENCE",
    "TEMPLATE_FACTS",
    "ActiveInjection",
    "Always",
    "ContextRole",
    "Evaluation",
    "Injection",
    "InjectionContext",
    "LlmActivated",
    "OnToolReturn",
    "ProposedTransition",
    "Rule",
    "Step",
    "StepPointer",
    "SurfaceMode",
    "Trigger",
    "TurnRoute",
    "check_unique_ids",
    "define_fact",
    "define_injection",
    "define_instruction",
    "define_skill",
    "define_steering",
    "evaluate_injections",
    "missing_facts",
    "project",
    "rekey_step_pointer",
    "render_template",
    "step_plans",
    "template_names",
    "tool_name_matches",
    "tool_results_of",
]

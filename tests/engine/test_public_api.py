"""The public names and signatures ARCHITECTURE §4 fixes for the pure core."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from fpdebug import engine
from fpdebug.engine import effects, engagement, injections, leases, types

P = inspect.Parameter


def shape(fn: Callable[..., object]) -> list[tuple[str, object, str]]:
    """Each parameter as (name, default or '-', kind) — enough to pin a signature."""
    return [
        (p.name, "-" if p.default is P.empty else p.default, "kw" if p.kind is P.KEYWORD_ONLY else "pos")
        for p in inspect.signature(fn).parameters.values()
    ]


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (
            types.ToolResult,
            [
                ("tool_name", "-", "pos"),
                ("result", None, "pos"),
                ("tool_call_id", None, "pos"),
                ("status", None, "pos"),
            ],
        ),
        (
            leases.InstructionLease,
            [
                ("instruction_id", "-", "pos"),
                ("delivery_lease", "-", "pos"),
                ("tool_name", "-", "pos"),
                ("iteration", "-", "pos"),
                ("skill_id", None, "pos"),
                ("tool_call_id", None, "pos"),
            ],
        ),
        (leases.tenant_of, [("cursor", "-", "pos"), ("activated", "-", "pos")]),
        (
            leases.active_lease_ids,
            [("leases", "-", "pos"), ("iteration", "-", "pos"), ("tenant", "-", "pos")],
        ),
        (
            leases.prune_leases,
            [("leases", "-", "pos"), ("iteration", "-", "pos"), ("current_tenant", "-", "pos")],
        ),
        (engagement.strength_of_move, [("by", "-", "pos")]),
        (engagement.stronger_of, [("a", "-", "pos"), ("b", "-", "pos")]),
        (engagement.is_tentative, [("strength", "-", "pos")]),
        (engagement.strength_of_evidence, [("evidence", "-", "pos")]),
        (engagement.strongest_of, [("evidence_list", "-", "pos")]),
        (
            engagement.MountedMap,
            [
                ("id", "-", "pos"),
                ("member_ids", "-", "pos"),
                ("tool_names", "-", "pos"),
                ("non_parkable", False, "pos"),
            ],
        ),
        (
            engagement.EngagementPass,
            [
                ("iteration", "-", "pos"),
                ("current_node", None, "pos"),
                ("move_by", None, "pos"),
                ("witness", None, "pos"),
                ("tool_results", (), "pos"),
                ("pending_skill_pick", None, "pos"),
                ("accepted_skill_picks", (), "pos"),
                ("served_last_pass", (), "pos"),
            ],
        ),
        (engagement.renewal_evidence_of, [("map", "-", "pos"), ("pass_", "-", "pos")]),
        (engagement.EngagementPlan, [("maps", "-", "pos"), ("renewal_grace", 3, "pos")]),
        (engagement.advance_engagement, [("plan", "-", "pos"), ("prior", "-", "pos"), ("pass_", "-", "pos")]),
        (injections.Always, []),
        (injections.LlmActivated, [("via_tool_name", "read_skill", "pos")]),
        (injections.OnToolReturn, [("tool_name", "-", "pos")]),
        (injections.evaluate_injections, [("injections", "-", "pos"), ("ctx", "-", "pos")]),
        (effects.parse_envelope, [("value", "-", "pos")]),
    ],
)
def test_signatures(fn: Callable[..., object], expected: list[tuple[str, object, str]]) -> None:
    assert shape(fn) == expected


def test_rule_and_define_injection() -> None:
    assert shape(injections.Rule)[0] == ("active_when", "-", "pos")
    first, *rest = shape(injections.define_injection)
    assert first == ("id", "-", "pos")
    assert (
        ("trigger", "-", "kw") in rest
        and ("flavor", "custom", "kw") in rest
        and ("system_prompt", None, "kw") in rest
    )


def test_injection_context_takes_the_iteration_then_keywords() -> None:
    params = shape(injections.InjectionContext)
    assert params[0] == ("iteration", "-", "pos")
    names = {name for name, _, kind in params[1:] if kind == "kw"}
    assert {
        "tool_results",
        "last_tool_result",
        "activated_injection_ids",
        "lease_active_ids",
        "parked_ids",
        "max_iterations",
        "user_message",
        "history",
        "current_skill_id",
        "pending_skill_pick",
        "pending_tool_transition",
        "turn_route",
        "entry_scores",
        "entry_scorer",
        "step_pointer",
    } <= names
    assert injections.InjectionContext(3, max_iterations=4).iterations_remaining == 1


def test_results_expose_the_documented_fields() -> None:
    plan = engagement.EngagementPlan((engagement.MountedMap("m", ("a",), ()),))
    adv = engagement.advance_engagement(
        plan, None, engagement.EngagementPass(1, current_node="a", move_by="entry")
    )
    assert {"next", "parked_injection_ids", "parked_tool_names", "changes"} <= set(dir(adv))
    env = effects.parse_envelope({"content": "x", "effects": [], "status": "success"})
    assert env is not None and {"content", "effects", "malformed", "status"} <= set(dir(env))
    evaluation = injections.evaluate_injections([], injections.InjectionContext(1))
    assert (evaluation.active, evaluation.skipped) == ((), ())


def test_the_package_exports_what_it_lists() -> None:
    for name in engine.__all__:
        assert hasattr(engine, name), name

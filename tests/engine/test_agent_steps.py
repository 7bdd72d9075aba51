"""DOMAIN §5.6 in the loop: the pass re-keys the step pointer, each tool result advances or skips it.

Asserted on the trace each run wrote, read back through the reader: ``pass.step_pointer`` is the
pointer each pass saw, ``tool_result.step`` what each result did to it, and an agent whose skills
declare no steps writes neither key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope
from fpdebug.engine.injections import define_skill, define_steering
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import CursorMoveEvent, PassEvent, StepPointerRecord, ToolResultEvent
from tests.engine.test_agent import Recorded, record

R = ScriptedReply


def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: paid"


def charge(order_id: str) -> str:
    """Refund the charge."""
    raise RuntimeError("the payment service is down")


def receipt(order_id: str) -> dict[str, object]:
    """File the receipt."""
    return envelope("filed", status="success")


REFUND_STEPS = ["look up the order", "refund the charge", "file the receipt"]


def refund_skill(**extra: object) -> object:
    return define_skill(
        "refund",
        body="Refund orders, step by step.",
        tools=[tool(lookup), tool(charge), tool(receipt)],
        steps=REFUND_STEPS,
        **extra,  # type: ignore[arg-type]
    )


def pointers(run: Recorded) -> list[tuple[int | None, list[StepPointerRecord] | None]]:
    return [(e.iteration, e.step_pointer) for e in run.events if isinstance(e, PassEvent)]


def steps(run: Recorded) -> list[tuple[str, str | None, int | None, int | None, list[int] | None]]:
    rows = []
    for e in run.events:
        if isinstance(e, ToolResultEvent):
            change = e.step
            rows.append(
                (
                    e.tool_name,
                    change.outcome if change else None,
                    change.step if change else None,
                    change.step_pointer.step if change else None,
                    change.step_pointer.skipped if change else None,
                )
            )
    return rows


def ptr(
    step: int, skipped: list[int] | None = None, skill: str = "refund", total: int = 3
) -> list[StepPointerRecord]:
    return [StepPointerRecord(skill_id=skill, step=step, total=total, skipped=skipped or [])]


def test_each_result_advances_or_skips_the_pointer_and_the_trace_says_so(tmp_path: Path) -> None:
    agent = Agent("steps").skills(refund_skill()).max_iterations(6)
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.batch(
                ScriptedCall("lookup", {"order_id": "A-17"}), ScriptedCall("charge", {"order_id": "A-17"})
            ),
            R.tool_call("receipt", {"order_id": "A-17"}),
            R.tool_call("lookup", {"order_id": "A-17"}),
            "Refunded, except the charge: the payment service was down.",
        ]
    )
    run = record(agent, "Refund A-17", model, tmp_path)
    assert run.result.status == "completed"
    # The pass re-keys (no tenant on pass 1, a fresh pointer once refund is activated); the tool-calls
    # stage moves it, and the next pass carries it on (same tenant: unchanged).
    assert pointers(run) == [
        (1, []),
        (2, ptr(1)),
        (3, ptr(3, [2])),
        (4, ptr(4, [2])),
        (5, ptr(4, [2])),
    ]
    assert steps(run) == [
        ("read_skill", None, None, None, None),  # a pick is not a step boundary
        ("lookup", "step_advanced", 1, 2, []),  # returned plain data: done
        ("charge", "step_skipped", 2, 3, [2]),  # raised, a failure: skipped, in the same batch
        ("receipt", "step_advanced", 3, 4, [2]),  # success: step 4 of 3, the steps are done
        ("lookup", None, None, None, None),  # done is done: nothing left to move
    ]
    # The raw lines: keys are written only where the feature spoke.
    results = [line for line in run.raw if line["kind"] == "tool_result"]
    assert ["step" in line for line in results] == [False, True, True, True, False]
    assert results[2]["step"] == {
        "outcome": "step_skipped",
        "skill_id": "refund",
        "step": 2,
        "total": 3,
        "held": False,
        "step_pointer": {"skill_id": "refund", "step": 3, "total": 3, "skipped": [2]},
    }


def test_hold_keeps_a_failed_step_current_until_a_retry_succeeds(tmp_path: Path) -> None:
    attempts: list[str] = []

    def flaky(order_id: str) -> str:
        """Look an order up (fails the first time)."""
        attempts.append(order_id)
        if len(attempts) == 1:
            raise TimeoutError("slow")
        return "paid"

    skill = define_skill(
        "audit",
        body="Audit.",
        tools=[tool(flaky, name="lookup")],
        steps=["look up", "report"],
        on_skip="hold",
    )
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "audit"}),
            R.tool_call("lookup", {"order_id": "A"}),
            R.tool_call("lookup", {"order_id": "A"}),
            "ok",
        ]
    )
    run = record(Agent("hold").skills(skill), "Audit A", model, tmp_path)
    lookups = [e for e in run.events if isinstance(e, ToolResultEvent) and e.tool_name == "lookup"]
    held, retried = (e.step for e in lookups)
    assert held is not None and (held.outcome, held.step, held.held) == ("step_skipped", 1, True)
    assert held.step_pointer == ptr(1, skill="audit", total=2)[0]
    assert retried is not None
    assert (retried.outcome, retried.step, retried.held) == ("step_advanced", 1, False)
    assert pointers(run)[-1] == (4, ptr(2, skill="audit", total=2))


def test_the_pointer_follows_the_cursor_and_never_moves_it(tmp_path: Path) -> None:
    def escalate() -> str:
        """Hand the case to billing."""
        return "escalated"

    graph = (
        SkillMapBuilder()
        .skill(
            define_skill("triage", body="Triage.", tools=[tool(lookup), tool(escalate)], steps=["look up"])
        )
        .skill(define_skill("billing", body="Billing."))
        .entry("triage")
        .route("triage", "billing", on_tool_return="escalate")
        .build()
    )
    model = ScriptedProvider(
        [R.tool_call("lookup", {"order_id": "A"}), R.tool_call("escalate"), "Billing has it."]
    )
    run = record(Agent("graph").skill_map(graph), "Help", model, tmp_path)
    # Finishing triage's only step moves nothing: the cursor stays until the route fires.
    assert [(e.to_skill, e.by) for e in run.events if isinstance(e, CursorMoveEvent)] == [
        ("triage", "entry"),
        ("triage", "stay"),
        ("billing", "route"),
    ]
    # A new tenant without a plan re-keys the pointer to [] (DOMAIN §5.6).
    assert pointers(run) == [
        (1, ptr(1, skill="triage", total=1)),
        (2, ptr(2, skill="triage", total=1)),
        (3, []),
    ]


def test_an_agent_without_steps_writes_no_step_keys(tmp_path: Path) -> None:
    skill = define_skill("refund", body="Refund.", tools=[tool(lookup), tool(charge)])
    agent = Agent("plain").injections(define_steering("tone", prompt="Brief.")).skills(skill)
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.batch(ScriptedCall("lookup", {"order_id": "A"}), ScriptedCall("charge", {"order_id": "A"})),
            "done",
        ]
    )
    run = record(agent, "Refund A", model, tmp_path)
    kinds = [line["kind"] for line in run.raw]
    assert kinds.count("tool_result") == 3 and kinds.count("pass") == 3
    assert not any("step_pointer" in line or "step" in line for line in run.raw)


def test_a_bad_on_skip_is_refused_when_the_agent_compiles() -> None:
    with pytest.raises(DefinitionError, match="on_skip 'skip' is not a policy"):
        Agent("bad").skills(refund_skill(on_skip="skip")).check()

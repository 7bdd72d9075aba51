"""docs/context-model.md §5.6 in the loop, as the reference runs it (footprintjs/agentfootprint
``src/core/agent/stages/toolCalls.ts`` and ``src/core/slots/buildToolsSlot.ts``).

Asserted on the trace each run wrote, read back through the reader: ``pass.step_pointer`` is the
pointer each pass saw, ``tool_result.step`` what a result did to it, ``llm_call.request.tools`` what
the model was offered, and ``tool_result.result`` what it read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.effects import envelope
from fpdebug.engine.injections import Step, define_skill, define_steering
from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.engine.skillmap import SkillMapBuilder
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import CursorMoveEvent, LlmCallEvent, PassEvent, StepPointerRecord, ToolResultEvent
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
    return envelope("filed", status="failure")


def note(text: str) -> str:
    """Write a note (not a step)."""
    return "noted"


REFUND_STEPS = [
    Step("lookup", "look up the order"),
    Step("charge", "refund the charge"),
    Step("receipt", "file the receipt"),
]


def refund_skill(**extra: object) -> object:
    return define_skill(
        "refund",
        body="Refund orders, step by step.",
        tools=[tool(lookup), tool(charge), tool(receipt), tool(note)],
        steps=REFUND_STEPS,
        **extra,  # type: ignore[arg-type]
    )


def pointers(run: Recorded) -> list[list[StepPointerRecord] | None]:
    return [e.step_pointer for e in run.events if isinstance(e, PassEvent)]


def results(run: Recorded) -> list[ToolResultEvent]:
    return [e for e in run.events if isinstance(e, ToolResultEvent)]


def offers(run: Recorded) -> list[dict[str, str]]:
    """Each call's offered tools: name → description."""
    return [
        {t.name: t.description for t in e.request.tools} for e in run.events if isinstance(e, LlmCallEvent)
    ]


def ptr(
    step: int, skipped: list[int] | None = None, skill: str = "refund", total: int = 3
) -> list[StepPointerRecord]:
    return [StepPointerRecord(skill_id=skill, step=step, total=total, skipped=skipped or [])]


def test_only_the_current_steps_tool_advances_and_a_failed_one_stays_current(tmp_path: Path) -> None:
    """toolCalls.ts · applyStepReturn: ``if (!state || state.step.tool !== call.toolName) return ''``;
    the advance runs only when ``executed && !error && !denied && !skillRejected && !ceilingRefused``."""
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            # Two calls to a tool that is not the step's: the fpdebug bug the auditor found marked both
            # steps done here.
            R.batch(ScriptedCall("note", {"text": "a"}), ScriptedCall("note", {"text": "b"})),
            R.batch(ScriptedCall("lookup", {"order_id": "A"}), ScriptedCall("charge", {"order_id": "A"})),
            "Stopped: the payment service is down.",
            "Still down.",  # the answer after the step nudge
        ]
    )
    run = record(Agent("steps").skills(refund_skill()).max_iterations(6), "Refund A", model, tmp_path)
    assert pointers(run) == [[], ptr(1), ptr(1), ptr(2), ptr(2)]
    rows = results(run)
    assert [(r.tool_name, r.step.outcome if r.step else None) for r in rows] == [
        ("read_skill", None),
        ("note", None),
        ("note", None),
        ("lookup", "step_advanced"),
        ("charge", None),  # it raised: neither advanced nor skipped, the step stays current
    ]
    advanced = rows[3].step
    assert advanced is not None and (advanced.step, advanced.tool) == (1, "lookup")
    assert advanced.step_pointer == ptr(2)[0]
    # What the model read: the activation intro, then the advance suffix (skillSteps.ts sentences).
    assert rows[0].result.endswith(" You are on step 1 of 3: look up the order. Its tool: `lookup`.")
    assert rows[3].result == (
        "order A: paid Step 1 of 3 done. Now on step 2 of 3: refund the charge (tool: `charge`)."
    )
    assert "Step" not in rows[4].result.split("failed:")[0] and "done" not in rows[4].result
    # Raw lines: `step` is written only where a step moved.
    raw = [line for line in run.raw if line["kind"] == "tool_result"]
    assert ["step" in line for line in raw] == [False, False, False, True, False]
    assert raw[3]["step"] == {
        "outcome": "step_advanced",
        "skill_id": "refund",
        "step": 1,
        "total": 3,
        "tool": "lookup",
        "held": False,
        "step_pointer": {"skill_id": "refund", "step": 2, "total": 3, "skipped": []},
    }


def test_skip_step_skips_with_a_reason_and_a_declared_status_does_not_stop_an_advance(tmp_path: Path) -> None:
    """toolCalls.ts · applySkipStep under onSkip 'advance' (the default): ``skipped: [...ptr.skipped,
    ptr.step]`` and the result is OVERWRITTEN with skipAdvanceSentence. A declared envelope status is not
    an ``error`` in the batch loop, so the step's tool still advances."""
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.tool_call("lookup", {"order_id": "A"}),
            R.tool_call("skip_step", {"reason": "the payment service is down"}),
            R.tool_call("receipt", {"order_id": "A"}),  # declares status "failure" and still completes
            R.tool_call("skip_step", {"reason": "again"}),
            "Done, except the charge.",
        ]
    )
    run = record(Agent("steps").skills(refund_skill()).max_iterations(8), "Refund A", model, tmp_path)
    assert pointers(run) == [[], ptr(1), ptr(2), ptr(3, [2]), ptr(4, [2]), ptr(4, [2])]
    rows = results(run)
    skipped = rows[2].step
    assert skipped is not None
    assert (skipped.outcome, skipped.step, skipped.tool, skipped.reason, skipped.held) == (
        "step_skipped",
        2,
        "charge",
        "the payment service is down",
        False,
    )
    assert rows[2].result == (
        "Step 2 skipped: the payment service is down. Now on step 3 of 3: file the receipt (tool: `receipt`)."
    )
    assert rows[3].status == "failure" and rows[3].step is not None
    assert rows[3].result == "filed Step 3 of 3 done. All 3 steps complete."
    # After completion skip_step is still dispatchable and answers with the teaching sentence, no step.
    assert rows[4].step is None and rows[4].result.startswith("skip_step has nothing to skip")


def test_hold_records_the_skip_and_the_step_stays_current(tmp_path: Path) -> None:
    """OnSkipPolicy 'hold': "record the skip and keep the step current (its tool stays the offer)"."""
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.tool_call("skip_step", {"reason": "no order id"}),
            R.tool_call("skip_step", {"reason": "   "}),
            R.tool_call("lookup", {"order_id": "A"}),
            "ok",
            "ok",  # the answer after the step nudge
        ]
    )
    run = record(Agent("hold").skills(refund_skill(on_skip="hold")), "Refund", model, tmp_path)
    assert pointers(run) == [[], ptr(1), ptr(1), ptr(1), ptr(2), ptr(2)]
    rows = results(run)
    held = rows[1].step
    assert held is not None and (held.outcome, held.step, held.held, held.step_pointer) == (
        "step_skipped",
        1,
        True,
        ptr(1)[0],
    )
    assert rows[1].result == (
        "Skip of step 1 recorded: no order id. Step 1 of 3 stays current (declared policy 'hold') — run "
        "`lookup`, or finish and say why."
    )
    assert rows[2].step is None and rows[2].result.startswith("skip_step was not applied")  # empty reason
    assert rows[3].step is not None and rows[3].step.outcome == "step_advanced"


def test_the_offer_narrows_to_the_current_step_while_a_procedure_runs(tmp_path: Path) -> None:
    """buildToolsSlot.ts: other step tools are held out, the current one leads with
    ``[Step k of n — note]``, ``skip_step`` is offered ONLY while a step is in progress, and escape
    hatches (read_skill, non-step tools) stay."""
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.tool_call("lookup", {"order_id": "A"}),
            R.tool_call("skip_step", {"reason": "down"}),
            R.tool_call("receipt", {"order_id": "A"}),
            "done",
        ]
    )
    run = record(Agent("offer").skills(refund_skill()).max_iterations(6), "Refund", model, tmp_path)
    calls = offers(run)
    assert list(calls[0]) == ["read_skill"]  # no procedure yet: no skip_step
    assert list(calls[1]) == ["lookup", "note", "read_skill", "skip_step"]
    assert calls[1]["lookup"] == "[Step 1 of 3 — look up the order] Look an order up."
    assert calls[1]["skip_step"].startswith("Skip step 1 of 3 ('lookup' — look up the order)")
    assert list(calls[2]) == ["charge", "note", "read_skill", "skip_step"]
    assert list(calls[3]) == ["receipt", "note", "read_skill", "skip_step"]
    # Complete: every tool is back, undecorated, and skip_step is gone.
    assert calls[4] == {
        "lookup": "Look an order up.",
        "charge": "Refund the charge.",
        "receipt": "File the receipt.",
        "note": "Write a note (not a step).",
        "read_skill": calls[0]["read_skill"],
    }


def test_the_pointer_follows_the_cursor_and_never_moves_it(tmp_path: Path) -> None:
    def escalate() -> str:
        """Hand the case to billing."""
        return "escalated"

    graph = (
        SkillMapBuilder()
        .skill(
            define_skill(
                "triage",
                body="Triage.",
                tools=[tool(lookup), tool(escalate)],
                steps=[("lookup", "look it up")],
            )
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
    # A new tenant without a plan re-keys the pointer to [] (docs/context-model.md §5.6).
    assert pointers(run) == [ptr(1, skill="triage", total=1), ptr(2, skill="triage", total=1), []]


def test_on_a_skill_map_agent_the_tenant_is_the_cursor_only(tmp_path: Path) -> None:
    """docs/context-model.md §3.4 step 4: "The tenant is ``cursor`` when ``routes``, otherwise the last id in
    ``activatedInjectionIds``" (reference skillSteps.ts · rekeyStepPointer: "the advanced cursor on graph
    agents, else the tail of activatedInjectionIds"). The map's only entry never matches, so the cursor
    stays None; the stepped skill is an OPEN skill picked with read_skill, so it is the last activation
    and active — yet it never holds the tenure. A re-key that used the last activation would write
    ``[refund, step 1]`` here."""
    graph = (
        SkillMapBuilder()
        .skill(define_skill("billing", body="Billing."))
        .entry("billing", keywords=["invoice-never-said"])
        .build()
    )
    model = ScriptedProvider(
        [R.tool_call("read_skill", {"id": "refund"}), R.tool_call("lookup", {"order_id": "A"}), "done"]
    )
    run = record(Agent("open").skill_map(graph).skills(refund_skill()), "Refund A", model, tmp_path)
    rows = results(run)
    assert rows[0].skill_gate is not None and rows[0].skill_gate.outcome == "open"
    assert [p.active_ids for p in run.events if isinstance(p, PassEvent)][1].count("refund") == 1
    assert pointers(run) == [[], [], []]
    assert all(r.step is None for r in rows)
    assert "skip_step" not in offers(run)[1]


def test_an_agent_without_steps_writes_no_step_keys_and_offers_no_skip_step(tmp_path: Path) -> None:
    skill = define_skill("refund", body="Refund.", tools=[tool(lookup), tool(charge)])
    agent = Agent("plain").injections(define_steering("tone", prompt="Brief.")).skills(skill)
    model = ScriptedProvider(
        [
            R.tool_call("read_skill", {"id": "refund"}),
            R.batch(ScriptedCall("lookup", {"order_id": "A"}), ScriptedCall("skip_step", {"reason": "x"})),
            "done",
        ]
    )
    run = record(agent, "Refund A", model, tmp_path)
    kinds = [line["kind"] for line in run.raw]
    assert kinds.count("tool_result") == 3 and kinds.count("pass") == 3
    assert not any("step_pointer" in line or "step" in line for line in run.raw)
    assert all("skip_step" not in offer for offer in offers(run))
    # Not attached without a stepped skill: an unknown tool like any other.
    assert results(run)[2].status == "invalid"


def test_skip_step_is_a_reserved_name_beside_a_stepped_skill() -> None:
    def skip_step(reason: str) -> str:
        """A user's own skip_step."""
        return reason

    with pytest.raises(DefinitionError, match="'skip_step' is reserved"):
        Agent("clash").tools(tool(skip_step)).skills(refund_skill()).check()

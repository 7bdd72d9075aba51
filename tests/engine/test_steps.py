"""Step procedures as the reference declares and moves them (docs/context-model.md §5.6; reference ``skillSteps.ts``).

The reference (footprintjs/agentfootprint, ``src/lib/injection-engine/skillSteps.ts`` and
``src/core/agent/stages/toolCalls.ts``) pins what these tests assert:

- a step is a ``{tool, note}`` pair whose tool must be one of the skill's own tools, refused at
  ``defineSkill`` otherwise (``validateSkillSteps``);
- the pointer advances only when the finished call is the current step's tool
  (``applyStepReturn``: ``if (!state || state.step.tool !== call.toolName) return ''``);
- only ``skip_step(reason)`` skips; ``onSkip: 'advance'`` records the skip and moves on, ``'hold'``
  records it and keeps the step current (``OnSkipPolicy``, ``applySkipStep``); an empty reason or
  no procedure in progress is a teaching answer that moves nothing;
- every sentence the model reads comes from ``skillSteps.ts`` (banner, suffixes, skip sentences).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.engine.injections import Step, StepPointer, define_skill
from fpdebug.engine.steps import (
    StepPlan,
    current_step,
    held_out_step_tools,
    read_skill_step_intro,
    skip_step_description,
    skip_step_result,
    skip_step_schema,
    step_banner_prefix,
    step_on_return,
    step_plans_of,
)
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError

TOOLS = [Tool("lookup"), Tool("charge"), Tool("receipt")]
STEPS = (
    Step("lookup", "look up the order"),
    Step("charge", "refund the charge"),
    Step("receipt", "file the receipt"),
)


def plans(on_skip: str = "advance") -> dict[str, StepPlan]:
    return step_plans_of([define_skill("refund", body="b", tools=TOOLS, steps=STEPS, on_skip=on_skip)])


def at(step: int, skipped: tuple[int, ...] = ()) -> tuple[StepPointer, ...]:
    return (StepPointer("refund", step, 3, skipped),)


class TestDefinition:
    """``validateSkillSteps``: every refusal happens at ``defineSkill``."""

    def test_pairs_and_steps_are_accepted_and_folded_into_a_plan(self) -> None:
        pairs = [("lookup", "look up the order"), *STEPS[1:]]
        skill = define_skill("refund", body="b", tools=TOOLS, steps=pairs)
        assert skill.steps == STEPS
        assert plans()["refund"] == StepPlan("refund", STEPS, "advance")
        assert plans("hold")["refund"].on_skip == "hold"

    def test_an_old_free_text_step_is_refused_with_the_new_shape_named(self) -> None:
        shape = r"step 1 is the text 'look up'.*Step\(tool=\.\.\., note=\.\.\.\)"
        with pytest.raises(DefinitionError, match=shape):
            define_skill("refund", body="b", tools=TOOLS, steps=["look up"])

    def test_a_step_whose_tool_is_not_the_skills_own_is_refused(self) -> None:
        # skillSteps.ts: `if (!opts.toolNames.has(step.tool)) throw` "…which this skill's tools does
        # not carry"
        with pytest.raises(DefinitionError, match="step 2 names 'escalate', which this skill's tools do not"):
            define_skill("refund", body="b", tools=TOOLS, steps=[STEPS[0], Step("escalate", "hand over")])

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"steps": [Step("lookup", "  ")]}, "step 1 .'lookup'. has no note"),
            ({"steps": [Step("", "why")]}, "step 1 names no tool"),
            ({"steps": []}, r"steps=\[\] declares nothing"),
            ({"steps": STEPS, "on_skip": "skip"}, "on_skip 'skip' is not a policy"),
            ({"on_skip": "hold"}, "on_skip is legal only beside steps"),
            ({"steps": STEPS, "tools": None}, "carries no tools"),
        ],
    )
    def test_each_other_mistake_is_refused_at_definition(
        self, kwargs: dict[str, object], message: str
    ) -> None:
        args: dict[str, object] = {"tools": TOOLS, **kwargs}
        with pytest.raises(DefinitionError, match=message):
            define_skill("refund", body="b", **args)  # type: ignore[arg-type]


class TestAdvanceOnReturn:
    """``applyStepReturn``: only the current step's tool advances the pointer."""

    def test_another_tool_moves_nothing_however_often_it_runs(self) -> None:
        assert step_on_return(at(1), plans(), "charge") is None
        assert step_on_return(at(1), plans(), "receipt") is None

    def test_the_current_steps_tool_advances_and_says_what_is_next(self) -> None:
        moved = step_on_return(at(1, (7,)), plans(), "lookup")
        assert moved is not None
        boundary, suffix = moved
        assert (boundary.outcome, boundary.step, boundary.tool) == ("step_advanced", 1, "lookup")
        assert not boundary.held
        assert boundary.next == at(2, (7,))  # an advance keeps the earlier skips
        # stepAdvanceSuffix: " Step {done} of {total} done. Now on step k of n: <note> (tool: `t`)."
        assert suffix == " Step 1 of 3 done. Now on step 2 of 3: refund the charge (tool: `charge`)."

    def test_the_last_step_completes_the_procedure_and_a_complete_one_never_moves(self) -> None:
        moved = step_on_return(at(3), plans(), "receipt")
        assert moved is not None and moved[0].next == at(4)
        assert moved[1] == " Step 3 of 3 done. All 3 steps complete."
        assert step_on_return(at(4), plans(), "receipt") is None
        assert step_on_return((), plans(), "lookup") is None

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.sampled_from(["lookup", "charge", "receipt", "other"]), max_size=12))
    def test_the_pointer_counts_exactly_the_in_order_step_calls(self, calls: list[str]) -> None:
        pointer = at(1)
        expected = 1
        for name in calls:
            moved = step_on_return(pointer, plans(), name)
            if expected <= 3 and name == STEPS[expected - 1].tool:
                expected += 1
                assert moved is not None
                pointer = moved[0].next
            else:
                assert moved is None
        assert pointer == at(expected)


class TestSkipStep:
    """``applySkipStep`` and its sentences."""

    def test_advance_records_the_skip_and_moves_on(self) -> None:
        text, boundary = skip_step_result(at(2), plans(), "  the payment service is down ")
        assert boundary is not None
        assert (boundary.outcome, boundary.step, boundary.held, boundary.reason) == (
            "step_skipped",
            2,
            False,
            "the payment service is down",
        )
        assert boundary.next == at(3, (2,))
        assert text == (
            "Step 2 skipped: the payment service is down. Now on step 3 of 3: file the receipt "
            "(tool: `receipt`)."
        )

    def test_skipping_the_last_step_completes_the_procedure(self) -> None:
        text, boundary = skip_step_result(at(3, (2,)), plans(), "no printer")
        assert boundary is not None and boundary.next == at(4, (2, 3))
        assert text == (
            "Step 3 skipped: no printer. That was the last step — the 'refund' procedure is complete "
            "(2 step(s) skipped)."
        )

    def test_hold_records_the_skip_and_keeps_the_step_current(self) -> None:
        text, boundary = skip_step_result(at(2), plans("hold"), "down")
        assert boundary is not None and boundary.held and boundary.next == at(2)
        assert text == (
            "Skip of step 2 recorded: down. Step 2 of 3 stays current (declared policy 'hold') — "
            "run `charge`, or finish and say why."
        )

    @pytest.mark.parametrize("reason", [None, "", "   ", 42])
    def test_an_empty_reason_is_a_teaching_answer_that_moves_nothing(self, reason: object) -> None:
        text, boundary = skip_step_result(at(2), plans(), reason)
        assert boundary is None and text.startswith("skip_step was not applied: `reason` is required")

    def test_no_procedure_in_progress_is_a_teaching_answer(self) -> None:
        for pointer in ((), at(4)):
            text, boundary = skip_step_result(pointer, plans(), "why")
            assert boundary is None and text.startswith("skip_step has nothing to skip")


class TestWhatTheModelSees:
    def test_the_banner_the_skip_description_and_the_read_skill_intro(self) -> None:
        pointer = at(2)[0]
        plan = plans()["refund"]
        assert step_banner_prefix(pointer, plan.steps[1]) == "[Step 2 of 3 — refund the charge] "
        assert skip_step_description(pointer, plan) == (
            "Skip step 2 of 3 ('charge' — refund the charge) with a recorded reason. 2 step(s) remain in "
            "the 'refund' procedure. On skip, the procedure moves to the next step "
            "(declared policy: 'advance')."
        )
        assert "the step stays current until it runs or the turn ends (declared policy: 'hold')" in (
            skip_step_description(pointer, plans("hold")["refund"])
        )
        schema = skip_step_schema(pointer, plan)
        assert schema.name == "skip_step" and schema.parameters["required"] == ["reason"]
        intro = " You are on step 1 of 3: look up the order. Its tool: `lookup`."
        assert read_skill_step_intro(plan) == intro

    def test_the_offer_holds_out_the_other_step_tools_unless_someone_else_offers_them(self) -> None:
        assert held_out_step_tools(at(2), plans(), ()) == {"lookup", "receipt"}
        assert held_out_step_tools(at(2), plans(), ("receipt",)) == {"lookup"}
        assert held_out_step_tools(at(4), plans(), ()) == frozenset()
        assert current_step(at(4), plans()) is None

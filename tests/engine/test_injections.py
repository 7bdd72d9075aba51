"""Injections, factories, templates and the evaluator (docs/context-model.md §1–§2)."""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

import pytest

from fpdebug.engine.injections import (
    PARKED_SENTENCE,
    Always,
    Injection,
    InjectionContext,
    LlmActivated,
    OnToolReturn,
    Rule,
    StepPointer,
    check_unique_ids,
    define_fact,
    define_injection,
    define_instruction,
    define_skill,
    define_steering,
    evaluate_injections,
    project,
    rekey_step_pointer,
    render_template,
    step_plans,
    tool_results_of,
)
from fpdebug.engine.types import Tool, ToolResult
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import Message


def ctx(iteration: int = 1, **kw: object) -> InjectionContext:
    return InjectionContext(iteration, **kw)  # type: ignore[arg-type]


def boom(_: InjectionContext) -> bool:
    raise RuntimeError("the predicate exploded")


class TestFactoryDefaults:
    """docs/context-model.md §1.3, one row each."""

    def test_steering(self) -> None:
        inj = define_steering("tone", prompt="Be brief.")
        assert (inj.flavor, inj.trigger, inj.system_prompt) == ("steering", Always(), "Be brief.")

    def test_instruction_without_predicate_is_always(self) -> None:
        inj = define_instruction("i", prompt="Cite sources.")
        assert (inj.flavor, inj.trigger, inj.system_prompt, inj.messages) == (
            "instructions",
            Always(),
            "Cite sources.",
            (),
        )

    def test_instruction_with_predicate_is_a_rule(self) -> None:
        inj = define_instruction("i", prompt="p", active_when=lambda c: c.iteration > 2)
        assert isinstance(inj.trigger, Rule)
        assert evaluate_injections([inj], ctx(3)).active_ids == ("i",)
        assert evaluate_injections([inj], ctx(2)).active_ids == ()

    def test_instruction_messages_slot_needs_a_role(self) -> None:
        with pytest.raises(DefinitionError, match="needs a role"):
            define_instruction("i", prompt="p", slot="messages")
        inj = define_instruction("i", prompt="p", slot="messages", role="user")
        assert inj.system_prompt is None
        assert inj.messages == (Message(role="user", content="p"),)

    def test_fact(self) -> None:
        inj = define_fact("plan", data={"tier": "gold", "seats": 3})
        assert (inj.flavor, inj.trigger) == ("fact", Always())
        assert inj.system_prompt == '{"tier": "gold", "seats": 3}'
        assert isinstance(define_fact("f", data="x", active_when=lambda c: True).trigger, Rule)

    def test_skill(self) -> None:
        tool = Tool("get_zone_info")
        inj = define_skill("zone-audit", body="Audit zones.", description="Zones", tools=[tool])
        assert (inj.flavor, inj.trigger, inj.system_prompt, inj.tool_names) == (
            "skill",
            LlmActivated("read_skill"),
            "Audit zones.",
            ("get_zone_info",),
        )
        assert inj.surface_mode == "auto"

    def test_objects_are_frozen(self) -> None:
        inj = define_steering("tone", prompt="x")
        with pytest.raises(dataclasses.FrozenInstanceError):
            inj.id = "other"  # type: ignore[misc]

    @pytest.mark.parametrize(
        "make",
        [
            lambda: define_steering("", prompt="x"),
            lambda: define_instruction("  ", prompt="x"),
            lambda: define_fact("", data="x"),
            lambda: define_skill("", body="x"),
            lambda: define_injection("", trigger=Always()),
        ],
    )
    def test_empty_ids_are_refused(self, make) -> None:  # type: ignore[no-untyped-def]
        with pytest.raises(DefinitionError, match="non-empty"):
            make()

    def test_duplicate_ids_are_refused(self) -> None:
        a, b = define_steering("x", prompt="1"), define_fact("x", data="2")
        with pytest.raises(DefinitionError, match="duplicate id 'x'"):
            check_unique_ids([a, define_steering("y", prompt="3"), b])
        check_unique_ids([a, define_steering("y", prompt="3")])

    def test_a_non_trigger_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="not a trigger"):
            define_injection("x", trigger="always")  # type: ignore[arg-type]

    def test_unknown_flavor_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="ContextSource"):
            define_injection("x", trigger=Always(), flavor="vibes")  # type: ignore[arg-type]

    def test_unhashable_closed_set_values_are_refused_in_words(self) -> None:
        # A list where a name belongs cannot be looked up in a set: the author still gets the
        # DefinitionError that names the field, not a TypeError.
        with pytest.raises(DefinitionError, match="ContextSource"):
            define_injection("x", trigger=Always(), flavor=["fact"])  # type: ignore[arg-type]
        with pytest.raises(DefinitionError, match="surface mode"):
            define_skill("s", body="b", surface_mode=["auto"])  # type: ignore[arg-type]
        with pytest.raises(DefinitionError, match="needs a role"):
            define_instruction("i", prompt="p", slot="messages", role=["user"])  # type: ignore[arg-type]


class TestTemplates:
    def test_unknown_names_are_refused_at_definition(self) -> None:
        with pytest.raises(DefinitionError, match=r"\{\{budget\}\}"):
            define_instruction("i", prompt_template="left: {{budget}}")

    def test_exactly_one_of_prompt_and_template(self) -> None:
        with pytest.raises(DefinitionError, match="exactly one"):
            define_instruction("i", prompt="a", prompt_template="b")
        with pytest.raises(DefinitionError, match="exactly one"):
            define_instruction("i")

    def test_rendering_with_every_fact(self) -> None:
        inj = define_instruction(
            "i", prompt_template="Step {{action}}/{{ actionBudget }}, {{actionsRemaining}} left"
        )
        assert project(inj, ctx(4, max_iterations=6)).system_prompt == "Step 4/6, 2 left"
        assert render_template("{{actionsRemaining}}", ctx(9, max_iterations=6)) == "0"

    def test_all_or_nothing_without_a_budget(self) -> None:
        inj = define_instruction(
            "i", prompt_template="Step {{action}} of {{actionBudget}}, {{actionsRemaining}} left"
        )
        result = evaluate_injections([inj], ctx(2))
        assert result.active == ()
        (skip,) = result.skipped
        assert skip.reason == "unknown-fact"
        assert "{{actionBudget}}" in (skip.error or "") and "{{actionsRemaining}}" in (skip.error or "")
        assert "{{action}}," not in (skip.error or "")
        # The projection never leaves a literal placeholder behind.
        assert project(inj, ctx(2)).system_prompt is None
        assert project(inj, None).system_prompt is None

    def test_only_action_is_known_without_a_budget(self) -> None:
        inj = define_instruction("i", prompt_template="Step {{action}}")
        assert evaluate_injections([inj], ctx(2)).active_ids == ("i",)

    def test_a_leased_template_is_still_gated(self) -> None:
        inj = define_instruction("i", prompt_template="{{actionBudget}}", active_when=boom)
        result = evaluate_injections([inj], ctx(2, lease_active_ids=("i",)))
        assert result.active == ()
        assert [(s.id, s.reason) for s in result.skipped] == [("i", "unknown-fact")]

    def test_empty_prompt_is_omitted(self) -> None:
        assert project(define_steering("e", prompt=""), ctx()).system_prompt is None


class TestContext:
    def test_iterations_remaining_is_derived(self) -> None:
        assert ctx(2, max_iterations=6).iterations_remaining == 4
        assert ctx(7, max_iterations=6).iterations_remaining == 0
        assert ctx(2).iterations_remaining is None

    def test_tool_results_of(self) -> None:
        a, b = ToolResult("a"), ToolResult("b")
        assert tool_results_of(ctx(tool_results=(a, b), last_tool_result=b)) == (a, b)
        assert tool_results_of(ctx(last_tool_result=b)) == (b,)
        assert tool_results_of(ctx(tool_results=(), last_tool_result=b)) == ()
        assert tool_results_of(ctx()) == ()


class TestTriggers:
    def test_always(self) -> None:
        assert evaluate_injections([define_injection("a", trigger=Always())], ctx()).active_ids == ("a",)

    def test_on_tool_return_checks_the_whole_batch(self) -> None:
        inj = define_injection("hint", trigger=OnToolReturn("fetch"))
        batch = (ToolResult("fetch"), ToolResult("calc"))
        assert evaluate_injections([inj], ctx(tool_results=batch)).active_ids == ("hint",)
        assert evaluate_injections([inj], ctx(tool_results=(ToolResult("calc"),))).active_ids == ()

    def test_on_tool_return_string_is_equality(self) -> None:
        inj = define_injection("hint", trigger=OnToolReturn("fetch"))
        assert evaluate_injections([inj], ctx(tool_results=(ToolResult("prefetch"),))).active_ids == ()

    def test_on_tool_return_regex_is_an_unanchored_search(self) -> None:
        inj = define_injection("hint", trigger=OnToolReturn(re.compile("fetch")))
        assert evaluate_injections([inj], ctx(tool_results=(ToolResult("prefetch_all"),))).active_ids == (
            "hint",
        )

    def test_on_tool_return_reads_last_tool_result_when_no_batch(self) -> None:
        inj = define_injection("hint", trigger=OnToolReturn("fetch"))
        assert evaluate_injections([inj], ctx(last_tool_result=ToolResult("fetch"))).active_ids == ("hint",)

    def test_llm_activated(self) -> None:
        skill = define_skill("billing", body="b")
        assert evaluate_injections([skill], ctx()).active_ids == ()
        assert evaluate_injections([skill], ctx(activated_injection_ids=("billing",))).active_ids == (
            "billing",
        )

    def test_a_raising_predicate_is_skipped_with_its_message(self) -> None:
        inj = define_instruction("i", prompt="p", active_when=boom)
        result = evaluate_injections([inj], ctx())
        assert result.active == ()
        assert [(s.id, s.reason, s.error) for s in result.skipped] == [
            ("i", "predicate-threw", "the predicate exploded")
        ]

    def test_an_unknown_trigger_kind_is_skipped(self) -> None:
        odd = Injection(id="odd", flavor="custom", trigger=object())  # type: ignore[arg-type]
        result = evaluate_injections([odd], ctx())
        assert [(s.id, s.reason) for s in result.skipped] == [("odd", "unknown-trigger-kind")]


class TestOrder:
    """docs/context-model.md §2.1: park → lease → trigger → template gate."""

    def test_park_comes_first_with_the_fixed_sentence(self) -> None:
        inj = define_steering("s", prompt="p")
        result = evaluate_injections([inj], ctx(parked_ids=frozenset({"s"})))
        assert result.active == ()
        assert [(s.id, s.reason, s.error) for s in result.skipped] == [("s", "parked", PARKED_SENTENCE)]

    def test_park_beats_lease(self) -> None:
        inj = define_instruction("i", prompt="p")
        result = evaluate_injections([inj], ctx(parked_ids=frozenset({"i"}), lease_active_ids=("i",)))
        assert [(s.id, s.reason) for s in result.skipped] == [("i", "parked")]

    def test_a_leased_predicate_that_raises_is_still_active_and_never_runs(self) -> None:
        calls: list[int] = []

        def counting_boom(c: InjectionContext) -> bool:
            calls.append(1)
            raise RuntimeError("no")

        inj = define_instruction("i", prompt="p", active_when=counting_boom)
        result = evaluate_injections([inj], ctx(lease_active_ids=("i",)))
        assert result.active_ids == ("i",)
        assert result.skipped == ()
        assert result.leased == {"i"}
        assert calls == []

    def test_a_lease_never_reorders_and_never_duplicates(self) -> None:
        a = define_steering("a", prompt="1")
        b = define_instruction("b", prompt="2", active_when=lambda c: False)
        c = define_steering("c", prompt="3")
        result = evaluate_injections([a, b, c], ctx(lease_active_ids=("c", "b", "a")))
        assert result.active_ids == ("a", "b", "c")

    def test_no_id_is_both_active_and_skipped(self) -> None:
        injections = [
            define_steering("a", prompt="1"),
            define_instruction("b", prompt="2", active_when=boom),
            define_instruction("c", prompt_template="{{actionBudget}}"),
            define_steering("d", prompt="4"),
        ]
        result = evaluate_injections(injections, ctx(parked_ids=frozenset({"d"}), lease_active_ids=("c",)))
        assert result.active_ids == ("a",)
        assert {s.id for s in result.skipped} == {"b", "c", "d"}


class TestProjection:
    def test_tools_are_schemas_tagged_with_the_injection(self) -> None:
        skill = define_skill("zone", body="b", tools=[Tool("get_zone_info")])
        (schema,) = project(skill, ctx()).tools
        assert (schema.name, schema.injection_id) == ("get_zone_info", "zone")

    def test_tool_schemas_are_reused_across_passes_until_parameters_change(self) -> None:
        # Reused schemas spare a validation per pass and let a version 2 trace know them by
        # identity; a parameters mapping changed in place must still reach the next request.
        parameters: dict[str, object] = {"type": "object", "properties": {}}
        skill = define_skill("zone", body="b", tools=[Tool("get_zone_info", parameters=parameters)])
        (first,) = project(skill, ctx()).tools
        (again,) = project(skill, ctx()).tools
        assert again is first
        parameters["required"] = ["zone"]
        (changed,) = project(skill, ctx()).tools
        assert changed is not first
        assert changed.parameters["required"] == ["zone"]
        other = define_skill("other", body="b", tools=skill.tools)  # same tools, another injection id
        (tagged,) = project(other, ctx()).tools
        assert tagged.injection_id == "other"

    def test_declaration(self) -> None:
        decl = define_skill("zone", body="b", tools=[Tool("t")], surface_mode="tool-only").declaration()
        assert (decl.trigger.kind, decl.trigger.via_tool_name, decl.slots, decl.tool_names) == (
            "llm-activated",
            "read_skill",
            ["tools"],
            ["t"],
        )
        decl = define_injection("h", trigger=OnToolReturn(re.compile("^f")), system_prompt="x").declaration()
        assert (decl.trigger.tool_pattern, decl.slots) == ("^f", ["system-prompt"])


class TestStepPointer:
    plans: ClassVar[dict[str, int]] = {"billing": 3}

    def test_rekey_rules(self) -> None:
        fresh = (StepPointer("billing", 1, 3),)
        assert rekey_step_pointer((), None, self.plans) == ()
        assert rekey_step_pointer((), "billing", self.plans) == fresh
        moved = (StepPointer("billing", 2, 3, (1,)),)
        assert rekey_step_pointer(moved, "billing", self.plans) == moved
        assert rekey_step_pointer(moved, "triage", self.plans) == ()
        assert rekey_step_pointer((StepPointer("triage", 1, 2),), "billing", self.plans) == fresh

    def test_step_plans(self) -> None:
        pay = [Tool("pay")]
        steps = [("pay", "a"), ("pay", "b"), ("pay", "c")]
        skills = [define_skill("billing", body="b", tools=pay, steps=steps), define_skill("t", body="t")]
        assert step_plans(skills) == {"billing": 3}
        with pytest.raises(DefinitionError):
            define_skill("x", body="b", tools=pay, steps=[])

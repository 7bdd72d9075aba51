"""Decision trees of a skill map: build refusals, the compiled leaf rules, no cursor, the trace (docs/context-model.md §5.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpdebug.engine.agent import Agent
from fpdebug.engine.injections import InjectionContext, Rule, define_skill, evaluate_injections
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import MemorySink
from fpdebug.engine.skillmap import SkillMap, SkillMapBuilder, branch
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import (
    CursorMoveEvent,
    LlmCallEvent,
    PassEvent,
    RunStartEvent,
    TreeBranchDecl,
    TreeDecl,
)
from tests.demo.helpers import run_events


def builder(*ids: str) -> SkillMapBuilder:
    b = SkillMapBuilder()
    for sid in ids:
        b.skill(define_skill(sid, body=f"{sid} body"))
    return b


def ctx(message: str = "", iteration: int = 1, **kw: object) -> InjectionContext:
    return InjectionContext(iteration, user_message=message, **kw)  # type: ignore[arg-type]


def boom(_: object) -> bool:
    raise RuntimeError("branch exploded")


def support_tree() -> SkillMap:
    return (
        builder("refund", "copy", "shipping", "vip")
        .tree(
            "support",
            branch(
                "billing",
                keywords=["charge", "invoice", "refund"],
                then=[
                    branch("refund", keywords=["refund"], then="refund"),
                    branch("copy", regex=r"\bcopy\b", then="copy"),
                ],
            ),
            branch("shipping", keywords=["parcel"], then="shipping"),
            branch("vip", when=lambda c: c.iteration > 2, then="vip"),
        )
        .build()
    )


def active(m: SkillMap, c: InjectionContext) -> tuple[str, ...]:
    return evaluate_injections(m.injections, c).active_ids


class TestCompiledLeaves:
    def test_a_leaf_is_active_exactly_when_every_predicate_on_its_path_holds(self) -> None:
        m = support_tree()
        assert active(m, ctx("Please refund this charge")) == ("refund",)
        # The leaf's own predicate holds but its parent's does not: not active (a conjunction).
        assert active(m, ctx("a copy please")) == ()
        assert active(m, ctx("a copy of my invoice")) == ("copy",)
        assert active(m, ctx("where is my parcel")) == ("shipping",)
        assert active(m, ctx("hello")) == ()

    def test_siblings_are_not_exclusive_and_other_paths_are_independent(self) -> None:
        m = support_tree()
        both = ctx("refund a copy of the invoice, and my parcel?", iteration=3)
        assert active(m, both) == ("refund", "copy", "shipping", "vip")

    def test_the_compiled_rule_carries_the_path_and_the_tree(self) -> None:
        rule = support_tree().injections[0].trigger
        assert isinstance(rule, Rule) and rule.graph_node
        assert (rule.tree_label, rule.tree_path) == ("support", ("billing", "refund"))
        assert rule.description == "tree support: billing › refund"
        decl = support_tree().injections[0].declaration()
        assert decl.trigger.kind == "rule" and decl.trigger.description == "tree support: billing › refund"

    def test_a_raising_predicate_skips_the_leaves_under_it_as_predicate_threw(self) -> None:
        m = (
            builder("a", "b", "c")
            .tree(
                "t",
                branch("bad", when=boom, then=[branch("x", then="a"), branch("y", then="b")]),
                branch("fine", keywords=["go"], then="c"),
            )
            .build()
        )
        result = evaluate_injections(m.injections, ctx("go"))
        assert result.active_ids == ("c",)
        assert [(s.id, s.reason, s.error) for s in result.skipped] == [
            ("a", "predicate-threw", "branch exploded"),
            ("b", "predicate-threw", "branch exploded"),
        ]

    def test_a_predicate_below_a_failed_branch_is_never_asked(self) -> None:
        m = (
            builder("a")
            .tree("t", branch("no", keywords=["never"], then=[branch("x", when=boom, then="a")]))
            .build()
        )
        result = evaluate_injections(m.injections, ctx("hello"))
        assert result.active_ids == () and result.skipped == ()

    def test_a_tree_has_no_cursor(self) -> None:
        m = support_tree()
        for c in (ctx("refund the charge"), ctx("parcel", iteration=2), ctx("nothing")):
            move = m.explain_next_skill(c)
            assert (move.by, move.to_skill) == ("none", None)
        assert m.reachable_skills(None) == ()  # a leaf is never a hop of the read_skill gate
        assert not m.gate("refund", current_skill_id=None).accepted

    def test_a_tree_beside_an_entry_leaves_the_cursor_to_the_entry(self) -> None:
        m = (
            builder("triage", "refund")
            .entry("triage")
            .tree("t", branch("r", keywords=["refund"], then="refund"))
            .build()
        )
        c = ctx("refund please")
        assert m.explain_next_skill(c).to_skill == "triage"
        assert active(m, c) == ("triage", "refund")

    def test_the_declaration_records_the_tree(self) -> None:
        decl = support_tree().declaration()
        assert builder("a").entry("a").build().declaration().trees is None  # absent when none is declared
        (tree,) = decl.trees or []
        assert isinstance(tree, TreeDecl) and tree.label == "support"
        billing = tree.branches[0]
        assert (billing.label, billing.kind, billing.keywords, billing.leaf) == (
            "billing",
            "keywords",
            ["charge", "invoice", "refund"],
            None,
        )
        assert billing.branches[1] == TreeBranchDecl(
            label="copy", kind="regex", pattern=r"\bcopy\b", leaf="copy"
        )
        assert tree.branches[2].kind == "when" and tree.branches[2].leaf == "vip"


class TestBuildRefusals:
    @pytest.mark.parametrize(
        ("make", "message"),
        [
            (lambda: branch("x", then=[]), "empty branch"),
            (lambda: branch("", then="a"), "non-empty label"),
            (
                lambda: branch("x", keywords=["a"], regex="b", then="a"),
                "at most one of when, keywords, regex",
            ),
            (lambda: branch("x", keywords="refund", then="a"), "a list of words"),
            (lambda: branch("x", regex="a*", then="a"), "matches the empty string"),
            (lambda: branch("x", regex="(", then="a"), "bad regex"),
            (lambda: branch("x", when=3, then="a"), "when must be callable"),  # type: ignore[arg-type]
            (lambda: branch("x", then=["a"]), "a list of branch(...)"),  # type: ignore[list-item]
            (
                lambda: branch("x", then=[branch("y", then="a"), branch("y", then="b")]),
                "two branches are labelled 'y'",
            ),
            (lambda: SkillMapBuilder().tree("t"), "at least one branch"),
        ],
    )
    def test_a_bad_declaration_is_refused_where_it_is_made(self, make: object, message: str) -> None:
        with pytest.raises(DefinitionError, match=message):
            make()  # type: ignore[operator]

    @pytest.mark.parametrize(
        ("declare", "message"),
        [
            (
                lambda b: b.tree("t", branch("x", then="a"), branch("y", then=[branch("z", then="a")])),
                r"leaf 'a' is reached twice \(tree t: x and tree t: y › z\)",
            ),
            (
                lambda b: b.tree("t", branch("x", then="a")).tree("u", branch("x", then="a")),
                "leaf 'a' is reached twice",
            ),
            (lambda b: b.entry("a").tree("t", branch("x", then="a")), "leaf 'a' is also an entry"),
            (
                lambda b: b.entry("b").route("b", "a", on_tool_return="go").tree("t", branch("x", then="a")),
                "leaf 'a' is also the end of a route",
            ),
            (lambda b: b.tree("t", branch("x", then="ghost")), "leaf 'ghost' is not a node of the map"),
            (
                lambda b: b.tree("t", branch("x", then="a")).tree("t", branch("y", then="b")),
                "two decision trees are labelled 't'",
            ),
        ],
    )
    def test_a_tree_that_does_not_fit_the_map_is_refused_at_build(
        self, declare: object, message: str
    ) -> None:
        b = builder("a", "b")
        declare(b)  # type: ignore[operator]
        with pytest.raises(DefinitionError, match=message):
            b.build()


def test_an_agent_run_records_each_leaf_with_its_path_and_no_cursor() -> None:
    m = (
        builder("a", "b")
        .tree(
            "t",
            branch("go", keywords=["go"], then=[branch("now", when=boom, then="a")]),
            branch("stop", keywords=["stop"], then="b"),
        )
        .build()
    )
    sink = MemorySink()
    provider = ScriptedProvider(replies=[ScriptedReply.text("ok"), ScriptedReply.text("ok")])
    agent = Agent("tree").system_prompt("s").skill_map(m)
    agent.run(["stop", "go"], provider=provider, sink=sink)
    passes = [e for e in sink.events if isinstance(e, PassEvent)]
    assert [(p.active_ids, [(r.via, r.path, r.label) for r in p.reasons]) for p in passes] == [
        (["b"], [("tree", ["stop"], "t")]),
        ([], []),
    ]
    assert [(s.id, s.reason) for s in passes[1].skipped] == [("a", "predicate-threw")]
    assert {e.by for e in sink.events if isinstance(e, CursorMoveEvent)} == {"none"}
    start = next(e for e in sink.events if isinstance(e, RunStartEvent))
    assert start.skill_map is not None and (start.skill_map.trees or [])[0].label == "t"


def test_the_decision_tree_demo_takes_one_branch_per_turn(tmp_path: Path) -> None:
    events = run_events("decision-tree", tmp_path)
    passes = [e for e in events if isinstance(e, PassEvent)]
    # Turn 1 takes billing › refund on both passes; turn 2 the other branch, shipping.
    assert [(p.active_ids, [(r.via, r.path) for r in p.reasons]) for p in passes] == [
        (["refund"], [("tree", ["billing", "refund"])]),
        (["refund"], [("tree", ["billing", "refund"])]),
        (["shipping"], [("tree", ["shipping"])]),
        (["shipping"], [("tree", ["shipping"])]),
    ]
    assert [e.by for e in events if isinstance(e, CursorMoveEvent)] == ["none"] * 4


def test_a_leaf_is_not_offered_to_read_skill_and_a_map_of_trees_offers_no_read_skill() -> None:
    only_trees = (
        builder("a", "b").tree("t", branch("x", keywords=["go"], then="a"), branch("y", then="b")).build()
    )
    sink = MemorySink()
    Agent("trees").system_prompt("s").skill_map(only_trees).run(
        "go", provider=ScriptedProvider(replies=[ScriptedReply.text("ok")]), sink=sink
    )
    (call,) = [e for e in sink.events if isinstance(e, LlmCallEvent)]
    assert [t.name for t in call.request.tools] == []
    mixed = builder("triage", "a").entry("triage").tree("t", branch("x", keywords=["go"], then="a")).build()
    sink = MemorySink()
    Agent("mixed").system_prompt("s").skill_map(mixed).run(
        "go", provider=ScriptedProvider(replies=[ScriptedReply.text("ok")]), sink=sink
    )
    (call,) = [e for e in sink.events if isinstance(e, LlmCallEvent)]
    (read_skill,) = [t for t in call.request.tools if t.name == "read_skill"]
    assert "- triage:" in (read_skill.description or "") and "- a:" not in (read_skill.description or "")

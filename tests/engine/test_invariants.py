"""The invariants of docs/context-model.md §11 as property tests over random maps, batches and lease sets."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpdebug.engine.effects import envelope, propose_transition, require_instruction
from fpdebug.engine.engagement import (
    STRENGTH_RANK,
    EngagementPass,
    EngagementPlan,
    MapEngagementRecord,
    MountedMap,
    advance_engagement,
    is_tentative,
    renewal_evidence_of,
    skill_map_plan,
    strength_of_move,
    stronger_of,
    strongest_of,
)
from fpdebug.engine.evaluate import PassInputs, PassSetup, evaluate_pass
from fpdebug.engine.injections import (
    Always,
    Injection,
    InjectionContext,
    LlmActivated,
    OnToolReturn,
    ProposedTransition,
    Rule,
    define_injection,
    define_instruction,
    define_skill,
    evaluate_injections,
)
from fpdebug.engine.leases import InstructionLease, active_lease_ids, prune_leases
from fpdebug.engine.skillmap import MOVE_CAUSES, SkillMap, SkillMapBuilder
from fpdebug.engine.types import Tool, ToolResult

from .harness import Call, Loop

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NODES = ["s0", "s1", "s2", "s3"]
TOOLS = ["t0", "t1", "t2", "x"]
STATUSES = [None, "success", "failure", "denied"]
STRENGTHS = list(STRENGTH_RANK)


def raising(_: object) -> bool:
    raise RuntimeError("boom")


# ----------------------------------------------------------------------------------------------
# Strategies


@st.composite
def skill_maps(draw: st.DrawFn) -> SkillMap:
    count = draw(st.integers(1, len(NODES)))
    nodes = NODES[:count]
    b = SkillMapBuilder()
    for i, sid in enumerate(nodes):
        tools = [Tool(f"own_{sid}")] if draw(st.booleans()) else []
        b.skill(define_skill(sid, body=f"body {i}", tools=tools))
    for sid in draw(st.lists(st.sampled_from(nodes), max_size=3)):
        kind = draw(st.sampled_from(["plain", "true", "false", "raise", "keywords"]))
        if kind == "plain":
            b.entry(sid)
        elif kind == "keywords":
            b.entry(sid, keywords=[draw(st.sampled_from(["zone", "bill"]))])
        else:
            b.entry(sid, when={"true": lambda c: True, "false": lambda c: False, "raise": raising}[kind])
    for _ in range(draw(st.integers(0, 6))):
        src, dst = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(["tool", "status", "model", "when"]))
        if kind == "tool":
            b.route(src, dst, on_tool_return=draw(st.sampled_from(TOOLS)))
        elif kind == "status":
            b.route(src, dst, on_tool_status={draw(st.sampled_from(["success", "failure", "denied"]))})
        elif kind == "when":
            b.route(src, dst, when=raising if draw(st.booleans()) else (lambda r: r.tool_name == "t1"))
        else:
            b.route(src, dst)
    if draw(st.booleans()):
        b.open_skill(define_skill("helper", body="h"))
    return b.build()


results = st.builds(
    ToolResult,
    st.sampled_from([*TOOLS, "own_s0", "own_s1"]),
    st.none(),
    st.one_of(st.none(), st.text("abc", min_size=1, max_size=2)),
    st.sampled_from(STATUSES),
)
batches = st.lists(results, max_size=4).map(tuple)


@st.composite
def calls(draw: st.DrawFn, *, picks: bool = True) -> list[Call]:
    out: list[Call] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(
            st.sampled_from(["plain", "propose", "lease", "pick"] if picks else ["plain", "propose", "lease"])
        )
        name = draw(st.sampled_from([*TOOLS, "own_s0", "own_s1"]))
        if kind == "plain":
            out.append(Call(name, 1, status=draw(st.sampled_from(STATUSES))))
        elif kind == "propose":
            out.append(
                Call(
                    name, envelope("c", propose_transition(draw(st.sampled_from([*NODES, "helper"])), "why"))
                )
            )
        elif kind == "lease":
            word = draw(st.sampled_from(["next-call", "until-skill-exit"]))
            out.append(
                Call(name, envelope("c", require_instruction(draw(st.sampled_from(["i0", "i1"])), word)))
            )
        else:
            out.append(Call("read_skill", draw(st.sampled_from([*NODES, "helper", "ghost"]))))
    return out


def graph_setup(skill_map: SkillMap, *, maps: bool, grace: int = 2) -> PassSetup:
    extra = (
        define_instruction("i0", prompt="zero", active_when=lambda c: False),
        define_instruction("i1", prompt="one"),
    )
    plan = skill_map_plan(skill_map, renewal_grace=grace) if maps else None
    return PassSetup((*skill_map.injections, *extra), skill_map=skill_map, engagement=plan)


@st.composite
def catalogs(draw: st.DrawFn) -> list[Injection]:
    out: list[Injection] = []
    for i in range(draw(st.integers(0, 8))):
        kind = draw(
            st.sampled_from(
                ["always", "rule-true", "rule-false", "rule-raise", "tool", "llm", "template", "odd"]
            )
        )
        iid = f"j{i}"
        if kind == "always":
            out.append(define_injection(iid, trigger=Always(), system_prompt="p"))
        elif kind.startswith("rule"):
            pred = {"rule-true": lambda c: True, "rule-false": lambda c: False, "rule-raise": raising}[kind]
            out.append(define_injection(iid, trigger=Rule(pred), system_prompt="p"))
        elif kind == "tool":
            out.append(
                define_injection(iid, trigger=OnToolReturn(draw(st.sampled_from(TOOLS))), system_prompt="p")
            )
        elif kind == "llm":
            out.append(define_injection(iid, trigger=LlmActivated(), system_prompt="p"))
        elif kind == "template":
            out.append(define_instruction(iid, prompt_template="{{actionBudget}} left"))
        else:
            out.append(Injection(id=iid, flavor="custom", trigger=object()))  # type: ignore[arg-type]
    return out


ids = st.lists(st.sampled_from([f"j{i}" for i in range(8)]), max_size=5)


# ----------------------------------------------------------------------------------------------
# 1. One pass per iteration, one resolver call per pass; the stored cursor is the move's `to`.


@FAST
@given(skill_maps(), st.lists(calls(), min_size=1, max_size=5), st.booleans())
def test_one_resolver_call_per_pass_and_the_cursor_is_the_moves_to(
    skill_map: SkillMap, script: list[list[Call]], maps: bool
) -> None:
    loop = Loop(graph_setup(skill_map, maps=maps), user_message="zone bill")
    for batch in [*script, None]:
        before = skill_map.resolver_calls
        result = loop.step(batch)
        assert skill_map.resolver_calls == before + 1
        assert result.cursor_move is not None
        assert result.next_skill_cursor == result.cursor_move.to_skill == result.context.cursor_move.to_skill  # type: ignore[union-attr]
        assert loop.current_skill_id == result.cursor_move.to_skill
        # The active set never disagrees with the cursor: a route-target node rides iff it holds it.
        for injection in skill_map.injections:
            trig = injection.trigger
            if isinstance(trig, Rule) and trig.description == "cursor" and result.parked_ids is None:
                assert (injection.id in result.evaluation.active_ids) == (
                    injection.id == result.next_skill_cursor
                )


# ----------------------------------------------------------------------------------------------
# 2 + 3. Lease validity is computed; the sweep runs after serving; death is permanent.


@FAST
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s0", "s1", "s2", None]),  # the tenant of the pass
            st.lists(st.sampled_from(["next-call", "until-skill-exit"]), max_size=2),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_leases_serve_exactly_their_computed_passes(passes: list[tuple[str | None, list[str]]]) -> None:
    record: tuple[InstructionLease, ...] = ()
    tenants: dict[int, str | None] = {}
    grants: list[InstructionLease] = []
    served_on: dict[str, list[int]] = {}
    for iteration, (tenant, grant_specs) in enumerate(passes, start=1):
        tenants[iteration] = tenant
        served = active_lease_ids(record, iteration, tenant)
        record = prune_leases(record, iteration, tenant)  # the sweep, AFTER serving
        # A next-call lease is gone from the record by the end of the very pass it serves.
        assert all(lease.iteration + 1 > iteration for lease in record if lease.delivery_lease == "next-call")
        for sid in served:
            served_on.setdefault(sid, []).append(iteration)
        # Grants during this iteration's tool calls carry the tenant of this (advanced) pass.
        for word in grant_specs:
            lease = InstructionLease(f"L{len(grants)}", word, "tool", iteration, skill_id=tenant)  # type: ignore[arg-type]
            grants.append(lease)
            record = (*prune_leases(record, iteration, tenant), lease)
    last = len(passes)
    for lease in grants:
        got = served_on.get(lease.instruction_id, [])
        g = lease.iteration
        if lease.delivery_lease == "next-call":
            assert got == ([g + 1] if g + 1 <= last else [])
        else:
            expected = []
            for k in range(g + 1, last + 1):
                if tenants[k] != lease.skill_id:
                    break  # once the tenure breaks, nothing the cursor does later revives it
                expected.append(k)
            assert got == expected


@FAST
@given(skill_maps(), st.lists(st.tuples(st.sampled_from(NODES), st.booleans()), min_size=2, max_size=8))
def test_a_dead_until_skill_exit_lease_never_serves_again(
    skill_map: SkillMap, moves: list[tuple[str, bool]]
) -> None:
    setup = graph_setup(skill_map, maps=False)
    leases: tuple[InstructionLease, ...] | None = None
    cursor: str | None = None
    dead: set[str] = set()
    granted: dict[str, str | None] = {}
    for iteration, (target, grant) in enumerate(moves, start=1):
        result = evaluate_pass(
            setup,
            PassInputs(
                iteration=iteration,
                current_skill_id=cursor,
                pending_skill_pick=target,
                instruction_leases=leases,
            ),
        )
        cursor = result.next_skill_cursor
        served = set(result.lease_active_ids or ())
        assert not served & dead
        alive = {lease.instruction_id for lease in result.next_instruction_leases or ()}
        dead |= set(granted) - alive
        leases = result.next_instruction_leases
        if grant:
            lid = f"L{iteration}"
            granted[lid] = cursor
            leases = (
                *(leases or ()),
                InstructionLease(lid, "until-skill-exit", "t", iteration, skill_id=cursor),
            )
    assert all(lid not in {lease.instruction_id for lease in leases or ()} for lid in dead)


# ----------------------------------------------------------------------------------------------
# 4. Evaluator order: declaration order, no duplicates, never both active and skipped, never raises.


@settings(max_examples=150, deadline=None)
@given(catalogs(), ids, ids, ids, batches, st.one_of(st.none(), st.integers(1, 5)))
def test_the_evaluator_never_raises_and_keeps_its_order(
    catalog: list[Injection],
    parked: list[str],
    leased: list[str],
    activated: list[str],
    batch: tuple[ToolResult, ...],
    budget: int | None,
) -> None:
    ctx = InjectionContext(
        2,
        max_iterations=budget,
        tool_results=batch,
        activated_injection_ids=tuple(activated),
        parked_ids=frozenset(parked) or None,
        lease_active_ids=tuple(leased) or None,
    )
    result = evaluate_injections(catalog, ctx)
    order = [inj.id for inj in catalog]
    active = list(result.active_ids)
    skipped = [s.id for s in result.skipped]
    assert len(set(active)) == len(active)
    assert active == [i for i in order if i in active]
    assert not set(active) & set(skipped)
    assert sorted(active + skipped) == sorted(set(active + skipped))
    assert not set(active) & set(parked)
    assert {s.reason for s in result.skipped} <= {
        "predicate-threw",
        "unknown-trigger-kind",
        "unknown-fact",
        "parked",
    }
    for inj in catalog:
        if inj.id in leased and inj.id not in parked and not (inj.templated and budget is None):
            assert inj.id in active  # a lease admits without evaluating the trigger


# ----------------------------------------------------------------------------------------------
# 5. The ladder.


@given(st.sampled_from(STRENGTHS), st.sampled_from(STRENGTHS), st.text(max_size=12))
def test_the_strength_ladder(a: str, b: str, clause: str) -> None:
    best = stronger_of(a, b)  # type: ignore[arg-type]
    assert STRENGTH_RANK[best] == max(STRENGTH_RANK[a], STRENGTH_RANK[b])
    if STRENGTH_RANK[a] >= STRENGTH_RANK[b]:
        assert best == a
    assert is_tentative(a) == (STRENGTH_RANK[a] <= 2)  # type: ignore[arg-type]
    if clause not in MOVE_CAUSES:
        assert strength_of_move(clause) == "structural"
    assert strength_of_move("stay") == strength_of_move("none") == "assumed"


# ----------------------------------------------------------------------------------------------
# 6 + 7. Engagement is orthogonal to position; the idle test; only strong evidence recovers.

MAP = MountedMap("m", ("a", "b"), ("own",))
random_passes = st.builds(
    lambda node, by, tools, pick, accepted, served, witness: (
        node,
        by,
        tools,
        pick,
        accepted,
        served,
        witness,
    ),
    st.sampled_from(["a", "b", "elsewhere", None]),
    st.sampled_from([None, "stay", "none", "entry", "intent", "route", "model-pick", "teleport"]),
    st.lists(st.sampled_from(["own", "foreign"]), max_size=2),
    st.sampled_from([None, "a", "zz"]),
    st.lists(st.sampled_from(["a", "b", "zz"]), max_size=2, unique=True),
    st.sampled_from([(), ("a",), ("zz",)]),
    st.sampled_from([None, "wit"]),
)
# Idle passes (served, a foreign tool, no evidence) are rare at random; mix them in so that maps
# actually reach their grace, park, and face recovery attempts.
idle_pass = st.just(("a", "stay", ["foreign"], None, [], ("a",), None))
guess_pass = st.sampled_from(
    [("b", "entry", [], None, [], (), "wit"), ("a", "intent", ["foreign"], None, [], ("a",), None)]
)
engagement_passes = st.one_of(idle_pass, idle_pass, guess_pass, random_passes)


@settings(max_examples=150, deadline=None)
@given(st.lists(engagement_passes, min_size=1, max_size=12), st.integers(1, 3), st.booleans())
def test_engagement_laws(steps: list[tuple], grace: int, non_parkable: bool) -> None:  # type: ignore[type-arg]
    mounted = replace(MAP, non_parkable=non_parkable)
    plan = EngagementPlan((mounted,), renewal_grace=grace)
    prior: tuple[MapEngagementRecord, ...] = ()
    founding: tuple[object, ...] | None = None
    for iteration, (node, by, tools, pick, accepted, served, witness) in enumerate(steps, start=1):
        pass_ = EngagementPass(
            iteration,
            current_node=node,
            move_by=by,
            witness=witness,
            tool_results=tuple(ToolResult(t) for t in tools),
            pending_skill_pick=pick,
            accepted_skill_picks=tuple(accepted),
            served_last_pass=served,
        )
        before = prior[0] if prior else None
        adv = advance_engagement(plan, prior, pass_)
        after = adv.next[0] if adv.next else None
        s = strongest_of(renewal_evidence_of(mounted, pass_))
        if after is not None:
            if founding is None:
                founding = (after.founded_by, after.founded_at, after.founded_on)
            assert (after.founded_by, after.founded_at, after.founded_on) == founding  # written once
        if before is None or after is None:
            prior = adv.next
            continue
        changes = {c.kind: c for c in adv.changes}
        if before.standing == "engaged" and after.standing == "parked":
            assert is_tentative(before.by) and after.idle >= grace and not non_parkable
            assert (after.at, after.at_by, after.at_since) == (before.at, before.at_by, before.at_since)
            assert after.since == iteration and "parked" in changes
        if before.standing == "parked" and after.standing == "engaged":
            assert s in ("explicit", "structural") and changes["engaged"].reengaged
        if before.standing == "parked" and after.standing == "parked":
            assert after == before
        # `since` moves only with the standing (park, re-engage); upgrades and tenant changes keep it.
        assert (after.since != before.since) == (after.standing != before.standing)
        if before.standing == after.standing == "engaged":
            tenant_changed = "engaged" in changes and changes["engaged"].tenant_changed
            if not tenant_changed:
                assert STRENGTH_RANK[after.by] >= STRENGTH_RANK[before.by]  # never falls because time passed
        prior = adv.next


@FAST
@given(skill_maps(), st.lists(calls(picks=False), min_size=1, max_size=6))
def test_parking_never_moves_the_cursor(skill_map: SkillMap, script: list[list[Call]]) -> None:
    with_maps = Loop(graph_setup(skill_map, maps=True, grace=1), user_message="zone")
    without = Loop(graph_setup(skill_map, maps=False), user_message="zone")
    for batch in [*script, None]:
        a, b = with_maps.step(batch), without.step(batch)
        assert a.next_skill_cursor == b.next_skill_cursor
        assert a.cursor_move == b.cursor_move


# ----------------------------------------------------------------------------------------------
# 8. Renewal evidence is per pass: the turn-cumulative activations never change it.


@FAST
@given(
    skill_maps(), batches, st.lists(st.sampled_from([*NODES, "helper"]), max_size=4), st.sampled_from(NODES)
)
def test_renewal_evidence_ignores_the_cumulative_activations(
    skill_map: SkillMap, batch: tuple[ToolResult, ...], activated: list[str], cursor: str
) -> None:
    setup = graph_setup(skill_map, maps=True)
    base = PassInputs(
        iteration=3,
        current_skill_id=cursor,
        tool_results=batch,
        accepted_skill_picks=(),
        served_injection_ids=(),
        map_engagement=(),
    )
    plain = evaluate_pass(setup, base)
    busy = evaluate_pass(setup, replace(base, activated_injection_ids=tuple(activated)))
    assert plain.engagement is not None and busy.engagement is not None
    assert plain.engagement.evidence == busy.engagement.evidence


# ----------------------------------------------------------------------------------------------
# 9. Cursor precedence, against the text of §5.3.


@settings(max_examples=120, deadline=None)
@given(
    skill_maps(),
    batches,
    st.sampled_from([None, *NODES]),
    st.sampled_from([None, *NODES]),
    st.sampled_from([None, *NODES]),
    st.lists(st.sampled_from(NODES), max_size=2),
)
def test_cursor_precedence(
    skill_map: SkillMap,
    batch: tuple[ToolResult, ...],
    cur: str | None,
    proposal: str | None,
    pick: str | None,
    activated: list[str],
) -> None:
    ctx = InjectionContext(
        2,
        current_skill_id=cur,
        tool_results=batch,
        pending_skill_pick=pick,
        pending_tool_transition=ProposedTransition(proposal) if proposal else None,
        activated_injection_ids=tuple(activated),
        user_message="zone",
    )
    move = skill_map.explain_next_skill(ctx)
    entry_ids = list(dict.fromkeys(e.skill_id for e in skill_map.entries))
    if cur is None:
        assert move.from_skill is None
        if move.by == "entry":
            assert move.to_skill in entry_ids
        elif move.by == "tool-proposal":
            assert move.to_skill == proposal in entry_ids
        elif move.by == "model-pick":
            assert move.to_skill in entry_ids and (move.to_skill == pick or move.to_skill in activated)
        else:
            assert (move.by, move.to_skill) == ("none", None)
        return
    edges = [r for r in skill_map.routes if r.from_skill == cur and r.deterministic]
    firsts = []
    for res in batch:
        hit = next((e for e in edges if e.judge(res) == "fired"), None)
        if hit is not None:
            firsts.append((res, hit.to_skill))
    if firsts:
        assert (move.by, move.to_skill, move.from_skill) == ("route", firsts[0][1], cur)
        losers = [t for _, t in firsts[1:] if t != firsts[0][1]]
        assert [p.target for p in (move.conflict.losers if move.conflict else [])] == losers
    elif proposal is not None and proposal != cur:
        assert (move.by, move.to_skill) == ("tool-proposal", proposal)
    elif pick is not None and pick != cur:
        assert (move.by, move.to_skill) == ("model-pick", pick)
    else:
        assert (move.by, move.to_skill) == ("stay", cur)


# ----------------------------------------------------------------------------------------------
# 10. Features unused add nothing.


@FAST
@given(
    catalogs(), batches, st.integers(1, 6), st.lists(st.sampled_from([f"j{i}" for i in range(8)]), max_size=3)
)
def test_unused_features_leave_no_state(
    catalog: list[Injection], batch: tuple[ToolResult, ...], iteration: int, activated: list[str]
) -> None:
    result = evaluate_pass(
        PassSetup(tuple(catalog)),
        PassInputs(iteration=iteration, tool_results=batch, activated_injection_ids=tuple(activated)),
    )
    assert result.cursor_move is None and result.next_skill_cursor is None and result.reachable is None
    assert (
        result.next_instruction_leases is None
        and result.lease_active_ids is None
        and result.lease_prune is None
    )
    assert (
        result.engagement is None
        and result.next_served_injection_ids is None
        and result.parked_tool_names is None
    )
    assert result.next_step_pointer is None and result.route_conflict is None and result.reroutes == ()
    fields = result.pass_fields()
    assert (
        fields["lease_active_ids"] is None and fields["served_ids"] is None and fields["parked_ids"] is None
    )

"""A built :class:`SkillMap`: the nodes with compiled triggers, and the cursor resolver (docs/context-model.md §5.3)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Literal

from fpdebug.engine.injections import Always, Injection, InjectionContext, Rule, tool_results_of
from fpdebug.engine.skillmap.edges import Entry, Route
from fpdebug.engine.skillmap.gate import SkillPick, gate_skill_pick
from fpdebug.engine.skillmap.moves import CursorMove
from fpdebug.engine.skillmap.tree import DecisionTree, TreeLeaf
from fpdebug.engine.types import ToolResult
from fpdebug.trace.schema import ConflictParty, RouteConflict, SkillMapDecl


class SkillMap:
    """A built skill map: nodes with compiled triggers, entries, routes, open skills, the resolver.

    Immutable once built (the only state is the resolver's call counter and its one-slot memo).
    """

    __slots__ = (
        "_calls",
        "_entries",
        "_entry_ids",
        "_entry_mode",
        "_injections",
        "_leaves",
        "_memo",
        "_node_ids",
        "_open",
        "_routes",
        "_trees",
    )

    def __init__(
        self,
        nodes: Sequence[Injection],
        entries: Sequence[Entry],
        routes: Sequence[Route],
        open_skills: Sequence[Injection],
        entry_mode: Literal["relevance", "read"] | None = None,
        *,
        trees: Sequence[DecisionTree] = (),
        leaves: Mapping[str, TreeLeaf] | None = None,
    ) -> None:
        self._entry_mode = entry_mode
        self._trees = tuple(trees)
        self._leaves = dict(leaves or {})
        self._node_ids = tuple(node.id for node in nodes)
        self._entries = tuple(entries)
        self._entry_ids = tuple(dict.fromkeys(entry.skill_id for entry in entries))
        self._routes = tuple(routes)
        self._open = tuple(open_skills)
        self._calls = 0
        self._memo: tuple[InjectionContext, CursorMove] | None = None
        self._injections = tuple(self._compile(node) for node in nodes) + self._open

    # -- declaration -----------------------------------------------------------------------

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Every node id, in declaration order."""
        return self._node_ids

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Entries in declaration order."""
        return self._entries

    @property
    def entry_ids(self) -> tuple[str, ...]:
        """The entered nodes, in declaration order (no duplicates)."""
        return self._entry_ids

    @property
    def entry_mode(self) -> Literal["relevance", "read"] | None:
        """Exclusive entries (docs/context-model.md §5.2): ``relevance`` (the best-scored entry is
        entered), ``read`` (no cold-start entry: the model reads one), or ``None`` (ordinary entries)."""
        return self._entry_mode

    @property
    def routes(self) -> tuple[Route, ...]:
        """Routes in declaration order."""
        return self._routes

    @property
    def open_skill_ids(self) -> tuple[str, ...]:
        """Open skills, in declaration order."""
        return tuple(skill.id for skill in self._open)

    @property
    def trees(self) -> tuple[DecisionTree, ...]:
        """Decision trees, in declaration order."""
        return self._trees

    @property
    def tree_leaves(self) -> Mapping[str, TreeLeaf]:
        """Each decision-tree leaf's skill id → the leaf and its path."""
        return dict(self._leaves)

    @property
    def injections(self) -> tuple[Injection, ...]:
        """The nodes with compiled triggers (declaration order), then the open skills."""
        return self._injections

    @property
    def resolver_calls(self) -> int:
        """How many times :meth:`explain_next_skill` ran (instrumentation for invariant 1)."""
        return self._calls

    def declaration(self) -> SkillMapDecl:
        """The trace's :class:`~fpdebug.trace.schema.SkillMapDecl`."""
        return SkillMapDecl(
            nodes=list(self._node_ids),
            entries=[entry.declaration() for entry in self._entries],
            edges=[route.declaration() for route in self._routes],
            open_skills=list(self.open_skill_ids),
            trees=[tree.declaration() for tree in self._trees] or None,
            entry_mode=self._entry_mode,
        )

    # -- compiled triggers (docs/context-model.md §5.2) -----------------------------------------------------

    def _compile(self, node: Injection) -> Injection:
        leaf = self._leaves.get(node.id)
        if leaf is not None:  # a tree leaf: the conjunction of its path, no cursor
            rule = Rule(
                leaf.holds,
                description=leaf.describe(),
                graph_node=True,
                tree_path=leaf.labels,
                tree_label=leaf.tree,
            )
            return replace(node, trigger=rule)
        own = [entry for entry in self._entries if entry.skill_id == node.id]
        if own and self._entry_mode is not None:  # an exclusive entry: active only under the cursor
            return replace(
                node, trigger=Rule(self._cursor_rule(node.id), description="entry", graph_node=True)
            )
        if any(not entry.conditional for entry in own):
            return replace(node, trigger=Always())
        if own:
            return replace(
                node, trigger=Rule(self._entry_rule(node.id, own), description="entry", graph_node=True)
            )
        if any(route.to_skill == node.id and route.deterministic for route in self._routes):
            return replace(
                node, trigger=Rule(self._cursor_rule(node.id), description="cursor", graph_node=True)
            )
        return node  # model-edge-only nodes keep their llm-activated trigger

    def _entry_rule(self, node_id: str, entries: Sequence[Entry]) -> Callable[[InjectionContext], bool]:
        def on_entry(ctx: InjectionContext) -> bool:
            # The entry's own condition runs first so that a raising predicate is reported.
            matched = any(entry.match(ctx)[0] for entry in entries)
            cursor = self.next_skill(ctx)
            if cursor == node_id:
                return True
            if cursor is not None:
                return False
            return matched

        return on_entry

    def _cursor_rule(self, node_id: str) -> Callable[[InjectionContext], bool]:
        def on_cursor(ctx: InjectionContext) -> bool:
            return self.next_skill(ctx) == node_id

        return on_cursor

    # -- the resolver (docs/context-model.md §5.3) ----------------------------------------------------------

    def next_skill(self, ctx: InjectionContext) -> str | None:
        """The cursor after this pass: the pass's resolved move, else one memoized resolver call."""
        return self.move_for(ctx).to_skill

    def move_for(self, ctx: InjectionContext) -> CursorMove:
        """The move of the pass ``ctx`` belongs to, resolving at most once per context object."""
        if ctx.cursor_move is not None:
            return ctx.cursor_move
        memo = self._memo
        if memo is not None and memo[0] is ctx:
            return memo[1]
        move = self.explain_next_skill(ctx)
        self._memo = (ctx, move)
        return move

    def explain_next_skill(self, ctx: InjectionContext) -> CursorMove:
        """Resolve the cursor for one pass, with the precedence of docs/context-model.md §5.3. Never raises.

        Args:
            ctx: The pass context (``current_skill_id`` is the cursor before the pass).

        Returns:
            The :class:`CursorMove`.
        """
        self._calls += 1
        cur = ctx.current_skill_id
        turn_route = ctx.turn_route
        if ctx.iteration == 1 and turn_route is not None and turn_route.to_skill is not None:
            return CursorMove(
                by=turn_route.by,
                to_skill=turn_route.to_skill,
                from_skill=turn_route.from_skill,
                witness=turn_route.witness,
                score=turn_route.score,
                offered=turn_route.offered,
                near_tie=turn_route.near_tie,
            )
        proposal = ctx.pending_tool_transition.target_skill_id if ctx.pending_tool_transition else None
        pick = ctx.pending_skill_pick
        if cur is None:
            return self._cold_start(ctx, proposal, pick)
        move = self._declared_edges(ctx, cur)
        if move is not None:
            return move
        if proposal is not None and proposal != cur:
            return CursorMove(by="tool-proposal", to_skill=proposal, from_skill=cur)
        if pick is not None and pick != cur:
            return CursorMove(by="model-pick", to_skill=pick, from_skill=cur)
        return CursorMove(by="stay", to_skill=cur, from_skill=cur)

    def _cold_start(self, ctx: InjectionContext, proposal: str | None, pick: str | None) -> CursorMove:
        if self._entry_mode != "read" and ctx.turn_route is None:
            for entry in self._entries:
                try:
                    matched, witness = entry.match(ctx)
                except Exception:  # a raising predicate is no match here
                    continue
                if matched:
                    return CursorMove(by="entry", to_skill=entry.skill_id, witness=witness)
        if proposal is not None and proposal in self._entry_ids:
            return CursorMove(by="tool-proposal", to_skill=proposal)
        if pick is not None and pick in self._entry_ids:
            return _resolving_menu(CursorMove(by="model-pick", to_skill=pick), ctx)
        for entry_id in self._entry_ids:
            if entry_id in ctx.activated_injection_ids:
                return _resolving_menu(CursorMove(by="model-pick", to_skill=entry_id), ctx)
        return CursorMove(by="none")

    def _declared_edges(self, ctx: InjectionContext, cur: str) -> CursorMove | None:
        edges = [route for route in self._routes if route.from_skill == cur and route.deterministic]
        if not edges:
            return None
        winner: tuple[ToolResult, Route] | None = None
        losers: list[tuple[ToolResult, Route]] = []
        fired: set[int] = set()
        closed: set[int] = set()
        for result in tool_results_of(ctx):  # results in CALL order
            hit: Route | None = None
            for index, edge in enumerate(edges):  # edges in DECLARATION order
                verdict = edge.judge(result)
                if verdict == "closed":
                    closed.add(index)
                elif verdict == "fired":
                    fired.add(index)
                    hit = edge
                    break
            if hit is None:
                continue
            if winner is None:
                winner = (result, hit)
            elif hit.to_skill != winner[1].to_skill:
                losers.append((result, hit))
        if winner is None:
            return None

        def party(pair: tuple[ToolResult, Route]) -> ConflictParty:
            return ConflictParty(
                tool_call_id=pair[0].tool_call_id, tool_name=pair[0].tool_name, target=pair[1].to_skill
            )

        shut = tuple(
            f"{edge.from_skill}→{edge.to_skill}: {edge.describe_guard()}"
            for index, edge in enumerate(edges)
            if index in closed and index not in fired
        )
        return CursorMove(
            by="route",
            to_skill=winner[1].to_skill,
            from_skill=cur,
            conflict=RouteConflict(winner=party(winner), losers=[party(p) for p in losers])
            if losers
            else None,
            guard=winner[1].describe_guard(),
            guards_closed=shut or None,
        )

    # -- reachability (docs/context-model.md §5.4) ----------------------------------------------------------

    def reachable_skills(self, cur: str | None) -> tuple[str, ...]:
        """Graph hops: every entry without a cursor; else successors then entries, minus ``cur``."""
        if cur is None:
            return self._entry_ids
        successors = [route.to_skill for route in self._routes if route.from_skill == cur]
        return tuple(sid for sid in dict.fromkeys([*successors, *self._entry_ids]) if sid != cur)

    def allowed_skill_ids(self, cur: str | None) -> tuple[str, ...]:
        """The hops a pick or a proposal may name (open skills are NOT eligible)."""
        return self.reachable_skills(cur)

    def admissible_skill_ids(self, cur: str | None) -> tuple[str, ...]:
        """What the read_skill gate admits from ``cur``: the hops, then the open skills."""
        return tuple(dict.fromkeys([*self.reachable_skills(cur), *self.open_skill_ids]))

    def superseded_entries(self, ctx: InjectionContext) -> tuple[str, ...]:
        """Conditional entries, other than the resolved cursor, whose own condition matched.

        ``()`` when the resolver has no cursor; a raising ``when`` is left out (it is reported as
        ``predicate-threw`` instead).
        """
        cursor = self.next_skill(ctx)
        if cursor is None:
            return ()
        out: list[str] = []
        for entry in self._entries:
            if not entry.conditional or entry.skill_id == cursor or entry.skill_id in out:
                continue
            try:
                matched, _ = entry.match(ctx)
            except Exception:  # reported as predicate-threw by the evaluator
                continue
            if matched:
                out.append(entry.skill_id)
        return tuple(out)

    # -- the gate ------------------------------------------------------------------------------

    def gate(
        self,
        requested_id: str,
        *,
        current_skill_id: str | None,
        parked_member_ids: Collection[str] = (),
        posture: Literal["rails", "guard"] | None = None,
        menu: Collection[str] | None = None,
    ) -> SkillPick:
        """:func:`gate_skill_pick` with this map's hops and open skills."""
        return gate_skill_pick(
            requested_id,
            hops=self.allowed_skill_ids(current_skill_id),
            open_skill_ids=self.open_skill_ids,
            parked_member_ids=parked_member_ids,
            current_skill_id=current_skill_id,
            posture=posture,
            menu=menu,
        )


def _resolving_menu(move: CursorMove, ctx: InjectionContext) -> CursorMove:
    """A cold-start model pick resolves a menu outstanding to the model: it records the menu, and
    ``declined_offer`` when it picked off it (docs/context-model.md §5.1)."""
    route = ctx.turn_route
    if route is None or route.to_skill is not None or route.offered is None:
        return move
    declined = True if move.to_skill not in route.offered else None
    return replace(move, offered=route.offered, declined_offer=declined, near_tie=route.near_tie)

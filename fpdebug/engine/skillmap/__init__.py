"""The skill map: a builder for entries, routes and open skills; the cursor resolver; the read_skill gate.

Build a map with :class:`SkillMapBuilder`::

    skill_map = (
        SkillMapBuilder()
        .skill(triage).skill(billing).skill(refund)
        .entry("triage")                                        # unconditional
        .entry("billing", keywords=["invoice", "bill"])         # a data matcher (records a witness)
        .route("triage", "billing", on_tool_return="lookup_invoice")
        .route("billing", "refund", on_tool_return="lookup_invoice",
               guard={"amount": {"gt": 0}, "state": {"in": ["paid"]}})
        .route("billing", "triage", on_tool_status={"denied"})
        .route("refund", "billing")                             # no condition: a model-only edge
        .open_skill(helper)
        .tree("shipping", branch("parcel", keywords=["parcel"], then="tracking"))  # no cursor
        .build()
    )

:meth:`SkillMap.injections` holds the nodes with their compiled triggers (docs/context-model.md §5.2), then the
open skills. :meth:`SkillMap.explain_next_skill` is the resolver with the precedence of
docs/context-model.md §5.3; :meth:`SkillMap.next_skill` is its memoized form that compiled triggers read, so a pass
makes exactly one resolver call (invariant 1).

The package's modules: :mod:`~fpdebug.engine.skillmap.builder` (the builder),
:mod:`~fpdebug.engine.skillmap.graph` (the built map and its resolver),
:mod:`~fpdebug.engine.skillmap.edges` (entries and routes), :mod:`~fpdebug.engine.skillmap.guards`
(guards and their satisfiability), :mod:`~fpdebug.engine.skillmap.tree` (decision trees), :mod:`~fpdebug.engine.skillmap.moves` (the cursor move) and
:mod:`~fpdebug.engine.skillmap.gate` (the read_skill gate).
"""

from fpdebug.engine.skillmap.builder import SkillMapBuilder
from fpdebug.engine.skillmap.edges import Entry, Route, declare_entry
from fpdebug.engine.skillmap.gate import PickCarriers, SkillPick, apply_skill_pick, gate_skill_pick
from fpdebug.engine.skillmap.graph import SkillMap
from fpdebug.engine.skillmap.guards import Guard, GuardOp
from fpdebug.engine.skillmap.moves import (
    MOVE_CAUSES,
    WITNESS_LIMIT,
    CursorMove,
    RouteConflictReport,
    bounded_witness,
)
from fpdebug.engine.skillmap.tree import Branch, DecisionTree, TreeLeaf, branch

__all__ = [
    "MOVE_CAUSES",
    "WITNESS_LIMIT",
    "Branch",
    "CursorMove",
    "DecisionTree",
    "Entry",
    "Guard",
    "GuardOp",
    "PickCarriers",
    "Route",
    "RouteConflictReport",
    "SkillMap",
    "SkillMapBuilder",
    "SkillPick",
    "TreeLeaf",
    "apply_skill_pick",
    "bounded_witness",
    "branch",
    "declare_entry",
    "gate_skill_pick",
]

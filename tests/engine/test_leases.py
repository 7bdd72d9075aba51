"""The three lease laws of docs/context-model.md §4.3, pinned rule by rule."""

from __future__ import annotations

import pytest

from fpdebug.engine.leases import (
    InstructionLease,
    PendingToolTransition,
    active_lease_ids,
    proposal_for,
    prune_leases,
    pruned_leases,
    tenant_of,
)
from fpdebug.errors import DefinitionError
from fpdebug.trace.schema import LeaseRecord, PrunedLease


def nc(instruction_id: str, grant: int) -> InstructionLease:
    return InstructionLease(instruction_id, "next-call", "fetch", grant)


def use(instruction_id: str, skill_id: str | None, grant: int = 1) -> InstructionLease:
    return InstructionLease(instruction_id, "until-skill-exit", "policy", grant, skill_id=skill_id)


class TestTenantOf:
    def test_cursor_wins(self) -> None:
        assert tenant_of("billing", ["triage", "helper"]) == "billing"

    def test_without_cursor_the_last_activation_holds_the_tenure(self) -> None:
        assert tenant_of(None, ["triage", "helper"]) == "helper"

    def test_nobody(self) -> None:
        assert tenant_of(None, []) is None
        assert tenant_of(None, None) is None


class TestActiveLeaseIds:
    def test_next_call_serves_only_the_pass_after_the_grant(self) -> None:
        lease = nc("wire-format", 3)
        assert active_lease_ids([lease], 3, None) == ()
        assert active_lease_ids([lease], 4, None) == ("wire-format",)
        assert active_lease_ids([lease], 5, None) == ()

    def test_until_skill_exit_serves_while_the_tenant_matches(self) -> None:
        lease = use("policy-note", "triage")
        assert active_lease_ids([lease], 7, "triage") == ("policy-note",)
        assert active_lease_ids([lease], 7, "billing") == ()
        assert active_lease_ids([lease], 7, None) == ()

    def test_none_tenant_matches_a_lease_granted_without_tenant(self) -> None:
        assert active_lease_ids([use("x", None)], 2, None) == ("x",)
        assert active_lease_ids([use("x", None)], 2, "triage") == ()

    def test_lease_order_and_no_duplicates(self) -> None:
        leases = [use("b", "s"), nc("a", 1), nc("b", 1), use("c", "s")]
        assert active_lease_ids(leases, 2, "s") == ("b", "a", "c")

    def test_no_record(self) -> None:
        assert active_lease_ids(None, 2, "s") == ()


class TestPruneLeases:
    def test_next_call_survives_the_tool_calls_site_of_its_granting_iteration(self) -> None:
        assert prune_leases([nc("w", 4)], 4, None) == (nc("w", 4),)

    def test_next_call_is_removed_by_the_sweep_of_the_pass_it_serves(self) -> None:
        # The pass of iteration grant+1 serves it AND its sweep removes it (follow the code,
        # not the docstring's "older than the previous iteration").
        lease = nc("w", 4)
        assert active_lease_ids([lease], 5, None) == ("w",)
        assert prune_leases([lease], 5, None) == ()

    def test_until_skill_exit_dies_when_the_tenant_changes(self) -> None:
        lease = use("p", "triage")
        assert prune_leases([lease], 3, "triage") == (lease,)
        assert prune_leases([lease], 3, "billing") == ()

    def test_a_tenantless_lease_dies_on_the_first_pass_with_a_tenant(self) -> None:
        lease = use("p", None)
        assert prune_leases([lease], 2, None) == (lease,)
        assert prune_leases([lease], 3, "triage") == ()

    def test_order_is_kept(self) -> None:
        leases = [use("a", "s"), nc("b", 9), use("c", "t"), use("d", "s")]
        assert [lease.instruction_id for lease in prune_leases(leases, 9, "s")] == ["a", "b", "d"]

    def test_pruned_carries_the_reason(self) -> None:
        leases = [nc("a", 1), use("b", "triage"), use("c", "billing")]
        pruned = pruned_leases(leases, 2, "billing")
        assert [(p.lease.instruction_id, p.reason) for p in pruned] == [("a", "spent"), ("b", "tenure-ended")]
        survivors = prune_leases(leases, 2, "billing")
        assert len(pruned) + len(survivors) == len(leases)

    def test_death_is_permanent_once_swept(self) -> None:
        # Cyclic graph triage → billing → triage: without the sweep `skill_id == tenant` would
        # revive the lease on re-entry; with it the record no longer holds the lease.
        record: tuple[InstructionLease, ...] = (use("p", "triage"),)
        for iteration, tenant in [(2, "triage"), (3, "billing"), (4, "triage")]:
            served = active_lease_ids(record, iteration, tenant)
            record = prune_leases(record, iteration, tenant)
            assert served == (("p",) if iteration == 2 else ())
        assert record == ()


class TestCarriers:
    def test_empty_instruction_id_is_refused(self) -> None:
        with pytest.raises(DefinitionError):
            InstructionLease("", "next-call", "t", 1)

    def test_unknown_delivery_lease_is_refused(self) -> None:
        with pytest.raises(DefinitionError, match="not one of"):
            InstructionLease("x", "forever", "t", 1)  # type: ignore[arg-type]
        with pytest.raises(DefinitionError, match="not one of"):  # unhashable: refused, not a TypeError
            InstructionLease("x", ["next-call"], "t", 1)  # type: ignore[arg-type]

    def test_records_for_the_trace(self) -> None:
        lease = InstructionLease("w", "next-call", "fetch", 2, skill_id="triage", tool_call_id="c1")
        assert lease.record() == LeaseRecord(
            instruction_id="w",
            delivery_lease="next-call",
            skill_id="triage",
            tool_name="fetch",
            tool_call_id="c1",
            iteration=2,
        )
        (pruned,) = pruned_leases([lease], 3, "triage")
        assert isinstance(pruned.record(), PrunedLease)
        assert pruned.record().reason == "spent"

    def test_a_proposal_is_valid_only_on_the_next_pass(self) -> None:
        pending = PendingToolTransition("billing", "lookup", "customer asked about an invoice", 3)
        assert proposal_for(pending, 3) is None
        assert proposal_for(pending, 4) is pending
        assert proposal_for(pending, 5) is None
        assert proposal_for(None, 4) is None

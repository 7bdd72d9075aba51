"""Lease lifetimes of an agentfootprint recording, read from its snapshot's commit log.

agentfootprint emits no event when a lease is granted, serves a call or is pruned: leases live in the
scope key ``instructionLeases`` and only the footprintjs commit log (``snapshot.commitLog``) shows their
writes. The log is delta-only, so a commit appears only when a stage wrote something:

- a ``ToolCalls`` commit that writes ``instructionLeases`` is a grant (and the grant-time prune,
  site ``tool-calls``); the same commit bumps ``iteration`` to N+1, so it belongs to iteration N;
- an ``Injection Engine*`` commit that writes it is the Evaluate sweep of the pass whose iteration
  the scope holds (site ``evaluate``): the survivors are written, the rest were pruned.

A removed lease's reason follows the lease laws (docs/context-model.md §4.3): a ``next-call`` lease is
``spent``, an ``until-skill-exit`` lease's tenure ended. What a pass served is the record before its
sweep, restricted to the pass's active ids, less what the same sweep removed because the tenure
ended (a spent ``next-call`` lease is served by the very pass that removes it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fpdebug.trace.schema import LeaseRecord, PrunedLease

__all__ = ["LeaseLedger", "LeasePruneFact", "read_lease_ledger"]


@dataclass(frozen=True, slots=True)
class LeasePruneFact:
    """Leases one commit removed: where, against which tenant, and what survived."""

    site: str
    """``evaluate`` (a pass's sweep) or ``tool-calls`` (the prune beside a grant)."""
    iteration: int
    """The pass (evaluate) or the granting iteration (tool-calls)."""
    tenant: str | None
    """The tenant the sweep compared against (the cursor after the pass's advance)."""
    pruned: tuple[PrunedLease, ...]
    """The removed leases, each with its reason."""
    survivors: tuple[LeaseRecord, ...]
    """What the commit wrote."""


@dataclass(slots=True)
class LeaseLedger:
    """What the commit log says about leases, by iteration."""

    used: bool = False
    """Some commit wrote ``instructionLeases`` (a lease record exists from the first write on)."""
    first_write_iteration: int | None = None
    """The iteration of the first write: passes after it have a lease record."""
    grants: list[tuple[int, LeaseRecord]] = field(default_factory=list)
    """Each granted lease with the iteration of the granting commit, in commit order."""
    prunes: list[LeasePruneFact] = field(default_factory=list)
    """Each commit that removed leases, in commit order."""
    before_pass: dict[int, tuple[LeaseRecord, ...]] = field(default_factory=dict)
    """The lease record as the pass of each iteration found it (before its sweep)."""
    warnings: list[str] = field(default_factory=list)
    """Lease records the log holds that this contract cannot hold."""

    def record_before(self, iteration: int) -> tuple[LeaseRecord, ...] | None:
        """The lease record before the sweep of pass ``iteration``; ``None`` while no lease record exists."""
        if self.first_write_iteration is None or iteration <= self.first_write_iteration:
            return self.before_pass.get(iteration) if iteration in self.before_pass else None
        return self.before_pass.get(iteration, ())

    def sweep_of(self, iteration: int) -> LeasePruneFact | None:
        """The evaluate-site prune of pass ``iteration``, if its sweep removed anything."""
        return next((p for p in self.prunes if p.site == "evaluate" and p.iteration == iteration), None)

    def grant_prune_of(self, iteration: int) -> LeasePruneFact | None:
        """The tool-calls-site prune of the grants of ``iteration``, if it removed anything."""
        return next((p for p in self.prunes if p.site == "tool-calls" and p.iteration == iteration), None)

    def grant_for(self, instruction_id: str, tool_call_id: str | None) -> LeaseRecord | None:
        """The granted lease of one accepted ``require-instruction`` effect."""
        for _, lease in self.grants:
            if lease.instruction_id == instruction_id and lease.tool_call_id == tool_call_id:
                return lease
        return None

    def served_on(self, iteration: int, active_ids: list[str]) -> list[str] | None:
        """The ids a lease served on pass ``iteration`` (``None`` while no lease record exists)."""
        before = self.record_before(iteration)
        if before is None:
            return None
        sweep = self.sweep_of(iteration)
        ended = (
            {(p.instruction_id, p.tool_call_id) for p in sweep.pruned if p.reason == "tenure-ended"}
            if sweep
            else set()
        )
        served: list[str] = []
        for lease in before:
            key = (lease.instruction_id, lease.tool_call_id)
            if lease.instruction_id in active_ids and key not in ended and lease.instruction_id not in served:
                served.append(lease.instruction_id)
        return served

    def serving_lease(self, iteration: int, instruction_id: str) -> LeaseRecord | None:
        """The lease that served ``instruction_id`` on pass ``iteration`` (the first in record order)."""
        for lease in self.record_before(iteration) or ():
            if lease.instruction_id == instruction_id:
                return lease
        return None


def read_lease_ledger(snapshot: object) -> LeaseLedger:
    """Replay ``snapshot.commitLog`` and collect every write of ``instructionLeases``.

    A snapshot without a commit log yields an empty ledger (no lease record: nothing is invented).
    """
    replay = _Replay()
    commits = snapshot.get("commitLog") if isinstance(snapshot, dict) else None
    for commit in commits if isinstance(commits, list) else ():
        if isinstance(commit, dict):
            replay.apply(commit)
    return replay.ledger


class _Replay:
    """The scope keys the ledger needs, replayed commit by commit (the log is delta-only)."""

    def __init__(self) -> None:
        self.ledger = LeaseLedger()
        self.iteration = 1
        self.cursor: str | None = None
        self.leases: tuple[LeaseRecord, ...] | None = None  # None until the first write: no record

    def apply(self, commit: dict[str, Any]) -> None:
        written = _written(commit)
        site = _site(commit)
        if site == "evaluate" and self.leases is not None:
            self.ledger.before_pass.setdefault(self.iteration, self.leases)
        if "currentSkillId" in written:
            value = written["currentSkillId"]
            self.cursor = value if isinstance(value, str) else None
        if "instructionLeases" in written:
            self._write(commit, site, _leases(written["instructionLeases"], self.ledger.warnings))
        if isinstance(written.get("iteration"), int):
            self.iteration = written["iteration"]
            if self.leases is not None:
                # The commit that bumps the iteration is the previous batch's: the next pass starts here.
                self.ledger.before_pass[self.iteration] = self.leases

    def _write(self, commit: dict[str, Any], site: str | None, after: tuple[LeaseRecord, ...]) -> None:
        ledger, before = self.ledger, self.leases or ()
        granted = [lease for lease in after if lease not in before] if site == "tool-calls" else []
        ledger.grants.extend((self.iteration, lease) for lease in granted)
        removed = tuple(lease for lease in before if lease not in after)
        if removed and site is not None:
            # A sweep compares against the pass's tenant (the cursor it landed on); the grant-time
            # prune against the tenant the new lease was granted under.
            tenant = self.cursor if site == "evaluate" else (granted[0].skill_id if granted else None)
            pruned = tuple(_pruned(lease) for lease in removed)
            ledger.prunes.append(LeasePruneFact(site, self.iteration, tenant, pruned, after))
        elif removed:
            ledger.warnings.append(
                f"commit {commit.get('idx')} ({commit.get('stage')}) removed leases outside a "
                "ToolCalls or Injection Engine stage; not shown as a prune"
            )
        if not ledger.used:
            ledger.used, ledger.first_write_iteration = True, self.iteration
        self.leases = after


def _written(commit: dict[str, Any]) -> dict[str, Any]:
    # footprintjs writes a key either as an overwrite or as an update; either way the value is the new one.
    written: dict[str, Any] = {}
    for key in ("updates", "overwrite"):
        part = commit.get(key)
        if isinstance(part, dict):
            written.update(part)
    return written


def _site(commit: dict[str, Any]) -> str | None:
    stage = str(commit.get("stage") or "")
    stage_id = str(commit.get("stageId") or "")
    if stage == "ToolCalls" or stage_id == "tool-calls":
        return "tool-calls"
    if stage.startswith("Injection Engine") or stage_id == "sf-injection-engine":
        return "evaluate"
    return None


def _leases(value: object, warnings: list[str]) -> tuple[LeaseRecord, ...]:
    if not isinstance(value, list):
        return ()
    leases: list[LeaseRecord] = []
    for item in value:
        lease = _lease(item)
        if lease is None:
            warnings.append(f"a lease in the commit log is not one this contract holds: {item!r:.120}")
        elif lease not in leases:
            leases.append(lease)
    return tuple(leases)


def _lease(item: object) -> LeaseRecord | None:
    if not isinstance(item, dict):
        return None
    delivery = item.get("deliveryLease")
    instruction = item.get("instructionId")
    tool = item.get("toolName")
    granted = item.get("iteration")
    if delivery not in ("next-call", "until-skill-exit") or not isinstance(instruction, str):
        return None
    if not isinstance(tool, str) or not isinstance(granted, int):
        return None
    skill = item.get("skillId")
    call = item.get("toolCallId")
    return LeaseRecord(
        instruction_id=instruction,
        delivery_lease=delivery,
        skill_id=skill if isinstance(skill, str) else None,
        tool_name=tool,
        tool_call_id=call if isinstance(call, str) else None,
        iteration=granted,
    )


def _pruned(lease: LeaseRecord) -> PrunedLease:
    # The lease laws (docs/context-model.md §4.3): a removed next-call lease was spent; an
    # until-skill-exit lease is removed only when the tenant changed.
    if lease.delivery_lease == "next-call":
        return PrunedLease(**lease.model_dump(), reason="spent")
    return PrunedLease(**lease.model_dump(), reason="tenure-ended")

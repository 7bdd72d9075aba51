"""What was available at the explained call but NOT sent: the missing-context candidates.

In this order (docs/backtracking.md §9.3): injections the pass skipped or parked, tools taken off the
wire because their map is parked, leases that ended before the call, then declared injections that
were excluded from the agent or whose trigger did not fire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.models import READ_SKILL, MissingPiece
from fpdebug.trace.model import LeaseLifetime
from fpdebug.trace.schema import InjectionDecl, PassEvent

InjectionMissing = Literal["skipped", "parked", "lease-ended", "not-triggered", "excluded"]
"""Why an injection was not sent."""


@dataclass
class Missing:
    """Finds the missing-context candidates of one explained call."""

    context: CallContext

    def all(self, sent: set[str]) -> list[MissingPiece]:
        """Every candidate, each injection once; ``sent`` holds the injection ids the call did send."""
        pass_line, event = self.context.pass_ if self.context.pass_ else (None, None)
        active = set(event.active_ids) if event is not None else set()
        found = self._skipped(pass_line, event) if event is not None else []
        listed = {candidate.injection_id for candidate in found if candidate.injection_id is not None}
        found.extend(self._parked_tools())
        ended = self._ended_leases(active | listed)
        found.extend(ended.values())
        listed.update(ended)
        found.extend(self._undeclared(active | listed | sent, pass_line))
        return found

    def _skipped(self, pass_line: int | None, event: PassEvent) -> list[MissingPiece]:
        """The injections the pass skipped or parked."""
        found: list[MissingPiece] = []
        for skipped in event.skipped:
            reason: Literal["parked", "skipped"] = "parked" if skipped.reason == "parked" else "skipped"
            detail = (
                f"parked: {skipped.error}"
                if reason == "parked" and skipped.error
                else f"skipped ({skipped.reason}{': ' + skipped.error if skipped.error else ''})"
            )
            found.append(self.injection(skipped.id, reason, detail, pass_line))
        return found

    def _parked_tools(self) -> list[MissingPiece]:
        """The tools the engagement kernel took off the wire because their map is parked."""
        engagement = self.context.index.engagement_of(self.context.turn, self.context.iteration)
        if engagement is None:
            return []
        found: list[MissingPiece] = []
        for name in engagement[1].parked_tool_names:
            schema = self.context.known_tool(name)
            found.append(
                MissingPiece(
                    id=f"missing:tool:{name}",
                    kind="tool",
                    tool_name=name,
                    reason="tool-parked",
                    detail=f"tool {name!r} was taken off the wire: its map is parked",
                    text=(f"{schema.name}: {schema.description}" if schema.description else schema.name)
                    if schema
                    else None,
                    restorable=schema is not None,
                    line=engagement[0],
                )
            )
        return found

    def _ended_leases(self, listed: set[str]) -> dict[str, MissingPiece]:
        """The leased injections whose lease was pruned before the call (the last lease of each)."""
        ended: dict[str, MissingPiece] = {}
        for lease in self.context.index.run.leases:
            if lease.instruction_id in listed or not self._ended_before_call(lease):
                continue
            state = "spent" if lease.prune_reason == "spent" else "ended its tenure"
            when = f" at iteration {lease.pruned_iteration}" if lease.pruned_iteration is not None else ""
            tenant = lease.tenant if lease.tenant is not None else "none"
            detail = (
                f"its {lease.delivery_lease} lease (granted by `{lease.tool_name}` call "
                f"{lease.tool_call_id} at iteration {lease.granted_iteration}, tenant {tenant}) "
                f"{state}{when}"
            )
            ended[lease.instruction_id] = self.injection(
                lease.instruction_id, "lease-ended", detail, lease.prune_line
            )
        return ended

    def _ended_before_call(self, lease: LeaseLifetime) -> bool:
        call_line = self.context.call_line
        if lease.prune_line is None or lease.prune_line > call_line:
            return False
        return lease.grant_line is None or lease.grant_line <= call_line

    def _undeclared(self, listed: set[str], pass_line: int | None) -> list[MissingPiece]:
        """Declared injections not yet listed: excluded from the agent, or not triggered."""
        run_start = self.context.run_start
        if run_start is None:
            return []
        excluded: set[str] = set()
        without = run_start.options.get("without")
        if isinstance(without, dict):
            excluded = {str(i) for i in without.get("injection_ids", [])}
        found: list[MissingPiece] = []
        for decl in run_start.injections:
            if decl.id in listed:
                continue
            if decl.id in excluded:
                detail = "excluded from the agent (Agent.without)"
                found.append(self.injection(decl.id, "excluded", detail, self.context.run_start_line))
                continue
            found.append(self.injection(decl.id, "not-triggered", self.not_triggered(decl), pass_line))
        return found

    def not_triggered(self, decl: InjectionDecl) -> str:
        """Why a declared injection's trigger did not fire on the explained pass, in one clause."""
        trigger = decl.trigger
        if trigger.graph_node:
            move = self.context.index.move_of(self.context.turn, self.context.iteration)
            where = move[1].to_skill if move is not None else None
            if where is None:
                return "a skill-map node off the cursor"
            return f"a skill-map node; the cursor was on {where}"
        match trigger.kind:
            case "rule":
                described = f" ({trigger.description})" if trigger.description else ""
                return f"its rule did not hold{described}"
            case "on-tool-return":
                waited = trigger.tool_name or trigger.tool_pattern or "its tool"
                return f"no {waited!r} result in the previous batch"
            case "llm-activated":
                return f"not activated by {trigger.via_tool_name or READ_SKILL}"
            case "always":
                return "declared always, yet not active on this pass"
        return "not active on this pass"

    def injection(
        self, injection_id: str, reason: InjectionMissing, detail: str, line: int | None
    ) -> MissingPiece:
        """An injection candidate: what a restoration would send, and whether a rerun can."""
        decl = self.context.decl(injection_id)
        texts: list[str] = []
        if decl is not None and decl.system_prompt:
            texts.append(decl.system_prompt)
        if decl is not None and decl.messages:
            texts.extend(m.content for m in decl.messages)
        restorable = decl is not None and bool(texts) and not decl.templated
        memory = decl is not None and decl.flavor == "memory"
        kind: Literal["injection", "memory"] = "memory" if memory else "injection"
        return MissingPiece(
            id=f"missing:injection:{injection_id}",
            kind=kind,
            injection_id=injection_id,
            flavor=decl.flavor if decl else None,
            reason=reason,
            detail=detail,
            text="\n".join(texts) or None,
            restorable=restorable,
            line=line,
        )

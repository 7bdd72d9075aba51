"""The chains back: from the call that read a piece to the declaration it was born in.

Each hop is one record of the trace, read right to left from the answer (docs/backtracking.md §9.2)::

    READ call ← LANDED slot ← ALLOWED admission ← (GRANTED ← RETURNED ← ASKED …) ← BORN

A chain stops at the LLM call that ASKED for a tool: why that call asked is that call's provenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.models import (
    PARK_CARD_ID,
    READ_SKILL,
    Admission,
    CallRef,
    CursorOrigin,
    Hop,
    HopVerb,
)
from fpdebug.backtrack.provenance.words import admission_words, call_words, cursor_words, engagement_words

_FACTORY_WORDS = {
    "fact": "fact",
    "steering": "steering",
    "instructions": "instruction",
    "skill": "skill",
    "memory": "memory",
    "rag": "rag",
    "custom": "injection",
}
"""What a declaration is called in a BORN hop, by flavor (the factory that declared it)."""


@dataclass
class Chains:
    """Builds the hops of every chain of one explained call; cuts the long ones at ``max_hops``."""

    context: CallContext
    max_hops: int

    def born_injection(self, injection_id: str) -> Hop:
        """Where an injection was born: its declaration in ``run_start`` (the park card: the engagement)."""
        decl = self.context.decl(injection_id)
        if injection_id == PARK_CARD_ID:
            engagement = self.context.index.engagement_of(self.context.turn, self.context.iteration)
            line = engagement[0] if engagement else None
            return self.context.hop(
                "BORN",
                "the park card, written by the engagement kernel for this pass (maps plan in run_start)",
                line=line,
                ref=injection_id,
            )
        if decl is None:
            self.context.flag("untracked-sources", f"injection {injection_id!r} is not declared in run_start")
            return self.context.hop(
                "BORN", f"injection {injection_id!r} (not declared in run_start)", ref=injection_id
            )
        what = _FACTORY_WORDS.get(decl.flavor, "injection")
        trigger = decl.trigger.kind + (" (skill-map node)" if decl.trigger.graph_node else "")
        return self.context.hop(
            "BORN",
            f"{what} {decl.id!r} declared in run_start ({decl.flavor}, trigger {trigger})",
            line=self.context.run_start_line,
            ref=decl.id,
        )

    def born_tool(self, tool_name: str, injection_id: str | None) -> Hop:
        """Where a tool was born: its injection's, the agent's or the skill map's declaration."""
        if injection_id is not None:
            return self.context.hop(
                "BORN",
                f"tool {tool_name!r} of injection {injection_id!r}, declared in run_start",
                line=self.context.run_start_line,
                ref=tool_name,
            )
        if self.context.is_agent_tool(tool_name):
            return self.context.hop(
                "BORN",
                f"agent tool {tool_name!r} declared in run_start",
                line=self.context.run_start_line,
                ref=tool_name,
            )
        if tool_name == READ_SKILL:
            return self.context.hop(
                "BORN",
                "the skill map's built-in read_skill tool (skill map in run_start)",
                line=self.context.run_start_line,
                ref=tool_name,
            )
        owner = self.context.tool_owner(tool_name)
        if owner is not None:
            return self.context.hop(
                "BORN",
                f"tool {tool_name!r} of injection {owner!r}, declared in run_start",
                line=self.context.run_start_line,
                ref=tool_name,
            )
        self.context.flag("untracked-sources", f"tool {tool_name!r} is declared nowhere in run_start")
        return self.context.hop("BORN", f"tool {tool_name!r} (not declared in run_start)", ref=tool_name)

    def call_hops(self, ref: CallRef, *, verb: HopVerb = "RETURNED") -> list[Hop]:
        """RETURNED (the result) ← ASKED (the LLM call) ← OFFERED (how the tool was on offer then)."""
        hops: list[Hop] = []
        if ref.result_line is not None:
            hops.append(
                self.context.hop(
                    verb, f"{call_words(ref)} (tool_result)", line=ref.result_line, ref=ref.tool_call_id
                )
            )
        else:
            self.context.flag("untracked-sources", f"the result of {call_words(ref)} is not in the trace")
            hops.append(
                self.context.hop(
                    verb, f"{call_words(ref)} (its tool_result is not in the trace)", ref=ref.tool_call_id
                )
            )
        if ref.asked_line is None:
            self.context.flag("no-llm-call-ids", f"no llm_call asked for {call_words(ref)}")
            return hops
        hops.append(
            self.context.hop(
                "ASKED",
                f"{self.context.call_label(ref.asked_line)} asked for it; explain that call "
                f"with --call {self.context.index.seq_of(ref.asked_line)}",
                line=ref.asked_line,
            )
        )
        asked = self.context.index.call_at(ref.asked_line)
        schema = next((t for t in asked.request.tools if t.name == ref.tool_name), None) if asked else None
        if schema is None:
            hops.append(
                self.context.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} was not among that call's tools",
                    level=1,
                    line=ref.asked_line,
                )
            )
        elif schema.injection_id is not None:
            hops.append(
                self.context.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} was offered by injection {schema.injection_id!r} on that call",
                    level=1,
                    line=ref.asked_line,
                    ref=schema.injection_id,
                )
            )
        elif ref.tool_name == READ_SKILL:
            hops.append(
                self.context.hop(
                    "OFFERED",
                    "read_skill is offered by the skill map on every call",
                    level=1,
                    line=ref.asked_line,
                )
            )
        else:
            hops.append(
                self.context.hop(
                    "OFFERED",
                    f"{ref.tool_name!r} is an agent tool, offered on every call",
                    level=1,
                    line=ref.asked_line,
                )
            )
        return hops

    def cursor_hops(self, cursor: CursorOrigin, *, level: int = 0) -> list[Hop]:
        """MOVED, then the tool call that moved the cursor (a route, a pick, a proposal), if one did."""
        hops = [
            self.context.hop(
                "MOVED", cursor_words(cursor), line=cursor.move_line, level=level, ref=cursor.skill_id
            )
        ]
        ref = cursor.fired_by or cursor.picked_by
        if ref is not None and cursor.by in ("route", "model-pick", "tool-proposal"):
            hops.extend(
                hop.model_copy(update={"level": max(hop.level, level)}) for hop in self.call_hops(ref)
            )
        return hops

    def admission_hops(self, injection_id: str, admission: Admission) -> list[Hop]:
        """ALLOWED and what it points back to (a lease, a call, the cursor, the map), each step once."""
        allowed = admission_words(admission)
        if admission.via == "cursor" and admission.cursor is not None:
            allowed = (
                f"the cursor stands on {admission.cursor.skill_id}: a skill-map node rides while "
                "the cursor is on it"
            )
        hops = [self.context.hop("ALLOWED", allowed, line=admission.pass_line, ref=injection_id)]
        if admission.via == "lease" and admission.lease is not None:
            lease = admission.lease
            tenant = lease.tenant if lease.tenant is not None else "none"
            hops.append(
                self.context.hop(
                    "GRANTED",
                    f"{lease.delivery_lease} lease on {lease.instruction_id!r} granted to tenant {tenant}",
                    line=lease.grant_line,
                    ref=lease.granted_by.tool_call_id,
                )
            )
            hops.extend(self.call_hops(lease.granted_by))
        elif admission.via in ("on-tool-return", "llm-activated") and admission.activation is not None:
            hops.extend(self.call_hops(admission.activation))
        elif admission.via == "cursor" and admission.cursor is not None:
            hops.extend(self.cursor_hops(admission.cursor))
        if admission.via != "cursor" and admission.cursor is not None:
            hops.extend(self.cursor_hops(admission.cursor, level=1))
        if admission.engagement is not None:
            standing = admission.engagement
            hops.append(
                self.context.hop(
                    "ENGAGED",
                    engagement_words(standing),
                    line=standing.line,
                    level=0 if admission.via == "park-card" else 1,
                    ref=standing.map_id,
                )
            )
        # The cursor's pick is often the very call that activated the piece: say each step once.
        unique: list[Hop] = []
        seen: set[tuple[str, int | None, str | None]] = set()
        for hop in hops:
            key = (hop.verb, hop.line, hop.ref)
            if hop.line is None or key not in seen:
                seen.add(key)
                unique.append(hop)
        return unique

    def bounded(self, chain: list[Hop]) -> list[Hop]:
        """``chain`` cut to ``max_hops`` (its BORN hop kept), flagged ``slice-truncated`` when cut."""
        if len(chain) <= self.max_hops:
            return chain
        self.context.flag("slice-truncated", f"a chain was cut at {self.max_hops} hops (max_hops)")
        cut = chain[: self.max_hops - 2]
        return [
            *cut,
            Hop(verb="TRUNCATED", text=f"{len(chain) - len(cut) - 1} more hop(s) cut (max_hops)"),
            chain[-1],
        ]

    def read_hop(self) -> Hop:
        """READ: the explained call read the piece."""
        return self.context.hop(
            "READ", self.context.call_label(self.context.call_line), line=self.context.call_line
        )

    def landed_hop(self, text: str, *, ref: str | None = None) -> Hop:
        """LANDED: the slot of the explained request the piece rode in."""
        return self.context.hop("LANDED", text, line=self.context.call_line, ref=ref)

    def born_chain(self, landed: str, born: str, *, line: int | None) -> list[Hop]:
        """READ, LANDED, then BORN at ``line``: the chain of a message piece born where it was written."""
        return [self.read_hop(), self.landed_hop(landed), self.context.hop("BORN", born, line=line)]

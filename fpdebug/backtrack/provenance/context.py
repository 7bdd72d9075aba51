"""The explained call and what every part of the chain builder looks up about it.

One :class:`CallContext` per provenance: the call, its run's declarations, the pass that built its
request, the run index, and the honesty flags raised while the chains are walked (the first note of
each flag is kept, so the order the builder walks in is the order the flags are reported in).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fpdebug.backtrack.provenance.index import RunIndex
from fpdebug.backtrack.provenance.models import HonestyFlagName, Hop, HopVerb
from fpdebug.trace.model import RunModel
from fpdebug.trace.schema import InjectionDecl, LlmCallEvent, PassEvent, RunStartEvent, ToolSchema


@dataclass
class CallContext:
    """The explained ``llm_call`` and the records around it, with the lookups the builder shares."""

    model: RunModel
    index: RunIndex
    call_line: int
    call: LlmCallEvent
    run_start: RunStartEvent | None
    pass_: tuple[int, PassEvent] | None
    flags: dict[str, str] = field(default_factory=dict)
    _known_tools: list[ToolSchema] | None = None

    @property
    def turn(self) -> int | None:
        """The explained call's turn."""
        return self.call.turn

    @property
    def iteration(self) -> int:
        """The explained call's iteration (0 when the call names none)."""
        return self.call.iteration or 0

    @property
    def run_start_line(self) -> int | None:
        """The run's ``run_start`` record, where declarations are BORN."""
        return self.index.run.start_line

    def decl(self, injection_id: str) -> InjectionDecl | None:
        """The injection's declaration in ``run_start``, if there is one."""
        if self.run_start is None:
            return None
        return next((d for d in self.run_start.injections if d.id == injection_id), None)

    def flavor(self, injection_id: str) -> str:
        """The injection's declared flavor; a recalled chunk's ``rag``/``memory``; else ``custom``."""
        decl = self.decl(injection_id)
        if decl is not None:
            return decl.flavor
        recalled = (
            s.source
            for s in self.call.request.system_prompt
            if s.retrieval and s.injection_id == injection_id
        )
        return next(recalled, "custom")

    def tool_owner(self, tool_name: str) -> str | None:
        """The declared injection that offers ``tool_name``, if one does."""
        if self.run_start is None:
            return None
        return next((d.id for d in self.run_start.injections if tool_name in d.tool_names), None)

    def is_agent_tool(self, tool_name: str) -> bool:
        """Whether the agent itself declares ``tool_name`` in ``run_start``."""
        return self.run_start is not None and any(t.name == tool_name for t in self.run_start.tools)

    def flag(self, name: HonestyFlagName, note: str) -> None:
        """Raise an honesty flag (docs/backtracking.md §9.1); its first note is the one kept."""
        self.flags.setdefault(name, note)

    def hop(
        self, verb: HopVerb, text: str, *, line: int | None = None, level: int = 0, ref: str | None = None
    ) -> Hop:
        """A hop, stamped with the seq, turn and iteration of the record on ``line``."""
        record = self.model.record(line) if line is not None else None
        return Hop(
            verb=verb,
            text=text,
            level=level,
            line=line,
            seq=getattr(record, "seq", None),
            turn=getattr(record, "turn", None),
            iteration=getattr(record, "iteration", None),
            ref=ref,
        )

    def call_label(self, line: int | None) -> str:
        """``llm_call #3 (seq 12, turn 1, iteration 3)`` for the call on ``line``."""
        call = self.index.call_at(line)
        if call is None:
            return "an llm_call (not found)"
        return f"llm_call #{call.call_index} (seq {call.seq}, turn {call.turn}, iteration {call.iteration})"

    def known_tool(self, name: str) -> ToolSchema | None:
        """The schema of ``name`` among :meth:`known_tools`."""
        for schema in self.known_tools():
            if schema.name == name:
                return schema
        return None

    def known_tools(self) -> list[ToolSchema]:
        """Every tool schema the run declared or offered up to the call, first seen first (cached)."""
        if self._known_tools is not None:
            return self._known_tools
        seen: dict[str, ToolSchema] = {}
        if self.run_start is not None:
            for schema in self.run_start.tools:
                seen.setdefault(schema.name, schema)
        for _, call in self.index.calls:
            for schema in call.request.tools:
                seen.setdefault(schema.name, schema)
        self._known_tools = list(seen.values())
        return self._known_tools

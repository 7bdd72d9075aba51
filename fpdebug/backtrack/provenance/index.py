"""What a provenance needs of the run before the explained call, read once."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from fpdebug.backtrack.provenance.models import CallRef
from fpdebug.trace.model import Iteration, Run, RunModel
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EngagementEvent,
    LlmCallEvent,
    PassEvent,
    RecallEvent,
    ToolResultEvent,
    TurnStartEvent,
)


@dataclass
class RunIndex:
    """What the provenance needs of the run before the explained call, read once.

    ``results`` by tool call id and ``calls`` up to the explained call; ``untracked`` lists the records
    in that span that could not be read (an ``untracked-sources`` flag each).
    """

    model: RunModel
    run: Run
    call_line: int
    results: dict[str, tuple[int, ToolResultEvent]] = field(default_factory=dict)
    calls: list[tuple[int, LlmCallEvent]] = field(default_factory=list)
    turn_starts: list[tuple[int, TurnStartEvent]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, model: RunModel, run: Run, call_line: int) -> RunIndex:
        """Index ``run`` up to ``call_line``."""
        index = cls(model, run, call_line)
        for turn in run.turns:
            if turn.start_line is not None and turn.start_line < call_line:
                start = model.record(turn.start_line)
                if isinstance(start, TurnStartEvent):
                    index.turn_starts.append((turn.start_line, start))
            for iteration in turn.iterations:
                if iteration.first_line > call_line:
                    continue
                for line in iteration.tool_result_lines:
                    if line < call_line:
                        record = model.record(line)
                        if isinstance(record, ToolResultEvent):
                            index.results[record.tool_call_id] = (line, record)
                        else:
                            index.untracked.append(f"line {line} (a tool result) is not a valid record")
                for line in iteration.llm_lines:
                    if line <= call_line:
                        record = model.record(line)
                        if isinstance(record, LlmCallEvent):
                            index.calls.append((line, record))
                        else:
                            index.untracked.append(f"line {line} (an llm_call) is not a valid record")
        index.calls.sort(key=lambda pair: pair[0])
        return index

    def iteration(self, turn: int | None, number: int | None) -> Iteration | None:
        if turn is None or number is None:
            return None
        return self.run.iteration(turn, number)

    def record_at(self, line: int | None, kind: type[BaseModel]) -> BaseModel | None:
        if line is None:
            return None
        record = self.model.record(line)
        return record if isinstance(record, kind) else None

    def recall_of(self, turn: int | None, recall_id: str) -> tuple[int, RecallEvent] | None:
        """The ``recall`` record of source ``recall_id`` in ``turn`` (its memory READ, on iteration 1)."""
        iteration = self.iteration(turn, 1)
        if iteration is None:
            return None
        for line in iteration.lines_of("recall"):
            record = self.record_at(line, RecallEvent)
            if isinstance(record, RecallEvent) and record.recall_id == recall_id:
                return line, record
        return None

    def pass_of(self, turn: int | None, number: int | None) -> tuple[int, PassEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.pass_line if iteration is not None else None
        record = self.record_at(line, PassEvent)
        return (line, record) if line is not None and isinstance(record, PassEvent) else None

    def move_of(self, turn: int | None, number: int | None) -> tuple[int, CursorMoveEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.cursor_line if iteration is not None else None
        record = self.record_at(line, CursorMoveEvent)
        return (line, record) if line is not None and isinstance(record, CursorMoveEvent) else None

    def engagement_of(self, turn: int | None, number: int | None) -> tuple[int, EngagementEvent] | None:
        iteration = self.iteration(turn, number)
        line = iteration.engagement_line if iteration is not None else None
        record = self.record_at(line, EngagementEvent)
        return (line, record) if line is not None and isinstance(record, EngagementEvent) else None

    def batch(self, turn: int | None, number: int | None) -> list[tuple[int, ToolResultEvent]]:
        """The tool results of one iteration's batch, in call order."""
        iteration = self.iteration(turn, number)
        if iteration is None:
            return []
        found: list[tuple[int, ToolResultEvent]] = []
        for line in iteration.tool_result_lines:
            record = self.model.record(line)
            if isinstance(record, ToolResultEvent):
                found.append((line, record))
        return found

    def call_ref(
        self,
        tool_name: str,
        tool_call_id: str | None,
        *,
        turn: int | None = None,
        iteration: int | None = None,
    ) -> CallRef:
        """A tool call, with its result and the LLM call that asked for it, found by call id."""
        result_line: int | None = None
        if tool_call_id is not None and tool_call_id in self.results:
            result_line, result = self.results[tool_call_id]
            turn, iteration = result.turn, result.iteration
            tool_name = result.tool_name
        asked_line = asked_index = None
        for line, call in reversed(self.calls):
            if call.response is not None and any(c.id == tool_call_id for c in call.response.tool_calls):
                asked_line, asked_index = line, call.call_index
                if turn is None:
                    turn, iteration = call.turn, call.iteration
                break
        return CallRef(
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            turn=turn,
            iteration=iteration,
            result_line=result_line,
            asked_line=asked_line,
            asked_index=asked_index,
        )

    def seq_of(self, line: int | None) -> int | None:
        if line is None:
            return None
        return getattr(self.model.record(line), "seq", None)

    def call_at(self, line: int | None) -> LlmCallEvent | None:
        record = self.record_at(line, LlmCallEvent)
        return record if isinstance(record, LlmCallEvent) else None

"""The pieces the explained call sent, in request order, each with why it rode and its chain back.

System-prompt segments, then messages, then tool schemas (docs/backtracking.md §9.2). Baseline
context (the base prompt, the user's message, earlier replies, the agent's own tools) is never a
suspect; injections, memory and tool results are (docs/backtracking.md §9.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fpdebug.backtrack.provenance.admission import Admissions
from fpdebug.backtrack.provenance.calls import render_answer
from fpdebug.backtrack.provenance.chains import Chains
from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.models import PARK_CARD_ID, READ_SKILL, Admission, ContextPiece
from fpdebug.backtrack.provenance.words import admission_words, call_words, reason_words
from fpdebug.trace.schema import LlmResponse, Message, PromptSegment, ToolSchema


@dataclass
class Pieces:
    """Makes the :class:`ContextPiece` of every part of the explained request."""

    context: CallContext
    admissions: Admissions
    chains: Chains

    def all(self) -> list[ContextPiece]:
        """Every piece of the request: system-prompt segments, messages, tool schemas."""
        request = self.context.call.request
        pieces: list[ContextPiece] = []
        for position, segment in enumerate(request.system_prompt):
            if segment.retrieval is not None and segment.injection_id is not None:
                pieces.append(self.recalled_piece(position, segment))
                continue
            pieces.append(self.segment_piece(position, segment.source, segment.injection_id, segment.text))
        used_calls: set[int] = set()
        for position, message in enumerate(request.messages):
            pieces.append(self.message_piece(position, message, used_calls))
        for position, schema in enumerate(request.tools):
            pieces.append(self.schema_piece(position, schema))
        return pieces

    def segment_piece(self, position: int, source: str, injection_id: str | None, text: str) -> ContextPiece:
        """A system-prompt segment: the base prompt, an injection's text, or the park card."""
        slot_words = f"system-prompt segment {position + 1}"
        if injection_id is None:
            admission = Admission(via="base")
            born = self.context.hop(
                "BORN", "the agent's system prompt, declared in run_start", line=self.context.run_start_line
            )
            chain = [self.chains.read_hop(), self.chains.landed_hop(f"{slot_words} (base)"), born]
            return ContextPiece(
                id=f"system-prompt[{position}]",
                slot="system-prompt",
                position=position,
                kind="base",
                source=source,
                text=text,
                admission=admission,
                reason=reason_words(admission),
                chain=chain,
                origin_line=self.context.run_start_line,
            )
        admission = self.admissions.admission(injection_id)
        if injection_id == PARK_CARD_ID and admission.engagement is None:
            admission = admission.model_copy(
                update={"engagement": self.admissions.engagement_for(PARK_CARD_ID)}
            )
        kind: Literal["injection", "memory", "park-card"] = (
            "park-card" if injection_id == PARK_CARD_ID else "memory" if source == "memory" else "injection"
        )
        landed = self.chains.landed_hop(f"{slot_words} ({source} {injection_id!r})", ref=injection_id)
        chain = [
            self.chains.read_hop(),
            landed,
            *self.chains.admission_hops(injection_id, admission),
            self.chains.born_injection(injection_id),
        ]
        return ContextPiece(
            id=f"system-prompt[{position}]",
            slot="system-prompt",
            position=position,
            kind=kind,
            source=source,
            injection_id=injection_id,
            text=text,
            admission=admission,
            reason=reason_words(admission),
            chain=self.chains.bounded(chain),
            origin_line=admission.pass_line,
            origin_iteration=self.context.iteration,
            suspect_id=suspect_id(kind, injection_id),
        )

    def recalled_piece(self, position: int, segment: PromptSegment) -> ContextPiece:
        """A chunk a ``rag`` or ``memory`` source recalled for the turn (outside the evaluator: no
        pass reason; its ``recall`` event admitted it and is where it was born)."""
        retrieval, entry_id = segment.retrieval, segment.injection_id
        assert retrieval is not None and entry_id is not None  # all() routes only these here
        kind: Literal["injection", "memory"] = "memory" if segment.source == "memory" else "injection"
        admission = Admission(via="recall", retrieval=retrieval)
        found = self.context.index.recall_of(self.context.turn, retrieval.recall_id)
        line = found[0] if found is not None else None
        if found is None:
            self.context.flag("untracked-sources", f"no recall record says where {entry_id!r} came from")
        landed = self.chains.landed_hop(
            f"system-prompt segment {position + 1} ({segment.source} {entry_id!r})", ref=entry_id
        )
        chain = [
            self.chains.read_hop(),
            landed,
            self.context.hop("ALLOWED", admission_words(admission), line=line),
            self.context.hop(
                "BORN",
                f"{segment.source} entry {entry_id!r}, recalled by {retrieval.recall_id!r} from the turn's "
                "user message (recall, before the first pass)",
                line=line,
                ref=entry_id,
            ),
        ]
        return ContextPiece(
            id=f"system-prompt[{position}]",
            slot="system-prompt",
            position=position,
            kind=kind,
            source=segment.source,
            injection_id=entry_id,
            text=segment.text,
            admission=admission,
            reason=reason_words(admission),
            chain=self.chains.bounded(chain),
            origin_line=line,
            origin_iteration=self.context.iteration,
            suspect_id=suspect_id(kind, entry_id),
        )

    def message_piece(self, position: int, message: Message, used_calls: set[int]) -> ContextPiece:
        """A message: delivered by an injection, or written by the user, an earlier reply or a tool."""
        address = f"messages[{position}]"
        landed = f"message {position + 1} ({message.role})"
        if message.injection_id is not None:
            return self._delivered_piece(position, message, message.injection_id, address, landed)
        if message.role == "user" and message.from_loop:
            return self._loop_piece(position, message, address, landed)
        if message.role == "user":
            return self._user_piece(position, message, address, landed)
        if message.role == "assistant":
            return self._reply_piece(position, message, used_calls, address, landed)
        if message.role == "tool":
            return self._tool_result_piece(position, message, address, landed)
        gate = self._gate_draft(message)
        if gate is not None:
            return self._gate_ask_piece(position, message, gate, address, landed)
        self.context.flag(
            "untracked-sources", f"message {position + 1} ({message.role}) has no recorded writer"
        )
        admission = Admission(via="unknown")
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="message",
            source=message.role,
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=[self.chains.read_hop(), self.chains.landed_hop(landed)],
        )

    def _delivered_piece(
        self, position: int, message: Message, injection_id: str, address: str, landed: str
    ) -> ContextPiece:
        """A message an injection delivered."""
        admission = self.admissions.admission(injection_id)
        source = self.context.flavor(injection_id)
        kind: Literal["injection", "memory"] = "memory" if source == "memory" else "injection"
        chain = [
            self.chains.read_hop(),
            self.chains.landed_hop(f"{landed}, delivered by {injection_id!r}", ref=injection_id),
            *self.chains.admission_hops(injection_id, admission),
            self.chains.born_injection(injection_id),
        ]
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind=kind,
            source=source,
            injection_id=injection_id,
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=self.chains.bounded(chain),
            origin_line=admission.pass_line,
            origin_iteration=self.context.iteration,
            suspect_id=suspect_id(kind, injection_id),
        )

    def _loop_piece(self, position: int, message: Message, address: str, landed: str) -> ContextPiece:
        """A message the loop itself wrote (a step nudge, a wrap-up instruction, an output re-ask): not
        the user's."""
        admission = Admission(via="loop")
        chain = [
            self.chains.read_hop(),
            self.chains.landed_hop(landed),
            self.context.hop(
                "BORN",
                "the loop's own message (a step nudge, a wrap-up or an output re-ask: steps_unfinished / "
                "wrap_up / output_retry)",
            ),
        ]
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="message",
            source="loop",
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=chain,
        )

    def _user_piece(self, position: int, message: Message, address: str, landed: str) -> ContextPiece:
        """The user's message, born in the ``turn_start`` that holds it."""
        found = next(
            (
                (line, s)
                for line, s in reversed(self.context.index.turn_starts)
                if s.user_message == message.content
            ),
            None,
        )
        if found is None:
            self.context.flag("untracked-sources", f"user message {position + 1} matches no turn_start")
        line = found[0] if found else None
        admission = Admission(via="user")
        chain = self.chains.born_chain(
            landed,
            "the user's message (turn_start)" if found else "a user message (no turn_start holds it)",
            line=line,
        )
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="user",
            source="user",
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=chain,
            origin_line=line,
        )

    def _reply_piece(
        self, position: int, message: Message, used_calls: set[int], address: str, landed: str
    ) -> ContextPiece:
        """An earlier reply of the model, born in the ``llm_call`` that wrote it."""
        line = self._writer_of(message, used_calls)
        admission = Admission(via="conversation")
        if line is None:
            self.context.flag(
                "untracked-sources", f"assistant message {position + 1} matches no earlier llm_call"
            )
        text = render_answer(LlmResponse(content=message.content, tool_calls=message.tool_calls or []))
        writer = self.context.index.call_at(line)
        chain = self.chains.born_chain(
            landed,
            f"the reply of {self.context.call_label(line)}"
            if line is not None
            else "an earlier reply (no llm_call holds it)",
            line=line,
        )
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="assistant",
            source="assistant",
            text=text,
            admission=admission,
            reason=reason_words(admission),
            chain=chain,
            origin_line=line,
            origin_iteration=writer.iteration if writer is not None else None,
        )

    def _tool_result_piece(self, position: int, message: Message, address: str, landed: str) -> ContextPiece:
        """A tool result, chained back through the call that returned it and the call that asked."""
        name = message.tool_name or (
            self.context.index.results[message.tool_call_id][1].tool_name
            if message.tool_call_id in self.context.index.results
            else "?"
        )
        ref = self.context.index.call_ref(name, message.tool_call_id)
        admission = Admission(via="tool-result", activation=ref)
        owner = None if self.context.is_agent_tool(name) else self.context.tool_owner(name)
        chain = [
            self.chains.read_hop(),
            self.chains.landed_hop(f"{landed}, the result of {call_words(ref)}", ref=message.tool_call_id),
            *self.chains.call_hops(ref),
            self.chains.born_tool(name, owner),
        ]
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="tool-result",
            source="tool-result",
            tool_name=name,
            tool_call_id=message.tool_call_id,
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=self.chains.bounded(chain),
            origin_line=ref.result_line,
            origin_iteration=ref.iteration,
            suspect_id=f"tool:{name}",
        )

    def schema_piece(self, position: int, schema: ToolSchema) -> ContextPiece:
        """A tool schema: offered by an injection, or by the agent (or the skill map) on every call."""
        address = f"tools[{position}]"
        text = f"{schema.name}: {schema.description}" if schema.description else schema.name
        landed = self.chains.landed_hop(f"tool schema {position + 1} ({schema.name!r})", ref=schema.name)
        if schema.injection_id is not None:
            admission = self.admissions.admission(schema.injection_id)
            source = self.context.flavor(schema.injection_id)
            kind: Literal["injection", "memory"] = "memory" if source == "memory" else "injection"
            chain = [
                self.chains.read_hop(),
                landed,
                *self.chains.admission_hops(schema.injection_id, admission),
                self.chains.born_tool(schema.name, schema.injection_id),
            ]
            return ContextPiece(
                id=address,
                slot="tools",
                position=position,
                kind="tool-schema",
                source=source,
                injection_id=schema.injection_id,
                tool_name=schema.name,
                text=text,
                admission=admission,
                reason=reason_words(admission),
                chain=self.chains.bounded(chain),
                origin_line=admission.pass_line,
                origin_iteration=self.context.iteration,
                suspect_id=suspect_id(kind, schema.injection_id),
            )
        admission = Admission(via="registry")
        chain = [self.chains.read_hop(), landed, self.chains.born_tool(schema.name, None)]
        reason = (
            "rode because the skill map offers read_skill on every call"
            if schema.name == READ_SKILL
            else reason_words(admission)
        )
        return ContextPiece(
            id=address,
            slot="tools",
            position=position,
            kind="tool-schema",
            source="registry",
            tool_name=schema.name,
            text=text,
            admission=admission,
            reason=reason,
            chain=chain,
            origin_line=self.context.run_start_line,
        )

    def _gate_draft(self, message: Message) -> int | None:
        """The line of the draft the evidence gate sent back, when ``message`` is the gate's ask.

        The loop writes the ask as a ``system`` message right after the draft of a call routed
        ``evidence-recheck`` (docs/honesty.md §12.5): its writer is that call, the latest before
        the explained one.
        """
        if message.role != "system":
            return None
        for line, call in reversed(self.context.index.calls):
            if line < self.context.call_line and call.route == "evidence-recheck":
                return line
        return None

    def _gate_ask_piece(
        self, position: int, message: Message, line: int, address: str, landed: str
    ) -> ContextPiece:
        """The evidence gate's ask, born when the gate sent back the draft of the call at ``line``."""
        admission = Admission(via="conversation")
        writer = self.context.index.call_at(line)
        chain = self.chains.born_chain(
            landed, f"the evidence gate's ask after the draft of {self.context.call_label(line)}", line=line
        )
        return ContextPiece(
            id=address,
            slot="messages",
            position=position,
            kind="message",
            source="evidence-gate",
            text=message.content,
            admission=admission,
            reason=reason_words(admission),
            chain=chain,
            origin_line=line,
            origin_iteration=writer.iteration if writer is not None else None,
        )

    def _writer_of(self, message: Message, used: set[int]) -> int | None:
        """The earlier llm_call whose reply is this assistant message (each call used once)."""
        ids = [c.id for c in message.tool_calls or []]
        for line, call in self.context.index.calls:
            if line >= self.context.call_line or line in used or call.response is None:
                continue
            if ids and [c.id for c in call.response.tool_calls] == ids:
                used.add(line)
                return line
            if not ids and not call.response.tool_calls and call.response.content == message.content:
                used.add(line)
                return line
        return None


def suspect_id(kind: str, injection_id: str) -> str:
    """The ranking piece an injection's part belongs to: ``memory:<id>`` or ``injection:<id>``."""
    return f"memory:{injection_id}" if kind == "memory" else f"injection:{injection_id}"

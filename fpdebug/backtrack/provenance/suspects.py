"""The suspects of a provenance: the ranking's input pieces and how each got on the wire.

The request pieces that belong to one suspect (a tool's results, an injection's segment, messages
and tools) make one :class:`~fpdebug.backtrack.suspects.Piece`, in request order; then the missing
candidates a rerun can restore. Baseline context is never a suspect (docs/backtracking.md §9.4).
Each piece carries its edge path from the call (a control hop through the decision that admitted it,
then the data hop of its slot) and the answers of the calls that asked for its tools, which
:func:`~fpdebug.backtrack.suspects.rank_pieces` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fpdebug.backtrack.provenance.chains import Chains
from fpdebug.backtrack.provenance.context import CallContext
from fpdebug.backtrack.provenance.models import PARK_CARD_ID, ContextPiece, Hop, MissingPiece, PieceOrigin
from fpdebug.backtrack.suspects import EdgeHop, Piece


@dataclass
class Suspects:
    """Groups the explained call's pieces into suspects, with their origins."""

    context: CallContext
    chains: Chains
    answers: dict[int, str]
    """The rendered answer of each earlier call, by line (the ancestors a suspect's tool came from)."""

    @property
    def call_node(self) -> str:
        """The explained call as the edge paths name it."""
        return f"llm_call#{self.context.call.call_index}"

    def all(
        self, pieces: list[ContextPiece], missing: list[MissingPiece]
    ) -> tuple[list[Piece], list[PieceOrigin]]:
        """The ranking's pieces and their origins, in the same order: sent suspects, then restorable
        missing candidates."""
        parts: dict[str, list[ContextPiece]] = {}
        for piece in pieces:
            if piece.suspect_id is not None:
                parts.setdefault(piece.suspect_id, []).append(piece)
        found = [
            self.tool(suspect_id, group)
            if suspect_id.startswith("tool:")
            else self.injection(suspect_id, group)
            for suspect_id, group in parts.items()
        ]
        found.extend(self.restorable(candidate) for candidate in missing if candidate.restorable)
        return [piece for piece, _ in found], [origin for _, origin in found]

    def _ancestors(self, group: list[ContextPiece]) -> list[str]:
        """The answers of the earlier calls that ASKED for the tools in ``group``'s chains."""
        asked = dict.fromkeys(
            hop.line
            for piece in group
            for hop in piece.chain
            if hop.verb == "ASKED" and hop.line is not None and hop.line != self.context.call_line
        )
        return [self.answers[line] for line in asked if line in self.answers]

    def tool(self, suspect_id: str, group: list[ContextPiece]) -> tuple[Piece, PieceOrigin]:
        """A tool suspect: every result of the tool the call read."""
        name = suspect_id.removeprefix("tool:")
        results = [p for p in group if p.kind == "tool-result"]
        iterations = [p.origin_iteration for p in results if p.origin_iteration is not None]
        edge = [EdgeHop(from_id=self.call_node, to_id=suspect_id, to_name=name, key="messages", kind="data")]
        piece = Piece(
            id=suspect_id,
            kind="tool",
            text="\n".join(p.text for p in results) or None,
            tool_name=name,
            iteration=max(iterations) if iterations else self.context.iteration,
            ancestor_texts=self._ancestors(group),
            edge_path=edge,
        )
        calls = ", ".join(p.tool_call_id or "?" for p in results)
        plural = "s" if len(results) > 1 else ""
        origin = PieceOrigin(
            piece_id=suspect_id,
            label=_label("tool", name, None),
            reason=f"rode because `{name}` returned ({calls}); the model read its result{plural}",
            chain=group[0].chain,
            born=_born(group[0]),
        )
        return piece, origin

    def injection(self, suspect_id: str, group: list[ContextPiece]) -> tuple[Piece, PieceOrigin]:
        """An injection (or memory) suspect: its segment, messages and tools, as one piece."""
        first = group[0]
        injection_id = first.injection_id or suspect_id.split(":", 1)[1]
        kind: Literal["injection", "memory"] = "memory" if suspect_id.startswith("memory:") else "injection"
        texts = [p.text for p in group if p.slot != "tools" and p.text]
        if not texts:
            texts = [p.text for p in group if p.text]
        flavor = self.context.flavor(injection_id) if injection_id != PARK_CARD_ID else "steering"
        piece = Piece(
            id=suspect_id,
            kind=kind,
            text="\n".join(texts) or None,
            injection_id=injection_id,
            flavor=flavor,
            iteration=self.context.iteration,
            ancestor_texts=self._ancestors(group),
            edge_path=self._injection_path(suspect_id, injection_id, first),
        )
        origin = PieceOrigin(
            piece_id=suspect_id,
            label=_label(kind, injection_id, flavor),
            reason=first.reason,
            chain=first.chain,
            born=_born(first),
        )
        return piece, origin

    def _injection_path(self, suspect_id: str, injection_id: str, first: ContextPiece) -> list[EdgeHop]:
        """From the call to the suspect: through the decision that admitted it (a control hop) when
        something other than its own always-on trigger did, then the slot it was read from (the data
        hop adjacent to the suspect)."""
        via = first.admission.via if first.admission is not None else "unknown"
        path: list[EdgeHop] = []
        source = self.call_node
        if via not in ("always", "unknown"):
            source = f"{via}:{injection_id}"
            path.append(EdgeHop(from_id=self.call_node, to_id=source, kind="control", key=via))
        path.append(
            EdgeHop(from_id=source, to_id=suspect_id, to_name=injection_id, key=first.slot, kind="data")
        )
        return path

    def restorable(self, candidate: MissingPiece) -> tuple[Piece, PieceOrigin]:
        """A missing candidate a rerun can put back, reached from the call by why it was not sent."""
        name = candidate.tool_name or candidate.injection_id or candidate.id
        piece = Piece(
            id=candidate.id,
            kind=candidate.kind,
            text=candidate.text,
            tool_name=candidate.tool_name,
            injection_id=candidate.injection_id,
            flavor=candidate.flavor,
            iteration=self.context.iteration,
            missing=True,
            edge_path=[
                EdgeHop(
                    from_id=self.call_node,
                    to_id=candidate.id,
                    to_name=name,
                    kind="control",
                    key=candidate.reason,
                )
            ],
        )
        born = (
            self.chains.born_injection(candidate.injection_id)
            if candidate.injection_id
            else self.chains.born_tool(name, self.context.tool_owner(name))
        )
        origin = PieceOrigin(
            piece_id=candidate.id,
            label=_label(candidate.kind, name, candidate.flavor),
            reason=f"not sent: {candidate.detail}",
            chain=[born],
            born=born,
        )
        return piece, origin


def _born(piece: ContextPiece) -> Hop | None:
    """The piece's BORN hop: the last of its chain, when the chain reached a declaration."""
    return piece.chain[-1] if piece.chain and piece.chain[-1].verb == "BORN" else None


def _label(kind: str, name: str, flavor: str | None) -> str:
    return f"{kind} '{name}'" + (f" ({flavor})" if flavor else "")

"""Tool-return envelopes and the judging of their effects (docs/context-model.md §4.1–§4.2).

A tool may return ``{"content": ..., "effects": [...], "status": ...}``. Recognition is strict (the
zero-cost guarantee): anything that is not exactly an envelope stays plain data. Effects are
judged one call at a time, in declaration order, during the tool-calls stage of iteration *M*;
:func:`judge_effects` threads an :class:`EffectState` through the batch and returns everything
as data (judgments, grants, prunes, the pending transition, proposal conflict losers).

Tools build envelopes with :func:`envelope`, :func:`propose_transition` and
:func:`require_instruction` (the wire keys are the reference's: ``targetSkillId``, ``reason``,
``instructionId``, ``deliveryLease``).
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal, TypeAlias

from fpdebug.engine.injections import Injection
from fpdebug.engine.leases import (
    InstructionLease,
    LeasePrune,
    PendingToolTransition,
    prune_leases,
    pruned_leases,
    tenant_of,
)
from fpdebug.engine.skillmap import RouteConflictReport, SkillMap
from fpdebug.engine.types import DELIVERY_LEASES, TOOL_STATUSES, Activation, DeliveryLease, ToolStatus
from fpdebug.trace.records import well_formed_text
from fpdebug.trace.schema import ConflictParty, EffectJudgment, MalformedEffect, RouteConflict

__all__ = [
    "EFFECT_KINDS",
    "ENVELOPE_KEYS",
    "CallJudgment",
    "Effect",
    "EffectScope",
    "EffectState",
    "Envelope",
    "EnvelopeNearMissWarning",
    "ProposeTransition",
    "RequireInstruction",
    "envelope",
    "judge_effects",
    "near_miss_warning",
    "parse_envelope",
    "proposal_conflict",
    "propose_transition",
    "refusal_suffix",
    "require_instruction",
    "text_of",
    "warn_near_miss",
]

ENVELOPE_KEYS = frozenset({"content", "effects", "status"})
"""The only keys an envelope may have."""

EFFECT_KINDS = frozenset({"propose-transition", "require-instruction"})
"""The two effect kinds."""


@dataclass(frozen=True, slots=True)
class ProposeTransition:
    """Ask the cursor to move to ``target_skill_id`` on the next pass."""

    target_skill_id: str
    """The proposed skill (kept as given, not trimmed)."""
    reason: str
    """Why (mandatory)."""

    kind: ClassVar[str] = "propose-transition"


@dataclass(frozen=True, slots=True)
class RequireInstruction:
    """Ask for an injection to be served under a lease."""

    instruction_id: str
    """The injection to serve (kept as given)."""
    delivery_lease: DeliveryLease
    """``next-call`` or ``until-skill-exit``."""

    kind: ClassVar[str] = "require-instruction"


Effect: TypeAlias = ProposeTransition | RequireInstruction
"""A valid effect."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """A recognized envelope: what the model reads, the valid effects, the refusals, the status."""

    content: object
    """What the model reads instead of the envelope."""
    effects: tuple[Effect, ...] = ()
    """The valid effects, in declaration order."""
    malformed: tuple[MalformedEffect, ...] = ()
    """Effects of a known kind with bad fields, each with its refusal sentence (never half-applied)."""
    status: ToolStatus | None = None
    """The declared status, only when given."""


# ----------------------------------------------------------------------------------------------
# Recognition (docs/context-model.md §4.1)


def _one_of(value: object, allowed: frozenset[str]) -> bool:
    return isinstance(value, str) and value in allowed


def _present(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_effect(raw: Mapping[str, object]) -> Effect | MalformedEffect:
    kind = str(raw["kind"])
    if kind == "propose-transition":
        target, reason = raw.get("targetSkillId"), raw.get("reason")
        if not _present(target):
            return MalformedEffect(kind=kind, refusal_reason="propose-transition names no targetSkillId")
        if not _present(reason):
            return MalformedEffect(
                kind=kind,
                refusal_reason=(
                    "propose-transition carries no reason (a reason is mandatory for a transition)"
                ),
            )
        return ProposeTransition(target, reason)  # type: ignore[arg-type]
    instruction_id, lease = raw.get("instructionId"), raw.get("deliveryLease")
    if not _present(instruction_id):
        return MalformedEffect(kind=kind, refusal_reason="require-instruction names no instructionId")
    if not _one_of(lease, DELIVERY_LEASES):
        return MalformedEffect(
            kind=kind,
            refusal_reason=(
                f"require-instruction has deliveryLease '{lease}', which is not a lease this library "
                "has (use 'next-call' or 'until-skill-exit')"
            ),
        )
    return RequireInstruction(instruction_id, lease)  # type: ignore[arg-type]


def parse_envelope(value: object) -> Envelope | None:
    """Recognize an envelope, strictly: ``None`` for anything that is plain data.

    All of: a dict; keys within ``{content, effects, status}``; ``content`` present; ``effects``
    a list; every effect a dict of a known ``kind``; ``status`` absent or one of the seven; and
    not (no effects and no status).

    Args:
        value: What a tool returned.

    Returns:
        The :class:`Envelope`, or ``None``.
    """
    if not isinstance(value, dict):
        return None
    if not set(value) <= ENVELOPE_KEYS or "content" not in value:
        return None
    effects = value.get("effects", None)
    if not isinstance(effects, list):
        return None
    # A tool's values are untrusted: a list or a dict where a string belongs is not hashable, so
    # every membership test below checks for a string first (anything else stays plain data).
    if not all(isinstance(e, dict) and _one_of(e.get("kind"), EFFECT_KINDS) for e in effects):
        return None
    has_status = "status" in value
    if has_status and not _one_of(value["status"], TOOL_STATUSES):
        return None
    if not effects and not has_status:
        return None
    valid: list[Effect] = []
    malformed: list[MalformedEffect] = []
    for raw in effects:
        checked = _check_effect(raw)
        (malformed if isinstance(checked, MalformedEffect) else valid).append(checked)  # type: ignore[arg-type]
    return Envelope(
        content=value["content"],
        effects=tuple(valid),
        malformed=tuple(malformed),
        status=value["status"] if has_status else None,
    )


def near_miss_warning(value: object) -> str | None:
    """A developer warning for a dict that looks like an envelope but has no ``effects``.

    Returns:
        The warning when ``value`` has envelope keys only, ``content`` and a valid ``status`` but
        no ``effects`` (it stays plain data); else ``None``.
    """
    if (
        isinstance(value, dict)
        and set(value) <= ENVELOPE_KEYS
        and "content" in value
        and "effects" not in value
        and _one_of(value.get("status"), TOOL_STATUSES)
    ):
        return (
            "this tool result has 'content' and 'status' but no 'effects', so it is treated as plain "
            'data; add "effects": [] to make it an envelope'
        )
    return None


class EnvelopeNearMissWarning(UserWarning):
    """A tool returned a dict that is almost an envelope and so stays plain data (docs/context-model.md §4.1)."""


# The fpdebug package's directory: the warning points at the first frame outside it.
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def _stacklevel_outside_package() -> int:
    # Level 1 is the function that calls warnings.warn (our caller); walk out of fpdebug's own
    # frames so the warning names the author's line (their ``agent.run(...)``), not the engine's.
    frame = sys._getframe(1)
    level = 1
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level if frame is not None else 2


def warn_near_miss(value: object, *, tool_name: str) -> None:
    """Warn the author when a tool's result is a near-miss envelope (it stays plain data).

    Emits an :class:`EnvelopeNearMissWarning` (Python shows each distinct warning once per place
    by default; filter it like any warning) naming the tool; does nothing for any other value.

    Args:
        value: What the tool returned.
        tool_name: The tool that returned it.
    """
    message = near_miss_warning(value)
    if message is not None:
        level = _stacklevel_outside_package()
        warnings.warn(f"tool {tool_name!r}: {message}", EnvelopeNearMissWarning, stacklevel=level)


def text_of(value: object) -> str:
    """The text the model reads for a value: a string as is, anything else as compact JSON.

    Every lone surrogate becomes U+FFFD, as the trace records it: an object's ``str()`` (the
    JSON fallback) can hold one that no earlier repair could reach.
    """
    if isinstance(value, str):
        return well_formed_text(value)
    return well_formed_text(json.dumps(value, ensure_ascii=False, default=str))


def envelope(
    content: object, *effects: Mapping[str, object], status: ToolStatus | None = None
) -> dict[str, object]:
    """Build an envelope dict for a tool to return."""
    out: dict[str, object] = {"content": content, "effects": [dict(e) for e in effects]}
    if status is not None:
        out["status"] = status
    return out


def propose_transition(target_skill_id: str, reason: str) -> dict[str, object]:
    """A ``propose-transition`` effect dict."""
    return {"kind": "propose-transition", "targetSkillId": target_skill_id, "reason": reason}


def require_instruction(instruction_id: str, delivery_lease: DeliveryLease) -> dict[str, object]:
    """A ``require-instruction`` effect dict."""
    return {"kind": "require-instruction", "instructionId": instruction_id, "deliveryLease": delivery_lease}


# ----------------------------------------------------------------------------------------------
# Judging (docs/context-model.md §4.2)


@dataclass(frozen=True, slots=True)
class EffectScope:
    """What judging reads and never changes during one batch."""

    iteration: int
    """*M*: the iteration whose batch this is."""
    current_skill_id: str | None
    """The cursor this iteration's Evaluate already advanced."""
    skill_map: SkillMap | None
    """The mounted graph (``None``: proposals are refused)."""
    lease_targets: Mapping[str, Injection]
    """The registered catalog by id (what a ``require-instruction`` may name)."""


@dataclass(frozen=True, slots=True)
class EffectState:
    """The carriers judging writes, threaded through the batch (and shared with the read_skill gate)."""

    activated_injection_ids: tuple[str, ...] = ()
    """Turn-cumulative activations (an accepted proposal's target is appended)."""
    instruction_leases: tuple[InstructionLease, ...] | None = None
    """The lease record (``None``: no lease was ever granted, the key does not exist)."""
    pending_tool_transition: PendingToolTransition | None = None
    """The accepted proposal (from this batch once one is accepted; stale ones are left as they are)."""
    batch_proposal: PendingToolTransition | None = None
    """The first proposal accepted in THIS batch."""
    superseded: tuple[ConflictParty, ...] = ()
    """Proposals superseded by an earlier acceptance in this batch (route-conflict losers)."""

    def start_of_batch(self) -> EffectState:
        """The same carriers with the per-batch proposal bookkeeping cleared."""
        return replace(self, batch_proposal=None, superseded=())


@dataclass(frozen=True, slots=True)
class CallJudgment:
    """Everything judging one call's effects produced."""

    state: EffectState
    """The carriers after this call."""
    judgments: tuple[EffectJudgment, ...]
    """One judgment per valid effect, in declaration order."""
    grants: tuple[InstructionLease, ...] = ()
    """Leases granted by this call."""
    prunes: tuple[LeasePrune, ...] = ()
    """Grant-time prunes (site ``tool-calls``) that removed something."""
    activations: tuple[tuple[str, Activation], ...] = ()
    """Ids this call appended to the activations (an accepted proposal's target), with provenance."""

    @property
    def refusals(self) -> tuple[str, ...]:
        """The refusal reasons, in order."""
        return tuple(j.refusal_reason or "" for j in self.judgments if j.outcome == "refused")

    @property
    def suffix(self) -> str:
        """What to append to the text the model reads: one `` [tool effect refused: …]`` per refusal."""
        return "".join(refusal_suffix(reason) for reason in self.refusals)


def refusal_suffix(reason: str) -> str:
    """`` [tool effect refused: <reason>]``."""
    return f" [tool effect refused: {reason}]"


EffectOutcome: TypeAlias = Literal["accepted", "refused", "superseded"]
"""How one declared effect was judged (``EffectJudgment.outcome``)."""


def _judge_proposal(
    effect: ProposeTransition,
    scope: EffectScope,
    state: EffectState,
    tool_name: str,
    tool_call_id: str | None,
) -> tuple[EffectJudgment, EffectState, tuple[str, Activation] | None]:
    target = effect.target_skill_id

    def judged(
        outcome: EffectOutcome,
        *,
        refusal_reason: str | None = None,
        superseded_by: Literal["earlier-proposal"] | None = None,
    ) -> EffectJudgment:
        return EffectJudgment(
            kind="propose-transition",
            outcome=outcome,
            target_skill_id=target,
            reason=effect.reason,
            refusal_reason=refusal_reason,
            superseded_by=superseded_by,
        )

    if scope.skill_map is None:
        reason = "propose-transition needs a mounted skill graph, and this agent has none"
        return judged("refused", refusal_reason=reason), state, None
    allowed = scope.skill_map.allowed_skill_ids(scope.current_skill_id)
    if target not in allowed:
        where = (
            f"'{scope.current_skill_id}'" if scope.current_skill_id is not None else "the start (no cursor)"
        )
        reason = f"'{target}' is not reachable from {where}; reachable: {', '.join(allowed) or '(none)'}"
        return judged("refused", refusal_reason=reason), state, None
    first = state.batch_proposal
    if first is not None and first.target_skill_id != target:
        loser = ConflictParty(tool_call_id=tool_call_id, tool_name=tool_name, target=target)
        return (
            judged("superseded", superseded_by="earlier-proposal"),
            replace(state, superseded=(*state.superseded, loser)),
            None,
        )
    if first is not None:  # a repeat of the accepted target
        return judged("accepted"), state, None
    pending = PendingToolTransition(target, tool_name, effect.reason, scope.iteration, tool_call_id)
    activation: tuple[str, Activation] | None = None
    activated = state.activated_injection_ids
    if target not in activated:
        activated = (*activated, target)
        activation = (target, Activation(tool_name, scope.iteration, tool_call_id))
    new_state = replace(
        state, pending_tool_transition=pending, batch_proposal=pending, activated_injection_ids=activated
    )
    return judged("accepted"), new_state, activation


def _judge_instruction(
    effect: RequireInstruction,
    scope: EffectScope,
    state: EffectState,
    tool_name: str,
    tool_call_id: str | None,
) -> tuple[EffectJudgment, EffectState, InstructionLease | None, LeasePrune | None]:
    iid = effect.instruction_id

    def judged(outcome: EffectOutcome, *, refusal_reason: str | None = None) -> EffectJudgment:
        return EffectJudgment(
            kind="require-instruction",
            outcome=outcome,
            instruction_id=iid,
            delivery_lease=effect.delivery_lease,
            refusal_reason=refusal_reason,
        )

    target = scope.lease_targets.get(iid)
    if target is None:
        return (
            judged("refused", refusal_reason=f"'{iid}': no registered injection carries that id"),
            state,
            None,
            None,
        )
    if target.flavor == "skill" and target.surface_mode == "tool-only":
        reason = (
            f"'{iid}' is a skill with surfaceMode 'tool-only'; its body never rides the system prompt, "
            "so a lease cannot deliver it"
        )
        return judged("refused", refusal_reason=reason), state, None, None
    tenant = tenant_of(scope.current_skill_id, state.activated_injection_ids)
    lease = InstructionLease(
        iid, effect.delivery_lease, tool_name, scope.iteration, skill_id=tenant, tool_call_id=tool_call_id
    )
    existing = state.instruction_leases or ()
    survivors = prune_leases(existing, scope.iteration, tenant)
    removed = pruned_leases(existing, scope.iteration, tenant)
    leases = (*survivors, lease)
    prune = LeasePrune("tool-calls", tenant, removed, leases) if removed else None
    return judged("accepted"), replace(state, instruction_leases=leases), lease, prune


def judge_effects(
    envelope: Envelope,
    *,
    tool_name: str,
    tool_call_id: str | None,
    scope: EffectScope,
    state: EffectState,
) -> CallJudgment:
    """Judge one call's effects in declaration order (docs/context-model.md §4.2). Never moves the cursor.

    Args:
        envelope: The recognized envelope of the call.
        tool_name: The tool that returned it.
        tool_call_id: Its call id.
        scope: The batch's fixed facts.
        state: The carriers so far in this batch.

    Returns:
        The :class:`CallJudgment`.
    """
    judgments: list[EffectJudgment] = []
    grants: list[InstructionLease] = []
    prunes: list[LeasePrune] = []
    activations: list[tuple[str, Activation]] = []
    for effect in envelope.effects:
        if isinstance(effect, ProposeTransition):
            judgment, state, activation = _judge_proposal(effect, scope, state, tool_name, tool_call_id)
            if activation is not None:
                activations.append(activation)
        else:
            judgment, state, lease, prune = _judge_instruction(effect, scope, state, tool_name, tool_call_id)
            if lease is not None:
                grants.append(lease)
            if prune is not None:
                prunes.append(prune)
        judgments.append(judgment)
    return CallJudgment(state, tuple(judgments), tuple(grants), tuple(prunes), tuple(activations))


def proposal_conflict(state: EffectState, *, from_skill_id: str | None) -> RouteConflictReport | None:
    """The batch-end ``route_conflict`` (source ``tool-proposal``) when proposals were superseded.

    Args:
        state: The carriers at the end of the batch.
        from_skill_id: The cursor the proposals left from.

    Returns:
        The report, or ``None`` when no proposal was superseded.
    """
    first = state.batch_proposal
    if first is None or not state.superseded:
        return None
    winner = ConflictParty(
        tool_call_id=first.tool_call_id, tool_name=first.tool_name, target=first.target_skill_id
    )
    return RouteConflictReport(
        from_skill_id=from_skill_id,
        conflict=RouteConflict(winner=winner, losers=list(state.superseded)),
        source="tool-proposal",
    )

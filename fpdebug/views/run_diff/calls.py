"""The request, response and tool stages of one aligned pass.

The request is compared with the pass diff's own request comparison (system prompt segment by
segment, tool schemas, conversation messages), after each run's tool call ids are replaced by their
position (``#1``, ``#2``…) so two runs whose model named its calls differently still compare.
"""

from __future__ import annotations

import json

from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import LlmCallEvent, LlmRequest, PassEvent, ToolResultEvent
from fpdebug.views.pass_diff import PassDiff, Side
from fpdebug.views.pass_diff.records import Step, Walk, slot_ids
from fpdebug.views.pass_diff.requests import request_changes
from fpdebug.views.run_diff.model import Difference
from fpdebug.views.run_diff.reading import RunReading, clip, line_diff

Pair = tuple[RunReading, RunReading]


def request_differences(
    sides: Pair,
    its: tuple[Iteration, Iteration],
    calls: tuple[LlmCallEvent | None, LlmCallEvent | None],
    b_pass: PassEvent | None,
) -> list[Difference]:
    """What differs in the LLM requests of two aligned iterations."""
    ca, cb = calls
    if ca is None or cb is None:
        if (ca is None) == (cb is None):
            return []
        return [
            Difference(
                "request",
                "call",
                "llm_call",
                "an LLM call" if ca is not None else None,
                "an LLM call" if cb is not None else None,
                why="one run made no readable LLM call on this pass",
            )
        ]
    found = []
    for kind, va, vb in (("provider", ca.provider, cb.provider), ("model", ca.model, cb.model)):
        if va != vb:
            found.append(Difference("request", kind, kind, va, vb, why=f"the call went to another {kind}"))
    found += _parameters(ca.request, cb.request)
    a, b = sides
    found += _through_pass_diff(sides, its, a.canonical(ca.request), b.canonical(cb.request), b_pass)
    return found


def _parameters(a: LlmRequest, b: LlmRequest) -> list[Difference]:
    found = []
    for name in ("temperature", "max_tokens", "seed"):
        va, vb = getattr(a, name), getattr(b, name)
        if va != vb:
            found.append(Difference("request", "parameter", name, _text(va), _text(vb)))
    return found


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _side(iteration: Iteration, label: str) -> Side:
    return Side(
        row=0,
        label=label,
        run_id=iteration.run_id,
        turn=iteration.turn,
        number=iteration.number,
        first_line=iteration.first_line,
        has_pass=True,
        has_call=True,
        cursor=iteration.cursor_to,
        active=0,
    )


def _through_pass_diff(
    sides: Pair, its: tuple[Iteration, Iteration], ra: LlmRequest, rb: LlmRequest, b_pass: PassEvent | None
) -> list[Difference]:
    """Segments, tool schemas and messages, by the pass diff's request comparison (read across runs)."""
    a, b = sides
    ia, ib = its
    diff = PassDiff(a=_side(ia, "A"), b=_side(ib, "B"), across_runs=True)
    steps = [Step(ia, "A", None, slot_ids(None), {}), Step(ib, "B", b_pass, slot_ids(b_pass), {})]
    walk = Walk(session=b.session, run=b.run, steps=steps, catalog={**a.catalog, **b.catalog})
    request_changes(diff, walk, ra, rb, b_pass)
    found = []
    a_texts = {(s.source, s.injection_id): s.text for s in reversed(ra.system_prompt)}
    for segment in diff.segments:
        subject = f"{segment.source} {segment.injection_id}" if segment.injection_id else segment.source
        text = clip(segment.text)
        if segment.change == "added":
            found.append(
                Difference("request", "segment", subject, None, text, why="a prompt segment B only has")
            )
        elif segment.change == "removed":
            found.append(
                Difference("request", "segment", subject, text, None, why="a prompt segment A only has")
            )
        else:
            before = clip(a_texts.get((segment.source, segment.injection_id)))
            found.append(
                Difference(
                    "request", "segment", subject, before, text, why="its text changed", detail=segment.diff
                )
            )
    for tool in diff.tools:
        offered = f"offered: {tool.why}"
        a_has, b_has = (None, offered) if tool.change == "entered" else (offered, None)
        found.append(
            Difference("request", "tool", tool.name, a_has, b_has, why="a tool offered in one run only")
        )
    for message in diff.messages:
        text = clip(message.text) or "(empty)"
        a_has, b_has = (None, text) if message.change == "entered" else (text, None)
        found.append(
            Difference(
                "request",
                "message",
                message.what,
                a_has,
                b_has,
                why=f"a {message.role} message in one run only",
            )
        )
    return found


def response_differences(calls: tuple[LlmCallEvent | None, LlmCallEvent | None]) -> list[Difference]:
    """What differs in the responses (or errors) of two aligned LLM calls."""
    ca, cb = calls
    if ca is None or cb is None:
        return []
    found = []
    ea = f"{ca.error.type}: {ca.error.message}" if ca.error is not None else None
    eb = f"{cb.error.type}: {cb.error.message}" if cb.error is not None else None
    if ea != eb:
        found.append(
            Difference("response", "error", "error", clip(ea), clip(eb), why="the call failed in one run")
        )
    ra, rb = ca.response, cb.response
    if ra is None or rb is None:
        return found
    if ra.content != rb.content:
        found.append(
            Difference(
                "response",
                "response",
                "content",
                clip(ra.content) or "(empty)",
                clip(rb.content) or "(empty)",
                why="the model answered differently",
                detail=line_diff(ra.content, rb.content),
            )
        )
    asked_a = [_call_words(call.name, call.args) for call in ra.tool_calls]
    asked_b = [_call_words(call.name, call.args) for call in rb.tool_calls]
    for index in range(max(len(asked_a), len(asked_b))):
        a = asked_a[index] if index < len(asked_a) else None
        b = asked_b[index] if index < len(asked_b) else None
        if a != b:
            found.append(
                Difference(
                    "response",
                    "tool-call",
                    f"call {index + 1}",
                    a,
                    b,
                    why="the model asked for another tool call",
                )
            )
    for name in ("stop_reason", "refusal"):
        va, vb = getattr(ra, name), getattr(rb, name)
        if va != vb:
            found.append(Difference("response", name.replace("_", "-"), name, clip(va), clip(vb)))
    return found


def _call_words(name: str, args: object) -> str:
    return f"{name}({json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)})"


def tool_differences(sides: Pair, ia: Iteration, ib: Iteration) -> list[Difference]:
    """What differs in the tool results of two aligned iterations, and in the leases they granted."""
    a, b = sides
    results_a, results_b = a.results_of(ia), b.results_of(ib)
    found = []
    for index in range(max(len(results_a), len(results_b))):
        ta = results_a[index] if index < len(results_a) else None
        tb = results_b[index] if index < len(results_b) else None
        found += _result(index, ta, tb)
    grants_a, grants_b = _grants(a, ia), _grants(b, ib)
    for id_ in [*grants_a, *(id_ for id_ in grants_b if id_ not in grants_a)]:
        ga, gb = grants_a.get(id_), grants_b.get(id_)
        if ga != gb:
            why = "a lease granted in one run only" if ga is None or gb is None else "granted differently"
            found.append(Difference("tools", "lease-granted", id_, ga, gb, why=why))
    return found


def _result(index: int, ta: ToolResultEvent | None, tb: ToolResultEvent | None) -> list[Difference]:
    name = (ta or tb).tool_name if (ta or tb) is not None else "?"  # type: ignore[union-attr]
    subject = f"{name} (result {index + 1})"
    if ta is None or tb is None:
        return [
            Difference(
                "tools",
                "tool-result",
                subject,
                _result_words(ta),
                _result_words(tb),
                why="a tool ran in one run only",
            )
        ]
    if ta.tool_name != tb.tool_name or ta.args != tb.args:
        return [
            Difference(
                "tools",
                "tool-result",
                subject,
                _call_words(ta.tool_name, ta.args),
                _call_words(tb.tool_name, tb.args),
                why="another tool or other arguments ran",
            )
        ]
    if ta.result != tb.result:
        return [
            Difference(
                "tools",
                "tool-result",
                subject,
                _result_words(ta),
                _result_words(tb),
                why="the same call returned another result",
                detail=line_diff(ta.result, tb.result),
            )
        ]
    found = []
    for kind, (va, vb) in _result_parts(ta, tb).items():
        if va != vb:
            why = f"the same result, with other {kind}"
            found.append(Difference("tools", f"tool-{kind}", subject, va or "none", vb or "none", why=why))
    return found


def _result_parts(ta: ToolResultEvent, tb: ToolResultEvent) -> dict[str, tuple[str | None, str | None]]:
    """Beside the result's text, what a tool result records: status, error, effects, skill gate."""
    return {
        "status": (ta.status, tb.status),
        "error": (_error(ta), _error(tb)),
        "effects": (_effects(ta), _effects(tb)),
        "gate": (_gate(ta), _gate(tb)),
    }


def _error(result: ToolResultEvent) -> str | None:
    return clip(f"{result.error.type}: {result.error.message}") if result.error is not None else None


def _effects(result: ToolResultEvent) -> str | None:
    words = [
        " ".join(
            str(part)
            for part in (e.kind, e.instruction_id or e.target_skill_id, e.delivery_lease, e.outcome)
            if part
        )
        for e in result.effects
    ]
    words += [f"malformed {m.kind}: {m.refusal_reason}" for m in result.malformed]
    return clip("; ".join(words)) if words else None


def _gate(result: ToolResultEvent) -> str | None:
    gate = result.skill_gate
    return f"{gate.skill_id} {gate.outcome}" if gate is not None else None


def _result_words(result: ToolResultEvent | None) -> str | None:
    if result is None:
        return None
    status = f"[{result.status}] " if result.status else ""
    error = f" (error {result.error.type})" if result.error is not None else ""
    return clip(f"{status}{result.result}{error}")


def _grants(side: RunReading, iteration: Iteration) -> dict[str, str]:
    """Instruction id → the lease granted on this pass, in words."""
    found = {}
    for lease in side.granted_at.get((iteration.turn, iteration.number), []):
        tenant = f", tenant {lease.tenant}" if lease.tenant is not None else ""
        found[lease.instruction_id] = f"{lease.delivery_lease} lease granted by {lease.tool_name}{tenant}"
    return found

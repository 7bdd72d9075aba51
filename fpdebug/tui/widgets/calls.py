"""CallView: the exact request of the selected iteration's LLM call(s), by slot, and the reply.

The system prompt is shown segment by segment, each tagged with the injection it came from
(``base`` for the agent's own prompt); then the messages (a message a messages-slot injection
delivered is tagged too), the tool schemas offered (with the injection that contributed each), the
reply with its tool calls, tokens, latency and error, and the tool results of the batch. Every
content is untrusted: made inert and collapsed when long (``e`` expands).

When the run armed the inputs layer (docs/honesty.md §12.2), each tool call of the reply lists its arguments
with where each value came from, from the ``finding`` argument rows of the same iteration: a
previous tool result (``tool-result call_1 $.orders[0].total @I1``), the user's message, an external
ground or a declared source (with its label), or nowhere (the model supplied it); a refused
reference is named, a value rewritten by tool middleware shows as asked → ran, and the value of an
argument-hiding tool is never shown.
"""

from __future__ import annotations

from rich.text import Text

from fpdebug.trace.model import Iteration
from fpdebug.trace.records import InvalidRecord
from fpdebug.trace.schema import (
    ArgumentRow,
    BasisRow,
    FindingEvent,
    LlmCallEvent,
    LlmRequest,
    LlmResponse,
    ToolResultEvent,
)
from fpdebug.tui.text import Palette, clip, compact_json, number, pretty_json
from fpdebug.tui.widgets.document import Block, DocBuilder, Part
from fpdebug.tui.widgets.inspector import tool_result_head
from fpdebug.tui.widgets.iteration_document import IterationDocument
from fpdebug.tui.widgets.recalled import retrieval_parts
from fpdebug.views.session import TraceSession

__all__ = ["CallView", "argument_provenance", "call_document", "source_words"]


_Provenance = dict[str, tuple[list[ArgumentRow], list[BasisRow]]]
"""The inputs layer's rows by tool call id: ``(argument rows, basis rows)``."""


def source_words(row: ArgumentRow) -> str:
    """Where an argument's value came from, in a few words (``tool-result call_1 $.orders[0].total @I1``)."""
    if row.source == "tool-result":
        parts = ["tool-result", row.source_tool_call_id or "?"]
        if row.source_path:
            parts.append(row.source_path)
        if row.source_iteration is not None:
            parts.append(f"@I{row.source_iteration}")
        words = " ".join(parts)
        return f"{words} ({row.source_tool_name})" if row.source_tool_name else words
    if row.source == "user":
        return "user (answered the argument ask: the call ran with it)" if row.answered else "user"
    if row.source == "external":
        return f"external: {row.label or '?'}"
    if row.source == "declared":
        where = f" {row.source_path}" if row.source_path else ""
        return f"declared: {row.label or '?'}{where}"
    return "nowhere (model supplied)"


def argument_provenance(session: TraceSession, iteration: Iteration) -> _Provenance:
    """The inputs layer's rows of one iteration, by tool call id: ``(argument rows, basis rows)``."""
    found: _Provenance = {}
    for line in iteration.finding_lines:
        record = session.record(line)
        if not isinstance(record, FindingEvent) or record.layer != "inputs":
            continue
        for row in record.rows:
            if isinstance(row, ArgumentRow):
                found.setdefault(row.tool_call_id, ([], []))[0].append(row)
            elif isinstance(row, BasisRow):
                found.setdefault(row.tool_call_id, ([], []))[1].append(row)
    return found


def _provenance_rows(doc: DocBuilder, arguments: list[ArgumentRow], bases: list[BasisRow]) -> None:
    palette = doc.palette
    doc.line(("arguments, where each value came from (inputs layer)", palette.dim), indent=4)
    width = min(max((len(row.path) for row in arguments), default=4), 24)
    for row in arguments:
        if row.hidden:
            value: list[Part] = [("(hidden: a tool in reach hides its arguments)", palette.dim)]
        elif row.rewritten:
            ran = "removed" if row.rewritten_to is None else compact_json(row.rewritten_to)
            value = [
                ("asked ", palette.dim),
                (compact_json(row.value), ""),
                (" → ran ", palette.warn),
                (ran, palette.warn),
            ]
        else:
            value = [(compact_json(row.value), "")]
        style = palette.bad if row.source == "nowhere" else palette.good
        parts: list[Part] = [
            (f"{row.path:<{width}}", palette.key),
            "  ",
            *value,
            "  ← ",
            (source_words(row), style),
        ]
        if row.source_text and not row.hidden and row.source != "tool-result":
            parts += ["  ", ("“" + clip(row.source_text, 60) + "”", palette.dim)]
        if row.refused_reference:
            parts += [
                "  · refused reference ",
                (row.refused_reference, palette.bad),
                (" (it does not hold the value)", palette.dim),
            ]
        doc.line(*parts, indent=6, hang=width + 2)
    for basis in bases:
        cited = "; ".join(basis.from_entries) or "nothing kept"
        dropped = f" · {basis.dropped_from} citation(s) dropped" if basis.dropped_from else ""
        doc.line(("cites ", palette.dim), (cited, ""), (dropped, palette.warn), indent=6, hang=6)


def call_document(session: TraceSession, iteration: Iteration, palette: Palette) -> list[Block]:
    """The call view of one iteration.

    Args:
        session: The trace.
        iteration: Whose LLM call(s) to show.
        palette: Styles.
    """
    doc = DocBuilder(palette)
    calls: list[tuple[int, LlmCallEvent]] = []
    for line in iteration.llm_lines:
        record = session.record(line)
        if isinstance(record, LlmCallEvent):
            calls.append((line, record))
        elif isinstance(record, InvalidRecord):
            # The model counted the line as a call from the few fields it reads; the rest of the
            # record breaks the schema, so there is no call to show, only why.
            doc.line(
                (f"the llm_call on line {line} is an invalid record: ", palette.bad),
                (record.error, ""),
                hang=2,
            )
    if not calls:
        if not doc.blocks:
            doc.line(Text(f"{session.label(iteration)} made no LLM call", style=palette.dim))
        return doc.blocks
    try:
        provenance = argument_provenance(session, iteration)
    except Exception as error:
        provenance = {}
        doc.error("the argument provenance", error)
    for line, call in calls:
        try:
            _one_call(doc, session, iteration, line, call, provenance)
        except Exception as error:
            doc.error(f"call on line {line}", error)
    results = []
    for line in iteration.tool_result_lines:
        record = session.record(line)
        if isinstance(record, ToolResultEvent):
            results.append(record)
    if results:
        doc.heading("TOOL RESULTS", (f"  the batch this reply asked for ({len(results)})", palette.dim))
        for result in results:
            doc.line(*tool_result_head(result, palette), indent=2)
            if result.coverage:
                doc.line(("coverage ", palette.dim), (result.coverage, ""), indent=4)
            if result.error is not None:
                doc.line(
                    ("error ", palette.bad), (f"{result.error.type}: {result.error.message}", ""), indent=4
                )
            doc.content(result.result, indent=4)
    return doc.blocks


def _one_call(
    doc: DocBuilder,
    session: TraceSession,
    iteration: Iteration,
    line: int,
    call: LlmCallEvent,
    provenance: _Provenance | None = None,
) -> None:
    """One call: its facts, then the request slot by slot, then the reply."""
    _call_facts(doc, session, iteration, line, call)
    _system_prompt(doc, call.request)
    _messages(doc, call.request)
    _tools_offered(doc, call.request)
    _reply(doc, call.response, provenance or {})


def _call_facts(
    doc: DocBuilder, session: TraceSession, iteration: Iteration, line: int, call: LlmCallEvent
) -> None:
    """The call's title, tokens, latency, stop reason, route, sampling settings and error."""
    palette = doc.palette
    request, response = call.request, call.response
    doc.line(
        Text(f"Call {call.call_index}", style=palette.heading),
        " · ",
        (f"{call.provider} / {call.model}", palette.accent),
        f" · {session.label(iteration)}",
        (f"   line {line}", palette.dim),
    )
    if response is not None:
        usage = response.usage
        cache = []
        if usage.cache_read_tokens is not None:
            cache.append(f"cache read {number(usage.cache_read_tokens)}")
        if usage.cache_write_tokens is not None:
            cache.append(f"cache write {number(usage.cache_write_tokens)}")
        if usage.reasoning_tokens is not None:
            cache.append(f"reasoning {number(usage.reasoning_tokens)}")
        # Input tokens count the cache, for traces written before that definition too.
        doc.fact(
            "tokens",
            f"{number(usage.total_input_tokens(call.provider))} in · {number(usage.output_tokens)} out",
            (f" ({', '.join(cache)})" if cache else "", palette.dim),
        )
    doc.fact(
        "latency",
        f"{number(call.latency_ms)} ms",
        " · stop ",
        ((response.stop_reason or "—") if response is not None else "no reply", ""),
        " · route ",
        (call.route or "—", palette.key),
    )
    settings = [
        f"{name} {value}"
        for name, value in (
            ("temperature", request.temperature),
            ("max tokens", request.max_tokens),
            ("seed", request.seed),
        )
        if value is not None
    ]
    if settings:
        doc.fact("settings", (" · ".join(settings), palette.dim))
    if response is not None and (response.id or response.model):
        # Which reply, from which model exactly (a dated snapshot, a gateway's routing): absent in old traces.
        answered = " · ".join(part for part in (response.model, response.id) if part)
        doc.fact("response", (answered, palette.dim))
    if call.error is not None:
        status = f" (HTTP {call.error.status})" if call.error.status is not None else ""
        doc.fact("error", (f"{call.error.type}{status}: {call.error.message}", palette.bad))


def _system_prompt(doc: DocBuilder, request: LlmRequest) -> None:
    """The system prompt segment by segment, each tagged with where it came from."""
    palette = doc.palette
    total = sum(len(segment.text) for segment in request.system_prompt)
    summary = f"  {len(request.system_prompt)} segment(s), {number(total)} characters, joined by a blank line"
    doc.heading("SYSTEM PROMPT", (summary, palette.dim))
    for index, segment in enumerate(request.system_prompt, 1):
        source: list[Part] = [(segment.source, palette.key)]
        if segment.injection_id is not None:
            source += [" · ", (segment.injection_id, palette.accent)]
        if segment.retrieval is not None:  # a recalled chunk: which source, how it scored
            source += retrieval_parts(segment.retrieval, palette)
        doc.line(f"[{index}] ", *source, indent=2)
        doc.content(segment.text)


def _messages(doc: DocBuilder, request: LlmRequest) -> None:
    """The messages sent, each tagged with its role, tool and the injection that delivered it."""
    palette = doc.palette
    doc.heading("MESSAGES", (f"  {len(request.messages)}", palette.dim))
    for index, message in enumerate(request.messages, 1):
        tags: list[Part] = [(message.role, palette.key)]
        if message.tool_name is not None:
            tags += [" ", (message.tool_name, palette.accent)]
        if message.tool_call_id is not None:
            tags += [" · ", (message.tool_call_id, palette.dim)]
        if message.injection_id is not None:
            tags += [" · delivered by ", (message.injection_id, palette.accent)]
        doc.line(f"[{index}] ", *tags, indent=2)
        if message.content or not message.tool_calls:
            doc.content(message.content)
        for tool_call in message.tool_calls or []:
            doc.line(
                ("calls ", palette.dim),
                (tool_call.name, palette.accent),
                "(",
                (tool_call.id, palette.dim),
                ") ",
                (compact_json(tool_call.args), ""),
                indent=4,
            )


def _tools_offered(doc: DocBuilder, request: LlmRequest) -> None:
    """The tool schemas offered, each with the injection that contributed it."""
    palette = doc.palette
    doc.heading("TOOLS", (f"  {len(request.tools)} offered", palette.dim))
    for schema in request.tools:
        origin: list[Part] = (
            [" · from ", (schema.injection_id, palette.accent)] if schema.injection_id else []
        )
        doc.line((schema.name, palette.key), *origin, "  ", (schema.description, palette.dim), indent=2)
        if schema.parameters:
            doc.content(pretty_json(schema.parameters), rows=3, style=palette.dim)


def _reply(doc: DocBuilder, response: LlmResponse | None, provenance: _Provenance) -> None:
    """The reply's content and tool calls, each call with where its arguments came from."""
    palette = doc.palette
    doc.heading("REPLY")
    if response is None:
        doc.line(("no reply (the call failed)", palette.bad), indent=2)
        return
    if response.content or not response.tool_calls:
        doc.content(response.content, indent=2)
    for tool_call in response.tool_calls:
        doc.line(
            ("tool call ", palette.key),
            (tool_call.name, palette.accent),
            " · ",
            (tool_call.id, palette.dim),
            indent=2,
        )
        doc.content(pretty_json(tool_call.args), rows=4)
        rows = provenance.get(tool_call.id)
        if rows is not None:
            _provenance_rows(doc, *rows)
        if tool_call.raw_args is not None:
            doc.line(("raw arguments (not valid JSON):", palette.bad), indent=4)
            doc.content(tool_call.raw_args)


class CallView(IterationDocument):
    """The call view of the selected iteration."""

    def document(self, iteration: Iteration) -> list[Block]:
        return call_document(self.session, iteration, self.palette)

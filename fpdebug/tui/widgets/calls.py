"""CallView: the exact request of the selected iteration's LLM call(s), by slot, and the reply.

The system prompt is shown segment by segment, each tagged with the injection it came from
(``base`` for the agent's own prompt); then the messages (a message a messages-slot injection
delivered is tagged too), the tool schemas offered (with the injection that contributed each), the
reply with its tool calls, tokens, latency and error, and the tool results of the batch. Every
content is untrusted: made inert and collapsed when long (``e`` expands).
"""

from __future__ import annotations

from rich.text import Text

from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import LlmCallEvent, ToolResultEvent
from fpdebug.tui.session import TraceSession
from fpdebug.tui.text import Palette, compact_json, number, pretty_json
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView

__all__ = ["CallView", "call_document"]


def call_document(session: TraceSession, iteration: Iteration, palette: Palette) -> list[Block]:
    """The call view of one iteration.

    Args:
        session: The trace.
        iteration: Whose LLM call(s) to show.
        palette: Styles.
    """
    doc = DocBuilder(palette)
    calls = []
    for line in iteration.llm_lines:
        record = session.record(line)
        if isinstance(record, LlmCallEvent):
            calls.append((line, record))
    if not calls:
        doc.line(Text(f"{session.label(iteration)} made no LLM call", style=palette.dim))
        return doc.blocks
    for line, call in calls:
        try:
            _one_call(doc, session, iteration, line, call)
        except Exception as error:  # noqa: BLE001 - a bad record must not crash the view
            doc.error(f"call on line {line}", error)
    results = []
    for line in iteration.tool_result_lines:
        record = session.record(line)
        if isinstance(record, ToolResultEvent):
            results.append(record)
    if results:
        doc.heading("TOOL RESULTS", (f"  the batch this reply asked for ({len(results)})", palette.dim))
        for result in results:
            status = result.status or ("failure" if result.error else "returned")
            doc.line(
                (result.tool_name, palette.accent),
                " · ",
                (result.tool_call_id, palette.dim),
                " → ",
                (status, palette.bad if status in ("failure", "denied", "invalid") else ""),
                f" · {number(result.duration_ms)} ms",
                indent=2,
            )
            if result.coverage:
                doc.line(("coverage ", palette.dim), (result.coverage, ""), indent=4)
            if result.error is not None:
                doc.line(
                    ("error ", palette.bad), (f"{result.error.type}: {result.error.message}", ""), indent=4
                )
            doc.content(result.result, indent=4)
    return doc.blocks


def _one_call(
    doc: DocBuilder, session: TraceSession, iteration: Iteration, line: int, call: LlmCallEvent
) -> None:
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
        doc.fact(
            "tokens",
            f"{number(usage.input_tokens)} in · {number(usage.output_tokens)} out",
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
    if call.error is not None:
        status = f" (HTTP {call.error.status})" if call.error.status is not None else ""
        doc.fact("error", (f"{call.error.type}{status}: {call.error.message}", palette.bad))

    total = sum(len(segment.text) for segment in request.system_prompt)
    summary = f"  {len(request.system_prompt)} segment(s), {number(total)} characters, joined by a blank line"
    doc.heading("SYSTEM PROMPT", (summary, palette.dim))
    for index, segment in enumerate(request.system_prompt, 1):
        source = [(segment.source, palette.key)]
        if segment.injection_id is not None:
            source += [" · ", (segment.injection_id, palette.accent)]
        doc.line(f"[{index}] ", *source, indent=2)
        doc.content(segment.text)

    doc.heading("MESSAGES", (f"  {len(request.messages)}", palette.dim))
    for index, message in enumerate(request.messages, 1):
        tags: list = [(message.role, palette.key)]
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

    doc.heading("TOOLS", (f"  {len(request.tools)} offered", palette.dim))
    for schema in request.tools:
        origin = [" · from ", (schema.injection_id, palette.accent)] if schema.injection_id else []
        doc.line((schema.name, palette.key), *origin, "  ", (schema.description, palette.dim), indent=2)
        if schema.parameters:
            doc.content(pretty_json(schema.parameters), rows=3, style=palette.dim)

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
        if tool_call.raw_args is not None:
            doc.line(("raw arguments (not valid JSON):", palette.bad), indent=4)
            doc.content(tool_call.raw_args)


class CallView(DocumentView):
    """The call view of the selected iteration."""

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.row: int | None = None
        """The timeline row shown."""
        self._shown: tuple[int, int] | None = None

    def show(self, row: int | None, *, force: bool = False) -> None:
        """Show the call(s) of timeline row ``row``."""
        version = None if row is None else (row, len(self.session.iterations[row]))
        if version == self._shown and not force:
            return
        same_row = self.row == row
        self.row = row
        self._shown = version
        self.rebuild(keep_scroll=same_row)

    def build(self) -> list[Block]:
        if self.row is None or self.row >= len(self.session.iterations):
            doc = DocBuilder(self.palette)
            doc.line(("No iteration selected yet.", self.palette.dim))
            return doc.blocks
        return call_document(self.session, self.session.iterations[self.row], self.palette)

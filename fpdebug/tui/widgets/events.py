"""EventList and EventDetail: the raw trace, one row per line, and the selected record in full.

Every line of the file is a row, the header included. A row is rendered from the validated record
of that line (the reader validates only the lines on screen and caches them): a corrupt line is an
*invalid record* row, a kind this fpdebug does not know is an *opaque* row. Neither ever stops the
view.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import singledispatch

from rich.text import Text

from fpdebug.errors import TraceError
from fpdebug.trace.records import InvalidRecord, OpaqueRecord, Record, TornTail
from fpdebug.trace.schema import (
    CompactEvent,
    CursorMoveEvent,
    EndState,
    EngagementEvent,
    FindingEvent,
    LeaseGrantEvent,
    LeasePruneEvent,
    LlmCallEvent,
    OutputRetryEvent,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunEndEvent,
    RunStartEvent,
    SkillRejectedEvent,
    StoppedEarly,
    ToolResultEvent,
    TraceHeader,
    TurnEndEvent,
    TurnStartEvent,
    WrapUpEvent,
)
from fpdebug.tui.text import Palette, clip, compact_json, counted, number, plain
from fpdebug.tui.widgets.document import Block, DocBuilder, DocumentView, Part
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.views.session import TraceSession

__all__ = [
    "EventDetail",
    "EventList",
    "event_document",
    "events_header",
    "summarize",
    "torn_document",
    "torn_tail_at",
    "torn_words",
]

_MAX_DEPTH = 12
_MAX_ITEMS = 200
_INLINE = 100


def summarize(record: Record) -> str:
    """One line saying what a record is about (untrusted parts included: display through ``plain``)."""
    return _summary(record)


@singledispatch
def _summary(record: object) -> str:
    """A record no summary below is registered for: its kind (each kind registers its own)."""
    return getattr(record, "kind", type(record).__name__)


@_summary.register
def _invalid_summary(record: InvalidRecord) -> str:
    return f"invalid record: {record.error}"


@_summary.register
def _opaque_summary(record: OpaqueRecord) -> str:
    return f"opaque record of a kind this fpdebug does not know ({record.kind!r})"


@_summary.register
def _header_summary(record: TraceHeader) -> str:
    return f"{record.producer} · schema {record.schema_version} · created {record.created.isoformat()}"


@_summary.register
def _run_start_summary(record: RunStartEvent) -> str:
    return (
        f"{record.agent_name} · {record.provider}/{record.model} · {counted(len(record.injections), 'injection')}"
        f" · max {counted(record.max_iterations, 'iteration')}"
    )


@_summary.register
def _turn_start_summary(record: TurnStartEvent) -> str:
    return f"user: {clip(record.user_message, 300)}"


@_summary.register
def _turn_end_summary(record: TurnEndEvent) -> str:
    early = f" · stopped early ({_stop(record.stopped_early)})" if record.stopped_early else ""
    refused = f" · REFUSED ({clip(record.refusal, 40)})" if record.refusal else ""
    wrapped = " · wrapped up" if record.stopped_early and record.stopped_early.wrapped_up else ""
    return f"answer: {clip(record.final_content, 300)}{early}{wrapped}{refused}{_left(record.end_state)}"


def _stop(stop: StoppedEarly) -> str:
    """``max-iterations``, or ``cost-budget: $0.0045 of $0.004`` when the budget's figures are there."""
    if stop.reason == "cost-budget" and stop.spent_usd is not None and stop.budget_usd is not None:
        return f"cost-budget: ${stop.spent_usd:.4g} of ${stop.budget_usd:.4g}"
    return stop.reason


@_summary.register
def _output_retry_summary(record: OutputRetryEvent) -> str:
    return f"output retry {record.attempt} of {record.max_retries}: {clip(record.error, 200)}"


@_summary.register
def _compact_summary(record: CompactEvent) -> str:
    return f"compacted: {record.dropped} older message(s) folded away ({record.limit}); {record.kept} kept"


@_summary.register
def _wrap_up_summary(record: WrapUpEvent) -> str:
    cut = "past the cost budget" if record.reason == "cost-budget" else "at the iteration limit"
    return f"wrap-up: {record.pending_tool_calls} call(s) asked for {cut} never ran; one more call, tools off"


def _left(state: EndState | None) -> str:
    """`` · left: cursor X, 2 lease(s), 1 map parked``: the carriers a turn or run left at its end."""
    if state is None:
        return ""
    parts = [f"cursor {clip(state.cursor, 40) if state.cursor is not None else '(none)'}"]
    if state.leases is not None:
        parts.append(f"{len(state.leases)} lease(s)")
    if state.engagement:
        parked = sum(1 for record in state.engagement if record.standing == "parked")
        parts.append(f"{parked} of {len(state.engagement)} map(s) parked")
    if state.step_pointer:
        pointer = state.step_pointer[0]
        parts.append(
            f"step {min(pointer.step, pointer.total)}/{pointer.total} of {clip(pointer.skill_id, 30)}"
        )
    return " · left: " + ", ".join(parts)


@_summary.register
def _pass_summary(record: PassEvent) -> str:
    leases = f" · leases {', '.join(record.lease_active_ids)}" if record.lease_active_ids else ""
    parked = f" · parked {len(record.parked_ids)}" if record.parked_ids else ""
    return (
        f"{len(record.active_ids)} active of {record.evaluated_total} · skipped {len(record.skipped)}"
        f"{leases}{parked}"
    )


@_summary.register
def _cursor_move_summary(record: CursorMoveEvent) -> str:
    moved = f"{record.from_skill or '(none)'} → {record.to_skill or '(none)'}"
    return f"{moved} by {record.by} ({record.strength})"


@_summary.register
def _lease_grant_summary(record: LeaseGrantEvent) -> str:
    lease = record.lease
    lease_text = f"{lease.instruction_id} {lease.delivery_lease}"
    # docs/context-model.md §4: a lease granted while no skill held the tenure has no skill_id (not a skill named None)
    tenant = f"tenant {lease.skill_id}" if lease.skill_id is not None else "no tenant"
    return f"{lease_text} granted by {lease.tool_name} ({tenant})"


@_summary.register
def _lease_prune_summary(record: LeasePruneEvent) -> str:
    pruned = ", ".join(f"{item.instruction_id} {item.reason}" for item in record.pruned)
    tenant = f"tenant {record.tenant}" if record.tenant is not None else "no tenant"
    return f"{record.site} sweep, {tenant}: {pruned}"


@_summary.register
def _engagement_summary(record: EngagementEvent) -> str:
    changes = ", ".join(f"{c.map_id} {c.kind}" for c in record.changes) or "no change"
    standing = ", ".join(f"{r.map_id} {r.standing} ({r.by}, idle {r.idle})" for r in record.records)
    return f"{changes} · {standing}"


@_summary.register
def _llm_call_summary(record: LlmCallEvent) -> str:
    if record.error is not None:
        return f"call {record.call_index} failed: {record.error.type}: {record.error.message}"
    usage = record.response.usage if record.response is not None else None
    tokens = (
        f"{number(usage.total_input_tokens(record.provider))} in / {number(usage.output_tokens)} out"
        if usage
        else "no reply"
    )
    latency = f"{number(record.latency_ms)} ms"
    return f"call {record.call_index} · {record.model} · {tokens} · {latency} · {record.route}"


@_summary.register
def _tool_result_summary(record: ToolResultEvent) -> str:
    status = record.status or ("failure" if record.error else "returned")
    return f"{record.tool_name} ({record.tool_call_id}) → {status}: {clip(record.result, 200)}"


@_summary.register
def _finding_summary(record: FindingEvent) -> str:
    return f"{record.layer} layer · {len(record.rows)} row(s)"


@_summary.register
def _skill_rejected_summary(record: SkillRejectedEvent) -> str:
    cursor = f"cursor {record.current_skill_id}" if record.current_skill_id is not None else "no cursor"
    return f"read_skill {record.requested_id} rejected ({cursor})"


@_summary.register
def _route_conflict_summary(record: RouteConflictEvent) -> str:
    return f"winner {record.winner.tool_name}→{record.winner.target}, {len(record.losers)} loser(s)"


@_summary.register
def _reroute_superseded_summary(record: RerouteSupersededEvent) -> str:
    return f"{record.volunteered_id} volunteered, cursor went to {record.won_id or '(none)'}"


@_summary.register
def _run_end_summary(record: RunEndEvent) -> str:
    error = f": {record.error.type}: {record.error.message}" if record.error else ""
    return f"{record.status}{error} · {record.turns} turn(s){_left(record.end_state)}"


def _where(record: Record) -> str:
    """``T1·I3``: the turn and iteration a record carries (an opaque one's only when they are ints)."""
    turn: object
    iteration: object
    if isinstance(record, OpaqueRecord):
        turn = record.data.get("turn")
        iteration = record.data.get("iteration")
        turn = turn if type(turn) is int else None
        iteration = iteration if type(iteration) is int else None
    elif isinstance(record, (TraceHeader, InvalidRecord)):
        turn = iteration = None  # the header and a broken line carry no place in the run
    else:
        turn, iteration = record.turn, record.iteration
    if turn is None:
        return ""
    return f"T{turn}" + (f"·I{iteration}" if iteration is not None else "")


def events_header() -> Text:
    """The column titles above the event rows (a ``=`` under ``seq`` means the seq is the line's number)."""
    return Text(f"{'line':>7} {'seq':>6} {'kind':<18} {'where':<8} what", no_wrap=True, end="")


class EventList(RowList):
    """Every line of the trace, one row each."""

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""

    def total_rows(self) -> int:
        # One more row for a torn tail: the bytes after the last newline are not a record (yet).
        return self.session.lines + (1 if torn_tail_at(self.session, self.session.lines) else 0)

    def row_version(self, row: int) -> Hashable:
        torn = torn_tail_at(self.session, row)
        if torn is not None:
            return ("torn", torn.length)  # it grows while its writer writes, then becomes a record
        return None  # a line never changes once it is indexed

    def render_row(self, row: int, width: int) -> Text:
        palette = self.palette
        torn = torn_tail_at(self.session, row)
        if torn is not None:
            text = Text(no_wrap=True, end="")
            text.append(f"{row:>7} {'':>6} ", palette.dim)
            text.append(f"{'TORN TAIL':<18} ", palette.warn)
            text.append(f"{'':<8} ")
            text.append(torn_words(torn), palette.warn)
            return text
        record = self.session.record(row)
        text = Text(no_wrap=True, end="")
        text.append(f"{row:>7} ", palette.dim)
        seq = None if isinstance(record, TraceHeader) else record.seq
        # A writer numbers seq as the file's lines: the same number twice says nothing, "=" says so.
        shown = "" if seq is None else "=" if seq == row else str(seq)
        text.append(f"{shown:>6} ", palette.dim)
        if isinstance(record, InvalidRecord):
            text.append(f"{'INVALID':<18} ", palette.bad)
            text.append(f"{'':<8} ")
            text.append_text(plain(summarize(record), palette.bad))
            return text
        kind = record.kind
        style = palette.warn if isinstance(record, OpaqueRecord) else palette.accent
        text.append_text(plain(f"{clip(kind, 18):<18} ", style))
        text.append(f"{_where(record):<8} ")
        text.append_text(plain(summarize(record)))
        return text


def torn_tail_at(session: TraceSession, row: int) -> TornTail | None:
    """The torn tail, when ``row`` is its row (the one after the last complete line)."""
    torn = session.torn
    lines = session.lines
    if torn is None or row != lines or torn.line != lines:
        return None  # no tail, another row, or a tail the index has overtaken since it was seen
    return torn


def torn_words(torn: TornTail) -> str:
    """``torn tail: 23 bytes at line 29, not yet a record (…)``: the row of a torn tail."""
    return (
        f"torn tail: {counted(torn.length, 'byte')} at line {torn.line}, not yet a record "
        "(no newline: still being written, or its writer stopped mid-record)"
    )


def torn_document(session: TraceSession, torn: TornTail, palette: Palette) -> list[Block]:
    """What a torn tail holds so far: where it is, why it is not a record, its first bytes (escaped)."""
    doc = DocBuilder(palette)
    doc.line(
        Text(f"Line {torn.line}", style=palette.heading),
        " · ",
        ("torn tail", palette.warn),
        (f"   byte {number(torn.offset)} · {counted(torn.length, 'byte')}", palette.dim),
    )
    doc.line(("the file ends without a newline: these bytes are not a record yet", palette.dim))
    doc.line(
        (
            "while the file is followed they become one when their newline arrives; a writer that was "
            "killed mid-record leaves them for good (fpdebug validate reports a torn-tail)",
            palette.dim,
        )
    )
    doc.heading("First bytes", ("  as written so far, escapes shown", palette.dim))
    try:
        preview = session.reader.torn_bytes(torn).decode("utf-8", "backslashreplace")
    except TraceError as error:
        preview = f"(cannot read them: {error})"
    doc.content(preview, indent=2)
    return doc.blocks


def event_document(session: TraceSession, line: int, palette: Palette) -> list[Block]:
    """Everything one line holds, as a readable tree.

    Args:
        session: The trace.
        line: The line.
        palette: Styles.
    """
    doc = DocBuilder(palette)
    record = session.record(line)
    offset = session.reader.offset(line)
    if isinstance(record, InvalidRecord):
        doc.line(
            Text(f"Line {line}", style=palette.heading),
            " · ",
            ("invalid record", palette.bad),
            (f"   byte {number(offset)} · {counted(record.length, 'byte')}", palette.dim),
        )
        doc.fact("error", (record.error, palette.bad))
        if record.kind is not None:
            doc.fact(
                "claims",
                "kind ",
                (record.kind, palette.accent),
                *([f" · seq {record.seq}"] if record.seq is not None else []),
            )
        doc.heading("First bytes", ("  as recorded, escapes shown", palette.dim))
        doc.content(record.preview, indent=2)
        return doc.blocks
    if isinstance(record, OpaqueRecord):
        doc.line(
            Text(f"Line {line}", style=palette.heading),
            " · ",
            ("opaque record ", palette.warn),
            (record.kind, palette.accent),
            (f"   byte {number(offset)}", palette.dim),
        )
        doc.line(("a kind this fpdebug does not know: kept as written by a newer producer", palette.dim))
        data: object = record.data
    else:
        kind = record.kind
        doc.line(
            Text(f"Line {line}", style=palette.heading),
            " · ",
            (kind, palette.accent),
            (f"   byte {number(offset)}", palette.dim),
        )
        data = record.model_dump(mode="json", exclude_none=True)
    doc.line("")
    _tree(doc, data, 0, 0)
    return doc.blocks


def _tree(doc: DocBuilder, value: object, indent: int, depth: int, key: str | None = None) -> None:
    """``value`` as an indented tree of ``key: value`` rows, bounded in depth and items."""
    palette = doc.palette
    label: list[Part] = [(f"{key}: ", palette.key)] if key is not None else []
    if depth > _MAX_DEPTH:
        doc.line(*label, (clip(compact_json(value), 2000), palette.dim), indent=indent)
    elif isinstance(value, dict):
        _dict_tree(doc, value, label, indent, depth, key)
    elif isinstance(value, list):
        _list_tree(doc, value, label, indent, depth)
    elif isinstance(value, str):
        _string_tree(doc, value, label, indent)
    else:
        doc.line(*label, (compact_json(value), palette.accent), indent=indent)


def _dict_tree(
    doc: DocBuilder, value: dict[object, object], label: list[Part], indent: int, depth: int, key: str | None
) -> None:
    """An object: its key on a row of its own (unless it is the root), then each member below."""
    palette = doc.palette
    if not value:
        doc.line(*label, ("{}", palette.dim), indent=indent)
        return
    if key is not None:
        doc.line(*label, indent=indent)
        indent += 2
    for index, (name, item) in enumerate(value.items()):
        if index >= _MAX_ITEMS:
            doc.line((f"… {len(value) - _MAX_ITEMS} more keys", palette.dim), indent=indent)
            break
        _tree(doc, item, indent, depth + 1, str(name))


def _inline(value: list[object]) -> bool:
    """Whether a list is short scalars only, so that it reads best on one row."""
    scalars = all(
        isinstance(item, (int, float, bool)) or item is None or (isinstance(item, str) and len(item) < 40)
        for item in value
    )
    return scalars and len(compact_json(value)) <= _INLINE


def _list_tree(doc: DocBuilder, value: list[object], label: list[Part], indent: int, depth: int) -> None:
    """A list: on one row when short scalars, else its length, then each item below."""
    palette = doc.palette
    if not value:
        doc.line(*label, ("[]", palette.dim), indent=indent)
        return
    if _inline(value):
        doc.line(*label, (compact_json(value), ""), indent=indent)
        return
    doc.line(*label, (f"({len(value)})", palette.dim), indent=indent)
    for index, item in enumerate(value):
        if index >= _MAX_ITEMS:
            doc.line((f"… {len(value) - _MAX_ITEMS} more items", palette.dim), indent=indent + 2)
            break
        _tree(doc, item, indent + 2, depth + 1, f"[{index}]")


def _string_tree(doc: DocBuilder, value: str, label: list[Part], indent: int) -> None:
    """A string: inline when short, else its length and the content (collapsed when long)."""
    if len(value) > _INLINE or "\n" in value:
        doc.line(*label, (f"({counted(len(value), 'character')})", doc.palette.dim), indent=indent)
        doc.content(value, indent=indent + 2, rows=6)
    else:
        doc.line(*label, (value, ""), indent=indent)


class EventDetail(DocumentView):
    """The selected line in full."""

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """The trace."""
        self.line: int | None = None
        """The line shown."""
        self._torn: int | None = None  # the length of the torn tail shown on ``line``, if it is one

    def show(self, line: int | None) -> None:
        """Show ``line`` (again when it was a torn tail that grew or became a record)."""
        torn = torn_tail_at(self.session, line) if line is not None else None
        length = torn.length if torn is not None else None
        if line == self.line and length == self._torn:
            return
        self.line = line
        self._torn = length
        self.rebuild()

    def build(self) -> list[Block]:
        torn = torn_tail_at(self.session, self.line) if self.line is not None else None
        if torn is not None:
            return torn_document(self.session, torn, self.palette)
        if self.line is None or self.line >= self.session.lines:
            doc = DocBuilder(self.palette)
            doc.line(("No line selected.", self.palette.dim))
            return doc.blocks
        return event_document(self.session, self.line, self.palette)

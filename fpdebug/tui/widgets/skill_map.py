"""SkillMapView: the declared skill map of a run with the cursor's path over it (docs/context-model.md §5).

From the run's ``run_start`` it draws the map: nodes (entries marked ``▶``), edges as arrows between
boxes, each edge tagged with a letter that the edge list explains (on tool return, on tool status,
when, guards, or a model edge the ``read_skill`` pick takes). Over it, up to the selected iteration:
the node the cursor is on (heavy box), the nodes it visited, the edges it took; the path itself hop
by hop with its ``by`` (entry, route, model-pick, tool-proposal, stay…), strength and witness; and
the refused picks (``skill_rejected``), route conflicts and superseded reroutes on the way.

A small map is drawn box-and-arrow (:mod:`~fpdebug.tui.widgets.map_layout`); a big one (or a view
too narrow for the drawing) is listed as an outline, node by node with its edges, which works at any
size. Every id, label and witness comes from the trace and reaches the screen through
:func:`~fpdebug.tui.text.plain` (inert, never parsed as markup).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from rich.console import Console
from rich.style import Style
from rich.text import Text

from fpdebug.trace.model import Iteration
from fpdebug.trace.schema import (
    CursorMoveEvent,
    EdgeDecl,
    EngagementEvent,
    EntryDecl,
    PassEvent,
    RerouteSupersededEvent,
    RouteConflictEvent,
    RunStartEvent,
    SkillMapDecl,
    SkillRejectedEvent,
)
from fpdebug.tui.text import Palette, clip, compact_json
from fpdebug.tui.widgets.document import Block, DocBuilder, Part, blank
from fpdebug.tui.widgets.iteration_document import IterationDocument
from fpdebug.tui.widgets.map_layout import Diagram, MapEdge, edge_tags, layout_map
from fpdebug.tui.widgets.skill_map_trees import trees_section
from fpdebug.views.session import TraceSession

__all__ = [
    "PATH_LIMIT",
    "CursorPath",
    "DiagramBlock",
    "Hop",
    "SkillMapView",
    "cursor_path",
    "edge_condition",
    "entry_condition",
    "skill_map_document",
]

PATH_LIMIT = 200
"""Hops of the cursor's path shown (the most recent ones up to the selected iteration)."""

_HEAVY = str.maketrans("┌┐└┘─│├┤", "┏┓┗┛━┃┣┫")


@dataclass(frozen=True)
class Hop:
    """One recorded cursor move."""

    label: str
    """``T1·I3``."""
    line: int
    """The ``cursor_move`` line."""
    move: CursorMoveEvent
    """The record."""


@dataclass
class CursorPath:
    """The cursor's path over a run up to an iteration, and what was refused or contested on the way."""

    hops: list[Hop] = field(default_factory=list)
    """The moves, oldest first."""
    truncated: bool = False
    """Older moves exist that are not in :attr:`hops`."""
    rejected: list[tuple[str, SkillRejectedEvent]] = field(default_factory=list)
    """Refused ``read_skill`` picks, with their iteration label."""
    conflicts: list[tuple[str, RouteConflictEvent]] = field(default_factory=list)
    """Route conflicts, with their iteration label."""
    superseded: list[tuple[str, RerouteSupersededEvent]] = field(default_factory=list)
    """Picks or proposals the pass did not honour, with their iteration label."""

    @property
    def current(self) -> str | None:
        """Where the cursor is after the last hop."""
        return self.hops[-1].move.to_skill if self.hops else None

    @property
    def visited(self) -> set[str]:
        """Every node the cursor stood on."""
        return {hop.move.to_skill for hop in self.hops if hop.move.to_skill is not None}


def cursor_path(session: TraceSession, row: int, *, limit: int = PATH_LIMIT) -> CursorPath:
    """The path of the selected iteration's run up to (and including) timeline row ``row``.

    Reads backwards from ``row`` and stops at the run's first line or after ``limit`` hops, so a
    huge trace costs one screen's worth of records.
    """
    target = session.iterations[row]
    run = session.run_of(target)
    first_line = run.first_line if run is not None else 0
    path = CursorPath()
    hops: list[Hop] = []
    position = row
    while position >= 0:
        iteration = session.iterations[position]
        position -= 1
        if iteration.first_line < first_line:
            break
        if iteration.run_id != target.run_id:
            continue
        if len(hops) >= limit:
            path.truncated = path.truncated or iteration.cursor_line is not None
            if path.truncated:
                break
            continue
        label = session.label(iteration)
        _collect(session, iteration, label, hops, path)
    hops.reverse()
    path.hops = hops
    path.rejected.reverse()
    path.conflicts.reverse()
    path.superseded.reverse()
    return path


def _collect(
    session: TraceSession, iteration: Iteration, label: str, hops: list[Hop], path: CursorPath
) -> None:
    line = iteration.cursor_line
    if line is not None:
        record = session.record(line)
        if isinstance(record, CursorMoveEvent):
            hops.append(Hop(label, line, record))
    for line in reversed(iteration.skill_rejected_lines):
        record = session.record(line)
        if isinstance(record, SkillRejectedEvent):
            path.rejected.append((label, record))
    for line in reversed(iteration.route_conflict_lines):
        record = session.record(line)
        if isinstance(record, RouteConflictEvent):
            path.conflicts.append((label, record))
    for line in reversed(iteration.reroute_superseded_lines):
        record = session.record(line)
        if isinstance(record, RerouteSupersededEvent):
            path.superseded.append((label, record))


def entry_condition(entry: EntryDecl, palette: Palette, mode: str | None = None) -> list[Part]:
    """How an entry is chosen, in words (docs/context-model.md §5.1–5.3); ``mode`` is the map's
    exclusive-entry mode, when it has one."""
    parts: list[Part]
    if mode == "relevance":
        parts = ["exclusive ", ("(entered when it scores best; the first when nothing does)", palette.dim)]
    elif mode == "read":
        parts = ["exclusive ", ("(entered when the model reads it)", palette.dim)]
    elif entry.kind == "unconditional":
        parts = ["unconditional ", ("(enters when no earlier entry matches)", palette.dim)]
    elif entry.kind == "keywords":
        parts = ["keywords ", (", ".join(entry.keywords or []) or "(none)", palette.key)]
    elif entry.kind == "regex":
        parts = ["regex /", (entry.pattern or "", palette.key), "/"]
    else:
        parts = ["when ", (entry.description or "a predicate", palette.key)]
    if entry.description and entry.kind != "when":
        parts += ["  ", (entry.description, palette.dim)]
    return parts


def edge_condition(edge: EdgeDecl, palette: Palette) -> list[Part]:
    """What fires an edge, in words: tool return, tool status, when, guards, or the model's pick."""
    parts: list[Part] = []
    if edge.on_tool_status:
        parts += ["on status ", (" | ".join(edge.on_tool_status), palette.key)]
        if edge.on_tool_return is not None:
            parts += [" of ", *_tool_name(edge, palette)]
    elif edge.on_tool_return is not None:
        parts += ["on tool return ", *_tool_name(edge, palette)]
    if edge.when is not None:
        parts += [" · " if parts else "", "when ", (edge.when, palette.key)]
    for guard in edge.guards:
        value = compact_json(guard.value)
        parts += [" · " if parts else "", "guard ", (f"{guard.field} {guard.op} {value}", palette.key)]
    if not edge.deterministic:
        parts += [" · " if parts else "", ("model edge: taken by a read_skill pick", palette.dim)]
    elif not parts:
        parts = [("deterministic (no condition recorded)", palette.dim)]
    return parts


def _tool_name(edge: EdgeDecl, palette: Palette) -> list[Part]:
    name = edge.on_tool_return or ""
    return ["/", (name, palette.key), "/"] if edge.tool_is_pattern else [(name, palette.key)]


@dataclass(frozen=True)
class _Marks:
    current: str | None = None
    visited: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    taken: frozenset[str] = frozenset()
    contested: frozenset[str] = frozenset()


class DiagramBlock(Block):
    """A drawn map: rows never wrap; a view too narrow for it shows one row saying so.

    Args:
        diagram: The drawing.
        marks: What to highlight.
        palette: Styles.
        indent: Spaces before every row.
    """

    def __init__(self, diagram: Diagram, marks: _Marks, palette: Palette, *, indent: int = 2) -> None:
        self.diagram = diagram
        """The drawing."""
        self.indent = indent
        """Spaces before every row."""
        self._marks = marks
        self._palette = palette
        self._rows: list[Text] | None = None

    def fits(self, width: int) -> bool:
        """Whether the drawing fits in ``width`` columns."""
        return self.diagram.width + self.indent <= width

    def height(self, console: Console, width: int, expanded: bool) -> int:
        return self.diagram.height if self.fits(width) else len(self._note(console, width))

    def _note(self, console: Console, width: int) -> list[Text]:
        """What stands in for a drawing too wide for ``width``, wrapped to it."""
        need = self.diagram.width + self.indent
        note = Text(
            f"(the drawing needs {need} columns; the lists below say it all)", style=self._palette.dim
        )
        lines = note.wrap(console, max(width - self.indent, 1))
        return [Text(" " * self.indent, end="") + line for line in lines]

    def row(self, console: Console, width: int, expanded: bool, y: int) -> Text:
        if not self.fits(width):
            lines = self._note(console, width)
            return lines[y] if 0 <= y < len(lines) else Text(end="")
        if self._rows is None:
            self._rows = [self._render(y) for y in range(self.diagram.height)]
        return Text(" " * self.indent, end="") + self._rows[y]

    def _style(self, role: tuple[str, str] | None) -> Style:
        palette, marks = self._palette, self._marks
        if role is None:
            return Style()
        kind, name = role
        if kind in ("box", "label"):
            if name == marks.current:
                return palette.accent
            if name in marks.visited:
                return palette.good
            if name in marks.refused:
                return palette.warn
            return Style() if kind == "label" else palette.dim
        if kind == "tag":
            return palette.key + (palette.accent if name in marks.taken else Style())
        if name in marks.taken:
            return palette.accent
        if name in marks.contested:
            return palette.warn
        return palette.dim

    def _render(self, y: int) -> Text:
        chars, roles = self.diagram.chars[y], self.diagram.roles[y]
        text = Text(end="", no_wrap=True)
        run: list[str] = []
        run_style: Style | None = None
        for char, role in zip(chars, roles, strict=True):
            if role is not None and role[0] == "box" and role[1] == self._marks.current:
                char = char.translate(_HEAVY)
            style = self._style(role)
            if style != run_style and run:
                text.append("".join(run), run_style)
                run = []
            run_style = style
            run.append(char)
        if run:
            text.append("".join(run), run_style)
        text.rstrip()
        return text


def skill_map_document(
    session: TraceSession,
    row: int | None,
    palette: Palette,
    *,
    diagrams: dict[str, Diagram | None] | None = None,
) -> list[Block]:
    """The skill map view: the map of the selected iteration's run, the path up to that iteration.

    Args:
        session: The trace.
        row: The selected timeline row (``None``: the last run's map without a path).
        palette: Styles.
        diagrams: A cache of drawings by run id (a run's map never changes).
    """
    doc = DocBuilder(palette)
    iteration: Iteration | None = None
    if row is not None and 0 <= row < len(session.iterations):
        iteration = session.iterations[row]
        run_id = iteration.run_id
    elif session.model.runs:
        run_id = session.model.runs[-1].run_id
    else:
        doc.line(("No run yet.", palette.dim))
        return doc.blocks
    start = session.run_start(run_id)
    if start is None:
        doc.line(("The run's run_start has not been read yet: its declared map is unknown.", palette.dim))
        return doc.blocks
    skill_map = start.skill_map
    if skill_map is None:
        doc.line(Text("Skill map", style=palette.heading), " · run ", (run_id, palette.accent))
        missing = session.not_recorded("cursor_move")
        if missing is not None:
            doc.line((f"The skill map and cursor moves are {missing}: none is shown.", palette.dim), indent=2)
            return doc.blocks
        doc.line(("This run declares no skill map: there is no cursor to follow.", palette.dim), indent=2)
        doc.line(
            ("Its context is chosen by each injection's trigger alone (see the Passes view).", palette.dim),
            indent=2,
        )
        return doc.blocks
    path = cursor_path(session, row) if iteration is not None and row is not None else CursorPath()
    tags = edge_tags(len(skill_map.edges))
    marks = _marks(skill_map, tags, path)
    _header(doc, session, start, skill_map, iteration, path)
    diagram = _diagram(skill_map, tags, diagrams, run_id)
    if diagram is not None:
        doc.blocks.append(DiagramBlock(diagram, marks, palette))
        _legend(doc, diagram, marks, session.label(iteration) if iteration is not None else "now")
        _entries(doc, skill_map, tags, marks)
        _edges(doc, skill_map, tags, marks, path)
    else:
        _outline(doc, skill_map, tags, marks, path)
    if skill_map.open_skills:
        doc.heading(
            "Open skills", ("  read_skill from anywhere; they activate, never move the cursor", palette.dim)
        )
        for skill in skill_map.open_skills:
            doc.line((skill, palette.key), indent=2)
    trees_section(
        doc, skill_map, _pass_of(session, iteration), session.label(iteration) if iteration else None
    )
    _path_section(doc, skill_map, tags, path, iteration, session)
    _refusals(doc, path, iteration, session)
    return doc.blocks


def _pass_of(session: TraceSession, iteration: Iteration | None) -> PassEvent | None:
    """The selected iteration's pass record (``None`` when there is none or it is unreadable)."""
    line = iteration.pass_line if iteration is not None else None
    if line is None:
        return None
    try:
        record = session.record(line)
    except IndexError:
        return None
    return record if isinstance(record, PassEvent) else None


def _marks(skill_map: SkillMapDecl, tags: list[str], path: CursorPath) -> _Marks:
    taken: set[str] = set()
    for hop in path.hops:
        tag = _edge_of_move(skill_map, tags, hop.move)
        if tag is not None:
            taken.add(tag)
    contested: set[str] = set()
    for _, conflict in path.conflicts:
        for loser in conflict.losers:
            for tag, edge in zip(tags, skill_map.edges, strict=True):
                if edge.from_skill == conflict.from_skill_id and edge.to_skill == loser.target:
                    contested.add(tag)
    nodes = set(skill_map.nodes)
    return _Marks(
        current=path.current,
        visited=frozenset(path.visited),
        refused=frozenset(event.requested_id for _, event in path.rejected if event.requested_id in nodes),
        taken=frozenset(taken),
        contested=frozenset(contested),
    )


def _edge_of_move(skill_map: SkillMapDecl, tags: list[str], move: CursorMoveEvent) -> str | None:
    """The declared edge a move went along (a route takes a deterministic edge, a pick a model edge)."""
    if move.from_skill is None or move.to_skill is None or move.from_skill == move.to_skill:
        return None
    candidates = [
        (tag, edge)
        for tag, edge in zip(tags, skill_map.edges, strict=True)
        if edge.from_skill == move.from_skill and edge.to_skill == move.to_skill
    ]
    if not candidates:
        return None
    wanted = move.by == "route"
    for tag, edge in candidates:
        if edge.deterministic == wanted:
            return tag
    return candidates[0][0]


def _diagram(
    skill_map: SkillMapDecl, tags: list[str], cache: dict[str, Diagram | None] | None, run_id: str
) -> Diagram | None:
    if cache is not None and run_id in cache:
        return cache[run_id]
    edges = [
        MapEdge(tag, edge.from_skill, edge.to_skill) for tag, edge in zip(tags, skill_map.edges, strict=True)
    ]
    diagram = layout_map(skill_map.nodes, edges, entries=[entry.skill_id for entry in skill_map.entries])
    if cache is not None:
        cache[run_id] = diagram
    return diagram


def _header(
    doc: DocBuilder,
    session: TraceSession,
    start: RunStartEvent,
    skill_map: SkillMapDecl,
    iteration: Iteration | None,
    path: CursorPath,
) -> None:
    palette = doc.palette
    counts = (
        f"   {_plural(len(skill_map.nodes), 'node')} · {_plural(len(skill_map.entries), 'entry', 'entries')}"
        f" · {_plural(len(skill_map.edges), 'edge')}"
    ) + (f" · {_plural(len(skill_map.trees), 'tree')}" if skill_map.trees else "")
    where: list[Part] = [f" · at {session.label(iteration)}"] if iteration is not None else []
    title = Text("Skill map", style=palette.heading)
    doc.line(title, " · run ", (start.run_id, palette.accent), *where, (counts, palette.dim))
    try:
        _cursor_line(doc, iteration, path)
        _standing_lines(doc, session, start, iteration)
    finally:
        doc.blocks.append(blank())


def _standing_lines(
    doc: DocBuilder, session: TraceSession, start: RunStartEvent, iteration: Iteration | None
) -> None:
    """Whether the mount kernel had the map engaged or parked on the selected pass (docs/context-model.md §6)."""
    if iteration is None or start.maps is None or iteration.engagement_line is None:
        return
    record = session.record(iteration.engagement_line)
    if not isinstance(record, EngagementEvent):
        return
    palette = doc.palette
    changed = {change.map_id: change for change in record.changes}
    for standing in record.records:
        parked = standing.standing == "parked"
        line: list[Part] = ["map ", (standing.map_id, palette.key), " "]
        line.append((standing.standing, palette.bad if parked else palette.good))
        line += [f" since I{standing.since} (by ", (standing.by, palette.key), f", idle {standing.idle})"]
        change = changed.get(standing.map_id)
        if change is not None:
            what = "re-engaged" if change.reengaged else change.kind
            line += [("  ← ", palette.warn), (f"{what} on this pass", palette.warn)]
        if parked:
            line.append(("  its members ride only as the park card until a pick re-engages it", palette.dim))
        doc.line(*line, indent=2, hang=4)


def _cursor_line(doc: DocBuilder, iteration: Iteration | None, path: CursorPath) -> None:
    palette = doc.palette
    if iteration is None:
        doc.line(("No iteration yet: the cursor has not moved.", palette.dim), indent=2)
        return
    if not path.hops:
        doc.line(("The cursor has not moved yet in this run.", palette.dim), indent=2)
        return
    last = path.hops[-1]
    since = last
    for hop in reversed(path.hops):
        if hop.move.to_skill != last.move.to_skill:
            break
        if hop.move.by != "stay":
            since = hop
    line: list[Part] = ["cursor on ", (last.move.to_skill or "(none)", palette.accent)]
    line += [" since ", since.label, " (", (since.move.by, palette.key), ")"]
    if last.move.reachable:
        line += ["  reachable from here: ", (", ".join(last.move.reachable), "")]
    doc.line(*line, indent=2, hang=4)


def _legend(doc: DocBuilder, diagram: Diagram, marks: _Marks, at: str) -> None:
    """What the marks on the drawing mean (only the ones it shows)."""
    palette = doc.palette
    drawn = {char for row in diagram.chars for char in row}
    keys: list[tuple[str, Style, str]] = []
    if marks.current is not None:
        keys.append(("┏━┓", palette.accent, f"cursor at {at}"))
    if marks.visited - {marks.current}:
        keys.append(("┌─┐", palette.good, "visited"))
    if marks.refused - marks.visited:
        keys.append(("┌─┐", palette.warn, "refused pick"))
    if marks.taken:
        keys.append(("─▶", palette.accent, "taken"))
    if marks.contested:
        keys.append(("─▶", palette.warn, "lost a conflict"))
    keys.append(("▶", palette.key, "entry"))
    if "↺" in drawn:
        keys.append(("↺", palette.key, "self-loop"))
    if "◀" in drawn:
        keys.append(("◀", palette.key, "edge back to an earlier column"))
    parts: list[Part] = []
    for symbol, style, meaning in keys:
        parts += [Text(symbol + " ", style=style), Text(meaning, style=palette.dim), "  "]
    doc.line(*parts[:-1], indent=2, hang=2)


def _entries(doc: DocBuilder, skill_map: SkillMapDecl, tags: list[str], marks: _Marks) -> None:
    palette = doc.palette
    if skill_map.entry_mode == "relevance":
        note = "  exclusive, by relevance: the best-scored is entered, else the first"
    elif skill_map.entry_mode == "read":
        note = "  exclusive, by read: none on a cold start, the model reads one"
    else:
        note = "  tried in declaration order on a cold start"
    doc.heading("Entries", (note, palette.dim))
    if not skill_map.entries:
        # A map of decision trees alone has no cursor to enter: its leaves hold by their paths.
        why = (
            "its tree leaves need no cursor"
            if skill_map.trees
            else "the map is entered by a pick or a proposal only"
        )
        doc.line((f"(none: {why})", palette.dim), indent=2)
    width = min(max((len(entry.skill_id) for entry in skill_map.entries), default=8), 24) + 2
    for entry in skill_map.entries:
        doc.line(
            "▶ ",
            (clip(entry.skill_id, width).ljust(width), _node_style(entry.skill_id, marks, palette)),
            *entry_condition(entry, palette, skill_map.entry_mode),
            indent=2,
            hang=width + 2,
        )


def _edges(
    doc: DocBuilder, skill_map: SkillMapDecl, tags: list[str], marks: _Marks, path: CursorPath
) -> None:
    palette = doc.palette
    why = "  fire only from their source node; the first match in declaration order wins"
    doc.heading("Edges", (why, palette.dim))
    if not skill_map.edges:
        doc.line(("(none)", palette.dim), indent=2)
        return
    taken_at = _taken_at(skill_map, tags, path)
    ends = [f"{edge.from_skill} → {edge.to_skill}" for edge in skill_map.edges]
    width = min(max(len(end) for end in ends), 40) + 2
    known = set(skill_map.nodes)
    for tag, edge, end in zip(tags, skill_map.edges, ends, strict=True):
        style = _edge_style(tag, marks, palette)
        parts: list[Part] = [(f"{tag:>2} ", palette.key), (clip(end, width).ljust(width), style)]
        parts += edge_condition(edge, palette)
        if tag in taken_at:
            parts += [("   taken ", palette.accent), (", ".join(taken_at[tag]), palette.accent)]
        if edge.from_skill not in known or edge.to_skill not in known:
            parts += [("   names a node the map does not declare", palette.bad)]
        doc.line(*parts, indent=1, hang=width + 4)


def _taken_at(skill_map: SkillMapDecl, tags: list[str], path: CursorPath) -> dict[str, list[str]]:
    taken: dict[str, list[str]] = {}
    for hop in path.hops:
        tag = _edge_of_move(skill_map, tags, hop.move)
        if tag is not None:
            taken.setdefault(tag, []).append(hop.label)
    return {
        tag: labels if len(labels) <= 4 else [*labels[:3], f"… {len(labels) - 3} more"]
        for tag, labels in taken.items()
    }


def _outline(
    doc: DocBuilder, skill_map: SkillMapDecl, tags: list[str], marks: _Marks, path: CursorPath
) -> None:
    """Node by node with its entry condition and outgoing edges: readable at any size."""
    palette = doc.palette
    count = _plural(len(skill_map.nodes), "node")
    doc.heading("Outline", (f"  {count}: listed, too many to draw; each node, then its edges", palette.dim))
    entries = {entry.skill_id: entry for entry in skill_map.entries}
    outgoing: dict[str, list[tuple[str, EdgeDecl]]] = {}
    for tag, edge in zip(tags, skill_map.edges, strict=True):
        outgoing.setdefault(edge.from_skill, []).append((tag, edge))
    taken_at = _taken_at(skill_map, tags, path)
    listed = list(dict.fromkeys([*skill_map.nodes, *outgoing]))
    for node in listed:
        marker = "━▶ " if node == marks.current else "▶  " if node in entries else "   "
        parts: list[Part] = [(marker, palette.accent if node == marks.current else palette.key)]
        parts.append((node, _node_style(node, marks, palette) + Style(bold=True)))
        if node in entries:
            parts += [
                ("  entry: ", palette.dim),
                *entry_condition(entries[node], palette, skill_map.entry_mode),
            ]
        if node == marks.current:
            parts.append(("  ← the cursor", palette.accent))
        if node not in skill_map.nodes:
            parts.append(("  (not declared as a node)", palette.bad))
        doc.line(*parts, indent=1, hang=6)
        for tag, edge in outgoing.get(node, []):
            style = _edge_style(tag, marks, palette)
            line: list[Part] = [(f"{tag:>2} ", palette.key), ("─▶ ", style), (edge.to_skill, style), "  "]
            line += edge_condition(edge, palette)
            if tag in taken_at:
                line += [("   taken ", palette.accent), (", ".join(taken_at[tag]), palette.accent)]
            doc.line(*line, indent=5, hang=6)


def _edge_style(tag: str, marks: _Marks, palette: Palette) -> Style:
    if tag in marks.taken:
        return palette.accent
    return palette.warn if tag in marks.contested else Style()


def _node_style(node: str, marks: _Marks, palette: Palette) -> Style:
    if node == marks.current:
        return palette.accent
    if node in marks.visited:
        return palette.good
    if node in marks.refused:
        return palette.warn
    return Style()


def _path_section(
    doc: DocBuilder,
    skill_map: SkillMapDecl,
    tags: list[str],
    path: CursorPath,
    iteration: Iteration | None,
    session: TraceSession,
) -> None:
    palette = doc.palette
    upto = f"  up to {session.label(iteration)}" if iteration is not None else ""
    doc.heading("Cursor path", (f"{upto} · a hop per pass: from → to, by, strength, witness", palette.dim))
    if not path.hops:
        doc.line(("(no cursor move recorded yet)", palette.dim), indent=2)
        return
    if path.truncated:
        doc.line((f"… earlier hops not shown (the last {len(path.hops)} are)", palette.dim), indent=2)
    label_width = max(len(hop.label) for hop in path.hops) + 2
    ends = [f"{hop.move.from_skill or '·'} → {hop.move.to_skill or '(none)'}" for hop in path.hops]
    end_width = min(max(len(end) for end in ends), 36) + 2
    for hop, end in zip(path.hops, ends, strict=True):
        move = hop.move
        stay = move.by == "stay"
        style = palette.dim if stay else palette.accent
        parts: list[Part] = [
            (hop.label.ljust(label_width), palette.key),
            (clip(end, end_width).ljust(end_width), style),
            (f"{move.by:<14}", palette.dim if stay else palette.key),
            (f"{move.strength:<12}", palette.dim),
        ]
        tag = _edge_of_move(skill_map, tags, move)
        if tag is not None:
            parts += ["edge ", (tag, palette.key), "  "]
        if move.witness is not None:
            parts += ["witness “", (move.witness.text, ""), "”"]
            if move.witness.keyword:
                parts += [" (keyword ", (move.witness.keyword, palette.key), ")"]
        if move.score is not None:  # a turn-start classifier's or scorer's score
            parts += ["  score ", (f"{move.score:g}", "")]
        if move.near_tie is not None:  # tier 2 within the margin: its shortlist went to tier 3
            tie = move.near_tie
            parts += ["  ", (f"near tie ({tie.best:g} vs {tie.runner_up:g})", palette.warn)]
        if move.offered is not None:  # the menu a decider or the model's pick resolved
            head = ": menu " if move.near_tie is not None else "  menu "
            parts += [head, (", ".join(move.offered) or "(empty)", "")]
        if move.declined_offer:
            parts += [("  ✗ declined the menu", palette.warn)]
        if move.conflict is not None:
            parts += [("  ⚡ conflict", palette.warn)]
        if move.guard is not None:
            parts += ["  guard ", (move.guard, "")]
        doc.line(*parts, indent=2, hang=label_width + 2)


def _refusals(doc: DocBuilder, path: CursorPath, iteration: Iteration | None, session: TraceSession) -> None:
    palette = doc.palette
    upto = f"  up to {session.label(iteration)}" if iteration is not None else ""
    doc.heading("Refused picks and conflicts", (upto, palette.dim))
    rows: list[tuple[str, list[Part]]] = []
    for label, rejection in path.rejected:
        parts: list[Part] = [("✕ ", palette.bad), "read_skill(", (rejection.requested_id, palette.warn)]
        parts.append(") refused")
        if rejection.current_skill_id is not None:
            parts += [" on ", (rejection.current_skill_id, "")]
        parts += [" · allowed: ", (", ".join(rejection.allowed) or "(nothing)", "")]
        if rejection.posture is not None:
            parts += [" · posture ", (rejection.posture, palette.key)]
        rows.append((label, parts))
    for label, conflict in path.conflicts:
        losers = ", ".join(f"{p.tool_name} → {p.target}" for p in conflict.losers)
        source = " (tool proposals)" if conflict.source == "tool-proposal" else ""
        parts = [("⚡ ", palette.warn), f"conflict{source} from "]
        parts.append((conflict.from_skill_id or "(no cursor)", ""))
        parts += [": won ", (f"{conflict.winner.tool_name} → {conflict.winner.target}", palette.accent)]
        parts += [" · lost ", (losers or "(none)", palette.warn)]
        rows.append((label, parts))
    for label, reroute in path.superseded:
        parts = [("↷ ", palette.warn), "pick ", (reroute.volunteered_id, palette.warn), " not honoured"]
        if reroute.won_id is not None:
            parts += [": the cursor went to ", (reroute.won_id, "")]
        rows.append((label, parts))
    if not rows:
        doc.line(("(none)", palette.dim), indent=2)
        return
    width = max(len(label) for label, _ in rows) + 2
    for label, parts in _in_order(rows, path):
        doc.line((label.ljust(width), palette.key), *parts, indent=2, hang=width + 2)


def _in_order(rows: list[tuple[str, list[Part]]], path: CursorPath) -> Iterable[tuple[str, list[Part]]]:
    # Keep the trace's order of iterations (the hops give it); rows of one iteration keep theirs.
    order = {hop.label: index for index, hop in enumerate(path.hops)}
    return sorted(rows, key=lambda pair: order.get(pair[0], len(order)))


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


class SkillMapView(IterationDocument):
    """The skill map of the selected iteration's run, with the cursor's path up to it."""

    DEFAULT_CSS = """
    SkillMapView {
        border: round $panel-lighten-2;
        &:focus { border: round $accent; }
    }
    """

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(session, id=id, classes=classes)
        self._diagrams: dict[str, Diagram | None] = {}

    def version(self, row: int | None) -> Hashable:
        """The row, its records so far and the runs (a map is drawn even before any iteration)."""
        size = len(self.session.iterations[row]) if row is not None else 0
        return (row, size, len(self.session.model.runs))

    def build(self) -> list[Block]:
        row = self.row if self.row is not None and self.row < len(self.session.iterations) else None
        return skill_map_document(self.session, row, self.palette, diagrams=self._diagrams)

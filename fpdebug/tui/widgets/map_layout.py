"""A box-and-arrow drawing of a small skill map on a character grid (no Textual, no styles).

:func:`layout_map` places the nodes in columns (layers, left to right: entries first, each node one
column after its furthest predecessor), breaks cycles by drawing back edges in reverse (their
arrowhead points left), threads edges that skip columns through pass-through points, orders each
column by the barycentre of its neighbours, and routes every edge through the channel between two
columns on a lane of its own. The result is a :class:`Diagram`: characters plus a *role* per cell
(which node's box, which edge), so the caller styles the current node, the visited nodes and the
edges the cursor took without laying the map out again.

Node ids are untrusted: a box shows them through :func:`~fpdebug.trace.inert.inert_line`, clipped.
A map too big to draw readably (more than :data:`MAX_DRAWN_NODES` nodes, or too many edges) gets
``None``: the caller lists it instead, which works at any size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len

from fpdebug.trace.inert import inert_line

__all__ = ["MAX_DRAWN_EDGES", "MAX_DRAWN_NODES", "Diagram", "MapEdge", "Role", "edge_tags", "layout_map"]

MAX_DRAWN_NODES = 16
"""Maps with more nodes are listed, not drawn."""

MAX_DRAWN_EDGES = 40
"""Maps with more (drawable) edges are listed, not drawn."""

LABEL_LIMIT = 22
"""Characters of a node id shown in its box (a longer id is clipped with ``…``)."""

_N, _E, _S, _W = 1, 2, 4, 8
_LINES = {
    _E: "─",
    _W: "─",
    _E | _W: "─",
    _N: "│",
    _S: "│",
    _N | _S: "│",
    _E | _S: "┌",
    _W | _S: "┐",
    _N | _E: "└",
    _N | _W: "┘",
    _N | _S | _E: "├",
    _N | _S | _W: "┤",
    _E | _W | _S: "┬",
    _E | _W | _N: "┴",
    _N | _E | _S | _W: "┼",
}

Role = tuple[str, str] | None
"""What a cell belongs to: ``("box", node)``, ``("label", node)``, ``("edge", tag)``, ``("tag", tag)``."""


@dataclass(frozen=True)
class MapEdge:
    """One declared edge, as the drawing needs it."""

    tag: str
    """A short name shown on the edge and in the edge list (``a``, ``b``…)."""
    source: str
    """The node it leaves."""
    target: str
    """The node it enters."""


@dataclass
class Diagram:
    """A drawn map: ``chars[y][x]`` and ``roles[y][x]``."""

    chars: list[list[str]]
    """The characters, row by row."""
    roles: list[list[Role]]
    """Who each cell belongs to."""
    drawn_tags: set[str] = field(default_factory=set)
    """The edges that are drawn (self-loops are marked ``↺`` in their box instead)."""

    @property
    def width(self) -> int:
        """Columns the drawing needs."""
        return len(self.chars[0]) if self.chars else 0

    @property
    def height(self) -> int:
        """Rows of the drawing."""
        return len(self.chars)


def edge_tags(count: int) -> list[str]:
    """``a`` … ``z``, then ``aa``, ``ab`` … (as many as ``count``)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    tags: list[str] = []
    for index in range(count):
        tag = ""
        index += 1
        while index:
            index, rest = divmod(index - 1, 26)
            tag = letters[rest] + tag
        tags.append(tag)
    return tags


@dataclass
class _Item:
    """A box (a node) or a pass-through point of an edge that skips a column."""

    key: str
    layer: int = 0
    node: str | None = None
    label: list[str] = field(default_factory=list)
    """The label, one string per terminal cell."""
    left: list[_Link] = field(default_factory=list)
    right: list[_Link] = field(default_factory=list)
    y: int = 0
    height: int = 1
    width: int = 0

    def port_row(self, link: _Link, *, right: bool) -> int:
        if self.node is None:
            return self.y
        ports = self.right if right else self.left
        return self.y + 1 + ports.index(link)


@dataclass(eq=False)
class _Link:
    """One column-to-column piece of an edge (left item → right item)."""

    edge: MapEdge
    left: _Item
    right: _Item
    reversed: bool
    first: bool
    """This piece touches the edge's left end."""
    last: bool
    """This piece touches the edge's right end."""


def layout_map(
    nodes: Sequence[str],
    edges: Sequence[MapEdge],
    *,
    entries: Iterable[str] = (),
    label_limit: int = LABEL_LIMIT,
) -> Diagram | None:
    """Draw a map, or return ``None`` when it is too big to draw readably.

    Args:
        nodes: The node ids, in declaration order (duplicates are ignored).
        edges: The edges; an edge naming an unknown node is not drawn.
        entries: The entry nodes (marked ``▶`` and placed in the first column).
        label_limit: Characters of an id shown in a box.

    Returns:
        The drawing, or ``None``.
    """
    ids = list(dict.fromkeys(nodes))
    known = set(ids)
    entry_set = set(entries) & known
    loops = {edge.source for edge in edges if edge.source == edge.target and edge.source in known}
    routed = [e for e in edges if e.source in known and e.target in known and e.source != e.target]
    if not ids or len(ids) > MAX_DRAWN_NODES or len(routed) > MAX_DRAWN_EDGES:
        return None
    back = _back_edges(ids, routed, entry_set)
    # Layout direction: a back edge is laid out from its target to its source.
    pairs = [
        ((e.target, e.source, True) if (e.source, e.target) in back else (e.source, e.target, False))
        for e in routed
    ]
    layer = _layers(ids, [(u, v) for u, v, _ in pairs])
    columns: list[list[_Item]] = [[] for _ in range(max(layer.values()) + 1)]
    items = _boxes(ids, layer, columns, entry_set, loops, label_limit)
    links: list[_Link] = []
    for edge, (u, v, is_back) in zip(routed, pairs, strict=True):
        links += _chain(edge, items[u], items[v], is_back, columns)
    _order(columns)
    _sort_ports(columns)
    _place(columns)
    return _draw(columns, links, entry_set)


def _boxes(
    ids: list[str],
    layer: dict[str, int],
    columns: list[list[_Item]],
    entries: set[str],
    loops: set[str],
    label_limit: int,
) -> dict[str, _Item]:
    """One box per node, put in its column; its label marks an entry (``▶``) and a self-loop (``↺``)."""
    items: dict[str, _Item] = {}
    for node in ids:
        label = _clip(inert_line(node), label_limit)
        label = ("▶ " if node in entries else "") + label + (" ↺" if node in loops else "")
        item = items[node] = _Item(key=node, layer=layer[node], node=node, label=_cells(label))
        item.width = len(item.label) + 4
        columns[item.layer].append(item)
    return items


def _chain(
    edge: MapEdge, source: _Item, target: _Item, is_back: bool, columns: list[list[_Item]]
) -> list[_Link]:
    """The links of one edge, column to column, through a pass-through point in every column it skips."""
    chain = [source]
    for between in range(source.layer + 1, target.layer):
        point = _Item(key=f"{edge.tag}~{between}", layer=between)
        columns[between].append(point)
        chain.append(point)
    chain.append(target)
    links: list[_Link] = []
    for position in range(len(chain) - 1):
        link = _Link(
            edge,
            chain[position],
            chain[position + 1],
            is_back,
            first=position == 0,
            last=position == len(chain) - 2,
        )
        chain[position].right.append(link)
        chain[position + 1].left.append(link)
        links.append(link)
    return links


def _sort_ports(columns: list[list[_Item]]) -> None:
    """Order each item's ports by where the other end sits, and size each box to its ports."""
    rank = {item.key: index for column in columns for index, item in enumerate(column)}
    for column in columns:
        for item in column:
            item.right.sort(key=lambda link: (rank[link.right.key], link.edge.tag))
            item.left.sort(key=lambda link: (rank[link.left.key], link.edge.tag))
            if item.node is not None:
                item.height = 2 + max(1, len(item.left), len(item.right))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def _cells(text: str) -> list[str]:
    """One string per terminal cell: a wide character is followed by an empty cell, a zero-width
    one joins the cell before it, so the grid stays aligned whatever the ids hold."""
    cells: list[str] = []
    for char in text:
        width = cell_len(char)
        if width == 0:
            if cells:
                cells[-1] += char
        else:
            cells.append(char)
            cells.extend([""] * (width - 1))
    return cells


def _back_edges(ids: list[str], edges: list[MapEdge], entries: set[str]) -> set[tuple[str, str]]:
    """The edges a depth-first walk from the entries meets going back up its own path."""
    successors: dict[str, list[str]] = {node: [] for node in ids}
    for edge in edges:
        successors[edge.source].append(edge.target)
    state: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    for root in [*(n for n in ids if n in entries), *(n for n in ids if n not in entries)]:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(successors[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(successors[child])))
    return back


def _layers(ids: list[str], pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layering of an acyclic graph (Kahn's order)."""
    incoming = {node: 0 for node in ids}
    successors: dict[str, list[str]] = {node: [] for node in ids}
    for u, v in pairs:
        successors[u].append(v)
        incoming[v] += 1
    layer = {node: 0 for node in ids}
    ready = [node for node in ids if incoming[node] == 0]
    while ready:
        node = ready.pop(0)
        for child in successors[node]:
            layer[child] = max(layer[child], layer[node] + 1)
            incoming[child] -= 1
            if incoming[child] == 0:
                ready.append(child)
    return layer


def _order(columns: list[list[_Item]]) -> None:
    """A few barycentre sweeps (down, then up) to keep edges short and crossings few."""

    def sweep(indices: Iterable[int], neighbours: str) -> None:
        for index in indices:
            column = columns[index]
            positions: dict[str, int] = {}
            for other in (index - 1, index + 1):
                if 0 <= other < len(columns):
                    positions.update({item.key: p for p, item in enumerate(columns[other])})

            # centre() is called only within this iteration, so it sees this column's positions.
            def centre(item: _Item, at: int) -> float:
                links = item.left if neighbours == "left" else item.right
                ends = [
                    positions[(link.left if neighbours == "left" else link.right).key]  # noqa: B023
                    for link in links
                    if (link.left if neighbours == "left" else link.right).key in positions  # noqa: B023
                ]
                return sum(ends) / len(ends) if ends else float(at)

            ranked = sorted(enumerate(column), key=lambda pair: (centre(pair[1], pair[0]), pair[0]))
            column[:] = [item for _, item in ranked]

    for _ in range(2):
        sweep(range(1, len(columns)), "left")
        sweep(range(len(columns) - 2, -1, -1), "right")


def _place(columns: list[list[_Item]]) -> None:
    """Stack each column top-down, pulling an item level with what feeds it when there is room."""
    for column in columns:
        bottom = 0
        for item in column:
            top = bottom
            if item.left:
                link = item.left[0]
                want = link.left.port_row(link, right=True) - (0 if item.node is None else 1)
                top = max(top, want)
            item.y = top
            bottom = top + item.height + 1


class _Canvas:
    """The grid being drawn: characters, roles, and the directions each edge cell connects to."""

    def __init__(self, width: int, height: int) -> None:
        self.bits = [[0] * width for _ in range(height)]
        self.chars = [[" "] * width for _ in range(height)]
        self.roles: list[list[Role]] = [[None] * width for _ in range(height)]
        self.edge_role: dict[tuple[int, int], str] = {}
        """The edge each cell of a line belongs to (the first edge drawn through it keeps it)."""

    def line(self, x0: int, y0: int, x1: int, y1: int, tag: str) -> None:
        """A horizontal or vertical run of edge ``tag``."""
        # Each cell records the directions it connects to, so corners, joins and crossings get
        # the right box-drawing character.
        if y0 == y1:
            low, high = min(x0, x1), max(x0, x1)
            for cx in range(low, high + 1):
                self.bits[y0][cx] |= (_W if cx > low else 0) | (_E if cx < high else 0)
                self.edge_role.setdefault((cx, y0), tag)
        else:
            low, high = min(y0, y1), max(y0, y1)
            for cy in range(low, high + 1):
                self.bits[cy][x0] |= (_N if cy > low else 0) | (_S if cy < high else 0)
                self.edge_role.setdefault((x0, cy), tag)

    def paint_lines(self) -> None:
        """Turn the connection bits into box-drawing characters."""
        for (cx, cy), tag in self.edge_role.items():
            if self.bits[cy][cx]:
                self.chars[cy][cx] = _LINES.get(self.bits[cy][cx], "┼")
                self.roles[cy][cx] = ("edge", tag)


@dataclass
class _Ends:
    """What marks the ends of the edges, drawn over the lines."""

    heads: list[tuple[int, int, str, str]] = field(default_factory=list)
    """Arrowheads: ``(x, y, char, tag)``."""
    tags: list[tuple[int, int, str]] = field(default_factory=list)
    """Where an edge's tag goes, beside its arrowhead."""
    joints: list[tuple[int, int, str]] = field(default_factory=list)
    """Border cells where an edge leaves without an arrowhead."""

    def add(self, link: _Link, start: tuple[int, int], end: tuple[int, int]) -> None:
        """The marks of one link from ``start`` (its left end) to ``end`` (its right end)."""
        tag = link.edge.tag
        (xs, ys), (xt, yt) = start, end
        if link.reversed:
            if link.first:
                self.heads.append((xs, ys, "◀", tag))
                self.tags.append((xs + 1, ys, tag))
            if link.last:
                self.joints.append((xt + 1, yt, "┤"))
        else:
            if link.first:
                self.joints.append((xs - 1, ys, "├"))
            if link.last:
                self.heads.append((xt, yt, "▶", tag))
                self.tags.append((xt - 1, yt, tag))

    def paint(self, canvas: _Canvas) -> None:
        """The arrowheads and the one-letter tags (a tag only replaces a plain horizontal run)."""
        for cx, cy, char, tag in self.heads:
            canvas.chars[cy][cx] = char
            canvas.roles[cy][cx] = ("edge", tag)
        for cx, cy, tag in self.tags:
            if len(tag) == 1 and canvas.chars[cy][cx] in "─":
                canvas.chars[cy][cx] = tag
                canvas.roles[cy][cx] = ("tag", tag)

    def paint_joints(self, canvas: _Canvas) -> None:
        """The joints on the box borders (after the boxes, which would cover them)."""
        for cx, cy, char in self.joints:
            canvas.chars[cy][cx] = char


@dataclass
class _Grid:
    """Where the columns sit: each column's x and width, and the lanes of the channel after it."""

    x_of: list[int]
    widths: list[int]
    lanes: list[list[_Link]]


def _grid(columns: list[list[_Item]], links: list[_Link]) -> _Grid:
    """Column widths, the lanes of each channel, and the x of each column (a channel fits its lanes)."""
    widths = [max([item.width for item in column if item.node is not None] + [5]) for column in columns]
    lanes: list[list[_Link]] = [[] for _ in columns]
    for link in links:
        if link.left.port_row(link, right=True) != link.right.port_row(link, right=False):
            lanes[link.left.layer].append(link)
    for index, channel in enumerate(lanes):
        lanes[index] = _lane_order(channel)
    x_of: list[int] = []
    x = 0
    for index, width in enumerate(widths):
        x_of.append(x)
        x += width + max(6, 2 * len(lanes[index]) + 5)
    return _Grid(x_of, widths, lanes)


def _route(canvas: _Canvas, grid: _Grid, link: _Link) -> tuple[tuple[int, int], tuple[int, int]]:
    """Draw one link: straight when its ports are level, else through its lane; returns its ends."""
    tag = link.edge.tag
    left, right = link.left, link.right
    ys = left.port_row(link, right=True)
    yt = right.port_row(link, right=False)
    xs = grid.x_of[left.layer] + (left.width if left.node is not None else grid.widths[left.layer])
    xt = grid.x_of[right.layer] - 1
    if ys == yt:
        canvas.line(xs, ys, xt, yt, tag)
    else:
        lane = grid.x_of[left.layer] + grid.widths[left.layer] + 2 + 2 * grid.lanes[left.layer].index(link)
        canvas.line(xs, ys, lane, ys, tag)
        canvas.line(lane, ys, lane, yt, tag)
        canvas.line(lane, yt, xt, yt, tag)
    # Horizontal runs end at the box borders: make both ends connect outwards.
    canvas.bits[ys][xs] |= _W
    canvas.bits[yt][xt] |= _E
    return (xs, ys), (xt, yt)


def _draw(columns: list[list[_Item]], links: list[_Link], entries: set[str]) -> Diagram:
    """Draw the placed columns: the edges' lines, their ends, then the boxes over them."""
    grid = _grid(columns, links)
    total_width = grid.x_of[-1] + grid.widths[-1]
    total_height = max((item.y + item.height for column in columns for item in column), default=1)
    canvas = _Canvas(total_width, total_height)
    ends = _Ends()
    for link in links:
        ends.add(link, *_route(canvas, grid, link))
    for column in columns:
        for item in column:
            if item.node is None:  # a pass-through point: the line crosses the whole column
                x0 = grid.x_of[item.layer]
                canvas.line(x0 - 1, item.y, x0 + grid.widths[item.layer], item.y, item.left[0].edge.tag)
    canvas.paint_lines()
    ends.paint(canvas)
    for column in columns:
        for item in column:
            if item.node is not None:
                _box(canvas.chars, canvas.roles, grid.x_of[item.layer], item)
    ends.paint_joints(canvas)
    return Diagram(canvas.chars, canvas.roles, drawn_tags={link.edge.tag for link in links})


def _lane_order(channel: list[_Link]) -> list[_Link]:
    """Lanes left to right so that no two edges run along the same row of the channel.

    On a given row at most one edge leaves (from the left column's port there) and at most one
    arrives (at the right column's port there). The leaving one runs from the left edge to its lane
    and the arriving one from its lane to the right edge: they share no cell when the leaving
    edge's lane is the further left. Those constraints form chains (a cycle is cut anywhere).
    """
    channel = sorted(
        channel,
        key=lambda link: (link.left.port_row(link, right=True), link.right.port_row(link, right=False)),
    )
    arriving = {link.right.port_row(link, right=False): link for link in channel}
    after: dict[int, _Link] = {}
    before: set[int] = set()
    for link in channel:
        other = arriving.get(link.left.port_row(link, right=True))
        if other is not None and other is not link:
            after[id(link)] = other
            before.add(id(other))
    ordered: list[_Link] = []
    placed: set[int] = set()
    for start in [*(link for link in channel if id(link) not in before), *channel]:
        chained: _Link | None = start
        while chained is not None and id(chained) not in placed:
            placed.add(id(chained))
            ordered.append(chained)
            chained = after.get(id(chained))
    return ordered


def _box(chars: list[list[str]], roles: list[list[Role]], x: int, item: _Item) -> None:
    node = item.node
    assert node is not None
    width, height, y = item.width, item.height, item.y
    role: Role = ("box", node)
    for cx in range(x, x + width):
        for cy in range(y, y + height):
            chars[cy][cx] = " "
            roles[cy][cx] = role
        chars[y][cx] = chars[y + height - 1][cx] = "─"
    for cy in range(y, y + height):
        chars[cy][x] = chars[cy][x + width - 1] = "│"
    chars[y][x], chars[y][x + width - 1] = "┌", "┐"
    chars[y + height - 1][x], chars[y + height - 1][x + width - 1] = "└", "┘"
    for offset, char in enumerate(item.label):
        chars[y + 1][x + 2 + offset] = char
        roles[y + 1][x + 2 + offset] = ("label", node)

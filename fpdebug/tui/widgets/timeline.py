"""IterationTimeline: one row per iteration (cursor skill, active count, leases, parks, tools, route, cost,
badges).

Rows come from the model's compact facts plus a few facts peeked with orjson from the lines of
the rows on screen (:mod:`fpdebug.views.facts`); no pydantic model is built for a row. A row's cost
is its iteration's entry in the run's priced calls (:func:`fpdebug.tui.costs.run_costs`, kept per
run and shared with the header, so the rows add up to the header's total).
"""

from __future__ import annotations

from collections.abc import Hashable
from decimal import Decimal
from typing import NamedTuple

from rich.style import Style
from rich.text import Text
from textual.message import Message

from fpdebug.trace.cost import CostTotal
from fpdebug.tui.costs import run_costs
from fpdebug.tui.text import Palette, clip, plain
from fpdebug.tui.widgets.row_list import RowList
from fpdebug.views.session import TraceSession

__all__ = [
    "BADGE_LETTERS",
    "IterationTimeline",
    "compact_dollars",
    "timeline_header",
    "timeline_legend",
    "timeline_width",
]

BADGE_LETTERS: dict[str, str] = {
    "grant": "g",
    "prune": "x",
    "park": "P",
    "reengage": "E",
    "conflict": "C",
    "rejected": "R",
    "superseded": "S",
    "error": "!",
    "invalid": "?",
    "refused": "D",
    "unsupported": "U",
    "beyond": "B",
    "nudge": "N",
    "wrapup": "W",
    "ask": "A",
    "retry": "O",
    "budget": "$",
    "compact": "K",
    "proposal": "p",
    "declined": "M",
}
"""One-letter badges used when the timeline is too narrow for words (listed in the help)."""

_BADGE_WORDS: dict[str, str] = {
    "reengage": "re-engage",
    "invalid": "invalid line",
    "refused": "refusal",
    "unsupported": "unsupported value",
    "beyond": "beyond now",
    "nudge": "step nudge",
    "wrapup": "wrap-up",
    "declined": "declined menu",
    "ask": "argument ask",
    "retry": "output retry",
    "budget": "cost budget",
    "compact": "compacted",
}
"""How the legend spells a badge whose name says less than it could."""

_COLUMN_LEGEND = (
    ("act", "active", "active injections"),
    ("ls", "leases", "leases served"),
    ("pk", "parked", "maps parked"),
    ("tl", "tools", "tool calls"),
)
"""The count columns the legend explains (their titles are two or three letters): short and long words."""


class _Columns(NamedTuple):
    label: int
    skill: int
    active: int
    leases: int
    parked: int
    tools: int
    route: int
    cost: int = 0

    @property
    def fixed(self) -> int:
        """Characters the columns take with their separators (a column of width 0 is not drawn)."""
        return sum(width + 1 for width in self if width)


_WIDE = _Columns(9, 13, 5, 3, 3, 3, 5)
_NARROW = _Columns(7, 10, 3, 2, 2, 2, 5)
_COSTS = (7, 6)  # "$0.0042", else "$.0042": the iteration's dollars (compact_dollars)
_WIDE_MIN = 8  # badge room below which the narrow columns are used
_WORDS_MIN = 14  # below this much room, badges are letters
_BADGE_ROOM = 4  # letters the narrow layout keeps for badges (the columns give way, see _columns)
_SKILL_MIN = 4
_ROUTE_LETTER = 1  # the route as one letter: t tools, f final


def _columns(width: int, label: int) -> tuple[_Columns, bool]:
    """The column widths for a timeline ``width`` wide whose longest label has ``label`` characters.

    The label column fits the longest label (``T·I`` is never cut: it is what tells rows
    apart). The cost column is the first to go: it is drawn only while the wide layout keeps room
    for badges as words beside it (seven characters, else six). In the narrow layout the other
    columns give way, one after another, until a few badge letters fit: the cursor column shrinks,
    the route becomes a letter, then the parked column goes (the ``P`` badge still says a map
    parked), then the leases-served one. Badges outlast the counts because they are what the
    timeline is scanned for.

    Returns:
        The columns, and whether they are the wide layout.
    """
    label = max(label, len("iter"))
    wide = _WIDE._replace(label=label)
    for cost in _COSTS:
        priced = wide._replace(cost=cost)
        if width - priced.fixed >= _WORDS_MIN:
            return priced, True
    if width - wide.fixed >= _WIDE_MIN:
        return wide, True
    narrow = _NARROW._replace(label=label)
    short = narrow.fixed + _BADGE_ROOM - width
    if short > 0:
        narrow = narrow._replace(skill=max(narrow.skill - short, _SKILL_MIN))
    for give_up in ({"route": _ROUTE_LETTER}, {"parked": 0}, {"leases": 0}):
        if narrow.fixed + _BADGE_ROOM <= width:
            break
        narrow = narrow._replace(**give_up)
    return narrow, False


def _route_word(word: str, width: int) -> str:
    """``word`` when it fits ``width``, else its first letter (``t`` tools, ``f`` final)."""
    return word if len(word) <= width else word[:1]


def timeline_width(label: int, badges: int) -> int:
    """The cells the timeline's rows take in the wide layout with badges as words.

    Args:
        label: The longest row label (:attr:`TraceSession.label_width`).
        badges: The cells the widest row's badges take as words (:attr:`IterationTimeline.badge_room`).
    """
    # The cost column counts: sized without it, a content-fitted pane never had room to draw it.
    return _WIDE._replace(label=max(label, len("iter")), cost=_COSTS[0]).fixed + max(badges, _WORDS_MIN)


def badges_as_words(width: int, label: int) -> bool:
    """Whether a timeline ``width`` wide shows its badges as words (else as letters)."""
    c, _wide = _columns(width, label)
    return width - c.fixed >= _WORDS_MIN


def timeline_legend(
    width: int, label: int, seen: set[str], palette: Palette, *, room: int | None = None
) -> Text:
    """One line under the timeline: what ``act ls pk tl`` count and, when badges are letters, what
    the letters seen so far stand for (every one is in the ``?`` help).

    Args:
        width: The timeline's width (which decides letters or words).
        label: The longest row label.
        seen: The badge names drawn so far.
        palette: Styles.
        room: The cells the line may take: the columns are named in short words when the long
            ones do not fit.
    """
    letters = [] if badges_as_words(width, label) else [name for name in BADGE_LETTERS if name in seen]
    text = Text()
    for long in (True, False):
        text = Text(no_wrap=True, end="")
        for index, (title, short, meaning) in enumerate(_COLUMN_LEGEND):
            if index:
                text.append(" · ", palette.dim)
            text.append(title, palette.key)
            text.append(f" {meaning if long else short}", palette.dim)
        if letters:
            text.append("  │ ", palette.dim)
        for name in letters:
            text.append(f" {BADGE_LETTERS[name]}", _badge_style(name, palette))
            text.append(f" {_BADGE_WORDS.get(name, name)}", palette.dim)
        if room is None or text.cell_len <= room:
            break
    return text


def timeline_header(width: int, *, label: int = 0) -> Text:
    """The column titles above the timeline.

    Args:
        width: The timeline's width.
        label: The longest row label (:attr:`TraceSession.label_width`).
    """
    c, _wide = _columns(width, label)
    badges = "badges" if width - c.fixed >= _WORDS_MIN else "bdg"
    text = f"{'iter':<{c.label}} {clip('cursor', c.skill):<{c.skill}} {'act':>{c.active}} "
    if c.leases:
        text += f"{'ls':>{c.leases}} "
    if c.parked:
        text += f"{'pk':>{c.parked}} "
    text += f"{'tl':>{c.tools}} {_route_word('route', c.route):<{c.route}} "
    if c.cost:
        text += f"{'cost':>{c.cost}} "
    text += badges
    return Text(text, no_wrap=True, end="")


def _badge_style(name: str, palette: Palette) -> Style:
    if name in ("grant", "reengage", "proposal"):
        return palette.good
    if name in ("prune", "park", "error", "invalid", "refused", "unsupported", "budget"):
        return palette.bad
    return palette.warn


class IterationTimeline(RowList):
    """The iteration timeline of a trace session."""

    def __init__(self, session: TraceSession, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session = session
        """Where the rows come from."""
        self.badge_room = 0
        """The cells the widest row drawn so far needs for its badges as words (what the pane is sized to)."""
        self.seen_badges: set[str] = set()
        """Every badge drawn so far (the legend explains their letters)."""

    class ContentGrew(Message):
        """A row drawn needs more room for its badges, or shows a badge not seen before."""

    def total_rows(self) -> int:
        return len(self.session.iterations)

    def row_version(self, row: int) -> Hashable:
        model = self.session.model
        return (
            len(self.session.iterations[row]),
            len(model.invalid_lines) + len(model.opaque_lines) + len(self.session.found_invalid),
            self.session.label_width,
        )

    def render_row(self, row: int, width: int) -> Text:
        session = self.session
        palette = self.palette
        with session.model.lock:
            iteration = session.iterations[row]
            label = session.label(iteration)
            skill = iteration.cursor_to
            moved = iteration.cursor_by not in (None, "stay", "none")
            served = len(iteration.lease_served)
            tools = len(iteration.tool_result_lines)
            route = iteration.route
            key = (iteration.turn, iteration.number)
        facts = session.facts(row)
        badges = session.badges(row)
        self._saw(badges)

        text = Text(no_wrap=True, end="")
        c, wide = _columns(width, session.label_width)
        words = width - c.fixed >= _WORDS_MIN
        text.append(f"{label:<{c.label}} ")
        _skill_cell(text, skill, moved, c.skill, palette)
        active = "—" if facts.active is None else str(facts.active)
        if facts.evaluated is not None and facts.active is not None and wide and words:
            active = f"{facts.active}/{facts.evaluated}"
        text.append(f"{clip(active, c.active):>{c.active}} ")
        _count_cells(text, c, served, facts.parked_maps, tools, palette)
        _route_cell(text, route, c.route, palette)
        if c.cost:
            run = session.run_of(iteration)
            cost = run_costs(session, run).iterations.get(key) if run is not None else None
            _cost_cell(text, cost, c.cost, palette)
        _badge_cells(text, badges, words, palette)
        return text

    def _saw(self, badges: list[str]) -> None:
        """Remember what the pane and the legend must make room for (told once, after the paint)."""
        room = sum(len(name) + 1 for name in badges)
        new = not self.seen_badges.issuperset(badges)
        if room > self.badge_room or new:
            self.badge_room = max(room, self.badge_room)
            self.seen_badges.update(badges)
            self.post_message(self.ContentGrew())


def _skill_cell(text: Text, skill: str | None, moved: bool, width: int, palette: Palette) -> None:
    """The cursor's skill after the pass, with ``→`` when the pass moved it."""
    if skill is None:
        text.append(f"{'—':<{width}} ", palette.dim)
    else:
        shown = clip(("→" if moved else " ") + skill, width)
        text.append_text(plain(f"{shown:<{width}} ", palette.accent if moved else ""))


def _count_cells(
    text: Text, c: _Columns, served: int, parked: tuple[str, ...] | None, tools: int, palette: Palette
) -> None:
    """Leases served, maps parked and tool calls (``·`` for none; a column of width 0 is left out)."""
    if c.leases:
        text.append(f"{served or '·':>{c.leases}} ", palette.good if served else palette.dim)
    if c.parked:
        text.append(
            f"{(len(parked) or '·') if parked is not None else '·':>{c.parked}} ",
            palette.bad if parked else palette.dim,
        )
    text.append(f"{tools or '·':>{c.tools}} ", "" if tools else palette.dim)


def _route_cell(text: Text, route: str | None, width: int, palette: Palette) -> None:
    """How the iteration ended: ``tools``, ``final``, ``nudge`` / ``wrap`` / ``retry`` (a re-ask), ``rev``
    (the evidence gate's ``evidence-recheck``: a revision follows) or ``—``."""
    if route == "tool-calls":
        text.append(f"{_route_word('tools', width):<{width}} ")
    elif route == "evidence-recheck":
        text.append(f"{_route_word('rev', width):<{width}} ", palette.warn)
    elif route == "final":
        text.append(f"{_route_word('final', width):<{width}} ", palette.good)
    elif route in ("step-nudge", "wrap-up", "output-retry"):  # a way back that ran no tool: a re-ask
        word = {"step-nudge": "nudge", "wrap-up": "wrap", "output-retry": "retry"}[route]
        text.append(f"{_route_word(word, width):<{width}} ", palette.warn)
    else:
        text.append(f"{'—':<{width}} ", palette.dim)


def compact_dollars(dollars: Decimal, width: int = 7) -> str:
    """Dollars for a column ``width`` (6 or 7) wide: ``$0.0042``, ``$1.23``, ``$123``, ``$4e-05``.

    Below a dollar four decimals stay (they line up down the column), and at six characters the
    leading zero goes (``$.0042``); below $0.0001 the figure is in scientific notation rather than
    rounded to a made-up zero.
    """
    if dollars == 0:
        return "$0"
    cents4 = dollars.quantize(Decimal("0.0001"))
    if cents4 == 0:
        return f"${float(dollars):.0e}"
    if cents4 < 1:
        shown = f"{cents4:.4f}"
        return "$" + (shown if width > 6 else shown.removeprefix("0"))
    if dollars < Decimal("99.995"):
        return f"${dollars:.2f}"
    return f"${dollars:.0f}"


def _cost_cell(text: Text, cost: CostTotal | None, width: int, palette: Palette) -> None:
    """The iteration's dollars; a dim ``—`` when a call of it has no price (never $0); ``·`` for no call."""
    if cost is None:
        text.append(f"{'·':>{width}} ", palette.dim)
    elif cost.known:
        text.append(f"{compact_dollars(cost.dollars, width):>{width}} ")
    else:
        text.append(f"{'—':>{width}} ", palette.dim)


def _badge_cells(text: Text, badges: list[str], words: bool, palette: Palette) -> None:
    """The badges, as words when there is room, else as letters."""
    for name in badges:
        shown = name if words else BADGE_LETTERS[name]
        text.append(shown, _badge_style(name, palette))
        if words:
            text.append(" ")

"""DocumentFinder: the ``/`` search of a document, as ``/`` filters a list.

A document's rows are text, not records: searching one finds every occurrence of the typed words
(ASCII case-insensitive, as the list filter) in the rows as drawn at the current width (a collapsed
content is searched as far as it is shown: ``e`` expands it), highlights each, and moves to the
first at or below the top of the view; ``n`` and ``N`` walk them, wrapping. The finder holds the
query and where the user is among the matches; the document gives it its rows and draws them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["DocumentFinder", "Match"]


@dataclass(frozen=True)
class Match:
    """One occurrence: row ``row``, characters ``start`` to ``end`` of its plain text."""

    row: int
    start: int
    end: int


@dataclass
class DocumentFinder:
    """The search of one document: its query, its matches at one layout, the current one."""

    query: str = ""
    """What is searched (empty: no search)."""
    current: int = -1
    """The index of the current match (``-1``: none)."""
    _key: object = None
    _matches: list[Match] = field(default_factory=list)
    _rows: list[int] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """A search is on."""
        return bool(self.query.strip())

    def matches(self, key: object, rows: Callable[[], Sequence[str]]) -> list[Match]:
        """Every match in the document whose layout is ``key`` (``rows`` gives its rows when it changed)."""
        if key != self._key:
            self._key = key
            self._matches = find(self.query, rows()) if self.active else []
            self._rows = [match.row for match in self._matches]
            if self.current >= len(self._matches):
                self.current = len(self._matches) - 1
        return self._matches

    def set_query(self, query: str) -> None:
        """Search ``query`` (the matches are found again at the next :meth:`matches`)."""
        self.query = query
        self.current = -1
        self._key = None

    def first_from(self, row: int) -> int:
        """The first match at or after ``row`` (wrapping to the first), or ``-1`` without matches."""
        if not self._matches:
            return -1
        index = bisect_left(self._rows, row)
        return index if index < len(self._matches) else 0

    def step(self, delta: int) -> int:
        """Move to the next (``1``) or previous (``-1``) match, wrapping; ``-1`` without matches."""
        count = len(self._matches)
        if not count:
            self.current = -1
        elif self.current < 0:
            self.current = 0 if delta > 0 else count - 1
        else:
            self.current = (self.current + delta) % count
        return self.current

    def on_row(self, row: int) -> list[tuple[Match, bool]]:
        """The matches of row ``row``, each with whether it is the current one."""
        start = bisect_left(self._rows, row)
        found = []
        index = start
        while index < len(self._matches) and self._matches[index].row == row:
            found.append((self._matches[index], index == self.current))
            index += 1
        return found


def find(query: str, rows: Sequence[str]) -> list[Match]:
    """Every occurrence of ``query`` in ``rows`` (ASCII case-insensitive; surrounding spaces ignored)."""
    needle = _fold(query.strip())
    if not needle:
        return []
    found: list[Match] = []
    for row, text in enumerate(rows):
        hay = _fold(text)
        position = hay.find(needle)
        while position >= 0:
            found.append(Match(row, position, position + len(needle)))
            position = hay.find(needle, position + len(needle))
    return found


_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fold(text: str) -> str:
    # ASCII only, as the list filter: a case fold that changes a string's length (ß → ss) would
    # put the highlight on the wrong characters.
    return text.translate(_UPPER)

"""The search language of ``/`` and ``filter:`` commands: free words plus ``field:value`` filters.

A query is a list of terms, all of which must hold (AND):

- a free word (or ``"a quoted phrase"``) matches, ASCII case-insensitively, the record text as it
  is stored in the trace (so ``refund`` finds a prompt, a result or an id that contains it);
- ``kind:K`` keeps records of kind ``K`` (in the timeline: iterations that have such a record);
  ``kind:invalid`` and ``kind:opaque`` keep corrupt and unknown-kind lines;
- ``skill:S`` keeps iterations whose cursor is on skill ``S``;
- ``badge:B`` keeps iterations showing badge ``B`` (``grant``, ``prune``, ``park``, ``reengage``,
  ``conflict``, ``rejected``, ``superseded``, ``invalid``, ``error``, ``refused``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import orjson

__all__ = ["FIELDS", "Query"]

FIELDS = ("kind", "skill", "badge")
"""The ``field:`` prefixes a query understands."""


@dataclass(frozen=True)
class Query:
    """A parsed search query."""

    text: str
    """The query as typed."""
    words: tuple[str, ...] = ()
    """Free words, lower-cased."""
    kinds: tuple[str, ...] = ()
    """``kind:`` values."""
    skills: tuple[str, ...] = ()
    """``skill:`` values."""
    badges: tuple[str, ...] = ()
    """``badge:`` values, lower-cased."""

    @classmethod
    def parse(cls, text: str) -> Query:
        """Parse a query; unbalanced quotes fall back to splitting on spaces."""
        try:
            tokens = shlex.split(text)
        except ValueError:
            tokens = text.split()
        words: list[str] = []
        fields: dict[str, list[str]] = {name: [] for name in FIELDS}
        for token in tokens:
            name, colon, value = token.partition(":")
            if colon and name.lower() in fields and value:
                fields[name.lower()].append(value)
            elif token:
                words.append(token.lower())
        return cls(
            text=text,
            words=tuple(words),
            kinds=tuple(fields["kind"]),
            skills=tuple(fields["skill"]),
            badges=tuple(value.lower() for value in fields["badge"]),
        )

    @property
    def empty(self) -> bool:
        """True when the query keeps every row."""
        return not (self.words or self.kinds or self.skills or self.badges)

    @property
    def needles(self) -> tuple[bytes, ...]:
        """The free words as they appear inside a JSON string of the trace (escaped, lower-cased)."""
        # The writer escapes quotes, backslashes and control characters; search for the escaped form.
        return tuple(orjson.dumps(word)[1:-1].lower() for word in self.words)

    def words_in(self, text: str) -> bool:
        """Whether every free word occurs in ``text`` (case-insensitive)."""
        lowered = text.lower()
        return all(word in lowered for word in self.words)

    def __str__(self) -> str:
        return self.text

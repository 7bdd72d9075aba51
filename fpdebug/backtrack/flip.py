"""Did a rerun's answer change? The pluggable flip tests of the causal tier (docs/backtracking.md §9.5–§9.6).

"Did the answer change?" is pluggable (:data:`AnswerChanged`): :func:`exact_changed`,
:func:`normalized_changed`, or :func:`similarity_changed` (the default, threshold 0.8). Similarity
(:func:`answer_similarity`) is the lexical overlap of docs/backtracking.md §9.5 — deterministic, no embedder —
with two fpdebug additions: identical texts are 1.0, and when either text has no content token
(``"OK"`` against ``"I"``) it falls back to difflib's ratio of the normalized texts. Like the
reference's cosine default, it is blind to a flip carried by one short word: "refund approved" and
"refund not approved" are 0.82 alike, so pass :func:`normalized_changed` (or a domain test) when a
short yes/no answer is being explained.
"""

from __future__ import annotations

import difflib
import math
import unicodedata
from collections.abc import Callable
from typing import TypeAlias

from fpdebug.backtrack.suspects import lexical_overlap, token_set
from fpdebug.errors import BacktrackError

__all__ = [
    "DEFAULT_FLIP_THRESHOLD",
    "AnswerChanged",
    "Similarity",
    "answer_similarity",
    "check_threshold",
    "exact_changed",
    "normalize_answer",
    "normalized_changed",
    "similarity_changed",
]

DEFAULT_FLIP_THRESHOLD = 0.8
"""A rerun whose similarity to the original falls below this counts as a flip (docs/backtracking.md §9.6)."""

AnswerChanged: TypeAlias = Callable[[str, str], bool]
"""``answer_changed(original, output) -> True`` when the rerun's answer counts as a different one."""

Similarity: TypeAlias = Callable[[str, str], float]
"""``similarity(original, output)`` in [0, 1]."""


def _is_edge_junk(char: str) -> bool:
    # Unicode punctuation too: models write “curly quotes”, «guillemets» and em dashes.
    return char.isspace() or unicodedata.category(char).startswith("P")


def normalize_answer(text: str) -> str:
    """Casefold, collapse whitespace, strip punctuation (any Unicode ``P*``) and spaces at both ends."""
    collapsed = " ".join(text.casefold().split())
    start, end = 0, len(collapsed)
    while start < end and _is_edge_junk(collapsed[start]):
        start += 1
    while end > start and _is_edge_junk(collapsed[end - 1]):
        end -= 1
    return collapsed[start:end]


def answer_similarity(original: str, output: str) -> float:
    """How alike two answers are, in [0, 1] (see the module docstring for the rule)."""
    if original == output:
        return 1.0
    if token_set(original) and token_set(output):
        return lexical_overlap(original, output)
    return difflib.SequenceMatcher(None, normalize_answer(original), normalize_answer(output)).ratio()


def exact_changed(original: str, output: str) -> bool:
    """Changed unless byte-for-byte equal."""
    return original != output


def normalized_changed(original: str, output: str) -> bool:
    """Changed unless equal after :func:`normalize_answer`."""
    return normalize_answer(original) != normalize_answer(output)


def similarity_changed(
    threshold: float = DEFAULT_FLIP_THRESHOLD, *, similarity: Similarity = answer_similarity
) -> AnswerChanged:
    """A test that counts a flip when ``similarity(original, output) < threshold``.

    Args:
        threshold: The flip threshold, in [0, 1].
        similarity: The similarity function.

    Returns:
        The test.

    Raises:
        BacktrackError: The threshold is outside [0, 1].
    """
    check_threshold(threshold)

    def changed(original: str, output: str) -> bool:
        return similarity(original, output) < threshold

    return changed


def check_threshold(threshold: float) -> None:
    """Refuse a flip threshold outside [0, 1] (or not a number)."""
    if not (math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
        raise BacktrackError(f"flip threshold must be in [0, 1], got {threshold}")

"""The argument ask and the paused call (``argumentAsk``, ``pausedToolCallId``; docs/honesty.md §12.7).

With the ask armed (``Agent.inputs_layer(ask=True)``), the inputs layer does more than file an
argument no source in reach holds: when the call is one Route WILL run, the call does not run. The
layer's ONE write for the visit ends with an ``ask`` row (:class:`~fpdebug.trace.schema.AskRow`):
which call, which argument, the question put to the user, the value the model guessed. The turn
pauses on that call (``pausedToolCallId``) until ``Conversation.resume(answer)`` supplies the value.
The answer is recorded (``ask_answer``), and the layer files the answered argument again, now with
the user as its source (``answered``), plus the next ask when another argument of the batch is still
ungrounded. Then the batch runs with the answers and the turn goes on.

Everything here is pure: the loop's hooks and the replay (:func:`~fpdebug.engine.honesty.replay.
recompute_findings`) call the same functions on the same facts, so an ask is part of the equality
law like any other row.

**Which argument.** The first argument row of the visit (in the reply's call order, then argument
order) whose source is ``nowhere``, that no middleware rewrote (the app chose that value, not the
model) and that was not answered already. One question at a time: a batch with two ungrounded
arguments asks twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fpdebug.engine.honesty.ledger import Finding, HonestyRow
from fpdebug.engine.honesty.sources import parse_json_path
from fpdebug.trace.schema import ArgumentRow, AskRow, ToolCallRecord

__all__ = [
    "ArgumentAsk",
    "PausedVisit",
    "answer_text",
    "answered_row",
    "argument_ask_of",
    "ask_question",
    "next_ask",
    "with_answer",
]


@dataclass(frozen=True)
class ArgumentAsk:
    """This turn's argument ask as the answer fold reads it (``argumentAsk``).

    Attributes:
        tool_call_id: The call the ask is about.
        tool_name: Its tool.
        path: The argument asked about.
        question: What the user was asked.
        guessed: The value the model supplied (``None`` when hidden).
        answered: The user answered (the call then ran with :attr:`answer`).
        answer: The user's value, once answered.
    """

    tool_call_id: str
    tool_name: str
    path: str
    question: str
    guessed: object = None
    answered: bool = False
    answer: object = None


@dataclass(frozen=True)
class PausedVisit:
    """An inputs layer visit whose ask waits for the user's answer: the turn is paused on its call.

    Attributes:
        ask: The question waiting (its call is ``pausedToolCallId``).
        rows: The visit's argument rows, from which each next ask is chosen.
        done: ``(call id, path)`` of the arguments answered so far on this visit.
    """

    ask: AskRow
    rows: tuple[HonestyRow, ...]
    done: tuple[tuple[str, str], ...] = ()

    def answered(
        self, answer: object, display_names: Mapping[str, str] | None
    ) -> tuple[list[HonestyRow], PausedVisit | None]:
        """The rows the answer files (the answered argument, then the next ask), and what still waits.

        Args:
            answer: The user's value for :attr:`ask`.
            display_names: Tool name → the app's words for it.

        Returns:
            The rows of the visit's write, and the visit still paused (``None``: the batch runs).
        """
        done = (*self.done, (self.ask.tool_call_id, self.ask.path))
        rows: list[HonestyRow] = [answered_row(self.ask, answer)]
        following = next_ask(self.rows, answered=done, display_names=display_names)
        if following is None:
            return rows, None
        rows.append(following)
        return rows, PausedVisit(following, self.rows, done)


def answer_text(answer: object) -> str:
    """The user's answer as a text source reads it: a string as is, anything else as JSON."""
    return answer if isinstance(answer, str) else json.dumps(answer, default=str)


def ask_question(tool_words: str, path: str, guessed: object, *, hidden: bool) -> str:
    """The question put to the user about one ungrounded argument.

    Args:
        tool_words: The tool, in the app's words (its display name) where it declares one.
        path: The argument's JSON path (``$.account_id``).
        guessed: The value the model supplied.
        hidden: The tool hides its arguments: the guess is not repeated.

    Returns:
        The question.
    """
    name = path.removeprefix("$.") if path.startswith("$.") else path
    if hidden:
        return f"Which {name} should {tool_words} use? Nothing you or a tool said gives it."
    return (
        f"Which {name} should {tool_words} use? The model supplied {json.dumps(guessed, default=str)}, "
        "but nothing you or a tool said holds that value."
    )


def next_ask(
    rows: Iterable[HonestyRow],
    *,
    answered: Iterable[tuple[str, str]] = (),
    display_names: Mapping[str, str] | None = None,
) -> AskRow | None:
    """The ask a visit ends with: the first ungrounded argument not answered yet, or ``None``.

    Args:
        rows: The visit's rows (only ``argument`` rows are read).
        answered: ``(tool call id, path)`` pairs the user has answered on this visit.
        display_names: Tool name → the app's words for it.

    Returns:
        The ``ask`` row, or ``None`` when every argument has a source (or was answered).
    """
    done = set(answered)
    names = display_names or {}
    for row in rows:
        if not isinstance(row, ArgumentRow) or row.source != "nowhere" or row.rewritten:
            continue
        if (row.tool_call_id, row.path) in done:
            continue
        words = names.get(row.tool_name, row.tool_name)
        return AskRow(
            tool_call_id=row.tool_call_id,
            tool_name=row.tool_name,
            path=row.path,
            question=ask_question(words, row.path, row.value, hidden=row.hidden),
            guessed=None if row.hidden else row.value,
            hidden=row.hidden,
        )
    return None


def answered_row(ask: AskRow, answer: object) -> ArgumentRow:
    """The asked argument filed again: the user's answer is its source, and the call runs with it.

    Args:
        ask: The ask the user answered.
        answer: The user's value.

    Returns:
        The argument row (value and text withheld when the tool hides its arguments).
    """
    return ArgumentRow(
        tool_call_id=ask.tool_call_id,
        tool_name=ask.tool_name,
        path=ask.path,
        value=None if ask.hidden else answer,
        source="user",
        source_text=None if ask.hidden else answer_text(answer)[:200],
        hidden=ask.hidden,
        answered=True,
    )


def _set_path(args: dict[str, object], path: str, value: object) -> dict[str, object]:
    """A copy of ``args`` with the value at ``path`` replaced (the path named an existing scalar)."""
    parts = parse_json_path(path)
    if not parts:
        return args
    root: object = json.loads(json.dumps(args, default=str))
    node = root
    for part in parts[:-1]:
        node = node[part]  # type: ignore[index]
    node[parts[-1]] = value  # type: ignore[index]
    assert isinstance(root, dict)
    return root


def with_answer(
    calls: Sequence[ToolCallRecord], tool_call_id: str, path: str, answer: object
) -> tuple[ToolCallRecord, ...]:
    """The calls as they will run once the user answered: the asked argument holds the answer.

    Args:
        calls: The calls Route dispatches (after the tool middleware).
        tool_call_id: The paused call.
        path: The argument asked about.
        answer: The user's value.

    Returns:
        The calls, the paused one with the answer at ``path``.
    """
    return tuple(
        call.model_copy(update={"args": _set_path(dict(call.args), path, answer)})
        if call.id == tool_call_id and call.raw_args is None
        else call
        for call in calls
    )


def argument_ask_of(
    ledger: Sequence[Finding], turn: int | None, answers: Mapping[tuple[int | None, str, str], object]
) -> ArgumentAsk | None:
    """This turn's latest argument ask (``argumentAsk``), with the user's answer once given.

    Args:
        ledger: The findings filed so far in the run.
        turn: This turn.
        answers: ``(turn, tool call id, path)`` → the user's answer, for the asks answered in this run.

    Returns:
        The ask, or ``None`` when the layer asked nothing this turn.
    """
    latest: AskRow | None = None
    for finding in ledger:
        if finding.layer != "inputs" or finding.turn != turn:
            continue
        for row in finding.rows:
            if isinstance(row, AskRow):
                latest = row
    if latest is None:
        return None
    key = (turn, latest.tool_call_id, latest.path)
    return ArgumentAsk(
        tool_call_id=latest.tool_call_id,
        tool_name=latest.tool_name,
        path=latest.path,
        question=latest.question,
        guessed=latest.guessed,
        answered=key in answers,
        answer=answers.get(key),
    )

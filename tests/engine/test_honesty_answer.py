"""The answer layer: one fold over exactly the keys answer_fold_reads lists (docs/honesty.md §12.4)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

import pytest

from fpdebug.engine.honesty import (
    ANSWER_FOLD_KEYS,
    AnswerValidation,
    ArgumentRewrite,
    Finding,
    Grounds,
    answer_fold_reads,
    assess_answer,
    compose_standing_line,
)
from fpdebug.trace.schema import (
    ArgumentRow,
    AssumedValue,
    DeclaredSource,
    ExternalGround,
    Message,
    ResultRow,
    StatedValue,
    StoppedEarly,
)

LOOKUP = '{"order": {"id": "ORD-1234", "total": 1250.0, "placed": "2024-05-01"}}'
HISTORY = (
    Message(role="user", content="Where is my refund for ORD-1234? I was promised it by June 3, 2024."),
    Message(role="assistant", content="", tool_calls=None),
    Message(role="tool", tool_call_id="call_1", tool_name="lookup_order", content=LOOKUP),
)
TOOLS_ONLY = answer_fold_reads(
    tools=True, evidence_gate=False, answer_validation=False, inputs=False, tool_middleware=False
)
EVERYTHING = list(ANSWER_FOLD_KEYS)


def state(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {"history": HISTORY, "turnNumber": 1}
    base.update(overrides)
    return base


def value(row_values: list[StatedValue], text: str) -> StatedValue:
    (found,) = [v for v in row_values if v.text == text]
    return found


# ----------------------------------------------------------------------------------------------
# Supported and unsupported values


def test_each_stated_value_lists_the_rows_that_support_it_or_is_unsupported() -> None:
    answer = "Your refund of $1,250.00 for ORD-1234 (placed May 1, 2024) arrives by June 3, 2024; fee $35."
    row = assess_answer(answer, state(), reads=TOOLS_ONLY)
    assert row is not None
    assert [(v.text, v.kind, v.supported, v.supported_by) for v in row.values] == [
        ("$1,250.00", "amount", True, ["tool:call_1"]),
        ("ORD-1234", "id", True, ["tool:call_1", "user"]),
        ("May 1, 2024", "date", True, ["tool:call_1"]),
        ("June 3, 2024", "date", True, ["user"]),
        ("$35", "amount", False, []),
    ]
    for stated in row.values:
        assert answer[stated.start : stated.end] == stated.text
    assert row.reads == TOOLS_ONLY


def test_grounds_support_values_by_label_and_name() -> None:
    policy = ExternalGround(label="refund policy", value="Refunds within 30 days")
    grounds = Grounds(
        external_grounds=(policy,), declared_sources=(DeclaredSource(name="fees", content={"express": 35}),)
    )
    row = assess_answer("Within 30 days, with a $35 fee.", state(), reads=TOOLS_ONLY, grounds=grounds)
    assert row is not None
    assert [(v.text, v.supported_by) for v in row.values] == [
        ("30", ["external:refund policy"]),
        ("$35", ["declared:fees"]),
    ]


def test_a_value_stated_twice_is_listed_once_at_its_first_occurrence() -> None:
    row = assess_answer("ORD-1234, again ORD-1234", state(), reads=TOOLS_ONLY)
    assert row is not None
    assert [(v.text, v.start) for v in row.values] == [("ORD-1234", 0)]


def test_quoted_strings_are_supported_by_text_containing_them() -> None:
    history = (
        *HISTORY,
        Message(
            role="tool",
            tool_call_id="call_2",
            tool_name="notes",
            content='{"note": "Customer prefers store credit"}',
        ),
    )
    row = assess_answer(
        'The note says "customer prefers  store credit" and "call back soon".',
        state(history=history),
        reads=TOOLS_ONLY,
    )
    assert row is not None
    assert [(v.kind, v.supported_by) for v in row.values] == [("quoted", ["tool:call_2"]), ("quoted", [])]


def test_a_paused_calls_message_is_not_a_source() -> None:
    row = assess_answer("Total $1,250.00", state(pausedToolCallId="call_1"), reads=TOOLS_ONLY)
    assert row is not None and row.values[0].supported is False


def test_result_rows_in_the_ledger_support_values_when_history_was_folded_away() -> None:
    result = ResultRow(
        batch_iteration=1, tool_call_id="call_7", tool_name="lookup_order", values=["1250.00", "ORD-1234"]
    )
    ledger = (Finding("results", 1, 2, (result,)),)
    row = assess_answer("Refunded $1,250.00", state(history=(), findingsLedger=ledger), reads=TOOLS_ONLY)
    assert row is not None and row.values[0].supported_by == ["tool:call_7"]


def test_the_evidence_gates_verdict_wins() -> None:
    reads = answer_fold_reads(
        tools=True, evidence_gate=True, answer_validation=False, inputs=False, tool_middleware=False
    )
    flagged = state(unsupportedValues=["$1,250.00"])
    row = assess_answer("Refunded $1,250.00 for ORD-1234", flagged, reads=reads)
    assert row is not None
    assert [(v.text, v.supported) for v in row.values] == [("$1,250.00", False), ("ORD-1234", True)]


def test_stopped_early_is_copied() -> None:
    stopped = StoppedEarly(reason="max-iterations", iteration=6, pending_tool_calls=2, answer_was_empty=False)
    row = assess_answer("Sorry.", state(stoppedEarly=stopped), reads=TOOLS_ONLY)
    assert row is not None and row.stopped_early == stopped


# ----------------------------------------------------------------------------------------------
# Answer validation and the Assumed block


VALIDATED = answer_fold_reads(
    tools=True, evidence_gate=False, answer_validation=True, inputs=False, tool_middleware=False
)


def test_an_answer_the_validation_report_withholds_is_never_assessed() -> None:
    withheld, kept = AnswerValidation(withheld=True), AnswerValidation(withheld=False)
    assert assess_answer("$5", state(answerValidation=withheld), reads=VALIDATED) is None
    assert assess_answer("$5", state(answerValidation=kept), reads=VALIDATED) is not None


def test_a_validation_report_is_not_read_unless_validation_is_armed() -> None:
    withheld = state(answerValidation=AnswerValidation(withheld=True))
    assert assess_answer("$5", withheld, reads=TOOLS_ONLY) is not None


MIDDLEWARE = answer_fold_reads(
    tools=True, evidence_gate=False, answer_validation=False, inputs=True, tool_middleware=True
)


def argument(call_id: str, path: str, *, hidden: bool = False) -> ArgumentRow:
    return ArgumentRow(
        tool_call_id=call_id,
        tool_name="refund",
        path=path,
        value=None if hidden else 1,
        source="nowhere",
        hidden=hidden,
    )


def test_a_rewrite_superseding_an_argument_row_of_this_turn_is_assumed() -> None:
    ledger = (
        Finding("inputs", 1, 1, (argument("old", "$.amount"),)),
        Finding(
            "inputs",
            2,
            1,
            (argument("c1", "$.amount"), argument("c1", "$.secret", hidden=True), argument("c1", "$.note")),
        ),
    )
    decisions = (
        ArgumentRewrite("c1", "$.amount", 1250, 1000),
        ArgumentRewrite("c1", "$.secret", "hunter2", "****"),
        ArgumentRewrite("c1", "$.note", "asap", None, removed=True),
        ArgumentRewrite("c1", "$.region", None, "eu"),  # added: supersedes no row
        ArgumentRewrite("old", "$.amount", 1, 2),  # a row of an earlier turn
    )
    row = assess_answer(
        "Done.", state(turnNumber=2, findingsLedger=ledger, middlewareDecisions=decisions), reads=MIDDLEWARE
    )
    assert row is not None
    assert row.assumed == [
        AssumedValue(tool_call_id="c1", path="$.amount", original=1250, rewritten_to=1000),
        AssumedValue(tool_call_id="c1", path="$.secret", hidden=True),
        AssumedValue(tool_call_id="c1", path="$.note", original="asap", removed=True),
    ]


def test_decisions_are_not_read_without_the_inputs_layer_and_middleware() -> None:
    ledger = (Finding("inputs", 1, 1, (argument("c1", "$.amount"),)),)
    decisions = (ArgumentRewrite("c1", "$.amount", 1250, 1000),)
    committed = state(findingsLedger=ledger, middlewareDecisions=decisions)
    row = assess_answer("Done.", committed, reads=TOOLS_ONLY)
    assert row is not None and row.assumed == []


# ----------------------------------------------------------------------------------------------
# The fold reads exactly the listed keys


class StrictState(Mapping[str, object]):
    """Committed state that records every read and fails loudly on a key outside the read list."""

    def __init__(self, allowed: list[str], values: dict[str, object]) -> None:
        self.allowed = set(allowed)
        self.values = values
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> object:
        if key not in self.allowed:
            raise AssertionError(f"the fold read {key!r}, which is not in its read list")
        self.reads.append(key)
        if key not in self.values:
            raise KeyError(key)
        return self.values[key]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the fold must not enumerate committed state")

    def __len__(self) -> int:
        raise AssertionError("the fold must not size committed state")

    def __contains__(self, key: object) -> bool:
        raise AssertionError("the fold must not probe committed state")


EVERY_KEY_WRITTEN: dict[str, object] = {
    "history": HISTORY,
    "turnNumber": 1,
    "pausedToolCallId": None,
    "findingsLedger": (),
    "stoppedEarly": None,
    "coverageDeclared": {"call_1": "one order"},
    "unsupportedValues": [],
    "answerValidation": AnswerValidation(withheld=False),
    "argumentAsk": None,
    "middlewareDecisions": (),
}


@pytest.mark.parametrize("arms", list(itertools.product([False, True], repeat=5)))
def test_the_fold_reads_each_listed_key_once_and_nothing_else(arms: tuple[bool, ...]) -> None:
    tools, gate, validation, inputs, middleware = arms
    reads = answer_fold_reads(
        tools=tools,
        evidence_gate=gate,
        answer_validation=validation,
        inputs=inputs,
        tool_middleware=middleware,
    )
    committed = StrictState(reads, EVERY_KEY_WRITTEN)
    row = assess_answer("Refund $1,250.00 for ORD-1234.", committed, reads=reads, standing_line=True)
    assert row is not None
    assert committed.reads == reads


def test_keys_never_written_read_as_absent() -> None:
    committed = StrictState(EVERYTHING, {})
    row = assess_answer("Refund $1,250.00.", committed, reads=EVERYTHING)
    assert row is not None and row.values[0].supported is False
    assert committed.reads == EVERYTHING


def test_an_unknown_key_in_the_read_list_is_refused() -> None:
    with pytest.raises(ValueError, match="toolResults"):
        assess_answer("x", {}, reads=[*TOOLS_ONLY, "toolResults"])  # type: ignore[list-item]


# ----------------------------------------------------------------------------------------------
# The standing line


def test_standing_line_for_a_prose_answer_names_tools_in_the_apps_words() -> None:
    row = assess_answer(
        "Refund of $1,250.00 for ORD-1234 is on its way; a $35 fee applies.",
        state(),
        reads=TOOLS_ONLY,
        standing_line=True,
        display_names={"lookup_order": "Order lookup"},
    )
    assert row is not None
    assert row.standing_line == (
        "2 of 3 values in this answer are backed by tool results (Order lookup); "
        "1 ($35) appears in no source."
    )


def test_standing_line_names_each_kind_of_source_when_there_are_several() -> None:
    row = assess_answer(
        "ORD-1234 costs $1,250.00, due June 3, 2024.", state(), reads=TOOLS_ONLY, standing_line="always"
    )
    assert row is not None
    assert row.standing_line == (
        "All 3 values in this answer are backed by sources: 2 by tool results (lookup_order), "
        "1 by the user's message."
    )


def test_standing_line_when_nothing_is_supported_lists_the_values() -> None:
    row = assess_answer(
        "It costs $35 and $40, from 2023-01-01 to 2023-02-01.", state(), reads=TOOLS_ONLY, standing_line=True
    )
    assert row is not None
    assert row.standing_line == (
        "None of the 4 values in this answer appears in any source: $35, $40, 2023-01-01 and 1 more."
    )


def test_standing_line_adds_coverage_and_the_early_stop() -> None:
    stopped = StoppedEarly(reason="max-iterations", iteration=6, pending_tool_calls=1, answer_was_empty=False)
    row = assess_answer(
        "ORD-1234 is on its way.",
        {**EVERY_KEY_WRITTEN, "stoppedEarly": stopped},
        reads=TOOLS_ONLY,
        standing_line=True,
    )
    assert row is not None
    assert row.standing_line == (
        "The 1 value in this answer is backed by tool results (lookup_order). "
        "lookup_order declared its coverage: one order. "
        "The turn was cut short (max-iterations at iteration 6; 1 tool call not run)."
    )


@pytest.mark.parametrize(
    ("mode", "answer", "has_line"),
    [
        (None, "It is $35.", False),
        (False, "It is $35.", False),
        ("unsupported", "It is $35.", True),
        ("unsupported", "It is $1,250.00.", False),
        ("always", "It is $1,250.00.", True),
        ("always", '{"total": 35}', False),  # a structured answer gets no line
        ("always", "   ", False),
    ],
)
def test_standing_line_modes(mode: object, answer: str, has_line: bool) -> None:
    row = assess_answer(answer, state(), reads=TOOLS_ONLY, standing_line=mode)  # type: ignore[arg-type]
    assert row is not None
    assert (row.standing_line is not None) == has_line


def test_compose_standing_line_wording() -> None:
    def v(text: str, *refs: str) -> StatedValue:
        return StatedValue(text=text, kind="number", supported=bool(refs), supported_by=list(refs))

    assert compose_standing_line([]) == "This answer states no values to check."
    assert compose_standing_line([v("$5")]) == "The 1 value in this answer ($5) appears in no source."
    assert compose_standing_line([v("1", "tool:a"), v("2", "tool:a"), v("$1,250.00")]) == (
        "2 of 3 values in this answer are backed by tool results; 1 ($1,250.00) appears in no source."
    )
    assert compose_standing_line([v("1", "user"), v("2"), v("3")]) == (
        "1 of 3 values in this answer is backed by the user's message; 2 (2, 3) appear in no source."
    )
    assert compose_standing_line([v("1", "external:tier")], names_of={"external:tier": "tier"}) == (
        "The 1 value in this answer is backed by values the app vouches for (tier)."
    )
    assert compose_standing_line([v("1", "user")], asked=True) == (
        "The 1 value in this answer is backed by the user's message. "
        "The model asked the user for an argument no source held, and the call ran with the answer."
    )

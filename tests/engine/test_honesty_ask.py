"""The argument ask and the paused call (docs/honesty.md §12.7), asserted on the traces runs write.

Unit cases of the ask decision (which argument, the question, a hidden guess, one at a time); the
fold reading ``argumentAsk`` and ``pausedToolCallId``; a run that pauses, is resumed and completes;
a run closed while paused; a bad answer; two ungrounded arguments asked in turn; no ask about a call
Route will not run. Every run also satisfies the equality law.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fpdebug.engine.agent import Agent, Conversation
from fpdebug.engine.honesty import ArgumentAsk, assess_answer, fold_reads, next_ask
from fpdebug.engine.honesty.ask import answered_row, with_answer
from fpdebug.engine.honesty.replay import recompute_findings, recorded_findings
from fpdebug.engine.providers.scripted import ScriptedProvider, ScriptedReply
from fpdebug.engine.sink import TraceFileSink
from fpdebug.engine.tools import tool
from fpdebug.errors import DefinitionError, FpdebugError
from fpdebug.trace.clock import FixedClock
from fpdebug.trace.reader import TraceReader
from fpdebug.trace.schema import (
    AnswerAssessmentRow,
    ArgumentRow,
    AskAnswerEvent,
    AskRow,
    FindingEvent,
    Message,
    RunEndEvent,
    ToolCallRecord,
    ToolResultEvent,
    TraceEvent,
)
from tests.conftest import T0

SEEN: list[dict[str, object]] = []


def get_balance(account_id: str) -> dict[str, object]:
    """Look up an account's balance.

    Args:
        account_id: The account id.
    """
    SEEN.append({"account_id": account_id})
    return {"account_id": account_id, "balance": 842.15}


def transfer(source: str, target: str) -> str:
    """Move money between two accounts.

    Args:
        source: The account to take from.
        target: The account to pay into.
    """
    SEEN.append({"source": source, "target": target})
    return f"moved from {source} to {target}"


def row(path: str, source: str, value: object = "x", **more: Any) -> ArgumentRow:
    return ArgumentRow(
        tool_call_id="c1", tool_name="get_balance", path=path, value=value, source=source, **more
    )  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# The ask decision (pure)


def test_the_ask_is_about_the_first_argument_no_source_holds() -> None:
    rows = [row("$.a", "user"), row("$.b", "nowhere", "ACC-1"), row("$.c", "nowhere", 5)]
    ask = next_ask(rows, display_names={"get_balance": "Balance lookup"})
    assert ask is not None
    assert (ask.tool_call_id, ask.path, ask.guessed, ask.hidden) == ("c1", "$.b", "ACC-1", False)
    assert ask.question == (
        'Which b should Balance lookup use? The model supplied "ACC-1", but nothing you or a tool '
        "said holds that value."
    )
    # One question at a time: once $.b is answered, the next ungrounded argument.
    following = next_ask(rows, answered=[("c1", "$.b")])
    assert following is not None and following.path == "$.c"
    assert next_ask(rows, answered=[("c1", "$.b"), ("c1", "$.c")]) is None


def test_no_ask_when_every_argument_has_a_source_or_the_app_chose_the_value() -> None:
    assert next_ask([row("$.a", "user"), row("$.b", "tool-result")]) is None
    # A middleware rewrote it: the call runs with the app's value, not the model's guess.
    assert next_ask([row("$.a", "nowhere", rewritten=True)]) is None


def test_a_hidden_argument_is_asked_about_without_repeating_the_guess() -> None:
    ask = next_ask([row("$.pin", "nowhere", value=None, hidden=True)])
    assert ask is not None and ask.guessed is None and ask.hidden
    assert "supplied" not in ask.question and ask.question.startswith("Which pin should get_balance use?")
    answered = answered_row(ask, "1234")
    assert (answered.source, answered.value, answered.source_text, answered.answered) == (
        "user",
        None,
        None,
        True,
    )


def test_the_answer_replaces_the_asked_argument_of_the_paused_call_only() -> None:
    calls = [
        ToolCallRecord(id="c1", name="t", args={"a": {"b": [1, "guess"]}, "k": 1}),
        ToolCallRecord(id="c2", name="t", args={"a": {"b": [1, "guess"]}}),
    ]
    first, second = with_answer(calls, "c1", "$.a.b[1]", "ACC-7")
    assert first.args == {"a": {"b": [1, "ACC-7"]}, "k": 1} and second.args == calls[1].args


# ----------------------------------------------------------------------------------------------
# The fold reads argumentAsk and pausedToolCallId


def test_the_fold_cites_the_users_answer_and_never_a_paused_calls_message() -> None:
    reads = fold_reads(
        tools=True, evidence_gate=False, answer_validation=False, inputs=True, tool_middleware=False
    )
    assert reads == [
        "history",
        "turnNumber",
        "pausedToolCallId",
        "findingsLedger",
        "stoppedEarly",
        "coverageDeclared",
        "argumentAsk",
    ]
    history = (
        Message(role="user", content="What is my balance?"),
        Message(role="tool", content='{"balance": 842.15}', tool_call_id="c1", tool_name="get_balance"),
    )
    ask = ArgumentAsk(
        "c9", "get_balance", "$.account_id", "Which?", "ACC-1", answered=True, answer="ACC-7731"
    )
    committed: dict[str, object] = {"history": history, "turnNumber": 1, "argumentAsk": ask}
    answer = "Account ACC-7731 has $842.15."
    row = assess_answer(answer, committed, reads=reads, standing_line=True)
    assert row is not None
    assert {v.text: v.supported_by for v in row.values} == {"ACC-7731": ["user"], "$842.15": ["tool:c1"]}
    assert row.standing_line is not None and "asked the user for an argument" in row.standing_line
    # While c1 is paused its tool message is no source: the answer is not assessed as if it ran.
    paused = assess_answer(answer, {**committed, "pausedToolCallId": "c1"}, reads=reads)
    assert paused is not None and {v.text: v.supported for v in paused.values}["$842.15"] is False
    # An ask not answered (yet) vouches for nothing.
    unanswered = {**committed, "argumentAsk": ArgumentAsk("c9", "get_balance", "$.account_id", "Which?")}
    row = assess_answer(answer, unanswered, reads=reads)
    assert row is not None and {v.text: v.supported for v in row.values}["ACC-7731"] is False


# ----------------------------------------------------------------------------------------------
# Runs: pause, resume, close while paused


def model(*replies: ScriptedReply) -> ScriptedProvider:
    return ScriptedProvider(replies=list(replies))


def agent(*tools: Any, ask: bool = True) -> Agent:
    return Agent("bank").tools(*(tool(t) for t in tools)).findings(standing_line=True).inputs_layer(ask=ask)


def read(path: Path) -> list[TraceEvent]:
    with TraceReader(path) as reader:
        assert reader.problems() == []  # what `fpdebug validate` checks
        return [reader[i] for i in range(1, len(reader))]  # type: ignore[misc]


def rows_of(events: list[TraceEvent], kind: type) -> list[Any]:
    return [
        r
        for e in events
        if isinstance(e, FindingEvent) and e.layer == "inputs"
        for r in e.rows
        if isinstance(r, kind)
    ]


def open_chat(path: Path, bank: Agent, provider: ScriptedProvider) -> tuple[TraceFileSink, Conversation]:
    clock = FixedClock(T0)
    sink = TraceFileSink.create(path, clock=clock)
    return sink, bank.conversation(provider=provider, sink=sink, clock=clock, run_id="r1")


def test_a_guessed_argument_pauses_the_turn_and_the_answer_runs_the_call(tmp_path: Path) -> None:
    SEEN.clear()
    provider = model(
        ScriptedReply.tool_call("get_balance", {"account_id": "ACC-1001"}),
        ScriptedReply.text("Account ACC-7731 has a balance of $842.15."),
    )
    sink, chat = open_chat(tmp_path / "run.jsonl", agent(get_balance), provider)
    with sink:
        turn = chat.send("What is my balance?")
        assert turn.status == "paused" and SEEN == []  # the call did not run
        ask = chat.paused
        assert ask is not None and (ask.tool_call_id, ask.path, ask.guessed) == (
            "call_1",
            "$.account_id",
            "ACC-1001",
        )
        with pytest.raises(FpdebugError, match="paused on an argument ask"):
            chat.send("hello?")
        with pytest.raises(DefinitionError, match="JSON data"):
            chat.resume(object())
        assert chat.paused == ask  # a bad answer is refused and the ask still waits
        turn = chat.resume("ACC-7731")
        assert turn.status == "completed" and chat.paused is None
        assert turn.content == "Account ACC-7731 has a balance of $842.15."
        result = chat.close()
    assert result.status == "completed" and SEEN == [{"account_id": "ACC-7731"}]
    events = read(tmp_path / "run.jsonl")
    kinds = [e.kind for e in events]
    # The ask ends the inputs write; the answer, the answered row, then the call.
    start = kinds.index("llm_call")
    assert kinds[start : start + 5] == ["llm_call", "finding", "ask_answer", "finding", "tool_result"]
    (answer_event,) = [e for e in events if isinstance(e, AskAnswerEvent)]
    assert (answer_event.tool_call_id, answer_event.path, answer_event.answer) == (
        "call_1",
        "$.account_id",
        "ACC-7731",
    )
    guessed, answered = rows_of(events, ArgumentRow)
    assert (guessed.source, guessed.value) == ("nowhere", "ACC-1001")
    assert (answered.source, answered.value, answered.answered) == ("user", "ACC-7731", True)
    (tool_result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert tool_result.args == {"account_id": "ACC-7731"}
    (assessment,) = [
        r for e in events if isinstance(e, FindingEvent) for r in e.rows if isinstance(r, AnswerAssessmentRow)
    ]
    assert "argumentAsk" in assessment.reads and "pausedToolCallId" in assessment.reads
    assert {v.text: v.supported_by for v in assessment.values}["ACC-7731"] == ["tool:call_1", "user"]
    assert recompute_findings(events) == recorded_findings(events)


def test_a_run_closed_while_paused_ends_paused_and_validates(tmp_path: Path) -> None:
    SEEN.clear()
    sink, chat = open_chat(
        tmp_path / "run.jsonl",
        agent(get_balance),
        model(ScriptedReply.tool_call("get_balance", {"account_id": "A-9"})),
    )
    with sink:
        assert chat.send("Balance?").status == "paused"
        result = chat.close()
    assert result.status == "paused" and result.turns[-1].status == "paused" and SEEN == []
    with pytest.raises(FpdebugError, match="never answered"):
        result.check()
    events = read(tmp_path / "run.jsonl")
    end = events[-1]
    assert isinstance(end, RunEndEvent) and end.status == "paused" and end.turns == 1
    assert "turn_end" not in [e.kind for e in events] and "tool_result" not in [e.kind for e in events]
    (ask,) = rows_of(events, AskRow)
    assert ask.guessed == "A-9"
    assert recompute_findings(events) == recorded_findings(events)


def test_two_ungrounded_arguments_are_asked_one_at_a_time(tmp_path: Path) -> None:
    SEEN.clear()
    provider = model(
        ScriptedReply.tool_call("transfer", {"source": "S-1", "target": "T-1"}),
        ScriptedReply.text("Moved."),
    )
    path = tmp_path / "run.jsonl"
    clock = FixedClock(T0)
    asked: list[str] = []

    def user(ask: AskRow) -> object:
        asked.append(ask.path)
        return {"$.source": "S-REAL", "$.target": "T-REAL"}[ask.path]

    with TraceFileSink.create(path, clock=clock) as sink:
        result = agent(transfer).run("Move my money", provider=provider, sink=sink, clock=clock, answer=user)
    assert result.status == "completed" and asked == ["$.source", "$.target"]
    assert SEEN == [{"source": "S-REAL", "target": "T-REAL"}]
    events = read(path)
    assert [e.kind for e in events].count("ask_answer") == 2
    assert [(r.path, r.source) for r in rows_of(events, ArgumentRow)] == [
        ("$.source", "nowhere"),
        ("$.target", "nowhere"),
        ("$.source", "user"),
        ("$.target", "user"),
    ]
    assert recompute_findings(events) == recorded_findings(events)


def test_no_ask_about_a_call_route_will_not_run_or_without_the_arm(tmp_path: Path) -> None:
    for name, bank in (
        ("limit", agent(get_balance).max_iterations(1)),
        ("unarmed", agent(get_balance, ask=False)),
    ):
        SEEN.clear()
        path = tmp_path / f"{name}.jsonl"
        clock = FixedClock(T0)
        provider = model(
            ScriptedReply.tool_call("get_balance", {"account_id": "ACC-1"}), ScriptedReply.text("Done.")
        )
        with TraceFileSink.create(path, clock=clock) as sink:
            result = bank.run("Balance?", provider=provider, sink=sink, clock=clock)
        assert result.status == "completed", name
        events = read(path)
        assert rows_of(events, AskRow) == [] and "ask_answer" not in [e.kind for e in events], name
        assert recompute_findings(events) == recorded_findings(events)


def test_fpdebug_run_says_a_run_ended_paused_on_an_unanswered_ask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fpdebug.cli import main

    module = tmp_path / "no_user.py"  # the argument-ask demo without its scripted user
    module.write_text("from fpdebug.demo.argument_ask import USER_MESSAGES, build_agent, scripted_provider\n")
    trace = tmp_path / "t.jsonl"
    assert main(["run", str(module), "--trace", str(trace)]) != 0
    captured = capsys.readouterr()
    assert "paused" in captured.out and "an argument ask nobody answered" in captured.err
    events = read(trace)
    assert isinstance(events[-1], RunEndEvent) and events[-1].status == "paused"


def test_an_answer_function_that_raises_ends_the_run_paused_then_raises(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = FixedClock(T0)

    def user(ask: AskRow) -> object:
        raise LookupError("no such account")

    provider = model(ScriptedReply.tool_call("get_balance", {"account_id": "ACC-1"}))
    with TraceFileSink.create(path, clock=clock) as sink, pytest.raises(LookupError):
        agent(get_balance).run("Balance?", provider=provider, sink=sink, clock=clock, answer=user)
    end = read(path)[-1]
    assert isinstance(end, RunEndEvent) and end.status == "paused"

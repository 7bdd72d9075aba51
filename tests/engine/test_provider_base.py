"""The provider contract: the live-call switch and the shared helpers."""

from __future__ import annotations

import threading

import pytest

from fpdebug.engine.providers import Provider, ScriptedProvider
from fpdebug.engine.providers.base import (
    BLOCK_ENV_VAR,
    allow_live_calls,
    check_live_call,
    live_calls_allowed,
    parse_tool_arguments,
    redact,
    system_text,
)
from fpdebug.errors import LiveCallRefusedError, ProviderError
from fpdebug.trace.schema import LlmRequest, PromptSegment


def test_the_suite_blocks_live_calls_by_default() -> None:
    assert live_calls_allowed() is False
    with pytest.raises(LiveCallRefusedError) as caught:
        check_live_call("anthropic", "claude-x")
    assert caught.value.provider == "anthropic"
    assert "claude-x" in str(caught.value)
    assert "allow_live_calls(False)" in str(caught.value)


def test_allow_live_calls_nests_and_restores() -> None:
    with allow_live_calls(True):
        assert live_calls_allowed()
        check_live_call("openai", "gpt-x")
        with allow_live_calls(False):
            assert not live_calls_allowed()
        assert live_calls_allowed()
    assert not live_calls_allowed()


def test_allow_live_calls_restores_after_an_exception() -> None:
    with pytest.raises(RuntimeError), allow_live_calls(True):
        raise RuntimeError("boom")
    assert not live_calls_allowed()


def test_the_switch_is_seen_by_a_worker_thread() -> None:
    # The TUI runs the agent loop in a worker thread: a block set by the caller must reach it.
    seen: list[bool] = []
    with allow_live_calls(True):
        worker = threading.Thread(target=lambda: seen.append(live_calls_allowed()))
        worker.start()
        worker.join()
    worker = threading.Thread(target=lambda: seen.append(live_calls_allowed()))
    worker.start()
    worker.join()
    assert seen == [True, False]


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_the_environment_variable_blocks_even_an_explicit_allow(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, value)
    with allow_live_calls(True):
        assert not live_calls_allowed()
        with pytest.raises(LiveCallRefusedError, match=BLOCK_ENV_VAR):
            check_live_call("openai", "gpt-x")


@pytest.mark.parametrize("value", ["0", "", "false", "no"])
def test_other_values_of_the_environment_variable_do_not_block(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(BLOCK_ENV_VAR, value)
    with allow_live_calls(True):
        assert live_calls_allowed()


def test_a_refused_live_call_is_a_provider_error() -> None:
    # The loop catches ProviderError to record a failed run; a refusal must be recorded the same way.
    with pytest.raises(ProviderError):
        check_live_call("anthropic", "claude-x")


def test_the_scripted_provider_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedProvider(["x"]), Provider)


def test_system_text_joins_segments_with_a_blank_line() -> None:
    request = LlmRequest(
        system_prompt=[
            PromptSegment(source="base", text="You are a clerk."),
            PromptSegment(source="fact", injection_id="tz", text="The shop is in Oslo."),
        ]
    )
    assert system_text(request) == "You are a clerk.\n\nThe shop is in Oslo."
    assert system_text(LlmRequest()) == ""


def test_redact_removes_every_occurrence_of_the_secret() -> None:
    assert redact("key sk-1 then sk-1 again", "sk-1") == "key [redacted] then [redacted] again"
    assert redact("nothing to hide", None) == "nothing to hide"


def test_tool_arguments_must_be_a_json_object() -> None:
    assert parse_tool_arguments('{"order_id": "A-17", "n": [1]}') == {"order_id": "A-17", "n": [1]}
    assert parse_tool_arguments("  ") == {}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"order_id": ', "is not valid JSON"),
        ("{'a': 1}", "is not valid JSON"),
        ("[1]", "is a JSON array, not an object"),
        ("null", "is a JSON null, not an object"),
        ("3", "is a JSON number, not an object"),
        ('"x"', "is a JSON string, not an object"),
    ],
)
def test_bad_tool_arguments_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_tool_arguments(text)


@pytest.mark.parametrize("opening", ["[", '{"a": '], ids=["arrays", "objects"])
def test_arguments_nested_too_deeply_are_bad_text_not_a_crash(opening: str) -> None:
    # json raises RecursionError on such text; a model's text is untrusted, so it is a ValueError
    # the provider turns into a malformed-arguments answer like any other bad text.
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_tool_arguments(opening * 100_000)

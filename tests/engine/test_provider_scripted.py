"""The scripted provider: scripts, exhaustion, respond functions, deterministic ids and usage."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpdebug.engine.providers.scripted import ScriptedCall, ScriptedProvider, ScriptedReply
from fpdebug.errors import DefinitionError, ProviderError, ScriptExhaustedError
from fpdebug.trace.schema import LlmRequest, LlmResponse, Message, PromptSegment, ToolCallRecord, Usage


def ask(text: str = "hello", *, system: str = "You help.") -> LlmRequest:
    return LlmRequest(
        system_prompt=[PromptSegment(source="base", text=system)],
        messages=[Message(role="user", content=text)],
    )


def after(request: LlmRequest, reply: LlmResponse, results: dict[str, str] | None = None) -> LlmRequest:
    """The next request of the conversation: the reply and each call's result appended."""
    messages = [
        *request.messages,
        Message(role="assistant", content=reply.content, tool_calls=reply.tool_calls),
    ]
    for call in reply.tool_calls:
        messages.append(
            Message(
                role="tool",
                tool_call_id=call.id,
                tool_name=call.name,
                content=(results or {}).get(call.id, "ok"),
            )
        )
    return request.model_copy(update={"messages": messages})


# ---------------------------------------------------------------------------------------------- scripts


def test_replies_are_served_in_order() -> None:
    provider = ScriptedProvider([ScriptedReply.tool_call("lookup", {"order": "A-17"}), "It shipped."])
    first = provider.complete(ask())
    assert [(c.name, c.args) for c in first.tool_calls] == [("lookup", {"order": "A-17"})]
    assert first.content == ""
    second = provider.complete(after(ask(), first))
    assert second.content == "It shipped."
    assert second.tool_calls == []
    assert provider.remaining == 0


def test_one_request_too_many_names_the_count_and_the_request_number() -> None:
    provider = ScriptedProvider(["a", "b"], name="support-script")
    provider.complete(ask())
    provider.complete(ask())
    with pytest.raises(ScriptExhaustedError) as caught:
        provider.complete(ask())
    assert "scripted 2 replies but received request #3" in str(caught.value)
    assert caught.value.provider == "support-script"
    assert isinstance(caught.value, ProviderError)


def test_exhaustion_of_a_one_reply_script_reads_well() -> None:
    provider = ScriptedProvider(["only"])
    provider.complete(ask())
    with pytest.raises(ScriptExhaustedError, match=r"scripted 1 reply but received request #2"):
        provider.complete(ask())


def test_an_empty_script_is_exhausted_at_once() -> None:
    with pytest.raises(ScriptExhaustedError, match=r"scripted 0 replies but received request #1"):
        ScriptedProvider([]).complete(ask())


def test_reset_rewinds_the_script_and_forgets_requests() -> None:
    provider = ScriptedProvider(["first", "second"])
    assert provider.complete(ask("a")).content == "first"
    assert provider.complete(ask("b")).content == "second"
    assert [r.messages[-1].content for r in provider.requests] == ["a", "b"]
    provider.reset()
    assert provider.requests == ()
    assert provider.complete(ask("c")).content == "first"
    assert provider.remaining == 1


def test_mapping_entries_follow_the_reference_reply_shape() -> None:
    provider = ScriptedProvider(
        [
            {
                "content": "Checking.",
                "tool_calls": [
                    {"id": "t-9", "name": "fetch", "args": {"url": "x"}},
                    {"name": "ping", "args": {}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 11, "output_tokens": 7},
            }
        ]
    )
    reply = provider.complete(ask())
    assert reply.content == "Checking."
    assert [(c.id, c.name, c.args) for c in reply.tool_calls] == [
        ("t-9", "fetch", {"url": "x"}),
        ("call_1", "ping", {}),
    ]
    assert reply.usage == Usage(input_tokens=11, output_tokens=7)


def test_a_ready_llm_response_is_served_unchanged() -> None:
    ready = LlmResponse(
        content="as recorded",
        tool_calls=[ToolCallRecord(id="toolu_1", name="x", args={"a": 1})],
        stop_reason="tool_use",
        usage=Usage(input_tokens=5, output_tokens=2),
    )
    assert ScriptedProvider([ready]).complete(ask()) == ready


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        (42, "scripted reply #2 has type int"),
        ({"content": "x", "tools": []}, "unknown keys ['tools']"),
        ({"tool_calls": [{"args": {}}]}, "not a valid reply mapping"),
        ({"usage": {"input_tokens": "many"}}, "not a valid reply mapping"),
    ],
)
def test_a_bad_script_entry_is_refused_when_the_script_is_built(entry: object, needle: str) -> None:
    with pytest.raises(DefinitionError, match="scripted reply #2") as caught:
        ScriptedProvider(["fine", entry])  # type: ignore[list-item]
    assert needle in str(caught.value)


# ---------------------------------------------------------------------------------------------- modes


def test_respond_answers_as_a_function_of_the_context() -> None:
    # The backtracker's scripted model: a planted fact in the context makes the answer wrong; the
    # same context always gives the same answer.
    def respond(request: LlmRequest) -> str:
        prompt = "\n".join(segment.text for segment in request.system_prompt)
        return "Refunds take 90 days." if "legacy policy" in prompt else "Refunds take 14 days."

    provider = ScriptedProvider(respond=respond)
    planted = ask(system="You help.\n\nlegacy policy: 90 days")
    clean = ask(system="You help.")
    assert provider.complete(planted).content == "Refunds take 90 days."
    assert provider.complete(clean).content == "Refunds take 14 days."
    assert provider.complete(planted) == provider.complete(planted)
    assert len(provider.requests) == 4


def test_respond_can_ask_for_tools_and_see_their_results() -> None:
    def respond(request: LlmRequest) -> ScriptedReply:
        results = [m.content for m in request.messages if m.role == "tool"]
        if not results:
            return ScriptedReply.tool_call("balance", {"account": "7"})
        return ScriptedReply.text(f"Your balance is {results[-1]}.")

    provider = ScriptedProvider(respond=respond)
    first = provider.complete(ask())
    final = provider.complete(after(ask(), first, {first.tool_calls[0].id: "42 EUR"}))
    assert final.content == "Your balance is 42 EUR."


def test_a_respond_function_that_raises_is_a_provider_error_naming_the_request() -> None:
    def respond(request: LlmRequest) -> str:
        raise KeyError("no such branch")

    provider = ScriptedProvider(respond=respond, name="planted")
    with pytest.raises(ProviderError, match=r"respond function raised KeyError on request #1") as caught:
        provider.complete(ask())
    assert caught.value.provider == "planted"
    assert isinstance(caught.value.__cause__, KeyError)


def test_a_respond_function_returning_a_non_reply_is_a_provider_error() -> None:
    provider = ScriptedProvider(respond=lambda request: 3.5)  # type: ignore[arg-type,return-value]
    with pytest.raises(ProviderError, match=r"respond.s reply to request #1 has type float"):
        provider.complete(ask())


def test_replies_take_precedence_over_reply_and_respond() -> None:
    provider = ScriptedProvider(["scripted"], reply="fixed", respond=lambda r: "function")
    assert provider.complete(ask()).content == "scripted"
    assert ScriptedProvider(reply="fixed", respond=lambda r: "function").complete(ask()).content == "fixed"


def test_with_nothing_scripted_it_echoes_the_last_user_message() -> None:
    request = LlmRequest(
        messages=[
            Message(role="user", content="first"),
            Message(role="assistant", content="ok"),
            Message(role="user", content="second"),
        ]
    )
    assert ScriptedProvider().complete(request).content == "second"


# ---------------------------------------------------------------------------------------------- ids


def test_missing_ids_continue_the_conversation_numbering() -> None:
    provider = ScriptedProvider(
        [
            ScriptedReply.batch(ScriptedCall("a"), ScriptedCall("b", {"x": 1})),
            ScriptedReply.batch(ScriptedCall("c", id="mine"), ScriptedCall("d")),
            "done",
        ]
    )
    first = provider.complete(ask())
    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"]
    second_request = after(ask(), first)
    second = provider.complete(second_request)
    assert [c.id for c in second.tool_calls] == ["mine", "call_3"]


def test_ids_are_a_function_of_the_request_not_of_the_instance() -> None:
    # A rerun on a reused instance (no reset) and one on a fresh instance see identical ids.
    script = [ScriptedReply.tool_call("a"), ScriptedReply.tool_call("b")]
    reused = ScriptedProvider(script)
    reused.complete(ask())
    again = reused.complete(ask())
    fresh = ScriptedProvider(script).complete(ask())
    assert again.tool_calls[0].id == fresh.tool_calls[0].id == "call_1"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6))
def test_generated_ids_are_unique_across_a_conversation(batch_sizes: list[int]) -> None:
    script = [ScriptedReply.batch(*(ScriptedCall(f"t{i}") for i in range(n))) for n in batch_sizes]
    provider = ScriptedProvider(script)
    request = ask()
    seen: list[str] = []
    for _ in batch_sizes:
        reply = provider.complete(request)
        seen.extend(call.id for call in reply.tool_calls)
        request = after(request, reply)
    assert len(seen) == len(set(seen)) == sum(batch_sizes)


# ---------------------------------------------------------------------------------------------- usage and stop


def test_usage_is_estimated_from_the_request_and_the_reply() -> None:
    request = LlmRequest(
        system_prompt=[PromptSegment(source="base", text="12345678")],  # 8 characters
        messages=[Message(role="user", content="abcd")],  # 4 characters
    )
    reply = ScriptedProvider(["hello"]).complete(request)
    assert reply.usage.input_tokens == math.ceil(12 / 4)
    assert reply.usage.output_tokens == math.ceil(len("hello") / 4)
    longer = ScriptedProvider(["hello"]).complete(ask("x" * 400))
    assert longer.usage.input_tokens > 100


def test_given_usage_is_kept() -> None:
    usage = Usage(input_tokens=1000, output_tokens=3, cache_read_tokens=900)
    assert ScriptedProvider([ScriptedReply.text("x", usage=usage)]).complete(ask()).usage == usage


def test_stop_reason_defaults_to_the_kind_of_reply() -> None:
    provider = ScriptedProvider(
        [
            ScriptedReply.tool_call("a"),
            ScriptedReply.text("done"),
            ScriptedReply.text("cut", stop_reason="max_tokens"),
        ]
    )
    assert provider.complete(ask()).stop_reason == "tool_use"
    assert provider.complete(ask()).stop_reason == "end_turn"
    assert provider.complete(ask()).stop_reason == "max_tokens"


def test_repr_says_what_drives_it() -> None:
    assert "replies=2" in repr(ScriptedProvider(["a", "b"]))
    assert "respond" in repr(ScriptedProvider(respond=lambda r: "x"))

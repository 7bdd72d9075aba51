"""The GenAI semantic conventions read the way real producers write them (one span at a time).

Producers disagree (see tests/ingest/fixtures/otlp/README.md for the table):

- the provider is in ``gen_ai.provider.name``, ``gen_ai.system`` or OpenInference's ``llm.system``;
- messages are JSON strings, structured values, log events (the legacy layout), or OpenInference's
  flattened ``llm.input_messages.N.*``;
- a message is ``{role, parts: [...]}`` (current conventions) or ``{role, content, tool_calls}``
  (OpenAI-shaped, as legacy log events and some frameworks write it);
- a tool result part has ``response`` or ``result``, comes with role ``tool`` or ``user``, and is a
  string or a list of content blocks;
- tool-call arguments are an object or a JSON string;
- input tokens include cached tokens (the OTel convention). fpdebug's :class:`Usage` keeps the
  provider's own split, as its engine records it: for Anthropic, whose API leaves cached tokens out
  of ``input_tokens``, the cache reads and writes are taken back out (only when that leaves a
  non-negative count, i.e. the producer did include them).

Nothing is invented: a field the span does not carry stays at its "not recorded" value (``None``,
or empty for lists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from fpdebug.ingest.otlp_decode import OtlpLog, OtlpSpan
from fpdebug.ingest.otlp_messages import (
    OI_INPUT,
    OI_OUTPUT,
    as_dict,
    as_int,
    finish_reason_of,
    first_of,
    json_value,
    log_messages,
    name_tool_messages,
    oi_messages,
    parse_args,
    read_messages,
    result_text,
    text_of,
)
from fpdebug.trace.schema import (
    ErrorInfo,
    LlmRequest,
    LlmResponse,
    Message,
    PromptSegment,
    ToolSchema,
    Usage,
)

__all__ = [
    "LlmSpan",
    "SpanRole",
    "ToolSpan",
    "agent_final_answer",
    "agent_name",
    "agent_user_message",
    "classify",
    "provider_of",
    "read_llm",
    "read_tool",
]

SpanRole: TypeAlias = Literal["llm", "tool", "agent", "other"]
"""What a span stands for in an agent run."""

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion", "responses"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_OI_TOOL = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")


def classify(span: OtlpSpan) -> SpanRole:
    """Whether a span is an LLM call, a tool execution, an agent invocation, or something else."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation in _LLM_OPERATIONS:
        return "llm"
    if operation == "execute_tool":
        return "tool"
    if operation in _AGENT_OPERATIONS:
        return "agent"
    if operation is not None:
        return "other"  # embeddings, create_agent's siblings: not part of the call/tool loop
    oi_kind = attrs.get("openinference.span.kind")
    if oi_kind is not None:
        return {"LLM": "llm", "TOOL": "tool", "AGENT": "agent"}.get(str(oi_kind).upper(), "other")  # type: ignore[return-value]
    traceloop = attrs.get("traceloop.span.kind")
    if traceloop == "tool":
        return "tool"
    if traceloop == "agent":
        return "agent"
    if attrs.get("llm.request.type") in ("chat", "completion"):
        return "llm"
    if first_of(attrs, "gen_ai.system", "gen_ai.provider.name") is not None and first_of(
        attrs, "gen_ai.request.model", "gen_ai.response.model"
    ):
        return "llm"
    return "other"


# LLM spans


@dataclass(slots=True)
class LlmSpan:
    """What one LLM span recorded, as fpdebug records."""

    span: OtlpSpan
    """The span it came from."""
    provider: str
    """The provider, or ``unknown`` when the span does not say."""
    model: str
    """The requested model (else the response model, else ``unknown``)."""
    request: LlmRequest
    """The request as recorded."""
    response: LlmResponse | None
    """The reply as recorded (``None`` for a failed call that recorded none)."""
    error: ErrorInfo | None
    """The failure, for a span with status ERROR."""
    response_id: str | None
    """``gen_ai.response.id`` (two instrumentations of one call share it)."""


def _system_segments(value: Any) -> list[PromptSegment]:
    value = json_value(value)
    if isinstance(value, str):
        return [PromptSegment(source="base", text=value)] if value else []
    if isinstance(value, list):
        return [
            PromptSegment(source="base", text=text_of(part.get("content", part.get("text"))))
            for part in value
            if isinstance(part, dict)
        ] + [PromptSegment(source="base", text=part) for part in value if isinstance(part, str)]
    return []


def _tool_schemas(attrs: dict[str, Any]) -> list[ToolSchema]:
    raw_list: list[Any] = []
    definitions = json_value(attrs.get("gen_ai.tool.definitions"))
    if isinstance(definitions, list):
        raw_list = definitions
    else:
        indexed = sorted((int(m.group(1)), v) for k, v in attrs.items() if (m := _OI_TOOL.match(k)))
        raw_list = [json_value(value) for _, value in indexed]
    schemas = []
    for raw in raw_list:
        if not isinstance(raw, dict):
            continue
        function = as_dict(raw.get("function")) or raw
        name = function.get("name")
        if not name:
            continue
        parameters = function.get("parameters", function.get("input_schema", {}))
        schemas.append(
            ToolSchema(
                name=str(name),
                description=str(function.get("description") or ""),
                parameters=parameters if isinstance(parameters, dict) else {},
            )
        )
    return schemas


def _usage(attrs: dict[str, Any], provider: str) -> Usage | None:
    reported = as_int(
        first_of(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    )
    output = as_int(
        first_of(
            attrs,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        )
    )
    read = as_int(
        first_of(
            attrs,
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
            "llm.token_count.prompt_details.cache_read",
        )
    )
    write = as_int(
        first_of(
            attrs,
            "gen_ai.usage.cache_creation.input_tokens",
            "gen_ai.usage.cache_write.input_tokens",
            "gen_ai.usage.cache_creation_input_tokens",
            "llm.token_count.prompt_details.cache_write",
        )
    )
    if reported is None and output is None:
        return None
    input_tokens = reported or 0
    cached = (read or 0) + (write or 0)
    if provider == "anthropic" and cached and input_tokens >= cached:
        input_tokens -= cached  # back to the API's own split (see the module docstring)
    return Usage(
        input_tokens=input_tokens, output_tokens=output or 0, cache_read_tokens=read, cache_write_tokens=write
    )


def provider_of(attrs: dict[str, Any]) -> str | None:
    """The provider a span names, in whichever attribute its producer uses."""
    value = first_of(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    return str(value) if value is not None else None


def _conversation(
    attrs: dict[str, Any], logs: list[OtlpLog]
) -> tuple[list[Message] | None, list[Message] | None, str | None]:
    """The request's and the reply's messages, wherever the producer put them, and a log's finish reason."""
    log_in, log_out, log_finish = log_messages(logs)
    inputs = read_messages(attrs.get("gen_ai.input.messages"))
    if inputs is None:
        inputs = oi_messages(attrs, OI_INPUT)
    outputs = read_messages(attrs.get("gen_ai.output.messages"))
    if outputs is None:
        outputs = oi_messages(attrs, OI_OUTPUT)
    return (
        (inputs if inputs is not None else log_in),
        (outputs if outputs is not None else log_out),
        log_finish,
    )


def _request(attrs: dict[str, Any], inputs: list[Message] | None, invocation: dict[str, Any]) -> LlmRequest:
    """The request as recorded; the chat API's leading system messages become the system prompt."""
    segments = _system_segments(attrs.get("gen_ai.system_instructions"))
    messages = list(inputs or [])
    while messages and messages[0].role == "system":
        head = messages.pop(0)
        if not any(segment.text == head.content for segment in segments):
            segments.append(PromptSegment(source="base", text=head.content))
    temperature = first_of(attrs, "gen_ai.request.temperature") or invocation.get("temperature")
    return LlmRequest(
        system_prompt=segments,
        messages=name_tool_messages(messages),
        tools=_tool_schemas(attrs),
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        max_tokens=as_int(first_of(attrs, "gen_ai.request.max_tokens") or invocation.get("max_tokens")),
        seed=as_int(attrs.get("gen_ai.request.seed")),
    )


def _stop_reason(attrs: dict[str, Any], log_finish: str | None) -> str | None:
    """The provider's own stop reason when the span has it, else the conventions' first finish reason."""
    finish_reasons = attrs.get("gen_ai.response.finish_reasons")
    # fpdebug's own export keeps the provider's word beside the convention's mapped value.
    stop = first_of(
        attrs, "fpdebug.response.stop_reason", "anthropic.message.stop_reason", "llm.finish_reason"
    ) or (finish_reasons[0] if isinstance(finish_reasons, list) and finish_reasons else None)
    stop = stop or finish_reason_of(attrs.get("gen_ai.output.messages")) or log_finish
    return str(stop) if stop is not None else None


def _text_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


def _reply(
    outputs: list[Message] | None, stop_reason: str | None, usage: Usage | None, ids: tuple[Any, Any]
) -> LlmResponse | None:
    """The reply as recorded; ``None`` when the span recorded nothing of one."""
    response_id, response_model = ids
    if outputs is None and usage is None and stop_reason is None and response_id is None:
        return None
    return LlmResponse(
        content="".join(message.content for message in outputs or () if message.role == "assistant"),
        tool_calls=[call for message in outputs or () for call in message.tool_calls or ()],
        stop_reason=stop_reason,
        usage=usage or Usage(),
        id=_text_or_none(response_id),
        model=_text_or_none(response_model),
    )


def read_llm(span: OtlpSpan, logs: list[OtlpLog] | None = None) -> LlmSpan:
    """One LLM span (with its legacy log events, if any) as a request and a reply."""
    attrs = span.attributes
    provider = provider_of(attrs) or "unknown"
    invocation = as_dict(json_value(attrs.get("llm.invocation_parameters")))
    raw = attrs.get("output.value") if attrs.get("output.mime_type") == "application/json" else None
    raw_reply = as_dict(json_value(raw))  # OpenInference keeps the provider's raw reply here
    model = first_of(attrs, "gen_ai.request.model", "llm.request.model") or invocation.get("model")
    response_model = first_of(
        attrs, "gen_ai.response.model", "llm.response.model", "llm.model_name"
    ) or raw_reply.get("model")
    response_id = first_of(attrs, "gen_ai.response.id") or raw_reply.get("id")
    inputs, outputs, log_finish = _conversation(attrs, logs or [])
    error = None
    if span.status_code == 2:
        error = ErrorInfo(
            type=str(attrs.get("error.type") or "error"), message=span.status_message or "the call failed"
        )
    return LlmSpan(
        span=span,
        provider=provider,
        model=str(model or response_model or "unknown"),
        request=_request(attrs, inputs, invocation),
        response=_reply(
            outputs, _stop_reason(attrs, log_finish), _usage(attrs, provider), (response_id, response_model)
        ),
        error=error,
        response_id=_text_or_none(response_id),
    )


# ----------------------------------------------------------------------------------------------
# Tool spans and agent spans


@dataclass(slots=True)
class ToolSpan:
    """What one tool span recorded."""

    span: OtlpSpan
    """The span it came from."""
    name: str
    """The tool name."""
    call_id: str | None
    """The tool-call id it answers, when the span records it."""
    args: dict[str, Any]
    """The arguments (empty when not recorded)."""
    result: str
    """The result text (empty when not recorded)."""
    description: str | None
    """The tool's description, when recorded."""
    status: str | None
    """``failure`` for a span with status ERROR; a status fpdebug itself exported; else ``None``."""
    error: ErrorInfo | None
    """The failure, when the span has status ERROR."""


def read_tool(span: OtlpSpan) -> ToolSpan:
    """One tool span: name, call id, arguments, result, failure."""
    attrs = span.attributes
    name = first_of(attrs, "gen_ai.tool.name", "tool.name") or span.name.removeprefix("execute_tool ").strip()
    args, _raw = parse_args(first_of(attrs, "gen_ai.tool.call.arguments", "input.value", "tool.parameters"))
    result = result_text(first_of(attrs, "gen_ai.tool.call.result", "output.value"))
    error = None
    status = attrs.get("fpdebug.tool.status")
    if span.status_code == 2:
        error = ErrorInfo(
            type=str(attrs.get("error.type") or "error"), message=span.status_message or "the tool failed"
        )
        status = status or "failure"
    call_id = first_of(attrs, "gen_ai.tool.call.id", "tool_call.id")
    description = first_of(attrs, "gen_ai.tool.description", "tool.description")
    return ToolSpan(
        span=span,
        name=str(name),
        call_id=str(call_id) if call_id is not None else None,
        args=args,
        result=result,
        description=str(description) if description is not None else None,
        status=str(status) if status is not None else None,
        error=error,
    )


def agent_user_message(span: OtlpSpan) -> str | None:
    """The user's message an agent span (or a root) recorded, if any."""
    attrs = span.attributes
    messages = read_messages(attrs.get("gen_ai.input.messages"))
    if messages:
        users = [message.content for message in messages if message.role == "user" and message.content]
        if users:
            return users[-1]
    value = attrs.get("input.value")
    if isinstance(value, str) and attrs.get("input.mime_type", "text/plain") == "text/plain":
        return value
    return None


def agent_final_answer(span: OtlpSpan) -> str | None:
    """The final answer an agent span (or a root) recorded, if any."""
    attrs = span.attributes
    messages = read_messages(attrs.get("gen_ai.output.messages"))
    if messages:
        texts = [message.content for message in messages if message.role == "assistant" and message.content]
        if texts:
            return texts[-1]
    value = first_of(attrs, "final_result")
    if value is None and attrs.get("output.mime_type", "text/plain") == "text/plain":
        value = attrs.get("output.value")
    return result_text(value) if value is not None else None


def agent_name(span: OtlpSpan) -> str | None:
    """The agent's name on an agent span (GenAI, pydantic-ai, OpenInference's span name)."""
    attrs = span.attributes
    name = first_of(attrs, "gen_ai.agent.name", "agent_name", "agent.name")
    if name is None and attrs.get("openinference.span.kind") == "AGENT":
        name = span.name
    return str(name) if name is not None else None

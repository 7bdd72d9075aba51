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

import ast
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import orjson

from fpdebug.ingest.otlp_decode import OtlpLog, OtlpSpan
from fpdebug.trace.schema import (
    ErrorInfo,
    LlmRequest,
    LlmResponse,
    Message,
    PromptSegment,
    ToolCallRecord,
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
    "parse_args",
    "read_llm",
    "read_messages",
    "read_tool",
    "result_text",
]

SpanRole: TypeAlias = Literal["llm", "tool", "agent", "other"]
"""What a span stands for in an agent run."""

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion", "responses"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_OI_INPUT = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(.+)$")
_OI_OUTPUT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(.+)$")
_OI_TOOL = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")


_REPR_LIMIT = 1 << 20


def _json(value: Any) -> Any:
    """A JSON string parsed; else a Python literal's ``repr`` (openai-agents writes those), read
    with :func:`ast.literal_eval` (literals only, nothing is run); anything else as it is."""
    if isinstance(value, str) and value[:1] in ("[", "{", '"'):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
        if len(value) <= _REPR_LIMIT:
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    return value


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value not in (None, ""):
            return value
    return None


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
    if _first(attrs, "gen_ai.system", "gen_ai.provider.name") is not None and _first(
        attrs, "gen_ai.request.model", "gen_ai.response.model"
    ):
        return "llm"
    return "other"


# ----------------------------------------------------------------------------------------------
# Messages


def parse_args(value: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments (an object, or a JSON string) as ``(args, raw_args)``.

    ``raw_args`` is kept only when the text is not a JSON object, as the engine does.
    """
    if isinstance(value, dict):
        return value, None
    if value is None or value == "":
        return {}, None
    if isinstance(value, str):
        parsed = _json(value)
        if isinstance(parsed, dict):
            return parsed, None
        return {}, value
    return {}, orjson.dumps(value).decode()


def result_text(value: Any) -> str:
    """A tool result as the model read it: a string as it is, content blocks' texts joined, else JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(block, dict) for block in value):
        texts = [block.get("text", block.get("content")) for block in value]
        if texts and all(isinstance(text, str) for text in texts):
            return "".join(text for text in texts if isinstance(text, str))
    return orjson.dumps(value).decode()


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                text = block.get("text", block.get("content"))
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return orjson.dumps(content).decode()


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCallRecord:
    args, raw = parse_args(arguments)
    return ToolCallRecord(id=str(call_id or ""), name=str(name or ""), args=args, raw_args=raw)


def _parts_message(role: str, parts: list[Any]) -> list[Message]:
    """One ``{role, parts}`` message as fpdebug messages (tool results split into ``tool`` messages)."""
    texts: list[str] = []
    calls: list[ToolCallRecord] = []
    results: list[Message] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" or (kind is None and "content" in part):
            texts.append(_text_of(part.get("content", part.get("text"))))
        elif kind == "tool_call":
            calls.append(_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            value = part["response"] if "response" in part else part.get("result")
            name = part.get("name")
            results.append(
                Message(
                    role="tool",
                    content=result_text(value),
                    tool_call_id=str(part.get("id") or "") or None,
                    tool_name=str(name) if name else None,
                )
            )
    messages: list[Message] = list(results)
    if texts or calls or not results:
        speaker = role if role in ("system", "user", "assistant", "tool") else "user"
        messages.append(
            Message(role=speaker, content="".join(texts), tool_calls=calls or None)  # type: ignore[arg-type]
        )
    return messages


def _openai_message(raw: dict[str, Any]) -> Message:
    """An OpenAI-shaped message: ``{role, content, tool_calls, tool_call_id}``."""
    role = str(raw.get("role") or "user")
    calls = []
    for call in raw.get("tool_calls") or ():
        if isinstance(call, dict):
            function = _dict(call.get("function")) or call
            calls.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    if role not in ("system", "user", "assistant", "tool"):
        role = "user"
    content = raw.get("content")
    return Message(
        role=role,  # type: ignore[arg-type]
        content=result_text(content) if role == "tool" else _text_of(content),
        tool_calls=calls or None,
        tool_call_id=str(raw["tool_call_id"])
        if raw.get("tool_call_id")
        else (str(raw["id"]) if role == "tool" and raw.get("id") else None),
        tool_name=str(raw["name"]) if role == "tool" and raw.get("name") else None,
    )


def read_messages(value: Any) -> list[Message] | None:
    """A GenAI message list (JSON text or structured) as fpdebug messages; ``None`` when not recorded."""
    value = _json(value)
    if not isinstance(value, list):
        return None
    messages: list[Message] = []
    for raw in value:
        if not isinstance(raw, dict):
            continue
        if isinstance(raw.get("parts"), list):
            messages.extend(_parts_message(str(raw.get("role") or "user"), raw["parts"]))
        else:
            messages.append(_openai_message(raw))
    return messages


def _finish_reason_of(value: Any) -> str | None:
    value = _json(value)
    if isinstance(value, list):
        for raw in value:
            if isinstance(raw, dict) and raw.get("finish_reason"):
                return str(raw["finish_reason"])
    return None


def _oi_messages(attrs: dict[str, Any], pattern: re.Pattern[str]) -> list[Message] | None:
    """OpenInference's flattened ``llm.{input,output}_messages.N.message.*`` as messages."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = pattern.match(key)
        if match:
            rows.setdefault(int(match.group(1)), {})[match.group(2)] = value
    if not rows:
        return None
    messages = []
    for index in sorted(rows):
        row = rows[index]
        calls: dict[int, dict[str, Any]] = {}
        contents: dict[int, str] = {}
        for key, value in row.items():
            call = re.match(r"^tool_calls\.(\d+)\.tool_call\.(.+)$", key)
            if call:
                calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
            block = re.match(r"^contents\.(\d+)\.message_content\.text$", key)
            if block:
                contents[int(block.group(1))] = str(value)
        raw: dict[str, Any] = {
            "role": row.get("role"),
            "content": row.get("content", "".join(contents[k] for k in sorted(contents))),
            "tool_call_id": row.get("tool_call_id"),
            "name": row.get("name"),
            "tool_calls": [
                {
                    "id": calls[k].get("id"),
                    "function": {
                        "name": calls[k].get("function.name"),
                        "arguments": calls[k].get("function.arguments"),
                    },
                }
                for k in sorted(calls)
            ],
        }
        messages.append(_openai_message(raw))
    return messages


def _log_messages(logs: list[OtlpLog]) -> tuple[list[Message] | None, list[Message] | None, str | None]:
    """The legacy event layout: ``gen_ai.{system,user,assistant,tool}.message`` in, ``gen_ai.choice`` out."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    finish: str | None = None
    for log in sorted(logs, key=lambda log: log.time_ns):
        body = log.body if isinstance(log.body, dict) else {"content": log.body}
        name = log.event_name
        if name == "gen_ai.choice":
            message = _dict(body.get("message"))
            outputs.append(_openai_message({"role": "assistant", **message}))
            if body.get("finish_reason") and finish is None:
                finish = str(body["finish_reason"])
        elif name.startswith("gen_ai.") and name.endswith(".message"):
            role = name.removeprefix("gen_ai.").removesuffix(".message")
            inputs.append(
                _openai_message(
                    {"role": body.get("role") or role, **{k: v for k, v in body.items() if k != "role"}}
                )
            )
    return (inputs or None), (outputs or None), finish


def _tool_names(messages: list[Message]) -> list[Message]:
    """Name each tool message after the call it answers (an id only links them in the source)."""
    names: dict[str, str] = {}
    named: list[Message] = []
    for message in messages:
        for call in message.tool_calls or ():
            names[call.id] = call.name
        if message.role == "tool" and message.tool_name is None and message.tool_call_id in names:
            message = message.model_copy(update={"tool_name": names[message.tool_call_id or ""]})
        named.append(message)
    return named


# ----------------------------------------------------------------------------------------------
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
    value = _json(value)
    if isinstance(value, str):
        return [PromptSegment(source="base", text=value)] if value else []
    if isinstance(value, list):
        return [
            PromptSegment(source="base", text=_text_of(part.get("content", part.get("text"))))
            for part in value
            if isinstance(part, dict)
        ] + [PromptSegment(source="base", text=part) for part in value if isinstance(part, str)]
    return []


def _tool_schemas(attrs: dict[str, Any]) -> list[ToolSchema]:
    raw_list: list[Any] = []
    definitions = _json(attrs.get("gen_ai.tool.definitions"))
    if isinstance(definitions, list):
        raw_list = definitions
    else:
        indexed = sorted((int(m.group(1)), v) for k, v in attrs.items() if (m := _OI_TOOL.match(k)))
        raw_list = [_json(value) for _, value in indexed]
    schemas = []
    for raw in raw_list:
        if not isinstance(raw, dict):
            continue
        function = _dict(raw.get("function")) or raw
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
    reported = _int(
        _first(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    )
    output = _int(
        _first(
            attrs,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        )
    )
    read = _int(
        _first(
            attrs,
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_read_input_tokens",
            "llm.token_count.prompt_details.cache_read",
        )
    )
    write = _int(
        _first(
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
    value = _first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    return str(value) if value is not None else None


def read_llm(span: OtlpSpan, logs: list[OtlpLog] | None = None) -> LlmSpan:
    """One LLM span (with its legacy log events, if any) as a request and a reply."""
    attrs = span.attributes
    provider = provider_of(attrs) or "unknown"
    invocation = _json(attrs.get("llm.invocation_parameters"))
    invocation = invocation if isinstance(invocation, dict) else {}
    response_json = (
        _json(attrs.get("output.value")) if attrs.get("output.mime_type") == "application/json" else None
    )
    response_json = response_json if isinstance(response_json, dict) else {}
    model = _first(attrs, "gen_ai.request.model", "llm.request.model") or invocation.get("model")
    response_model = _first(
        attrs, "gen_ai.response.model", "llm.response.model", "llm.model_name"
    ) or response_json.get("model")
    response_id = _first(attrs, "gen_ai.response.id") or response_json.get("id")

    log_in, log_out, log_finish = _log_messages(logs or [])
    inputs = read_messages(attrs.get("gen_ai.input.messages"))
    if inputs is None:
        inputs = _oi_messages(attrs, _OI_INPUT)
    if inputs is None:
        inputs = log_in
    outputs = read_messages(attrs.get("gen_ai.output.messages"))
    if outputs is None:
        outputs = _oi_messages(attrs, _OI_OUTPUT)
    if outputs is None:
        outputs = log_out

    segments = _system_segments(attrs.get("gen_ai.system_instructions"))
    messages = list(inputs or [])
    while messages and messages[0].role == "system":  # the chat API's system message is the prompt
        head = messages.pop(0)
        if not any(segment.text == head.content for segment in segments):
            segments.append(PromptSegment(source="base", text=head.content))
    temperature = _first(attrs, "gen_ai.request.temperature") or invocation.get("temperature")
    max_tokens = _int(_first(attrs, "gen_ai.request.max_tokens") or invocation.get("max_tokens"))
    request = LlmRequest(
        system_prompt=segments,
        messages=_tool_names(messages),
        tools=_tool_schemas(attrs),
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        max_tokens=max_tokens,
        seed=_int(attrs.get("gen_ai.request.seed")),
    )

    finish_reasons = attrs.get("gen_ai.response.finish_reasons")
    stop_reason = _first(attrs, "anthropic.message.stop_reason", "llm.finish_reason") or (
        finish_reasons[0] if isinstance(finish_reasons, list) and finish_reasons else None
    )
    stop_reason = stop_reason or _finish_reason_of(attrs.get("gen_ai.output.messages")) or log_finish
    usage = _usage(attrs, provider)
    response: LlmResponse | None = None
    if outputs is not None or usage is not None or stop_reason is not None or response_id is not None:
        content = "".join(message.content for message in outputs or () if message.role == "assistant")
        calls = [call for message in outputs or () for call in message.tool_calls or ()]
        response = LlmResponse(
            content=content,
            tool_calls=calls,
            stop_reason=str(stop_reason) if stop_reason is not None else None,
            usage=usage or Usage(),
            id=str(response_id) if response_id is not None else None,
            model=str(response_model) if response_model is not None else None,
        )
    error = None
    if span.status_code == 2:
        error = ErrorInfo(
            type=str(attrs.get("error.type") or "error"), message=span.status_message or "the call failed"
        )
    return LlmSpan(
        span=span,
        provider=provider,
        model=str(model or response_model or "unknown"),
        request=request,
        response=response,
        error=error,
        response_id=str(response_id) if response_id is not None else None,
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
    name = _first(attrs, "gen_ai.tool.name", "tool.name") or span.name.removeprefix("execute_tool ").strip()
    args, _raw = parse_args(_first(attrs, "gen_ai.tool.call.arguments", "input.value", "tool.parameters"))
    result = result_text(_first(attrs, "gen_ai.tool.call.result", "output.value"))
    error = None
    status = attrs.get("fpdebug.tool.status")
    if span.status_code == 2:
        error = ErrorInfo(
            type=str(attrs.get("error.type") or "error"), message=span.status_message or "the tool failed"
        )
        status = status or "failure"
    call_id = _first(attrs, "gen_ai.tool.call.id", "tool_call.id")
    description = _first(attrs, "gen_ai.tool.description", "tool.description")
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
    value = _first(attrs, "final_result")
    if value is None and attrs.get("output.mime_type", "text/plain") == "text/plain":
        value = attrs.get("output.value")
    return result_text(value) if value is not None else None


def agent_name(span: OtlpSpan) -> str | None:
    """The agent's name on an agent span (GenAI, pydantic-ai, OpenInference's span name)."""
    attrs = span.attributes
    name = _first(attrs, "gen_ai.agent.name", "agent_name", "agent.name")
    if name is None and attrs.get("openinference.span.kind") == "AGENT":
        name = span.name
    return str(name) if name is not None else None

"""GenAI message shapes as producers write them → fpdebug messages (see :mod:`fpdebug.ingest.otlp_genai`).

- ``{role, parts: [...]}`` (current conventions): ``text``, ``tool_call`` (arguments an object or a
  JSON string), ``tool_call_response`` (``response`` or ``result``, a string or content blocks; role
  ``tool`` or ``user``);
- ``{role, content, tool_calls, tool_call_id}`` (OpenAI-shaped: legacy log events, some frameworks);
- OpenInference's flattened ``llm.{input,output}_messages.N.message.*`` attributes;
- the legacy log events ``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice``;
- any of these as JSON text, structured values, or a Python ``repr`` (openai-agents).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import orjson

from fpdebug.ingest.otlp_decode import OtlpLog
from fpdebug.trace.schema import Message, ToolCallRecord

__all__ = [
    "OI_INPUT",
    "OI_OUTPUT",
    "as_dict",
    "as_int",
    "finish_reason_of",
    "first_of",
    "json_value",
    "log_messages",
    "name_tool_messages",
    "oi_messages",
    "parse_args",
    "read_messages",
    "result_text",
    "text_of",
]

OI_INPUT = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(.+)$")
"""OpenInference's flattened input message attributes."""
OI_OUTPUT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(.+)$")
"""OpenInference's flattened output message attributes."""

_REPR_LIMIT = 1 << 20


def json_value(value: Any) -> Any:
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


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int | None:
    """An integer attribute (OTLP int64s may arrive as text), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def first_of(attrs: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` that ``attrs`` holds a non-empty value for."""
    for key in keys:
        value = attrs.get(key)
        if value not in (None, ""):
            return value
    return None


def parse_args(value: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments (an object, or a JSON string) as ``(args, raw_args)``.

    ``raw_args`` is kept only when the text is not a JSON object, as the engine does.
    """
    if isinstance(value, dict):
        return value, None
    if value is None or value == "":
        return {}, None
    if isinstance(value, str):
        parsed = json_value(value)
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


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the texts of its blocks joined."""
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
            texts.append(text_of(part.get("content", part.get("text"))))
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
            function = as_dict(call.get("function")) or call
            calls.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    if role not in ("system", "user", "assistant", "tool"):
        role = "user"
    content = raw.get("content")
    return Message(
        role=role,  # type: ignore[arg-type]
        content=result_text(content) if role == "tool" else text_of(content),
        tool_calls=calls or None,
        tool_call_id=str(raw["tool_call_id"])
        if raw.get("tool_call_id")
        else (str(raw["id"]) if role == "tool" and raw.get("id") else None),
        tool_name=str(raw["name"]) if role == "tool" and raw.get("name") else None,
    )


def read_messages(value: Any) -> list[Message] | None:
    """A GenAI message list (JSON text or structured) as fpdebug messages; ``None`` when not recorded."""
    value = json_value(value)
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


def finish_reason_of(value: Any) -> str | None:
    """The ``finish_reason`` an output message list carries (pydantic-ai, openai-v2), if any."""
    value = json_value(value)
    if isinstance(value, list):
        for raw in value:
            if isinstance(raw, dict) and raw.get("finish_reason"):
                return str(raw["finish_reason"])
    return None


def oi_messages(attrs: dict[str, Any], pattern: re.Pattern[str]) -> list[Message] | None:
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


def log_messages(logs: list[OtlpLog]) -> tuple[list[Message] | None, list[Message] | None, str | None]:
    """The legacy event layout: ``gen_ai.{system,user,assistant,tool}.message`` in, ``gen_ai.choice`` out."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    finish: str | None = None
    for log in sorted(logs, key=lambda log: log.time_ns):
        body = log.body if isinstance(log.body, dict) else {"content": log.body}
        name = log.event_name
        if name == "gen_ai.choice":
            message = as_dict(body.get("message"))
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


def name_tool_messages(messages: list[Message]) -> list[Message]:
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

"""PROTOTYPE (issue 22, not wired in): the request codec of a referenced ``schema_version`` 2.

An ``llm_call``'s request repeats, call after call, the same system-prompt segments, the same tool
schemas and the conversation so far. Encoded, each distinct segment and tool schema of a run is
written once, with a number (``{"def": n, …}``), and referenced by that number afterwards; the
messages are written as the previous call's first ``keep`` messages, then the new ones
(``{"keep": k, "then": […]}``). :func:`decode_request` rebuilds the request exactly, given the same
run's earlier requests in order: a reader resolves references in one place, sequentially per run.

Not wired into the writer or the reader: a referenced line cannot be read on its own, so random
access (the line index, line-range workers) needs each run's definitions at hand first. That is the
part left to build; this module and its test pin the codec.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["RequestCodec", "decode_request", "encode_request"]


class RequestCodec:
    """One run's state: the segments and tools defined so far, and the previous call's messages."""

    def __init__(self) -> None:
        self.segments: dict[bytes, int] = {}
        self.segment_list: list[dict[str, Any]] = []
        self.tools: dict[bytes, int] = {}
        self.tool_list: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []


def _refer(items: list[dict[str, Any]], known: dict[bytes, int], listed: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        key = orjson.dumps(item)
        number = known.get(key)
        if number is None:
            known[key] = number = len(listed) + 1
            listed.append(item)
            out.append({"def": number, **item})
        else:
            out.append(number)
    return out


def _resolve(items: list[Any], listed: list[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, int):
            if not 1 <= item <= len(listed):
                raise ValueError(f"{what} {item} is referenced before it is defined")
            out.append(listed[item - 1])
        else:
            number = item.get("def")
            body = {key: value for key, value in item.items() if key != "def"}
            if number != len(listed) + 1:
                raise ValueError(f"{what} defined as {number}, expected {len(listed) + 1}")
            listed.append(body)
            out.append(body)
    return out


def encode_request(request: dict[str, Any], codec: RequestCodec) -> dict[str, Any]:
    """The referenced form of one request (its JSON object as written), advancing ``codec``."""
    encoded = dict(request)
    if "system_prompt" in request:
        encoded["system_prompt"] = _refer(request["system_prompt"], codec.segments, codec.segment_list)
    if "tools" in request:
        encoded["tools"] = _refer(request["tools"], codec.tools, codec.tool_list)
    messages = request.get("messages", [])
    keep = 0
    previous = codec.messages
    while keep < min(len(messages), len(previous)) and messages[keep] == previous[keep]:
        keep += 1
    codec.messages = messages
    if "messages" in request:
        encoded["messages"] = {"keep": keep, "then": messages[keep:]}
    return encoded


def decode_request(encoded: dict[str, Any], codec: RequestCodec) -> dict[str, Any]:
    """The request as written in version 1, from its referenced form, advancing ``codec``.

    Raises:
        ValueError: A reference to something not defined earlier in the run, or a ``keep`` longer
            than the previous call's conversation.
    """
    request = dict(encoded)
    if "system_prompt" in encoded:
        request["system_prompt"] = _resolve(encoded["system_prompt"], codec.segment_list, "segment")
    if "tools" in encoded:
        request["tools"] = _resolve(encoded["tools"], codec.tool_list, "tool")
    if "messages" in encoded:
        delta = encoded["messages"]
        keep = delta["keep"]
        if not 0 <= keep <= len(codec.messages):
            raise ValueError(f"keeps {keep} messages of a conversation of {len(codec.messages)}")
        request["messages"] = codec.messages[:keep] + list(delta["then"])
        codec.messages = request["messages"]
    else:
        codec.messages = []
    return request

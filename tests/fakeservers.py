"""Local fake model API servers for offline provider tests (127.0.0.1, an ephemeral port).

A :class:`FakeServer` records every request it receives and answers through a handler function the
test sets, so the real SDK clients speak their real wire format to it. Helpers build the JSON bodies
of the Anthropic Messages API and the OpenAI Chat Completions API.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeResponse",
    "FakeServer",
    "RecordedRequest",
    "anthropic_block_stream",
    "anthropic_error",
    "anthropic_message",
    "anthropic_stream",
    "anthropic_thinking_rule",
    "openai_completion",
    "openai_error",
    "openai_stream",
    "reply_with",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the server received it."""

    method: str
    """``POST``, ``GET``…"""
    path: str
    """The request path (``/v1/messages``)."""
    headers: dict[str, str]
    """Headers, names lower-cased."""
    body: bytes
    """The raw body."""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class FakeResponse:
    """What the handler wants sent back."""

    status: int = 200
    """The HTTP status."""
    body: Any = field(default_factory=dict)
    """A JSON-serialisable body, or raw ``bytes``."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra headers."""
    delay: float = 0.0
    """Seconds to wait before answering (a slow server, for timeouts)."""
    content_type: str = "application/json"
    """The body's media type (``text/event-stream`` for a streamed reply)."""


Handler = Callable[[RecordedRequest], FakeResponse]


def reply_with(body: object, status: int = 200) -> Handler:
    """A handler that answers every request with one body and status."""
    return lambda request: FakeResponse(status, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that timed out and hung up makes the late write fail; that is the point of the
        # timeout tests, not an error worth a traceback on stderr.
        pass


class FakeServer:
    """A threaded HTTP server on 127.0.0.1 whose answers come from ``handler``."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler: Handler = handler or (lambda request: FakeResponse(404, {"error": "no handler set"}))
        """Decides the response to each request; tests replace it freely."""
        self.requests: list[RecordedRequest] = []
        """Every request received, in order."""
        self._stopping = threading.Event()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                recorded = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                outer.requests.append(recorded)
                response = outer.handler(recorded)
                if response.delay and outer._stopping.wait(response.delay):
                    return
                data = (
                    response.body if isinstance(response.body, bytes) else json.dumps(response.body).encode()
                )
                self.send_response(response.status)
                self.send_header("Content-Type", response.content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = _serve

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), _Handler)
        # A short poll interval keeps shutdown (once per test) from costing half a second.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-api", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed handler, and close the socket."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ----------------------------------------------------------------------------------------------
# Wire-format bodies


def anthropic_message(
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read: int | None = None,
    cache_write: int | None = None,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A Messages API reply body."""
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """A Messages API error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_thinking_rule(body: dict[str, Any], issued: dict[str, str]) -> FakeResponse | None:
    """The Messages API's rule for extended thinking with tools, as the real API enforces it.

    With ``thinking`` enabled, the assistant turn that made the last ``tool_use`` must be sent back
    starting with its thinking blocks, unchanged: a ``thinking`` block's signature must be one the
    server issued for exactly that text, a ``redacted_thinking`` block's data one it issued.

    Args:
        body: the request body.
        issued: what the server handed out: signature -> thinking text, and data -> ``""`` for
            redacted blocks.

    Returns:
        The 400 the real API answers with, or ``None`` when the request follows the rule.
    """
    if (body.get("thinking") or {}).get("type") != "enabled":
        return None
    turns = body.get("messages") or []
    tool_turns = [
        index
        for index, turn in enumerate(turns)
        if turn["role"] == "assistant"
        and isinstance(turn["content"], list)
        and any(block.get("type") == "tool_use" for block in turn["content"])
    ]
    if not tool_turns:
        return None
    index = tool_turns[-1]
    blocks = turns[index]["content"]
    if blocks[0].get("type") not in ("thinking", "redacted_thinking"):
        return FakeResponse(
            400,
            anthropic_error(
                "invalid_request_error",
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{blocks[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must "
                "start with a thinking block (preceeding the lastmost set of `tool_use` and "
                "`tool_result` blocks).",
            ),
        )
    for position, block in enumerate(blocks):
        kind = block.get("type")
        forged = (kind == "thinking" and issued.get(block.get("signature", "")) != block.get("thinking")) or (
            kind == "redacted_thinking" and block.get("data") not in issued
        )
        if forged:
            return FakeResponse(
                400,
                anthropic_error(
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block",
                ),
            )
    return None


def openai_completion(
    *,
    content: str | None = None,
    tool_calls: tuple[tuple[str, str, str], ...] = (),
    finish_reason: str = "stop",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cached_tokens: int | None = None,
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A Chat Completions reply body; ``tool_calls`` are ``(id, name, arguments_text)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in tool_calls
        ]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    }


def openai_error(
    message: str, *, kind: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """A Chat Completions error body."""
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    lines: list[str] = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
        lines.append("")
    return ("\n".join(lines) + "\n").encode()


def anthropic_stream(
    parts: list[str], *, stop_reason: str = "end_turn", input_tokens: int = 0, output_tokens: int = 0
) -> FakeResponse:
    """A streamed Messages API reply: one text block sent as ``parts`` (server-sent events)."""
    start = anthropic_message([], input_tokens=input_tokens, output_tokens=0)
    start["stop_reason"] = None
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    for part in parts:
        events.append(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}},
            )
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return FakeResponse(body=_sse(events), content_type="text/event-stream")


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """The server-sent events of one content block: its start (empty), its deltas, its stop."""
    kind = block["type"]
    empty = {
        "text": {"type": "text", "text": ""},
        "thinking": {"type": "thinking", "thinking": "", "signature": ""},
        "tool_use": {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}},
    }.get(kind, block)  # a redacted_thinking block arrives whole in its start event
    deltas = {
        "text": [{"type": "text_delta", "text": block.get("text")}],
        "thinking": [
            {"type": "thinking_delta", "thinking": block.get("thinking")},
            {"type": "signature_delta", "signature": block.get("signature")},
        ],
        "tool_use": [{"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}],
    }.get(kind, [])
    events: list[tuple[str | None, Any]] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty})
    ]
    for delta in deltas:
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def anthropic_block_stream(blocks: list[dict[str, Any]], *, stop_reason: str = "end_turn") -> FakeResponse:
    """A streamed Messages API reply of any content blocks (text, thinking with its signature,
    redacted thinking, tool use), each sent as the real API streams it."""
    start = anthropic_message([])
    start["stop_reason"] = None
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        events += _block_events(index, block)
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return FakeResponse(body=_sse(events), content_type="text/event-stream")


def openai_stream(
    parts: list[str], *, finish_reason: str = "stop", prompt_tokens: int = 0, completion_tokens: int = 0
) -> FakeResponse:
    """A streamed Chat Completions reply: the text sent as ``parts``, then a usage chunk."""

    def chunk(
        delta: dict[str, Any], finish: str | None, usage: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else [],
            "usage": usage,
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}, None))]
    events += [(None, chunk({"content": part}, None)) for part in parts]
    events.append((None, chunk({}, finish_reason)))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    events.append((None, chunk({}, None, usage)))
    events.append((None, "[DONE]"))
    return FakeResponse(body=_sse(events), content_type="text/event-stream")

"""The provider contract: one ``Provider`` protocol, the request/reply models and the live-call switch.

A provider turns one :class:`LlmRequest` into one :class:`LlmResponse`. The request and reply are the
trace schema's own models (the ``llm_call`` record stores them as they are), so what the loop sent,
what the trace records and what a replay compares are one and the same value.

Errors: every failure of :meth:`Provider.complete` is a :class:`~fpdebug.errors.ProviderError`
carrying the HTTP ``status`` when there was one and the ``provider`` name. A reply whose tool-call
arguments are not a JSON object is a failure too (``malformed_args="raise"``, the default of both live
providers): the run records it as its failure, as issue 4 asks. A live provider built with
``malformed_args="keep"`` instead returns the call with ``args={}`` and the text in ``raw_args`` so the
loop can answer it with an ``invalid`` tool result and let the model try again.

The two live providers share their plumbing through :class:`SdkProvider`: the live-call check before
every request, the mapping of every SDK failure to a ``ProviderError`` that cannot carry the key, and
the reading of a tool call's argument text.

The live-call switch (pydantic-ai's ``ALLOW_MODEL_REQUESTS`` idea): live providers call
:func:`check_live_call` before every request and raise
:class:`~fpdebug.errors.LiveCallRefusedError` when live calls are blocked, either for the whole process
by ``FPDEBUG_BLOCK_LIVE_CALLS=1`` (which nothing in code can lift) or by an enclosing
``with allow_live_calls(False):``. The scripted and replay providers never reach the network at all.
"""

from __future__ import annotations

import json
import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable
from urllib.parse import urlsplit

from fpdebug.errors import DefinitionError, LiveCallRefusedError, ProviderError
from fpdebug.trace.schema import LlmRequest, LlmResponse, ToolCallRecord, ToolSchema

__all__ = [
    "BLOCK_ENV_VAR",
    "LlmRequest",
    "LlmResponse",
    "MalformedArgs",
    "Provider",
    "SdkErrors",
    "SdkProvider",
    "allow_live_calls",
    "check_live_call",
    "check_provider",
    "estimate_tokens",
    "live_calls_allowed",
    "parameters_schema",
    "parse_tool_arguments",
    "redact",
    "server_of",
    "system_text",
]

BLOCK_ENV_VAR = "FPDEBUG_BLOCK_LIVE_CALLS"
"""Set to ``1`` (or ``true``/``yes``/``on``) to refuse every live model call in the process."""

MalformedArgs: TypeAlias = Literal["raise", "keep"]
"""What a live provider does with tool-call arguments that are not a JSON object: raise a
:class:`~fpdebug.errors.ProviderError`, or keep the text in ``raw_args`` with ``args={}``."""


@runtime_checkable
class Provider(Protocol):
    """Anything that answers one model request. Synchronous: the loop runs in a worker thread."""

    name: str
    """The provider's name as recorded in the trace (``scripted``, ``anthropic``, ``openai``…)."""
    model: str
    """The model asked."""

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send one request and return the model's reply.

        Args:
            request: the exact system prompt segments, messages and tool schemas to send.

        Returns:
            The reply: text, tool calls, stop reason and usage.

        Raises:
            ProviderError: for every failure (HTTP status, timeout, connection, malformed reply).
        """
        ...


def check_provider(provider: object) -> Provider:
    """``provider`` when it looks like one (``name`` and ``model`` strings, a ``complete`` method).

    Checked before anything is written, so a wrong object is one clear error, not a traceback from
    deep in the loop and a trace file holding a header only.

    Raises:
        DefinitionError: It is not one; the message says what it lacks.
    """
    missing = [
        what
        for what, ok in (
            ("a `name` string", isinstance(getattr(provider, "name", None), str)),
            ("a `model` string", isinstance(getattr(provider, "model", None), str)),
            ("a `complete(request)` method", callable(getattr(provider, "complete", None))),
        )
        if not ok
    ]
    if missing:
        raise DefinitionError(
            f"the provider must be a Provider (ScriptedProvider, ReplayProvider, AnthropicProvider, "
            f"OpenAIProvider…), not {type(provider).__name__} {provider!r:.60}: it lacks {', '.join(missing)}"
        )
    return provider  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------
# The live-call switch

_switch_lock = threading.Lock()
_override: bool | None = None
"""The innermost ``allow_live_calls`` flag in force, or ``None`` outside any."""


def _env_blocks() -> bool:
    # Read on every call, not at import: a test or a wrapper script may set it at any time.
    return os.environ.get(BLOCK_ENV_VAR, "").strip().lower() in {"1", "true", "yes", "on"}


def live_calls_allowed() -> bool:
    """Whether a live provider may reach its model right now.

    Returns:
        ``False`` when ``FPDEBUG_BLOCK_LIVE_CALLS`` blocks the process or the innermost
        :func:`allow_live_calls` says ``False``; ``True`` otherwise.
    """
    if _env_blocks():
        return False
    return _override if _override is not None else True


@contextmanager
def allow_live_calls(flag: bool) -> Iterator[None]:
    """Allow or block live model calls inside the ``with`` block, then restore the previous state.

    The switch is process-wide (a worker thread running the agent loop sees it too); nested blocks
    restore in order. ``FPDEBUG_BLOCK_LIVE_CALLS=1`` still wins over ``allow_live_calls(True)``.

    Args:
        flag: ``True`` to allow, ``False`` to block.
    """
    global _override
    with _switch_lock:
        previous, _override = _override, flag
    try:
        yield
    finally:
        with _switch_lock:
            _override = previous


def check_live_call(provider: str, model: str) -> None:
    """Refuse a live call when live calls are blocked; live providers call it before every request.

    Args:
        provider: the provider's name, for the message.
        model: the model that would have been asked.

    Raises:
        LiveCallRefusedError: live calls are blocked.
    """
    if live_calls_allowed():
        return
    why = (
        f"{BLOCK_ENV_VAR}=1 is set" if _env_blocks() else "live calls are blocked by allow_live_calls(False)"
    )
    raise LiveCallRefusedError(
        f"refused a live call to model {model!r}: {why}; use the scripted or replay provider, "
        "or allow live calls explicitly",
        provider=provider,
    )


# ----------------------------------------------------------------------------------------------
# Helpers the providers share


def system_text(request: LlmRequest) -> str:
    """The system prompt as sent: the segments' texts joined by a blank line.

    Args:
        request: the request whose segments to join.

    Returns:
        The joined text (empty when there are no segments).
    """
    return "\n\n".join(segment.text for segment in request.system_prompt)


_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def parameters_schema(tool: ToolSchema) -> dict[str, Any]:
    """The JSON schema of a tool's arguments as a live API receives it.

    Args:
        tool: the tool schema.

    Returns:
        Its parameters, or an object schema without properties for a tool that declares none (both
        APIs want an object schema even for a tool that takes no arguments).
    """
    return tool.parameters or _EMPTY_PARAMETERS


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: one token per four characters, rounded up.

    Args:
        text: any text.

    Returns:
        ``ceil(len(text) / 4)``.
    """
    return math.ceil(len(text) / 4)


def redact(text: str, secret: str | None) -> str:
    """Remove a secret from text a provider is about to put in an error.

    A server may echo the key it was sent (a fake or hostile one certainly can); the key must never
    reach an error message, a trace or a terminal.

    Args:
        text: the message to clean.
        secret: the API key, or ``None`` when there is none.

    Returns:
        ``text`` with every occurrence of ``secret`` replaced by ``[redacted]``.
    """
    if not secret:
        return text
    return text.replace(secret, "[redacted]")


_JSON_KINDS = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def parse_tool_arguments(text: str) -> dict[str, Any]:
    """Parse the argument text of a tool call, which must be a JSON object.

    Args:
        text: the arguments as the model sent them. Blank text means no arguments (some
            OpenAI-compatible servers send ``""`` for a call without any).

    Returns:
        The arguments.

    Raises:
        ValueError: the text is not JSON, or not a JSON object; the message says which.
    """
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:  # a model's text is untrusted: nesting too deep to decode is bad text
        raise ValueError("is JSON nested too deeply to decode") from None
    if not isinstance(parsed, dict):
        kind = "null" if parsed is None else _JSON_KINDS.get(type(parsed), type(parsed).__name__)
        raise ValueError(f"is a JSON {kind}, not an object")
    return parsed


# ----------------------------------------------------------------------------------------------
# The SDK-backed providers (anthropic.py, openai.py)

_EXCERPT = 200
"""How much of malformed tool-call arguments an error quotes."""
_MAX_MESSAGE = 1000
"""The longest error message kept; longer ones are cut with a count of what was left out."""


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """An SDK's exception classes (the ``anthropic`` and ``openai`` SDKs share this hierarchy)."""

    status: type[Exception]
    """An HTTP error reply (``APIStatusError``); it carries ``status_code``."""
    timeout: type[Exception]
    """The request timed out (``APITimeoutError``, itself a kind of connection error)."""
    connection: type[Exception]
    """The server could not be reached (``APIConnectionError``)."""
    other: type[Exception]
    """The SDK's root error (``AnthropicError``, ``OpenAIError``)."""


class _SdkClient(Protocol):
    @property
    def base_url(self) -> object: ...

    def close(self) -> None: ...


class SdkProvider(ABC):
    """What the SDK-backed providers share, so that both fail, redact and read tool calls alike.

    A subclass names its SDK's :attr:`sdk_errors`, sets the attributes below and ``_client`` in its
    constructor, and implements :meth:`build_params`, :meth:`_send` (the SDK call), :meth:`_parse`
    (the SDK's reply as an :class:`LlmResponse`) and :meth:`_status_message`.
    """

    sdk_errors: ClassVar[SdkErrors]
    """The SDK's exception classes, which :meth:`complete` maps to ``ProviderError``."""
    name: str
    """The provider name recorded in the trace."""
    model: str
    """The model asked."""
    base_url: str | None
    """The endpoint given to the constructor (``None``: the SDK's default)."""
    timeout: float | None
    """Seconds before a request is abandoned (``None``: the SDK's default)."""
    malformed_args: MalformedArgs
    """What to do with tool-call arguments that are not a JSON object."""
    on_delta: Callable[[str], None] | None = None
    """Streaming: when set, the request is streamed and each piece of reply text is handed to it as it
    arrives (the TUI's drive mode shows the reply so). The returned :class:`LlmResponse`, and so the
    recorded ``llm_call``, is the final reply either way."""
    _secret: str | None
    """The API key, kept only to scrub it from error text (``None`` when no real key was sent)."""
    _client: _SdkClient
    """The SDK client; the only other holder of the key."""

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}(model={self.model!r}{where})"

    def close(self) -> None:
        """Release the SDK client's connections."""
        self._client.close()

    @property
    def server(self) -> tuple[str, int] | None:
        """The host and port the SDK client talks to, as ``run_start`` records them.

        Read from the client's resolved base URL (the SDK's default endpoint when none was given).
        Only the host and the port: the scheme, any credentials in the URL, its path and query are
        left out, so nothing secret can reach the trace or the export through them.

        Returns:
            ``(host, port)``, the port the scheme's default when the URL names none; ``None`` when
            the URL has no host.
        """
        return server_of(str(self._client.base_url))

    def complete(self, request: LlmRequest) -> LlmResponse:
        """Send one request through the SDK and read the reply.

        Args:
            request: the request.

        Returns:
            The reply (see the subclass's ``_parse``).

        Raises:
            LiveCallRefusedError: live calls are blocked.
            ProviderError: an HTTP error (with its status), a timeout, a connection failure, or a
                reply that cannot be read.
        """
        check_live_call(self.name, self.model)
        params = self.build_params(request)
        errors = self.sdk_errors
        # `from None` and the redaction in `_error`: neither the chained SDK exception (which holds
        # the request and its headers) nor an echoing server can carry the key into a log or a trace.
        # The timeout is caught before the connection error it is a kind of.
        try:
            reply = self._send(params)
        except errors.status as exc:
            raise self._error(self._status_message(exc), status=getattr(exc, "status_code", None)) from None
        except errors.timeout:
            after = f"after {self.timeout:g}s" if self.timeout is not None else "(the SDK's default timeout)"
            raise self._error(f"request timed out {after}") from None
        except errors.connection as exc:
            raise self._error(f"could not reach {self._client.base_url}: {_cause(exc)}") from None
        except errors.other as exc:
            raise self._error(f"{type(exc).__name__}: {exc}") from None
        return self._parse(reply)

    @abstractmethod
    def build_params(self, request: LlmRequest) -> dict[str, Any]:
        """The keyword arguments the SDK call receives for a request (pure; no network).

        Args:
            request: the request.

        Returns:
            The SDK call's keyword arguments.
        """

    @abstractmethod
    def _send(self, params: dict[str, Any]) -> Any:
        """Make the SDK call (the only place that reaches the network)."""

    @abstractmethod
    def _parse(self, reply: Any) -> LlmResponse:
        """Read the SDK's reply; raise :meth:`_error` for one that cannot be read."""

    @staticmethod
    @abstractmethod
    def _status_message(exc: Any) -> str:
        """The message of an HTTP error reply (an exception of ``sdk_errors.status``)."""

    def _delta(self, text: str) -> None:
        """Hand one piece of streamed text to :attr:`on_delta`; a failing sink is dropped, never the call."""
        sink = self.on_delta
        if sink is None or not text:
            return
        try:
            sink(text)
        except Exception:
            self.on_delta = None  # a display that broke must not cost the model's reply

    def _error(self, message: str, *, status: int | None = None) -> ProviderError:
        text = redact(message, self._secret)
        if len(text) > _MAX_MESSAGE:
            # An error body can be a whole HTML page from a proxy; the gist is at the start.
            text = text[:_MAX_MESSAGE] + f"… ({len(text) - _MAX_MESSAGE} more characters)"
        return ProviderError(text, status=status, provider=self.name)

    def _tool_call_from_text(self, call_id: str, name: str, text: str) -> ToolCallRecord:
        """A tool call whose arguments came as text; :attr:`malformed_args` decides about bad text."""
        try:
            return ToolCallRecord(id=call_id, name=name, args=parse_tool_arguments(text))
        except ValueError as exc:
            if self.malformed_args == "keep":
                return ToolCallRecord(id=call_id, name=name, args={}, raw_args=text)
            raise self._error(
                f"malformed tool-call arguments: call {call_id!r} to {name!r} {exc}: {text[:_EXCERPT]!r}"
            ) from None


_DEFAULT_PORTS = {"https": 443, "http": 80}


def server_of(url: str) -> tuple[str, int] | None:
    """The host and port of an endpoint URL (the OTel ``server.address`` / ``server.port``).

    Args:
        url: the endpoint, e.g. ``https://user:secret@gateway.example:8443/v1?key=…``.

    Returns:
        ``(host, port)`` (``("gateway.example", 8443)``), the port the scheme's default when the URL
        names none; ``None`` when the URL has no host or an unknown scheme and no port.
    """
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port out of range or not a number: no server worth recording
        return None
    if not host:
        return None
    port = port if port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())
    return (host, port) if port is not None else None


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)

"""Running one tool call of a batch: the handler called, its failure classified, its value read.

:func:`run_tool_call` does not record anything: the loop (:meth:`TurnLoop._run_tool
<fpdebug.engine.agent.loop.TurnLoop._run_tool>`) writes the ``tool_result`` from the
:class:`ToolCallOutcome` it returns, and judges the effects of an envelope (docs/context-model.md §4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from fpdebug.engine.agent.failures import error_info
from fpdebug.engine.effects import Envelope, parse_envelope, text_of
from fpdebug.engine.tools import InvalidToolArguments, ToolFunction, ToolTimeout, call_tool
from fpdebug.engine.types import Tool
from fpdebug.errors import RunInterrupted
from fpdebug.trace.records import well_formed_text, well_formed_value
from fpdebug.trace.schema import ErrorInfo, ToolCallRecord, ToolResultStatus


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """What one call produced: a failure (``error``), or a value with the text the model reads."""

    value: object = None
    """What the handler returned (a pydantic model dumped to JSON data)."""
    envelope: Envelope | None = None
    """The value read as an effects envelope, when it is one."""
    text: str = ""
    """The value (or the envelope's content) as the text the model reads."""
    error: ErrorInfo | None = None
    """Why the call failed (the tool did not run, raised, timed out, or returned an unreadable value)."""
    status: ToolResultStatus | None = None
    """``invalid`` or ``failure`` for a failed call."""


def _failed(status: ToolResultStatus, error: ErrorInfo) -> ToolCallOutcome:
    return ToolCallOutcome(error=error, status=status)


def unreadable_result(tool_name: str, exc: Exception) -> ErrorInfo:
    """A tool's return value that cannot become the text the model reads, as the tool's failure.

    A value that refers to itself, or is nested deeper than JSON encoding allows, would otherwise
    raise out of the loop; it is recorded like a tool that raised.
    """
    return ErrorInfo(
        type="UnreadableToolResult",
        message=f"{tool_name} returned a value that cannot be written as JSON: {type(exc).__name__}: {exc}",
    )


def refusal_before_running(
    call: ToolCallRecord, found: Tool | None, refused: ErrorInfo | None
) -> ToolCallOutcome | None:
    """Why the call cannot run at all (``None`` when it can): a middleware refused it, its
    arguments did not parse, there is no such tool, or the tool has no handler."""
    if refused is not None:
        return _failed("failure", refused)
    if call.raw_args is not None:
        return _failed(
            "invalid",
            ErrorInfo(
                type="InvalidToolArguments",
                message=f"the arguments are not a JSON object: {call.raw_args[:200]!r}",
            ),
        )
    if found is None:
        return _failed(
            "invalid", ErrorInfo(type="ToolError", message=f"there is no tool named {call.name!r}")
        )
    if found.handler is None:
        return _failed(
            "failure",
            ErrorInfo(type="ToolError", message=f"tool {call.name!r} is declared without a handler"),
        )
    return None


def run_tool_call(
    call: ToolCallRecord, found: Tool | None, *, refused: ErrorInfo | None, default_timeout: float | None
) -> ToolCallOutcome:
    """Run ``call`` with the tool ``found`` for it (``refused``: a tool middleware's failure).

    Args:
        call: The call, with the arguments it runs with.
        found: The agent's tool of that name (``None``: unknown or ignored).
        refused: A tool middleware's failure: the tool does not run, the call is a ``failure``.
        default_timeout: The agent's timeout, for a tool that sets none.

    Returns:
        The outcome. A ``RunInterrupted`` raised by the handler propagates.
    """
    refusal = refusal_before_running(call, found, refused)
    if refusal is not None:
        return refusal
    assert found is not None and found.handler is not None  # refusal_before_running checked both
    handler = found.handler
    timeout = handler.timeout if isinstance(handler, ToolFunction) else None
    if timeout is None:
        timeout = default_timeout
    try:
        value = call_tool(handler, call.args, timeout=timeout)
    except RunInterrupted:
        raise
    except InvalidToolArguments as exc:
        return _failed("invalid", ErrorInfo(type="InvalidToolArguments", message=well_formed_text(str(exc))))
    except ToolTimeout as exc:
        return _failed("failure", ErrorInfo(type="TimeoutError", message=f"{call.name} {exc}"))
    except Exception as exc:
        return _failed("failure", error_info(exc))
    return read_tool_value(call.name, value)


def read_tool_value(tool_name: str, value: object) -> ToolCallOutcome:
    """A handler's return value as the model reads it: an envelope's content, or the value itself."""
    if isinstance(value, BaseModel):
        # call_tool repaired the strings it could walk; a model's are repaired once dumped.
        value = well_formed_value(value.model_dump(mode="json"))
    envelope = parse_envelope(value)
    try:
        text = text_of(value if envelope is None else envelope.content)
    except (ValueError, TypeError, RecursionError) as exc:
        return _failed("failure", unreadable_result(tool_name, exc))
    return ToolCallOutcome(value=value, envelope=envelope, text=text)


def coverage_of(declared: Tool | None, args: Mapping[str, object], result: object) -> str | None:
    """What a successful call's result covers, as its tool declares it (``None``: it declares none)."""
    coverage = declared.coverage if declared is not None else None
    if coverage is None or isinstance(coverage, str):
        return coverage
    try:
        text = coverage(dict(args), result)
    except Exception as exc:
        return f"unknown (the coverage declaration raised {type(exc).__name__}: {exc})"
    if text is None:
        return None
    return text if isinstance(text, str) else str(text)

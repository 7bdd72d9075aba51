"""Before-tool middleware: functions that may rewrite a tool call's arguments before it runs.

A middleware is any callable ``(call, context) -> ToolCall | Mapping | None``
(:data:`ToolMiddleware`), installed on an agent with :meth:`Agent.tool_middleware
<fpdebug.engine.agent.Agent.tool_middleware>`. The chain runs in the order the middleware were
added; each one sees the call as the previous one left it:

- it returns ``None``: the call goes on unchanged;
- it returns a mapping: the call runs with those arguments (all of them: a missing key is removed);
- it returns a :class:`~fpdebug.engine.types.ToolCall`: the call runs with its arguments, whose id
  and tool must be the call's own (a middleware rewrites arguments, it never re-routes a call).

The arguments must be a JSON object (the trace records them in ``tool_result.args``). A middleware
that raises, or returns anything else, stops the chain: :func:`apply_tool_middleware` raises
:class:`~fpdebug.errors.ToolMiddlewareError` and the loop records the call as a ``failure`` result
without running the tool. The ``llm_call`` record keeps what the model asked for.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

from fpdebug.engine.types import Tool, ToolCall
from fpdebug.errors import DefinitionError, RunInterrupted, ToolMiddlewareError

__all__ = ["ToolCallContext", "ToolMiddleware", "apply_tool_middleware", "check_tool_middleware"]


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """What a middleware knows about the call besides the call itself (read-only)."""

    run_id: str
    """The run."""
    turn: int
    """The turn (1-based)."""
    iteration: int
    """The iteration whose batch the call belongs to."""
    tool: Tool
    """The tool about to run (its schema, display name, handler…)."""
    requested: Mapping[str, object]
    """The arguments the model asked for, before any middleware (``_from`` already stripped when
    argument sources are armed)."""


ToolMiddleware: TypeAlias = Callable[[ToolCall, ToolCallContext], "ToolCall | Mapping[str, object] | None"]
"""``(call, context) -> ToolCall | Mapping | None``: the call to run, its arguments, or no change."""


def check_tool_middleware(middleware: Sequence[object]) -> tuple[ToolMiddleware, ...]:
    """The middleware as the builder keeps them.

    Args:
        middleware: The functions given to ``Agent.tool_middleware``.

    Returns:
        Them, as a tuple.

    Raises:
        DefinitionError: One is not callable.
    """
    for fn in middleware:
        if not callable(fn):
            raise DefinitionError(f"tool_middleware() takes functions (call, context) -> …, got {fn!r}")
    return tuple(middleware)  # type: ignore[arg-type]


def _name(fn: object) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def _json_object(args: Mapping[Any, object], name: str) -> dict[str, object]:
    """The arguments as the trace will hold them; refused unless they are a JSON object as given."""
    plain = dict(args)
    try:
        # A round trip is a deep copy the middleware cannot touch afterwards, and it catches what
        # JSON would silently change (an int key, a tuple, NaN).
        parsed = json.loads(json.dumps(plain, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ToolMiddlewareError(f"{name} returned arguments that are not JSON data: {exc}") from None
    if not isinstance(parsed, dict) or parsed != plain:
        raise ToolMiddlewareError(
            f"{name} returned arguments that are not JSON data (keys must be strings, sequences lists)"
        )
    return parsed


def apply_tool_middleware(
    chain: Sequence[ToolMiddleware], call: ToolCall, context: ToolCallContext
) -> ToolCall:
    """Run the chain over one call, in order.

    Args:
        chain: The middleware, in the order they were added.
        call: The call as Route would dispatch it.
        context: What the middleware may read.

    Returns:
        The call to run: the same id and tool, the arguments the last middleware left.

    Raises:
        ToolMiddlewareError: A middleware raised (chained from its exception) or returned something
            that is not ``None``, a mapping of JSON arguments, or this call.
        RunInterrupted: A middleware stopped the run (passed through).
    """
    for middleware in chain:
        name = _name(middleware)
        shown = ToolCall(call.id, call.name, MappingProxyType(copy.deepcopy(dict(call.args))))
        try:
            out = middleware(shown, context)
        except RunInterrupted:
            raise
        except Exception as exc:
            raise ToolMiddlewareError(f"{name} raised {type(exc).__name__}: {exc}") from exc
        if out is None:
            continue
        if isinstance(out, ToolCall):
            if (out.id, out.name) != (call.id, call.name):
                raise ToolMiddlewareError(
                    f"{name} returned the call {out.id!r} to {out.name!r} for {call.id!r} to {call.name!r}; "
                    "a middleware rewrites arguments, it cannot change the call's id or tool"
                )
            # Keys are Any: a middleware's mapping may hold non-string keys, which _json_object refuses.
            args: Mapping[Any, object] = out.args
        elif isinstance(out, Mapping):
            args = out
        else:
            raise ToolMiddlewareError(
                f"{name} returned {type(out).__name__}; expected a ToolCall, a mapping of arguments or None"
            )
        call = ToolCall(call.id, call.name, MappingProxyType(_json_object(args, name)))
    return call

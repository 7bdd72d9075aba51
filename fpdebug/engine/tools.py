"""Plain Python callables as tools: a JSON schema from type hints, argument validation, timeouts.

:func:`tool` turns a function into a :class:`~fpdebug.engine.types.Tool` whose ``parameters`` are
derived from the signature and whose ``handler`` is a :class:`ToolFunction`::

    def lookup_order(order_id: str, include_items: bool = False) -> dict:
        \"\"\"Find an order by its id.

        Args:
            order_id: The order's id, such as ``A-17``.
            include_items: Also return the line items.
        \"\"\"

    lookup = tool(lookup_order, timeout=5.0)

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``list[X]``, ``dict[str, X]``,
``Literal[...]``, ``X | None`` / ``Optional[X]``, pydantic models, ``Any``; parameter defaults
become JSON-schema defaults (and make the argument optional). The docstring's first paragraph is the
description, and its Google-style ``Args:`` entries describe the parameters. A function whose only
parameter is a pydantic model takes the model's fields as its arguments (the model is built from
them). Anything else is refused with a :class:`~fpdebug.errors.DefinitionError` naming the parameter.

Arguments the model sends are validated (lax pydantic rules: ``"5"`` is accepted for an ``int``)
before the function runs; a call that does not validate is answered with an ``invalid`` result.

**Honesty declarations** (docs/honesty.md §12; read by the honesty layers, inert otherwise):
``hides_arguments=True`` keeps the model's values off every finding row while the tool is in reach,
``display_name=`` names the tool in the app's words, and ``coverage=`` declares what a result
covers (recorded on the call's ``tool_result``).

**Timeouts.** With a timeout, the function runs on a daemon worker thread (kept for the next call:
:mod:`fpdebug.engine.tool_workers`) and the loop waits at most that long; a call that does not return in time becomes a ``failure`` result. Python cannot kill a
thread: the abandoned call keeps running in the background until it returns on its own, and its
result is dropped. Give tools that can hang their own internal timeouts (HTTP clients, subprocesses).
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias, TypedDict, TypeGuard, Union, get_args, get_origin, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from fpdebug.engine.tool_workers import run_with_timeout
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError
from fpdebug.trace.records import well_formed_value
from fpdebug.trace.schema import ToolPeriod

__all__ = [
    "TOOL_NAME_PATTERN",
    "Coverage",
    "InvalidToolArguments",
    "ToolFunction",
    "ToolTimeout",
    "call_tool",
    "json_schema_of",
    "tool",
]

Coverage: TypeAlias = str | Callable[[Mapping[str, object], object], str | None]
"""A tool's coverage declaration: a fixed text, or a function of the call's arguments and its result."""

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a tool name may look like (the strictest of the providers' rules)."""

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields?|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class InvalidToolArguments(Exception):
    """The model's arguments do not fit the tool's signature (the call is answered ``invalid``)."""


class ToolTimeout(Exception):
    """A tool did not return within its timeout (the call is answered ``failure``)."""


# ----------------------------------------------------------------------------------------------
# Docstrings


def _docstring_parts(fn: Callable[..., object]) -> tuple[str, dict[str, str]]:
    """The description (first paragraph) and the ``Args:`` descriptions of a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    arg_indent = 0
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(stripped)
        if header and len(line) - len(line.lstrip()) == 0:
            in_args = header.group(1) in ("Args", "Arguments", "Parameters", "Params")
            current = None
            continue
        if not in_args or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(stripped)
        if match and (current is None or indent <= arg_indent):
            current, arg_indent = match.group(1).lstrip("*"), indent
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    return " ".join(summary), args


# ----------------------------------------------------------------------------------------------
# JSON schema from annotations


def _is_model(hint: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(hint, type) and issubclass(hint, BaseModel)


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    # A pydantic model's schema keeps its nested models under "$defs"; the tool's parameter schema
    # is one document, so they move to its top level (refs stay "#/$defs/<Name>").
    inner = schema.pop("$defs", None)
    if inner:
        defs.update(inner)
    return schema


_PLAIN_TYPES: tuple[tuple[object, str], ...] = (
    (str, "string"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (list, "array"),
    (tuple, "array"),
    (dict, "object"),
)
"""Bare annotations and the JSON type each stands for."""


def json_schema_of(hint: object, *, where: str, defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of one annotation.

    Args:
        hint: The resolved annotation.
        where: How an error names the annotation's place (``parameter 'x' of tool 'y'``).
        defs: Collects the ``$defs`` of pydantic models (hoisted to the tool's schema).

    Returns:
        The schema.

    Raises:
        DefinitionError: The annotation is not supported.
    """
    defs = {} if defs is None else defs
    if hint is Any or hint is object:
        return {}
    for plain, json_type in _PLAIN_TYPES:
        if hint is plain:
            return {"type": json_type}
    if _is_model(hint):
        return _hoist(hint.model_json_schema(ref_template="#/$defs/{model}"), defs)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return _literal_schema(args)
    if origin is Union or origin is types.UnionType:
        return _union_schema(args, where, defs)
    if origin in (list, set, frozenset, abc.Sequence):
        return _array_schema(args[0] if args else None, where, defs)
    if origin is tuple:
        homogeneous = (len(args) == 2 and args[1] is Ellipsis) or (args and len(set(args)) == 1)
        return _array_schema(args[0] if homogeneous else None, where, defs)
    if origin in (dict, abc.Mapping):
        return _object_schema(args, where, defs)
    raise DefinitionError(
        f"{where}: annotation {hint!r} is not supported; use str, int, float, bool, list[...], "
        "dict[str, ...], Literal[...], X | None or a pydantic model"
    )


def _literal_schema(values: tuple[object, ...]) -> dict[str, Any]:
    """``Literal[...]``: an enum, typed when every value has the same JSON type."""
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {type(v) for v in values}
    if kinds == {str}:
        schema["type"] = "string"
    elif kinds == {int}:
        schema["type"] = "integer"
    elif kinds == {bool}:
        schema["type"] = "boolean"
    return schema


def _union_schema(args: tuple[object, ...], where: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``X | Y | None``: one schema, or ``anyOf`` the options (``null`` last when optional)."""
    options = [a for a in args if a is not type(None)]
    if not options:
        return {"type": "null"}
    parts = [json_schema_of(a, where=where, defs=defs) for a in options]
    if len(options) != len(args):
        parts.append({"type": "null"})
    return parts[0] if len(parts) == 1 else {"anyOf": parts}


def _array_schema(item: object | None, where: str, defs: dict[str, Any]) -> dict[str, Any]:
    """An array, with its items' schema when they share one annotation (``item``)."""
    schema: dict[str, Any] = {"type": "array"}
    if item is not None:
        schema["items"] = json_schema_of(item, where=where, defs=defs)
    return schema


def _object_schema(args: tuple[object, ...], where: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``dict[str, V]``: an object, with its values' schema unless ``V`` is ``Any``."""
    if args and args[0] is not str:
        raise DefinitionError(f"{where}: dict keys must be str (JSON object keys), got {args[0]!r}")
    schema: dict[str, Any] = {"type": "object"}
    if len(args) == 2 and args[1] is not Any:
        schema["additionalProperties"] = json_schema_of(args[1], where=where, defs=defs)
    return schema


# ----------------------------------------------------------------------------------------------
# The handler


_NO_TIMEOUT = object()


@dataclass(frozen=True, eq=False)
class ToolFunction:
    """A function wrapped as a tool handler: it validates the model's arguments, then calls the function.

    Calling the wrapper with keyword arguments calls the function unchanged (so it stays usable in
    plain Python); :meth:`invoke` is what the agent loop uses.
    """

    fn: Callable[..., object]
    """The wrapped function."""
    name: str
    """The tool name."""
    arguments: type[BaseModel]
    """The model the arguments are validated with."""
    model_parameter: str | None = None
    """When the function's only parameter is a pydantic model: that parameter's name."""
    timeout: float | None = None
    """Seconds before the call is abandoned; ``None`` inherits the agent's default; ``math.inf`` never."""

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.fn(*args, **kwargs)

    def invoke(self, args: Mapping[str, object]) -> object:
        """Validate ``args`` and call the function with them.

        Raises:
            InvalidToolArguments: The arguments do not validate.
            Exception: Whatever the function raises.
        """
        try:
            validated = self.arguments.model_validate(dict(args))
        except ValidationError as exc:
            raise InvalidToolArguments(_validation_message(self.name, exc)) from None
        if self.model_parameter is not None:
            return self.fn(validated)
        return self.fn(**{key: getattr(validated, key) for key in type(validated).model_fields})


def _validation_message(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


def _closure_names(fn: Callable[..., object]) -> dict[str, object]:
    # Under `from __future__ import annotations` a hint is a string; a class defined in the enclosing
    # function is only reachable through the closure (when the body uses it), not the module globals.
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    names: dict[str, object] = {}
    for name, cell in zip(code.co_freevars if code is not None else (), cells, strict=False):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return names


def _signature_model(
    fn: Callable[..., object], name: str, arg_docs: Mapping[str, str]
) -> tuple[dict[str, Any], type[BaseModel], str | None]:
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, localns=_closure_names(fn))
    except (TypeError, ValueError, NameError) as exc:
        raise DefinitionError(f"tool {name!r}: cannot read the signature of {fn!r}: {exc}") from exc
    params = list(signature.parameters.values())
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise DefinitionError(
                f"tool {name!r}: *{param.name} / **{param.name} cannot be described to a model; "
                "declare each argument"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise DefinitionError(f"tool {name!r}: positional-only parameter {param.name!r} is not supported")
    if len(params) == 1 and _is_model(hints.get(params[0].name)):
        model: type[BaseModel] = hints[params[0].name]
        defs: dict[str, Any] = {}
        schema = _hoist(model.model_json_schema(ref_template="#/$defs/{model}"), defs)
        schema.pop("title", None)
        if defs:
            schema["$defs"] = defs
        return schema, model, params[0].name
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    defs = {}
    for param in params:
        where = f"parameter {param.name!r} of tool {name!r}"
        if param.name not in hints:
            raise DefinitionError(f"{where} has no type annotation; annotate it (str, int, …)")
        hint = hints[param.name]
        prop = json_schema_of(hint, where=where, defs=defs)
        if arg_docs.get(param.name):
            prop = {**prop, "description": arg_docs[param.name]}
        if param.default is param.empty:
            required.append(param.name)
            fields[param.name] = (hint, ...)
        else:
            default = param.default
            if isinstance(default, str | int | float | bool) or default is None:
                prop = {**prop, "default": default}
            fields[param.name] = (hint, default)
        properties[param.name] = prop
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if defs:
        schema["$defs"] = defs
    try:
        model = create_model(
            f"{name}_arguments", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields
        )
    except Exception as exc:  # pydantic refuses some annotations the schema step accepted
        raise DefinitionError(f"tool {name!r}: cannot validate its arguments: {exc}") from exc
    return schema, model, None


def _check_timeout(timeout: float | None, name: str) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise DefinitionError(f"tool {name!r}: timeout must be a positive number of seconds, got {timeout!r}")


class _HonestyDeclarations(TypedDict, total=False):
    """The honesty declarations :func:`tool` was given (only those given reach the :class:`Tool`)."""

    hides_arguments: bool
    display_name: str
    coverage: Coverage
    period: ToolPeriod


@overload
def tool(
    fn: Callable[..., object],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    hides_arguments: bool = False,
    display_name: str | None = None,
    coverage: Coverage | None = None,
    period: ToolPeriod | None = None,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    hides_arguments: bool = False,
    display_name: str | None = None,
    coverage: Coverage | None = None,
    period: ToolPeriod | None = None,
) -> Callable[[Callable[..., object]], Tool]: ...


def tool(
    fn: Callable[..., object] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    hides_arguments: bool = False,
    display_name: str | None = None,
    coverage: Coverage | None = None,
    period: ToolPeriod | None = None,
) -> Tool | Callable[[Callable[..., object]], Tool]:
    """Make a tool of a Python function (also usable as a decorator, ``@tool`` or ``@tool(timeout=5)``).

    Args:
        fn: The function (or a :class:`~fpdebug.engine.types.Tool`, returned with the honesty
            declarations below applied when any is given).
        name: The tool name; the function's ``__name__`` by default.
        description: What the model reads; the docstring's first paragraph by default.
        timeout: Seconds before a call is abandoned (a ``failure`` result); ``None`` inherits the
            agent's ``tool_timeout``; ``math.inf`` runs the function inline with no timeout.
        hides_arguments: Honesty layers: while this tool is in reach, no finding row shows a value
            the model wrote (where each value came from is still shown).
        display_name: Honesty layers: the tool in the app's words, used by an answer's standing line.
        coverage: What a result covers: a fixed text (``"the last 90 days only"``) or a function
            ``(args, result) -> str | None`` called after each successful call; recorded on the
            call's ``tool_result``.
        period: The time layer: the arguments holding the window a call covers
            (``ToolPeriod(start="from", end="to")``); under ``.time()`` each call files a
            ``call-window`` row.

    Returns:
        A :class:`~fpdebug.engine.types.Tool` whose handler is a :class:`ToolFunction`.

    Raises:
        DefinitionError: A bad name, timeout or honesty declaration, or a parameter whose annotation
            is missing or not supported.
    """
    honesty = _HonestyDeclarations()
    if hides_arguments:
        honesty["hides_arguments"] = hides_arguments
    if display_name is not None:
        honesty["display_name"] = display_name
    if coverage is not None:
        honesty["coverage"] = coverage
    if period is not None:
        if not isinstance(period, ToolPeriod):
            raise DefinitionError(f"tool {name!r}: period takes a ToolPeriod, got {period!r}")
        honesty["period"] = period
    if fn is None:
        return lambda f: tool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            hides_arguments=hides_arguments,
            display_name=display_name,
            coverage=coverage,
            period=period,
        )
    if isinstance(fn, Tool):
        return replace(fn, **honesty) if honesty else fn
    if not callable(fn):
        raise DefinitionError(f"a tool must be a callable or a Tool, got {fn!r}")
    tool_name = name or getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not TOOL_NAME_PATTERN.match(tool_name):
        raise DefinitionError(
            f"tool name {tool_name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
            "(give name= for a lambda or a callable object)"
        )
    _check_timeout(timeout, tool_name)
    summary, arg_docs = _docstring_parts(fn)
    schema, model, model_parameter = _signature_model(fn, tool_name, arg_docs)
    handler = ToolFunction(fn, tool_name, model, model_parameter, timeout)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=schema,
        handler=handler,
        **honesty,
    )


# ----------------------------------------------------------------------------------------------
# Calling


def call_tool(handler: Callable[..., object], args: Mapping[str, object], *, timeout: float | None) -> object:
    """Run one tool call, in a worker thread when there is a timeout.

    Args:
        handler: The tool's handler: a :class:`ToolFunction` (validated) or any callable (called
            with the arguments as keywords).
        args: The model's arguments.
        timeout: Seconds to wait; ``None`` or ``math.inf`` runs the handler inline.

    Returns:
        What the handler returned, with every lone UTF-16 surrogate in its strings replaced by
        U+FFFD (:func:`~fpdebug.trace.records.well_formed_value`): a string cut in the middle of
        an emoji or an ``os.listdir`` name that is not UTF-8 is read by the model exactly as the
        trace records it.

    Raises:
        InvalidToolArguments: The arguments do not fit.
        ToolTimeout: The call did not return in time (its thread is abandoned, not killed).
        Exception: Whatever the handler raised.
    """
    if isinstance(handler, ToolFunction):

        def call() -> object:
            return handler.invoke(args)

    else:

        def call() -> object:
            try:
                inspect.signature(handler).bind(**args)
            except TypeError as exc:
                raise InvalidToolArguments(f"invalid arguments: {exc}") from None
            except ValueError:
                pass  # no signature to check (a builtin): let the call itself decide
            return handler(**args)

    if timeout is None or math.isinf(timeout):
        return well_formed_value(call())
    label = getattr(handler, "name", None) or getattr(handler, "__name__", "call")
    finished, value = run_with_timeout(call, timeout=timeout, name=str(label))
    if not finished:
        raise ToolTimeout(
            f"did not return within {timeout:g} s; the call was abandoned (Python cannot kill a "
            "thread, so it may still be running)"
        )
    return well_formed_value(value)

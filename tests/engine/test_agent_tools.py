"""Plain callables as tools: the JSON schema from type hints and docstrings, validation, timeouts."""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from fpdebug.engine import tool_workers
from fpdebug.engine.tools import InvalidToolArguments, ToolFunction, ToolTimeout, call_tool, tool
from fpdebug.engine.types import Tool
from fpdebug.errors import DefinitionError


class Address(BaseModel):
    city: str
    zip: str | None = None


class Refund(BaseModel):
    """A refund request."""

    order_id: str
    amount: float
    address: Address | None = None


def lookup_order(
    order_id: str,
    include_items: bool = False,
    limit: int = 10,
    ratio: float = 0.5,
    tags: list[str] | None = None,
    meta: dict[str, int] | None = None,
    mode: Literal["fast", "full"] = "fast",
    note: Optional[str] = None,  # noqa: UP045 - Optional must work too
    anything: Any = None,
) -> dict[str, object]:
    """Find an order by its id.

    Looks in the live database first.

    Args:
        order_id: The order id,
            such as A-17.
        include_items (bool): Also return the line items.
        limit: At most this many rows.

    Returns:
        The order.
    """
    return {"order_id": order_id, "include_items": include_items, "limit": limit, "mode": mode}


def test_the_schema_comes_from_the_type_hints_and_the_docstring() -> None:
    made = tool(lookup_order)
    assert isinstance(made, Tool) and made.name == "lookup_order"
    assert made.description == "Find an order by its id."
    assert made.parameters == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "The order id, such as A-17."},
            "include_items": {
                "type": "boolean",
                "description": "Also return the line items.",
                "default": False,
            },
            "limit": {"type": "integer", "description": "At most this many rows.", "default": 10},
            "ratio": {"type": "number", "default": 0.5},
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "meta": {
                "anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "null"}],
                "default": None,
            },
            "mode": {"enum": ["fast", "full"], "type": "string", "default": "fast"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "anything": {"default": None},
        },
        "required": ["order_id"],
    }


def test_arguments_are_validated_leniently_and_defaults_fill_in() -> None:
    made = tool(lookup_order)
    assert isinstance(made.handler, ToolFunction)
    assert call_tool(made.handler, {"order_id": "A-1", "limit": "3"}, timeout=None) == {
        "order_id": "A-1",
        "include_items": False,
        "limit": 3,
        "mode": "fast",
    }
    with pytest.raises(InvalidToolArguments) as caught:
        call_tool(made.handler, {"limit": "many", "mode": "slow", "extra": 1}, timeout=None)
    message = str(caught.value)
    for part in ("order_id: Field required", "limit:", "mode:", "extra: Extra inputs are not permitted"):
        assert part in message
    # The wrapper still calls the plain function from Python.
    assert made.handler("B-2")["order_id"] == "B-2"  # type: ignore[index]


def test_a_single_pydantic_model_parameter_takes_the_models_fields() -> None:
    def refund(request: Refund) -> str:
        """Issue a refund."""
        return f"{request.order_id}:{request.amount}:{request.address.city if request.address else '-'}"

    made = tool(refund)
    assert made.parameters["required"] == ["order_id", "amount"]
    assert set(made.parameters["properties"]) == {"order_id", "amount", "address"}
    assert "Address" in made.parameters["$defs"]
    assert call_tool(
        made.handler, {"order_id": "A", "amount": "2.5", "address": {"city": "Oslo"}}, timeout=None
    ) == ("A:2.5:Oslo")


def test_a_model_among_other_parameters_keeps_its_definitions_at_the_top() -> None:
    def ship(order_id: str, to: Address) -> str:
        """Ship."""
        return f"{order_id}->{to.city}"

    made = tool(ship)
    assert made.parameters["properties"]["to"]["properties"]["city"] == {"title": "City", "type": "string"}
    assert call_tool(made.handler, {"order_id": "A", "to": {"city": "Rome"}}, timeout=None) == "A->Rome"


def test_a_class_defined_in_the_enclosing_function_resolves() -> None:
    class Local(BaseModel):
        x: int

    def use(value: Local) -> int:
        """Use it."""
        return Local(x=value.x).x

    assert tool(use).parameters["required"] == ["x"]


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda x: x, "name '<lambda>' is not valid"),
        (lambda: None, "name '<lambda>' is not valid"),
    ],
)
def test_lambdas_need_a_name(fn: object, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        tool(fn)  # type: ignore[arg-type]


def test_unannotated_unsupported_and_variadic_parameters_are_refused() -> None:
    def bare(x) -> None:  # type: ignore[no-untyped-def]
        """Bare."""

    def weird(x: complex) -> None:
        """Weird."""

    def star(*items: str) -> None:
        """Star."""

    def keys(x: dict[int, str]) -> None:
        """Keys."""

    with pytest.raises(DefinitionError, match="parameter 'x' of tool 'bare' has no type annotation"):
        tool(bare)
    with pytest.raises(DefinitionError, match="annotation <class 'complex'> is not supported"):
        tool(weird)
    with pytest.raises(DefinitionError, match=r"\*items"):
        tool(star)
    with pytest.raises(DefinitionError, match="dict keys must be str"):
        tool(keys)
    with pytest.raises(DefinitionError, match="timeout must be a positive number"):
        tool(lookup_order, timeout=0)


def test_the_decorator_forms_and_overrides() -> None:
    @tool
    def plain(x: int) -> int:
        """Plain."""
        return x

    @tool(name="renamed", description="Custom.", timeout=2.5)
    def fancy(x: int) -> int:
        return x

    assert isinstance(plain, Tool) and plain.name == "plain"
    assert (fancy.name, fancy.description, fancy.handler.timeout) == ("renamed", "Custom.", 2.5)
    assert tool(plain) is plain


def test_a_plain_handler_is_bound_to_its_signature() -> None:
    def handler(a: int) -> int:
        return a * 2

    assert call_tool(handler, {"a": 2}, timeout=None) == 4
    with pytest.raises(InvalidToolArguments, match="invalid arguments"):
        call_tool(handler, {"b": 2}, timeout=None)


def test_a_timeout_abandons_the_call_and_an_infinite_one_runs_inline() -> None:
    release = threading.Event()

    def slow() -> str:
        release.wait(5)
        return "late"

    started = time.monotonic()
    try:
        with pytest.raises(ToolTimeout, match="did not return within 0.05 s"):
            call_tool(slow, {}, timeout=0.05)
    finally:
        release.set()
    assert time.monotonic() - started < 2
    seen: list[str] = []

    def where() -> str:
        seen.append(threading.current_thread().name)
        return "ok"

    call_tool(where, {}, timeout=math.inf)
    call_tool(where, {}, timeout=1.0)
    assert seen[0] == threading.current_thread().name and seen[1].startswith("fpdebug-tool-")


def test_an_error_in_the_worker_thread_reaches_the_caller() -> None:
    def boom() -> str:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        call_tool(boom, {}, timeout=1.0)


def test_calls_with_a_timeout_reuse_a_worker_and_a_hung_one_does_not_block_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pool of its own: a worker another test left hung may rejoin the shared pool at any moment
    # and take the next call, which is correct but would make "one kept worker" order-dependent.
    monkeypatch.setattr(tool_workers, "_POOL", tool_workers._Pool())
    threads: list[threading.Thread] = []  # objects: a new thread may reuse an ident

    def where() -> str:
        threads.append(threading.current_thread())
        return "ok"

    for _ in range(5):
        assert call_tool(where, {}, timeout=1.0) == "ok"
    assert (
        all(t is threads[0] for t in threads) and threads[0] is not threading.current_thread()
    )  # one kept worker, not five
    release = threading.Event()

    def hangs() -> str:
        threads.append(threading.current_thread())
        release.wait(5)
        return "late"

    try:
        with pytest.raises(ToolTimeout):
            call_tool(hangs, {}, timeout=0.05)
        hung = threads[-1]
        assert call_tool(where, {}, timeout=1.0) == "ok"  # answered by another worker meanwhile
        assert threads[-1] is not hung
    finally:
        release.set()


def test_a_pooled_worker_sees_the_callers_context_variables() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def read() -> str:
        return var.get()

    token = var.set("first")
    assert call_tool(read, {}, timeout=1.0) == "first"
    var.reset(token)
    var.set("second")
    assert call_tool(read, {}, timeout=1.0) == "second"  # the same worker, the new call's context

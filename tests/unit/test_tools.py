"""Tools and agents as plain values: classification, argument schemas and validation, and the
refusals an agent raises when it is built (docs/architecture.md rule 3)."""

from __future__ import annotations

import asyncio
import threading
from datetime import date
from typing import Any

import pydantic
import pytest

from runtime import Agent
from runtime import ScriptedModel
from runtime import Tool
from runtime import ToolContext
from runtime import tool
from runtime.errors import DefinitionError
from runtime.tools import ToolArgumentError
from runtime.tools import ToolTimeout
from store import Reversibility

MODEL = ScriptedModel(["ok"])
CTX = ToolContext(run_id="r", call_id="c", step=1, idempotency_key="k", lineage_id="r")


@tool(description="Refund.", effect="reversible", compensate="unrefund")
def refund(order_id: str, amount_cents: int) -> str:
    return "refunded"


@tool(description="Undo a refund.", effect="irreversible", requires_approval=False)
def unrefund(order_id: str, amount_cents: int, note: str = "") -> str:
    return "undone"


@tool(description="Read.", effect="read")
def peek(key: str) -> str:
    return key


def agent(*tools: Tool) -> Agent:
    return Agent("a", model=MODEL, tools=tools)


# classification refusals


def test_unclassified_tool_is_refused() -> None:
    @tool(description="Does something.")
    def mystery(x: int) -> int:
        return x

    with pytest.raises(DefinitionError, match=r"mystery.*no classification"):
        agent(mystery)


def test_reversible_tool_without_a_compensator_is_refused() -> None:
    @tool(description="Hold.", effect="reversible")
    def hold(seat: str) -> str:
        return seat

    with pytest.raises(DefinitionError, match="must name its compensating tool"):
        agent(hold)


def test_compensator_that_is_not_registered_is_refused() -> None:
    with pytest.raises(DefinitionError, match="'unrefund', which is not registered"):
        agent(refund)


def test_compensator_classified_as_a_read_is_refused() -> None:
    @tool(description="Undo.", effect="read", name="unrefund")
    def read_unrefund(order_id: str, amount_cents: int) -> str:
        return "undone"

    with pytest.raises(DefinitionError, match="'unrefund' of 'refund' is classified as a read"):
        agent(refund, read_unrefund)


def test_compensator_needing_arguments_the_original_lacks_is_refused() -> None:
    @tool(description="Undo.", effect="irreversible", requires_approval=False, name="unrefund")
    def strict_unrefund(order_id: str, amount_cents: int, reason: str) -> str:
        return reason

    with pytest.raises(DefinitionError, match=r"requires \['reason'\]"):
        agent(refund, strict_unrefund)


def test_compensator_with_extra_optional_arguments_is_accepted() -> None:
    built = agent(refund, unrefund)

    assert list(built.tools) == ["refund", "unrefund"]


def test_duplicate_tool_names_are_refused() -> None:
    @tool(description="Another peek.", effect="read", name="peek")
    def peek_again(key: str) -> str:
        return key

    with pytest.raises(DefinitionError, match="two tools are named 'peek'"):
        agent(peek, peek_again)


def test_a_plain_function_is_refused() -> None:
    def bare(x: int) -> int:
        return x

    with pytest.raises(DefinitionError, match="not a @tool"):
        agent(bare)  # type: ignore[arg-type]


def test_irreversible_tools_need_approval_unless_waived() -> None:
    @tool(description="Send.", effect="irreversible")
    def send(to: str) -> str:
        return to

    built = agent(send, refund, unrefund, peek)

    assert send.requires_approval is True
    assert unrefund.requires_approval is False
    assert built.approval_waived == ["unrefund"]


def test_reversible_tools_may_ask_for_approval() -> None:
    @tool(description="Hold.", effect="reversible", compensate="unrefund", requires_approval=True)
    def hold(order_id: str, amount_cents: int) -> str:
        return order_id

    assert hold.requires_approval is True
    assert refund.requires_approval is False
    assert agent(hold, unrefund).approval_waived == ["unrefund"]


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"effect": "dangerous"}, "effect must be"),
        ({"effect": "read", "compensate": "x"}, "only a reversible tool"),
        ({"effect": "irreversible", "compensate": "x"}, "only a reversible tool"),
        ({"effect": "read", "requires_approval": True}, "read tool never needs approval"),
        ({"effect": "read", "timeout": 0}, "timeout must be positive"),
    ],
)
def test_contradictory_declarations_are_refused(options: dict[str, Any], complaint: str) -> None:
    def fn(x: int) -> int:
        return x

    with pytest.raises(DefinitionError, match=complaint):
        Tool(fn, **options)


def test_parameters_need_type_hints() -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(DefinitionError, match="'x' needs a type hint"):
        Tool(fn, effect="read")


def test_a_type_defined_inside_a_function_is_named_with_the_fix() -> None:
    # This module has `from __future__ import annotations`: hints are strings resolved in
    # the module's globals, where a class defined in this function does not exist.
    class Order(pydantic.BaseModel):
        id: str

    with pytest.raises(DefinitionError) as refused:

        @tool(description="Ship.", effect="irreversible")
        def ship(order: Order, rush: bool = False) -> str:
            return order.id

    text = str(refused.value)
    assert "tool 'ship'" in text
    assert "'order' ('Order')" in text
    assert "name 'Order' is not defined" in text
    assert "define 'Order' at module level" in text
    assert isinstance(refused.value.__cause__, NameError)


def test_an_unresolvable_return_type_is_named_too() -> None:
    class Receipt(pydantic.BaseModel):
        id: str

    with pytest.raises(DefinitionError, match=r"tool 'peek2': cannot resolve the return type"):

        @tool(description="Peek.", effect="read", name="peek2")
        def peek(key: str) -> Receipt:
            return Receipt(id=key)


def test_var_arguments_cannot_be_described() -> None:
    def fn(**kwargs: int) -> int:
        return 0

    with pytest.raises(DefinitionError, match=r"\*\*kwargs"):
        Tool(fn, effect="read")


def test_context_parameter_must_be_called_ctx() -> None:
    def fn(x: int, context: ToolContext) -> int:
        return x

    with pytest.raises(DefinitionError, match="must be `ctx`"):
        Tool(fn, effect="read")


def test_read_tools_are_idempotent_and_not_mutating() -> None:
    assert (peek.idempotent, peek.mutating, peek.effect) == (True, False, Reversibility.READ)
    assert (refund.idempotent, refund.mutating) == (False, True)


# schema and validation


def test_spec_describes_the_arguments_but_not_ctx() -> None:
    @tool(description="Charge an invoice.", effect="irreversible")
    def charge(invoice_id: str, amount_cents: int, memo: str = "", *, ctx: ToolContext) -> str:
        return invoice_id

    spec = charge.spec()

    assert (spec.name, spec.description) == ("charge", "Charge an invoice.")
    assert set(spec.parameters["properties"]) == {"invoice_id", "amount_cents", "memo"}
    assert sorted(spec.parameters["required"]) == ["amount_cents", "invoice_id"]
    assert spec.parameters["properties"]["amount_cents"]["type"] == "integer"
    assert charge.takes_ctx is True
    assert charge.parameter_names == {"invoice_id", "amount_cents", "memo"}


def test_description_defaults_to_the_docstring() -> None:
    @tool(effect="read")
    def documented(x: int) -> int:
        """Doubles x."""
        return 2 * x

    assert documented.spec().description == "Doubles x."


def test_validate_returns_canonical_arguments() -> None:
    @tool(description="Book.", effect="read")
    def book(day: date, seats: int = 1) -> str:
        return str(day)

    assert book.validate({"day": "2026-11-29", "seats": "2"}) == {"day": "2026-11-29", "seats": 2}
    assert book.validate({"day": "2026-11-29"}) == {"day": "2026-11-29", "seats": 1}


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({}, "key: Field required"),
        ({"key": 5}, "key: Input should be a valid string"),
        ({"key": "k", "extra": 1}, "extra: Extra inputs are not permitted"),
        (["k"], "arguments must be an object"),
    ],
)
def test_validate_names_what_is_wrong(arguments: Any, complaint: str) -> None:
    with pytest.raises(ToolArgumentError, match=complaint):
        peek.validate(arguments)


# invocation


async def test_invoke_runs_sync_tools_in_a_thread_and_async_ones_on_the_loop() -> None:
    threads: list[str] = []

    @tool(description="Sync.", effect="read")
    def sync_tool(x: int) -> int:
        threads.append(threading.current_thread().name)
        return x + 1

    @tool(description="Async.", effect="read")
    async def async_tool(x: int, *, ctx: ToolContext) -> str:
        threads.append(threading.current_thread().name)
        return f"{x}@{ctx.call_id}"

    assert await sync_tool.invoke({"x": 1}, CTX) == 2
    assert await async_tool.invoke({"x": 1}, CTX) == "1@c"
    assert threads[0] != threading.main_thread().name
    assert threads[1] == threading.main_thread().name


async def test_invoke_enforces_the_timeout() -> None:
    @tool(description="Slow.", effect="read", timeout=0.05)
    async def slow() -> None:
        await asyncio.sleep(10)

    with pytest.raises(ToolTimeout, match=r"slow did not finish within 0\.05s"):
        await slow.invoke({}, CTX)


async def test_invoke_returns_json_ready_results() -> None:
    @tool(description="Dates.", effect="read")
    def dates() -> dict[str, Any]:
        return {"when": date(2026, 11, 29), "tags": {"a"}, "pair": (1, 2)}

    assert await dates.invoke({}, CTX) == {"when": "2026-11-29", "tags": ["a"], "pair": [1, 2]}


def test_a_tool_is_still_callable() -> None:
    assert peek("k") == "k"

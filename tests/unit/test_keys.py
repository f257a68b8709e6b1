"""Idempotency keys (docs/architecture.md rule 2): the tool's name and canonical arguments within a
lineage, or the tool's business identity."""

from __future__ import annotations

from runtime.runs.keys import canonical_json
from runtime.runs.keys import compensation_key
from runtime.runs.keys import idempotency_key


def test_canonical_json_ignores_key_order_and_spacing() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == canonical_json(
        {"a": [1, {"c": 3, "d": 2}], "b": 1}
    )
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_same_call_in_the_same_lineage_has_the_same_key() -> None:
    first = idempotency_key("run_1", "refund", {"order": "4471", "cents": 500})
    again = idempotency_key("run_1", "refund", {"cents": 500, "order": "4471"})

    assert first == again
    assert first.startswith("refund-")


def test_key_changes_with_lineage_tool_or_arguments() -> None:
    base = idempotency_key("run_1", "refund", {"order": "4471"})

    assert idempotency_key("run_2", "refund", {"order": "4471"}) != base
    assert idempotency_key("run_1", "charge", {"order": "4471"}) != base
    assert idempotency_key("run_1", "refund", {"order": "4472"}) != base
    assert idempotency_key("run_1", "refund", {"order": 4471}) != base


def test_business_id_replaces_lineage_and_arguments() -> None:
    one = idempotency_key("run_1", "charge", {"invoice": "INV-1", "memo": "a"}, "INV-1")
    other = idempotency_key("run_9", "charge", {"invoice": "INV-1", "memo": "b"}, "INV-1")

    assert one == other
    assert idempotency_key("run_1", "refund", {}, "INV-1") != one
    assert idempotency_key("run_1", "charge", {}, "INV-2") != one


def test_keys_are_deterministic_across_calls() -> None:
    assert idempotency_key("l", "t", {"x": [1, 2]}) == idempotency_key("l", "t", {"x": [1, 2]})


def test_compensation_keys_are_per_undone_call() -> None:
    key = compensation_key("lin", "run_1", "call_1_1")

    assert key == compensation_key("lin", "run_1", "call_1_1")
    assert key.startswith("undo-")
    assert compensation_key("lin", "run_1", "call_1_2") != key
    assert compensation_key("lin", "run_2", "call_1_1") != key
    assert key != idempotency_key("lin", "compensate", {})

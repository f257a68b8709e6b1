"""The fact store: keyed values with a source; protected keys are never written."""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from store import DEFAULT_PROTECTED_FACTS
from store import Fact
from store import Store
from store import errors

from .builders import Clock
from .builders import json_values

JSON_VALUES = json_values(max_leaves=10)


def fact(key: str, value: Any, source: str, at: datetime) -> Fact:
    return Fact(key=key, value=value, source=source, updated_at=at)


async def test_put_then_get_a_fact(store: Store, clock: Clock) -> None:
    written = fact("customer.tier", {"tier": "gold", "since": 2021}, "crm", clock())

    await store.put_fact(written)

    assert await store.get_fact("customer.tier") == written


async def test_put_overwrites_value_source_and_time(store: Store, clock: Clock) -> None:
    await store.put_fact(fact("order.status", "paid", "shop", clock()))
    newer = fact("order.status", "refunded", "payments", clock() + timedelta(minutes=1))

    await store.put_fact(newer)

    assert await store.list_facts() == [newer]


async def test_list_facts_is_by_key(store: Store, clock: Clock) -> None:
    for key in ("b", "c", "a"):
        await store.put_fact(fact(key, key.upper(), "test", clock()))

    assert [f.key for f in await store.list_facts()] == ["a", "b", "c"]


async def test_forget_source_removes_only_that_sources_facts(store: Store, clock: Clock) -> None:
    for key, source in [("a", "crm"), ("b", "email"), ("c", "crm")]:
        await store.put_fact(fact(key, 1, source, clock()))

    assert await store.forget_source("crm") == 2

    assert [f.key for f in await store.list_facts()] == ["b"]
    assert await store.forget_source("crm") == 0


async def test_load_facts_writes_them_all(store: Store, clock: Clock) -> None:
    facts = [fact(f"k{i}", {"i": i}, "import", clock()) for i in range(5)]

    assert await store.load_facts(facts) == 5

    assert await store.list_facts() == facts


def test_is_admin_and_price_are_protected(store: Store) -> None:
    assert {"is_admin", "price"} <= store.protected_facts
    assert {"is_admin", "price"} <= DEFAULT_PROTECTED_FACTS


@pytest.mark.parametrize("key", ["is_admin", "price"])
async def test_a_protected_key_is_refused_and_nothing_is_written(
    store: Store, clock: Clock, key: str
) -> None:
    with pytest.raises(errors.ProtectedFact, match=key):
        await store.put_fact(fact(key, True, "model", clock()))

    with pytest.raises(errors.NotFound):
        await store.get_fact(key)


async def test_load_facts_with_one_protected_key_writes_none(store: Store, clock: Clock) -> None:
    existing = fact("a", "old", "crm", clock())
    await store.put_fact(existing)
    batch = [
        fact("a", "new", "import", clock()),
        fact("b", 2, "import", clock()),
        fact("price", 0, "import", clock()),
    ]

    with pytest.raises(errors.ProtectedFact, match="price"):
        await store.load_facts(batch)

    assert await store.list_facts() == [existing]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.text(min_size=1).filter(lambda k: k not in DEFAULT_PROTECTED_FACTS),
    value=JSON_VALUES,
    source=st.text(),
)
async def test_fact_values_round_trip_losslessly(
    store: Store, clock: Clock, key: str, value: Any, source: str
) -> None:
    written = fact(key, value, source, clock())

    await store.put_fact(written)

    got = await store.get_fact(key)
    assert got == written
    assert got.model_dump(mode="json") == written.model_dump(mode="json")

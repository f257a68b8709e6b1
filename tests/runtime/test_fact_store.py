"""The fact store: write, get, forget a source, dump and load; protected keys are refused and
nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from runtime_scenarios import OpenDb

from runtime import Agent
from runtime import FactStore
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Fact
from store import RunStatus
from store import Store
from store import errors


async def test_write_then_get(store: Store) -> None:
    facts = FactStore(store)

    written = await facts.write("customer:7:tier", {"tier": "gold", "since": 2021}, source="crm")

    assert await facts.get("customer:7:tier") == {"tier": "gold", "since": 2021}
    assert (written.key, written.source) == ("customer:7:tier", "crm")
    (stored,) = await store.list_facts()
    assert stored.value == {"tier": "gold", "since": 2021}


async def test_write_again_replaces_value_and_source(store: Store) -> None:
    facts = FactStore(store)
    await facts.write("city", "Paris", source="a")

    await facts.write("city", "Lyon", source="b")

    (fact,) = await store.list_facts()
    assert (fact.value, fact.source) == ("Lyon", "b")


async def test_get_missing_raises_or_returns_the_default(store: Store) -> None:
    facts = FactStore(store)

    with pytest.raises(errors.NotFound):
        await facts.get("nothing")
    assert await facts.get("nothing", None) is None
    assert await facts.get("nothing", 0) == 0


async def test_forget_source_removes_only_that_source(store: Store) -> None:
    facts = FactStore(store)
    await facts.write("a", 1, source="run_1")
    await facts.write("b", 2, source="run_1")
    await facts.write("c", 3, source="run_2")

    assert await facts.forget_source("run_1") == 2
    assert await facts.forget_source("run_1") == 0

    assert [f.key for f in await store.list_facts()] == ["c"]


async def test_dump_and_load_round_trip_into_another_database(
    store: Store, open_db: OpenDb, tmp_path: Path
) -> None:
    facts = FactStore(store)
    await facts.write("list", [1, "two", None, {"x": 1.5}], source="s1")
    await facts.write("text", "naïve ☃", source="s2")
    path = tmp_path / "facts.json"

    dumped = await facts.dump(path)
    other = FactStore(await open_db())
    loaded = await other.load(path)

    assert loaded == 2
    assert await other.get("list") == [1, "two", None, {"x": 1.5}]
    assert await other.get("text") == "naïve ☃"
    assert await other.dump() == dumped


async def test_load_from_a_list(store: Store) -> None:
    facts = FactStore(store)

    count = await facts.load([{"key": "k", "value": 1, "source": "import"}])

    assert count == 1
    assert await facts.get("k") == 1


@pytest.mark.parametrize("key", ["is_admin", "price"])
async def test_default_protected_keys_are_refused(store: Store, key: str) -> None:
    facts = FactStore(store)

    with pytest.raises(errors.ProtectedFact, match=key) as refused:
        await facts.write(key, True, source="agent")

    assert refused.value.keys == [key]
    assert await store.list_facts() == []


async def test_configured_protected_keys_are_refused_too(store: Store) -> None:
    rt = Runtime(store, [], worker_id="w", protected_facts=["credit_limit"])

    with pytest.raises(errors.ProtectedFact):
        await rt.facts.write("credit_limit", 10_000, source="agent")
    with pytest.raises(errors.ProtectedFact):
        await rt.facts.write("is_admin", True, source="agent")
    await rt.facts.write("favourite_colour", "blue", source="agent")

    assert [f.key for f in await store.list_facts()] == ["favourite_colour"]


async def test_load_with_a_protected_key_writes_nothing(store: Store) -> None:
    facts = FactStore(store)
    dump = [
        {"key": "fine", "value": 1, "source": "import"},
        {"key": "price", "value": 0, "source": "import"},
    ]

    with pytest.raises(errors.ProtectedFact):
        await facts.load(dump)

    assert await store.list_facts() == []


async def test_load_with_a_malformed_entry_writes_nothing(store: Store) -> None:
    facts = FactStore(store)
    dump = [{"key": "fine", "value": 1, "source": "import"}, {"key": "", "value": 2}]

    with pytest.raises(ValueError, match=r"key|source"):
        await facts.load(dump)

    assert await store.list_facts() == []


async def test_the_store_refuses_protected_keys_on_its_own(store: Store) -> None:
    with pytest.raises(errors.ProtectedFact):
        await store.put_fact(Fact(key="is_admin", value=True, source="sneaky"))
    assert await store.list_facts() == []


async def test_a_tool_writes_facts_but_not_protected_ones(store: Store) -> None:
    @tool(description="Remember.", effect="irreversible", requires_approval=False)
    async def remember(key: str, value: str, *, ctx: ToolContext) -> str:
        assert ctx.facts is not None
        await ctx.facts.write(key, value, source=ctx.run_id)
        return "remembered"

    model = ScriptedModel(
        [
            [
                tool_call("remember", {"key": "tone", "value": "formal"}),
                tool_call("remember", {"key": "is_admin", "value": "yes"}),
            ],
            "done",
        ]
    )
    rt = Runtime(store, [Agent("memo", model=model, tools=[remember])], worker_id="w")
    run_id = await rt.start("memo", "Remember things")

    assert (await rt.get(run_id)).status == RunStatus.DONE
    assert [(f.key, f.source) for f in await store.list_facts()] == [("tone", run_id)]
    effects = {e.args["key"]: e for e in await store.list_effects(run_id)}
    assert effects["is_admin"].error is not None
    assert "ProtectedFact" in effects["is_admin"].error
    assert await rt.facts.forget_source(run_id) == 1

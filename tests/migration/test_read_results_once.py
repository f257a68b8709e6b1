"""Migration `read_results_once` on a database with effects: a completed read whose result a
tool message of its run holds exactly keeps only that checkpoint's seq; any other effect keeps
its copy; every effect reads back with the result it had. New reads are stored the same way,
through the runtime's one write and the store's. Both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.migration_support import dialect_of
from support.migration_support import execute
from support.migration_support import is_sqlite
from support.migration_support import store_before
from support.pg_support import database_url

from runtime import Agent
from runtime import Budget
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Checkpoint
from store import Message
from store import Run
from store import ToolCall
from store import migration
from store import open_store
from store.rows import dumps
from store.rows import messages_json

RESULT = {"order_id": "o-1", "amount_cents": 2500, "items": [{"sku": "a", "n": 2}]}
ROWS: list[tuple[str, str, str, Any, str | None]] = [
    # call, reversibility, status, result, its tool message's content (None: no message)
    ("c1", "read", "completed", RESULT, dumps(RESULT)),  # the same JSON: stored once after
    ("c2", "read", "completed", "plain words", "plain words"),  # sent as text: kept
    ("c3", "read", "completed", {"n": 1}, dumps({"n": 2})),  # another result: kept
    ("c4", "irreversible", "completed", RESULT, dumps(RESULT)),  # mutating: kept
    ("c5", "read", "failed", None, '{"error":"boom"}'),  # no result
    ("c6", "read", "completed", RESULT, None),  # no message of its own: kept
]
BEFORE = {call: result for call, _, _, result, _ in ROWS}


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async for url in database_url(request.param, tmp_path, "signoff_read_once"):
        yield url


def transcript() -> list[Message]:
    calls = tuple(ToolCall(id=call, name="lookup") for call, *_ in ROWS)
    told = [
        Message(role="tool", tool_call_id=call, name="lookup", content=content)
        for call, _, _, _, content in ROWS
        if content is not None
    ]
    return [Message(role="assistant", content="looking", tool_calls=calls), *told]


async def at_version_before(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database one migration short of `read_results_once`, with a run and its effects
    written as a Signoff before it wrote them: each result in its row."""
    async with store_before(url, "read_results_once", monkeypatch) as store:
        opening = Checkpoint.opening("r1", [Message(role="user", content="look")])
        await store.create_run(Run(id="r1", agent="a", task="t", lineage_id="r1"), opening)
    sqlite = is_sqlite(url)
    now = "?" if sqlite else "to_timestamp(?)"
    false = "0" if sqlite else "false"
    for seq, messages in ((1, []), (2, transcript())):  # the messages in the second
        await execute(
            url,
            "INSERT INTO checkpoints (run_id, seq, step, snapshot, status, steps, input_tokens, "
            f"output_tokens, cost, created_at, messages) VALUES ('r1', ?, 1, {false}, "
            f"'running', 1, 0, 0, 0, {now}, {'?' if sqlite else '?::jsonb'})",
            seq,
            1.7e9,
            messages_json(tuple(messages)),
        )
    for call, kind, status, result, _ in ROWS:
        await execute(
            url,
            "INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, "
            "idempotency_key, idempotent, status, started_at, args, result) "
            f"VALUES ('r1', ?, 'r1', 1, 'lookup', ?, ?, {false}, ?, {now}, '{{}}', "
            f"{'?' if sqlite else '?::jsonb'})",
            call,
            kind,
            f"key-{call}",
            status,
            1.7e9,
            None if result is None else dumps(result),
        )


async def test_existing_reads_keep_their_result_once_and_read_back_the_same(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await at_version_before(url, monkeypatch)

    async with open_store(url) as store:
        assert await store.schema_version() == migration.latest_version(dialect_of(url))
        listed = {e.call_id: e.result for e in await store.list_effects("r1")}
        one = {call: (await store.get_effect("r1", call)).result for call in BEFORE}

    assert listed == BEFORE
    assert one == BEFORE
    stored = await execute(
        url, "SELECT call_id, result IS NULL, result_seq FROM effects ORDER BY call_id"
    )
    assert [tuple(row) for row in stored] == [
        ("c1", True, 2),  # the checkpoint with its tool message
        ("c2", False, None),
        ("c3", False, None),
        ("c4", False, None),
        ("c5", True, None),
        ("c6", False, None),
    ]


LOOKED_UP = {"order_id": "o-9", "lines": ["r" * 40] * 3}


@tool(description="Look an order up.", effect="read")
async def lookup(order_id: str) -> dict[str, Any]:
    return LOOKED_UP


@tool(description="Say something.", effect="read")
async def say(words: str) -> str:
    return words


async def test_a_new_read_is_stored_once_and_read_back(url: str) -> None:
    agent = Agent(
        "looker",
        model=ScriptedModel(
            [
                tool_call("lookup", {"order_id": "o-9"}, id="k1"),
                tool_call("say", {"words": "hello"}, id="k2"),
                "Done.",
            ]
        ),
        tools=[lookup, say],
        budget=Budget(max_steps=5),
    )
    async with open_store(url) as store:
        rt = Runtime(store, [agent], worker_id="w")
        await rt.start("looker", "look o-9", run_id="r9")
        run = await rt.get("r9")
        assert run.stop_reason == "answered"
        effects = {e.call_id: e.result for e in await store.list_effects("r9")}
        one = (await store.get_effect("r9", "k1")).result
        state = await store.load_state("r9")
    assert effects == {"k1": LOOKED_UP, "k2": "hello"}
    assert one == LOOKED_UP
    told = {m.tool_call_id: m.content for m in state.messages if m.role == "tool"}
    assert told == {"k1": dumps(LOOKED_UP), "k2": "hello"}
    stored = await execute(
        url, "SELECT call_id, result IS NULL, result_seq IS NULL FROM effects ORDER BY call_id"
    )
    assert [tuple(row) for row in stored] == [
        ("k1", True, False),  # once, in the transcript
        ("k2", False, True),  # plain text to the model: its copy kept
    ]

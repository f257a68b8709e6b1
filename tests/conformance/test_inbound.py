"""Requests from outside noted once: the first delivery of a key within its time is the one
handled, on every backend, however many deliveries race; a note past its time is forgotten
and the key is new again."""

from __future__ import annotations

import asyncio

from store import Store
from tests.conftest import Clock


async def test_a_key_is_new_once_within_its_time(store: Store, clock: Clock) -> None:
    assert await store.note_inbound("slack:event:Ev1", keep_for=3600) is True
    assert await store.note_inbound("slack:event:Ev1", keep_for=3600) is False
    assert await store.note_inbound("slack:event:Ev2", keep_for=3600) is True
    clock.advance(minutes=59)
    assert await store.note_inbound("slack:event:Ev1", keep_for=3600) is False
    clock.advance(minutes=2)
    assert await store.note_inbound("slack:event:Ev1", keep_for=3600) is True  # its note expired
    assert await store.note_inbound("slack:event:Ev1", keep_for=3600) is False


async def test_of_racing_deliveries_exactly_one_is_first(store: Store) -> None:
    firsts = await asyncio.gather(
        *(store.note_inbound("slack:block_actions:T1", keep_for=60) for _ in range(20))
    )
    assert sorted(firsts) == [False] * 19 + [True]


async def test_notes_past_their_time_are_forgotten(store: Store, clock: Clock) -> None:
    for n in range(5):
        await store.note_inbound(f"old-{n}", keep_for=60)
    await store.note_inbound("young", keep_for=3600)
    clock.advance(minutes=2)
    assert await store.forget_inbound(limit=3) == 3
    assert await store.forget_inbound() == 2
    assert await store.forget_inbound() == 0
    assert await store.note_inbound("young", keep_for=3600) is False  # still within its hour
    assert await store.note_inbound("old-0", keep_for=60) is True

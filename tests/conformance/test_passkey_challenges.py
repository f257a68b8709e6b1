"""Passkey challenges kept in the database (issue 43.3): taken once, by one statement, on
every backend, however many answers race; an expired one is never taken (and keeping new
ones drops it)."""

from __future__ import annotations

import asyncio

from store import Store
from tests.conftest import Clock


async def test_a_challenge_is_taken_once_with_its_person_and_purpose(store: Store) -> None:
    await store.keep_challenge("c1", person="U0BOB", purpose="approve ap_1", ttl=300)
    await store.keep_challenge("c2", person="U0ANN", purpose="register", ttl=300)
    assert await store.take_challenge("c1") == ("U0BOB", "approve ap_1")
    assert await store.take_challenge("c1") is None
    assert await store.take_challenge("never-issued") is None
    assert await store.take_challenge("c2") == ("U0ANN", "register")


async def test_of_racing_answers_exactly_one_takes_the_challenge(store: Store) -> None:
    await store.keep_challenge("raced", person="U0BOB", purpose="register", ttl=300)
    taken = await asyncio.gather(*(store.take_challenge("raced") for _ in range(20)))
    assert sorted(taken, key=str) == [("U0BOB", "register")] + [None] * 19


async def test_an_expired_challenge_is_not_taken(store: Store, clock: Clock) -> None:
    await store.keep_challenge("old", person="U0BOB", purpose="register", ttl=60)
    await store.keep_challenge("young", person="U0BOB", purpose="register", ttl=600)
    clock.advance(minutes=2)
    assert await store.take_challenge("old") is None
    await store.keep_challenge("new", person="U0BOB", purpose="register", ttl=60)
    assert await store.take_challenge("young") == ("U0BOB", "register")
    assert await store.take_challenge("new") == ("U0BOB", "register")

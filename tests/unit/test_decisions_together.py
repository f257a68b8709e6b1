"""`store.postgres.together`: decisions that arrive while one is written go together."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from store.postgres.together import Together


@dataclass(eq=False)
class Writes:
    """A fake of the store's write: each call's approval ids; a decision with `fail` in its
    arguments fails the write it is in; `lost` ids decide nothing."""

    lost: tuple[str, ...] = ()
    calls: list[list[str]] = field(init=False, default_factory=list)
    gate: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    """Set to let the writes through."""

    async def send(self, batch: Sequence[Sequence[Any]]) -> list[dict[str, str]]:
        self.calls.append([args[0] for args in batch])
        await self.gate.wait()
        if any("fail" in args for args in batch):
            raise RuntimeError("refused")
        return [None if args[0] in self.lost else {"id": args[0]} for args in batch]


async def writing_a(writes: Writes) -> tuple[Together, asyncio.Future[Any]]:
    """Decisions written together through `writes`, decision "a" being written now."""
    together = Together(writes.send)
    first = asyncio.ensure_future(together.write("a", ["a"]))
    await asyncio.sleep(0)
    return together, first


async def during_the_write_of_a(writes: Writes, *later: str) -> list[dict[str, Any] | None]:
    """Decision "a" is being written when the `later` ones arrive; then the writes go through.
    What each write returned, "a" first."""
    together, first = await writing_a(writes)
    rest = [asyncio.ensure_future(together.write(i, [i])) for i in later]
    await asyncio.sleep(0)
    writes.gate.set()
    return list(await asyncio.gather(first, *rest))


async def test_the_decisions_that_arrive_during_a_write_go_together_in_the_next() -> None:
    writes = Writes(lost=("c",))
    found = await during_the_write_of_a(writes, "b", "c", "d")

    assert writes.calls == [["a"], ["b", "c", "d"]]
    assert found == [{"id": "a"}, {"id": "b"}, None, {"id": "d"}]


async def test_an_approval_is_in_a_write_once_and_its_second_decision_waits_for_the_next() -> None:
    writes = Writes()
    await during_the_write_of_a(writes, "b", "b", "c")

    assert writes.calls == [["a"], ["b", "c"], ["b"]]


async def test_a_write_of_several_that_fails_is_tried_one_by_one() -> None:
    writes = Writes()
    together, first = await writing_a(writes)
    good = asyncio.ensure_future(together.write("b", ["b"]))
    bad = asyncio.ensure_future(together.write("c", ["c", "fail"]))
    await asyncio.sleep(0)
    writes.gate.set()

    assert await good == {"id": "b"}
    with pytest.raises(RuntimeError, match="refused"):
        await bad
    await first
    assert writes.calls == [["a"], ["b", "c"], ["b"], ["c"]]


async def test_a_write_cancelled_leaves_nobody_waiting() -> None:
    writes = Writes()
    together, first = await writing_a(writes)
    second = asyncio.ensure_future(together.write("b", ["b"]))
    await asyncio.sleep(0)
    assert together._writer is not None
    together._writer.cancel()

    done = await asyncio.gather(first, second, return_exceptions=True)

    assert all(isinstance(d, asyncio.CancelledError) for d in done)

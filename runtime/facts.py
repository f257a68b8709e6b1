"""The fact store: what agents learned, by source, with protected keys nobody may write."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from store import Fact
from store import Store
from store import errors
from store.base import refuse_protected
from store.records import FACTS
from store.records import utcnow

_MISSING = object()


class FactStore:
    def __init__(
        self,
        store: Store,
        *,
        protected: Iterable[str] = (),
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self.protected = frozenset(protected) | store.protected_facts
        self._clock = clock

    async def write(self, key: str, value: Any, *, source: str) -> Fact:
        self._refuse([key])
        fact = Fact(key=key, value=value, source=source, updated_at=self._clock())
        await self._store.put_fact(fact)
        return fact

    async def get(self, key: str, default: Any = _MISSING) -> Any:
        try:
            return (await self._store.get_fact(key)).value
        except errors.NotFound:
            if default is _MISSING:
                raise
            return default

    async def forget_source(self, source: str) -> int:
        return await self._store.forget_source(source)

    async def dump(self, path: str | Path | None = None) -> list[dict[str, Any]]:
        facts = [fact.model_dump(mode="json") for fact in await self._store.list_facts()]
        if path is not None:
            text = json.dumps(facts, indent=2, ensure_ascii=False)
            await asyncio.to_thread(Path(path).write_text, text, "utf-8")
        return facts

    async def load(self, facts: str | Path | list[dict[str, Any]]) -> int:
        """Load facts from a dump (a path or the list); all of them or, on any error, none."""
        if not isinstance(facts, list):
            facts = json.loads(await asyncio.to_thread(Path(facts).read_text, "utf-8"))
        parsed = FACTS.validate_python(facts)
        self._refuse([fact.key for fact in parsed])
        return await self._store.load_facts(parsed)

    def _refuse(self, keys: list[str]) -> None:
        refuse_protected(keys, self.protected)

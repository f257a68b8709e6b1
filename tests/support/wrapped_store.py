"""A store seen through a test's wrapper: the wrapper overrides a call or two (to count it,
slow it down or make it fail) and passes every other one to the real store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from store import Store


@dataclass(eq=False)
class WrappedStore:
    """The base of such wrappers; a subclass is a dataclass too, its fields after `store`."""

    store: Store
    """The real store, which answers every call the wrapper does not override."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

"""Store records built for unit tests that need one but care only about a few of its fields."""

from __future__ import annotations

from typing import Any

from store import Effect


def an_effect(**fields: Any) -> Effect:
    """An effect of run "r" (its own lineage) at step 1, keyed "k", with `fields` set."""
    defaults: dict[str, Any] = {
        "run_id": "r",
        "call_id": "c",
        "lineage_id": "r",
        "step": 1,
        "idempotency_key": "k",
    }
    return Effect(**(defaults | fields))

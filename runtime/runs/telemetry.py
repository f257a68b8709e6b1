"""What the runtime tells an operator's instruments: step, effect and recovery observations,
and the ids (run, step, approval) that every log line written meanwhile carries.

The runtime knows no metrics library: `Telemetry` is a small protocol, `NullTelemetry`
the default; `bot.metrics` implements it with Prometheus. The log context is a context
variable, so concurrent runs on one event loop each log their own ids.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any
from typing import Protocol

from store import Usage

LOG_CONTEXT: ContextVar[dict[str, Any] | None] = ContextVar("signoff_log_context", default=None)
"""The ids of what is being worked on (`run_id`, `step`, `approval_id`), for log lines."""


@contextlib.contextmanager
def log_context(**ids: Any) -> Iterator[None]:
    """Add `ids` to every log line written inside the block (nested blocks add to it)."""
    token = LOG_CONTEXT.set({**(LOG_CONTEXT.get() or {}), **ids})
    try:
        yield
    finally:
        LOG_CONTEXT.reset(token)


def set_log_step(step: int) -> None:
    """The step the current run moved to (inside a `log_context` block)."""
    LOG_CONTEXT.set({**(LOG_CONTEXT.get() or {}), "step": step})


class Telemetry(Protocol):
    def model_step(self, agent: str, seconds: float, usage: Usage) -> None:
        """A model reply: how long it took and what it used."""

    def effect_ended(self, tool: str, classification: str, outcome: str, seconds: float) -> None:
        """A mutating tool finished: `completed`, `failed` or `in_doubt`."""

    def leases_taken_over(self, count: int) -> None:
        """Runs whose worker was gone (its lease expired) taken over by this process."""

    def loop_blocked(self, tool: str, seconds: float) -> None:
        """Something (a tool, by name) blocked the event loop past a third of a lease."""

    def shadow_decision(self, kind: str, name: str, would: str) -> None:
        """A rule, limit or envelope in shadow mode would have decided a call (`would`:
        approve, ask or deny); it decided nothing."""


class NullTelemetry:
    def model_step(self, agent: str, seconds: float, usage: Usage) -> None:
        return None

    def effect_ended(self, tool: str, classification: str, outcome: str, seconds: float) -> None:
        return None

    def leases_taken_over(self, count: int) -> None:
        return None

    def loop_blocked(self, tool: str, seconds: float) -> None:
        return None

    def shadow_decision(self, kind: str, name: str, would: str) -> None:
        return None

"""Driving runs: creating them, the checkpointed loop under a lease, the journal it writes,
how runs end, and recovery after a crash.

`__all__` names what the other packages may import, each loaded on first use
(`runtime.exports.lazy`); a module path is private to the package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.exports import lazy

if TYPE_CHECKING:
    from runtime.runs.aside import RETRY_AFTER
    from runtime.runs.aside import Aside
    from runtime.runs.budget import BUDGET_REASONS
    from runtime.runs.budget import StopReason
    from runtime.runs.keys import canonical_json
    from runtime.runs.keys import compensation_key
    from runtime.runs.keys import separate_key
    from runtime.runs.queue import RunQueue
    from runtime.runs.skew import ClockSkew
    from runtime.runs.telemetry import Telemetry
    from runtime.runs.wakeups import Wakeups

__all__ = [
    "BUDGET_REASONS",
    "RETRY_AFTER",
    "Aside",
    "ClockSkew",
    "RunQueue",
    "StopReason",
    "Telemetry",
    "Wakeups",
    "canonical_json",
    "compensation_key",
    "separate_key",
]

_HOME = {
    "Aside": "runtime.runs.aside",
    "BUDGET_REASONS": "runtime.runs.budget",
    "canonical_json": "runtime.runs.keys",
    "ClockSkew": "runtime.runs.skew",
    "compensation_key": "runtime.runs.keys",
    "RETRY_AFTER": "runtime.runs.aside",
    "RunQueue": "runtime.runs.queue",
    "separate_key": "runtime.runs.keys",
    "StopReason": "runtime.runs.budget",
    "Telemetry": "runtime.runs.telemetry",
    "Wakeups": "runtime.runs.wakeups",
}

__getattr__, __dir__ = lazy(__name__, _HOME)

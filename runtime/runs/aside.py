"""Stepping aside for a newer schema (docs/operations.md, "Upgrades").

A worker learns that the database moved past the schema it knows from its own claims (a
claim of runs or outbox rows takes nothing then, and says so: `SchemaTooNew`), from a
migration's notification, or from a look at the version on each poll. From then on it
claims nothing, its surfaces refuse new writes, its drivers stop before their next step
(one waiting on the model now is cancelled: nothing of that step was written) and give
their runs back to the queue, and it says once, in one line, what to do. It never goes
back: a worker older than its database is replaced, not resumed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version

log = logging.getLogger("signoff.upgrade")

RETRY_AFTER = 30
"""Seconds a refused request is told to wait (by then, a worker that knows the schema)."""


def release() -> str:
    """This Signoff's version, as its package says."""
    try:
        return version("signoff")
    except PackageNotFoundError:  # pragma: no cover - run from a tree that was never installed
        return "(unknown version)"


class SteppingAside(Exception):
    """The worker stepped aside: its driver stops before the next step, writing nothing."""


@dataclass(eq=False)
class Aside:
    """Whether this worker stepped aside, and for which schema."""

    release: str = field(default_factory=release)
    found: int | None = None
    """The database's schema version when it stepped aside; None while it serves."""
    supported: int | None = None
    """The schema version this worker's Signoff knows."""
    asking: dict[str, asyncio.Task[object]] = field(default_factory=dict)
    """Drivers waiting on the model now, by run: nothing of their step is written yet, so
    they are cancelled when the worker steps aside."""
    _listeners: list[Callable[[], object]] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.found is not None

    @property
    def reason(self) -> str:
        return (
            f"this worker runs Signoff {self.release} for schema {self.supported}; the "
            f"database is at {self.found}: replace this worker"
        )

    def on_step_aside(self, listener: Callable[[], object]) -> None:
        """Call `listener` when the worker steps aside (at once if it has)."""
        self._listeners.append(listener)
        if self.active:
            listener()

    def seen(self, found: int, supported: int) -> None:
        """The database is at schema `found`; this worker knows `supported`. Step aside if
        that is newer (once: the line is said and the listeners told the first time)."""
        if self.active or found <= supported:
            return
        self.found, self.supported = found, supported
        log.error("%s", self.reason)
        for task in list(self.asking.values()):
            task.cancel()
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                log.exception("a part of this worker did not step aside cleanly")

    def check(self) -> None:
        """`SteppingAside` once the worker stepped aside: a driver's look before a step."""
        if self.active:
            raise SteppingAside(self.reason)

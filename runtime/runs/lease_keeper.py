"""Keeping this process's leases while its event loop is blocked (docs/architecture.md rule 7).

Leases are renewed on the runtime's scheduler, on the event loop. An `async def` tool that
blocks the loop (a `time.sleep`, a synchronous HTTP call) stops those renewals, and another
worker would take the run over while its tool still runs here. So a thread of its own
watches the loop while any lease is held: every tick it posts a beat to the loop, and while
a beat waits more than a tick the loop is not running; a lease whose renewal is then
overdue is renewed from the thread, through a store of its own on the same database
(`Store.sibling`, opened the first time it is needed, on the thread's own event loop).
Meanwhile it looks at what the loop's thread is running: the tool whose code is on its
stack is what blocks it. When the loop runs again, one warning names that tool and how long
the loop was blocked, and the telemetry counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from datetime import timedelta
from types import CodeType
from types import FrameType

from runtime.runs.lease import Lease
from runtime.runs.telemetry import Telemetry
from runtime.tools import Tool
from store import Store

log = logging.getLogger("signoff.lease")
MAX_TICK = 1.0
IDLE_EXIT = 10.0
"""Seconds without a lease held after which the thread ends (the next lease starts one)."""
NOT_A_TOOL = "code that is not a tool"


class LeaseKeeper:
    def __init__(
        self,
        store: Store,
        owner: str,
        held: dict[str, Lease],
        *,
        ttl: float,
        clock: Callable[[], datetime],
        telemetry: Telemetry,
    ) -> None:
        self.store = store
        self.owner = owner
        self.held = held
        """The leases this process holds (the runtime's own map, read from the thread)."""
        self.ttl = ttl
        self.tick = min(ttl / 6, MAX_TICK)
        self.clock = clock
        self.telemetry = telemetry
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._posted: float | None = None
        """When the beat now waiting for the loop was posted (None: none waits)."""
        self._culprit: str | None = None
        self._tools: dict[CodeType, str] = {}
        self._side = _Side(store)
        self._unkept = False
        """The store cannot be opened again (in memory): leases are not kept from here."""

    def watch(self) -> None:
        """A lease was taken (on the loop): the thread runs while any is held."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._posted = loop, None
        self._loop_thread = threading.get_ident()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="signoff-lease-keeper", daemon=True
                )
                self._thread.start()

    def running(self, tool: Tool) -> CodeType | None:
        """`tool` runs on the loop now: what a blocked loop is blamed on when its code is on
        the loop thread's stack. Returns what to give `ran` once it is done (None: a tool
        that runs in a thread, nothing to note). A pair of calls, not a context manager: it
        is on every step's path, and a generator-based one costs more than the note."""
        code = getattr(tool.fn, "__code__", None)
        if not isinstance(code, CodeType) or not (tool.is_async or tool.on_loop):
            return None
        self._tools[code] = tool.name
        return code

    def ran(self, code: CodeType | None) -> None:
        if code is not None:
            self._tools.pop(code, None)

    # the thread

    def _run(self) -> None:
        idle = 0.0
        try:
            while True:
                time.sleep(self.tick)
                with self._lock:
                    idle = 0.0 if self.held else idle + self.tick
                    if idle >= IDLE_EXIT:
                        self._thread = None
                        return
                if self.held:
                    self._look()
        finally:
            self._side.close()

    def _look(self) -> None:
        """Post a beat if none waits; if one has waited past a tick, the loop is blocked:
        note what blocks it and renew what is overdue."""
        posted = self._posted
        if posted is None:
            self._post()
            return
        if time.monotonic() - posted <= self.tick:
            return
        self._culprit = self._blocking() or self._culprit
        try:
            leases = list(self.held.values())
        except RuntimeError:  # the loop changed the map meanwhile: it runs, so it renews
            return
        for lease in leases:
            if not lease.lost and time.monotonic() - lease.renewed_at > self.ttl / 3:
                self._renew(lease)

    def _post(self) -> None:
        loop, posted = self._loop, time.monotonic()
        if loop is None or loop.is_closed():
            return
        self._posted = posted
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._beaten, posted)

    def _blocking(self) -> str | None:
        """The tool whose code the loop's thread is running, else where it is."""
        frame: FrameType | None = sys._current_frames().get(self._loop_thread)
        top = frame
        while frame is not None:
            name = self._tools.get(frame.f_code)
            if name is not None:
                return name
            frame = frame.f_back
        if top is None:
            return None
        where = f"{top.f_code.co_name} at {top.f_code.co_filename}:{top.f_lineno}"
        return f"{NOT_A_TOOL} ({where})"

    def _renew(self, lease: Lease) -> None:
        if self._unkept:
            return
        now = self.clock()
        until = now + timedelta(seconds=self.ttl)
        try:
            renewed = self._side.renew(lease, self.owner, until=until, now=now, within=self.tick)
        except NoSibling:
            self._unkept = True
            log.warning(
                "the event loop is blocked and this database cannot be opened again "
                "(in memory): leases are not renewed until it runs"
            )
            return
        except Exception:
            log.exception("could not renew the lease on run %s from its thread", lease.run_id)
            return
        if renewed:
            lease.renewed_at = time.monotonic()
        else:
            lease.lost = True
            log.warning("lost the lease on run %s (epoch %d)", lease.run_id, lease.epoch)

    # back on the loop

    def _beaten(self, posted: float) -> None:
        blocked = time.monotonic() - posted
        culprit, self._culprit, self._posted = self._culprit, None, None
        if blocked <= self.ttl / 3:
            return
        what = culprit or NOT_A_TOOL
        tool = what if not what.startswith(NOT_A_TOOL) else NOT_A_TOOL
        log.warning(
            "%s blocked the event loop for %.1fs (leases last %gs; they were renewed from "
            "a thread meanwhile): an async def tool must await its I/O, or be a plain def, "
            "which runs in a thread",
            f"tool {what}" if tool == what else what,
            blocked,
            self.ttl,
            extra={"event": "loop_blocked"},
        )
        self.telemetry.loop_blocked(tool, blocked)


class NoSibling(Exception):
    """The database cannot be opened again (in memory)."""


class _Side:
    """The thread's own event loop and store, opened the first time a lease needs them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sibling: Store | None = None

    def renew(
        self, lease: Lease, owner: str, *, until: datetime, now: datetime, within: float
    ) -> bool:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        if self.sibling is None:
            self.sibling = self.loop.run_until_complete(self.store.sibling())
            if self.sibling is None:
                raise NoSibling
        renewal = self.sibling.renew_lease(
            lease.run_id, owner, until=until, now=now, epoch=lease.epoch
        )
        return self.loop.run_until_complete(asyncio.wait_for(renewal, max(within, 5.0)))

    def close(self) -> None:
        if self.loop is None:
            return
        if self.sibling is not None:
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(self.sibling.close())
        self.loop.close()
        self.loop, self.sibling = None, None

"""How `signoff serve` stops: on SIGTERM or SIGINT, within `STOP_WITHIN` seconds, whatever
Slack, a client or a tool is doing.

Each step of the way out (stop driving, the scheduler, Slack, the HTTP server, the
database) gets what is left of one budget; a step that overruns it is abandoned with one
line. Nothing is lost by abandoning it: every change is durable when it is made, and runs
resume from their checkpoints. If the process still has not exited `HARD_STOP` seconds
after the signal (a thread that never returns), it exits anyway, saying so; a second signal
exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence

log = logging.getLogger("signoff.server")

STOP_WITHIN = 4.0
"""Seconds the steps of the way out may take together."""
HARD_STOP = 5.0
"""Seconds after the signal at which the process exits whatever is still running."""
Step = tuple[str, Callable[[], Awaitable[object]]]


def stop_on_signals() -> asyncio.Event:
    """An event set by the first SIGTERM or SIGINT; the second exits at once, and the
    process exits `HARD_STOP` seconds after the first in any case."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def signalled(signum: int) -> None:
        if stop.is_set():
            _exit_now(f"{signal.Signals(signum).name} again: exiting at once")
        stop.set()
        _deadline(HARD_STOP)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, signalled, sig)
    return stop


async def run_steps(steps: Sequence[Step], within: float = STOP_WITHIN) -> None:
    """Each step in order, all within `within` seconds; one that overruns what is left, or
    fails, is left behind with one line and the next one runs."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    for name, step in steps:
        left = max(deadline - loop.time(), 0.1)  # the database is always given a moment
        try:
            await asyncio.wait_for(step(), left)
        except TimeoutError:
            log.warning("stopping: %s did not finish within %.1f s; left behind", name, left)
        except Exception as exc:
            log.warning("stopping: %s failed (%r); going on", name, exc)


def _deadline(seconds: float) -> None:
    """Exit in `seconds` if the process has not by then (a daemon thread: the event loop
    may be what is stuck)."""
    timer = threading.Timer(seconds, _exit_now, [f"not stopped within {seconds:g} s"])
    timer.daemon = True
    timer.start()


def _exit_now(why: str) -> None:
    os.write(
        sys.stderr.fileno(),
        f"signoff: {why}; exiting (runs resume from their checkpoints)\n".encode(),
    )
    os._exit(1)

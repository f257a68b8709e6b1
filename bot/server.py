"""`signoff serve`: the long-running process.

It recovers runs left mid-flight, re-arms reminders and timeouts from the store, re-sends
undelivered callbacks, and serves the HTTP API until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import suppress

from aiohttp import web

from bot.api import add_routes, bearer_auth
from bot.callbacks import CallbackNotifier
from bot.settings import Settings, secret
from bot.tasks import Background
from bot.wiring import assemble
from runtime import FanOut
from runtime.scheduler import ApprovalScheduler

log = logging.getLogger("signoff.server")


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def serve(settings: Settings, *, stop: asyncio.Event | None = None) -> None:
    stop = stop or _stop_on_signals()
    process = await assemble(settings)
    rt, background = process.runtime, Background()
    for agent in rt.agents.values():
        if agent.approval_waived:
            log.warning(
                "agent %s: irreversible tools that run WITHOUT approval: %s",
                agent.name,
                ", ".join(agent.approval_waived),
            )
    token = secret(settings.api_token)
    callbacks = CallbackNotifier(
        process.store, secret(settings.callback_secret) or token or "", background
    )
    rt.notifier = FanOut([rt.notifier, callbacks])
    app = web.Application(middlewares=[bearer_auth(token or "")])
    app.router.add_get("/healthz", healthz)
    if token:
        add_routes(app, rt, background)
    else:
        log.warning("SIGNOFF_API_TOKEN is not set: the HTTP API (/v1/...) is disabled")
    scheduler = ApprovalScheduler(rt)
    runner = web.AppRunner(app)
    try:
        await scheduler.start()
        background.spawn(rt.recover(), name="recover")
        background.spawn(callbacks.redeliver(), name="redeliver callbacks")
        await runner.setup()
        await web.TCPSite(runner, settings.host, settings.port).start()
        log.info(
            "signoff serving on http://%s:%d (worker %s)",
            settings.host,
            settings.port,
            rt.worker_id,
        )
        await stop.wait()
    finally:
        await scheduler.stop()
        await runner.cleanup()
        await background.drain()
        await process.close()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop

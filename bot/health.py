"""`GET /readyz` and `GET /metrics` next to `/healthz` (which says only that the process
answers): whether this process can do its work now, and what it has done.

`/readyz` is 200 `{"ready": true}` when the database answers a fresh connection, its schema
is current, its disk has room, the scheduler and the outbox sender run and this process's
clock is within a quarter of the lease of the database's; otherwise 503
`{"ready": false, "failing": [...]}` naming the checks that fail and nothing more (it is
unauthenticated). Both say which configuration digest this worker runs and which live
workers run another (`config`, `bot.workers`), which does not make it unready. The details
go to the log, once each time the set of failures changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from aiohttp import web

from bot.metrics import metrics_handler
from runtime.approvals import Policies
from runtime.queries import Queries

log = logging.getLogger("signoff.health")


@dataclass
class Readiness:
    queries: Queries
    running: Mapping[str, Callable[[], bool]]
    """Components that must be running, by name (`scheduler`, `outbox_sender`)."""
    problems: Mapping[str, Callable[[], str | None]] = field(default_factory=dict)
    """Other checks by name (`clock_skew`): what is wrong, or None."""
    config: Callable[[], Awaitable[dict[str, Any]]] | None = None
    """Which configuration this worker and the others run (`bot.workers`): reported, and
    not a reason to be unready (every worker would be, mid-deploy)."""
    _told: frozenset[str] = field(default=frozenset())

    async def failing(self) -> dict[str, str]:
        """Each failing check with its details; empty when ready."""
        failing = await self.queries.health()
        for name, is_running in self.running.items():
            if not is_running():
                failing[name] = f"the {name.replace('_', ' ')} is not running"
        for name, problem in self.problems.items():
            if (said := problem()) is not None:
                failing[name] = said
        self._tell(failing)
        return failing

    def _tell(self, failing: Mapping[str, str]) -> None:
        names = frozenset(failing)
        if names == self._told:
            return
        self._told = names
        if failing:
            log.warning("not ready: %s", "; ".join(failing.values()))
        else:
            log.info("ready again")

    async def readyz(self, request: web.Request) -> web.Response:
        failing = await self.failing()
        config = await self._config() if "database" not in failing else {}
        if failing:
            body = {"ready": False, "failing": sorted(failing)} | config
            return web.json_response(body, status=503)
        return web.json_response({"ready": True} | config)

    async def _config(self) -> dict[str, Any]:
        if self.config is None:
            return {}
        try:
            return {"config": await self.config()}
        except Exception as exc:  # reported only: readiness is the checks above
            log.info("could not compare configurations with the other workers: %r", exc)
            return {}


def mount(app: web.Application, readiness: Readiness, policies: Policies | None = None) -> None:
    """Serve `/readyz` and `/metrics` on the server's application (no token needed);
    `policies` give the metrics the approvals pending past their decision targets."""
    app.router.add_get("/readyz", readiness.readyz)
    app.router.add_get("/metrics", metrics_handler(readiness.queries, policies))

"""Which configuration each `signoff serve` runs. A worker records its configuration digest
(`bot.config_digest`) at start and every minute after; it reads what the live workers
recorded and reports those that run another one: in `/readyz` (`config`), in `/metrics`
(`signoff_config_disagreement`) and once in its log each time the set changes. Approvals
carry the authority they were asked under, so a difference never changes who decides one
already asked; it changes what new approvals ask, which is why it is reported."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from typing import Any

from bot.config_digest import short
from bot.metrics import CONFIG_DISAGREEMENT
from bot.metrics import CONFIG_INFO
from runtime import Runtime
from runtime.records import Worker

log = logging.getLogger("signoff.server")
ANNOUNCE_EVERY = 60.0


@dataclass
class Workers:
    rt: Runtime
    started_at: datetime
    _told: frozenset[tuple[str, str]] = field(default=frozenset())

    async def announce(self) -> None:
        """Record this worker's digest (seen now), then compare it with the others'."""
        await self.rt.announce_worker(started_at=self.started_at)
        await self.compare()

    async def compare(self) -> dict[str, Any]:
        """This worker's digest, how many workers are live, and the digests other live
        workers run instead (short, and without the workers' names: `/readyz` answers anyone;
        `signoff doctor` names them)."""
        mine = self.rt.config_digest or ""
        live = await self.rt.workers()
        differ = [w for w in live if w.id != self.rt.worker_id and w.config_digest != mine]
        CONFIG_INFO.labels(mine).set(1)
        CONFIG_DISAGREEMENT.set(len(differ))
        self._tell(mine, differ)
        return {
            "digest": short(mine),
            "workers": len({w.id for w in live} | {self.rt.worker_id}),
            "agree": not differ,
            "differ": sorted({short(w.config_digest) for w in differ}),
        }

    def _tell(self, mine: str, differ: list[Worker]) -> None:
        seen = frozenset((w.id, w.config_digest) for w in differ)
        if seen == self._told:
            return
        self._told = seen
        if differ:
            others = ", ".join(f"{w.id} runs {short(w.config_digest)}" for w in differ)
            log.warning(
                "this worker runs configuration %s; %s. Approvals keep the authority they "
                "were asked under, but new ones ask as the worker that asks them is "
                "configured: deploy one signoff.toml (`signoff doctor` lists the workers)",
                short(mine),
                others,
            )
        else:
            log.info("every live worker runs configuration %s", short(mine))

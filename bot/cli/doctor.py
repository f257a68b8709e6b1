"""`signoff doctor`: whether the workers sharing this database agree on the configuration
they decide by. Each `signoff serve` records its configuration digest at start and every
minute (`bot.workers`); this lists the live ones and the digest of the signoff.toml this
command reads. It exits 1 when a live worker runs another digest than the others (or than
this file): approvals keep the authority they were asked under, but new ones ask as the
worker that asks them is configured."""

from typing import TYPE_CHECKING
from typing import Any

import typer

from bot.cli.base import JsonFlag
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process

DISAGREE = 1


def doctor(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Which configuration each live worker runs; exit 1 when they differ."""
    from bot.config_digest import short

    async def work(p: "Process") -> dict[str, Any]:
        workers = await p.runtime.workers()
        return {
            "config": p.runtime.config_digest,
            "workers": [w.model_dump(mode="json") for w in workers],
        }

    found = with_process(ctx, work, agents=False)
    digests = {w["config_digest"] for w in found["workers"]} | {found["config"]}
    agree = len(digests) == 1
    if as_json:
        show(found | {"agree": agree}, as_json=True)
    else:
        say(f"this configuration: {short(found['config'])}")
        if not found["workers"]:
            say("no live workers (none has recorded itself in the last 3 minutes)")
        for w in found["workers"]:
            same = "same" if w["config_digest"] == found["config"] else "DIFFERENT"
            say(
                f"worker {w['id']}: {short(w['config_digest'])} ({same}), started "
                f"{w['started_at'][:19]}, last seen {w['seen_at'][:19]}"
            )
        if not agree:
            say(
                "the workers do not run one configuration: new approvals ask as the worker "
                "that asks them is configured; deploy one signoff.toml to all of them"
            )
    if not agree:
        raise typer.Exit(DISAGREE)

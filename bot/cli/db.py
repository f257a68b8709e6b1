"""`signoff db ...`: the database itself."""

from typing import TYPE_CHECKING
from typing import Annotated

import typer

from bot.cli.base import JsonFlag
from bot.cli.base import group
from bot.cli.base import show
from bot.cli.session import with_database
from bot.cli.session import with_process

if TYPE_CHECKING:
    from runtime import Database
    from runtime.database import Migrated

db = group("The database.")

StopTheWorld = Annotated[
    bool,
    typer.Option(
        "--stop-the-world",
        help="Apply a migration that is not safe while older workers run even though such "
        "workers hold leases: their leases are taken (their next writes are refused); stop them.",
    ),
]


@db.command()
def migrate(
    ctx: typer.Context, stop_the_world: StopTheWorld = False, as_json: JsonFlag = False
) -> None:
    """Create or upgrade the schema; name each migration applied and whether it is safe while
    older workers run; print the version.

    Refused, changing nothing, while workers a migration would leave behind hold leases (a
    worker older than an unsafe migration, or one of a release that cannot step aside):
    they are listed. Safe to run again. Every command migrates the database it opens (only
    this one and `runs start` create one), so on a database in use this one only reports.
    Pending approvals asked before approvals carried their authority get it from the policy
    in force in this configuration (each once; `signoff serve` does the same at start)."""

    async def work(database: "Database") -> "Migrated":
        return await database.migrate(stop_the_world=stop_the_world)

    done = with_database(ctx, work)
    filled = with_process(ctx, lambda p: p.runtime.fill_authority(), agents=False)
    show(
        {
            "version": done.after,
            "was": done.before,
            "applied": [
                {"migration": s.label, "safe_while_older_workers_run": s.safe, "why": s.why}
                for s in done.steps
            ],
            "stepping_aside": list(done.stepping_aside),
            "leases_taken": list(done.leases_taken),
            "authority_filled": filled,
        },
        as_json=as_json,
        table="\n".join(report(done, filled)),
    )


def report(done: "Migrated", filled: int) -> list[str]:
    """What `db migrate` says to a person, a line each."""
    lines = [
        f"applied {s.label}: {'safe' if s.safe else 'NOT safe'} while older workers run ({s.why})"
        for s in done.steps
    ]
    if done.stepping_aside:
        lines.append(
            "older workers that step aside now (replace them): " + "; ".join(done.stepping_aside)
        )
    if done.leases_taken:
        lines.append("leases taken from (stop them): " + "; ".join(done.leases_taken))
    was = f" (was {done.before})" if done.before != done.after else " (up to date)"
    if filled:
        was += (
            f"; filled in the authority of {filled} pending approval(s) from the policy in "
            "force in this configuration"
        )
    return [*lines, f"schema version {done.after}{was}"]

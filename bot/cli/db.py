"""`signoff db ...`: the database itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from bot.cli.base import JsonFlag, group, show
from bot.cli.session import with_database, with_process

if TYPE_CHECKING:
    from runtime import Database

db = group("The database.")


@db.command()
def migrate(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Create or upgrade the schema; print its version.

    Safe to run again. Every command migrates the database it opens (only this one and
    `runs start` create one), so on a database in use this one only reports. Pending
    approvals asked before approvals carried their authority get it from the policy in
    force in this configuration (each once; `signoff serve` does the same at start)."""

    async def work(database: Database) -> tuple[int, int]:
        return await database.migrate()

    before, after = with_database(ctx, work)
    filled = with_process(ctx, lambda p: p.runtime.fill_authority(), agents=False)
    text = f"schema version {after}" + (f" (was {before})" if before != after else " (up to date)")
    if filled:
        text += (
            f"; filled in the authority of {filled} pending approval(s) from the policy in "
            "force in this configuration"
        )
    show({"version": after, "was": before, "authority_filled": filled}, as_json=as_json, table=text)

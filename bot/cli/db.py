"""`signoff db ...`: the database itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from bot.cli.base import JsonFlag, group, show
from bot.cli.session import with_database

if TYPE_CHECKING:
    from runtime import Database

db = group("The database.")


@db.command()
def migrate(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Create or upgrade the schema; print its version.

    Safe to run again. Every command migrates the database it opens (only this one and
    `runs start` create one), so on a database in use this one only reports."""

    async def work(database: Database) -> tuple[int, int]:
        return await database.migrate()

    before, after = with_database(ctx, work)
    text = f"schema version {after}" + (f" (was {before})" if before != after else " (up to date)")
    show({"version": after, "was": before}, as_json=as_json, table=text)

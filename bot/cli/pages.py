"""`signoff pages ...`: effects a human must handle (in doubt, not undoable)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.base import JsonFlag, check_user_id, dumped, group, show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process
    from runtime.records import Page

pages = group("Effects a human must handle (in doubt, not undoable).")


@pages.command("list")
def list_pages(
    ctx: typer.Context,
    all_pages: Annotated[bool, typer.Option("--all", help="Acknowledged ones too.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Pages, oldest first: what a human must check by hand."""
    from bot import views

    found = with_process(
        ctx, lambda p: p.runtime.queries.pages(open_only=not all_pages), agents=False
    )
    show(dumped(found), as_json=as_json, table=views.pages_table(found))


@pages.command("ack")
def acknowledge(
    ctx: typer.Context,
    page_id: Annotated[str, typer.Argument(metavar="PAGE", help="The page's id.")],
    by: Annotated[str, typer.Option(help="Slack user id of who handled it.")],
    as_json: JsonFlag = False,
) -> None:
    """Acknowledge a page once it is handled."""
    from bot import views

    check_user_id("--by", by)

    async def work(p: Process) -> Page:
        return await p.runtime.acknowledge_page(page_id, by=by)

    page = with_process(ctx, work, agents=False)
    show(page.model_dump(mode="json"), as_json=as_json, table=views.pages_table([page]))

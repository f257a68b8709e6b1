"""`signoff pages ...`: effects a human must handle (in doubt, not undoable)."""

from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli import people
from bot.cli.base import JsonFlag
from bot.cli.base import check_user_id
from bot.cli.base import dumped
from bot.cli.base import group
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import Reader
from bot.cli.session import with_process
from bot.cli.session import with_reader

if TYPE_CHECKING:
    from bot.wiring import Process

pages = group("Effects a human must handle (in doubt, not undoable).")


@pages.command("list")
def list_pages(
    ctx: typer.Context,
    all_pages: Annotated[bool, typer.Option("--all", help="Acknowledged ones too.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Pages, oldest first: what a human must check by hand."""
    from bot import views

    async def work(r: Reader) -> Any:
        found = await r.queries.pages(open_only=not all_pages)
        return found, await people.of(r.slack, found)

    found, names = with_reader(ctx, work)
    people.show(names)
    if not found and not as_json:
        say("no pages" if all_pages else "no open pages: nothing to settle")
        return
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

    async def work(p: "Process") -> Any:
        from runtime import Permission
        from runtime.permissions import OPERATOR

        found = await p.runtime.queries.page(page_id)
        await p.runtime.check(OPERATOR.acting_for(by), Permission.ACKNOWLEDGE, found)
        page = await p.runtime.acknowledge_page(page_id, by=by)
        return page, await people.of(p.settings.slack, [page])

    page, names = with_process(ctx, work, agents=False)
    people.show(names)
    show(page.model_dump(mode="json"), as_json=as_json, table=views.pages_table([page]))

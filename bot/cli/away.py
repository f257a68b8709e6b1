"""`signoff away set|back|list`: out of office. While a person is away, their delegate
decides for them what names them directly (docs/approvers.md, "Away and delegates")."""

from datetime import datetime
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import group
from bot.cli.base import say
from bot.cli.base import show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process

away = group("Out of office: who is away, until when, and who decides for them.")
Person = Annotated[
    str, typer.Argument(metavar="PERSON", help="A Slack user id or an e-mail address.")
]


def _until(text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise Failure(f"--until: {text!r} is not an ISO 8601 time (2026-12-24T09:00Z)") from None
    if found.tzinfo is None:
        raise Failure(f"--until: {text!r} needs a time zone (Z for UTC)")
    return found


@away.command("set")
def set_away(
    ctx: typer.Context,
    person: Person,
    until: Annotated[str, typer.Option(help="When they are back (ISO 8601, with a zone).")],
    delegate: Annotated[str, typer.Option(help="Who decides for them meanwhile.")],
    as_json: JsonFlag = False,
) -> None:
    """PERSON is away until --until; --delegate decides for them meanwhile."""
    end = _until(until)

    async def work(p: "Process") -> Any:
        from runtime.permissions import OPERATOR

        return await p.runtime.set_away(person, until=end, delegate=delegate, by=OPERATOR)

    found = with_process(ctx, work, agents=False)
    show(
        found.model_dump(mode="json"),
        as_json=as_json,
        table=f"{found.person} is away until {found.until.isoformat()}; "
        f"{found.delegate} decides for them",
    )


@away.command("back")
def back(ctx: typer.Context, person: Person) -> None:
    """PERSON is back: their delegate no longer decides for them."""

    async def work(p: "Process") -> bool:
        from runtime.permissions import OPERATOR

        return await p.runtime.back(person, by=OPERATOR)

    was = with_process(ctx, work, agents=False)
    say(f"{person} is back" if was else f"{person} was not away; nothing changed")


@away.command("list")
def list_away(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Who is away now, until when, and their delegates."""

    async def work(p: "Process") -> Any:
        return await p.runtime.away()

    found = with_process(ctx, work, agents=False)
    rows = [a.model_dump(mode="json") for a in found]
    lines = [f"{a.person} away until {a.until.isoformat()}, delegate {a.delegate}" for a in found]
    show(rows, as_json=as_json, table="\n".join(lines) or "nobody is away")

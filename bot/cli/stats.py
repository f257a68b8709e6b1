"""`signoff approvals stats`: how long approvals wait for a person, over a window."""

from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.approvals import approvals
from bot.cli.base import Failure
from bot.cli.base import JsonFlag
from bot.cli.base import show
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process


@approvals.command("stats")
def stats(
    ctx: typer.Context,
    since: Annotated[str, typer.Option(help="The window, back from now: 1h, 7d, 30d.")] = "7d",
    as_json: JsonFlag = False,
) -> None:
    """p50/p90 waiting time, decline, edit and expiry rates, and the busiest approvers."""
    from runtime.approvals import parse_duration

    try:
        window = parse_duration(since, unit_required=True)
    except ValueError as exc:
        raise Failure(f"--since: {exc}") from None

    async def work(p: "Process") -> Any:
        return await p.runtime.approval_stats(since=p.runtime.clock() - window)

    found = with_process(ctx, work, agents=False).as_dict()
    show(found, as_json=as_json, table="\n".join(_lines(found, since)))


def _lines(found: dict[str, Any], since: str) -> list[str]:
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    def wait(seconds: float | None) -> str:
        return "-" if seconds is None else f"{seconds / 60:.1f} min"

    busiest = ", ".join(f"{who} ({n})" for who, n in found["busiest_approvers"]) or "-"
    return [
        f"last {since}: {found['requested']} asked of people, {found['decided']} decided, "
        f"{found['auto_decided']} decided at once by rules",
        f"waiting time: p50 {wait(found['p50_wait_seconds'])}, "
        f"p90 {wait(found['p90_wait_seconds'])}",
        f"declined {rate(found['decline_rate'])}, edited {rate(found['edit_rate'])}, "
        f"expired {rate(found['expiry_rate'])}",
        f"busiest approvers: {busiest}",
    ]

"""People by name in the CLI, as Slack shows them: the display names of the users a command
prints, looked up in the Slack workspace the bot serves (`users.info`, through the same
directory the Slack surface uses) when a bot token is configured. Without one, or when Slack
does not answer in time, a person is shown by id (never a guess)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings_slack import SlackSettings

LOOKUP_WITHIN = 5.0
"""Seconds the names of one command's people may take; past that the ids are printed."""
FIELDS = ("requested_by", "decided_by", "acknowledged_by")


def mentioned(records: Iterable[object], voters: Iterable[str] = ()) -> list[str]:
    """The people these records name (who asked, decided, acknowledged), and `voters`."""
    found = [getattr(r, f, None) for r in records for f in FIELDS]
    return list(dict.fromkeys([*(p for p in found if isinstance(p, str) and p), *voters]))


async def names(slack: SlackSettings, users: Iterable[str]) -> dict[str, str]:
    """Display names by id of those Slack knows; none without a bot token."""
    token = slack.bot_token.get_secret_value() if slack.bot_token is not None else None
    wanted = list(users)
    if not token or not wanted:
        return {}
    import asyncio  # not at the top: `--help` does without it

    from bot.directory import web_client
    from bot.people import SlackPeople

    client = web_client(token, base_url=slack.api_url, idempotent_only=True, timeout=2)
    try:
        found = await asyncio.wait_for(SlackPeople(client).names(wanted), LOOKUP_WITHIN)
    except TimeoutError:
        return {}
    return {user: name for user, name in found.items() if name != user}


async def of(
    slack: SlackSettings, records: Iterable[object], voters: Iterable[str] = ()
) -> dict[str, str]:
    """The names of the people these records name (who asked, decided, acknowledged, voted)."""
    return await names(slack, mentioned(records, voters))


def show(found: dict[str, str]) -> None:
    """What the command prints next names these people (set outside the command's event
    loop, whose context its tables are not rendered in)."""
    from bot import views

    views.PEOPLE.set(found)

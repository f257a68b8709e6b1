"""Out of office in the App Home (issue 43.4): a person's Home says whether they are away and
whom they decide for; **Away…** opens a modal (until when, delegate to whom) and **I'm back**
ends the absence. Both go through `Runtime.set_away` / `Runtime.back` as the approvals page
and `signoff away` do, judged by the permission table (`runtime.permissions.may_set_away`:
a person says so for themselves only), with `runtime.approvals.delegation`'s rules; a
refusal shows under the modal's field and changes nothing. The Home is published again
once the absence is recorded."""

from __future__ import annotations

import logging
from datetime import UTC
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import words
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.away_view import away_modal
from bot.tasks import Background
from runtime import Actor
from runtime import Runtime
from runtime import errors

if TYPE_CHECKING:  # bot.slack.home builds the Home (with `bot.slack.away_view`)
    from bot.slack.home import HomeTabs

log = logging.getLogger("signoff.slack")


def register(app: AsyncApp, rt: Runtime, background: Background, homes: HomeTabs) -> None:
    listeners = AwayListeners(rt, background, homes)
    app.action(Action.AWAY)(listeners.open)
    app.action(Action.BACK)(listeners.back)
    app.view(Modal.AWAY)(listeners.submit)


class AwayListeners:
    def __init__(self, rt: Runtime, background: Background, homes: HomeTabs) -> None:
        self.rt, self.background, self.homes = rt, background, homes

    async def open(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        try:
            await client.views_open(trigger_id=body["trigger_id"], view=away_modal(self.rt.clock()))
        except SlackApiError as exc:
            log.info("slack: the away form did not open (%s)", exc.response.get("error"))

    async def submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        user = str(body["user"]["id"])
        values = (view.get("state") or {}).get("values") or {}
        until = _picked(values, "until", "selected_date_time")
        delegate = _picked(values, "delegate", "selected_user")
        if not isinstance(until, int):
            await ack(response_action="errors", errors={"until": "Say until when."})
            return
        if not isinstance(delegate, str) or not delegate:
            await ack(response_action="errors", errors={"delegate": "Choose who decides."})
            return
        try:
            await self.rt.set_away(
                user,
                until=datetime.fromtimestamp(until, UTC),
                delegate=delegate,
                by=Actor.of_person(user),
            )
        except (errors.InvalidRequest, errors.NotPermitted) as exc:
            field = "delegate" if "delegate" in str(exc) else "until"
            await ack(response_action="errors", errors={field: words.refusal(exc)})
            return
        await ack()
        self.background.spawn(self.homes.opened(client, user), name="home after away")

    async def back(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        user = str(body["user"]["id"])
        self.background.spawn(self._back(client, user), name="back")

    async def _back(self, client: AsyncWebClient, user: str) -> None:
        await self.rt.back(user, by=Actor.of_person(user))
        await self.homes.opened(client, user)


def _picked(values: dict[str, Any], block: str, key: str) -> Any:
    element = (values.get(block) or {}).get(block) or {}
    return element.get(key) if isinstance(element, dict) else None

"""What the buttons that hand out more than one decision share ("Approve + similar…" and its
rule's Confirm, `bot.slack.similar`; "Approve + budget…" and its envelope's Confirm and
Revoke, `bot.slack.envelopes`): each acts first, then acks well within Slack's 3 s; what
is refused changes nothing and is told to the person who clicked, privately.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any
from typing import Protocol
from typing import TypeVar

from slack_bolt.async_app import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.refusals import refusal
from bot.tasks import Background
from bot.tasks import after_decision
from runtime import Runtime
from runtime import errors
from runtime.records import Approval

log = logging.getLogger("signoff.slack")
Body = dict[str, Any]
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Change(Protocol[T_co]):
    """A runtime command on the clicked id, by the person who clicked."""

    def __call__(self, ident: str, /, *, by: str) -> Awaitable[T_co]: ...


class AnswerFirst:
    """A listener class's runtime, its background tasks, and the steps its buttons share."""

    def __init__(self, rt: Runtime, background: Background) -> None:
        self.rt = rt
        self.background = background

    async def approve(
        self,
        ack: AsyncAck,
        body: Body,
        client: AsyncWebClient,
        check: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> Approval | None:
        """Approve the card's request (after `check(user, approval_id)`, which may refuse)
        without resuming its run yet, and ack; None, told to the person, if refused."""
        user, approval_id = clicked(body)
        try:
            if check is not None:
                await check(user, approval_id)
            decided = await self.rt.decide(approval_id, "approved", by=user, resume=False)
        except errors.SignoffRuntimeError as exc:
            await self.refuse(ack, client, body, refusal(exc))
            return None
        await ack()
        after_decision(self.background, self.rt, decided)
        return decided

    async def act(
        self,
        ack: AsyncAck,
        body: Body,
        client: AsyncWebClient,
        change: Change[T],
    ) -> T | None:
        """`change(clicked id, by=user)`, then ack; None, told to the person, if refused."""
        user, ident = clicked(body)
        try:
            done = await change(ident, by=user)
        except errors.SignoffRuntimeError as exc:
            await self.refuse(ack, client, body, refusal(exc))
            return None
        await ack()
        return done

    async def refuse(self, ack: AsyncAck, client: AsyncWebClient, body: Body, text: str) -> None:
        await ack()
        self.tell(client, body, text)

    def tell(self, client: AsyncWebClient, body: Body, text: str) -> None:
        self.background.spawn(tell(client, body, text), name="ephemeral")

    def replace_card(
        self, client: AsyncWebClient, body: Body, text: str, blocks: list[Body], *, name: str
    ) -> None:
        """Replace the clicked message (in the background) with `text` and `blocks`."""
        channel = (body.get("channel") or {}).get("id")
        ts = (body.get("message") or {}).get("ts")
        if channel and ts:
            update = client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
            self.background.spawn(update, name=name)


def clicked(body: Body) -> tuple[str, str]:
    """Who clicked, and the button's value (the id it acts on)."""
    return body["user"]["id"], body["actions"][0]["value"]


def value(view: Body, block: str) -> str:
    """What the person typed in a modal's input `block` ("" if nothing)."""
    found = view["state"]["values"].get(block, {}).get(block, {})
    return str(found.get("value") or "")


async def tell(client: AsyncWebClient, body: Body, text: str) -> None:
    """An ephemeral message to the person who clicked, where they clicked (else to them)."""
    channel = (body.get("channel") or {}).get("id") or body["user"]["id"]
    try:
        await client.chat_postEphemeral(channel=channel, user=body["user"]["id"], text=text)
    except Exception:
        log.exception("could not tell %s: %s", body["user"]["id"], text)

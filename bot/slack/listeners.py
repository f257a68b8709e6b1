"""Slack listeners: buttons, modals, `/runs` and the App Home tab, registered on one AsyncApp.

Each listener records what the person did first (a decision is one compare-and-set, a few
milliseconds), then acks, well inside Slack's 3 seconds, and returns: everything after the
ack (resuming the run, opening a modal, an ephemeral reply) goes to the background, so bolt
answers Slack as soon as the listener returns. A refusal is an ephemeral message to the
clicker, or an error shown in the modal, and changes nothing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import commands, replies, similar, texts
from bot.slack.escape import WORD_JOINER, mrkdwn
from bot.slack.refusals import already_decided, refusal
from bot.tasks import Background
from runtime import Runtime, errors
from runtime.approvals import Decision
from store import Approval, ApprovalState
from store import errors as store_errors

log = logging.getLogger("signoff.slack")

Body = dict[str, Any]


def register(
    app: AsyncApp, rt: Runtime, background: Background, *, resolvers: frozenset[str] = frozenset()
) -> None:
    """Attach every listener to `app`; `resolvers` may settle in-doubt pages from the card."""
    listeners = Listeners(rt, background, resolvers)
    app.action("approve")(listeners.approve)
    app.action("approve_separate")(listeners.approve_separate)
    app.action("decline")(listeners.open_decline)
    app.action("edit")(listeners.open_edit)
    app.action("acknowledge")(listeners.acknowledge)
    app.action("resolve_happened")(listeners.settle_happened)  # kit.HAPPENED_ACTION
    app.action("resolve_did_not_happen")(listeners.settle_not_happened)
    app.view("decline_reason")(listeners.decline)
    app.view("edit_args")(listeners.approve_edited)
    app.command("/runs")(listeners.runs_command)
    app.event("app_home_opened")(listeners.home)
    similar.register(app, rt, background)


class Listeners:
    def __init__(
        self, rt: Runtime, background: Background, resolvers: frozenset[str] = frozenset()
    ) -> None:
        self.rt = rt
        self.background = background
        self.resolvers = resolvers

    # buttons

    async def approve(
        self, ack: AsyncAck, body: Body, client: AsyncWebClient, *, separate: bool = False
    ) -> None:
        user, approval_id = _clicker(body), _button_value(body)
        try:
            decided = await self.rt.decide(
                approval_id, "approved", by=user, resume=False, separate=separate
            )
        except errors.SignoffRuntimeError as exc:
            await ack()
            self._tell(client, body, refusal(exc))
            return
        await ack()
        self._after(decided)

    async def approve_separate(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        """Approve a call whose key an earlier effect used with other arguments, as an effect
        of its own (the card shows the conflict; the runtime re-keys the call)."""
        await self.approve(ack, body, client, separate=True)

    async def open_decline(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await ack()
        self.background.spawn(self._open(body, client, replies.decline_modal), name="decline")

    async def open_edit(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await ack()
        self.background.spawn(self._open(body, client, replies.edit_modal), name="edit")

    async def acknowledge(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        user, page_id = _clicker(body), _button_value(body)
        try:
            await self.rt.acknowledge_page(page_id, by=user)
        except errors.SignoffRuntimeError as exc:
            await ack()
            self._tell(client, body, refusal(exc))
            return
        await ack()

    async def settle_happened(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await self._settle(ack, body, client, happened=True)

    async def settle_not_happened(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await self._settle(ack, body, client, happened=False)

    async def _settle(
        self, ack: AsyncAck, body: Body, client: AsyncWebClient, *, happened: bool
    ) -> None:
        """Settle an in-doubt effect from its page (with a fenced worker's receipt, if one
        came): the page is acknowledged in the same write, which updates the card for
        everyone; the run goes on after the ack."""
        user, page_id = _clicker(body), _button_value(body)
        if user not in self.resolvers:
            await ack()
            self._tell(client, body, texts.NOT_A_RESOLVER)
            return
        try:
            page = await self.rt.store.get_page(page_id)
            if page.run_id is None or page.call_id is None:
                raise errors.InvalidRequest(f"page {page_id} is about no effect to settle")
            await self.rt.resolve(page.run_id, page.call_id, happened=happened, by=user)
        except (errors.SignoffRuntimeError, store_errors.StoreError) as exc:
            await ack()
            self._tell(client, body, texts.not_settled(mrkdwn(str(exc))))
            return
        await ack()
        self.background.spawn(self.rt.resume(page.run_id), name=f"resume {page.run_id}")

    # modals

    async def decline(self, ack: AsyncAck, body: Body, view: Body) -> None:
        user = body["user"]["id"]
        reason = _input(view, "reason").strip()
        if not reason:
            await ack(response_action="errors", errors={"reason": "Say why, for the agent."})
            return
        await self._submit(ack, view, "reason", "declined", by=user, reason=reason)

    async def approve_edited(self, ack: AsyncAck, body: Body, view: Body) -> None:
        user = body["user"]["id"]
        try:
            args = json.loads(_input(view, "args"))
        except json.JSONDecodeError as exc:
            await ack(response_action="errors", errors={"args": f"Not JSON: {exc.msg}"})
            return
        if not isinstance(args, dict):
            await ack(response_action="errors", errors={"args": "Give the arguments as an object"})
            return
        await self._submit(ack, view, "args", "approved", by=user, args=args)

    async def _submit(
        self, ack: AsyncAck, view: Body, field: str, decision: Decision, **details: Any
    ) -> None:
        """Record a modal's decision; a refusal is shown under the modal's `field`."""
        try:
            decided = await self.rt.decide(
                view["private_metadata"], decision, resume=False, **details
            )
        except errors.SignoffRuntimeError as exc:
            await ack(response_action="errors", errors={field: _plain(refusal(exc))})
            return
        await ack()
        self._after(decided)

    # /runs and the Home tab

    async def runs_command(self, ack: AsyncAck, command: Body) -> None:
        reply = await commands.answer(self.rt, command.get("text", ""), user=command["user_id"])
        await ack(**reply)

    async def home(self, event: Body, client: AsyncWebClient) -> None:
        self.background.spawn(self._publish_home(event["user"], client), name="home")

    async def _publish_home(self, user: str, client: AsyncWebClient) -> None:
        view = await commands.home(self.rt, user=user)
        await client.views_publish(user_id=user, view=view)

    # helpers

    async def _open(
        self, body: Body, client: AsyncWebClient, modal: Callable[[Approval], Body]
    ) -> None:
        """Open a modal about the clicked approval if it still waits; otherwise say why not.
        (Within 3 s of the click: Slack's trigger_id expires.)"""
        try:
            approval = await self.rt.desk.get(_button_value(body))
        except errors.SignoffRuntimeError as exc:
            await _tell(client, body, refusal(exc))
            return
        if approval.state != ApprovalState.PENDING:
            await _tell(client, body, already_decided(approval))
            return
        await client.views_open(trigger_id=body["trigger_id"], view=modal(approval))

    def _tell(self, client: AsyncWebClient, body: Body, text: str) -> None:
        self.background.spawn(_tell(client, body, text), name="ephemeral")

    def _after(self, decided: Approval) -> None:
        """Tell and resume after the ack; a vote short of its quorum waits for more."""
        if decided.state != ApprovalState.PENDING:
            self.background.spawn(self.rt.after_decision(decided), name=f"after {decided.id}")


def _clicker(body: Body) -> str:
    return str(body["user"]["id"])


def _button_value(body: Body) -> str:
    return str(body["actions"][0]["value"])


def _input(view: Body, block_id: str) -> str:
    value = view["state"]["values"][block_id][block_id].get("value")
    return str(value or "")


def _plain(text: str) -> str:
    """Modal errors are plain text: drop the mrkdwn date markup to its fallback, and the word
    joiners that keep mrkdwn from formatting (invisible, but copied with the text)."""
    text = re.sub(r"<!date\^[^|>]*\|([^>]*)>", r"\1", text)
    return text.replace(WORD_JOINER, "")


async def _tell(client: AsyncWebClient, body: Body, text: str) -> None:
    """An ephemeral message to the clicker, where they clicked."""
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
        "channel_id"
    )
    if channel is None:  # the Home tab has no channel: use the person's DM with the app
        channel = _clicker(body)
    try:
        await client.chat_postEphemeral(channel=channel, user=_clicker(body), text=text)
    except Exception:
        log.exception("could not tell %s: %s", _clicker(body), text)

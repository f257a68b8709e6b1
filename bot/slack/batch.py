"""Batches in the App Home: where two or more pending approvals of one tool wait for the
person, a button opens a modal listing them (all chosen) with Approve or Decline and a
reason; its submission decides the chosen ones together (`bot.batches`: each its own
decision, checked against its own policy). The modal closes at once, and the person's Home
then says what was decided and which were refused, and why."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import batches
from bot import reading
from bot import words
from bot.slack import action_text
from bot.slack import blocks as kit
from bot.slack import commands
from bot.slack import escape
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.posting import slack_error
from bot.tasks import Background
from runtime import Runtime
from runtime.display import Display
from runtime.records import Approval
from runtime.records import ApprovalState

if TYPE_CHECKING:  # bot.slack.home builds the Home with this module's buttons
    from bot.slack.home import HomeTabs

log = logging.getLogger("signoff.slack")

PENDING_READ = 500
OPTION_TEXT = 75
DECISIONS = {"approved": "Approve the chosen", "declined": "Decline the chosen"}


def register(app: AsyncApp, rt: Runtime, background: Background, homes: HomeTabs) -> None:
    listeners = BatchListeners(rt, background, homes)
    app.action(Action.BATCH)(listeners.open)
    app.view(Modal.BATCH)(listeners.submit)


# Block Kit (pure)


def batch_modal(
    tool: str, pending: Sequence[Approval], display: Display | None = None
) -> dict[str, Any]:
    """The pending approvals of `tool` the person may decide, all chosen, with the decision
    and a reason (needed to decline)."""
    options = [_option(a, display) for a in pending[: batches.MAX_BATCH]]
    chooser = {
        "type": "input",
        "block_id": "approvals",
        "label": kit.pt(f"{tool} requests"),
        "element": {
            "type": "multi_static_select",
            "action_id": "approvals",
            "options": options,
            "initial_options": options,
        },
    }
    choices = [{"text": kit.pt(text), "value": value} for value, text in DECISIONS.items()]
    decision = {
        "type": "input",
        "block_id": "decision",
        "label": kit.pt("Decision"),
        "element": {
            "type": "radio_buttons",
            "action_id": "decision",
            "options": choices,
            "initial_option": choices[0],
        },
    }
    reason = kit.text_input("reason", "Reason (needed to decline)", multiline=True)
    reason["optional"] = True
    intro = kit.section(escape.mrkdwn(words.BATCH_EACH_ITS_OWN))
    return kit.modal(
        Modal.BATCH,
        tool,
        title="Decide together",
        blocks=[intro, chooser, decision, reason],
        close="Back",
        submit="Decide",
    )


def _option(approval: Approval, display: Display | None) -> dict[str, Any]:
    text = (
        f"{action_text.action_summary(approval.tool, approval.shown_args, display)} · {approval.id}"
    )
    if len(text) > OPTION_TEXT:
        text = text[: OPTION_TEXT - len(approval.id) - 4] + "… · " + approval.id
    return {"text": kit.pt(text, limit=OPTION_TEXT), "value": approval.id}


# listeners


class BatchListeners:
    def __init__(self, rt: Runtime, background: Background, homes: HomeTabs) -> None:
        self.rt, self.background, self.homes = rt, background, homes

    async def open(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        user, tool = str(body["user"]["id"]), str(body["actions"][0]["value"])
        pending = await self.pending(user, tool)
        if not pending:
            await self.homes.tell(client, user, words.NOTHING_PENDING)
            return
        try:
            view = batch_modal(tool, pending, reading.displays(self.rt).get(tool))
            await client.views_open(trigger_id=body["trigger_id"], view=view)
        except SlackApiError as exc:
            log.info("slack: the batch form for %s did not open (%s)", user, slack_error(exc))

    async def pending(self, user: str, tool: str) -> list[Approval]:
        waiting = await self.rt.queries.approvals(state=ApprovalState.PENDING, limit=PENDING_READ)
        return [
            a
            for a in waiting
            if a.tool == tool and await commands.may_decide_approval(self.rt, a, user)
        ]

    async def submit(
        self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient
    ) -> None:
        user, tool = str(body["user"]["id"]), str(view.get("private_metadata") or "")
        values = (view.get("state") or {}).get("values") or {}
        chosen = _chosen(values)
        decision = _picked(values)
        reason = _text(values, "reason").strip() or None
        if not chosen:
            await ack(response_action="errors", errors={"approvals": words.BATCH_EMPTY})
            return
        if decision not in DECISIONS:
            await ack(response_action="errors", errors={"decision": "Choose one."})
            return
        if decision == "declined" and reason is None:
            await ack(response_action="errors", errors={"reason": "Say why, for the agent."})
            return
        await ack()
        self.background.spawn(
            self._decide(client, user, tool, chosen, decision, reason), name="batch"
        )

    async def _decide(
        self,
        client: AsyncWebClient,
        user: str,
        tool: str,
        chosen: list[str],
        decision: str,
        reason: str | None,
    ) -> None:
        said, _ = await batches.decide_and_say(
            self.rt, chosen, decision, tool=tool, by=user, reason=reason, background=self.background
        )
        log.info("slack: a batch by %s: %s", user, said[:500])
        await self.homes.tell(client, user, escape.mrkdwn(said))


def _chosen(values: dict[str, Any]) -> list[str]:
    element = (values.get("approvals") or {}).get("approvals") or {}
    options = element.get("selected_options") or []
    return [str(o.get("value")) for o in options if isinstance(o, dict) and o.get("value")]


def _picked(values: dict[str, Any]) -> str | None:
    element = (values.get("decision") or {}).get("decision") or {}
    option = element.get("selected_option")
    return str(option.get("value")) if isinstance(option, dict) else None


def _text(values: dict[str, Any], block: str) -> str:
    value = ((values.get(block) or {}).get(block) or {}).get("value")
    return value if isinstance(value, str) else ""

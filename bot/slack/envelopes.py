"""Slack's side of envelopes (budgets an approver hands out): "Approve + budget…" on a card
approves the request and opens a modal proposing the envelope (calls like it, up to an
amount and/or a number of calls, until a time); submitting it makes the envelope, and its
live message in the channel shows the burn-down (`live_message`, posted and edited by the
outbox: `bot.slack.delivery`) until it is used up, expires or is revoked (its Revoke
button, by its author or a rule-writer). An envelope for an effect that cannot be undone
waits for a second writer's Confirm in the channel. `/runs envelope …` does the same from
the command line of Slack. Every step acts through `Runtime.spend`.

The modal answers first: the click is decided, acked, and the modal opened at once with
the proposal (it reads nothing, well within the 3 s a click's trigger lasts)."""

from __future__ import annotations

import json
import shlex
from datetime import datetime
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import blocks as kit
from bot.slack import escape
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.answer_first import AnswerFirst
from bot.slack.answer_first import Body
from bot.slack.answer_first import value
from bot.slack.refusals import refusal
from bot.tasks import Background
from runtime import Runtime
from runtime import errors
from runtime import spend as budgets
from runtime.records import Envelope

EVENT = "signoff_envelope"
FIELDS = ("when", "up_to", "calls", "until", "reason")
DEFAULT_CALLS = "20"
ENDED = {
    "exhausted": "Used up",
    "expired": "Expired",
    "revoked": "Revoked",
}


def register(app: AsyncApp, rt: Runtime, background: Background) -> None:
    handler = Envelopes(rt, background)
    app.action(Action.APPROVE_ENVELOPE)(handler.approve_envelope)
    app.action(Action.CONFIRM_ENVELOPE)(handler.confirm)
    app.action(Action.REVOKE_ENVELOPE)(handler.revoke)
    app.view(Modal.ENVELOPE)(handler.submit)


# Block Kit (pure)


def live_message(envelope: Envelope, currency: str | None, now: datetime) -> dict[str, Any]:
    """The envelope's message in the channel as it is now: what is used of it and, once it
    ended, how (used up, expired, revoked by whom); a Revoke button while it is in force."""
    status = envelope.status(now)
    used = escape.mrkdwn(budgets.envelope_used(envelope, currency))
    tool = escape.code(envelope.tool)
    head = f"Budget {escape.code(envelope.id)} for {tool}"
    if status in ENDED:
        how = ENDED[status]
        if status == "revoked":
            how += f" by {kit.mention(envelope.revoked_by)}"
        text = f"{head}: {how.lower()}; {used}. Calls like these ask again."
        first = f"*{how}* · {head}: {used}. Calls like these ask a person again."
    else:
        shadow = " (shadow: approves nothing, records what it would have)"
        text = f"{head}: {used}, until {envelope.expires_at:%H:%M} UTC"
        first = f"{head}{shadow if envelope.mode == 'shadow' else ''}: *{used}*"
    blocks = [
        kit.section(first),
        kit.context(
            f"when {escape.code(envelope.condition)}",
            f"until {kit.date(envelope.expires_at)}",
            f"by {kit.mention(envelope.author)}: {escape.mrkdwn(envelope.reason, limit=300)}",
        ),
    ]
    if status == "active":
        revoke = kit.button(texts.REVOKE_ENVELOPE, Action.REVOKE_ENVELOPE, envelope.id)
        blocks.append(kit.actions(f"envelope:{envelope.id}", [revoke]))
    meta = kit.metadata(EVENT, envelope_id=envelope.id)
    return kit.message(text, blocks, metadata=meta)


def envelope_modal(
    approval_id: str,
    tool: str,
    condition: str,
    *,
    currency: str | None,
    amount: str | None,
    channel: str | None,
    default_until: str,
) -> dict[str, Any]:
    """The proposed envelope, editable: calls like this one (CEL), up to an amount and/or a
    number of calls, until a time or for a while, and why."""
    unit = f" ({currency})" if currency else ""
    blocks = [
        kit.text_input("when", "Calls like this one (CEL)", multiline=True, initial=condition),
        _optional(kit.text_input("up_to", f"Up to an amount{unit}", placeholder="2000")),
        _optional(kit.text_input("calls", "Or up to a number of calls", initial=DEFAULT_CALLS)),
        kit.text_input("until", "Until (18:00 UTC, or for 8h)", initial=default_until),
        kit.text_input("reason", "Reason (why these calls need no one)"),
        kit.context(
            "Calls inside the budget are approved at once and cite it; never past a "
            "ceiling or a limit. Its message in the channel shows what is left."
        ),
    ]
    meta = {"approval_id": approval_id, "tool": tool, "channel": channel, "amount": amount}
    return kit.modal(
        Modal.ENVELOPE,
        json.dumps(meta),
        title="Approve + budget",
        blocks=blocks,
        close="Cancel",
        submit="Hand out",
    )


def confirm_request(envelope: Envelope) -> dict[str, Any]:
    """The channel message asking a second writer to confirm an envelope (two-person rule)."""
    text = (
        f"<@{envelope.author}> hands out a budget {escape.code(envelope.id)} for "
        f"{escape.code(envelope.tool)}, an effect that cannot be undone: "
        f"{escape.code(envelope.condition)} — {escape.mrkdwn(envelope.reason)}. "
        "A second approver or rule-writer confirms it."
    )
    button = kit.button(
        texts.CONFIRM_ENVELOPE, Action.CONFIRM_ENVELOPE, envelope.id, style="primary"
    )
    return kit.message(text, [kit.section(text), kit.actions(f"envelope:{envelope.id}", [button])])


def _optional(block: Body) -> Body:
    return block | {"optional": True}


# listeners


class Envelopes(AnswerFirst):
    async def approve_envelope(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        """Approve (refused, changing nothing, for someone who may not hand out budgets for
        the tool), then open the modal at once."""
        decided = await self.approve(ack, body, client, check=self._may_hand_out)
        if decided is None:
            return
        amount = self.rt.spend.money_arg(decided.tool)
        view = envelope_modal(
            decided.id,
            decided.tool,
            self.rt.rules.draft(decided.tool, None, decided.args).condition,
            currency=self.rt.spend.currency(decided.tool, amount),
            amount=amount,
            channel=(body.get("channel") or {}).get("id"),
            default_until=_hours(self.rt.spend.config.default_expiry.total_seconds()),
        )
        await client.views_open(trigger_id=body["trigger_id"], view=view)

    async def _may_hand_out(self, user: str, approval_id: str) -> None:
        approval = await self.rt.queries.approval(approval_id)
        await self.rt.spend.check_author(user, approval.tool)

    async def submit(self, ack: AsyncAck, body: Body, view: Body, client: AsyncWebClient) -> None:
        user = body["user"]["id"]
        meta = json.loads(view["private_metadata"])
        values = {b: value(view, b).strip() for b in FIELDS}
        tool, amount = meta["tool"], meta.get("amount")
        try:
            envelope = await self.rt.spend.make(
                tool,
                values["when"],
                author=user,
                reason=values["reason"],
                max_amount=_amount(self.rt, tool, amount, values["up_to"]),
                max_calls=_calls(values["calls"]),
                amount=amount,
                expires_in=budgets.lasting(values["until"], self.rt.clock()),
                from_approval=meta["approval_id"],
                channel=meta.get("channel"),
            )
        except errors.SignoffRuntimeError as exc:
            await ack(response_action="errors", errors={_field(str(exc)): str(exc)[:150]})
            return
        await ack()
        if envelope.state == "proposed" and envelope.channel:
            message = confirm_request(envelope)
            post = client.chat_postMessage(channel=envelope.channel, **message)
            self.background.spawn(post, name="envelope confirm")

    async def confirm(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        envelope = await self.act(ack, body, client, self.rt.spend.confirm)
        if envelope is not None:
            user = body["user"]["id"]
            text = f"Budget {escape.code(envelope.id)} confirmed by <@{user}>."
            self.replace_card(client, body, text, [], name="envelope confirmed")

    async def revoke(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        """End it now (its author or a rule-writer); its message says so through the outbox."""
        await self.act(ack, body, client, self.rt.spend.revoke)


# /runs envelope


async def answer(rt: Runtime, text: str, *, user: str, channel: str | None) -> dict[str, Any]:
    """`/runs envelopes` lists them; `/runs envelope TOOL when="CEL" up_to=2000 calls=20
    until=18:00 reason="…"` hands one out (its live message goes to this channel);
    `/runs envelope revoke|confirm ID`."""
    try:
        said = shlex.split(text)[1:]
    except ValueError as exc:
        return _reply(f"Could not read that: {escape.mrkdwn(str(exc))}. {USAGE}")
    try:
        if not said:
            return _listing(rt, await rt.spend.list(limit=20))
        if said[0] in ("revoke", "confirm") and len(said) == 2:
            change = rt.spend.revoke if said[0] == "revoke" else rt.spend.confirm
            envelope = await change(said[1], by=user)
            return _reply(_line(rt, envelope, rt.clock()))
        return await _make(rt, said, user=user, channel=channel)
    except errors.SignoffRuntimeError as exc:
        return _reply(refusal(exc))


USAGE = (
    'Usage: `/runs envelope TOOL when="CEL" up_to=2000 calls=20 until=18:00 reason="…"`, '
    "`/runs envelope revoke ID`, `/runs envelopes`."
)


async def _make(rt: Runtime, said: list[str], *, user: str, channel: str | None) -> dict[str, Any]:
    tool, options = said[0], dict(o.partition("=")[::2] for o in said[1:])
    unknown = sorted(set(options) - {"when", "up_to", "calls", "until", "reason", "amount"})
    if "=" in tool or unknown or "when" not in options:
        return _reply(USAGE)
    amount = options.get("amount") or rt.spend.money_arg(tool)
    envelope = await rt.spend.make(
        tool,
        options["when"],
        author=user,
        reason=options.get("reason", ""),
        max_amount=_amount(rt, tool, amount, options.get("up_to", "")),
        max_calls=_calls(options.get("calls", "")),
        amount=amount,
        expires_in=budgets.lasting(options["until"], rt.clock()) if "until" in options else None,
        channel=channel,
    )
    line = _line(rt, envelope, rt.clock())
    if envelope.state == "proposed":
        line += f"\nA second approver confirms it: `/runs envelope confirm {envelope.id}`."
    return _reply(line)


def _listing(rt: Runtime, found: list[Envelope]) -> dict[str, Any]:
    now = rt.clock()
    lines = [_line(rt, e, now) for e in found]
    return _reply("\n".join(lines) or "No budgets handed out.")


def _line(rt: Runtime, envelope: Envelope, now: datetime) -> str:
    """Its line, the id as code (to copy into `/runs envelope revoke`)."""
    currency = rt.spend.currency(envelope.tool, envelope.amount)
    _, _, rest = budgets.envelope_line(envelope, currency, now).partition(" ")
    return f"{escape.code(envelope.id)} {escape.mrkdwn(rest)}"


def _reply(text: str) -> dict[str, Any]:
    return kit.ephemeral(text, kit.sections(text.split("\n")))


def _amount(rt: Runtime, tool: str, amount: str | None, text: str) -> int | None:
    return budgets.budget(text, rt.spend.currency(tool, amount)) if text else None


def _calls(text: str) -> int | None:
    if not text:
        return None
    if not text.isdigit():
        raise budgets.EnvelopeRefused(f"calls: {text[:20]!r} is not a whole number")
    return int(text)


def _field(message: str) -> str:
    """The modal field a refusal is about."""
    for field, starts in (
        ("up_to", ("up to:", "an envelope needs a budget", "an envelope's amount")),
        ("calls", ("calls:",)),
        ("until", ("until:", "an envelope ends within")),
        ("reason", ("an envelope needs a reason",)),
    ):
        if message.startswith(starts):
            return field
    return "when"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g}h"

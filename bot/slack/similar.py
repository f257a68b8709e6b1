"""Slack's side of learned rules: "Approve + similar…" on a card approves the request and
opens a modal proposing a rule with its backtest; submitting it makes the rule (a declined
request in the backtest needs a typed confirmation; an effect that cannot be compensated
asks a second rule-writer in the channel, with a Confirm button); `/runs rules` lists the
rules and `/runs revoke <id>` revokes one. Every step acts through `Runtime.rules`.

The modal answers first and computes after: it opens at once with the proposed rule and a
line saying the backtest runs (reading nothing, so well within the 3 s a click's trigger
lasts), and `views.update` replaces that line with the backtest when it is done. Slack keeps
what the person typed meanwhile, as the inputs keep their ids."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.rule_views import all_rules
from bot.rule_views import backtest_notes
from bot.rule_views import backtest_summary
from bot.rule_views import rule_line
from bot.slack import blocks as kit
from bot.slack import escape
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.answer_first import AnswerFirst
from bot.slack.answer_first import Body
from bot.slack.answer_first import tell
from bot.slack.answer_first import value
from bot.slack.refusals import refusal
from bot.tasks import Background
from runtime import Runtime
from runtime import errors
from runtime.approvals import Backtest
from runtime.approvals import Draft
from runtime.approvals import Hit
from runtime.approvals import NeedsConfirmation
from runtime.approvals import RuleNotFound
from runtime.records import LearnedRule

log = logging.getLogger("signoff.slack")
YES = "yes"
MAX_HITS = 15
FIELDS = ("when", "expires", "reason", "confirm")


def register(app: AsyncApp, rt: Runtime, background: Background) -> None:
    similar = Similar(rt, background)
    app.action(Action.APPROVE_SIMILAR)(similar.approve_similar)
    app.action(Action.CONFIRM_RULE)(similar.confirm)
    app.view(Modal.SIMILAR_RULE)(similar.submit)


# Block Kit (pure)


def rule_modal(
    approval_id: str,
    proposal: Draft,
    *,
    channel: str | None,
    tested: Backtest | None,
    typed: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The proposed rule, editable, with expiry, reason and the backtest before saving; while
    `tested` is None, a line saying the backtest runs. `typed`: what the person already
    entered, kept in place of the proposal's values."""
    typed = typed or {}
    days = str(proposal.expiry.days)
    blocks: list[dict[str, Any]] = [
        _input("when", "Rule (CEL)", typed.get("when", proposal.condition), multiline=True),
        _input(
            "expires",
            f"Expires in days (at most {proposal.max_expiry.days})",
            typed.get("expires", days),
        ),
        _input("reason", "Reason (why calls like this need no one)", typed.get("reason")),
        _section(
            "*Backtest*\n" + (texts.BACKTEST_RUNNING if tested is None else backtest_text(tested))
        ),
    ]
    if proposal.ceiling:
        blocks.append(_context(f"Never beyond the ceiling: `{escape.mrkdwn(proposal.ceiling)}`"))
    if tested is not None and tested.declined:
        blocks.append(_input("confirm", "It would have approved declined requests: type yes", None))
    if proposal.needs_second:
        blocks.append(
            _context(
                "This effect cannot be undone: a second rule-writer confirms "
                "the rule in the channel before it approves anything."
            )
        )
    meta = json.dumps({"approval_id": approval_id, "tool": proposal.tool, "channel": channel})
    return {
        "type": "modal",
        "callback_id": Modal.SIMILAR_RULE,
        "private_metadata": meta,
        "title": {"type": "plain_text", "text": "Approve similar"},
        "submit": {"type": "plain_text", "text": "Save rule"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def backtest_text(tested: Backtest) -> str:
    """The backtest in mrkdwn; each declined or edited request linked to its card."""
    lines = [escape.mrkdwn(backtest_summary(tested))]
    for label, hits in (("declined", tested.declined), ("edited", tested.edited)):
        if hits:
            lines.append(f"{len(hits)} of those a person {label}:")
            lines += [f"• {_hit_link(h)}" for h in hits[:MAX_HITS]]
            if len(hits) > MAX_HITS:
                lines.append(f"… and {len(hits) - MAX_HITS} more")
    lines += [escape.mrkdwn(note) for note in backtest_notes(tested)]
    return "\n".join(lines)


def _hit_link(hit: Hit) -> str:
    name = escape.code(hit.approval_id)
    if hit.card is not None:
        channel, ts = hit.card
        name = f"<https://slack.com/archives/{channel}/p{ts.replace('.', '')}|{hit.approval_id}>"
    who = f" by {kit.mention(hit.decided_by)}" if hit.decided_by else ""
    why = f": {escape.mrkdwn(hit.reason, limit=100)}" if hit.reason else ""
    return f"{name}{who}{why}"


def confirm_request(rule: LearnedRule) -> dict[str, Any]:
    """The channel message asking a second rule-writer to confirm a rule (two-person rule)."""
    text = (
        f"<@{rule.author}> proposes a rule for `{escape.mrkdwn(rule.tool)}`, an effect that "
        f"cannot be undone: `{escape.mrkdwn(rule.condition)}` — {escape.mrkdwn(rule.reason)}. "
        "A second rule-writer confirms it."
    )
    button = {
        "type": "button",
        "action_id": Action.CONFIRM_RULE,
        "text": {"type": "plain_text", "text": "Confirm rule"},
        "style": "primary",
        "value": rule.id,
    }
    return {
        "text": text,
        "blocks": [
            _section(text),
            {"type": "actions", "block_id": f"rule:{rule.id}", "elements": [button]},
        ],
    }


def rules_reply(rows: list[dict[str, Any]]) -> dict[str, Any]:
    text = "\n".join(_slack_line(r) for r in rows) or "No approval rules."
    return {"response_type": "ephemeral", "text": text, "blocks": [_section(text)]}


def _slack_line(row: dict[str, Any]) -> str:
    """A rule's line with its id and condition as code, to copy into `/runs revoke`."""
    before, _, after = rule_line(row).removeprefix(row["id"]).partition(row["when"])
    return (
        f"{escape.code(row['id'])}{escape.mrkdwn(before)}{escape.code(row['when'])}"
        f"{escape.mrkdwn(after)}"
    )


def _input(block: str, label: str, initial: str | None, *, multiline: bool = False) -> Body:
    element: Body = {"type": "plain_text_input", "action_id": block, "multiline": multiline}
    if initial is not None:
        element["initial_value"] = initial
    return {
        "type": "input",
        "block_id": block,
        "label": {"type": "plain_text", "text": label},
        "element": element,
    }


def _section(text: str) -> Body:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _context(text: str) -> Body:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


# listeners


class Similar(AnswerFirst):
    async def approve_similar(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        """Approve (refused, changing nothing, for someone who may not write rules), then
        open the modal in the background."""
        user = body["user"]["id"]
        if not await self.rt.rules.may_write(user):
            await self.refuse(ack, client, body, f"<@{user}> may not write approval rules.")
            return
        decided = await self.approve(ack, body, client)
        if decided is not None:
            spawned = self._open(body, client, decided.tool, decided.args)
            self.background.spawn(spawned, name="similar")

    async def _open(self, body: Body, client: AsyncWebClient, tool: str, args: Body) -> None:
        """Open the modal with the proposed rule at once (the trigger lasts 3 s), then run
        the backtest and put it in with `views.update`."""
        approval_id = body["actions"][0]["value"]
        channel = (body.get("channel") or {}).get("id")
        drafted = self.rt.rules.draft(tool, None, args)
        view = rule_modal(approval_id, drafted, channel=channel, tested=None)
        opened = (await client.views_open(trigger_id=body["trigger_id"], view=view))["view"]
        try:
            tested = await self.rt.rules.backtest(tool, drafted.condition)
        except errors.SignoffRuntimeError as exc:
            await tell(client, body, refusal(exc))
            return
        view = rule_modal(approval_id, drafted, channel=channel, tested=tested)
        try:  # by its hash: a modal the person closed or submitted meanwhile stays as it is
            await client.views_update(view_id=opened["id"], hash=opened["hash"], view=view)
        except SlackApiError as exc:
            log.info("slack: the rule modal was not updated: %s", exc.response.get("error"))

    async def submit(self, ack: AsyncAck, body: Body, view: Body, client: AsyncWebClient) -> None:
        user = body["user"]["id"]
        meta = json.loads(view["private_metadata"])
        values = {b: value(view, b) for b in FIELDS}
        try:
            days = float(values["expires"] or "0")
        except ValueError:
            await ack(response_action="errors", errors={"expires": "A number of days."})
            return
        try:
            rule, _ = await self.rt.rules.make(
                meta["tool"],
                values["when"].strip(),
                author=user,
                reason=values["reason"],
                expires_in=timedelta(days=days),
                from_approval=meta["approval_id"],
                confirm_declined=values["confirm"].strip().lower() == YES,
            )
        except NeedsConfirmation as exc:
            if _has_block(view, "confirm"):
                await ack(response_action="errors", errors={"confirm": str(exc)[:150]})
                return
            # Submitted before the backtest was shown: show it, with the confirmation to type.
            drafted = self.rt.rules.draft(meta["tool"], values["when"].strip(), {})
            typed = {k: v for k, v in values.items() if k != "confirm"}
            shown = rule_modal(
                meta["approval_id"],
                drafted,
                channel=meta.get("channel"),
                tested=exc.backtest,
                typed=typed,
            )
            await ack(response_action="update", view=shown)
            return
        except errors.SignoffRuntimeError as exc:
            field = (
                "expires" if "days" in str(exc) else "reason" if "reason" in str(exc) else "when"
            )
            await ack(response_action="errors", errors={field: str(exc)[:150]})
            return
        await ack()
        self.background.spawn(self._announce(client, rule, meta.get("channel")), name="rule")

    async def _announce(
        self, client: AsyncWebClient, rule: LearnedRule, channel: str | None
    ) -> None:
        """Ask for the second confirmation in the card's channel, or tell the author."""
        if rule.state == "proposed" and channel:
            await client.chat_postMessage(channel=channel, **confirm_request(rule))
            return
        if channel:
            text = (
                f"Rule {rule.id} is active until {rule.expires_at:%Y-%m-%d %H:%M} UTC: "
                f"`{escape.mrkdwn(rule.condition)}`. Revoke it with `/runs revoke {rule.id}`."
            )
            await client.chat_postEphemeral(channel=channel, user=rule.author, text=text)

    async def confirm(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        rule = await self.act(ack, body, client, self.rt.rules.confirm)
        if rule is not None:
            user = body["user"]["id"]
            text = (
                f"Rule {rule.id} confirmed by <@{user}>; active until {rule.expires_at:%Y-%m-%d}."
            )
            self.replace_card(client, body, text, [_section(text)], name="rule confirmed")


async def answer(rt: Runtime, verb: str, rest: list[str], *, user: str) -> dict[str, Any] | None:
    """`/runs rules` and `/runs revoke <id>`; None for any other verb."""
    if verb == "rules":
        learned = await rt.rules.list()
        return rules_reply(all_rules(rt.policies, learned, rt.clock()))
    if verb == "revoke" and len(rest) == 1:
        try:
            rule = await rt.rules.revoke(rest[0], by=user)
        except RuleNotFound:
            return {"response_type": "ephemeral", "text": f"No rule {escape.code(rest[0])}."}
        text = f"Rule {escape.code(rule.id)} revoked (it was used {rule.uses} times)."
        return {"response_type": "ephemeral", "text": text}
    return None


def _has_block(view: Body, block: str) -> bool:
    """Whether the submitted view holds the input `block` (in its blocks, or its state)."""
    shown = any(b.get("block_id") == block for b in view.get("blocks", []))
    return shown or block in view["state"]["values"]

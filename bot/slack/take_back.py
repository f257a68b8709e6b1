"""The card's Cancel (in a cool-off) and Undo (in an undo window) buttons (issue 42.6).

Each click is judged by the permission table (`cancel_cool_off`, `undo`: an approver of that
approval), then acted on by the runtime's compare-and-set: a cancel is recorded before the
ack and its run resumes after it; an undo (its compensator may take a while) runs after the
ack. Whatever is refused (not an approver, too late, undone already) is told to the clicker
alone and changes nothing; the card itself changes through the outbox."""

from __future__ import annotations

from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack import clicks
from bot.slack import escape
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.answer_first import AnswerFirst
from bot.slack.answer_first import Body
from bot.slack.answer_first import clicked
from bot.slack.answer_first import tell
from bot.slack.refusals import refusal
from bot.tasks import Background
from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime import errors


def register(app: AsyncApp, rt: Runtime, background: Background) -> None:
    buttons = TakeBack(rt, background)
    app.action(Action.CANCEL_COOL_OFF)(buttons.cancel)
    app.action(Action.UNDO)(buttons.undo)


class TakeBack(AnswerFirst):
    async def cancel(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        user, approval_id = clicked(body)
        try:
            await self._allowed(body, Permission.CANCEL_COOL_OFF)
            cancelled = await self.rt.cancel_cool_off(approval_id, by=user, resume=False)
        except errors.SignoffRuntimeError as exc:
            await self.refuse(ack, client, body, texts.not_taken_back(refusal(exc)))
            return
        await ack()
        if cancelled.run_id is not None:
            resume = self.rt.resume_after_decision(cancelled.run_id)
            self.background.spawn(resume, name=f"resume {cancelled.run_id}")

    async def undo(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        user, approval_id = clicked(body)
        try:
            await self._allowed(body, Permission.UNDO)
        except errors.SignoffRuntimeError as exc:
            await self.refuse(ack, client, body, texts.not_taken_back(refusal(exc)))
            return
        await ack()
        self.background.spawn(self._undo(client, body, approval_id, user), name="undo")

    async def _allowed(self, body: Body, permission: Permission) -> None:
        """Refuse (raise) unless the clicker may; remember the card the click came from."""
        user, approval_id = clicked(body)
        approval = await self.rt.queries.approval(approval_id)
        await self.rt.check(Actor.of_person(user), permission, approval)
        await clicks.remember_card(self.rt.deliveries, body, "approval", approval_id)

    async def _undo(self, client: AsyncWebClient, body: Body, approval_id: str, user: str) -> None:
        try:
            await self.rt.undo(approval_id, by=user)
        except errors.SignoffRuntimeError as exc:
            await tell(client, body, texts.not_taken_back(refusal(exc)))
            return
        after = await self.rt.queries.approval(approval_id)
        if after.undo_error is not None:  # the card says so too, with Undo to try again
            why = escape.mrkdwn(after.undo_error, limit=1500)
            await tell(client, body, texts.not_taken_back(texts.undo_failed(why)))

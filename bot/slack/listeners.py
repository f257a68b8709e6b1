"""One job, long because each Slack interaction has its listener: registering them.

Slack listeners: buttons, modals, `/runs` and the App Home tab, registered on one AsyncApp.

Each listener checks the decision as the HTTP API does (`bot.requests.decision_refusal`),
records it (one compare-and-set, a few milliseconds), then acks, well inside Slack's 3
seconds, and returns: everything after the ack (resuming the run, opening a modal, an
ephemeral reply) goes to the background, so bolt answers Slack as soon as the listener
returns. A database slower than ACK_WITHIN does not hold the answer: Slack is acked and the
person told the outcome once it is known. A refusal is an ephemeral message to the clicker,
or an error shown in the modal, and changes nothing; so is a decision the store could not
write ("not recorded"), with one log line.

Each kind of request (button, modal, command, event) is its own short listener, with the
shared rules of answering in time beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import TypeVar

import aiohttp
from slack_bolt import BoltResponse
from slack_bolt.async_app import AsyncAck
from slack_bolt.async_app import AsyncApp
from slack_bolt.async_app import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.people import Names
from bot.reading import displays
from bot.requests import decision_refusal
from bot.slack import away
from bot.slack import batch
from bot.slack import clicks
from bot.slack import commands
from bot.slack import envelopes
from bot.slack import inbound
from bot.slack import replies
from bot.slack import similar
from bot.slack import take_back
from bot.slack import texts
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.escape import WORD_JOINER
from bot.slack.escape import mrkdwn
from bot.slack.home import HomeTabs
from bot.slack.posting import slack_error
from bot.slack.refusals import edit_refusal
from bot.slack.refusals import refusal
from bot.tasks import Background
from bot.tasks import after_decision
from runtime import Actor
from runtime import Decision
from runtime import Page
from runtime import Permission
from runtime import Runtime
from runtime import errors
from runtime.display import Display
from runtime.limits import MAX_DEPTH
from runtime.records import Approval
from runtime.records import DatabaseError
from runtime.records import StoreError

log = logging.getLogger("signoff.slack")

Body = dict[str, Any]
T = TypeVar("T")

ACK_WITHIN = 0.05
"""Seconds a click waits for its decision to be recorded before Slack is answered anyway
(the person is then told the outcome, if it is a refusal): a decision takes a few
milliseconds, and a slow database must not hold Slack's answer (its limit is 3 s)."""
MODAL_ACK_WITHIN = 1.0
COMMAND_ACK_WITHIN = 1.0
"""Seconds `/runs` waits for its answer before Slack is acked without it (the answer then
follows through the response_url), well inside Slack's 3 s."""
"""The same for a modal's submission, which is rare and whose refusal is best shown in the
modal itself."""
NOT_RECORDED = (DatabaseError, TimeoutError, ConnectionError)
"""The store could not write (disk full, database down, locked too long): nothing changed."""
NOT_RECORDED_TEXT = "Not recorded — nothing changed, try again in a moment."
COULD_NOT_READ = "Signoff cannot read this approval right now — nothing changed, try again."
TRIGGER_EXPIRED = (
    "Slack gave up waiting for the form to open (it must open within 3 seconds of the "
    "click) — nothing changed; click the button again."
)
DEEP_ARGS = f"Arguments: the arguments nest deeper than the limit of {MAX_DEPTH} levels"
FIELDS = {"reason": "Reason", "args": "Arguments", "by": "Decider", "decision": "Decision"}


def register(
    app: AsyncApp,
    rt: Runtime,
    background: Background,
    *,
    homes: HomeTabs | None = None,
    page_url: str | None = None,
) -> None:
    """Attach every listener to `app`. Who may do what (acknowledge or settle a page, read
    a run with `/runs`, cancel it) is the runtime's permission table (`Runtime.may`);
    `page_url`: where the approvals page is, for an approval that needs a passkey there."""
    homes = homes or HomeTabs(rt)
    listeners = Listeners(rt, background, homes, page_url=page_url)
    app.action(Action.APPROVE)(listeners.approve)
    app.action(Action.APPROVE_SEPARATE)(listeners.approve_separate)
    app.action(Action.DECLINE)(listeners.open_decline)
    app.action(Action.EDIT)(listeners.open_edit)
    app.action(Action.ASK)(listeners.open_ask)
    app.action(Action.ACKNOWLEDGE)(listeners.acknowledge)
    app.action(Action.SETTLE_HAPPENED)(listeners.settle_happened)
    app.action(Action.SETTLE_NOT_HAPPENED)(listeners.settle_not_happened)
    app.view(Modal.DECLINE_REASON)(listeners.decline)
    app.view(Modal.EDIT_ARGS)(listeners.approve_edited)
    app.view(Modal.ASK_QUESTION)(listeners.ask)
    app.command("/runs")(listeners.runs_command)
    app.event("app_home_opened")(listeners.home)
    similar.register(app, rt, background)
    batch.register(app, rt, background, homes)
    away.register(app, rt, background, homes)
    envelopes.register(app, rt, background)
    take_back.register(app, rt, background)


@dataclass(eq=False)
class Listeners:
    """What each listener does; `register` makes one (its defaults filled in there)."""

    rt: Runtime
    background: Background
    homes: HomeTabs
    names: Names = field(default_factory=Names)
    page_url: str | None = None

    # buttons

    async def approve(
        self, ack: AsyncAck, body: Body, client: AsyncWebClient, *, separate: bool = False
    ) -> None:
        user, approval_id = _clicker(body), _button_value(body)
        refused = decision_refusal(decision="approved", by=user)
        if refused is not None:
            await ack()
            self._tell(client, body, _refused_field(refused))
            return
        decide = self._on_card(
            body,
            "approval",
            approval_id,
            lambda: self.rt.decide(
                approval_id, "approved", by=user, resume=False, separate=separate
            ),
        )
        await self._record(ack, client, body, decide, field=None, explain=self._step_up)

    def _step_up(self, exc: Exception) -> str:
        """A refusal; for an approval that needs a passkey, the link to the page for it."""
        approval = getattr(exc, "approval", None)
        if isinstance(exc, errors.StepUpRequired) and isinstance(approval, Approval):
            base = (self.page_url or "").rstrip("/")
            return texts.step_up(f"{base}/approvals/{approval.id}" if base else None)
        return refusal(exc)

    async def approve_separate(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        """Approve a call whose key an earlier effect used with other arguments, as an effect
        of its own (the card shows the conflict; the runtime re-keys the call)."""
        await self.approve(ack, body, client, separate=True)

    async def open_decline(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await ack()
        self.background.spawn(
            self._open(body, client, replies.decline_modal, "declined"), name="decline"
        )

    async def open_edit(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await ack()
        self.background.spawn(self._open(body, client, replies.edit_modal, "approved"), name="edit")

    async def open_ask(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        await ack()
        self.background.spawn(self._open(body, client, replies.ask_modal, "asked"), name="ask")

    async def acknowledge(self, ack: AsyncAck, body: Body, client: AsyncWebClient) -> None:
        user, page_id = _clicker(body), _button_value(body)
        acknowledged = self._on_card(
            body, "page", page_id, lambda: self._acknowledge(page_id, user)
        )
        await self._record(ack, client, body, acknowledged, field=None)

    async def _acknowledge(self, page_id: str, user: str) -> Page:
        page = await self.rt.queries.page(page_id)
        await self.rt.check(Actor.of_person(user), Permission.ACKNOWLEDGE, page)
        return await self.rt.acknowledge_page(page_id, by=user)

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
        try:
            page = await self.rt.queries.page(page_id)
            if not await self.rt.may(Actor.of_person(user), Permission.SETTLE, page):
                await ack()
                self._tell(client, body, texts.NOT_A_RESOLVER)
                return
            await clicks.remember_card(self.rt.deliveries, body, "page", page_id)
            if page.run_id is None or page.call_id is None:
                raise errors.InvalidRequest(f"page {page_id} is about no effect to settle")
            await self.rt.resolve(page.run_id, page.call_id, happened=happened, by=user)
        except (errors.SignoffRuntimeError, StoreError) as exc:
            await ack()
            self._tell(client, body, texts.not_settled(mrkdwn(str(exc))))
            return
        await ack()
        self.background.spawn(self.rt.resume(page.run_id), name=f"resume {page.run_id}")

    # modals

    async def decline(self, ack: AsyncAck, body: Body, view: Body, client: AsyncWebClient) -> None:
        user = _clicker(body)
        reason = _input(view, "reason").strip()
        if not reason:
            await ack(response_action="errors", errors={"reason": "Say why, for the agent."})
            return
        await self._submit(ack, client, body, view, user, "declined", "reason", reason=reason)

    async def ask(self, ack: AsyncAck, body: Body, view: Body, client: AsyncWebClient) -> None:
        """A question back to the agent instead of a decision (`words.ASKED`)."""
        question = _input(view, "question").strip()
        if not question:
            await ack(response_action="errors", errors={"question": "Say what to ask the agent."})
            return
        user = _clicker(body)
        await self._submit(ack, client, body, view, user, "asked", "question", reason=question)

    async def approve_edited(
        self, ack: AsyncAck, body: Body, view: Body, client: AsyncWebClient
    ) -> None:
        user = _clicker(body)
        try:  # one level more than arguments may have: the API's own check then says why
            args = inbound.load_json(_input(view, "args"), max_depth=MAX_DEPTH + 1)
        except inbound.Malformed as exc:
            why = DEEP_ARGS if "deeper" in str(exc) else f"Not JSON we accept: {exc}"
            await ack(response_action="errors", errors={"args": why})
            return
        if not isinstance(args, dict):
            await ack(response_action="errors", errors={"args": "Give the arguments as an object"})
            return
        await self._submit(
            ack, client, body, view, user, "approved", "args", explain=edit_refusal, args=args
        )

    async def _submit(
        self,
        ack: AsyncAck,
        client: AsyncWebClient,
        body: Body,
        view: Body,
        user: str,
        decision: Decision,
        field: str,
        *,
        explain: Callable[[Exception], str] = refusal,
        **given: Any,
    ) -> None:
        """`user`'s decision in a modal (with what it gives: the reason, the edited arguments)
        put through the API's checks, then recorded; a refusal shows under the modal's `field`."""
        refused = decision_refusal(decision=decision, by=user, **given)
        if refused is not None:
            await ack(response_action="errors", errors={field: _refused_field(refused)})
            return
        decide = self.rt.decide(_approval_of(view), decision, by=user, resume=False, **given)
        await self._record(ack, client, body, decide, field=field, explain=explain)

    async def _record(
        self,
        ack: AsyncAck,
        client: AsyncWebClient,
        body: Body,
        change: Awaitable[Any],
        *,
        field: str | None,
        explain: Callable[[Exception], str] = refusal,
    ) -> None:
        """Record what the person did and answer Slack within ACK_WITHIN: a refusal is
        shown under the modal's `field` (or ephemerally for a button); a store that cannot
        write is a "not recorded" the person can act on. Past the budget (a slow database)
        Slack is answered at once and the person is told the outcome when it is known."""
        task = asyncio.ensure_future(change)
        budget = ACK_WITHIN if field is None else MODAL_ACK_WITHIN
        done, _ = await asyncio.wait({task}, timeout=budget)
        if not done:
            await ack()
            late = self._told_late(task, client, body, explain)
            self.background.spawn(late, name="slow decision")
            return
        problem = _problem(task, explain)
        if problem is None:
            await ack()
            self._after(task.result())
        elif field is not None:
            named = await self.names.plain(_plain(problem), client)
            await ack(response_action="errors", errors={field: named})
        else:
            await ack()
            self._tell(client, body, problem)

    async def _on_card(
        self, body: Body, kind: str, subject_id: str, change: Callable[[], Awaitable[T]]
    ) -> T:
        """`change()`, once the clicked card is on its record (`bot.slack.clicks`)."""
        await clicks.remember_card(self.rt.deliveries, body, kind, subject_id)
        return await change()

    async def _told_late(
        self,
        task: asyncio.Future[Any],
        client: AsyncWebClient,
        body: Body,
        explain: Callable[[Exception], str],
    ) -> None:
        await asyncio.wait({task})
        problem = _problem(task, explain)
        if problem is None:
            self._after(task.result())
        else:
            await _tell(client, body, problem, channel=await self._channel_of(body))

    async def _channel_of(self, body: Body) -> str | None:
        """Where a modal's approval card is, to tell its submitter there."""
        view = body.get("view")
        if not isinstance(view, dict):
            return None
        with contextlib.suppress(Exception):
            return (await self.rt.queries.approval(_approval_of(view))).channel
        return None

    # /runs and the Home tab

    async def runs_command(self, ack: AsyncAck, command: Body, respond: AsyncRespond) -> None:
        """The answer is the ack when it is ready within COMMAND_ACK_WITHIN (a read of the
        database); otherwise (a user group to ask Slack about, a slow database) Slack is
        acked at once and the answer follows through the command's response_url."""
        answer = asyncio.ensure_future(
            commands.answer(
                self.rt,
                command.get("text", ""),
                user=command["user_id"],
                channel=command.get("channel_id"),
            )
        )
        done, _ = await asyncio.wait({answer}, timeout=COMMAND_ACK_WITHIN)
        if done:
            await ack(**answer.result())
            return
        await ack(response_type="ephemeral", text=texts.ANSWER_FOLLOWS)
        self.background.spawn(_respond_late(answer, respond), name="runs answer")

    async def home(self, event: Body, client: AsyncWebClient) -> None:
        self.background.spawn(self.homes.opened(client, event["user"]), name="home")

    # helpers

    async def _open(
        self,
        body: Body,
        client: AsyncWebClient,
        modal: Callable[[Approval, Display | None], Body],
        decision: Decision,
    ) -> None:
        """Open a modal about the clicked approval if it still waits and the clicker may
        decide it; otherwise say why not. (Within 3 s of the click: Slack's trigger_id
        expires; past that the person is asked to click again.)"""
        user = _clicker(body)
        try:
            await clicks.remember_card(self.rt.deliveries, body, "approval", _button_value(body))
            approval = await self.rt.queries.approval(_button_value(body))
            await self.rt.check_decider(approval, decision, user)
        except errors.SignoffRuntimeError as exc:
            await self._say(client, body, refusal(exc))
            return
        except NOT_RECORDED as exc:
            log.warning("slack: could not open a form for %s: %s", user, _one_line(exc))
            await self._say(client, body, COULD_NOT_READ)
            return
        try:
            view = modal(approval, displays(self.rt).get(approval.tool))
            await client.views_open(trigger_id=body["trigger_id"], view=view)
        except SlackApiError as exc:
            if slack_error(exc) != "expired_trigger_id":
                raise
            log.info("slack: the form for %s opened too late (expired_trigger_id)", user)
            await self._say(client, body, TRIGGER_EXPIRED)

    def _tell(self, client: AsyncWebClient, body: Body, text: str) -> None:
        self.background.spawn(self._say(client, body, text), name="tell")

    async def _say(self, client: AsyncWebClient, body: Body, text: str) -> None:
        """Tell the clicker: in their Home when they clicked there, else ephemerally."""
        if _from_home(body):
            await self._tell_home(client, body, text)
        else:
            await _tell(client, body, text)

    async def _tell_home(self, client: AsyncWebClient, body: Body, text: str) -> None:
        """A refusal from a Home button, shown in that Home; a DM if it cannot be."""
        try:
            await self.homes.tell(client, _clicker(body), text)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack: could not show a refusal in %s's Home (%r)", _clicker(body), exc)
            await _tell(client, body, text)

    def _after(self, decided: Any) -> None:
        """Tell and resume after the ack; a vote short of its quorum waits for more."""
        if isinstance(decided, Approval):
            after_decision(self.background, self.rt, decided)


def _problem(
    task: asyncio.Future[Any], explain: Callable[[Exception], str] = refusal
) -> str | None:
    """What to tell the person about a finished decision, or None when it was recorded."""
    exc = task.exception()
    if exc is None:
        return None
    if isinstance(exc, errors.SignoffRuntimeError):
        return explain(exc)
    if isinstance(exc, NOT_RECORDED):
        log.warning("slack: a decision was not recorded: %s", _one_line(exc))
        return NOT_RECORDED_TEXT
    raise exc


def _from_home(body: Body) -> bool:
    """Whether the click came from the App Home tab (it has no channel to answer in)."""
    view = body.get("view")
    return isinstance(view, dict) and view.get("type") == "home"


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _refused_field(refused: tuple[str, str]) -> str:
    field, reason = refused
    return f"{FIELDS.get(field, field)}: {reason}"


def _approval_of(view: Body) -> str:
    return str(view.get("private_metadata") or "")


def _clicker(body: Body) -> str:
    return str(body["user"]["id"])


def _button_value(body: Body) -> str:
    return str(body["actions"][0]["value"])


def _input(view: Body, block_id: str) -> str:
    """A modal input's text; "" when the block is missing or holds no text (the modal then
    asks for it, instead of the listener failing)."""
    block = ((view.get("state") or {}).get("values") or {}).get(block_id) or {}
    element = block.get(block_id) if isinstance(block, dict) else None
    value = element.get("value") if isinstance(element, dict) else None
    return value if isinstance(value, str) else ""


def _plain(text: str) -> str:
    """Modal errors are plain text: drop the mrkdwn date markup to its fallback, and the word
    joiners that keep mrkdwn from formatting (invisible, but copied with the text)."""
    text = re.sub(r"<!date\^[^|>]*\|([^>]*)>", r"\1", text)
    return text.replace(WORD_JOINER, "")


async def _tell(
    client: AsyncWebClient, body: Body, text: str, *, channel: str | None = None
) -> None:
    """An ephemeral message to the clicker, where they clicked; from the Home tab (no
    channel: a user id is not one for `chat.postEphemeral`) a message in their DM with the
    app."""
    user = _clicker(body)
    channel = (
        channel
        or (body.get("channel") or {}).get("id")
        or (body.get("container") or {}).get("channel_id")
    )
    try:
        if channel is None:
            await client.chat_postMessage(channel=user, text=text)
        else:
            await client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SlackApiError as exc:
        log.warning("slack: could not tell %s (%s): %s", user, slack_error(exc), text[:200])
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("slack: could not tell %s (%r): %s", user, exc, text[:200])


async def _respond_late(answer: asyncio.Future[dict[str, Any]], respond: AsyncRespond) -> None:
    reply = await answer
    try:
        await respond(**reply)
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("slack: could not send a /runs answer to its response_url (%r)", exc)


async def one_line_error(error: Exception, body: Body) -> BoltResponse:
    """What bolt does with a listener that raised: one log line (the traceback only at DEBUG)
    and an empty 200, so Slack is not told to retry and the log is not a wall of text."""
    kind = body.get("type") or body.get("command") or "request"
    log.error("slack: a %s could not be handled: %s", kind, _one_line(error))
    log.debug("slack: the %s's error", kind, exc_info=error)
    return BoltResponse(status=200, body="")

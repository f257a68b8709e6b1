"""Every button has a listener and every listener a button: each card, modal, `/runs` reply
and Home view the app can build is scanned for the action and callback ids in it, and those
are checked, through bolt's own matchers, against the listeners `signoff serve` registers on
its real bolt App."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from support.records import a_run

from bot.dev.workspace import click_payload
from bot.outbox import OutboxNudge
from bot.policy_ids import SlackLearnedRules
from bot.settings import Settings
from bot.slack import away_view
from bot.slack import batch
from bot.slack import cards
from bot.slack import envelopes
from bot.slack import page_cards
from bot.slack import replies
from bot.slack import similar
from bot.slack.actions import OPENS_MODAL
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.app import slack_surface
from bot.slack.away_view import Absence
from bot.slack.home_view import home_view
from bot.tasks import Background
from runtime import Runtime
from runtime.approvals.learned_rules import Backtest
from runtime.approvals.learned_rules import Proposal
from store import Approval
from store import ApprovalState
from store import Checkpoint
from store import Message
from store import Page
from store import Run
from store import RunStatus
from store import open_store
from store.records import Away
from store.records import Envelope
from store.records import LearnedRule
from tests.unit.test_binding_cards import EARLIER
from tests.unit.test_blocks import make_approval

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
BOB = "U0BOB"
INTERACTIVE = frozenset(
    {"button", "static_select", "external_select", "users_select", "conversations_select",
     "channels_select", "overflow", "datepicker", "checkboxes", "radio_buttons"}
)  # fmt: skip
COMMAND = "/runs"
EVENT = "app_home_opened"


def run() -> Run:
    """Run "order-4471" (see `support.records`) as riley asked for it, waiting at step 2."""
    return a_run(
        task="Refund order 4471",
        requested_by="U0RILEY",
        step=2,
        status=RunStatus.WAITING_APPROVAL,
    )


def approval(**changes: Any) -> Approval:
    """The blocks tests' refund approval, as riley asked for it an hour ago by the default
    policy."""
    asked: dict[str, Any] = {
        "id": "apr_1",
        "policy": "default",
        "requested_by": "U0RILEY",
        "created_at": AT - timedelta(hours=1),
    }
    return make_approval(**(asked | changes))


def conflicted() -> Approval:
    """An approval whose refund another run already made (the binding cards' conflict)."""
    return approval(id="apr_2", conflict=EARLIER)


def decided() -> Approval:
    return approval(id="apr_3", state=ApprovalState.APPROVED, decided_by=BOB, decided_at=AT)


def page(reason: str = "in_doubt") -> Page:
    return Page(
        id=f"pg_{reason}",
        reason=reason,
        run_id="order-4471",
        call_id="call_1",
        tool="issue_refund",
        detail="issue_refund may or may not have happened.",
    )


def proposal(*, declined: bool) -> Proposal:
    tested = Backtest(tool="issue_refund", condition="args.amount_cents <= 2500", considered=3)
    return Proposal(
        tool="issue_refund",
        condition="args.amount_cents <= 2500",
        expiry=timedelta(days=7),
        max_expiry=timedelta(days=30),
        ceiling=None,
        needs_second=declined,
        backtest=tested,
    )


def everything() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every message, reply and view the app builds, in each variant that changes its
    buttons."""
    pending, pages = [approval(), conflicted()], [page(), page("no_compensator")]
    for name, shown in (("plain", approval()), ("conflict", conflicted()), ("done", decided())):
        yield f"card {name}", cards.approval_message(shown, run())
        yield (
            f"card {name} editable, similar",
            cards.approval_message(shown, run(), allow_edit=True, similar=True),
        )
        yield f"card {name} budget", cards.approval_message(shown, run(), envelope=True)
    yield "card quorum", cards.approval_message(approval(required_approvals=2), run())
    cooling = decided().model_copy(
        update={"cool_off": "waiting", "cool_off_until": AT + timedelta(minutes=5)}
    )
    yield "card in its cool-off", cards.approval_message(cooling, run(), now=AT)
    ran = decided().model_copy(
        update={
            "cool_off": "ran",
            "ran_outcome": "completed",
            "undo_until": AT + timedelta(hours=1),
        }
    )
    yield "card in its undo window", cards.approval_message(ran, run(), now=AT)
    for shown in pages:
        yield f"page {shown.reason}", page_cards.page_message(shown, run(), allow_resolve=True)
        yield f"page {shown.reason} no resolvers", page_cards.page_message(shown, run())
    acknowledged = page().model_copy(update={"acknowledged_by": BOB, "acknowledged_at": AT})
    yield "page acknowledged", page_cards.page_message(acknowledged, run(), allow_resolve=True)
    yield "decline modal", replies.decline_modal(approval())
    yield "edit modal", replies.edit_modal(approval())
    yield "edit modal too long", replies.edit_modal(approval(args={"x": "y" * 4000}))
    yield "ask modal", replies.ask_modal(approval())
    yield "batch modal", batch.batch_modal("issue_refund", [approval(), approval()])
    yield "/runs help", replies.runs_help()
    yield "/runs unknown", replies.unknown_command("frobnicate")
    yield "/runs not found", replies.not_found("run", "nope")
    yield "/runs refusal", replies.refusal("no")
    yield "/runs status", replies.run_status(run(), pending, pages)
    yield "/runs list", replies.run_list([run()], status=None, more=2)
    yield "/runs pending", replies.pending_list(pending, more=1)
    checkpoint = Checkpoint.opening("order-4471", [Message(role="user", content="Refund")])
    yield "/runs history", replies.run_history(run(), [checkpoint])
    for resolver in (False, True):
        yield (
            f"home resolver={resolver}",
            home_view(
                pending=pending,
                pages=pages,
                requests=pending,
                decisions=[decided()],
                now=AT,
                resolver=resolver,
            ),
        )
    yield (
        "home empty",
        home_view(pending=[], pages=[], requests=[], decisions=[], now=AT, resolver=False),
    )
    gone = Away(person=BOB, until=AT + timedelta(days=3), delegate="U0CAROL", set_at=AT)
    for absence in (Absence(), Absence(gone), Absence(covering=(gone,))):
        yield (
            f"home {absence}",
            home_view(
                pending=[], pages=[], requests=[], decisions=[], now=AT, resolver=False,
                absence=absence,
            ),
        )  # fmt: skip
    yield "away modal", away_view.away_modal(AT)
    for declined in (False, True):
        proposed = proposal(declined=declined)
        tested = (None, proposed.backtest)
        for shown in tested:
            yield (
                f"rule modal {declined} {'tested' if shown else 'backtest running'}",
                similar.rule_modal("apr_1", proposed, channel="C0APPROVALS", tested=shown),
            )
    rule = LearnedRule(
        id="rule_1",
        tool="issue_refund",
        condition="args.amount_cents <= 2500",
        **proposed_by_bob("small refunds", lasts=timedelta(days=7)),
    )
    yield "rule confirm", similar.confirm_request(rule)
    yield "/runs rules", similar.rules_reply([])
    yield from envelope_views()


def proposed_by_bob(reason: str, lasts: timedelta) -> dict[str, Any]:
    """A learned rule's or a budget's proposal: Bob's at AT, waiting for a second writer."""
    return {
        "author": BOB,
        "reason": reason,
        "state": "proposed",
        "needs_second": True,
        "created_at": AT,
        "expires_at": AT + lasts,
    }


def envelope_views() -> Iterator[tuple[str, dict[str, Any]]]:
    budget = Envelope(
        id="env_1",
        tool="issue_refund",
        condition="args.amount_cents <= 50000",
        amount="args.amount_cents",
        max_amount=200_000,
        **proposed_by_bob("outage", lasts=timedelta(hours=8)),
    )
    yield "budget confirm", envelopes.confirm_request(budget)
    for state in ("active", "revoked"):
        shown = budget.model_copy(update={"state": state})
        yield f"budget {state}", envelopes.live_message(shown, "USD", AT)
    yield (
        "budget modal",
        envelopes.envelope_modal(
            "apr_1",
            "issue_refund",
            "args.amount_cents <= 50000",
            currency="USD",
            amount="args.amount_cents",
            channel="C0APPROVALS",
            default_until="8h",
        ),
    )


def ids_in(node: Any) -> tuple[set[str], set[str]]:
    """The action ids of the interactive elements and the callback ids of the modals (an
    element of an input block is read with the modal's submission, not clicked)."""
    actions: set[str] = set()
    modals: set[str] = set()
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in INTERACTIVE or (kind == "plain_text_input" and node.get("dispatch_action")):
            actions.add(str(node["action_id"]))
        if kind == "modal":
            modals.add(str(node["callback_id"]))
        children: list[Any] = list(node.values())
        if kind == "input" and not node.get("dispatch_action"):
            # a modal's input (a select, radio buttons) sends nothing until the submission
            children = [v for k, v in node.items() if k != "element"]
    elif isinstance(node, list):
        children = node
    else:
        children = []
    for child in children:
        more_actions, more_modals = ids_in(child)
        actions |= more_actions
        modals |= more_modals
    return actions, modals


def built_ids() -> tuple[set[str], set[str]]:
    actions: set[str] = set()
    modals: set[str] = set()
    for _, built in everything():
        found_actions, found_modals = ids_in(built)
        actions |= found_actions
        modals |= found_modals
    return actions, modals


def click(action_id: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": BOB},
        "team": {"id": "T0SIGNOFF"},
        "actions": [{"action_id": action_id, "block_id": "b", "value": "v", "type": "button"}],
    }


def submission(callback_id: str) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "user": {"id": BOB},
        "team": {"id": "T0SIGNOFF"},
        "view": {"type": "modal", "callback_id": callback_id, "state": {"values": {}}},
    }


def command() -> dict[str, Any]:
    return {"command": COMMAND, "text": "", "user_id": BOB, "team_id": "T0SIGNOFF"}


def event() -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": "T0SIGNOFF",
        "event": {"type": EVENT, "user": BOB, "tab": "home"},
    }


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[AsyncApp]:
    """The bolt App `signoff serve` builds, with every optional button turned on."""
    store = await open_store(f"sqlite:///{tmp_path / 'ids.db'}")
    settings = Settings(
        slack_bot_token="xoxb-test",
        slack_signing_secret="secret",
        slack_api_url="http://127.0.0.1:9/api/",
        page_resolvers=[BOB],
        learned_rules=SlackLearnedRules(writers=(BOB,)),
    )
    background = Background()
    surface = slack_surface(settings, Runtime(store), background, OutboxNudge())
    yield surface.app
    await background.drain()
    await store.close()


async def listeners_for(app: AsyncApp, body: dict[str, Any]) -> int:
    """How many of the App's listeners bolt would hand this request to."""
    request = AsyncBoltRequest(body=body, mode="socket_mode")
    response = BoltResponse(status=200)
    # bolt keeps its listeners in this list; it has no public accessor
    return sum([await listener.async_matches(req=request, resp=response)
                for listener in app._async_listeners])  # fmt: skip


def test_the_table_is_every_id_the_builders_use() -> None:
    actions, modals = built_ids()

    assert actions == {a.value for a in Action}
    assert modals == {m.value for m in Modal}


async def test_every_button_and_modal_has_exactly_one_listener(app: AsyncApp) -> None:
    actions, modals = built_ids()
    bodies = [click(a) for a in actions] + [submission(m) for m in modals]

    unheard = [b for b in bodies if await listeners_for(app, b) != 1]

    assert unheard == []


async def test_every_listener_has_a_button_a_modal_the_command_or_the_event(
    app: AsyncApp,
) -> None:
    actions, modals = built_ids()
    bodies = [click(a) for a in actions] + [submission(m) for m in modals]
    bodies += [command(), event()]
    request_of = [AsyncBoltRequest(body=b, mode="socket_mode") for b in bodies]
    response = BoltResponse(status=200)

    idle = []
    for listener in app._async_listeners:
        if not any([await listener.async_matches(req=r, resp=response) for r in request_of]):
            idle.append(listener.ack_function)

    assert idle == []
    assert len(app._async_listeners) == len(Action) + len(Modal) + 2


def dev_clicks() -> Iterator[tuple[str, dict[str, Any]]]:
    """What the `signoff dev` page posts for a click on every button the builders make, with
    the block id it sits in, from a channel message and from a `/runs` reply (ephemeral)."""
    for name, built in everything():
        for block in built.get("blocks", []):
            for element in [*block.get("elements", []), block.get("accessory") or {}]:
                if element.get("type") not in INTERACTIVE:
                    continue
                for ephemeral in (False, True):
                    order = {
                        "channel": "C0APPROVALS",
                        "ts": "" if ephemeral else "1700000000.000100",
                        "action_id": element["action_id"],
                        "value": element.get("value", ""),
                        "block_id": block.get("block_id", ""),
                        "ephemeral": ephemeral,
                    }
                    yield (
                        name,
                        click_payload(
                            BOB, order, trigger="dev-1", response_url="http://127.0.0.1:9/r"
                        ),
                    )


async def test_every_button_the_dev_page_shows_is_heard_as_slack_would_hear_it(
    app: AsyncApp,
) -> None:
    """The dev page draws the same blocks and posts its own payload for a click: each such
    click, on a card or on a `/runs` reply, reaches exactly one listener, and every action
    id is among the clicks (so no dev-page button goes unheard)."""
    clicks = list(dev_clicks())

    unheard = [(name, c["actions"][0]["action_id"]) for name, c in clicks
               if await listeners_for(app, c) != 1]  # fmt: skip

    assert unheard == []
    assert {c["actions"][0]["action_id"] for _, c in clicks} == {a.value for a in Action}
    assert all(c["actions"][0]["block_id"] for _, c in clicks)  # sent with its block, as Slack


def test_the_buttons_the_dev_page_waits_on_for_a_modal_are_buttons_it_shows() -> None:
    """The page waits for a modal after the clicks `OPENS_MODAL` names: each must be a
    button the builders make (a stale name would leave a button that opens nothing)."""
    actions, _ = built_ids()

    assert {a.value for a in OPENS_MODAL} <= actions


async def test_the_check_can_fail(app: AsyncApp) -> None:
    """An id no listener knows is not matched (so the checks above can fail)."""
    assert await listeners_for(app, click("approve_everything")) == 0
    assert await listeners_for(app, submission("no_such_modal")) == 0
    assert ids_in(cards.approval_message(approval(), run()))[0] == {"approve", "ask", "decline"}

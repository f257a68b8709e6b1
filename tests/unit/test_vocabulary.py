"""One vocabulary (`bot.words`): every state of a run, an approval and a page, rendered on
every surface that shows it (Slack blocks, CLI tables, the console's JSON), says the
vocabulary's word; every refusal says the vocabulary's sentence on Slack, the CLI and the API;
a tool's display is what people read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from rich.console import Console
from support.records import a_page
from support.records import a_run
from support.records import an_approval

from bot import reading
from bot import views
from bot import words
from bot.console import timeline
from bot.http_errors import refusal as api_refusal
from bot.settle import refusal_text
from bot.slack import action_text
from bot.slack import cards
from bot.slack import page_cards
from bot.slack import replies
from bot.slack.home_view import home_view
from bot.slack.refusals import refusal as slack_refusal
from examples.refund_agent import issue_refund
from runtime import Display
from runtime import errors
from runtime import tool
from runtime.errors import DefinitionError
from store import Approval
from store import ApprovalState
from store import Page
from store import Run
from store import RunStatus

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ARGS = {"order_id": "4471", "amount_cents": 2500, "restocking_fee_cents": 0}


def make_run(**changes: Any) -> Run:
    fields: dict[str, Any] = {"id": "r1", "task": "Refund 4471", "step": 2, "created_at": AT}
    return a_run(**(fields | changes))


def make_approval(**changes: Any) -> Approval:
    fields: dict[str, Any] = {
        "id": "ap1",
        "args": ARGS,
        "run_id": "r1",
        "requested_by": "U0RILEY",
        "created_at": AT,
    }
    return an_approval(**(fields | changes))


def make_page(**changes: Any) -> Page:
    fields: dict[str, Any] = {
        "run_id": "r1",
        "reason": "uncompensatable",
        "detail": "the e-mail was sent",
        "created_at": AT,
    }
    return a_page(**(fields | changes))


RUNS = [
    (make_run(status=RunStatus.RUNNING), False, "running"),
    (
        make_run(status=RunStatus.WAITING_APPROVAL, stop_reason="waiting_approval"),
        False,
        "waiting_approval",
    ),
    (
        make_run(status=RunStatus.WAITING_APPROVAL, stop_reason="waiting_approval"),
        True,
        "ready to resume",
    ),
    (make_run(status=RunStatus.DONE, stop_reason="answered"), False, "done"),
    (make_run(status=RunStatus.FAILED, stop_reason="error", error="boom"), False, "failed"),
    (make_run(status=RunStatus.FAILED, stop_reason="step_budget"), False, "failed (out of steps)"),
    (make_run(status=RunStatus.FAILED, stop_reason="rolled_back"), False, "rolled back"),
    (make_run(status=RunStatus.CANCELLED, stop_reason="cancelled"), False, "cancelled"),
    # Runs that answered without doing what was asked: never "done".
    (make_run(status=RunStatus.DONE, stop_reason="declined"), False, "declined"),
    (make_run(status=RunStatus.DONE, stop_reason="expired"), False, "expired"),
    (
        make_run(
            status=RunStatus.DONE,
            stop_reason="tool_failed",
            error="delete_customer: CrmUnavailable: the CRM answered 503",
        ),
        False,
        "failed (a tool failed)",
    ),
]
APPROVALS = [
    (make_approval(), "pending"),
    (make_approval(state="approved", decided_by="U0BOB", decided_at=AT), "approved"),
    (make_approval(state="declined", decided_by="U0BOB", decided_at=AT, reason="no"), "declined"),
    (
        make_approval(state="declined", decided_by="system", decided_at=AT, reason="expired"),
        "expired",
    ),
    (
        make_approval(
            state="declined",
            decided_by="system",
            decided_at=AT,
            reason="withdrawn: run rolled back by U0OPS",
        ),
        "withdrawn",
    ),
]
PAGES = [
    (make_page(), "open"),
    (make_page(acknowledged_by="U0BOB", acknowledged_at=AT), "acknowledged"),
]


def slack_text(message: dict[str, Any]) -> str:
    """Every word a person reads in a Slack message: fallback text and each text object."""
    found: list[str] = [message.get("text", "")]

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text"):
                yield node["text"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    found += walk(message.get("blocks", []))
    return "\n".join(found)


def terminal(table: Any) -> str:
    console = Console(record=True, width=250, color_system=None)
    console.print(table)
    return console.export_text()


def test_the_vocabulary_names_every_stored_state() -> None:
    assert set(words.RUN_STATES) == {s.value for s in RunStatus}
    assert set(words.APPROVAL_STATES) == {s.value for s in ApprovalState}
    assert {r[2] for r in RUNS} <= {
        *words.RUN_STATES.values(),
        *words.DERIVED_RUN_STATES,
        *words.OUTCOMES,
        "failed (out of steps)",
        "failed (a tool failed)",
    }
    assert {a[1] for a in APPROVALS} == {*words.APPROVAL_STATES, *words.DERIVED_APPROVAL_STATES}
    assert {p[1] for p in PAGES} == set(words.PAGE_STATES)


@pytest.mark.parametrize(("run", "decided", "word"), RUNS, ids=[r[2] + str(r[1]) for r in RUNS])
def test_every_run_state_reads_the_same_on_every_surface(
    run: Run, decided: bool, word: str
) -> None:
    assert words.state_of_run(run, decided=decided) == word
    listed = slack_text(
        replies.run_list([run], status=None, more=0, decided={"r1"} if decided else ())
    )
    status = slack_text(replies.run_status(run, [], [], decided=decided))
    cli_list = terminal(views.runs_table([run], decided={"r1"} if decided else ()))
    cli_show = terminal(views.run_table(run, [], [], votes={}, decided=decided))
    console = timeline.run_summary(run, AT, decided=decided)["label"]
    for surface, shown in {
        "/runs list": listed,
        "/runs status": status,
        "runs list": cli_list,
        "runs show": cli_show,
        "console": console,
    }.items():
        assert word in shown.replace("\u2060", ""), (surface, shown)
        assert "rolled_back" not in shown, (surface, shown)  # never the stored reason
    if decided:  # and how it goes on
        assert "signoff runs resume" in listed
        assert "signoff runs resume" in status
    outcome = words.outcome_of(run)
    if outcome is not None:  # an ended run: its thread note, its card, its requester's Home
        approval = make_approval(state="approved", decided_by="U0BOB", decided_at=AT)
        ended = {
            "thread note": cards.run_note(run, [approval]),
            "card": slack_text(cards.approval_message(approval, run)),
            "Home": slack_text(home_of(requests=[approval], runs={"r1": run})),
            "console": timeline.run_summary(run, AT)["outcome"],
        }
        for surface, shown in ended.items():
            assert outcome in shown, (surface, shown)
        assert ended["thread note"] in ended["card"]  # the card says it as the thread does
        for surface in ("thread note", "Home"):  # a check mark only for a run that did it
            shown = ended[surface]
            assert (":white_check_mark:" in shown) == (outcome == words.DONE), (surface, shown)
        if run.error:  # the error is said where the run is shown whole
            for shown in (ended["thread note"], status, cli_show):
                assert run.error.split(":")[-1].strip() in shown.replace("\u2060", ""), shown


@pytest.mark.parametrize(("approval", "word"), APPROVALS, ids=[a[1] for a in APPROVALS])
def test_every_approval_state_reads_the_same_on_every_surface(
    approval: Approval, word: str
) -> None:
    assert words.approval_state(approval) == word
    card = slack_text(cards.approval_message(approval, make_run()))
    outcome = cards.outcome_line(approval)
    cli = terminal(views.approvals_table([approval], {}))
    console = timeline.approval_view(approval)["label"]
    assert word in outcome.lower(), outcome
    if approval.state == ApprovalState.PENDING:  # a pending card asks: its buttons
        assert "Approve" in card
    else:
        assert word in card.lower(), card
    assert word in cli, cli
    assert console == word
    homes = [slack_text(home_of(requests=[approval]))]  # the requester's Home
    if approval.decided_by:  # and the decider's
        homes.append(slack_text(home_of(decisions=[approval])))
    for home in homes:
        assert word in home, home
    if approval.state == ApprovalState.PENDING:  # the approver's: what waits, and buttons
        assert "Approve" in slack_text(home_of(pending=[approval]))


def home_of(**rows: Any) -> dict[str, Any]:
    """A Home tab (`views.publish`'s view) with these rows, read as a message's blocks."""
    sections = {"pending": [], "pages": [], "requests": [], "decisions": []} | rows
    view = home_view(**sections, now=AT, resolver=True)
    return {"blocks": view["blocks"]}


@pytest.mark.parametrize(("page", "word"), PAGES, ids=[p[1] for p in PAGES])
def test_every_page_state_reads_the_same_on_every_surface(page: Page, word: str) -> None:
    assert words.page_state(page) == word
    slack = slack_text(replies.run_status(make_run(), [], [page]))
    if page.acknowledged_by:
        slack = slack_text(page_cards.page_message(page, make_run()))
    cli = terminal(views.pages_table([page]))
    if not page.acknowledged_by:  # the Home lists the open ones
        assert word in slack_text(home_of(pages=[page])).lower()
    assert word in slack.lower(), slack
    assert word in cli, cli
    assert timeline.page_view(page)["label"] == word


def test_the_pages_list_offers_nothing_to_settle_when_nothing_is_left() -> None:
    settled = terminal(views.pages_table([make_page(acknowledged_by="U0BOB")]))
    assert "to settle" not in settled
    assert "to settle" in terminal(views.pages_table([make_page(reason="in_doubt")]))


def test_a_decided_card_keeps_the_step_it_was_asked_at() -> None:
    pending = slack_text(cards.approval_message(make_approval(), make_run(), step=2))
    declined = make_approval(state="declined", decided_by="U0BOB", decided_at=AT, reason="no")
    after = slack_text(cards.approval_message(declined, make_run(step=3), step=2))
    assert words.step(2) in pending
    assert words.step(2) in after
    assert words.step(3) not in after


REFUSALS: list[BaseException] = [
    errors.ApprovalExpired("expired"),
    errors.AlreadyDecided("x", approval=APPROVALS[1][0]),
    errors.NotAnApprover("x", approval=make_approval(), by="U0EVE"),
    errors.NotAnApprover("x", approval=make_approval(), by="U0RILEY"),
    errors.SelfApproval("x", approval=make_approval(), by="U0RILEY"),
    errors.AlreadyVoted("U0ANN already approved ap1; it waits for 1 more approver(s)", by="U0ANN"),
    errors.EditRefused("policy 'default' does not allow editing arguments"),
    errors.ApprovalNotFound("no approval 'ap9'", ident="ap9"),
    errors.PageNotFound("no page 'pg9'", ident="pg9"),
    errors.AlreadyAcknowledged("x", page=PAGES[1][0]),
]


def _bare(text: str) -> str:
    """A sentence without how each surface writes people and names: the words alone."""
    text = re.sub(r"<!date\^[^|>]*\|([^>]*)>", r"\1", text)
    text = re.sub(r"<@(U[A-Z0-9]+)>", r"\1", text).replace("\u2060", "")
    text = re.sub(r"`([^`]*)`|'([^']*)'", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"^You are\b", "WHO is", re.sub(r"^U[A-Z0-9]+ is\b", "WHO is", text))
    return re.sub(r"^You\b", "WHO", re.sub(r"^U[A-Z0-9]+\b", "WHO", text))


@pytest.mark.parametrize("exc", REFUSALS, ids=lambda e: type(e).__name__)
def test_every_refusal_is_one_sentence_on_slack_the_cli_and_the_api(exc: Exception) -> None:
    slack = slack_refusal(exc)
    cli = refusal_text(exc)
    answer = api_refusal(exc)  # type: ignore[arg-type]
    api = json.loads(answer.text or "{}")["error"] if answer is not None else cli
    assert _bare(slack) == _bare(cli) == _bare(api), (slack, cli, api)


def test_a_requester_is_told_the_same_whether_or_not_they_are_an_approver() -> None:
    mine = make_approval()
    not_listed = errors.NotAnApprover("x", approval=mine, by="U0RILEY")
    listed = errors.SelfApproval("x", approval=mine, by="U0RILEY")
    for say in (slack_refusal, refusal_text):
        assert say(not_listed) == say(listed)
        assert "self-approval" in say(listed)
        assert "not an approver" not in say(not_listed)
    assert slack_refusal(listed).startswith("You asked for this action")
    assert refusal_text(listed).startswith("U0RILEY asked for this action")


def test_modal_words_name_people_and_glyphs_are_emoji_codes() -> None:
    decided = cards.outcome_line(APPROVALS[1][0])
    assert decided.startswith(":white_check_mark: Approved by <@U0BOB>")
    for message in (cards.approval_message(a, make_run()) for a, _ in APPROVALS):
        assert not re.search(r"[\u2190-\u2BFF\U0001F000-\U0001FAFF]", slack_text(message))


# what people read


DISPLAY = issue_refund.display


def test_a_display_reads_money_links_and_a_title() -> None:
    assert DISPLAY is not None
    assert reading.title(DISPLAY, ARGS) == "Refund $25.00 on order 4471"
    assert reading.money(DISPLAY, "amount_cents", ARGS) == "$25.00"
    assert reading.link(DISPLAY, "order_id", {"order_id": "44/71?x"}) == (
        "https://shop.example/orders/44%2F71%3Fx"
    )
    by_arg = Display(money={"total": "currency"})
    assert reading.money(by_arg, "total", {"total": 123456, "currency": "eur"}) == "€1,234.56"
    assert reading.money(by_arg, "total", {"total": 500, "currency": "JPY"}) == "¥500"
    assert reading.money(by_arg, "total", {"total": 999, "currency": "CHF"}) == "9.99 CHF"
    assert reading.money(by_arg, "total", {"total": "[sensitive]", "currency": "USD"}) is None


def test_cards_modals_and_runs_replies_read_the_display() -> None:
    approval = make_approval()
    card = cards.approval_message(approval, make_run(), display=DISPLAY)
    assert card["blocks"][0]["text"]["text"] == "Refund $25.00 on order 4471"
    fields = [f["text"] for f in card["blocks"][2]["fields"]]
    assert any("<https://shop.example/orders/4471|4471>" in f for f in fields), fields
    assert any(f.endswith("\n$25.00") for f in fields), fields
    modal = slack_text(replies.decline_modal(approval, DISPLAY))
    assert "Refund $25.00 on order 4471" in modal
    pending = slack_text(
        replies.pending_list([approval], more=0, displays={"issue_refund": DISPLAY})
    )
    assert "Refund $25.00 on order 4471" in pending
    assert action_text.action_summary("issue_refund", ARGS) == "issue_refund 2500 cents on 4471"


def test_a_display_naming_an_argument_the_tool_lacks_is_refused() -> None:
    def refund(order_id: str) -> None: ...

    with pytest.raises(DefinitionError, match="'amount'"):
        tool(refund, effect="read", display=Display(title="Refund {amount}"))
    with pytest.raises(DefinitionError, match="'usd'"):
        tool(refund, effect="read", display=Display(money={"order_id": "usd"}))

"""A Slack click on a card whose policy says `step_up = "passkey"` (issue 43.3): Approve,
signed as Slack signs it, decides nothing; the clicker alone is told where to confirm (an
ephemeral message in the channel, or their Home when they clicked there), with the link to
that approval on the approvals page; the approval stays pending, with no vote and no audit
event, until the approver confirms with their passkey on that page, which decides it.

The bolt app `signoff serve` runs, in the test's process against the fake Slack; the page
beside it on the same runtime, signed in through a real OpenID Connect provider, with a
passkey in software (`support.soft_passkey`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import oidc_provider
from support.passkey_pages import PageApp
from support.passkey_pages import approve
from support.passkey_pages import csrf
from support.passkey_pages import page_apps
from support.passkey_pages import register
from support.passkey_pages import sign_in
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app
from support.soft_passkey import SoftPasskey

from bot.slack.escape import WORD_JOINER
from runtime import Policies
from runtime import Policy

pytestmark = pytest.mark.slow  # a real provider in its own process

STEP_UP = Policies(default=Policy(approvers=(BOB,), step_up="passkey"))


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[PageApp]:
    with oidc_provider(tmp_path) as issuer:
        async with page_apps(f"sqlite:///{tmp_path / 'signoff.db'}", issuer, STEP_UP, count=1) as [
            app
        ]:
            yield app


@pytest.fixture
async def slack(page: PageApp) -> AsyncIterator[Slack]:
    async with slack_app(page.rt, page_url=page.base) as app:
        yield app


def home_click(approval_id: str) -> dict[str, object]:
    """Approve on the approval's row in the clicker's App Home (no channel there)."""
    payload = click(approval_id, user=BOB)
    payload.pop("channel")
    payload["container"] = {"type": "view", "view_id": "V0HOME"}
    payload["view"] = {"id": "V0HOME", "type": "home", "blocks": []}
    return payload


async def test_approve_on_a_step_up_card_links_to_the_page_and_decides_nothing(
    page: PageApp, slack: Slack
) -> None:
    approval, _ = await page.rt.request_approval(
        "issue_refund", {"order_id": "o1", "amount_cents": 5_000_000}, requested_by="U0REQ"
    )
    link = f"{page.base}/approvals/{approval.id}"

    status, _, _ = await slack.send(click(approval.id, user=BOB))
    assert status == 200
    status, _, _ = await slack.send(home_click(approval.id))
    assert status == 200
    await slack.background.drain()

    [told] = [e for e in slack.fake.ephemerals if e.user == BOB]
    assert f"<{link}|" in told.text
    assert "passkey" in told.text
    [home] = [v.view for v in slack.fake.views if v.method == "views.publish" and v.user_id == BOB]
    shown = json.dumps(home["blocks"]).replace(WORD_JOINER, "")
    assert link in shown
    assert "passkey" in shown

    still = await page.rt.queries.approval(approval.id)
    assert (still.state, still.decided_by) == ("pending", None)
    assert await page.rt.queries.votes(approval.id) == []
    trail = await page.rt.queries.audit(approval_id=approval.id)
    assert [e.action for e in trail if e.action.startswith("approval_")] == ["approval_requested"]

    # the link's page, with bob's passkey, decides it
    passkey = SoftPasskey()
    async with httpx.AsyncClient(timeout=30) as bob:
        await sign_in(bob, page.base, BOB_MAIL)
        token = await csrf(bob, page.base)
        assert "Approve with your passkey" in (await bob.get(link)).text
        await register(bob, page.base, page.base, token, passkey, origin=page.base)
        (status, said), _ = await approve(
            bob, page.base, page.base, token, passkey, approval.id, origin=page.base
        )
    assert status == 200, said
    decided = await page.rt.queries.approval(approval.id)
    assert (decided.state, decided.decided_by) == ("approved", BOB)

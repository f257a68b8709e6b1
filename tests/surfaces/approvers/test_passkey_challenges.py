"""Passkey challenges are the database's, not a process's (issue 43.3): with two instances of
the approvals page over one database (two `signoff serve` behind one address, or one
restarted between the challenge and the answer), a challenge one instance issued is
verified by the other, once: the same answer sent again, to either, or for another
approval, is refused and changes nothing; sent to both at once, one takes it. On SQLite and
on PostgreSQL, signed in through a real OpenID Connect provider, with a passkey in software
(`support.soft_passkey`) answering as a browser would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from support.approvers_support import BOB
from support.approvers_support import BOB_MAIL
from support.approvers_support import oidc_provider
from support.passkey_pages import PageApp
from support.passkey_pages import approve
from support.passkey_pages import ceremony
from support.passkey_pages import csrf
from support.passkey_pages import page_apps
from support.passkey_pages import register
from support.passkey_pages import sign_in
from support.pg_support import HAVE_ASYNCPG
from support.pg_support import fresh_schema
from support.soft_passkey import SoftPasskey

from runtime import Policies
from runtime import Policy

pytestmark = pytest.mark.slow  # a real provider in its own process

STEP_UP = Policies(default=Policy(approvers=(BOB,), step_up="passkey"))
QUORUM_STEP_UP = Policies(
    default=Policy(approvers=(BOB, "U0ANN"), required_approvals=2, step_up="passkey")
)
BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.skipif(not HAVE_ASYNCPG, reason="no asyncpg")),
]


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'signoff.db'}"
        return
    async with fresh_schema("approvers_challenges") as url:
        yield url


@pytest.fixture
async def two(db_url: str, tmp_path: Path) -> AsyncIterator[list[PageApp]]:
    with oidc_provider(tmp_path) as issuer:
        async with page_apps(db_url, issuer, STEP_UP) as apps:
            yield apps


async def approvals_approved(app: PageApp, approval_id: str) -> int:
    trail = await app.rt.queries.audit(approval_id=approval_id)
    return [e.action for e in trail].count("approval_approved")


async def test_a_challenge_from_one_instance_is_verified_by_the_other_once(
    two: list[PageApp],
) -> None:
    first, second = two
    origin = first.base  # the one address both stand behind
    passkey = SoftPasskey()
    async with httpx.AsyncClient(timeout=30) as bob:
        await sign_in(bob, first.base, BOB_MAIL)
        token = await csrf(bob, second.base)  # the session is good on both

        # registering: the options from the first, the answer to the second
        await register(bob, first.base, second.base, token, passkey, origin=origin)
        assert [p.id for p in await first.rt.passkeys(BOB)] == [passkey.id]

        # approving: the options from the second, the answer to the first
        approval, _ = await first.rt.request_approval(
            "issue_refund", {"order_id": "o1"}, requested_by="U0REQ"
        )
        (status, said), answer = await approve(
            bob, second.base, first.base, token, passkey, approval.id, origin=origin
        )
        assert status == 200, said
        assert "Approved by U0BOB" in said["message"]
        decided = await second.rt.queries.approval(approval.id)
        assert (decided.state, decided.decided_by) == ("approved", BOB)

        # the same answer again, to either instance: refused, nothing changes
        url = f"/approvals/{approval.id}/passkey"
        for instance in (first, second):
            status, said = await ceremony(bob, instance.base + url, token, {"credential": answer})
            assert status == 400
            assert "used already" in said["message"], said
        assert await approvals_approved(first, approval.id) == 1


async def test_an_answer_for_another_approval_is_refused_and_two_at_once_count_once(
    two: list[PageApp],
) -> None:
    first, second = two
    origin = first.base
    passkey = SoftPasskey()
    async with httpx.AsyncClient(timeout=30) as bob:
        await sign_in(bob, first.base, BOB_MAIL)
        token = await csrf(bob, first.base)
        await register(bob, second.base, first.base, token, passkey, origin=origin)
        one, _ = await first.rt.request_approval("issue_refund", {"order_id": "o2"})
        other, _ = await first.rt.request_approval("issue_refund", {"order_id": "o3"})

        # an answer made for one approval, sent for another: refused, and spent
        (status, said), answer = await approve(
            bob, first.base, second.base, token, passkey, other.id, origin=origin
        )
        assert status == 200, said  # (`other` approved with it: the answer is now `used`)
        mine = f"/approvals/{one.id}/passkey"
        status, said = await ceremony(bob, second.base + mine, token, {"credential": answer})
        assert status == 400
        assert "used already" in said["message"], said
        assert (await first.rt.queries.approval(one.id)).state == "pending"

        # a fresh answer sent to both instances at once: one takes it
        options = await ceremony(bob, first.base + mine + "/options", token)
        assert options[0] == 200, options
        fresh = passkey.get(options[1]["options"], origin)
        both = await asyncio.gather(
            *(
                ceremony(bob, instance.base + mine, token, {"credential": fresh})
                for instance in (first, second)
            )
        )
        assert sorted(status for status, _ in both) == [200, 400], both
        assert await approvals_approved(second, one.id) == 1


async def test_a_passkey_vote_short_of_its_quorum_says_what_it_waits_for(tmp_path: Path) -> None:
    """The same sentence as the approvals page and the e-mailed link (`html.counted`)."""
    db_url = f"sqlite:///{tmp_path / 'signoff.db'}"
    with oidc_provider(tmp_path) as issuer:
        async with page_apps(db_url, issuer, QUORUM_STEP_UP, count=1) as [app]:
            passkey = SoftPasskey()
            async with httpx.AsyncClient(timeout=30) as bob:
                await sign_in(bob, app.base, BOB_MAIL)
                token = await csrf(bob, app.base)
                await register(bob, app.base, app.base, token, passkey, origin=app.base)
                approval, _ = await app.rt.request_approval(
                    "issue_refund", {"order_id": "o1"}, requested_by="U0REQ"
                )
                (status, said), _ = await approve(
                    bob, app.base, app.base, token, passkey, approval.id, origin=app.base
                )
            assert status == 200, said
            assert said["message"] == "Your approval is counted; it waits for 2 in all."
            assert await app.rt.votes(approval.id) == [BOB]

"""SlackDirectory against a local fake of Slack's Web API (usergroups.users.list)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.directory import SlackDirectory
from bot.directory import web_client
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime.errors import NotAnApprover
from store import ApprovalState
from store import Store

FIXTURES = Path(__file__).parents[2] / "fixtures" / "slack"
RATELIMITED = json.loads((FIXTURES / "ratelimited.429.json").read_text())


@dataclass
class FakeSlack:
    """Answers usergroups.users.list like Slack: form body, token check, 429 when told."""

    groups: dict[str, list[str]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    rate_limit_next: int = 0
    fail_next: int = 0

    async def usergroups_users_list(self, request: web.Request) -> web.Response:
        form = request.query if request.method == "GET" else await request.post()
        self.calls.append(str(form.get("usergroup")))
        if request.headers.get("Authorization") != "Bearer xoxb-test":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if self.rate_limit_next:
            self.rate_limit_next -= 1
            return web.json_response(RATELIMITED, status=429, headers={"Retry-After": "0"})
        if self.fail_next:
            self.fail_next -= 1
            return web.json_response({"ok": False, "error": "no_such_subteam"})
        return web.json_response({"ok": True, "users": self.groups.get(str(form["usergroup"]), [])})


@pytest.fixture
async def slack() -> AsyncIterator[tuple[FakeSlack, str]]:
    fake = FakeSlack(groups={"S0FINANCE": ["U0ALICE", "U0BOB"]})
    app = web.Application()
    app.router.add_route("*", "/api/usergroups.users.list", fake.usergroups_users_list)
    server = TestServer(app)
    await server.start_server()
    yield fake, str(server.make_url("/api/"))
    await server.close()


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_members_come_from_slack_and_are_cached(slack: tuple[FakeSlack, str]) -> None:
    fake, url = slack
    ticks = Ticks()
    directory = SlackDirectory(web_client("xoxb-test", base_url=url), ttl=60, clock=ticks)
    assert await directory.members("S0FINANCE") == {"U0ALICE", "U0BOB"}
    assert await directory.members("S0FINANCE") == {"U0ALICE", "U0BOB"}
    assert fake.calls == ["S0FINANCE"]
    ticks.now = 61
    fake.groups["S0FINANCE"] = ["U0ALICE"]
    assert await directory.members("S0FINANCE") == {"U0ALICE"}
    assert fake.calls == ["S0FINANCE", "S0FINANCE"]


async def test_rate_limit_is_retried(slack: tuple[FakeSlack, str]) -> None:
    fake, url = slack
    fake.rate_limit_next = 2
    directory = SlackDirectory(web_client("xoxb-test", base_url=url))
    assert await directory.members("S0FINANCE") == {"U0ALICE", "U0BOB"}
    assert len(fake.calls) == 3


async def test_an_error_keeps_the_stale_answer_or_lets_nobody_in(
    slack: tuple[FakeSlack, str],
) -> None:
    fake, url = slack
    ticks = Ticks()
    directory = SlackDirectory(web_client("xoxb-test", base_url=url), ttl=10, clock=ticks)
    fake.fail_next = 1
    assert await directory.members("S0FINANCE") == frozenset()
    assert await directory.members("S0FINANCE") == {"U0ALICE", "U0BOB"}
    ticks.now = 11
    fake.fail_next = 1
    assert await directory.members("S0FINANCE") == {"U0ALICE", "U0BOB"}


async def test_group_members_may_decide_and_others_may_not(
    slack: tuple[FakeSlack, str], file_store: Store, world: Path
) -> None:
    from examples.refund_agent import agent

    _, url = slack
    directory = SlackDirectory(web_client("xoxb-test", base_url=url))
    policies = Policies(default=Policy(approvers=("S0FINANCE",)))
    rt = Runtime(file_store, [agent], policies=policies, directory=directory, worker_id="t")
    run_id = await rt.start(agent.name, "Refund order 4471", requested_by="U0REQ")
    [approval] = await rt.approvals(run_id, state=ApprovalState.PENDING)
    with pytest.raises(NotAnApprover):
        await rt.decide(approval.id, "approved", by="U0MALLORY")
    assert (await rt.desk.get(approval.id)).state == ApprovalState.PENDING
    decided = await rt.decide(approval.id, "approved", by="U0BOB")
    assert decided.state == ApprovalState.APPROVED
    assert (await rt.get(run_id)).status == "done"

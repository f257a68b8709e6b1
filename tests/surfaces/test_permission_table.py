"""One job, long because each door and permission has its row: the one permission table.

One permission table for every door (issue 39.2): every door x every permission x every
persona, walked from the one table below, gives the table's answer.

The doors are real: the HTTP API and the console over real HTTP (the app `signoff serve`
builds from `api_app` and `console.mount`), the bolt app's listeners with requests signed as
Slack signs them (its Web API a local fake), the `signoff` CLI as a subprocess on the same
SQLite file, and `Runtime.may` itself. Each case gets subjects of its own (a run parked on
an approval, a page about an effect in doubt, an approval an API token asked for), so an
allowed action never changes what the next case sees. A refusal must change nothing.

Every HTTP route the app serves and every Slack button needs a row (`HTTP`, `SLACK`): a new
one without a row fails `test_every_route_and_button_has_a_row`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.parse
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.request.async_request import AsyncBoltRequest
from support import SUPPORT
from support.api_support import token
from support.cool_off_agents import SEATS
from support.cool_off_agents import booking_agent
from support.cool_off_agents import seat_agent
from support.helpers import SIGNOFF
from support.helpers import clean_env
from support.permission_agents import asker
from support.permission_agents import doubter
from support.slack_inprocess import SECRET
from support.slack_inprocess import Slack
from support.slack_inprocess import click
from support.slack_inprocess import slack_app

from bot import console
from bot.api import api_app
from bot.slack.actions import Action
from bot.slack.inbound import Signature
from bot.tasks import Background
from runtime import Access
from runtime import Actor
from runtime import Approval
from runtime import Page
from runtime import Permission
from runtime import Policies
from runtime import Policy
from runtime import Run
from runtime import Runtime
from store import open_store

RILEY, BOB, EVE, CAROL = "U0RILEY", "U0BOB", "U0EVE", "U0CAROL"
PEOPLE = {"requester": RILEY, "approver": BOB, "outsider": EVE, "resolver": CAROL}
SECRETS = {"operator": "operator-secret", "read_only": "read-only-secret"}
ALL_SCOPES = ("runs:read", "runs:write", "approvals:request", "approvals:decide", "audit:read")
PERSONAS = ("requester", "approver", "outsider", "resolver", "operator", "read_only")

# The one table: who may, by permission and persona (Y may, N may not).
#                           requester approver outsider resolver operator read_only
TABLE_TEXT = {
    Permission.READ: "        Y         Y        N        Y        Y        Y",
    Permission.DECIDE: "      N         Y        N        N        N        N",
    Permission.SETTLE: "      N         N        N        Y        Y        N",
    Permission.ACKNOWLEDGE: " N         N        N        Y        Y        N",
    Permission.FORK: "        N         Y        N        N        Y        N",
    Permission.ROLLBACK: "    N         Y        N        N        Y        N",
    Permission.RESUME: "      N         Y        N        N        Y        N",
    Permission.CANCEL: "      N         Y        N        N        Y        N",
    Permission.WITHDRAW: "    N         N        N        N        Y        N",
    Permission.CANCEL_COOL_OFF: "N         Y        N        N        N        N",
    Permission.UNDO: "          N         Y        N        N        N        N",
}
TABLE = {
    (permission, persona): flag == "Y"
    for permission, row in TABLE_TEXT.items()
    for persona, flag in zip(PERSONAS, row.split(), strict=True)
}

# Every HTTP route: the permission it is judged by, or why it judges only the token's scope.
HTTP: dict[tuple[str, str], Permission | str] = {
    ("GET", "/v1/runs/{run_id}"): Permission.READ,
    ("POST", "/v1/runs/{run_id}/cancel"): Permission.CANCEL,
    ("POST", "/v1/runs/{run_id}/effects/{call_id}/resolve"): Permission.SETTLE,
    ("POST", "/v1/approvals/{approval_id}/decision"): Permission.DECIDE,
    ("POST", "/v1/approvals/{approval_id}/withdraw"): Permission.WITHDRAW,
    ("POST", "/v1/approvals/{approval_id}/cancel-cool-off"): Permission.CANCEL_COOL_OFF,
    ("POST", "/v1/approvals/{approval_id}/undo"): Permission.UNDO,
    ("GET", "/v1/console/runs/{run_id}"): Permission.READ,
    ("GET", "/v1/console/runs/{run_id}/rollback"): Permission.READ,
    ("POST", "/v1/console/runs/{run_id}/rollback"): Permission.ROLLBACK,
    ("POST", "/v1/console/runs/{run_id}/fork"): Permission.FORK,
    ("POST", "/v1/console/runs/{run_id}/resume"): Permission.RESUME,
    ("POST", "/v1/console/runs/{run_id}/cancel"): Permission.CANCEL,
    ("GET", "/v1/console/runs"): "a list: only the runs the actor may read (walked below)",
    ("GET", "/v1/console/rules"): "the approval rules: scope runs:read, about no run",
    ("POST", "/v1/runs"): "starts a run: scope runs:write, no run yet",
    ("GET", "/v1/runs"): "a token's list: scope runs:read",
    ("POST", "/v1/approvals"): "asks for an approval: scope approvals:request",
    ("GET", "/v1/approvals"): "a token's list: scope runs:read or approvals:*",
    ("GET", "/v1/approvals/{approval_id}"): "read by the tokens that ask, decide or read",
    ("GET", "/v1/approvals/{approval_id}/wait"): "the asker's long poll: its scopes",
    ("GET", "/v1/approvals/{approval_id}/events"): "the asker's event stream: its scopes",
    ("GET", "/v1/approvals/{approval_id}/deliveries"): "the asker's webhooks: its scopes",
    ("GET", "/v1/approvals/{approval_id}/receipt"): "a signed receipt: its scopes",
    ("POST", "/v1/receipts/verify"): "checks a signature, reads no record",
    ("GET", "/v1/audit"): "scope audit:read",
    ("GET", "/v1/openapi.json"): "the document, any known token",
    ("GET", "/v1/keys"): "public keys, no token",
    ("GET", "/healthz"): "liveness, no data",
    ("GET", "/console"): "a redirect to the page",
    ("GET", "/console/"): "the static page; it reads through /v1/console",
    ("GET", "/console/static"): "static files",
    ("POST", "/v1/envelopes"): "hands out a budget: SpendDesk's hand-out check, about no run",
    ("GET", "/v1/envelopes"): "a token's list of budgets: scopes approvals:decide, runs:read",
    ("GET", "/v1/envelopes/{envelope_id}"): "one budget: scopes approvals:decide, runs:read",
    ("POST", "/v1/envelopes/{envelope_id}/confirm"): "a second writer: SpendDesk's check",
    ("POST", "/v1/envelopes/{envelope_id}/revoke"): "its author or a rule writer: SpendDesk",
}

# Every Slack button: the permission it is judged by, or the row it shares.
SLACK: dict[Action | str, Permission | str] = {
    Action.APPROVE: Permission.DECIDE,
    Action.ACKNOWLEDGE: Permission.ACKNOWLEDGE,
    Action.SETTLE_NOT_HAPPENED: Permission.SETTLE,
    Action.CANCEL_COOL_OFF: Permission.CANCEL_COOL_OFF,
    Action.UNDO: Permission.UNDO,
    "/runs status": Permission.READ,
    "/runs cancel": Permission.CANCEL,
    Action.APPROVE_SEPARATE: "decide, as approve (the runtime's decision check)",
    Action.EDIT: "decide, as approve (opens a form after Runtime.check_decider)",
    Action.DECLINE: "decide (opens a form after Runtime.check_decider)",
    Action.APPROVE_SIMILAR: "decide, then the rule writers' check of learned rules",
    Action.ASK: "decide (a question is a decision: Runtime.check_decider)",
    Action.BATCH: "decide, each approval of the batch by its own policy",
    Action.APPROVE_ENVELOPE: "decide, then SpendDesk's hand-out check",
    Action.CONFIRM_ENVELOPE: "a second writer: SpendDesk's check",
    Action.REVOKE_ENVELOPE: "its author or a rule writer: SpendDesk's check",
    Action.SETTLE_HAPPENED: "settle, as resolve_did_not_happen",
    Action.CONFIRM_RULE: "the rule writers' check of learned rules, about no run",
    Action.AWAY: "the clicker's own absence: may_set_away (tests/surfaces/slack/test_slack_away)",
    Action.BACK: "the clicker's own absence: may_set_away (tests/surfaces/slack/test_slack_away)",
}

CLI: dict[Permission, tuple[str, ...]] = {
    Permission.READ: ("runs", "show", "{run}"),
    Permission.DECIDE: ("approvals", "decide", "{approval}", "approve", "--by", "{person}"),
    Permission.SETTLE: (
        "runs",
        "resolve",
        "{run}",
        "{call}",
        "--did-not-happen",
        "--by",
        "{person}",
    ),
    Permission.ACKNOWLEDGE: ("pages", "ack", "{page}", "--by", "{person}"),
    Permission.FORK: ("runs", "fork", "{run}", "--from-step", "0"),
    Permission.ROLLBACK: ("runs", "rollback", "{run}", "--to-step", "0", "--yes"),
    Permission.RESUME: ("runs", "resume", "{run}"),
    Permission.CANCEL: ("runs", "cancel", "{run}"),
}
"""The CLI holds the database: it is the operator, acting for the person `--by` names."""


@dataclass
class Subjects:
    """What one case acts on, all its own."""

    run: Run
    approval: Approval
    page: Page
    asked: Approval
    """An approval asked over the API by the operator token (the one that may withdraw it)."""
    cooling: Approval
    """An approved call waiting out its cool-off (its approvers may cancel it)."""
    undoable: Approval
    """An approved call that ran, in its undo window (its approvers may undo it)."""


@dataclass
class World:
    rt: Runtime
    http: aiohttp.ClientSession
    base: str
    slack: Slack
    background: Background
    app: web.Application
    folder: Path
    db_url: str
    said: dict[str, str] = field(default_factory=dict)
    """What a CLI command that was refused said, by command and persona."""

    async def subjects(self) -> Subjects:
        run = await self.rt.get(await self.rt.start("asker", "Refund o1", requested_by=RILEY))
        [approval] = await self.rt.approvals(run.id)
        doubtful = await self.rt.start("doubter", "Ship p1", requested_by=RILEY)
        [page] = await self.rt.queries.pages(run_id=doubtful)
        asked, _ = await self.rt.request_approval(
            "refund", {"order": "o9"}, requested_by=RILEY, requester_token="token:operator"
        )
        return Subjects(
            run,
            approval,
            page,
            asked,
            await self._ran("seat-agent"),
            await self._ran("booking-agent"),
        )

    async def _ran(self, agent: str) -> Approval:
        """A run of `agent` whose one call BOB approved (it waits out a cool-off, or ran)."""
        run_id = await self.rt.start(agent, "Hold it", requested_by=RILEY)
        [approval] = await self.rt.approvals(run_id)
        return await self.rt.decide(approval.id, "approved", by=BOB)

    async def changed(self, permission: Permission, before: Subjects) -> bool:
        """Whether the case's subject changed (an allowed action did something)."""
        if permission == Permission.DECIDE:
            return (await self.rt.queries.approval(before.approval.id)).state != "pending"
        if permission == Permission.WITHDRAW:
            return (await self.rt.queries.approval(before.asked.id)).state != "pending"
        if permission == Permission.CANCEL_COOL_OFF:
            return (await self.rt.queries.approval(before.cooling.id)).cool_off != "waiting"
        if permission == Permission.UNDO:
            return (await self.rt.queries.approval(before.undoable.id)).undone_by is not None
        if permission in (Permission.ACKNOWLEDGE, Permission.SETTLE):
            return (await self.rt.queries.page(before.page.id)).acknowledged_by is not None
        run = await self.rt.get(before.run.id)
        return run.model_dump(exclude={"updated_at"}) != before.run.model_dump(
            exclude={"updated_at"}
        )


@pytest.fixture
async def doors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    monkeypatch.setenv(SEATS, str(tmp_path / "seats.log"))  # where the seat provider writes
    db_url = f"sqlite:///{tmp_path / 'signoff.db'}"
    store = await open_store(db_url)
    rt = Runtime(
        store,
        [asker, doubter, seat_agent, booking_agent],
        policies=Policies(
            default=Policy(approvers=(BOB,)),
            tools={"hold_seat": Policy(cool_off="1h"), "book_seat": Policy(undo_for="1h")},
        ),
        access=Access.of(resolvers=[CAROL]),
    )
    tokens = {
        "operator": token(SECRETS["operator"], *ALL_SCOPES, allow_request_and_decide=True),
        "read_only": token(SECRETS["read_only"], "runs:read"),
    }
    background = Background()
    app = api_app(rt, background=background, tokens=tokens)
    console.mount(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    (tmp_path / "signoff.toml").write_text(
        'agents = ["permission_agents:asker", "permission_agents:doubter", '
        '"cool_off_agents:seat_agent", "cool_off_agents:booking_agent"]\n'
        '[policies.default]\napprovers = ["U0BOB"]\n'
        '[policies.tools.hold_seat]\ncool_off = "1h"\n[policies.tools.book_seat]\nundo_for = "1h"\n'
    )
    async with aiohttp.ClientSession() as http, slack_app(rt) as slack:
        base = f"http://127.0.0.1:{port}"
        yield World(rt, http, base, slack, background, app, tmp_path, db_url)
    await background.drain()
    await runner.cleanup()
    await store.close()


# -- the doors ------------------------------------------------------------------------------


async def runtime_door(
    world: World, s: Subjects, permission: Permission, persona: str
) -> bool | None:
    subject = {
        Permission.DECIDE: s.approval,
        Permission.WITHDRAW: s.asked,
        Permission.CANCEL_COOL_OFF: s.cooling,
        Permission.UNDO: s.undoable,
        Permission.SETTLE: s.page,
        Permission.ACKNOWLEDGE: s.page,
    }.get(permission, s.run)
    return await world.rt.may(actor_of(persona), permission, subject)


def actor_of(persona: str) -> Actor:
    if persona in PEOPLE:
        return Actor.of_person(PEOPLE[persona])
    scopes = ALL_SCOPES if persona == "operator" else ("runs:read",)
    return Actor(token=f"token:{persona}", scopes=frozenset(scopes))


def http_door(route: tuple[str, str]) -> Callable[[World, str], Awaitable[bool | None]]:
    method, path = route

    async def door(world: World, persona: str) -> bool | None:
        console_route = path.startswith("/v1/console/")
        permission = HTTP[route]
        if persona in PEOPLE and not console_route and permission not in BY_PERSON:
            return None  # the API acts as its token only; a person reaches it by `by`
        if permission in BY_PERSON and persona == "operator":
            return None  # a decision names its person: without one it is a 400
        s = await world.subjects()
        headers = {"Authorization": f"Bearer {SECRETS.get(persona, SECRETS['operator'])}"}
        if persona in PEOPLE and console_route:
            headers["X-Signoff-Reader"] = PEOPLE[persona]
        url = world.base + _filled(path, s)
        body = _body(path, s, PEOPLE.get(persona, BOB))
        if path.endswith("/rollback") and method == "GET":
            url += "?to_step=0"
        async with world.http.request(method, url, json=body, headers=headers) as answer:
            status = answer.status
            text = await answer.text()
        await _settle_down(world)
        assert status in (200, 201, 202, 403), f"{method} {path} as {persona}: {status} {text}"
        if status == 403:
            assert not await world.changed(_permission(route), s), f"{path}: refused yet changed"
        return status != 403

    return door


def _permission(route: tuple[str, str]) -> Permission:
    found = HTTP[route]
    assert isinstance(found, Permission)
    return found


BY_PERSON = (Permission.DECIDE, Permission.CANCEL_COOL_OFF, Permission.UNDO)
"""A person's act on an approval, through a token: the body names the person (`by`)."""


def _filled(path: str, s: Subjects) -> str:
    run_id = s.page.run_id if "/effects/" in path else s.run.id
    approval = {
        "withdraw": s.asked.id,
        "cancel-cool-off": s.cooling.id,
        "undo": s.undoable.id,
    }.get(path.rsplit("/", 1)[-1], s.approval.id)
    return (
        path.replace("{run_id}", run_id or "")
        .replace("{call_id}", s.page.call_id or "")
        .replace("{approval_id}", approval)
    )


def _body(path: str, s: Subjects, person: str) -> dict[str, Any] | None:
    if path.endswith("/decision"):
        return {"decision": "approved", "by": person}
    if path.endswith(("/cancel-cool-off", "/undo")):
        return {"by": person}
    if path.endswith("/resolve"):
        return {"happened": False}
    if path.endswith("/rollback"):
        return {"to_step": 0}
    if path.endswith("/fork"):
        return {"from_step": 0}
    return None


async def slack_door(world: World, row: Action | str, persona: str) -> bool | None:
    if persona not in PEOPLE:
        return None  # Slack knows people, not tokens
    user, s = PEOPLE[persona], await world.subjects()
    permission = SLACK[row]
    assert isinstance(permission, Permission)
    if isinstance(row, Action):
        value = {
            Permission.DECIDE: s.approval.id,
            Permission.CANCEL_COOL_OFF: s.cooling.id,
            Permission.UNDO: s.undoable.id,
        }.get(permission, s.page.id)
        await world.slack.send(click(value, row.value, user=user))
        await _settle_down(world)
        return await world.changed(permission, s)
    verb = row.split()[1]
    reply = await _slash(world.slack, f"{verb} {s.run.id}", user)
    await _settle_down(world)
    if permission == Permission.READ:
        return "You may not read" not in reply
    return await world.changed(permission, s)


async def _slash(slack: Slack, text: str, user: str) -> str:
    fields = {
        "command": "/runs",
        "text": text,
        "user_id": user,
        "channel_id": "C0APPROVALS",
        "team_id": "T0SIGNOFF",
        "response_url": "http://127.0.0.1:9/response",
        "trigger_id": f"trigger-{time.monotonic_ns()}",
    }
    raw = urllib.parse.urlencode(fields)
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": Signature(SECRET).sign(stamp, raw.encode()),
    }
    answer = await slack.app.async_dispatch(AsyncBoltRequest(body=raw, headers=headers))
    assert answer.status == 200, answer.body
    return answer.body


async def _settle_down(world: World) -> None:
    """What a door left to the background (a decision's resume, a Slack click's record)."""
    await world.slack.background.drain()
    await world.background.drain()


async def cli_door(world: World, permission: Permission, persona: str) -> bool | None:
    takes_person = "{person}" in CLI[permission]
    if (persona in PEOPLE) != takes_person or persona == "read_only":
        return None  # the CLI is the operator, for the person `--by` names
    s = await world.subjects()
    filled = {
        "run": s.page.run_id if permission == Permission.SETTLE else s.run.id,
        "call": s.page.call_id or "",
        "approval": s.approval.id,
        "page": s.page.id,
        "person": PEOPLE.get(persona, ""),
    }
    argv = [a.format(**filled) for a in CLI[permission]]
    env = clean_env("SIGNOFF_", "SLACK_") | {
        "SIGNOFF_DATABASE_URL": world.db_url,
        "SIGNOFF_PAGE_RESOLVERS": CAROL,
        SEATS: os.environ[SEATS],
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    process = await asyncio.create_subprocess_exec(
        SIGNOFF,
        *argv,
        cwd=world.folder,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    said = (out + err).decode()
    if process.returncode != 0:
        world.said[f"cli {' '.join(argv[:2])} / {persona}"] = said[-300:]
        assert process.returncode == 1, f"{argv}: {said}"
        assert not await world.changed(permission, s), f"{argv}: refused yet changed"
    return process.returncode == 0


# -- the tests --------------------------------------------------------------------------------


async def test_every_route_and_button_has_a_row(doors: World) -> None:
    served = {
        (r.method, r.resource.canonical)
        for r in doors.app.router.routes()
        if r.resource is not None and r.method != "HEAD"
    }
    assert served - set(HTTP) == set(), "routes without a row in the permission table"
    assert set(HTTP) - served == set(), "rows for routes the app does not serve"
    assert {a for a in Action} - set(SLACK) == set(), "Slack buttons without a row"


@pytest.mark.timeout(1200)
async def test_every_door_gives_the_tables_answer(doors: World) -> None:
    world = doors
    answers: dict[tuple[str, Permission, str], bool] = {}

    async def record(door: str, permission: Permission, persona: str, got: bool | None) -> None:
        if got is not None:
            answers[(door, permission, persona)] = got

    shared = await world.subjects()  # the function itself changes nothing: one set will do
    for permission in Permission:
        for persona in PERSONAS:
            got = await runtime_door(world, shared, permission, persona)
            await record("runtime", permission, persona, got)
    for route, permission in HTTP.items():
        if isinstance(permission, Permission):
            for persona in PERSONAS:
                got = await http_door(route)(world, persona)
                await record(f"{route[0]} {route[1]}", permission, persona, got)
    for row, permission in SLACK.items():
        if isinstance(permission, Permission):
            for persona in PERSONAS:
                got = await slack_door(world, row, persona)
                await record(f"slack {row}", permission, persona, got)
    cli_cases = [(p, persona) for p in CLI for persona in PERSONAS]
    limit = asyncio.Semaphore(3)

    async def cli_case(permission: Permission, persona: str) -> None:
        async with limit:
            got = await cli_door(world, permission, persona)
        await record(f"cli {' '.join(CLI[permission][:2])}", permission, persona, got)

    await asyncio.gather(*(cli_case(p, persona) for p, persona in cli_cases))

    wrong = {case: got for case, got in answers.items() if got != TABLE[(case[1], case[2])]}
    assert wrong == {}, (
        "doors that answer other than the table: "
        + json.dumps(
            {f"{d} / {p.value} / {who}": got for (d, p, who), got in wrong.items()}, indent=1
        )
        + "\nthe CLI said: "
        + json.dumps(world.said, indent=1)
    )
    # Every permission was asked at some door besides the function itself, for every persona
    # some door can express.
    doors_of = {(p, who) for (door, p, who) in answers if door != "runtime"}
    assert {p for p, _ in doors_of} == set(Permission)
    assert {who for _, who in doors_of} == set(PERSONAS)


async def test_the_console_lists_only_the_runs_and_buttons_the_person_may_use(
    doors: World,
) -> None:
    world = doors
    s = await world.subjects()

    async def seen(persona: str) -> tuple[set[str], list[str] | None]:
        headers = {"Authorization": f"Bearer {SECRETS['operator']}"}
        if persona in PEOPLE:
            headers["X-Signoff-Reader"] = PEOPLE[persona]
        async with world.http.get(world.base + "/v1/console/runs", headers=headers) as answer:
            listed = {r["id"] for r in (await answer.json())["runs"]}
        url = f"{world.base}/v1/console/runs/{s.run.id}"
        async with world.http.get(url, headers=headers) as answer:
            allowed = (await answer.json()).get("allowed") if answer.status == 200 else None
        return listed, allowed

    operations = ["fork", "rollback", "resume", "cancel"]
    assert await seen("outsider") == (set(), None)
    for persona, may in (("requester", []), ("approver", operations), ("operator", operations)):
        listed, allowed = await seen(persona)
        assert s.run.id in listed
        assert allowed == may

"""The workspace view's server side: the fake workspace as JSON for the page, its news as
server-sent events, and what a person does on the page (a click, a modal, `/runs`) sent to
the bot as Slack sends it, a request signed with the signing secret to `/slack/events`.

Nothing here decides anything: the bot's own listeners do, exactly as they do for Slack.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from bot.dev import people
from bot.dev.project import Project
from bot.dev.project import demo
from bot.dev.slack.fake import FakeSlack
from bot.dev.slack.fake_web import Message
from bot.dev.slack_state import Hub
from bot.http_auth import Handler
from bot.slack.actions import OPENS_MODAL
from bot.wiring import Process

log = logging.getLogger("signoff.dev")
STATIC = Path(__file__).parent / "static"
REFUND_TASK = "Refund order 4471 for $25"
REFUND_AGENT_NAME = "refund-agent"
MODAL_WAIT = 3.0
KEEPALIVE = 15.0
EPHEMERALS = 3
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})


@dataclass
class DevWorkspace:
    fake: FakeSlack
    hub: Hub
    process: Process
    signing_secret: str
    api_token: str
    project: Project = field(default_factory=demo)
    session: aiohttp.ClientSession | None = None


DEV = web.AppKey("dev", DevWorkspace)


def mount(app: web.Application, dev: DevWorkspace) -> None:
    app[DEV] = dev
    app.cleanup_ctx.append(_client_session)
    app.on_shutdown.append(_close_streams)
    app.router.add_get("/", _index)
    app.router.add_static("/dev/static/", STATIC, show_index=False)
    for path, handler in (
        ("/dev/api/session", session),
        ("/dev/api/workspace", workspace),
        ("/dev/events", events),
    ):
        app.router.add_get(path, _local_only(handler))
    for path, handler in (
        ("/dev/api/action", action),
        ("/dev/api/submit", submit),
        ("/dev/api/command", command),
        ("/dev/api/refund", refund),
        ("/dev/api/home", home),
        ("/dev/api/start", start),
    ):
        app.router.add_post(path, _local_only(handler))


def _local_only(handler: Handler) -> Handler:
    """Only this machine's pages: the Host must be loopback (another site's page that got a
    name resolved to 127.0.0.1 sends its own name), and a POST must be JSON (which a page
    of another origin cannot send here without a preflight this server never answers)."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        host = (request.host or "").rsplit(":", 1)[0]
        if host not in LOOPBACK:
            return web.json_response({"error": f"not served to host {host!r}"}, status=403)
        if request.method == "POST" and request.content_type != "application/json":
            return web.json_response({"error": "send JSON (application/json)"}, status=415)
        return await handler(request)

    return guarded


async def _client_session(app: web.Application) -> AsyncIterator[None]:
    session = app[DEV].session = aiohttp.ClientSession()
    yield
    await session.close()


async def _close_streams(app: web.Application) -> None:
    app[DEV].hub.close()


async def _index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "workspace.html", headers={"Cache-Control": "no-store"})


async def session(request: web.Request) -> web.Response:
    """Who can be played, and the console's token (this server listens on 127.0.0.1 only)."""
    dev = request.app[DEV]
    return web.json_response(
        {
            "people": people.PEOPLE,
            "token": dev.api_token,
            "refund_task": REFUND_TASK,
            "opens_modal": sorted(OPENS_MODAL),
            "project": {
                "config": str(dev.project.config) if dev.project.config else None,
                "loaded": dev.project.lines(),
                "agents": _startable(dev),
            },
        }
    )


def _startable(dev: DevWorkspace) -> list[dict[str, str]]:
    """The agents the start buttons offer, each with the task it starts with."""
    return [
        {"name": name, "task": REFUND_TASK if name == REFUND_AGENT_NAME else f"Try {name}"}
        for name in sorted(dev.process.runtime.agents)
    ]


async def workspace(request: web.Request) -> web.Response:
    """Every channel's messages, threads under their parent, and what only `user` sees."""
    dev, user = request.app[DEV], request.query.get("user", "")
    channels = []
    for channel, messages in sorted(dev.fake.messages.items()):
        shown = [_message(m) for m in messages if m.thread_ts is None]
        by_ts = {m["ts"]: m for m in shown}
        for reply in (m for m in messages if m.thread_ts is not None):
            if reply.thread_ts in by_ts:
                by_ts[reply.thread_ts]["replies"].append(_message(reply))
        name = people.CHANNEL_NAMES.get(channel, channel)
        channels.append({"id": channel, "name": name, "messages": shown})
    # like Slack's, they do not pile up: only the last few are shown
    ephemerals = [asdict(e) for e in dev.fake.ephemerals if e.user == user][-EPHEMERALS:]
    return web.json_response(
        {
            "channels": channels,
            "ephemerals": ephemerals,
            "home": _home_view(dev.fake, user),
            "modals": _updated_modals(dev.fake),
        }
    )


def _home_view(fake: FakeSlack, user: str) -> dict[str, Any] | None:
    """The App Home the bot last published for `user` (None before it published one)."""
    published = [v for v in fake.views if v.method == "views.publish" and v.user_id == user]
    return published[-1].view if published else None


def _updated_modals(fake: FakeSlack) -> dict[str, dict[str, Any]]:
    """The latest version of each modal the bot updated (`views.update`), by view id: an
    open modal on the page is redrawn from it, as Slack redraws one."""
    return {v.view["id"]: v.view for v in fake.views if v.method == "views.update"}


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `workspace` whenever a message is posted, updated or shown."""
    hub = request.app[DEV].hub
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    await response.prepare(request)
    queue = hub.subscribe()
    try:
        await response.write(b"retry: 1000\nevent: hello\ndata: {}\n\n")
        while not hub.closed.is_set():
            closing = asyncio.ensure_future(hub.closed.wait())
            news = asyncio.ensure_future(queue.get())
            done, pending = await asyncio.wait(
                {closing, news}, timeout=KEEPALIVE, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if news in done:
                await response.write(f"event: {news.result()}\ndata: {{}}\n\n".encode())
            elif not done:
                await response.write(b": keepalive\n\n")
    except ConnectionResetError:  # the page went away
        pass
    finally:
        hub.unsubscribe(queue)
    return response


async def action(request: web.Request) -> web.Response:
    """A button click, as Slack posts it; a modal the bot opened for it comes back with it.
    A click on an ephemeral message (a `/runs` reply) comes, as from Slack, with no message."""
    dev, order = request.app[DEV], await _order(request)
    user = people.check(order.get("user"))
    trigger = f"dev-{uuid.uuid4().hex}"
    payload = click_payload(
        user,
        order,
        trigger=trigger,
        response_url=f"{request.url.origin()}/dev/response",
    )
    status, body = await _to_bot(request, {"payload": json.dumps(payload)})
    view = await _opened_view(dev.fake, trigger) if order.get("opens_modal") else None
    return web.json_response({"status": status, "answer": body, "view": view})


def click_payload(
    user: str, order: dict[str, Any], *, trigger: str, response_url: str
) -> dict[str, Any]:
    """The `block_actions` payload Slack posts for a click on the page: `order` holds the
    channel, the message's ts, the button's action id, value and block id, and whether the
    message is ephemeral (a `/runs` reply, which Slack sends with no message)."""
    ephemeral = order.get("ephemeral") is True
    channel, ts = str(order.get("channel", "")), str(order.get("ts", ""))
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": people.name(user), "team_id": people.TEAM},
        "api_app_id": people.APP,
        "token": "dev",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": channel,
            "is_ephemeral": ephemeral,
        },
        "trigger_id": trigger,
        "team": {"id": people.TEAM, "domain": "signoff-dev"},
        "channel": {"id": channel, "name": "dev"},
        "message": {"type": "message", "ts": ts, "text": ""},
        "response_url": response_url,
        "actions": [
            {
                "action_id": str(order.get("action_id", "")),
                "block_id": str(order.get("block_id", "")),
                "value": str(order.get("value", "")),
                "type": "button",
                "action_ts": str(time.time()),
            }
        ],
    }
    if ephemeral:
        del payload["message"]
    if order.get("view_id"):  # a click in the App Home: Slack sends the view, no channel
        for gone in ("message", "channel"):
            payload.pop(gone, None)
        payload["container"] = {"type": "view", "view_id": str(order["view_id"])}
        payload["view"] = {"type": "home", "id": str(order["view_id"])}
    return payload


async def submit(request: web.Request) -> web.Response:
    """A modal's submission; the bot's answer may carry errors to show under its fields."""
    order = await _order(request)
    user = people.check(order.get("user"))
    values = order.get("values") or {}
    if not isinstance(values, dict):
        raise web.HTTPBadRequest(text="values: an object of block id to text")
    payload = {
        "type": "view_submission",
        "team": {"id": people.TEAM, "domain": "signoff-dev"},
        "user": {"id": user, "username": people.name(user), "team_id": people.TEAM},
        "api_app_id": people.APP,
        "token": "dev",
        "trigger_id": f"dev-{uuid.uuid4().hex}",
        "view": {
            "id": str(order.get("view_id", "")),
            "type": "modal",
            "callback_id": str(order.get("callback_id", "")),
            "private_metadata": str(order.get("private_metadata", "")),
            "state": {
                "values": {
                    str(block): {str(block): {"type": "plain_text_input", "value": str(text)}}
                    for block, text in values.items()
                }
            },
        },
    }
    status, body = await _to_bot(request, {"payload": json.dumps(payload)})
    return web.json_response({"status": status, "answer": body})


async def command(request: web.Request) -> web.Response:
    """`/runs <text>` typed by `user`; the bot's ephemeral answer comes back."""
    order = await _order(request)
    user = people.check(order.get("user"))
    fields = {
        "token": "dev",
        "team_id": people.TEAM,
        "team_domain": "signoff-dev",
        "channel_id": people.APPROVALS,
        "channel_name": "approvals",
        "user_id": user,
        "user_name": people.name(user),
        "command": "/runs",
        "text": str(order.get("text", ""))[:4000],
        "api_app_id": people.APP,
        "response_url": f"{request.url.origin()}/dev/response",
        "trigger_id": f"dev-{uuid.uuid4().hex}",
    }
    status, body = await _to_bot(request, fields)
    return web.json_response({"status": status, "answer": body, "channel": people.APPROVALS})


async def home(request: web.Request) -> web.Response:
    """`user` opened the app's Home tab: Slack's `app_home_opened` event, which the bot
    answers by publishing their Home (the page shows it when it arrives)."""
    user = people.check((await _order(request)).get("user"))
    event = {
        "token": "dev",
        "team_id": people.TEAM,
        "api_app_id": people.APP,
        "type": "event_callback",
        "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),
        "event": {"type": "app_home_opened", "user": user, "tab": "home", "channel": "D0HOME"},
    }
    status, _ = await _to_bot(request, event)
    return web.json_response({"status": status})


async def refund(request: web.Request) -> web.Response:
    """Start a refund-agent run for `user`; it drives in the background until it parks."""
    dev, order = request.app[DEV], await _order(request)
    return await _start(dev, people.check(order.get("user")), REFUND_AGENT_NAME, REFUND_TASK)


async def start(request: web.Request) -> web.Response:
    """Start a run of one of the project's agents for `user`, with `task`."""
    dev, order = request.app[DEV], await _order(request)
    user = people.check(order.get("user"))
    task = order.get("task")
    if not isinstance(task, str) or not task.strip():
        raise web.HTTPBadRequest(text="task: what the agent is asked to do")
    return await _start(dev, user, str(order.get("agent", "")), task.strip()[:2000])


async def _start(dev: DevWorkspace, user: str, agent: str, task: str) -> web.Response:
    rt = dev.process.runtime
    if agent not in rt.agents:
        known = ", ".join(sorted(rt.agents))
        return web.json_response({"error": f"agent: one of {known}"}, status=404)
    run, _ = await rt.create(agent, task, requested_by=user)
    dev.process.background.spawn(rt.drive(run.id), name=f"drive {run.id}")
    log.info("dev: %s started run %s of %s: %s", people.name(user), run.id, agent, task)
    return web.json_response({"run_id": run.id, "agent": agent}, status=201)


async def _to_bot(request: web.Request, fields: dict[str, Any]) -> tuple[int, Any]:
    """POST to this server's /slack/events, signed as Slack signs (v0, HMAC-SHA256): form
    fields as Slack posts clicks and commands, or (an event callback) JSON."""
    dev = request.app[DEV]
    if dev.session is None:
        raise web.HTTPServiceUnavailable(text="the server is not started")
    is_event = fields.get("type") == "event_callback"
    body = json.dumps(fields).encode() if is_event else urllib.parse.urlencode(fields).encode()
    stamp = str(int(time.time()))
    signature = SignatureVerifier(dev.signing_secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None  # None only without a timestamp or a body
    headers = {
        "Content-Type": "application/json" if is_event else "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    url = f"http://127.0.0.1:{request.url.port}/slack/events"
    async with dev.session.post(url, data=body, headers=headers) as answer:
        text = await answer.text()
        try:
            return answer.status, json.loads(text) if text else None
        except ValueError:
            return answer.status, text


def _message(message: Message) -> dict[str, Any]:
    return {
        "ts": message.ts,
        "text": message.text,
        "blocks": message.blocks,
        "edited": message.edited,
        "replies": [],
    }


async def _opened_view(fake: FakeSlack, trigger: str) -> dict[str, Any] | None:
    """The modal the bot opened with this click's trigger id, if it opens one in time."""
    deadline = time.monotonic() + MODAL_WAIT
    while time.monotonic() < deadline:
        for opened in reversed(fake.views):
            if opened.trigger_id == trigger:
                return opened.view
        await asyncio.sleep(0.05)
    return None


async def _order(request: web.Request) -> dict[str, Any]:
    try:
        order = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="the body is not JSON") from None
    if not isinstance(order, dict):
        raise web.HTTPBadRequest(text="the body is not a JSON object")
    return order

"""One job, long because each method and failure has a test: the fake Slack.

The fake Slack, driven by slack_sdk's real clients: if these pass, code tested against the
fake sends what Slack accepts and survives what Slack does when it misbehaves."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncServerErrorRetryHandler
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.dev.slack.fake import FakeSlack
from bot.dev.slack.fake_socket import SocketModeError

CHANNEL = "C0APPROVALS"
USERS = {"U0ANN": "ann", "U0BOB": "bob"}
GROUPS = {"S0APPROVERS": ["U0ANN", "U0BOB"]}
MODAL = {"type": "modal", "title": {"type": "plain_text", "text": "Decline"}, "blocks": []}
CARD_METADATA = {"event_type": "signoff_approval", "event_payload": {"approval_id": "apr_1"}}


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users=USERS, usergroups=GROUPS) as slack:
        yield slack


@pytest.fixture
def client(fake: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=fake.base_url)


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def button(text: str, value: str = "apr_1") -> dict[str, Any]:
    return {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "value": value,
                "text": {"type": "plain_text", "text": text},
            }
        ],
    }


async def refusal(call: Any) -> dict[str, Any]:
    """The body of the Slack error a client call raises."""
    with pytest.raises(SlackApiError) as raised:
        await call
    return dict(raised.value.response.data)


# -- messages -------------------------------------------------------------------------------------


async def test_post_update_history_and_replies(fake: FakeSlack, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(
        channel=CHANNEL, text="Approve?", blocks=[section("Approve?")], metadata=CARD_METADATA
    )
    assert posted["channel"] == CHANNEL
    assert posted["message"]["text"] == "Approve?"
    await client.chat_postMessage(channel=CHANNEL, text="asked", thread_ts=posted["ts"])
    second = await client.chat_postMessage(channel=CHANNEL, text="other card")
    assert second["ts"] > posted["ts"]

    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="Approved", blocks=[])

    card = fake.message(CHANNEL, posted["ts"])
    assert (card.text, card.blocks, card.edited) == ("Approved", [], True)
    assert [v.text for v in card.history] == ["Approve?", "Approved"]
    assert card.metadata == CARD_METADATA

    plain = await client.conversations_history(channel=CHANNEL)
    assert [m["text"] for m in plain["messages"]] == ["other card", "Approved"]
    assert all("metadata" not in m for m in plain["messages"])
    assert plain["messages"][1]["reply_count"] == 1
    with_metadata = await client.conversations_history(channel=CHANNEL, include_all_metadata=True)
    assert with_metadata["messages"][1]["metadata"] == CARD_METADATA

    thread = await client.conversations_replies(channel=CHANNEL, ts=posted["ts"])
    assert [m["text"] for m in thread["messages"]] == ["Approved", "asked"]
    assert [m.text for m in fake.thread(CHANNEL, posted["ts"])] == ["Approved", "asked"]
    assert [c.method for c in fake.calls].count("chat.postMessage") == 3


async def test_history_window_and_cursor(client: AsyncWebClient) -> None:
    ts = [(await client.chat_postMessage(channel=CHANNEL, text=f"m{i}"))["ts"] for i in range(5)]

    first = await client.conversations_history(channel=CHANNEL, limit=2)
    assert [m["ts"] for m in first["messages"]] == [ts[4], ts[3]]
    assert first["has_more"] is True
    cursor = first["response_metadata"]["next_cursor"]
    rest = await client.conversations_history(channel=CHANNEL, limit=10, cursor=cursor)
    assert [m["ts"] for m in rest["messages"]] == [ts[2], ts[1], ts[0]]

    window = await client.conversations_history(channel=CHANNEL, oldest=ts[1], latest=ts[3])
    assert [m["ts"] for m in window["messages"]] == [ts[2]]
    both = await client.conversations_history(
        channel=CHANNEL, oldest=ts[1], latest=ts[3], inclusive=True
    )
    assert [m["ts"] for m in both["messages"]] == [ts[3], ts[2], ts[1]]


async def test_form_bodies_are_accepted(fake: FakeSlack, client: AsyncWebClient) -> None:
    blocks = json.dumps([header("Refund $25?")])
    form = {"channel": CHANNEL, "text": "Refund?", "blocks": blocks}
    posted = await client.api_call("chat.postMessage", data=form)
    assert fake.message(CHANNEL, posted["ts"]).blocks == [header("Refund $25?")]


async def test_ephemeral(fake: FakeSlack, client: AsyncWebClient) -> None:
    sent = await client.chat_postEphemeral(channel=CHANNEL, user="U0ANN", text="only you")
    assert sent["message_ts"]
    assert [(e.user, e.text) for e in fake.ephemerals] == [("U0ANN", "only you")]
    assert fake.messages[CHANNEL] == []


# -- refusals -------------------------------------------------------------------------------------


async def test_bad_or_missing_token(fake: FakeSlack) -> None:
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=fake.base_url)
    assert (await refusal(wrong.auth_test()))["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=fake.base_url)
    assert (await refusal(anonymous.auth_test()))["error"] == "not_authed"
    app_level = AsyncWebClient(token="xapp-test", base_url=fake.base_url)
    body = await refusal(app_level.chat_postMessage(channel=CHANNEL, text="x"))
    assert body["error"] == "not_allowed_token_type"
    assert fake.messages[CHANNEL] == []
    assert [c.status for c in fake.calls] == [200, 200, 200]


async def test_unknown_channel_and_message(client: AsyncWebClient) -> None:
    body = await refusal(client.chat_postMessage(channel="C0NOPE", text="x"))
    assert body["error"] == "channel_not_found"
    body = await refusal(client.chat_update(channel=CHANNEL, ts="1.000001", text="x"))
    assert body["error"] == "message_not_found"
    empty = client.api_call("chat.postMessage", json={"channel": CHANNEL})
    assert (await refusal(empty))["error"] == "no_text"


@pytest.mark.parametrize(
    ("blocks", "error"),
    [
        ([section("x")] * 51, "no more than 50 items allowed [json-pointer:/blocks]"),
        (
            [header("h" * 151)],
            "must be less than 151 characters [json-pointer:/blocks/0/text/text]",
        ),
        (
            [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
            "must provide at most 10 items [json-pointer:/blocks/0/fields]",
        ),
        (
            [section("s" * 3001)],
            "must be less than 3001 characters [json-pointer:/blocks/0/text/text]",
        ),
        (
            [button("b" * 76)],
            "must be less than 76 characters [json-pointer:/blocks/0/elements/0/text/text]",
        ),
    ],
    ids=["51-blocks", "151-char-header", "11-fields", "3001-char-section", "76-char-button"],
)
async def test_block_limits(client: AsyncWebClient, blocks: list[Any], error: str) -> None:
    body = await refusal(client.chat_postMessage(channel=CHANNEL, text="x", blocks=blocks))
    assert body["error"] == "invalid_blocks"
    assert error in body["errors"]


async def test_text_over_40000_chars(client: AsyncWebClient) -> None:
    body = await refusal(client.chat_postMessage(channel=CHANNEL, text="x" * 40_001))
    assert body["error"] == "msg_too_long"


async def test_update_checks_blocks_too(client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="x")
    too_long = [header("h" * 151)]
    update = client.chat_update(channel=CHANNEL, ts=posted["ts"], text="x", blocks=too_long)
    assert (await refusal(update))["error"] == "invalid_blocks"


# -- misbehaviour on command ----------------------------------------------------------------------


async def test_429_is_retried_after_retry_after(fake: FakeSlack) -> None:
    client = AsyncWebClient(
        token="xoxb-test",
        base_url=fake.base_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    fake.fail_next(1, status=429, retry_after=1)
    started = time.monotonic()
    posted = await client.chat_postMessage(channel=CHANNEL, text="x")
    assert time.monotonic() - started >= 1.0
    assert posted["ok"] is True
    assert [c.status for c in fake.calls_to("chat.postMessage")] == [429, 200]
    assert len(fake.messages[CHANNEL]) == 1


async def test_500_then_success(fake: FakeSlack) -> None:
    client = AsyncWebClient(
        token="xoxb-test",
        base_url=fake.base_url,
        retry_handlers=[AsyncServerErrorRetryHandler(max_retry_count=1)],
    )
    fake.fail_next(1)
    assert (await client.auth_test())["ok"] is True
    assert [c.status for c in fake.calls_to("auth.test")] == [500, 200]


async def test_fail_for_a_while(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.fail_for(0.3, status=503)
    with pytest.raises(SlackApiError) as raised:
        await client.auth_test()
    assert raised.value.response.status_code == 503
    await asyncio.sleep(0.35)
    assert (await client.auth_test())["ok"] is True


async def test_hang_makes_the_client_time_out(fake: FakeSlack) -> None:
    client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url, timeout=1)
    fake.hang_next(1)
    with pytest.raises(TimeoutError):
        await client.chat_postMessage(channel=CHANNEL, text="slow")
    assert (await client.auth_test())["ok"] is True
    assert [c.status for c in fake.calls] == [0, 200]


async def test_drop_after_post(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.drop_after_post(1)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel=CHANNEL, text="landed", metadata=CARD_METADATA)
    assert raised.value.response.status_code == 500
    assert [m.text for m in fake.messages[CHANNEL]] == ["landed"]
    found = await client.conversations_history(channel=CHANNEL, include_all_metadata=True)
    assert found["messages"][0]["metadata"] == CARD_METADATA
    assert (await client.chat_postMessage(channel=CHANNEL, text="next"))["ok"] is True


# -- views, users, groups -------------------------------------------------------------------------


async def test_views(fake: FakeSlack, client: AsyncWebClient) -> None:
    opened = await client.views_open(trigger_id="T.1", view=MODAL)
    assert opened["view"]["id"].startswith("V")
    home = {"type": "home", "blocks": [section("Pending: 2")]}
    published = await client.views_publish(user_id="U0ANN", view=home)
    again = await client.views_publish(user_id="U0ANN", view=home)
    assert published["view"]["id"] == again["view"]["id"]
    assert [(v.method, v.trigger_id, v.user_id) for v in fake.views] == [
        ("views.open", "T.1", None),
        ("views.publish", None, "U0ANN"),
        ("views.publish", None, "U0ANN"),
    ]


async def test_views_update_replaces_an_open_modal_of_the_version_it_names(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    opened = (await client.views_open(trigger_id="T.1", view=MODAL))["view"]
    later = {**MODAL, "blocks": [section("done")]}

    updated = (await client.views_update(view_id=opened["id"], hash=opened["hash"], view=later))[
        "view"
    ]

    assert (updated["id"], updated["blocks"]) == (opened["id"], later["blocks"])
    assert updated["hash"] != opened["hash"]
    stale = await refusal(
        client.views_update(view_id=opened["id"], hash=opened["hash"], view=MODAL)
    )
    assert stale["error"] == "hash_conflict"
    unknown = await refusal(client.views_update(view_id="V0NOPE", view=MODAL))
    assert unknown["error"] == "not_found"
    assert [(v.method, v.view["id"]) for v in fake.views] == [
        ("views.open", opened["id"]),
        ("views.update", opened["id"]),
    ]


@pytest.mark.parametrize(
    ("method", "target", "view"),
    [
        ("views.open", "T.2", {**MODAL, "title": {"type": "plain_text", "text": "t" * 25}}),
        ("views.open", "T.3", {**MODAL, "blocks": [section("x")] * 101}),
        ("views.open", "T.4", {**MODAL, "private_metadata": "m" * 3001}),
        ("views.open", "", MODAL),
        ("views.publish", "U0ANN", MODAL),
        ("views.publish", "", {"type": "home", "blocks": []}),
    ],
    ids=["25-char-title", "101-blocks", "long-metadata", "no-trigger", "modal-as-home", "no-user"],
)
async def test_view_limits(
    fake: FakeSlack, client: AsyncWebClient, method: str, target: str, view: dict[str, Any]
) -> None:
    key = "trigger_id" if method == "views.open" else "user_id"
    body = await refusal(client.api_call(method, json={key: target, "view": view}))
    assert body["error"] == "invalid_arguments"
    assert body["response_metadata"]["messages"]
    assert fake.views == []


async def test_users_and_usergroups(client: AsyncWebClient) -> None:
    members = await client.usergroups_users_list(usergroup="S0APPROVERS")
    assert members["users"] == ["U0ANN", "U0BOB"]
    unknown = await refusal(client.usergroups_users_list(usergroup="S0NOPE"))
    assert unknown["error"] == "no_such_subteam"
    ann = (await client.users_info(user="U0ANN"))["user"]
    assert (ann["id"], ann["name"], ann["tz"]) == ("U0ANN", "ann", "UTC")
    assert (await refusal(client.users_info(user="U0NOPE")))["error"] == "user_not_found"


# -- control surface and standalone process -------------------------------------------------------


async def test_http_control_surface(fake: FakeSlack, client: AsyncWebClient) -> None:
    root = fake.base_url.removesuffix("api/")
    async with aiohttp.ClientSession(root) as http:
        await client.chat_postMessage(channel=CHANNEL, text="hello")
        async with http.get("/_fake/calls") as answer:
            assert [c["method"] for c in await answer.json()] == ["chat.postMessage"]
        async with http.get("/_fake/messages") as answer:
            assert [m["text"] for m in (await answer.json())[CHANNEL]] == ["hello"]
        for shown in ("ephemerals", "views"):
            async with http.get(f"/_fake/{shown}") as answer:
                assert await answer.json() == []

        await http.post("/_fake/fail", json={"n": 1, "status": 429, "retry_after": 7})
        async with http.post("/api/auth.test", headers={"Authorization": "Bearer xoxb-test"}) as r:
            assert (r.status, r.headers["Retry-After"]) == (429, "7")
            assert await r.json() == {"ok": False, "error": "ratelimited"}

        await http.post("/_fake/fail", json={"seconds": 5, "status": 500})
        assert (await refusal(client.auth_test()))["ok"] is False
        fake.fail_for(0)

        await http.post("/_fake/drop_after_post", json={"n": 1})
        assert (await refusal(client.chat_postMessage(channel=CHANNEL, text="lost")))["ok"] is False
        await http.post("/_fake/hang", json={"n": 1, "seconds": 0.2})
        assert (await client.auth_test())["ok"] is True
        async with http.post("/_fake/answer_without_ts", json={"ts": "empty"}) as r:
            assert r.status == 200
        assert (await client.chat_postMessage(channel=CHANNEL, text="odd"))["ts"] == ""
        async with http.post("/_fake/answer_without_ts", json={"ts": "zero"}) as r:
            assert r.status == 400

        order = {"type": "events_api", "payload": {}, "ack_within": 0.1}
        async with http.post("/_fake/socket", json=order) as r:
            assert r.status == 409
    assert [m.text for m in fake.messages[CHANNEL]] == ["hello", "lost", "odd"]


async def test_standalone_process(tmp_path: Path) -> None:
    ready = tmp_path / "fake.url"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.dev.slack",
        "--port",
        "0",
        "--ready-file",
        str(ready),
        "--user",
        "U0ANN=ann",
        stdout=asyncio.subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert time.monotonic() < deadline, "the fake never became ready"
            await asyncio.sleep(0.05)
        client = AsyncWebClient(token="xoxb-test", base_url=ready.read_text())
        assert (await client.users_info(user="U0ANN"))["user"]["name"] == "ann"
    finally:
        os.kill(process.pid, signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 10) == 0


# -- Socket Mode ----------------------------------------------------------------------------------


async def test_socket_mode_round_trip(fake: FakeSlack) -> None:
    received: list[SocketModeRequest] = []

    async def ack(socket: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        received.append(request)
        reply = {"text": "got it"} if request.type == "slash_commands" else None
        await socket.send_socket_mode_response(SocketModeResponse(request.envelope_id, reply))

    socket = SocketModeClient(
        app_token="xapp-test", web_client=AsyncWebClient(base_url=fake.base_url)
    )
    socket.socket_mode_request_listeners.append(ack)
    try:
        await socket.connect()
        command = {"command": "/runs", "text": "pending", "user_id": "U0ANN"}
        answer = await fake.send_socket_envelope(command, type="slash_commands")
        assert answer["payload"] == {"text": "got it"}
        assert answer["envelope_id"] == received[0].envelope_id
        assert received[0].payload == command
        assert received[0].accepts_response_payload is True

        root = fake.base_url.removesuffix("api/")
        order = {"type": "interactive", "payload": {"type": "block_actions"}}
        async with aiohttp.ClientSession(root) as http, http.post("/_fake/socket", json=order) as r:
            assert r.status == 200
            assert (await r.json())["envelope_id"] == received[1].envelope_id
    finally:
        await socket.close()
    assert [c.method for c in fake.calls] == ["apps.connections.open"]


async def test_socket_mode_refusals(fake: FakeSlack) -> None:
    with pytest.raises(SocketModeError):
        await fake.send_socket_envelope({}, type="events_api", ack_within=0.1)
    bot_token = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
    body = await refusal(bot_token.apps_connections_open(app_token="xoxb-test"))
    assert body["error"] == "not_allowed_token_type"


# -- Slack's behaviours the bot must survive (issue 28) ----------------------------------------


async def test_a_trigger_expires_three_seconds_after_its_click(client: AsyncWebClient) -> None:
    from bot.dev.slack.fake_web import trigger

    await client.views_open(trigger_id=trigger(), view=MODAL)
    with pytest.raises(SlackApiError) as stale:
        await client.views_open(trigger_id=trigger(time.time() - 3.5), view=MODAL)
    assert stale.value.response["error"] == "expired_trigger_id"


async def test_an_unknown_block_type_is_invalid_blocks(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=CHANNEL, text="x", blocks=[{"type": "carousel"}])
    assert refused.value.response["error"] == "invalid_blocks"


async def test_ephemeral_to_a_non_member_and_a_user_id_as_channel(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    fake.set_members(CHANNEL, ["U0ANN"])
    await client.chat_postEphemeral(channel=CHANNEL, user="U0ANN", text="hi")
    with pytest.raises(SlackApiError) as outside:
        await client.chat_postEphemeral(channel=CHANNEL, user="U0BOB", text="hi")
    assert outside.value.response["error"] == "user_not_in_channel"
    with pytest.raises(SlackApiError) as not_a_channel:
        await client.chat_postEphemeral(channel="U0BOB", user="U0BOB", text="hi")
    assert not_a_channel.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as no_history:
        await client.conversations_history(channel="U0BOB")
    assert no_history.value.response["error"] == "channel_not_found"
    direct = await client.chat_postMessage(channel="U0BOB", text="in your DM")
    assert direct["channel"] == "D0BOB"


async def test_delete_and_what_history_entries_carry(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="card", metadata=CARD_METADATA)
    [entry] = (await client.conversations_history(channel=CHANNEL, include_all_metadata=True))[
        "messages"
    ]
    assert {"type", "user", "bot_id", "app_id", "team", "text", "ts", "bot_profile"} <= set(entry)
    assert entry["metadata"] == CARD_METADATA
    await client.chat_delete(channel=CHANNEL, ts=posted["ts"])
    assert fake.messages[CHANNEL] == []
    assert [m.ts for m in fake.deleted] == [posted["ts"]]
    with pytest.raises(SlackApiError) as again:
        await client.chat_delete(channel=CHANNEL, ts=posted["ts"])
    assert again.value.response["error"] == "message_not_found"


async def test_tier_rate_limits_answer_429_with_retry_after(fake: FakeSlack) -> None:
    fake.limit_rates()  # Slack's own rates: Tier 3 is 50 a minute, bursts of 5
    client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
    for _ in range(5):
        await client.conversations_history(channel=CHANNEL)
    with pytest.raises(SlackApiError) as limited:
        await client.conversations_history(channel=CHANNEL)
    assert limited.value.response.status_code == 429
    assert int(limited.value.response.headers["Retry-After"][0]) >= 1
    for _ in range(5):  # chat.postMessage: about one a second per channel, its own bucket
        await client.chat_postMessage(channel=CHANNEL, text="x")
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=CHANNEL, text="x")


async def test_a_hung_post_lands_after_the_caller_gave_up_or_is_lost(
    fake: FakeSlack,
) -> None:
    client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url, timeout=1)
    fake.hang_posts(1, 1.5)
    fake.hang_posts(1, 1.5, lands=False)
    first = asyncio.ensure_future(client.chat_postMessage(channel=CHANNEL, text="late"))
    await asyncio.sleep(0.2)  # the first hang is the first post's
    second = client.chat_postMessage(channel=CHANNEL, text="lost")
    answers = await asyncio.gather(first, second, return_exceptions=True)
    assert all(isinstance(a, asyncio.TimeoutError) for a in answers), answers
    assert fake.messages[CHANNEL] == []
    await asyncio.sleep(1.0)
    assert [m.text for m in fake.messages[CHANNEL]] == ["late"]  # the first landed; not the 2nd


async def test_views_publish_is_held_to_its_tier_without_being_asked(fake: FakeSlack) -> None:
    client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
    view = {"type": "home", "blocks": []}
    for n in range(5):  # Tier 4 (100 a minute), bursts of 5, whoever the Home is for
        await client.views_publish(user_id=f"U0P{n}", view=view)
    with pytest.raises(SlackApiError) as limited:
        await client.views_publish(user_id="U0BOB", view=view)
    assert limited.value.response.status_code == 429
    assert limited.value.response["error"] == "ratelimited"
    assert int(limited.value.response.headers["Retry-After"][0]) >= 1
    assert [c.status for c in fake.calls if c.method == "views.publish"] == [200] * 5 + [429]


@pytest.mark.parametrize(
    ("shape", "channel"), [("missing", True), ("empty", True), ("null", False)]
)
async def test_a_post_can_land_and_answer_ok_without_a_usable_ts(
    fake: FakeSlack, client: AsyncWebClient, shape: str, channel: bool
) -> None:
    fake.answer_without_ts(1, ts=shape, channel=channel)
    odd = await client.chat_postMessage(channel=CHANNEL, text="landed")
    assert odd["ok"] is True
    assert odd.get("ts") == {"missing": None, "empty": "", "null": None}[shape]
    assert ("ts" in odd.data) is (shape != "missing")
    assert "ts" not in odd["message"] or not odd["message"]["ts"]
    assert ("channel" in odd.data) is channel
    [landed] = fake.messages[CHANNEL]  # Slack has it all the same, with a real ts
    assert landed.text == "landed"
    assert landed.ts
    normal = await client.chat_postMessage(channel=CHANNEL, text="next")
    assert normal["ts"]
    assert normal["channel"] == CHANNEL
    with pytest.raises(ValueError, match="one of missing, empty, null"):
        fake.answer_without_ts(1, ts="zero")


async def test_a_hung_post_lands_after_its_caller_is_gone(fake: FakeSlack) -> None:
    """A caller that dies mid-post closes its connection; the post lands all the same."""
    client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url, timeout=30)
    fake.hang_posts(1, 1.0)
    post = asyncio.ensure_future(client.chat_postMessage(channel=CHANNEL, text="orphan"))
    await asyncio.sleep(0.3)
    post.cancel()  # the connection is closed, as a killed process's would be
    with pytest.raises(asyncio.CancelledError):
        await post
    assert fake.messages[CHANNEL] == []
    await asyncio.sleep(1.2)
    assert [m.text for m in fake.messages[CHANNEL]] == ["orphan"]

"""Requests signed correctly but shaped badly, or unsigned and hostile: each gets a 4xx (or a
refusal the person sees) and one log line, never a 5xx or a traceback; retried events are
handled once; an expired trigger asks the person to click again; a non-approver meets a
refusal before any modal opens. `HOSTILE` is the table in docs/slack-edge.md."""

from __future__ import annotations

import json
import time
from typing import Any

from support.slack_harness import APPROVALS
from support.slack_harness import BOB
from support.slack_harness import EVE
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import button
from support.slack_harness import form
from support.slack_harness import submission
from support.slack_served import home_opened

DEEP = "[" * 10_000 + "]" * 10_000


def block_actions(**changes: Any) -> dict[str, Any]:
    payload = json.loads(dict(_form(button("approve", "a-1", user=BOB)))["payload"])
    payload.update(changes)
    return payload


def _form(body: bytes) -> list[tuple[str, str]]:
    import urllib.parse

    return urllib.parse.parse_qsl(body.decode())


def as_form(payload: Any) -> bytes:
    return form({"payload": payload if isinstance(payload, str) else json.dumps(payload)})


# (what, body, content type, expected status, a word the log line has)
HOSTILE: list[tuple[str, bytes, str, int, str]] = [
    ("10k-deep JSON in an interaction payload", as_form(DEEP), "form", 400, "deeper"),
    ("10k-deep JSON as an Events API body", ('{"a":' + DEEP + "}").encode(), "json", 400, "deeper"),
    ("invalid UTF-8", b"payload=%7B%22type%22%3A\xff\xfe", "form", 400, "UTF-8"),
    ("block_actions without user", as_form(block_actions(user=None)), "form", 400, "user"),
    (
        "block_actions with empty actions",
        as_form(block_actions(actions=[])),
        "form",
        400,
        "actions",
    ),
    (
        "a 5,000-digit number",
        as_form('{"type": "block_actions", "n": ' + "9" * 5000 + "}"),
        "form",
        400,
        "digits",
    ),
    ("NaN in a payload", as_form('{"type": "block_actions", "n": NaN}'), "form", 400, "NaN"),
    ("a payload that is not JSON", as_form("{not json"), "form", 400, "invalid"),
    ("a payload that is a list", as_form("[1, 2]"), "form", 400, "not a JSON object"),
    (
        "actions[0] without action_id",
        as_form(block_actions(actions=[{"value": "x"}])),
        "form",
        400,
        "action_id",
    ),
    (
        "view_submission without view.type",
        as_form({"type": "view_submission", "user": {"id": BOB}, "view": {"id": "V1"}}),
        "form",
        400,
        "view.type",
    ),
    (
        "view_submission without view.state",
        as_form(
            {"type": "view_submission", "user": {"id": BOB}, "view": {"id": "V1", "type": "modal"}}
        ),
        "form",
        400,
        "state",
    ),
    (
        "event_callback without event_id",
        json.dumps({"type": "event_callback", "event": {"type": "app_home_opened"}}).encode(),
        "json",
        400,
        "event_id",
    ),
    (
        "app_home_opened without user",
        json.dumps(
            {"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_home_opened"}}
        ).encode(),
        "json",
        400,
        "event.user",
    ),
    (
        "a slash command without user_id",
        form({"command": "/runs", "text": "list"}),
        "form",
        400,
        "user_id",
    ),
    ("a 2 MiB body", as_form("x" * (2 * 1024 * 1024)), "form", 413, ""),
]

CONTENT_TYPES = {"form": "application/x-www-form-urlencoded", "json": "application/json"}


def new_lines(server: SlackServer, before: int, *, word: str = "") -> list[str]:
    """The log's lines since `before`, once one has `word` (the server writes its line
    after it answers; under load a little later)."""
    deadline = time.monotonic() + 5
    while True:
        lines = server.log.read_text().splitlines()[before:]
        if any(word in line for line in lines) or time.monotonic() > deadline:
            time.sleep(0.1)  # a second line, if there were one, would be here by now
            return server.log.read_text().splitlines()[before:]
        time.sleep(0.05)


def lines_now(server: SlackServer) -> int:
    """The log's length, once the server's start-up lines are written (under load its
    "connected as" line can land after it already answers requests)."""
    deadline = time.monotonic() + 10
    while "connected as" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(server.log.read_text().splitlines())


def test_each_hostile_request_gets_a_4xx_and_one_log_line_never_a_traceback(
    server: SlackServer,
) -> None:
    answers = []
    for what, body, kind, expected, word in HOSTILE:
        before = lines_now(server)
        status, answer, seconds = server.slack(body, content_type=CONTENT_TYPES[kind])
        lines = [line for line in new_lines(server, before, word=word) if "slack" in line]
        answers.append((what, status))
        assert status == expected, (what, status, answer)
        assert seconds < 3, what
        if expected == 400:
            assert len(lines) == 1, (what, lines)
            assert word in lines[0], (what, lines)
    log = server.log.read_text()
    assert "Traceback" not in log
    assert all(status < 500 for _, status in answers)


def test_an_unsigned_hostile_body_is_refused_before_it_is_parsed(server: SlackServer) -> None:
    before = lines_now(server)
    status, _, _ = server.slack(as_form(DEEP), secret="not-the-secret")
    lines = new_lines(server, before, word="bad signature")
    assert status == 401
    assert any("bad signature" in line for line in lines), lines
    assert not any("deeper" in line for line in lines), "the body was parsed before the check"


def pending_card(server: SlackServer, fake: FakeSlackProcess) -> dict[str, Any]:
    server.start_run("hostile-1")
    return dict(server.wait_until(lambda: fake.cards() and fake.cards()[0]))


def test_edits_and_reasons_past_the_apis_limits_are_refused_in_the_modal(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    approval_id = approval_id_of(pending_card(server, fake))
    cases = {
        "reason": ("decline_reason", {"reason": "x" * 10_000}, "at most 3000 characters"),
        "args (deep)": ("edit_args", {"args": '{"a": ' + DEEP + "}"}, "deeper"),
        "args (digits)": ("edit_args", {"args": '{"amount": ' + "1" * 5000 + "}"}, "digits"),
        "args (list)": ("edit_args", {"args": "[1]"}, "object"),
        "no reason block": ("decline_reason", {"other": "x"}, "Say why"),
    }
    for what, (callback, values, words) in cases.items():
        status, raw, _ = server.slack(submission(callback, approval_id, values, user=BOB))
        assert status == 200, (what, raw)
        answer = json.loads(raw)
        assert answer["response_action"] == "errors", (what, answer)
        assert words in next(iter(answer["errors"].values())), (what, answer)
    assert server.run("hostile-1")["status"] == "waiting_approval"
    assert "Traceback" not in server.log.read_text()


def test_a_non_approver_is_refused_before_a_modal_opens(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    card = pending_card(server, fake)
    approval_id = approval_id_of(card)
    for action in ("decline", "edit"):
        status, _, _ = server.slack(button(action, approval_id, user=EVE, ts=card["ts"]))
        assert status == 200
    told = server.wait_until(lambda: len(e := fake.ephemerals()) >= 2 and e)
    assert all(e["user"] == EVE and "not an approver" in e["text"] for e in told)
    assert fake.modals() == []


def test_an_expired_trigger_asks_the_person_to_click_again(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    card = pending_card(server, fake)
    stale = button("decline", approval_id_of(card), user=BOB, ts=card["ts"], issued=time.time() - 5)
    status, _, _ = server.slack(stale)
    assert status == 200
    [told] = server.wait_until(lambda: fake.ephemerals())
    assert told["user"] == BOB
    assert told["channel"] == APPROVALS
    assert "click the button again" in told["text"]
    assert [c["status"] for c in fake.calls() if c["method"] == "views.open"] == [200]
    assert "Traceback" not in server.log.read_text()


def test_an_event_slack_retries_is_handled_once(
    server: SlackServer, fake: FakeSlackProcess
) -> None:
    body = json.dumps(home_opened("Ev0RETRIED")).encode()
    for _ in range(3):  # the first delivery, then Slack's retries
        status, _, _ = server.slack(body, content_type="application/json")
        assert status == 200
    server.wait_until(lambda: fake.views())
    time.sleep(0.5)
    assert len([v for v in fake.views() if v["method"] == "views.publish"]) == 1

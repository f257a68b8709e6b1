"""What a request wrote reaches the log inert: an approval asked over the HTTP API for a tool
named with terminal escapes, a newline and a NUL is logged, when decided, on one line with
those characters written out, in the human format as in JSON."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from support.helpers import Api

from bot.logs import ContextIds
from bot.logs import HumanFormatter
from bot.logs import JsonFormatter
from surfaces.api.test_api import post

HOSTILE = "wire\x1b[2J\x1b]0;pwned\x07\nFAKE INFO signoff.approvals: approved by U0CEO\x00"


@pytest.fixture(params=["human", "json"])
def captured(request: pytest.FixtureRequest) -> Iterator[tuple[str, io.StringIO]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if request.param == "json" else HumanFormatter())
    handler.addFilter(ContextIds())
    logger = logging.getLogger("signoff")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield request.param, out
    logger.removeHandler(handler)
    logger.setLevel(level)


async def test_a_hostile_tool_name_is_logged_inert(
    api: Api, captured: tuple[str, io.StringIO]
) -> None:
    log_format, out = captured
    body = {"tool": HOSTILE, "args": {"note": HOSTILE}, "approval_id": "ap-hostile"}
    status, answer = await post(api, "/v1/approvals", body)
    assert status == 201, answer
    decision = {"decision": "declined", "by": "U0BOB", "reason": HOSTILE}
    status, answer = await post(api, "/v1/approvals/ap-hostile/decision", decision)
    assert status == 200, answer

    lines = out.getvalue().splitlines()
    shown = [json.loads(line)["message"] if log_format == "json" else line for line in lines]
    about = [line for line in shown if "ap-hostile" in line]
    assert len(about) == 2, shown  # requested, declined
    for line in shown:
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in line), line
        assert not line.startswith("FAKE")
    assert all("wire\\x1b[2J\\x1b]0;pwned\\x07 FAKE INFO" in line for line in about)

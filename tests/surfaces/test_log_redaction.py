"""No secret in any log line: aiohttp's own traceback for a request with a bad header (which
quotes the header's value) reaches the log with the tokens in it redacted, in both formats,
as does any line of ours or a library's that carries one."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from support.helpers import TOKEN
from support.slack_harness import BOT_TOKEN
from support.slack_harness import SIGNING_SECRET
from support.slack_harness import FakeSlackProcess
from support.slack_harness import start_server

from bot.logs import REDACTED
from bot.logs import Redactor
from bot.logs import redact_secrets

PROVIDER_KEY = "sk-ant-api03-e2eProviderKeyThatMustNotLeak0123456789"


def bad_header(base: str, name: str, value: str) -> bytes:
    """A request whose header value holds a control character: aiohttp refuses it with a
    400 and logs a traceback quoting the value."""
    host, port = base.removeprefix("http://").split(":")
    request = (
        f"POST /slack/events HTTP/1.1\r\nHost: {host}\r\n{name}: {value}\x01\r\n"
        "Content-Length: 0\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(request)
        return conn.recv(1000)


@pytest.mark.parametrize("log_format", ["human", "json"])
def test_a_bad_header_traceback_from_aiohttp_logs_no_secret(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, log_format: str
) -> None:
    extra = {"SIGNOFF_LOG_FORMAT": log_format, "ANTHROPIC_API_KEY": PROVIDER_KEY}
    server = start_server(tmp_path, world, fake.base_url, extra=extra)
    try:
        secrets = {
            "Authorization": f"Bearer {TOKEN}",
            "X-Bot": BOT_TOKEN,
            "X-Slack-Signature": SIGNING_SECRET,
            "X-Key": PROVIDER_KEY,
            "X-Other": "xoxp-1234-5678-unknown-user-token",
        }
        for name, value in secrets.items():
            answer = bad_header(server.base, name, value)
            assert answer.startswith(b"HTTP/1.")
            assert b" 400 " in answer.split(b"\r\n")[0]
        server.wait_until(lambda: server.log.read_text().count("Error handling request") >= 5)
    finally:
        server.stop()
    log = server.log.read_text()
    assert "Traceback" in log  # aiohttp's, quoting each header
    assert log.count("Invalid") >= 5
    assert REDACTED in log
    for leaked in (TOKEN, BOT_TOKEN, SIGNING_SECRET, PROVIDER_KEY, "xoxp-1234"):
        assert leaked not in log, leaked


def test_every_handler_sees_redacted_records(caplog: pytest.LogCaptureFixture) -> None:
    redact_secrets(["a-configured-secret-value"])
    caplog.set_level(logging.INFO)
    logger = logging.getLogger("some.library")
    logger.info("token %s and %s", "xoxb-1-2-abc", "a-configured-secret-value")
    try:
        raise ValueError("failed with xapp-1-A0-123-abc")
    except ValueError:
        logger.exception("it broke")
    text = caplog.text
    assert "xoxb-1-2-abc" not in text
    assert "a-configured-secret-value" not in text
    assert "xapp-1-A0-123-abc" not in text
    assert text.count(REDACTED) >= 3  # the traceback quotes the raising line too


def test_what_is_redacted_by_shape() -> None:
    redact = Redactor()
    assert redact("Authorization: Bearer abc.def-ghi") == f"Authorization: Bearer {REDACTED}"
    assert redact("sig v0=" + "a" * 64) == f"sig v0={REDACTED}"
    assert redact("key sk-proj-abcdefghijklmnop1234") == f"key {REDACTED}"
    assert redact("approval a-1 by U0BOB, 5 dollars") == "approval a-1 by U0BOB, 5 dollars"

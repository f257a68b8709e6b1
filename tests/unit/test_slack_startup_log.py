"""Starting the Slack app logs no warning that says nothing: bolt's notice that the
SLACK_BOT_TOKEN it finds will be unused (Signoff hands it a client built from that token)."""

from __future__ import annotations

import inspect
import logging

import pytest
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.app import bolt_app
from bot.slack.app import quiet_unused_token_notice


def build_app() -> None:
    AsyncApp(client=AsyncWebClient(token="xoxb-test"), signing_secret="secret")


def test_bolts_unused_token_notice_is_quiet_and_other_warnings_are_not(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    caplog.set_level(logging.WARNING, logger="slack_bolt")
    quiet_unused_token_notice()
    quiet_unused_token_notice()  # twice adds one filter
    build_app()
    assert not [r for r in caplog.records if "will be unused" in r.getMessage()]
    bolt = logging.getLogger("slack_bolt.AsyncApp")
    assert len(bolt.filters) == 1
    bolt.warning("something else")
    assert [r.getMessage() for r in caplog.records] == ["something else"]


def test_signoffs_bolt_app_starts_without_a_notice(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its bolt app takes the bot token through `authorize` (so bolt asks Slack nothing
    before a listener acks); bolt's notice that SLACK_BOT_TOKEN is "ignored" is noise too."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    caplog.set_level(logging.WARNING, logger="slack_bolt")
    bolt_app("xoxb-test", base_url=None, signing_secret="secret", link=None)
    assert [r.getMessage() for r in caplog.records] == []


def test_signoffs_bolt_app_does_not_read_the_call_stacks_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unnamed, bolt reads the source of every frame on the stack to name its loggers after
    the caller's file: 0.1-0.2 s of each `signoff serve`'s start-up. Named, the same name."""

    def no_stack(*args: object) -> None:
        raise AssertionError("bolt read the call stack")

    monkeypatch.setattr(inspect, "stack", no_stack)
    app = bolt_app("xoxb-test", base_url=None, signing_secret="secret", link=None)
    assert app.name == "app.py"

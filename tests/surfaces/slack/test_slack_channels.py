"""A channel set by name stops `signoff serve` at start-up with one line naming the setting and
what to put there (the id Slack has for that name), found with `conversations.list` in the
fake Slack, whose channels are C0APPROVALS (#approvals) and C0ONCALL (#oncall); an id Slack
does not know (`conversations.info`) is a loud warning with the fix; right ids start quietly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.helpers import free_port
from support.slack_harness import SIGNOFF
from support.slack_harness import FakeSlackProcess
from support.slack_harness import environment
from support.slack_harness import start_server

POLICY_BY_NAME = """\
[policies.tools.issue_refund]
approvers = ["U0BOB"]
channel = "#approvals"
"""


def serve(tmp_path: Path, world: Path, fake: FakeSlackProcess, **env: str) -> str:
    """`signoff serve`, which must refuse to start; what it said."""
    settings = environment(tmp_path, world, free_port(), fake.base_url) | env
    done = subprocess.run(
        [SIGNOFF, "serve"], env=settings, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        (
            "SIGNOFF_APPROVALS_CHANNEL",
            "#approvals",
            "SIGNOFF_APPROVALS_CHANNEL '#approvals' is a channel name; Signoff needs the "
            "channel's id (Slack answers by id): set it to 'C0APPROVALS'",
        ),
        ("SIGNOFF_ONCALL_CHANNEL", "oncall", "set it to 'C0ONCALL'"),
        (
            "SIGNOFF_APPROVALS_CHANNEL",
            "#nosuch",
            "SIGNOFF_APPROVALS_CHANNEL '#nosuch' is not a channel id (C…), and the bot sees "
            "no channel of that name",
        ),
    ],
    ids=["name", "bare-name", "unknown-name"],
)
def test_a_wrong_channel_stops_the_start_with_the_fix(
    tmp_path: Path, world: Path, fake: FakeSlackProcess, setting: str, value: str, said: str
) -> None:
    assert said in serve(tmp_path, world, fake, **{setting: value})


def test_a_policys_channel_by_name_stops_the_start_too(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    (tmp_path / "signoff.toml").write_text(POLICY_BY_NAME, "utf-8")
    said = serve(tmp_path, world, fake)
    assert "policies.tools.issue_refund.channel '#approvals' is a channel name" in said
    assert "'C0APPROVALS'" in said


def test_channel_ids_slack_knows_start(tmp_path: Path, world: Path, fake: FakeSlackProcess) -> None:
    server = start_server(tmp_path, world, fake.base_url)
    try:

        def checked() -> list[str]:
            calls = fake.calls()
            return sorted(
                c["args"]["channel"] for c in calls if c["method"] == "conversations.info"
            )

        # the two settings and the harness policy's channel: each channel asked about once
        assert server.wait_until(lambda: len(checked()) == 2 and checked())
        assert checked() == ["C0APPROVALS", "C0ONCALL"]
        assert server.process.poll() is None
    finally:
        server.kill()


def test_an_id_slack_does_not_know_is_a_loud_warning_with_the_fix(
    tmp_path: Path, world: Path, fake: FakeSlackProcess
) -> None:
    wrong = {"SIGNOFF_ONCALL_CHANNEL": "C0NOSUCH"}
    server = start_server(tmp_path, world, fake.base_url, extra=wrong)
    try:
        said = "WARNING signoff.slack: slack: SIGNOFF_ONCALL_CHANNEL 'C0NOSUCH': Slack has no"
        server.wait_until(lambda: said in server.log.read_text())
        assert "copy the id from the channel's details" in server.log.read_text()
        assert "C0APPROVALS" not in server.log.read_text()  # the right ones said nothing
    finally:
        server.kill()

"""The Slack section of the configuration (the bot's tokens, its channels, who reads every
run), declared apart from the other sections so that a command that needs only it (a CLI
read that names people, whose names Slack knows) reads it alone, as it reads the database's
(`bot.settings_source.section_settings`); and the comma-separated list setting every
section uses."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated
from typing import Any

from pydantic import BeforeValidator
from pydantic import SecretStr
from pydantic import field_validator
from pydantic_settings import NoDecode

from bot.settings_source import Section
from bot.settings_source import setting
from runtime.approvals import Duration


def comma_separated(value: Any) -> Any:
    """SIGNOFF_AGENTS="pkg.mod:agent,other:agent" (the file gives a list)."""
    if isinstance(value, str):
        return [path.strip() for path in value.split(",") if path.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(comma_separated)]
"""A list setting the environment may give as one comma-separated string."""


READER_ID = re.compile(r"[UWSCG][A-Z0-9]{2,}")


class SlackSettings(Section):
    bot_token: SecretStr | None = setting("slack_bot_token", None, env="SLACK_BOT_TOKEN")
    signing_secret: SecretStr | None = setting(
        "slack_signing_secret", None, env="SLACK_SIGNING_SECRET"
    )
    app_token: SecretStr | None = setting("slack_app_token", None, env="SLACK_APP_TOKEN")
    api_url: str | None = setting("slack_api_url", None, env="SLACK_API_URL")
    approvals_channel: str | None = setting("approvals_channel", None)
    oncall_channel: str | None = setting("oncall_channel", None)
    page_resolvers: CommaList = setting("page_resolvers", default_factory=list)
    """Slack user ids who may settle an in-doubt page from its card ("It happened" / "It did
    not happen"); none: the card offers only Acknowledge, and the CLI or API settles it."""
    page_remind_every: Duration = setting("page_remind_every", timedelta(hours=1))
    """How often a page nobody acknowledged is announced again, in its thread."""
    readers: CommaList = setting("slack_readers", default_factory=list)
    """Who may read every run with `/runs` and in the dev console, besides a run's requester,
    approvers and on-call: Slack user ids, user-group ids (S…) and channel ids (C…, anyone
    asking in it); see `bot.readers`."""
    home_publish_per_minute: float = setting("home_publish_per_minute", 80.0, gt=0)
    """App Home publishes a minute at most (Slack allows `views.publish` 100+ a minute)."""

    @field_validator("readers")
    @classmethod
    def _reader_ids(cls, value: list[str]) -> list[str]:
        wrong = [i for i in value if not READER_ID.fullmatch(i)]
        if wrong:
            raise ValueError(
                f"readers are Slack ids (U…/W… users, S… user groups, C…/G… channels), "
                f"not {', '.join(map(repr, wrong))}"
            )
        return value

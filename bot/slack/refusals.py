"""What a person is told when Slack refuses their click: the vocabulary's sentence
(`bot.words`), written with Slack's mentions, code spans and dates.

The runtime's errors carry data (the approval, the page, who asked); the words are chosen in
`bot.words`, the same for the CLI and the HTTP API.
"""

from __future__ import annotations

from bot import words
from bot.slack import blocks as kit
from bot.slack.escape import code
from bot.slack.escape import mrkdwn
from runtime import errors
from runtime.records import Approval


def voice(you: str | None = None) -> words.Voice:
    """Slack's way of writing people (mentions), values (escaped) and times (dates)."""
    return words.Voice(
        person=kit.mention, text=mrkdwn, code=lambda text: code(text), time=kit.date, you=you
    )


def refusal(exc: Exception) -> str:
    """mrkdwn: why the click changed nothing; "You" is the person the refusal is about."""
    return words.refusal(exc, voice(getattr(exc, "by", None)))


def edit_refusal(exc: Exception) -> str:
    """mrkdwn: why an edit in the Edit modal changed nothing, with advice that names the
    buttons its card shows."""
    if isinstance(exc, errors.KeyConflict):
        return words.edit_conflict(exc, voice(getattr(exc, "by", None)))
    return refusal(exc)


def already_decided(approval: Approval) -> str:
    return words.already_decided(approval, voice())

"""Reading how a run ended off the fake Slack a real `signoff serve` posts to: the run's first
card, the note under it that says how the run ended, and the card once it says the same."""

from __future__ import annotations

import json
from typing import Any

from .slack_harness import APPROVALS
from .slack_harness import FakeSlackProcess
from .slack_harness import SlackServer

CHECK = ":white_check_mark:"


def first_card(fake: FakeSlackProcess, run_id: str) -> dict[str, Any] | None:
    cards = [c for c in fake.cards() if c["metadata"]["event_payload"].get("run_id") == run_id]
    return cards[0] if cards else None


def thread_note(
    fake: FakeSlackProcess, server: SlackServer, card: dict[str, Any], run_id: str
) -> str:
    """The note under the card that says how the run ended."""
    return str(
        server.wait_until(
            lambda: next(
                (
                    m["text"]
                    for m in fake.replies(APPROVALS, card["ts"])
                    if f"Run `{run_id}`" in m["text"]
                ),
                None,
            )
        )
    )


def card_saying(fake: FakeSlackProcess, card: dict[str, Any], note: str) -> dict[str, Any] | None:
    """The card as it is now, once it says `note`; else None."""
    now = next(c for c in fake.cards() if c["ts"] == card["ts"])
    return now if note in json.dumps(now["blocks"], ensure_ascii=False) else None

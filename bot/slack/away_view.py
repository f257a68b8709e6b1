"""The App Home's "Away" section and the modal that sets an absence (pure Block Kit; the
listeners are `bot.slack.away`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from datetime import timedelta
from typing import Any

from bot.slack import blocks as kit
from bot.slack.actions import Action
from bot.slack.actions import Modal
from bot.slack.blocks import Block
from runtime.records import Away

DEFAULT_DAYS = 7
"""The modal's first guess at the end of an absence."""
INTRO = (
    "While you are away, your delegate decides for you the approvals that name you "
    "(never what a group decides), and never their own requests."
)


@dataclass(frozen=True)
class Absence:
    """What a Home says of absences: the person's own, and those they decide for."""

    mine: Away | None = None
    covering: tuple[Away, ...] = ()

    @classmethod
    def of(cls, away: list[Away], user: str) -> Absence:
        mine = next((a for a in away if a.person == user), None)
        return cls(mine, tuple(a for a in away if a.delegate == user))


def away_blocks(absence: Absence) -> list[Block]:
    """The Home's "Away" section: the person's absence and its button, and whom they
    decide for."""
    mine = absence.mine
    if mine is not None:
        said = (
            f"You are away until {kit.date(mine.until)}; "
            f"{kit.mention(mine.delegate)} decides for you."
        )
        button = kit.button("I'm back", Action.BACK, mine.person)
    else:
        said, button = INTRO, kit.button("Away…", Action.AWAY, "away")
    found = [kit.divider(), kit.header("Away"), kit.section(said), kit.actions("away", [button])]
    found += [
        kit.context(f"You decide for {kit.mention(a.person)} until {kit.date(a.until)}.")
        for a in absence.covering
    ]
    return found


def away_modal(now: datetime) -> dict[str, Any]:
    """Until when, and who decides meanwhile."""
    until = {
        "type": "input",
        "block_id": "until",
        "label": kit.pt("Away until"),
        "element": {
            "type": "datetimepicker",
            "action_id": "until",
            "initial_date_time": int((now + timedelta(days=DEFAULT_DAYS)).timestamp()),
        },
    }
    delegate = {
        "type": "input",
        "block_id": "delegate",
        "label": kit.pt("Delegate to"),
        "element": {"type": "users_select", "action_id": "delegate"},
    }
    return kit.modal(
        Modal.AWAY,
        "",
        title="Away",
        blocks=[kit.section(INTRO), until, delegate],
        close="Back",
        submit="Set",
    )
